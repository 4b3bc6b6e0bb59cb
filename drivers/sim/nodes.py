"""The controlled-node side of the simulated POWERLINK network: CNs, their drives and the plant.

:meth:`SimulatedNodes.transfer` takes one frame from the MN (bytes) and returns the frame the
network answers with, if any, so the object is itself a managing-node link. The drives and the plant advance one bus cycle when the SoA closes
the isochronous phase, so the simulation is lock-step and deterministic. The ``sim`` backend
calls it in-process; the ``udp`` backend's server calls it in another process.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from drivers.sim import isochronous
from drivers.config import BusConfig, NodeConfig
from drivers.powerlink import configuration
from drivers.service_channel import encode
from drivers.sim.object_dictionary import ObjectDictionary
from drivers.sim.drive import Drive, DriveBank
from drivers.sim.faults import FaultInjector
from drivers.sim.plant import InertiaPlant, Plant
from drivers.powerlink import frames
from drivers.sim.controlled_node import ControlledNode
from drivers.powerlink.frames import FrameError, MessageType
from drivers.powerlink.nmt import NmtCommand, NmtState

_OPERATIONAL = NmtState.OPERATIONAL
_PREQ, _SOC, _SOA, _ASND = (int(t) for t in (MessageType.PREQ, MessageType.SOC, MessageType.SOA, MessageType.ASND))


def commission(objects: ObjectDictionary, node: NodeConfig, config: BusConfig) -> None:
    """Write into ``objects`` what the managing node's configuration download would, 0x1020 last
    (:mod:`drivers.powerlink.configuration`); at the first refusal stop, 0x1020 unwritten: the
    managing node's own download then meets the refusal and names it."""
    writes = configuration.download(node, config)
    for w in writes + configuration.stamp_writes(configuration.stamp(writes)):
        if objects.write(w.index, w.subindex, encode(w.data_type, w.value)):
            return


class ImmediateLink(ABC):
    """The queueing half of the MN's link on top of ``transfer``: every frame is delivered at once;
    the PRes of queued PReqs are kept (copied: a CN reuses its PRes buffer every cycle) until
    :meth:`collect`."""

    reply_delay_s: float

    def __init__(self) -> None:
        self.reply_delays: list[float] = []
        self._replies: list[bytes | None] = []
        self._delays: list[float] = []

    @abstractmethod
    def transfer(self, frame) -> memoryview | None:
        """Deliver one MN frame; its answer or None."""

    def queue_isochronous(self, soc, preqs) -> None:
        transfer = self.transfer
        transfer(soc)
        replies, delays = self._replies, self._delays
        for preq in preqs:
            reply = transfer(preq)
            replies.append(None if reply is None else bytes(reply))
            delays.append(self.reply_delay_s)

    def collect(self) -> list[bytes | None]:
        replies, self.reply_delays = self._replies, self._delays
        self._replies, self._delays = [], []
        return replies

    def flush(self) -> None:
        """Nothing is held back in-process."""


class SimulatedNodes(ImmediateLink):
    def __init__(self, config: BusConfig, plant: Plant | None = None, fcs: bool = True,
                 commissioned: bool = True) -> None:
        """``fcs``: frames come and go with their FCS (the ``sim`` and ``udp`` links); False: as a
        socket carries them, without (frames.py), e.g. behind a raw Ethernet interface.
        ``commissioned``: each node starts holding the configuration ``config`` downloads into it,
        0x1020 included, as the drives of a robot in service keep it in non-volatile memory (the
        managing node then skips the download), unless its YAML identity reports a verify
        configuration of its own (a node configured by another); False: as from the factory."""
        super().__init__()
        self.config = config
        self.fcs = fcs
        self._min_frame = frames.MIN_FRAME if fcs else frames.SRC_NODE_AT + 1
        if not fcs:
            self.transfer = self._socket_transfer
        self.plant = plant if plant is not None else InertiaPlant.from_config(config)
        self.bank = DriveBank(config, self.plant)
        self.nodes = {n.node_id: ControlledNode(n.node_id, Drive(self.bank, n.axes), config, n.identity, fcs)
                      for n in config.nodes}
        self._node_list = list(self.nodes.values())
        if commissioned:
            for n in config.nodes:
                if not (n.identity.configuration_date or n.identity.configuration_time):
                    commission(self.nodes[n.node_id].drive.objects, n, config)
        self.faults = FaultInjector(self)
        self.reply_delay_s = 0.0
        self.rx_errors = 0
        self.phase = 0
        self._cycle_us = config.cycle_us
        self._ratio = config.cycles_per_control
        self._fast_nodes = np.full((len(self._node_list), isochronous.N_NODE_COLUMNS), -1, np.int64)
        self._node_of = np.full(256, -1, np.int64)
        for k, node in enumerate(self._node_list):
            drive = node.drive
            self._fast_nodes[k, :isochronous.CHANNEL_ROWS] = (node.node_id, 0, drive.pres_row, 0)
            for ch in drive.slots:
                self._fast_nodes[k, isochronous.CHANNEL_ROWS + ch] = drive.rows[ch]
            self._node_of[node.node_id] = k

    def serve_isochronous(self, rx: np.ndarray, tx: np.ndarray, io: np.ndarray) -> None:
        """Let :func:`drivers.sim.isochronous.serve_isochronous` handle the datagram's frames from
        ``io[AT]`` while the network is in steady state (no fault injected; per node: Operational,
        nothing pending, its drive not dirty; SoA: no lost SoC being counted down), then finish the
        bus cycle of a SoA it stepped; ``io`` is updated in place (``io[PENDING]`` is the caller's)."""
        io[isochronous.SOCS] = io[isochronous.STEPPED] = 0
        if self.faults.active:
            return
        nodes = self._fast_nodes
        soa_ok = seen = True
        for k, node in enumerate(self._node_list):
            ok = node.nmt is _OPERATIONAL and not node.pending and not node.drive.dirty and not node.loss_preq.count
            nodes[k, isochronous.ELIGIBLE] = ok
            nodes[k, isochronous.FLAGS1] = node.pres_flags1()
            soa_ok = soa_ok and ok and not node.loss_soc.count
            seen = seen and node.soc_seen
        io[isochronous.SOA_OK] = soa_ok
        io[isochronous.SOC_SEEN] = seen
        io[isochronous.PHASE] = self.phase
        bank = self.bank
        bank.read_aux()
        at = io[isochronous.AT]
        isochronous.serve_isochronous(rx, tx, io, nodes, self._node_of, bank.pres, bank.x, bank.flags,
                                      self.plant.motor_position, self.plant.motor_velocity, bank.aux_src,
                                      bank.aux_rows, bank.torque,
                                      bank.dt, self._cycle_us, self._ratio, bank.control_period)
        if io[isochronous.AT] != at:                 # steady state: every eligible node is polled, none
            for k, node in enumerate(self._node_list):   # counts a lost PReq while the kernel runs
                if nodes[k, isochronous.ELIGIBLE]:
                    node.preq_seen = True
        if io[isochronous.SOCS] or io[isochronous.STEPPED]:
            self.phase = int(io[isochronous.PHASE])
            seen = bool(io[isochronous.SOC_SEEN])
            for node in self._node_list:
                node.soc_seen = seen
        if io[isochronous.SOCS]:
            net_time = (int(io[isochronous.NET_TIME_S]), int(io[isochronous.NET_TIME_NS]))
            for node in self._node_list:
                node.soc_time = net_time
        if io[isochronous.STEPPED]:
            bank.after_step(int(io[isochronous.NEW_FAULTS]))
            for node in self._node_list:
                node.note_faults()

    def transfer(self, frame) -> memoryview | None:
        """Deliver one MN frame; the answer (PRes, ASnd) or None. Malformed frames are counted."""
        self.reply_delay_s = 0.0
        if len(frame) < self._min_frame:
            self.rx_errors += 1
            return None
        try:
            msg_type = frame[frames.MESSAGE_TYPE_AT]
            if msg_type == _PREQ:
                node = self.nodes.get(frame[frames.DST_NODE_AT])
                faults = self.faults
                if node is None or (faults.active and not faults.connected(node.node_id)):
                    return None
                pres = node.on_preq(frame)
                if pres is not None and faults.active:
                    return faults.outgoing_pres(node.node_id, pres)
                return pres
            if msg_type == _SOC:
                self._soc(frame)
            elif msg_type == _SOA:
                return self._soa(frame)
            elif msg_type == _ASND:
                self._asnd(frame)
            else:
                frames.check_frame(frame, self.fcs)
        except FrameError:
            self.rx_errors += 1
        return None

    def _socket_transfer(self, frame) -> memoryview | None:
        """:meth:`transfer` of a frame without FCS; the answer without its FCS."""
        reply = SimulatedNodes.transfer(self, frame)
        return None if reply is None else frames.without_fcs(reply)

    def reset(self) -> None:
        """Reset every node (NMT ResetNode), as when a new MN session starts."""
        for node in self._node_list:
            node.command(NmtCommand.RESET_NODE)

    def close(self) -> None:
        """End of an MN session (Link protocol)."""
        self.reset()

    def _soc(self, frame) -> None:
        _, _, seconds, nanoseconds, relative_us = frames.read_soc(frame, self.fcs)
        self.phase = (relative_us // self._cycle_us) % self._ratio
        faults = self.faults
        net_time = (seconds, nanoseconds)
        for node in self._node_list:
            if not (faults.active and faults.swallow_soc(node.node_id)):
                node.on_soc(net_time)

    def _soa(self, frame) -> memoryview | None:
        _, flags1, service, target, _ = frames.read_soa(frame, self.fcs)
        reply = None
        faults = self.faults
        for node in self._node_list:
            if faults.active and not faults.connected(node.node_id):
                continue
            answer = node.on_soa(service, target, flags1)
            if answer is not None:
                reply = answer
        self.bank.step(self.phase)
        for node in self._node_list:
            node.note_faults()
        self.phase = (self.phase + 1) % self._ratio
        return reply

    def _asnd(self, frame) -> None:
        dst, src, service_id = frames.read_asnd(frame, self.fcs)
        if src != frames.MN_NODE_ID:
            return
        for node in self._node_list:
            if (dst == node.node_id or dst == frames.BROADCAST_NODE_ID) and self.faults.connected(node.node_id):
                node.on_asnd(service_id, frame)
