"""NMT boot (EPSG DS 301 §7.4): boot order, cyclic start only when all Operational, timeout, stop/reset."""
from __future__ import annotations

import pytest

from drivers.cia402 import State
from drivers.codes import FaultCode
from drivers.events import EventKind
from drivers.hal import BusStateError, open_bus
from drivers.powerlink import frames
from drivers.powerlink.frames import MessageType
from drivers.powerlink.managing_node import BootTimeoutError
from drivers.powerlink.nmt import (
    BOOT_SEQUENCE,
    NmtCommand,
    NmtEvent,
    NmtState,
    cn_next_state,
)

from tests.drivers.helpers import cycle


def test_every_node_boots_in_the_standard_order(bench):
    bus = open_bus(bench)
    bus.boot()
    for node in bus.network.nodes.values():
        assert node.nmt_history == list(BOOT_SEQUENCE)
    assert bus.mn.state == NmtState.OPERATIONAL
    assert bus.mn.bus_cycle % 5 == 0                     # boot ends aligned to a control period
    # the simulated drives hold the bench's configuration already: each says so, nothing is downloaded
    assert [e.kind for e in bus.events] == [EventKind.CONFIGURATION] * 3 + [EventKind.BOOT_COMPLETE]
    assert all(e.text.endswith("download skipped") for e in list(bus.events)[:3])


def test_cyclic_control_starts_only_when_all_nodes_are_operational(bench):
    bus = open_bus(bench, record_frames=True)
    bus.boot()
    log = bus.link.frames
    first_soc = next(i for i, f in enumerate(log) if f[14] == MessageType.SOC)
    assert all(f[14] in (MessageType.SOA, MessageType.ASND) for f in log[:first_soc])  # PreOp1: async only
    preqs = [f for f in log if f[14] == MessageType.PREQ]
    rd_from = next(i for i, f in enumerate(preqs) if f[18] & frames.FLAG1_RD)
    assert all(not f[18] & frames.FLAG1_RD for f in preqs[:rd_from])
    # The last PRes of every node before RD was set reports Operational.
    pres_before = [f for f in log[:log.index(preqs[rd_from])] if f[14] == MessageType.PRES]
    last = {f[16]: f[17] for f in pres_before}
    assert last == {1: NmtState.OPERATIONAL, 2: NmtState.OPERATIONAL, 3: NmtState.OPERATIONAL}


def test_exchange_before_boot_is_refused(bench):
    bus = open_bus(bench)
    with pytest.raises(BusStateError, match="call boot"):
        bus.exchange()


def test_boot_timeout_names_the_missing_node(bench):
    bus = open_bus(bench)
    bus.faults.disconnect_node(3)
    with pytest.raises(BootTimeoutError, match=r"after 0\.5 s in MN state PRE_OPERATIONAL_1: node 3 never answered an IdentRequest$"):
        bus.boot()
    assert bus.mn.bus_cycle == 1250                      # 0.5 s of 400 µs cycles


def test_cn_table_ignores_illegal_events():
    assert cn_next_state(NmtState.PRE_OPERATIONAL_1, NmtCommand.START_NODE) == NmtState.PRE_OPERATIONAL_1
    assert cn_next_state(NmtState.OPERATIONAL, NmtEvent.DLL_ERROR) == NmtState.PRE_OPERATIONAL_1
    assert cn_next_state(NmtState.STOPPED, NmtCommand.RESET_NODE) == NmtState.NOT_ACTIVE


def test_stop_node_faults_its_axes_and_reset_brings_it_back(bus):
    bus.stop_node(2)
    cycle(bus, 2)
    assert bus.network.nodes[2].nmt == NmtState.STOPPED
    for name in ("knee", "hip"):
        assert bus.axis(name).state == State.FAULT
        assert bus.axis(name).fault_code == FaultCode.COMMUNICATION
    assert bus.axis("ankle_1").state == State.OPERATION_ENABLED
    assert any(e.kind == EventKind.NODE_STOPPED and e.node_id == 2 for e in bus.events)
    bus.reset_node(2)
    cycle(bus, 6)
    assert bus.network.nodes[2].nmt == NmtState.OPERATIONAL
    assert bus.node_operational(2)
    assert bus.axis("knee").state == State.FAULT               # latched until acknowledged
    bus.axis("knee").fault_reset()
    cycle(bus, 2)
    assert bus.axis("knee").state == State.SWITCH_ON_DISABLED
    assert bus.axis("knee").fault_code == 0
    bus.axis("knee").enable()
    cycle(bus, 3)
    assert bus.axis("knee").state == State.OPERATION_ENABLED
