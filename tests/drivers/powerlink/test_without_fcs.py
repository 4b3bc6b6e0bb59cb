"""Frames as a socket carries them (no FCS, frames.py): the managing node and the simulated nodes
run the same boot, cycles, fault and SDO answer as over the sim link, to the bit."""
from __future__ import annotations

import copy

import numpy as np

from drivers.config import parse_bus_config
from drivers.identity import Identity
from drivers.powerlink import frames
from drivers.powerlink.bus import PowerlinkBus
from drivers.powerlink.ident import IDENT
from drivers.pdo import TPDO
from drivers.sim.nodes import ImmediateLink, SimulatedNodes
from tests.drivers.conftest import _BENCH
from tests.drivers.helpers import cycle


class SocketLink(ImmediateLink):
    """What a raw socket does: the MN's frames leave without their FCS, answers come without."""

    fcs = False

    def __init__(self, network: SimulatedNodes) -> None:
        super().__init__()
        self.network = network
        self.reply_delay_s = 0.0
        self.lengths: set[tuple[int, int]] = set()           # (message type, length) of the answers

    def transfer(self, frame):
        reply = self.network.transfer(frames.without_fcs(frame))
        if reply is not None:
            self.lengths.add((reply[frames.MESSAGE_TYPE_AT], len(reply)))
        return reply

    def close(self) -> None:
        self.network.reset()


def run(fcs: bool):
    config = parse_bus_config(copy.deepcopy(_BENCH))
    network = SimulatedNodes(config, fcs=fcs)
    link = network if fcs else SocketLink(network)
    bus = PowerlinkBus(config, link, network.faults)
    bus.boot()
    for axis in bus.axes.values():
        axis.enable()
    trace = []
    for k in range(120):
        bus.target_position[:] = 0.2 * np.sin(0.05 * k)
        if k == 40:
            bus.faults.apply("drive_fault", axis="hip", kind="following_error")
        if k == 60:
            request = bus.sdo_read(1, 0x1001, 0)
        cycle(bus)
        trace.append(np.concatenate([bus.position, bus.velocity, bus.state]))
    result = (np.array(trace), request.done, request.value, [(e.kind, e.node_id, e.code) for e in bus.events],
              bus.mn.records[2].status, bus.mn.records[3].ident)
    bus.close()
    return result, link


def test_a_run_without_fcs_is_the_run_with_it():
    (trace, done, value, events, status, ident), link = run(False)
    reference, _ = run(True)
    assert np.array_equal(trace, reference[0]) and (done, value, events) == reference[1:4]
    assert status == reference[4] and status.entries and ident == reference[5]
    assert ident.host_name == Identity.default(3).host_name
    assert {(frames.MessageType.PRES, frames.PDO_OFFSET + TPDO.size),             # the frames' own lengths
            (frames.MessageType.ASND, frames.ASND_OFFSET + IDENT.size)} <= link.lengths
