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
:meth:`boot` raises :class:`BootTimeoutError` naming the nodes that did not make it. A node is
admitted only once configured: its IdentResponse's verify configuration 0x1020 is the stamp of its
download (:mod:`~drivers.powerlink.configuration`), else the download runs by SDO in PreOp1,
0x1020 last, then NMTResetConfiguration and identification again; no IdentRequest goes to a node
meanwhile.

Identification: the IdentResponse (:mod:`~drivers.powerlink.ident`) is kept per CN as a named
record (``CnRecord.ident``); the CN's MAC address is learned from its source address and becomes
the destination of its PReq. An identified CN's error signalling is reset first (StatusRequests with
ER until it answers EC, :class:`~drivers.powerlink.status.ErrorSignalling`); only StatusRequest SoAs
carry ER and EA, as openPOWERLINK's MN sends them.

Errors: per CN, DS 301 threshold counters for lost, late (arrival after ``pres_timeout_s``) and
malformed PRes. A trip removes the CN from the isochronous phase, latches the matching fault code
for its axes, sends NMTResetNode and lets the node boot again (IdentRequest, then the same steps).
Once the reset is done, a PRes whose EN differs from the EA the MN last sent gets a StatusRequest;
the StatusResponse is kept (``CnRecord.status``), each new error entry is a NODE_ERROR event, and EA
then echoes EN.

Time: every SoC carries NetTime = ``epoch_ns`` + bus cycle x cycle time (:meth:`ManagingNode.net_time_ns`)
and RelativeTime = bus cycle x cycle time in µs. ``epoch_ns`` is the host clock at construction in
real time and ``bus.net_time_epoch`` in lock-step (the backend says which), so a lock-step run
never reads the host clock.
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
from drivers.health import count_pres_error, health_buffer, keep_node_error, keep_sdo_abort
from drivers.powerlink import configuration, frames, ident, services, status
from drivers.powerlink.checks import steady_pres, take_tpdo
from drivers.powerlink.frames import (FLAG1_EA, FLAG1_EN, FLAG1_RD, FrameError, InconsistentFrame,
                                      RequestedService, ServiceId)
from drivers.powerlink.nmt import NmtCommand, NmtState
from drivers.powerlink.pdo import RPDO, TPDO
from drivers.powerlink.sdo import SdoClient
from drivers.service_channel import DOMAIN, SDO_WRITE, SdoRequest, abort_text
from drivers.powerlink.threshold import ThresholdCounter

RETRY_CYCLES = 25
# A PReq's RPDO channel before the controller writes one (and on a channel no axis uses).
_RPDO_DEFAULTS = {"controlword": 0, "modes_of_operation": int(Mode.CSP), "target_position": 0,
                  "target_velocity": 0, "torque_offset": 0}
_TPDO_SIZE = TPDO.size
_PDO_OFFSET = frames.PDO_OFFSET
PREQ_LENGTH = max(frames.PDO_OFFSET + RPDO.size + frames.FCS_SIZE, frames.MIN_FRAME)
_PRES_TPDO = frames.pres_header(TPDO.struct)      # PRes header and TPDO: one unpack
_PDO_VERSION = frames.PDO_VERSION
_RS = frames.FLAG2_RS_MASK
_read_pres = frames.read_pres
# Enum member lookups cost ~0.2 µs each on Python 3.11: the per-cycle code uses these aliases.
_PRE_OPERATIONAL_1, _OPERATIONAL = NmtState.PRE_OPERATIONAL_1, NmtState.OPERATIONAL
_NO_SERVICE, _IDENT_REQUEST, _STATUS_REQUEST, _NMT_INVITE, _UNSPECIFIED_INVITE = (
    RequestedService.NO_SERVICE, RequestedService.IDENT_REQUEST, RequestedService.STATUS_REQUEST,
    RequestedService.NMT_REQUEST_INVITE, RequestedService.UNSPECIFIED_INVITE)
_NMT_COMMAND = ServiceId.NMT_COMMAND


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
    fcs: bool           # the frames it returns end with their FCS (optional, default True; a socket: False)

    def transfer(self, frame: memoryview) -> memoryview | None: ...

    def queue_isochronous(self, soc: memoryview, preqs: tuple[memoryview, ...]) -> None: ...

    def collect(self) -> list[memoryview | None]: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class BootTimeoutError(RuntimeError):
    """Not every configured CN reached Operational within ``bus.boot_timeout_s``."""


class CnRecord:
    """What the MN knows about one configured CN."""

    def __init__(self, node: NodeConfig, bus: BusConfig, preq_buffer=None, tpdo=None) -> None:
        """``tpdo``: the row that holds the TPDO payload of its last valid PRes (ManagingNode.tpdo);
        an I/O node (profile io) has PReq and PRes payloads of its mapped outputs and inputs."""
        self.node = node
        self.node_id = node.node_id
        self.nmt = NmtState.NOT_ACTIVE
        self.identified = False
        self.answered = False
        self.device_type = 0
        self.ident: ident.IdentResponse | None = None      # its last IdentResponse
        self.status: status.StatusResponse | None = None  # its last StatusResponse
        self.en = 0                                        # the EN it reported last: the PReq's EA echoes it
        self.status_wanted = False
        self.signalling = status.ErrorSignalling()
        self.stopped = False
        self.io = node.profile == "io"
        if self.io:
            self.pres_size = node.input_size
            self.preq = frames.preq_frame(node.node_id, node.output_size)
        else:
            self.pres_size = _TPDO_SIZE
            self.preq = frames.preq_frame(node.node_id, RPDO.size, buf=preq_buffer)
            RPDO.struct.pack_into(self.preq.buf, frames.PDO_OFFSET, *[_RPDO_DEFAULTS[e.name] for e in RPDO.entries]
                                  * RPDO.channels)
        self.preq.seal()
        self.tpdo = np.zeros(self.pres_size, np.uint8) if tpdo is None else tpdo[:self.pres_size]
        self.loss = ThresholdCounter(bus.threshold)
        self.late = ThresholdCounter(bus.threshold)
        self.malformed = ThresholdCounter(bus.threshold)
        self.counters = (self.loss, self.late, self.malformed)
        self.erring = False
        self.last_command: NmtCommand | None = None
        self.command_cycle = -RETRY_CYCLES - 1
        self.sdo = SdoClient()
        self.download = configuration.download(node, bus)   # written in PreOp1, then 0x1020, then NMTResetConfiguration
        self.stamp = configuration.stamp(self.download)     # the 0x1020 (date, time) that says it is there
        self.configured = False                        # its 0x1020 matched, or the download just ended
        self.writes: list[SdoRequest] = []             # the download's transfer under way (or refused)
        self.queue: deque[configuration.Write] = deque()   # and the writes after it
        self.stamping = False                          # those transfers are the closing 0x1020 writes
        self.config_error = ""
        self.mismatch = ""                             # what its IdentResponse got wrong, "" when right

    def pres_good(self) -> None:
        for c in self.counters:
            c.good()
        self.erring = any(c.count for c in self.counters)

    def pres_error(self, counter: ThresholdCounter) -> bool:
        """Count an error on ``counter`` (the others see a good PRes); whether it tripped."""
        tripped = False
        for c in self.counters:
            if c is counter:
                tripped = c.error()
            else:
                c.good()
        self.erring = any(c.count for c in self.counters)
        return tripped

    def set_preq_flags(self, ready: bool) -> None:
        """RD when ``ready`` (the MN is Operational), and EA echoing the CN's last EN, into its PReq."""
        self.preq.buf[frames.FLAGS1_AT] = (FLAG1_RD if ready else 0) | (FLAG1_EA if self.en else 0)
        self.preq.seal()

    def reset_signalling(self) -> None:
        """Identified (again): its error signalling is reset from the next StatusRequest on, EA = 0 until done."""
        self.en = 0
        self.signalling.restart()

    def status_flags(self) -> int:
        """A StatusRequest's flags1 to it: ER while its signalling is being reset, EA echoing its last EN."""
        return self.signalling.er | (FLAG1_EA if self.en else 0)

    def take_status(self, response: status.StatusResponse, ready: bool) -> tuple[list[status.ErrorEntry], bool]:
        """Keep ``response``, step the signalling's reset and, once it is done, echo EN in the PReq
        (``ready``: see :meth:`set_preq_flags`); the history entries in it that the last one did not
        hold, and whether EA changed. Another StatusRequest is wanted when ``status_wanted``."""
        old = set(self.status.entries) if self.status is not None else set()
        self.status = response
        self.status_wanted = self.signalling.response(response.flags1)
        en = response.flags1 & FLAG1_EN if self.signalling.state == status.Signalling.READY else 0
        changed, self.en = en != self.en, en
        if changed:
            self.set_preq_flags(ready)
        return [e for e in response.entries if e not in old and not e.active], changed

    def writes_failed(self) -> bool:
        """Whether a write of its download was refused; the first refusal becomes its boot error
        ("node N: 0xIIII/S: <abort code and name>") and nothing more is written."""
        failed = next((w for w in self.writes if w.abort_code), None)
        if failed is not None:
            self.config_error = f"node {self.node_id}: 0x{failed.index:04X}/{failed.subindex}: {abort_text(failed.abort_code)}"
        return failed is not None

    def set_outputs(self, payload: bytes) -> None:
        """Put ``payload`` (an io node's mapped outputs, in mapping order) into its next PReqs; its
        inputs are ``tpdo``, the payload of its last valid PRes."""
        if not self.io or len(payload) != self.node.output_size:
            raise ValueError(f"node {self.node_id} takes {self.node.output_size} output bytes in its PReq, "
                             f"got {len(payload)}" if self.io else f"node {self.node_id} is not an io node")
        self.preq.buf[_PDO_OFFSET:_PDO_OFFSET + len(payload)] = payload
        self.preq.seal()


def service_cycle(mn: ManagingNode) -> None:
    """One PreOperational1 cycle of ``mn`` (SoA, at most one ASnd) that never takes the network
    further: commissioning tools identify nodes and run SDO transfers with it, leaving their NMT
    states alone."""
    if mn.state == NmtState.NOT_ACTIVE:
        mn.state = NmtState.PRE_OPERATIONAL_1
    if mn.state != _PRE_OPERATIONAL_1:
        raise RuntimeError("service cycles run before the boot only (PreOperational1)")
    mn._asynchronous()
    if mn.sdo_active:
        mn._sdo_cycle()
    mn.bus_cycle += 1


def _resetting(mn: ManagingNode, rec: CnRecord) -> bool:
    """Whether ``rec``'s node was sent NMTResetConfiguration less than RETRY_CYCLES ago (an answer
    may still be from before it)."""
    return rec.last_command == NmtCommand.RESET_CONFIGURATION and mn.bus_cycle - rec.command_cycle <= RETRY_CYCLES


def _admit(mn: ManagingNode, rec: CnRecord, response: ident.IdentResponse) -> bool:
    """Whether a node that answered an IdentRequest may join the cycle now: its identity is the
    YAML's (else an IDENT_MISMATCH event, once), its answer is not from before a reset
    configuration it was sent, it is in PreOperational1 or 2 (else NMTResetNode) and configured:
    its verify configuration 0x1020 is the stamp of its download (a CONFIGURATION event says the
    download is skipped), or its download just ended; else the download starts (SDO writes, then
    0x1020, then NMTResetConfiguration: :func:`_download_progress`)."""
    rec.answered = True
    rec.ident = response
    rec.device_type = response.device_type
    mismatch = identity_mismatch(rec.node, response)
    if mismatch and rec.mismatch != mismatch:
        mn._event(EventKind.IDENT_MISMATCH, rec.node_id, response.device_type, f"node reports {mismatch}")
    rec.mismatch = mismatch
    if mismatch or _resetting(mn, rec):
        return False
    if response.nmt_status not in (NmtState.PRE_OPERATIONAL_1, NmtState.PRE_OPERATIONAL_2):
        mn._command(rec, NmtCommand.RESET_NODE)
        return False
    if rec.configured and not rec.config_error:
        return True
    if rec.writes or rec.config_error:                 # its download runs, or failed
        return False
    if (response.configuration_date, response.configuration_time) == rec.stamp:
        rec.configured = True
        mn._event(EventKind.CONFIGURATION, rec.node_id, text=f"reports this configuration (0x1020 date "
                  f"{rec.stamp[0]}, time {rec.stamp[1]}): download skipped")
        return True
    _write(mn, rec, rec.download)
    return False


def _write(mn: ManagingNode, rec: CnRecord, writes: list[configuration.Write]) -> None:
    """Write ``writes`` to ``rec``'s node in order, one transfer after the other (the next starts
    once the last succeeded: :func:`_download_progress`)."""
    rec.queue = deque(writes)
    _write_next(mn, rec)


def _write_next(mn: ManagingNode, rec: CnRecord) -> None:
    """Start the first write of ``rec``'s queue."""
    w = rec.queue.popleft()
    rec.writes = []                              # sdo() re-enters _sdo_progress: nothing to finish yet
    rec.writes = [mn.sdo(rec.node_id, SDO_WRITE, w.index, w.subindex, w.value, w.data_type)]


def _download_progress(mn: ManagingNode, rec: CnRecord) -> None:
    """A transfer of ``rec``'s download ended: the next write; after its objects, 0x1020; after
    0x1020, NMTResetConfiguration applies it (the node then identifies again). A refusal ends it:
    nothing more is written."""
    if rec.writes_failed():
        return
    if rec.queue:
        _write_next(mn, rec)
    elif not rec.stamping:
        rec.stamping = True
        _write(mn, rec, configuration.stamp_writes(rec.stamp))
    else:
        _configured(mn, rec)


def _configured(mn: ManagingNode, rec: CnRecord) -> None:
    """``rec``'s download ended with 0x1020: NMTResetConfiguration applies it."""
    rec.configured, rec.stamping, rec.writes = True, False, []
    mn._event(EventKind.CONFIGURATION, rec.node_id, text=f"{len(rec.download) + 2} objects written, 0x1020 "
              "last; NMTResetConfiguration applies them")
    mn._command(rec, NmtCommand.RESET_CONFIGURATION, force=True)


def _next_ident(mn: ManagingNode) -> int:
    """The next unidentified node to send an IdentRequest, round robin, leaving out the nodes
    being configured (their download's transfers run or failed, or the NMTResetConfiguration
    applying it is younger than RETRY_CYCLES: :func:`_admit` would not take the answer);
    INVALID_NODE_ID if none."""
    count = len(mn.unidentified)
    for _ in range(count):
        mn._ident_cursor = (mn._ident_cursor + 1) % count
        rec = mn.unidentified[mn._ident_cursor]
        if not rec.writes and not _resetting(mn, rec):
            return rec.node_id
    return frames.INVALID_NODE_ID


def _boot_failure(mn: ManagingNode) -> str:
    """One sentence naming the nodes that held ``mn``'s boot back."""
    if mn.state == NmtState.PRE_OPERATIONAL_1:
        blocking = [r for r in mn.records.values() if not r.identified]
    else:
        blocking = [r for r in mn.records.values() if r.nmt != NmtState.OPERATIONAL]
    parts = []
    for rec in blocking:
        if not rec.answered:
            parts.append(f"node {rec.node_id} never answered an IdentRequest")
        elif rec.mismatch:
            parts.append(f"node {rec.node_id} reports {rec.mismatch}")
        elif rec.config_error:
            parts.append(rec.config_error)
        elif not rec.configured:
            parts.append(f"node {rec.node_id}: configuration download unfinished")
        else:
            parts.append(f"node {rec.node_id} stuck in {rec.nmt.name}")
    return (f"POWERLINK boot timed out after {mn.config.boot_timeout_s} s in MN state {mn.state.name}: "
            + "; ".join(parts))


class ManagingNode:
    def __init__(self, config: BusConfig, link: Link, events: deque, epoch_ns: int | None = None, health=None) -> None:
        """``epoch_ns``: NetTime of bus cycle 0, ns since 1970 (None: ``bus.net_time_epoch``, lock-step);
        ``health``: the views of the bus' health buffer it counts into (:mod:`drivers.health`; None: its own)."""
        self.config = config
        self.health = health_buffer(len(config.nodes), len(config.axes))[1] if health is None else health
        self.epoch_ns = config.net_time_epoch_s * 1_000_000_000 if epoch_ns is None else epoch_ns
        self.link = link
        self.events = events
        self.preq_rows = np.zeros((len(config.nodes), PREQ_LENGTH), np.uint8)    # one PReq frame per CN
        width = max([TPDO.size] + [n.input_size for n in config.nodes])
        self.tpdo = np.zeros((len(config.nodes), width), np.uint8)      # per CN: its last valid TPDO payload
        self.latched = np.zeros(len(config.nodes), np.int64)   # per CN: code to latch on its axes (bus.read clears)
        self.records = {n.node_id: CnRecord(n, config, None if n.profile == "io" else
                                            memoryview(self.preq_rows[i]), self.tpdo[i])
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
        self.status_requests: deque[int] = deque()
        self.sdo_active: set[int] = set()             # nodes whose SDO client has work (ticked per cycle)
        self._soa_fields = ()
        self._ident_cursor = 0
        self._cycle_us = config.cycle_us
        self._pres_timeout = config.pres_timeout_s
        self.attach(link)
        self._soc_array = np.frombuffer(self.soc.buf, np.uint8)
        self._soa_array = np.frombuffer(self.soa.buf, np.uint8)
        self._expect = np.zeros(0, np.int64)             # node ids of the polled CNs, in order
        self._rows = np.zeros(0, np.int64)               # and their rows of preq_rows
        self._en = np.zeros(0, np.int64)                 # and the EN each last reported
        if self._answers is not None:
            self._steady((), 0)                          # compiles (or loads) the check before any cycle

    def attach(self, link: Link) -> None:
        """Talk through ``link`` from now on; its optional members decide the steady-period path."""
        self.link = link
        self._fcs = getattr(link, "fcs", True)
        self._answers = getattr(link, "answers", None)
        self._queue_period = getattr(link, "queue_period", None)

    def net_time_ns(self) -> int:
        """The NetTime of the current bus cycle's SoC, ns since 1970 (module docstring)."""
        return self.epoch_ns + self.bus_cycle * self._cycle_us * 1000

    # -- boot ---------------------------------------------------------------------------------------
    def boot(self) -> None:
        """Run bus cycles until every configured CN is Operational, aligned to a control period."""
        if self.state != NmtState.NOT_ACTIVE:
            raise RuntimeError("the managing node has already booted")
        self.state = NmtState.PRE_OPERATIONAL_1
        limit = self.bus_cycle + math.ceil(self.config.boot_timeout_s / self.config.cycle_time_s)
        while self.state != NmtState.OPERATIONAL:
            if self.bus_cycle >= limit:
                raise BootTimeoutError(_boot_failure(self))
            self.cycle()
        while self.bus_cycle % self.config.cycles_per_control:
            self.cycle()

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
                rec.set_preq_flags(self.state == _OPERATIONAL)
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
                or self.sdo_active or self.status_requests):
            for _ in range(cycles):
                self.cycle()
            return
        link = self.link
        self._set_soa(_NO_SERVICE, frames.INVALID_NODE_ID)
        soa = self.soa.view
        polled = self._cycle
        if self._queue_period is not None:
            self._queue_period(self._soc_array, self.preq_rows, self._rows, self._soa_array, self.bus_cycle,
                               cycles, self._cycle_us, self.epoch_ns)
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
        return steady_pres(buf, offsets, lengths, delays, count, self._expect, self._en, self._pres_timeout, self._fcs)

    def _bookkeeping(self) -> None:
        if self.state != _OPERATIONAL or self.joining:
            self._progress()
        if self.sdo_active:
            self._sdo_cycle()
        self.bus_cycle += 1

    def _repoll(self) -> None:
        self._cycle = tuple(self.polled)
        self._preqs = tuple(rec.preq.view for rec in self._cycle)
        self._expect = np.array([rec.node_id for rec in self._cycle], np.int64)
        self._rows = np.array([self._row[rec.node_id] for rec in self._cycle], np.int64)
        self._en = np.array([rec.en for rec in self._cycle], np.int64)

    def _queue_isochronous(self, bus_cycle: int) -> None:
        rel = bus_cycle * self._cycle_us
        t = self.epoch_ns + rel * 1000
        frames.set_soc_time(self.soc.buf, t // 1_000_000_000, t % 1_000_000_000, rel)
        self.link.queue_isochronous(self.soc.seal(), self._preqs)

    def _absorb(self, polled: tuple[CnRecord, ...], replies: list, first: int) -> None:
        """The PRes of one cycle, ``replies[first:]`` in the order of ``polled``; a CN dropped by an
        earlier cycle of the same period is no longer listened to."""
        timeout = self._pres_timeout
        fcs = self._fcs
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
                fields = _read_pres(reply, fcs=fcs) if rec.io else _read_pres(reply, _PRES_TPDO, fcs)
                src, nmt, flags1, flags2, version, size = fields[:6]
                if src != rec.node_id or (size != rec.pres_size and (nmt == _OPERATIONAL or not rec.io)) or (
                        not rec.io and version != _PDO_VERSION):
                    raise InconsistentFrame(f"PRes from node {src} for node {rec.node_id} carries {size} "
                                            f"bytes of PDO version 0x{version:02X}")
                if size == rec.pres_size:
                    rec.tpdo[:] = np.frombuffer(reply, np.uint8, size, _PDO_OFFSET)
            except FrameError:
                self._pres_error(rec, rec.malformed, FaultCode.INVALID_FORMAT)
                continue
            if flags2 & _RS and rec.node_id not in self.invite:      # the CN has ASnd frames to send
                self.invite.append(rec.node_id)
            if rec.erring:
                rec.pres_good()
            if flags1 & FLAG1_EN != rec.en:
                self.request_status(rec.node_id)
            if nmt != rec.nmt:
                self._cn_state(rec, NmtState(nmt))

    def _pres_error(self, rec: CnRecord, counter: ThresholdCounter, code: FaultCode) -> None:
        if counter is not rec.malformed:
            count_pres_error(self.health, self._row[rec.node_id], counter is rec.late)
        if rec.pres_error(counter):
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
        rec.sdo.reset()
        rec.configured = False                       # its 0x1020 says what it holds after the reset
        rec.writes, rec.stamping = [], False
        rec.queue.clear()
        rec.status_wanted = False
        if rec.node_id in self.status_requests:
            self.status_requests.remove(rec.node_id)
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
        elif self.outbox:                            # its own queue: NMT commands first-class (DS 301 §4.2.4.1.2)
            target = frames.MN_NODE_ID
            service = _NMT_INVITE if self.outbox[0][0][frames.SERVICE_ID_AT] == _NMT_COMMAND else _UNSPECIFIED_INVITE
        elif self.status_requests:
            target = self.status_requests.popleft()
            service = _STATUS_REQUEST
        elif self.unidentified:
            target = _next_ident(self)
            service = _IDENT_REQUEST if target != frames.INVALID_NODE_ID else _NO_SERVICE
        self._set_soa(service, target, self.records[target].status_flags() if service == _STATUS_REQUEST else 0)
        reply = link.transfer(self.soa.view)
        if target == frames.MN_NODE_ID:
            frame, awaiting = self.outbox.popleft()
            link.transfer(frame)
            if awaiting:
                self.invite.append(awaiting)
        elif reply is not None and target in self.records:
            self._asnd_in(self.records[target], reply)

    def _set_soa(self, service: int, target: int, flags1: int = 0) -> None:
        soa = (self.state, service, target, flags1)
        if soa != self._soa_fields:
            self._soa_fields = soa
            frames.set_soa(self.soa.buf, self.state, flags1, service, target)
            self.soa.seal()

    def _asnd_in(self, rec: CnRecord, reply) -> None:
        try:
            _, src, service_id = frames.read_asnd(reply, self._fcs)
            if src != rec.node_id:
                return
            if service_id == ServiceId.IDENT_RESPONSE:
                self._identified(rec, ident.read_ident(reply, self._fcs))
            elif service_id == ServiceId.STATUS_RESPONSE:
                self._status(rec, status.read_status(reply, self._fcs))
            elif service_id == ServiceId.SDO:
                rec.sdo.receive(bytes(reply[frames.ASND_OFFSET:]))
                self._sdo_progress(rec)
        except FrameError:
            return

    def _identified(self, rec: CnRecord, response: ident.IdentResponse) -> None:
        if not _admit(self, rec, response):
            return
        nmt = response.nmt_status
        rec.identified = True
        rec.nmt = NmtState(nmt)
        rec.reset_signalling()
        rec.preq.buf[frames.DST_MAC_AT:frames.SRC_MAC_AT] = bytes.fromhex(response.mac.replace(":", ""))
        rec.set_preq_flags(self.state == _OPERATIONAL)
        self.unidentified.remove(rec)
        self.request_status(rec.node_id)             # starts the reset of its error signalling
        if self.state != NmtState.PRE_OPERATIONAL_1:
            self.polled.append(rec)
            self.polled.sort(key=lambda r: r.node_id)
            self._repoll()
            self.joining.append(rec)

    def request_status(self, node_id: int) -> None:
        """Ask node ``node_id`` for a StatusResponse in a coming asynchronous phase."""
        rec = self._record(node_id)
        if not rec.status_wanted:
            rec.status_wanted = True
            self.status_requests.append(node_id)

    def _status(self, rec: CnRecord, response: status.StatusResponse) -> None:
        """Keep the StatusResponse, report the entries not seen before, echo EN as EA."""
        entries, en_changed = rec.take_status(response, self.state == _OPERATIONAL)
        if rec.status_wanted:
            self.status_requests.append(rec.node_id)
        keep_node_error(self.health, rec.node_id, response.entries, bool(entries))
        for entry in entries:
            self._event(EventKind.NODE_ERROR, rec.node_id, entry.code,
                        f"node {rec.node_id} reports error 0x{entry.code:04X} (entry type 0x{entry.type:04X})")
        if en_changed and rec in self._cycle:
            self._repoll()

    # -- SDO client ---------------------------------------------------------------------------------
    def sdo(self, node_id: int, command: int, index: int, subindex: int, value: object = None,
            data_type: int = DOMAIN) -> SdoRequest:
        """Start a DS 301 SDO transfer (ReadByIndex or WriteByIndex of ``value`` as ``data_type``);
        later cycles complete the returned request, an abort becomes an SDO_ABORT event too."""
        rec = self._record(node_id)
        req = SdoRequest(node_id, command, index, subindex, value, data_type)
        rec.sdo.request(req)
        self.sdo_active.add(node_id)
        self._sdo_progress(rec)
        return req

    def _sdo_cycle(self) -> None:
        for node_id in list(self.sdo_active):
            rec = self.records[node_id]
            rec.sdo.tick()
            self._sdo_progress(rec)
            if not rec.sdo.busy:
                self.sdo_active.discard(node_id)

    def _sdo_progress(self, rec: CnRecord) -> None:
        """Queue the client's frames for the asynchronous phase, report finished transfers. A CN not
        polled (no PRes, hence no RS flag) is invited after each frame and while its answer is due."""
        unpolled = rec not in self.polled
        for payload in rec.sdo.take():
            f = frames.asnd_frame(rec.node_id, frames.MN_NODE_ID, ServiceId.SDO, len(payload))
            f.buf[frames.ASND_OFFSET:frames.ASND_OFFSET + len(payload)] = payload
            self.outbox.append((f.seal(), rec.node_id if unpolled else 0))
        if unpolled and rec.sdo.busy and not self.outbox and rec.node_id not in self.invite:
            self.invite.append(rec.node_id)
        while rec.sdo.finished:
            req = rec.sdo.finished.popleft()
            if req.abort_code:
                keep_sdo_abort(self.health, rec.node_id, req.index, req.subindex, req.abort_code, req.write)
                self._event(EventKind.SDO_ABORT, rec.node_id, req.abort_code,
                            f"{req.describe()} aborted: {abort_text(req.abort_code)}")
        if rec.writes and not rec.configured and all(w.done for w in rec.writes):
            _download_progress(self, rec)

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


_IDENTITY_FIELDS = (("device_type", "device type"), ("vendor_id", "vendor id"), ("product_code", "product code"),
                    ("revision", "revision"))


def identity_mismatch(node: NodeConfig, response: ident.IdentResponse) -> str:
    """What of an IdentResponse differs from the identity ``node``'s YAML declares ("" if nothing)."""
    wrong = []
    for name, label in _IDENTITY_FIELDS:
        want, got = getattr(node.expected, name), getattr(response, name)
        if want is not None and got != want:
            wrong.append(f"{label} 0x{got:08X}, expected 0x{want:08X}")
    return "; ".join(wrong)
