"""What the bus has gone through, as numbers in one flat float64 buffer (``bus.health``), declared once.

The managing node and the process image write it as things happen (never per cycle); the daemon's
loop copies it into shared memory each cycle, its telemetry record takes :data:`BusFlag` bits from it,
and ``status`` reads it back by name (controller.daemon.io.messages.bus_health)::

    flags           bit k: BusFlag k happened since the last ``bus.read()`` (setpoint_saturated: an
                    axis' last write saturated one of its setpoints)
    sdo_abort       the last SDO transfer aborted: node (0: none yet), object index, subindex, abort
                    code (DS 301 §6.3.2.4.2 Table 64), 1 for a write, 0 for a read
    node_error      the first error entry of the last StatusResponse that held any (DS 301 §7.3.3.3):
                    node (0: none yet), error code, entry type word, additional information
    pres_lost[nodes]  per configured node (bus YAML order): PRes lost (DS 301 §4.7.4 loss of PRes)
    pres_late[nodes]  and PRes late (after ``bus.pres_timeout_s``), since the bus was opened
    saturations[axes] per axis: the writes whose setpoints did not fit their process data integers
"""
from __future__ import annotations

from enum import IntEnum

import numpy as np
from numba import njit

from models.common.layout import Field, Layout

HEALTH = Layout("bus health", [
    Field("flags", (1,)), Field("sdo_abort", (5,)), Field("node_error", (4,)),
    Field("pres_lost", ("nodes",)), Field("pres_late", ("nodes",)), Field("saturations", ("axes",))],
    sizes=("nodes", "axes"))


class BusFlag(IntEnum):
    """The bits of ``flags`` (and of the telemetry's ``bus_flags``)."""

    PRES_LOST = 0
    PRES_LATE = 1
    SETPOINT_SATURATED = 2
    SDO_ABORT = 3
    NODE_ERROR = 4


BUS_FLAGS: tuple[str, ...] = tuple(f.name.lower() for f in BusFlag)
"""The flag names, bit k the k-th."""


def raise_flag(flags: np.ndarray, flag: BusFlag) -> None:
    """Set ``flag``'s bit in the ``flags`` view (Python side, as the thing happens)."""
    flags[0] = float(int(flags[0]) | 1 << flag)


_SATURATED_BIT = 1 << BusFlag.SETPOINT_SATURATED


@njit(cache=True)
def flag_saturation(flags, saturated):
    """Set SETPOINT_SATURATED in ``flags`` when an axis' ``saturated`` word (its last write) is non-zero."""
    for a in range(saturated.shape[0]):
        if saturated[a]:
            flags[0] = float(int(flags[0]) | _SATURATED_BIT)
            return


def count_pres_error(health, row: int, late: bool) -> None:
    """A PRes of the node in ``row`` lost (or, ``late``, late): counted, its flag raised."""
    (health.pres_late if late else health.pres_lost)[row] += 1
    raise_flag(health.flags, BusFlag.PRES_LATE if late else BusFlag.PRES_LOST)


def keep_sdo_abort(health, node_id: int, index: int, subindex: int, code: int, write: bool) -> None:
    """An SDO transfer aborted: kept as the last one, its flag raised."""
    last = health.sdo_abort
    last[0], last[1], last[2], last[3], last[4] = node_id, index, subindex, code, write
    raise_flag(health.flags, BusFlag.SDO_ABORT)


def keep_node_error(health, node_id: int, entries, new: bool) -> None:
    """A StatusResponse's error ``entries`` (status ones first): the first kept as the last node error
    when there is one; ``new``: it brought entries not seen before (the flag)."""
    if entries:
        first, last = entries[0], health.node_error
        last[0], last[1], last[2], last[3] = node_id, first.code, first.type, first.info
    if new:
        raise_flag(health.flags, BusFlag.NODE_ERROR)


def health_buffer(nodes: int, axes: int):
    """A zeroed health buffer for ``nodes`` nodes and ``axes`` axes, and its views."""
    buf = np.zeros(HEALTH.size(nodes=nodes, axes=axes))
    return buf, HEALTH.views(buf, nodes=nodes, axes=axes)


def flag_names(mask: float) -> list[str]:
    """The :data:`BUS_FLAGS` names of the bits set in ``mask`` (I/O side; allocates)."""
    m = int(mask) if np.isfinite(mask) else 0
    return [name for k, name in enumerate(BUS_FLAGS) if m >> k & 1]
