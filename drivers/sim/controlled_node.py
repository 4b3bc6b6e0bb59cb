"""A simulated POWERLINK controlled node (EPSG DS 301) hosting one two-axis drive.

It follows the CN NMT table of :mod:`.nmt`, answers PReq with a PRes carrying its drive's TPDO,
applies the RPDO only when Operational and the MN sets RD, answers IdentRequest (its YAML
identity, :mod:`~drivers.powerlink.ident`), StatusRequest and SDO invitations in the asynchronous
phase, and counts lost SoC and, in ReadyToOperate and Operational, lost PReq (a SoA after a SoC
without its PReq, as openPOWERLINK's CN does) with DS 301 threshold counters (0x1C0B, 0x1C0D): a
trip is an NMT error (back to PreOp1) and a fault (0x8245, 0x8242) on both axes of its drive. Its DS 301 SDO server (:mod:`drivers.powerlink.sdo`)
serves the drive's object dictionary and the node's identity objects.

Every fault that becomes active on one of its drive's channels is an error entry (time-stamped
with the NetTime of the last SoC) of its StatusResponse and toggles EN in its PRes
(:mod:`~drivers.powerlink.status`); pending ASnd frames show as RS with the generic priority PR.
Its exception signalling is openPOWERLINK's CN's (``dllkframe.c``, StatusRequest): EC set at power-up
and after every reset, so that the MN sees it rebooted; a StatusRequest whose ER differs from the last
one's sets EC and clears EN when ER rose, clears both when it fell, and the StatusResponse it answers
already carries the new flags.
"""
from __future__ import annotations

import dataclasses
from collections import deque

from drivers.codes import FaultCode
from drivers.config import BusConfig
from drivers.identity import Identity
from drivers.sim.drive import Drive
from drivers.sim.object_dictionary import dll_objects, identity_objects
from drivers.powerlink import frames, ident, services, status
from drivers.powerlink.frames import FLAG1_EN, FLAG1_ER, FLAG1_RD, InconsistentFrame, RequestedService, ServiceId
from drivers.powerlink.nmt import NmtCommand, NmtEvent, NmtState, cn_next_state
from drivers.powerlink.pdo import RPDO, TPDO
from drivers.powerlink.sdo import SdoServer
from drivers.powerlink.threshold import ThresholdCounter

_CYCLIC = (NmtState.PRE_OPERATIONAL_2, NmtState.READY_TO_OPERATE, NmtState.OPERATIONAL)
_PREQ_DUE = (NmtState.READY_TO_OPERATE, NmtState.OPERATIONAL)     # the MN polls it: a missing PReq counts
# Enum member lookups cost ~0.2 µs each on Python 3.11: the per-cycle code uses these aliases.
_NOT_ACTIVE, _PRE_OPERATIONAL_1, _OPERATIONAL = NmtState.NOT_ACTIVE, NmtState.PRE_OPERATIONAL_1, NmtState.OPERATIONAL
_IDENT_REQUEST, _STATUS_REQUEST, _UNSPECIFIED_INVITE = (RequestedService.IDENT_REQUEST, RequestedService.STATUS_REQUEST,
                                                        RequestedService.UNSPECIFIED_INVITE)
_UNPACK_RPDO = RPDO.struct.unpack_from
_PDO_OFFSET = frames.PDO_OFFSET
_RS_MAX = frames.FLAG2_RS_MASK
_PR_GENERIC = status.PRIORITY_GENERIC << frames.FLAG2_PR_SHIFT
HISTORY_LENGTH = status.ENTRIES       # error history entries a node keeps (newest first)
_RESETS = (NmtCommand.RESET_NODE, NmtCommand.RESET_COMMUNICATION, NmtCommand.RESET_CONFIGURATION,
           NmtCommand.SW_RESET)


class ControlledNode:
    __slots__ = (
        "_codes",
        "_rpdo_seen",
        "drive",
        "exception",
        "fcs",
        "history",
        "ident",
        "identity",
        "last_er",
        "loss_preq",
        "loss_soc",
        "nmt",
        "nmt_history",
        "node_id",
        "pending",
        "preq_seen",
        "pres",
        "rx_errors",
        "sdo",
        "soc_seen",
        "soc_time",
        "status",
    )

    def __init__(self, node_id: int, drive: Drive, config: BusConfig, identity: Identity | None = None,
                 fcs: bool = True) -> None:
        """``fcs``: the frames it reads end with their FCS (SimulatedNodes)."""
        self.node_id = node_id
        self.fcs = fcs
        self.identity = Identity.default(node_id) if identity is None else identity
        self.drive = drive
        self.nmt = NmtState.NOT_ACTIVE
        self.nmt_history: list[NmtState] = [NmtState.NOT_ACTIVE]
        self.loss_soc = ThresholdCounter(config.threshold)
        self.loss_preq = ThresholdCounter(config.threshold)
        self.soc_seen = False
        self.preq_seen = False                  # its PReq came since the last SoA
        self.pres = frames.pres_frame(node_id, TPDO.size, buf=drive.pres_buffer)   # the drive maps its TPDO in
        self.ident = ident.ident_frame(node_id)
        self.status = status.status_frame(node_id)
        self.pending: deque[memoryview] = deque()      # ASnd frames waiting for an UnspecifiedInvite
        self.exception = status.FLAG1_EC            # flags1 bits EN and EC of its PRes and StatusResponse
        self.last_er = 0                            # the ER of the last StatusRequest
        self.history: deque[status.ErrorEntry] = deque(maxlen=HISTORY_LENGTH)
        self.soc_time = (config.net_time_epoch_s, 0)     # NetTime of the last SoC seen
        self._codes = list(drive.fault_code)        # the drive's fault codes when last looked at
        identity_objects(drive.objects, lambda: self.identity, self._identify)
        dll_objects(drive.objects, self.loss_soc, self.loss_preq, config.cycle_us)
        self.sdo = SdoServer(drive.objects)
        self._rpdo_seen = b""
        self.rx_errors = 0

    # -- isochronous phase ------------------------------------------------------------------------
    def on_soc(self, net_time: tuple[int, int]) -> None:
        self.soc_seen = True
        self.soc_time = net_time
        if self.nmt is _NOT_ACTIVE or self.nmt is _PRE_OPERATIONAL_1:
            self._event(NmtEvent.SOC)

    def on_preq(self, frame) -> memoryview | None:
        """The PRes answering ``frame`` (validated here), or None when this node does not answer."""
        nmt = self.nmt
        if nmt not in _CYCLIC:
            return None
        operational = nmt is _OPERATIONAL
        self.preq_seen = True
        if self.loss_preq.count:
            self.loss_preq.good()
        if frame != self._rpdo_seen:
            _, flags1, version, size = frames.read_preq(frame, self.fcs)
            if size != RPDO.size or version != frames.PDO_VERSION:
                raise InconsistentFrame(f"PReq to node {self.node_id} carries {size} bytes of PDO version "
                                        f"0x{version:02X}, the mapping declares {RPDO.size} bytes of 0x10")
            if operational and flags1 & FLAG1_RD:
                self._rpdo_seen = bytes(frame)
                self.drive.apply_rpdo(_UNPACK_RPDO(frame, _PDO_OFFSET))
        elif operational and self.drive.dirty:     # the frame last applied: validated, RD set
            self.drive.apply_rpdo(_UNPACK_RPDO(frame, _PDO_OFFSET))
        frames.set_pres_status(self.pres.buf, nmt, self.pres_flags1(), self.flags2())
        return self.pres.seal()

    def pres_flags1(self) -> int:
        """RD when Operational, and EN."""
        return (FLAG1_RD if self.nmt is _OPERATIONAL else 0) | (self.exception & FLAG1_EN)

    def flags2(self) -> int:
        """PR and RS: the pending ASnd frames, at the generic priority."""
        pending = len(self.pending)
        return _PR_GENERIC | min(pending, _RS_MAX) if pending else 0

    # -- asynchronous phase -----------------------------------------------------------------------
    def on_soa(self, service: int, target: int, flags1: int = 0) -> memoryview | None:
        """End of the isochronous phase: SoC-loss accounting, then the ASnd if invited (``flags1``:
        the SoA's, whose ER a StatusRequest carries: module docstring)."""
        if self.nmt is _NOT_ACTIVE:
            self._event(NmtEvent.SOA)
        if self.nmt in _CYCLIC:
            if self.soc_seen:
                if self.loss_soc.count:
                    self.loss_soc.good()
            elif self.loss_soc.error():
                self._leave_operational(FaultCode.LOSS_SOC)
                self._event(NmtEvent.DLL_ERROR)
            if (self.soc_seen and not self.preq_seen and self.nmt in _PREQ_DUE and self.loss_preq.error()):
                self._leave_operational(FaultCode.LOSS_PREQ)
                self._event(NmtEvent.DLL_ERROR)
        self.soc_seen = self.preq_seen = False
        self.sdo.tick()
        self._sdo_out()
        if target != self.node_id:
            return None
        if service == _IDENT_REQUEST:
            ident.write_ident(self.ident.buf, self.identity, self.flags2(), self.nmt, RPDO.size, TPDO.size)
            return self.ident.seal()
        if service == _STATUS_REQUEST:
            er = flags1 & FLAG1_ER
            if er != self.last_er:
                self.exception, self.last_er = (status.FLAG1_EC if er else 0), er
            status.write_status(self.status.buf, self.exception, self.flags2(), self.nmt, self.drive.error_register,
                                self._entries())
            return self.status.seal()
        if service == _UNSPECIFIED_INVITE and self.pending:
            return self.pending.popleft()
        return None

    def on_asnd(self, service_id: int, frame) -> None:
        """An ASnd from the MN addressed to this node (or broadcast), already validated."""
        if service_id == ServiceId.NMT_COMMAND:
            self.command(NmtCommand(services.read_nmt_command(frame, self.fcs)))
        elif service_id == ServiceId.SDO:
            self._sdo(frame)

    def command(self, command: NmtCommand) -> None:
        """Apply an NMT state command."""
        if command in _RESETS:
            self.drive.reset()
            self.loss_soc.clear()
            self.loss_preq.clear()
            self.pending.clear()
            self.sdo.reset()
            self.soc_seen = False
            self._rpdo_seen = b""
            self.exception, self.last_er = status.FLAG1_EC, 0
        elif self.nmt == NmtState.OPERATIONAL and cn_next_state(self.nmt, command) != self.nmt:
            self._leave_operational(FaultCode.COMMUNICATION)
        self._event(command)

    def note_faults(self) -> None:
        """After each drive step: each fault newly active on a channel becomes a history entry,
        stamped with the last SoC's NetTime, and toggles EN."""
        if self.drive.fault_code == self._codes:
            return
        seconds, nanoseconds = self.soc_time
        for ch, code in enumerate(self.drive.fault_code):
            if code and code != self._codes[ch]:
                self.history.appendleft(status.ErrorEntry(status.MODE_OCCURRED | status.profile_of(code), code,
                                                          seconds, nanoseconds, ch))
                self.exception ^= FLAG1_EN
        self._codes[:] = self.drive.fault_code

    def _entries(self) -> list[status.ErrorEntry]:
        """Status entries (the faults active now, per channel), then the history, at most status.ENTRIES."""
        active = []
        for ch, code in enumerate(self.drive.fault_code):
            if code:
                since = next((e for e in self.history if e.code == code and e.info == ch), None)
                time = (since.seconds, since.nanoseconds) if since else self.soc_time
                active.append(status.ErrorEntry(status.TYPE_STATUS | status.MODE_ACTIVE | status.profile_of(code),
                                                code, *time, ch))
        return (active + list(self.history))[:status.ENTRIES]

    def _leave_operational(self, code: FaultCode) -> None:
        for ch in self.drive.slots:
            self.drive.raise_fault(ch, code)

    def _event(self, event) -> None:
        new = cn_next_state(self.nmt, event)
        if new != self.nmt or event in _RESETS:
            self.nmt = new
            self.nmt_history.append(new)

    def _identify(self, **fields: int) -> None:
        """0x1020 written by SDO (verify configuration): its IdentResponse reports it from now on."""
        self.identity = dataclasses.replace(self.identity, **fields)

    def _sdo(self, frame) -> None:
        self.sdo.receive(bytes(frame[frames.ASND_OFFSET:]))
        self._sdo_out()

    def _sdo_out(self) -> None:
        """The server's payloads as ASnd frames, queued for the next invitations (RS counts them)."""
        if self.sdo.pending:
            for payload in self.sdo.take():
                reply = frames.asnd_frame(frames.MN_NODE_ID, self.node_id, ServiceId.SDO, len(payload))
                reply.buf[frames.ASND_OFFSET:frames.ASND_OFFSET + len(payload)] = payload
                self.pending.append(reply.seal())
