"""A simulated POWERLINK controlled node (EPSG DS 301) hosting one two-axis drive.

It follows the CN NMT table of :mod:`.nmt`, answers PReq with a PRes carrying its drive's TPDO,
applies the RPDO only when Operational and the MN sets RD, answers IdentRequest and SDO
invitations in the asynchronous phase (its DS 301 SDO server, :mod:`drivers.powerlink.sdo`, asks for
one with the RS flag of its PRes), and counts lost SoC with a DS 301 threshold counter: a
trip is an NMT error (back to PreOp1) and a fault (0x8245) on both axes of its drive.
"""
from __future__ import annotations

from collections import deque

from drivers.codes import FaultCode
from drivers.config import BusConfig
from drivers.sim.drive import Drive
from drivers.powerlink import frames, services
from drivers.powerlink.frames import FLAG1_RD, InconsistentFrame, RequestedService, ServiceId
from drivers.powerlink.nmt import NmtCommand, NmtEvent, NmtState, cn_next_state
from drivers.powerlink.pdo import RPDO, TPDO
from drivers.powerlink.sdo import RETRIES, RETRY_CYCLES, SdoServer
from drivers.powerlink.threshold import ThresholdCounter

_CYCLIC = (NmtState.PRE_OPERATIONAL_2, NmtState.READY_TO_OPERATE, NmtState.OPERATIONAL)
# Enum member lookups cost ~0.2 µs each on Python 3.11: the per-cycle code uses these aliases.
_NOT_ACTIVE, _PRE_OPERATIONAL_1, _OPERATIONAL = NmtState.NOT_ACTIVE, NmtState.PRE_OPERATIONAL_1, NmtState.OPERATIONAL
_IDENT_REQUEST, _UNSPECIFIED_INVITE = RequestedService.IDENT_REQUEST, RequestedService.UNSPECIFIED_INVITE
_UNPACK_RPDO = RPDO.struct.unpack_from
_PDO_OFFSET = frames.PDO_OFFSET
_RS_MAX = frames.FLAG2_RS_MASK
_RESETS = (NmtCommand.RESET_NODE, NmtCommand.RESET_COMMUNICATION, NmtCommand.RESET_CONFIGURATION,
           NmtCommand.SW_RESET)


class ControlledNode:
    __slots__ = (
        "_rpdo_seen",
        "drive",
        "ident",
        "loss_soc",
        "nmt",
        "nmt_history",
        "node_id",
        "pending",
        "pres",
        "rx_errors",
        "sdo",
        "soc_seen",
    )

    def __init__(self, node_id: int, drive: Drive, config: BusConfig) -> None:
        self.node_id = node_id
        self.drive = drive
        self.nmt = NmtState.NOT_ACTIVE
        self.nmt_history: list[NmtState] = [NmtState.NOT_ACTIVE]
        self.loss_soc = ThresholdCounter(config.threshold)
        self.soc_seen = False
        self.pres = frames.pres_frame(node_id, TPDO.size, buf=drive.pres_buffer)   # the drive maps its TPDO in
        self.ident = frames.asnd_frame(frames.MN_NODE_ID, node_id, ServiceId.IDENT_RESPONSE,
                                       services.IDENT.size)
        self.pending: deque[memoryview] = deque()      # ASnd frames waiting for an UnspecifiedInvite
        self.sdo = SdoServer(drive.objects, RETRY_CYCLES, RETRIES)
        self._rpdo_seen = b""
        self.rx_errors = 0

    # -- isochronous phase ------------------------------------------------------------------------
    def on_soc(self) -> None:
        self.soc_seen = True
        if self.nmt is _NOT_ACTIVE or self.nmt is _PRE_OPERATIONAL_1:
            self._event(NmtEvent.SOC)

    def on_preq(self, frame) -> memoryview | None:
        """The PRes answering ``frame`` (validated here), or None when this node does not answer."""
        nmt = self.nmt
        if nmt not in _CYCLIC:
            return None
        operational = nmt is _OPERATIONAL
        if frame != self._rpdo_seen:
            _, flags1, version, size = frames.read_preq(frame)
            if size != RPDO.size or version != frames.PDO_VERSION:
                raise InconsistentFrame(f"PReq to node {self.node_id} carries {size} bytes of PDO version "
                                        f"0x{version:02X}, the mapping declares {RPDO.size} bytes of 0x10")
            if operational and flags1 & FLAG1_RD:
                self._rpdo_seen = bytes(frame)
                self.drive.apply_rpdo(_UNPACK_RPDO(frame, _PDO_OFFSET))
        elif operational and self.drive.dirty:     # the frame last applied: validated, RD set
            self.drive.apply_rpdo(_UNPACK_RPDO(frame, _PDO_OFFSET))
        frames.set_pres_status(self.pres.buf, nmt, FLAG1_RD if operational else 0, min(len(self.pending), _RS_MAX))
        return self.pres.seal()

    # -- asynchronous phase -----------------------------------------------------------------------
    def on_soa(self, service: int, target: int) -> memoryview | None:
        """End of the isochronous phase: SoC-loss accounting, then the ASnd if invited."""
        if self.nmt is _NOT_ACTIVE:
            self._event(NmtEvent.SOA)
        if self.nmt in _CYCLIC:
            if self.soc_seen:
                if self.loss_soc.count:
                    self.loss_soc.good()
            elif self.loss_soc.error():
                self._leave_operational(FaultCode.LOSS_SOC)
                self._event(NmtEvent.DLL_ERROR)
        self.soc_seen = False
        self.sdo.tick()
        self._sdo_out()
        if target != self.node_id:
            return None
        if service == _IDENT_REQUEST:
            services.write_ident(self.ident.buf, self.nmt, RPDO.size, TPDO.size)
            return self.ident.seal()
        if service == _UNSPECIFIED_INVITE and self.pending:
            return self.pending.popleft()
        return None

    def on_asnd(self, service_id: int, frame) -> None:
        """An ASnd from the MN addressed to this node (or broadcast), already validated."""
        if service_id == ServiceId.NMT_COMMAND:
            self.command(NmtCommand(services.read_nmt_command(frame)))
        elif service_id == ServiceId.SDO:
            self._sdo(frame)

    def command(self, command: NmtCommand) -> None:
        """Apply an NMT state command."""
        if command in _RESETS:
            self.drive.reset()
            self.loss_soc.clear()
            self.pending.clear()
            self.sdo.reset()
            self.soc_seen = False
            self._rpdo_seen = b""
        elif self.nmt == NmtState.OPERATIONAL and cn_next_state(self.nmt, command) != self.nmt:
            self._leave_operational(FaultCode.COMMUNICATION)
        self._event(command)

    def _leave_operational(self, code: FaultCode) -> None:
        for ch in self.drive.slots:
            self.drive.raise_fault(ch, code)

    def _event(self, event) -> None:
        new = cn_next_state(self.nmt, event)
        if new != self.nmt or event in _RESETS:
            self.nmt = new
            self.nmt_history.append(new)

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
