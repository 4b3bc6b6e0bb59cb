"""The POWERLINK managing node (EPSG DS 301 §4.2 cycle, §7.4 MN boot-up, §4.7 error handling).

One :meth:`ManagingNode.cycle` is one POWERLINK cycle: SoC, then PReq/PRes per polled CN
(isochronous phase), then SoA and at most one ASnd (asynchronous phase). :meth:`ManagingNode.period`
runs the cycles of one control period; in steady state (Operational, nothing to send, invite or
identify) it hands the link every cycle's frames before reading the PRes, which lets the UDP link
carry the whole period in one datagram. The CNs see the same frames in the same order either way;
an error found in those PRes (a threshold trip, a CN leaving Operational) is acted on after the
period's last cycle instead of at the next one, i.e. at most ``cycles_per_control - 1`` cycles
later, still before the controller's next read.

Boot: PreOp1 (SoA/ASnd only: IdentRequest to every configured CN) -> PreOp2 (SoC + PReq with
RD=0; the CNs follow on the first SoC; NMTEnableReadyToOperate to each) -> ReadyToOperate
(NMTStartNode to each) -> Operational once every configured CN reports Operational, then RD=1.
:meth:`boot` raises :class:`BootTimeoutError` naming the nodes that did not make it.

Errors: per CN, DS 301 threshold counters for lost, late (arrival after ``pres_timeout_s``) and
malformed PRes. A trip removes the CN from the isochronous phase, latches the matching fault code
for its axes, sends NMTResetNode and lets the node boot again (IdentRequest, then the same steps).
"""
from __future__ import annotations

import math
from collections import deque
from typing import Protocol

import numpy as np

from drivers.cia402 import Mode
from drivers.codes import FaultCode
from drivers.config import BusConfig, NodeConfig
from drivers.events import BusEvent, EventKind
from drivers.powerlink import frames, services
from drivers.powerlink.checks import steady_pres, take_tpdo
from drivers.powerlink.frames import FLAG1_RD, FrameError, InconsistentFrame, RequestedService, ServiceId
from drivers.powerlink.nmt import NmtCommand, NmtState
from drivers.powerlink.pdo import RPDO, TPDO
from drivers.service_channel import ABORT_TIMEOUT, SdoRequest
from drivers.powerlink.threshold import ThresholdCounter

RETRY_CYCLES = 25
# A PReq's RPDO channel before the controller writes one (and on a channel no axis uses).
_RPDO_DEFAULTS = {"controlword": 0, "modes_of_operation": int(Mode.CSP), "target_position": 0,
                  "target_velocity": 0, "torque_offset": 0}
SDO_TIMEOUT_CYCLES = 250
_TPDO_SIZE = TPDO.size
_PDO_OFFSET = frames.PDO_OFFSET
PREQ_LENGTH = max(frames.PDO_OFFSET + RPDO.size + frames.FCS_SIZE, frames.MIN_FRAME)
_PRES_TPDO = frames.pres_header(TPDO.struct)      # PRes header and TPDO: one unpack
_PDO_VERSION = frames.PDO_VERSION
_read_pres = frames.read_pres
# Enum member lookups cost ~0.2 µs each on Python 3.11: the per-cycle code uses these aliases.
_PRE_OPERATIONAL_1, _OPERATIONAL = NmtState.PRE_OPERATIONAL_1, NmtState.OPERATIONAL
_NO_SERVICE, _IDENT_REQUEST, _UNSPECIFIED_INVITE = (RequestedService.NO_SERVICE, RequestedService.IDENT_REQUEST,
                                                    RequestedService.UNSPECIFIED_INVITE)


class Link(Protocol):
    """Carries MN frames to the CN side, in order.

    :meth:`transfer` sends one frame; a SoA returns the invited node's ASnd (or None), other
    frames return None, with ``reply_delay_s`` the simulated delay of the answer.
    :meth:`queue_isochronous` sends a SoC then each PReq; :meth:`collect` returns one entry per
    PReq queued since the last collect, its PRes or None, with ``reply_delays`` aligned to it,
    valid until the next call on the link. A link may hold the frames back until ``collect`` (the
    UDP link sends them in one datagram). :meth:`flush` ends a control period: anything a link
    holds back goes out now.

    Two optional members let :meth:`ManagingNode.period` hand a steady period to Numba (the UDP
    link has both): ``queue_period(soc, preq_rows, rows, soa, first_cycle, cycles, cycle_us)``
    queues all its frames at once (each SoC's times and FCS written into ``soc``, the PReqs
    ``preq_rows[rows]``, the SoA after every cycle but the last), and ``answers`` holds the last
    collect's answers as arrays (receive buffer, then per answer its offset, length and wire delay
    in ns) for :func:`~drivers.powerlink.checks.steady_pres`.
    """

    reply_delay_s: float
    reply_delays: list[float]

    def transfer(self, frame: memoryview) -> memoryview | None: ...

    def queue_isochronous(self, soc: memoryview, preqs: tuple[memoryview, ...]) -> None: ...

    def collect(self) -> list[memoryview | None]: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class BootTimeoutError(RuntimeError):
    """Not every configured CN reached Operational within ``bus.boot_timeout_s``."""


class CnRecord:
    """What the MN knows about one configured CN."""

    def __init__(self, node: NodeConfig, threshold: int, preq_buffer=None, tpdo=None) -> None:
        """``tpdo``: the row that holds the TPDO payload of its last valid PRes (ManagingNode.tpdo)."""
        self.node_id = node.node_id
        self.nmt = NmtState.NOT_ACTIVE
        self.identified = False
        self.answered = False
        self.device_type = 0
        self.stopped = False
        self.preq = frames.preq_frame(node.node_id, RPDO.size, buf=preq_buffer)
        RPDO.struct.pack_into(self.preq.buf, frames.PDO_OFFSET, *[_RPDO_DEFAULTS[e.name] for e in RPDO.entries]
                              * RPDO.channels)
        self.preq.seal()
        self.tpdo = np.zeros(TPDO.size, np.uint8) if tpdo is None else tpdo
        self.loss = ThresholdCounter(threshold)
        self.late = ThresholdCounter(threshold)
        self.malformed = ThresholdCounter(threshold)
        self.counters = (self.loss, self.late, self.malformed)
        self.erring = False
        self.last_command: NmtCommand | None = None
        self.command_cycle = -RETRY_CYCLES - 1
        self.sdo_queue: deque[SdoRequest] = deque()
        self.sdo_active: SdoRequest | None = None


class ManagingNode:
    def __init__(self, config: BusConfig, link: Link, events: deque) -> None:
        self.config = config
        self.link = link
        self.events = events
        self.preq_rows = np.zeros((len(config.nodes), PREQ_LENGTH), np.uint8)    # one PReq frame per CN
        self.tpdo = np.zeros((len(config.nodes), TPDO.size), np.uint8)      # per CN: its last valid TPDO payload
        self.latched = np.zeros(len(config.nodes), np.int64)   # per CN: code to latch on its axes (bus.read clears)
        self.records = {n.node_id: CnRecord(n, config.threshold, memoryview(self.preq_rows[i]), self.tpdo[i])
                        for i, n in enumerate(config.nodes)}
        self._row = {n.node_id: i for i, n in enumerate(config.nodes)}
        self.state = NmtState.NOT_ACTIVE
        self.bus_cycle = 0
        self.polled: list[CnRecord] = []
        self._cycle: tuple[CnRecord, ...] = ()          # the CNs the next cycle polls, in order
        self._preqs: tuple[memoryview, ...] = ()       # and their PReq frames
        self.joining: list[CnRecord] = []
        self.unidentified: list[CnRecord] = list(self.records.values())
        self.soc = frames.soc_frame()
        self.soa = frames.soa_frame()
        self.outbox: deque[tuple[memoryview, int]] = deque()
        self.invite: deque[int] = deque()
        self.sdo_active: set[int] = set()
        self._transaction = 0
        self._soa_fields = ()
        self._ident_cursor = 0
        self._cycle_us = config.cycle_us
        self._pres_timeout = config.pres_timeout_s
        self._answers = getattr(link, "answers", None)
        self._queue_period = getattr(link, "queue_period", None)
        self._soc_array = np.frombuffer(self.soc.buf, np.uint8)
        self._soa_array = np.frombuffer(self.soa.buf, np.uint8)
        self._expect = np.zeros(0, np.int64)             # node ids of the polled CNs, in order
        self._rows = np.zeros(0, np.int64)               # and their rows of preq_rows
        if self._answers is not None:
            self._steady((), 0)                          # compiles (or loads) the check before any cycle

    # -- boot ---------------------------------------------------------------------------------------
    def boot(self) -> None:
        """Run bus cycles until every configured CN is Operational, aligned to a control period."""
        if self.state != NmtState.NOT_ACTIVE:
            raise RuntimeError("the managing node has already booted")
        self.state = NmtState.PRE_OPERATIONAL_1
        limit = self.bus_cycle + math.ceil(self.config.boot_timeout_s / self.config.cycle_time_s)
        while self.state != NmtState.OPERATIONAL:
            if self.bus_cycle >= limit:
                raise BootTimeoutError(self._boot_failure())
            self.cycle()
        while self.bus_cycle % self.config.cycles_per_control:
            self.cycle()

    def _boot_failure(self) -> str:
        """One sentence naming the nodes that held the boot back."""
        if self.state == NmtState.PRE_OPERATIONAL_1:
            blocking = [r for r in self.records.values() if not r.identified]
        else:
            blocking = [r for r in self.records.values() if r.nmt != NmtState.OPERATIONAL]
        parts = []
        for rec in blocking:
            if not rec.answered:
                parts.append(f"node {rec.node_id} never answered an IdentRequest")
            elif rec.device_type != services.DEVICE_TYPE_SERVO_402:
                parts.append(f"node {rec.node_id} reports device type 0x{rec.device_type:08X}, "
                             f"not a CiA 402 drive")
            else:
                parts.append(f"node {rec.node_id} stuck in {rec.nmt.name}")
        return (f"POWERLINK boot timed out after {self.config.boot_timeout_s} s in MN state "
                f"{self.state.name}: " + "; ".join(parts))

    def _progress(self) -> None:
        if self.joining:
            self._advance_joining()
        records = self.records.values()
        state = self.state
        if state == NmtState.PRE_OPERATIONAL_1 and all(r.identified for r in records):
            self.state = NmtState.PRE_OPERATIONAL_2
            self.polled = sorted(records, key=lambda r: r.node_id)
            self._repoll()
            self.joining = list(self.polled)
        elif state == NmtState.PRE_OPERATIONAL_2 and all(
                r.nmt in (NmtState.READY_TO_OPERATE, NmtState.OPERATIONAL) for r in records):
            self.state = NmtState.READY_TO_OPERATE
        elif state == NmtState.READY_TO_OPERATE and all(r.nmt == NmtState.OPERATIONAL for r in records):
            self.state = NmtState.OPERATIONAL
            for rec in records:
                rec.preq.buf[frames.FLAGS1_AT] = FLAG1_RD
                rec.preq.seal()
            self._event(EventKind.BOOT_COMPLETE, 0, text="every configured node is Operational")

    def _advance_joining(self) -> None:
        for rec in list(self.joining):
            if rec.nmt == NmtState.OPERATIONAL:
                self.joining.remove(rec)
                if self.state == NmtState.OPERATIONAL:
                    self._event(EventKind.NODE_OPERATIONAL, rec.node_id, text="node is Operational again")
                continue
            if rec.nmt == NmtState.PRE_OPERATIONAL_2:
                self._command(rec, NmtCommand.ENABLE_READY_TO_OPERATE)
            elif rec.nmt == NmtState.READY_TO_OPERATE and self.state in (NmtState.READY_TO_OPERATE,
                                                                          NmtState.OPERATIONAL):
                self._command(rec, NmtCommand.START_NODE)

    def _command(self, rec: CnRecord, command: NmtCommand, force: bool = False) -> None:
        if not force and command == rec.last_command and self.bus_cycle - rec.command_cycle <= RETRY_CYCLES:
            return
        f = frames.asnd_frame(rec.node_id, frames.MN_NODE_ID, ServiceId.NMT_COMMAND, services.NMT_COMMAND.size)
        services.write_nmt_command(f.buf, command)
        self.outbox.append((f.seal(), 0))
        rec.last_command = command
        rec.command_cycle = self.bus_cycle

    # -- one POWERLINK cycle ------------------------------------------------------------------------
    def cycle(self) -> None:
        if self.state != _PRE_OPERATIONAL_1:
            polled = self._cycle
            self._queue_isochronous(self.bus_cycle)
            self._absorb(polled, self.link.collect(), 0)
        self._asynchronous()
        self._bookkeeping()

    def period(self, cycles: int) -> None:
        """``cycles`` POWERLINK cycles; in steady state all their frames go out before any PRes is
        read (module docstring)."""
        if (self.state != _OPERATIONAL or self.joining or self.unidentified or self.outbox or self.invite
                or self.sdo_active):
            for _ in range(cycles):
                self.cycle()
            return
        link = self.link
        self._set_soa(_NO_SERVICE, frames.INVALID_NODE_ID)
        soa = self.soa.view
        polled = self._cycle
        if self._queue_period is not None:
            self._queue_period(self._soc_array, self.preq_rows, self._rows, self._soa_array, self.bus_cycle,
                               cycles, self._cycle_us)
        else:
            for k in range(cycles):
                self._queue_isochronous(self.bus_cycle + k)
                if k < cycles - 1:
                    link.transfer(soa)               # nobody is invited: nothing answers
        replies = link.collect()
        link.transfer(soa)                           # the last SoA after the answers: the CNs step on
        if self._answers is not None and self._steady(polled, len(replies)):
            count = len(polled)                      # all valid and Operational: only the values are news
            take_tpdo(self._answers[0], self._answers[1], len(replies) - count, count, self._rows, self.tpdo)
            self.bus_cycle += cycles                 # _bookkeeping has nothing else to do in steady state
            return
        for k in range(cycles):
            self._absorb(polled, replies, k * len(polled))
            self._bookkeeping()

    def _steady(self, polled: tuple[CnRecord, ...], count: int) -> bool:
        """Every polled CN is in good standing and every answer of the period is a valid Operational
        PRes from it, in time: what _absorb would find nothing to act on in."""
        for rec in polled:
            if not rec.identified or rec.erring or rec.nmt is not _OPERATIONAL:
                return False
        buf, offsets, lengths, delays = self._answers
        return steady_pres(buf, offsets, lengths, delays, count, self._expect, self._pres_timeout)

    def _bookkeeping(self) -> None:
        if self.state != _OPERATIONAL or self.joining:
            self._progress()
        if self.sdo_active:
            self._sdo_timeouts()
        self.bus_cycle += 1

    def _repoll(self) -> None:
        self._cycle = tuple(self.polled)
        self._preqs = tuple(rec.preq.view for rec in self._cycle)
        self._expect = np.array([rec.node_id for rec in self._cycle], np.int64)
        self._rows = np.array([self._row[rec.node_id] for rec in self._cycle], np.int64)

    def _queue_isochronous(self, bus_cycle: int) -> None:
        rel = bus_cycle * self._cycle_us
        frames.set_soc_time(self.soc.buf, rel // 1_000_000, (rel % 1_000_000) * 1000, rel)
        self.link.queue_isochronous(self.soc.seal(), self._preqs)

    def _absorb(self, polled: tuple[CnRecord, ...], replies: list, first: int) -> None:
        """The PRes of one cycle, ``replies[first:]`` in the order of ``polled``; a CN dropped by an
        earlier cycle of the same period is no longer listened to."""
        timeout = self._pres_timeout
        delays = self.link.reply_delays
        k = first
        for rec in polled:
            reply, delay = replies[k], delays[k]
            k += 1
            if not rec.identified:
                continue
            if reply is None:
                self._pres_error(rec, rec.loss, FaultCode.LOSS_PRES)
                continue
            if delay > timeout:
                self._pres_error(rec, rec.late, FaultCode.LATE_PRES)
                continue
            try:
                fields = _read_pres(reply, _PRES_TPDO)
                src, nmt, _, _, version, size = fields[:6]
                if src != rec.node_id or size != _TPDO_SIZE or version != _PDO_VERSION:
                    raise InconsistentFrame(f"PRes from node {src} for node {rec.node_id} carries {size} "
                                            f"bytes of PDO version 0x{version:02X}")
                rec.tpdo[:] = np.frombuffer(reply, np.uint8, _TPDO_SIZE, _PDO_OFFSET)
            except FrameError:
                self._pres_error(rec, rec.malformed, FaultCode.INVALID_FORMAT)
                continue
            if rec.erring:
                self._pres_good(rec)
            if nmt != rec.nmt:
                self._cn_state(rec, NmtState(nmt))

    def _pres_good(self, rec: CnRecord) -> None:
        for c in rec.counters:
            c.good()
        rec.erring = any(c.count for c in rec.counters)

    def _pres_error(self, rec: CnRecord, counter: ThresholdCounter, code: FaultCode) -> None:
        tripped = False
        for c in rec.counters:
            if c is counter:
                tripped = c.error()
            else:
                c.good()
        rec.erring = any(c.count for c in rec.counters)
        if tripped:
            self._event(EventKind.THRESHOLD, rec.node_id, code,
                        f"{code.name} threshold {counter.threshold} reached on node {rec.node_id}")
            self._drop(rec, code, NmtCommand.RESET_NODE)

    def _cn_state(self, rec: CnRecord, nmt: NmtState) -> None:
        if rec.nmt == NmtState.OPERATIONAL and self.state == NmtState.OPERATIONAL:
            self._event(EventKind.NODE_LEFT_OPERATIONAL, rec.node_id,
                        text=f"node reports {nmt.name}")
        rec.nmt = nmt
        if nmt != NmtState.OPERATIONAL and rec not in self.joining:
            self.joining.append(rec)

    def _drop(self, rec: CnRecord, code: int, command: NmtCommand) -> None:
        """Take ``rec`` out of the isochronous phase, latch ``code`` on its axes, send ``command``."""
        self.latched[self._row[rec.node_id]] = code
        if rec in self.polled:
            self.polled.remove(rec)
            self._repoll()
        if rec in self.joining:
            self.joining.remove(rec)
        rec.identified = False
        rec.nmt = NmtState.NOT_ACTIVE
        for c in rec.counters:
            c.clear()
        rec.stopped = command == NmtCommand.STOP_NODE
        if not rec.stopped and rec not in self.unidentified:
            self.unidentified.append(rec)
        if rec.stopped and rec in self.unidentified:
            self.unidentified.remove(rec)
        self._command(rec, command, force=True)
        kind = EventKind.NODE_STOPPED if rec.stopped else EventKind.NODE_RESET
        self._event(kind, rec.node_id, code, f"MN sent {command.name}")

    # -- asynchronous phase -------------------------------------------------------------------------
    def _asynchronous(self) -> None:
        link = self.link
        target = frames.INVALID_NODE_ID
        service = _NO_SERVICE
        if self.invite:
            target = self.invite.popleft()
            service = _UNSPECIFIED_INVITE
        elif self.outbox:
            target = frames.MN_NODE_ID
            service = _UNSPECIFIED_INVITE
        elif self.unidentified:
            self._ident_cursor = (self._ident_cursor + 1) % len(self.unidentified)
            target = self.unidentified[self._ident_cursor].node_id
            service = _IDENT_REQUEST
        self._set_soa(service, target)
        reply = link.transfer(self.soa.view)
        if target == frames.MN_NODE_ID:
            frame, awaiting = self.outbox.popleft()
            link.transfer(frame)
            if awaiting:
                self.invite.append(awaiting)
        elif reply is not None and target in self.records:
            self._asnd_in(self.records[target], reply)

    def _set_soa(self, service: int, target: int) -> None:
        soa = (self.state, service, target)
        if soa != self._soa_fields:
            self._soa_fields = soa
            frames.set_soa(self.soa.buf, self.state, 0, service, target)
            self.soa.seal()

    def _asnd_in(self, rec: CnRecord, reply) -> None:
        try:
            _, src, service_id = frames.read_asnd(reply)
            if src != rec.node_id:
                return
            if service_id == ServiceId.IDENT_RESPONSE:
                self._identified(rec, *services.read_ident(reply))
            elif service_id == ServiceId.SDO:
                self._sdo_reply(rec, services.read_sdo(reply))
        except FrameError:
            return

    def _identified(self, rec: CnRecord, nmt: int, device_type: int) -> None:
        rec.answered = True
        if device_type != services.DEVICE_TYPE_SERVO_402:
            if rec.device_type != device_type:
                self._event(EventKind.IDENT_MISMATCH, rec.node_id, device_type,
                            f"device type 0x{device_type:08X} is not a CiA 402 drive")
            rec.device_type = device_type
            return
        rec.device_type = device_type
        if nmt not in (NmtState.PRE_OPERATIONAL_1, NmtState.PRE_OPERATIONAL_2):
            self._command(rec, NmtCommand.RESET_NODE)
            return
        rec.identified = True
        rec.nmt = NmtState(nmt)
        self.unidentified.remove(rec)
        if self.state != NmtState.PRE_OPERATIONAL_1:
            self.polled.append(rec)
            self.polled.sort(key=lambda r: r.node_id)
            self._repoll()
            self.joining.append(rec)

    # -- SDO client ---------------------------------------------------------------------------------
    def sdo(self, node_id: int, command: int, index: int, subindex: int, value: float = 0.0) -> SdoRequest:
        rec = self.records.get(node_id)
        if rec is None:
            raise ValueError(f"no configured node {node_id} (nodes: {', '.join(map(str, self.records))})")
        req = SdoRequest(node_id, command, index, subindex, float(value))
        rec.sdo_queue.append(req)
        self._sdo_next(rec)
        return req

    def _sdo_next(self, rec: CnRecord) -> None:
        if rec.sdo_active is not None or not rec.sdo_queue:
            return
        req = rec.sdo_queue.popleft()
        self._transaction = self._transaction % 255 + 1
        req.transaction = self._transaction
        req.deadline_cycle = self.bus_cycle + SDO_TIMEOUT_CYCLES
        f = frames.asnd_frame(rec.node_id, frames.MN_NODE_ID, ServiceId.SDO, services.SDO.size)
        services.write_sdo(f.buf, req.transaction, req.command, 0, 0, req.index, req.subindex, 0, req.value)
        self.outbox.append((f.seal(), rec.node_id))
        rec.sdo_active = req
        self.sdo_active.add(rec.node_id)

    def _sdo_reply(self, rec: CnRecord, fields) -> None:
        transaction, command, flags, data_type, _, _, abort, value = fields
        req = rec.sdo_active
        if req is None or transaction != req.transaction or not flags & services.SDO_RESPONSE:
            return
        self._sdo_finish(rec, abort, data_type, value if command == services.SDO_READ else req.value)

    def _sdo_finish(self, rec: CnRecord, abort: int, data_type: int, value: float) -> None:
        req = rec.sdo_active
        req.done, req.abort_code, req.data_type, req.value = True, abort, data_type, value
        rec.sdo_active = None
        self.sdo_active.discard(rec.node_id)
        if abort:
            self._event(EventKind.SDO_ABORT, rec.node_id, abort,
                        f"SDO 0x{req.index:04X}/{req.subindex} aborted with 0x{abort:08X}")
        self._sdo_next(rec)

    def _sdo_timeouts(self) -> None:
        for node_id in list(self.sdo_active):
            rec = self.records[node_id]
            if self.bus_cycle > rec.sdo_active.deadline_cycle:
                self._sdo_finish(rec, ABORT_TIMEOUT, 0, 0.0)

    # -- node commands from the application ---------------------------------------------------------
    def stop_node(self, node_id: int) -> None:
        self._drop(self._record(node_id), FaultCode.COMMUNICATION, NmtCommand.STOP_NODE)

    def reset_node(self, node_id: int) -> None:
        self._drop(self._record(node_id), FaultCode.COMMUNICATION, NmtCommand.RESET_NODE)

    def _record(self, node_id: int) -> CnRecord:
        rec = self.records.get(node_id)
        if rec is None:
            raise ValueError(f"no configured node {node_id} (nodes: {', '.join(map(str, self.records))})")
        return rec

    def _event(self, kind: EventKind, node_id: int, code: int = 0, text: str = "") -> None:
        self.events.append(BusEvent(self.bus_cycle, kind, node_id, int(code), None, text))
