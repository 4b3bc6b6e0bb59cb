"""The HAL :class:`~drivers.hal.Bus` on a POWERLINK managing node; backends differ only by link.

``read()`` and ``write()`` are one Numba pass each over the process image
(:mod:`drivers.powerlink.process_image`), compiled (or loaded from the cache) when the bus is built.
"""
from __future__ import annotations

from time import time_ns

import numpy as np

from drivers.config import BusConfig
from drivers.events import BusEvent, EventKind
from drivers.fault_api import FaultApi
from drivers.hal import Bus, BusStateError, Intent
from drivers.health import flag_saturation
from drivers.powerlink.capture import Capture, CaptureLink
from drivers.powerlink.managing_node import Link, ManagingNode
from drivers.powerlink.nmt import NmtState
from drivers.powerlink.pdo import RPDO
from drivers.powerlink.process_image import SATURATION_BITS, read_tpdo, write_rpdo
from drivers.powerlink.scaling import scale_table
from drivers.service_channel import DOMAIN, SDO_READ, SDO_WRITE, SdoRequest

_OPERATIONAL = NmtState.OPERATIONAL        # an enum member lookup costs ~0.2 µs on Python 3.11


class PowerlinkBus(Bus):
    def __init__(self, config: BusConfig, link: Link, faults: FaultApi, epoch_ns: int | None = None) -> None:
        """``epoch_ns``: the SoC NetTime of bus cycle 0 (ns since 1970): the host clock for a
        real-time link, None in lock-step (``bus.net_time_epoch``)."""
        super().__init__(config)
        self.link = link
        self.faults = faults
        self.mn = ManagingNode(config, link, self.events, epoch_ns, self.health_views)
        self._flags = self.health_views.flags
        self._lockstep = epoch_ns is None            # capture time stamps: simulated time, else the host clock
        row = {n.node_id: k for k, n in enumerate(config.nodes)}
        self._axis_node = np.array([row[a.node_id] for a in config.axes], np.int64)     # row of mn.tpdo / preq_rows
        self._axis_channel = np.array([a.channel for a in config.axes], np.int64)
        self._newly_faulted = np.zeros(len(config.axes), np.int64)
        self._newly_saturated = np.zeros(len(config.axes), np.int64)
        self.scales = scale_table(config.axes)          # SI -> the CiA 402 integers, per axis (pdo.SCALES)
        self._ratio = config.cycles_per_control
        self._warm_up()

    def _warm_up(self) -> None:
        """Compile (or load) the read and write kernels now, on copies: never inside a control cycle."""
        none = np.zeros(0, np.int64)
        scales = self.scales[:0]
        read_tpdo(self.mn.tpdo.copy(), self.mn.latched.copy(), none, none, scales, none, none, none,
                  self.position[:0], self.position[:0], self.position[:0], self.aux[:0], none, none, none)
        write_rpdo(none, none, none, none, self.position[:0], self.position[:0], self.position[:0],
                   self.mn.preq_rows.copy(), none, none, scales, none, self.saturations[:0], none, True)
        flag_saturation(self._flags.copy(), none)

    def boot(self) -> None:
        self._check_open()
        self.mn.boot()
        self.read()
        self.target_position[:] = self.position

    def read(self) -> None:
        self._flags[0] = 0.0                        # drivers.health: the flags say what happened since
        count = read_tpdo(self.mn.tpdo, self.mn.latched, self._axis_node, self._axis_channel, self.scales,
                          self._latched, self.statusword, self.mode_display, self.position, self.velocity, self.current, self.aux,
                          self.state, self.fault_code, self._newly_faulted)
        if count:
            for j in range(count):
                self._axis_faulted(int(self._newly_faulted[j]))

    def write(self) -> None:
        """Each axis' RPDO channel into its node's PReq (an axis resetting a fault takes its
        controlword from the HAL first); unconfigured channels keep the defaults the PReq was built with.
        An axis whose setpoints start not fitting their integers raises a SETPOINT_SATURATED event."""
        pending, count = self._write(False)
        if pending:
            for i in np.flatnonzero(self.intent == Intent.FAULT_RESET).tolist():
                self._controlword[i] = self._fault_reset_word(i)
            pending, count = self._write(True)
        flag_saturation(self._flags, self.saturated)
        for j in range(count):
            self._saturation_event(int(self._newly_saturated[j]))

    def _write(self, resets_done: bool) -> tuple[int, int]:
        return write_rpdo(self.intent, self.state, self._controlword, self.mode, self.target_position,
                          self.target_velocity, self.torque_offset, self.mn.preq_rows, self._axis_node,
                          self._axis_channel, self.scales, self.saturated, self.saturations, self._newly_saturated,
                          resets_done)

    def _saturation_event(self, i: int) -> None:
        name, bits = self.axis_names[i], int(self.saturated[i])
        fields = [f"{n} 0x{RPDO.entry(n).index:04X} = "
                  f"{float(getattr(self, n)[i]):.6g}" for n, bit in SATURATION_BITS.items() if bits & bit]
        self.events.append(BusEvent(self.control_cycle, EventKind.SETPOINT_SATURATED, self._node_of[i], bits, name,
                                    f"axis {name}: {', '.join(fields)} outside its process data integer, "
                                    "saturated (a NaN keeps the last value sent)"))

    def exchange(self) -> None:
        self._check_open()
        if self.mn.state != _OPERATIONAL:
            raise BusStateError("the POWERLINK network is not Operational: call boot() before exchange()")
        self.mn.period(self._ratio)
        self.link.flush()               # the last SoA goes out now: the CNs step while the controller computes
        self.control_cycle += 1

    def node_operational(self, node_id: int) -> bool:
        rec = self.mn.records[node_id]
        return rec in self.mn.polled and rec.nmt == NmtState.OPERATIONAL

    def sdo_read(self, node_id: int, index: int, subindex: int, data_type: int = DOMAIN) -> SdoRequest:
        return self.mn.sdo(node_id, SDO_READ, index, subindex, data_type=data_type)

    def sdo_write(self, node_id: int, index: int, subindex: int, value: object, data_type: int) -> SdoRequest:
        return self.mn.sdo(node_id, SDO_WRITE, index, subindex, value, data_type)

    def stop_node(self, node_id: int) -> None:
        self.mn.stop_node(node_id)

    def reset_node(self, node_id: int) -> None:
        self.mn.reset_node(node_id)

    def capture(self, path: str, slots: int = 8192) -> None:
        """Record every frame the MN sends and receives into the pcapng file ``path`` from now on
        (:mod:`~drivers.powerlink.capture`, a ring of ``slots`` frames); the file is complete once the bus
        is closed."""
        if isinstance(self.link, CaptureLink):
            raise BusStateError(f"the bus already captures to {self.link.capture.path}")
        fcs = getattr(self.link, "fcs", True)
        clock = self.mn.net_time_ns if self._lockstep else time_ns
        self.link = CaptureLink(self.link, Capture(path, fcs, slots), clock, net_time=self._lockstep)
        self.mn.attach(self.link)

    def _close(self) -> None:
        self.link.close()
