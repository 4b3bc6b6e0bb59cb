"""What the bus has gone through, as numbers in one flat float64 buffer (``bus.health``), declared once.

The managing node and the process image write it as things happen (never per cycle); the daemon's
loop copies it into shared memory each cycle, its telemetry record takes :data:`BusFlag` bits from it,
and ``status`` reads it back by name (:func:`describe`)::

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
from typing import Any

import numpy as np
from numba import njit

from drivers.powerlink.status import PROFILE_MASK, PROFILE_POWERLINK, TYPE_STATUS
from drivers.service_channel import ABORT_TEXT
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


def health_buffer(nodes: int, axes: int):
    """A zeroed health buffer for ``nodes`` nodes and ``axes`` axes, and its views."""
    buf = np.zeros(HEALTH.size(nodes=nodes, axes=axes))
    return buf, HEALTH.views(buf, nodes=nodes, axes=axes)


def flag_names(mask: float) -> list[str]:
    """The :data:`BUS_FLAGS` names of the bits set in ``mask`` (I/O side; allocates)."""
    m = int(mask) if np.isfinite(mask) else 0
    return [name for k, name in enumerate(BUS_FLAGS) if m >> k & 1]


def describe(buf: np.ndarray, node_ids: tuple[int, ...], axis_names: tuple[str, ...]) -> dict[str, Any]:
    """A health buffer by name, JSON-ready (I/O side; allocates): the counters per node id and axis
    name (only the non-zero ones), the last SDO abort and the last node error entry (None before any)."""
    v = HEALTH.views(buf, nodes=len(node_ids), axes=len(axis_names))
    node, index, subindex, code, write = (int(x) for x in v.sdo_abort)
    abort = None if not node else {
        "node": node, "index": index, "subindex": subindex, "object": f"0x{index:04X}/{subindex}",
        "access": "write" if write else "read", "code": code,
        "name": ABORT_TEXT.get(code, "unknown abort code")}
    node, ecode, etype, info = (int(x) for x in v.node_error)
    error = None if not node else {
        "node": node, "code": ecode, "type": etype, "active": bool(etype & TYPE_STATUS), "info": info,
        "profile": "POWERLINK" if etype & PROFILE_MASK == PROFILE_POWERLINK else "CiA 402"}
    return {"flags": flag_names(v.flags[0]),
            "pres_lost": {str(n): int(c) for n, c in zip(node_ids, v.pres_lost) if c},
            "pres_late": {str(n): int(c) for n, c in zip(node_ids, v.pres_late) if c},
            "saturations": {a: int(c) for a, c in zip(axis_names, v.saturations) if c},
            "last_sdo_abort": abort, "last_node_error": error}
