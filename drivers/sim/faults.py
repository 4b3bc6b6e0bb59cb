"""Fault injection for tests and the HIL bench.

Every fault is one named call on a :class:`~drivers.fault_api.FaultApi`; each call forwards to
``apply(name, **args)``, so the daemon's command interface can inject a fault by name with
validated arguments. :class:`FaultInjector` applies them on the controlled-node side of the
simulated network; the UDP backend forwards them to its server process.

Wire faults act on frames between MN and CN: ``drop_pres``, ``delay_pres`` (a delay longer than
``bus.pres_timeout_s`` makes the PRes late), ``corrupt_pres`` (XOR one byte; the FCS then fails),
``drop_soc``, ``disconnect_node`` / ``reconnect_node`` (cable pulled: the node sees and sends
nothing). Node and drive faults: ``stop_node`` (the CN enters NMT Stopped on its own),
``drive_fault`` (over_temperature 0x4310 lasting ``duration_s``, following_error 0x8611) and
``encoder_glitch`` (``jump`` adds ``value`` rad, ``nan`` reads NaN, for ``cycles`` bus cycles).
"""
from __future__ import annotations

import math
from typing import Protocol

from drivers.codes import FaultCode
from drivers.config import BusConfig
from drivers.fault_api import FAULT_NAMES, FaultApi, FaultError
from drivers.powerlink import frames
from drivers.powerlink.nmt import NmtCommand

DRIVE_FAULTS = {"over_temperature": FaultCode.OVER_TEMPERATURE, "following_error": FaultCode.FOLLOWING_ERROR}
GLITCHES = ("jump", "nan")


def _count(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise FaultError(f"{name} must be a positive integer, got {value!r}")
    return value


class Network(Protocol):
    """What the injector acts on: the simulated network (drivers.sim.nodes.SimulatedNodes)."""

    config: BusConfig
    nodes: dict
    bank: object
    reply_delay_s: float


class FaultInjector(FaultApi):
    """Applies faults on the controlled-node side; its hooks are read by :class:`SimulatedNodes`."""

    def __init__(self, network: Network) -> None:
        self.network = network
        self.dropped_pres: dict[int, int] = {}
        self.delayed_pres: dict[int, list] = {}
        self.corrupted_pres: dict[int, list] = {}
        self.dropped_soc: dict[int, int] = {}
        self.disconnected: set[int] = set()
        self.active = False

    def apply(self, name: str, **args) -> None:
        if name not in FAULT_NAMES:
            raise FaultError(f"unknown fault {name!r} (known: {', '.join(sorted(FAULT_NAMES))})")
        try:
            getattr(self, "_" + name)(**args)
        except TypeError as exc:
            raise FaultError(f"bad arguments for fault {name!r}: {exc}") from None
        self._update_active()

    # -- hooks used by SimulatedNodes -------------------------------------------------------------
    def swallow_soc(self, node_id: int) -> bool:
        """True when ``node_id`` must not see this SoC."""
        if node_id in self.disconnected:
            return True
        left = self.dropped_soc.get(node_id)
        if not left:
            return False
        self._decrement(self.dropped_soc, node_id)
        return True

    def connected(self, node_id: int) -> bool:
        return node_id not in self.disconnected

    def outgoing_pres(self, node_id: int, pres: memoryview) -> memoryview | None:
        """The PRes as it arrives at the MN (or None if lost); sets the network's reply delay."""
        if self.dropped_pres.get(node_id):
            self._decrement(self.dropped_pres, node_id)
            return None
        corrupt = self.corrupted_pres.get(node_id)
        if corrupt:
            wire = bytearray(pres)                  # a copy: the node's own PRes buffer stays intact
            wire[corrupt[1]] ^= corrupt[2]
            pres = memoryview(wire)
            self._count_down(self.corrupted_pres, node_id)
        delay = self.delayed_pres.get(node_id)
        if delay:
            self.network.reply_delay_s = delay[1]
            self._count_down(self.delayed_pres, node_id)
        return pres

    def _decrement(self, table: dict[int, int], node_id: int) -> None:
        table[node_id] -= 1
        if not table[node_id]:
            del table[node_id]
            self._update_active()

    def _count_down(self, table: dict[int, list], node_id: int) -> None:
        table[node_id][0] -= 1
        if not table[node_id][0]:
            del table[node_id]
            self._update_active()

    def _update_active(self) -> None:
        self.active = bool(self.dropped_pres or self.delayed_pres or self.corrupted_pres
                           or self.dropped_soc or self.disconnected)

    # -- the faults -------------------------------------------------------------------------------
    def _node(self, node_id) -> int:
        if node_id not in self.network.nodes:
            raise FaultError(f"no controlled node {node_id!r} (nodes: "
                             f"{', '.join(str(n) for n in self.network.nodes)})")
        return node_id

    def _axis(self, axis):
        try:
            return self.network.config.axis(axis)
        except KeyError as exc:
            raise FaultError(exc.args[0]) from None

    def _drop_pres(self, node_id, count=1):
        self.dropped_pres[self._node(node_id)] = _count(count, "count")

    def _delay_pres(self, node_id, delay_s, count=1):
        if isinstance(delay_s, bool) or not isinstance(delay_s, (int, float)) or not delay_s > 0 \
                or not math.isfinite(delay_s):
            raise FaultError(f"delay_s must be a positive number of seconds, got {delay_s!r}")
        self.delayed_pres[self._node(node_id)] = [_count(count, "count"), float(delay_s)]

    def _corrupt_pres(self, node_id, offset=None, xor=0xFF, count=1):
        if offset is None:
            offset = frames.PDO_OFFSET
        length = self.network.nodes[self._node(node_id)].pres.length
        if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset < length:
            raise FaultError(f"offset must be a byte index in 0..{length - 1} of node {node_id}'s PRes, "
                             f"got {offset!r}")
        if isinstance(xor, bool) or not isinstance(xor, int) or not 1 <= xor <= 0xFF:
            raise FaultError(f"xor must be a non-zero byte mask 1..255, got {xor!r}")
        self.corrupted_pres[node_id] = [_count(count, "count"), offset, xor]

    def _drop_soc(self, node_id, count=1):
        self.dropped_soc[self._node(node_id)] = _count(count, "count")

    def _disconnect_node(self, node_id):
        self.disconnected.add(self._node(node_id))

    def _reconnect_node(self, node_id):
        self.disconnected.discard(self._node(node_id))

    def _stop_node(self, node_id):
        self.network.nodes[self._node(node_id)].command(NmtCommand.STOP_NODE)

    def _drive_fault(self, axis, kind, duration_s=0.0):
        cfg = self._axis(axis)
        if kind not in DRIVE_FAULTS:
            raise FaultError(f"drive fault kind {kind!r} is not one of {', '.join(DRIVE_FAULTS)}")
        if isinstance(duration_s, bool) or not isinstance(duration_s, (int, float)) or not duration_s >= 0:
            raise FaultError(f"duration_s must be >= 0 seconds, got {duration_s!r}")
        drive = self.network.nodes[cfg.node_id].drive
        drive.raise_fault(drive.rows.index(cfg.index), DRIVE_FAULTS[kind], float(duration_s))

    def _encoder_glitch(self, axis, kind, value=0.0, cycles=1):
        cfg = self._axis(axis)
        cycles = _count(cycles, "cycles")
        if kind == "jump":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise FaultError(f"a jump needs a finite value in rad, got {value!r}")
            self.network.bank.encoder_jump(cfg.index, float(value), cycles)
        elif kind == "nan":
            self.network.bank.enc_nan[cfg.index] += cycles
        else:
            raise FaultError(f"encoder glitch kind {kind!r} is not one of {', '.join(GLITCHES)}")
