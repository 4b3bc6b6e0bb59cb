"""DS 301 error handling on the bus: one lost PRes tolerated, two trip; late, malformed, lost SoC."""
from __future__ import annotations

import pytest

from drivers.cia402 import State
from drivers.codes import FaultCode
from drivers.events import EventKind
from drivers.powerlink.nmt import NmtState

from tests.drivers.helpers import cycle


def kinds(bus, node_id):
    """The events about ``node_id`` but its configuration's (up to date at each identification)."""
    return [e.kind for e in bus.events if e.node_id == node_id and e.kind != EventKind.CONFIGURATION]


def test_one_lost_pres_is_tolerated(bus):
    bus.faults.drop_pres(2, count=1)
    cycle(bus)
    rec = bus.mn.records[2]
    assert rec.loss.count == 8 - 4                 # +8 on the loss, -1 on each of 4 good cycles
    assert rec.loss.cumulative == 1
    cycle(bus, 2)
    assert rec.loss.count == 0
    assert kinds(bus, 2) == []
    assert all(a.state == State.OPERATION_ENABLED for a in bus.axes.values())


def test_two_consecutive_lost_pres_trip_reset_the_node_and_fault_its_axes(bus):
    bus.faults.drop_pres(2, count=2)
    cycle(bus)
    assert kinds(bus, 2)[:2] == [EventKind.THRESHOLD, EventKind.NODE_RESET]
    threshold = next(e for e in bus.events if e.kind == EventKind.THRESHOLD)
    assert threshold.code == FaultCode.LOSS_PRES == 0x8243
    for name in ("knee", "hip"):
        assert bus.axis(name).state == State.FAULT
        assert bus.axis(name).fault_code == 0x8243
    assert bus.axis("ankle_1").state == State.OPERATION_ENABLED
    history = bus.network.nodes[2].nmt_history
    booted = len(history)
    cycle(bus)                                     # the trip was found in a period sent whole: the
    assert NmtState.NOT_ACTIVE in history[booted:]     # NMTResetNode goes out in the next period
    cycle(bus, 4)                                  # the reset node boots again and rejoins
    assert bus.network.nodes[2].nmt == NmtState.OPERATIONAL
    assert EventKind.NODE_OPERATIONAL in kinds(bus, 2)
    assert bus.axis("knee").fault_code == 0x8243   # still reported until acknowledged
    bus.axis("knee").fault_reset()
    bus.axis("hip").fault_reset()
    cycle(bus, 2)
    assert bus.axis("knee").state == bus.axis("hip").state == State.SWITCH_ON_DISABLED


@pytest.mark.parametrize("delay_s, tripped", [(4.0e-5, False), (2.0e-4, True)])
def test_late_pres_counts_only_beyond_the_timeout(bus, delay_s, tripped):
    bus.faults.delay_pres(1, delay_s, count=2)
    cycle(bus)
    assert (bus.axis("ankle_1").fault_code == FaultCode.LATE_PRES) is tripped
    assert bus.mn.records[1].late.cumulative == (2 if tripped else 0)


def test_corrupted_pres_is_malformed_and_trips_on_the_second(bus):
    bus.faults.corrupt_pres(3, offset=30, count=1)
    cycle(bus)
    assert bus.mn.records[3].malformed.cumulative == 1
    assert bus.axis("platform_alpha").state == State.OPERATION_ENABLED
    bus.faults.corrupt_pres(3, offset=16, xor=0x01, count=2)
    cycle(bus)
    assert bus.axis("platform_beta").fault_code == FaultCode.INVALID_FORMAT == 0x8241


def test_lost_soc_trips_on_the_node_side(bus):
    bus.faults.drop_soc(1, count=2)
    cycle(bus)
    node = bus.network.nodes[1]
    assert NmtState.PRE_OPERATIONAL_1 in node.nmt_history[-3:]
    assert EventKind.NODE_LEFT_OPERATIONAL in kinds(bus, 1)
    for name in ("ankle_1", "ankle_2"):
        assert bus.axis(name).fault_code == FaultCode.LOSS_SOC == 0x8245
        assert bus.axis(name).state in (State.FAULT_REACTION_ACTIVE, State.FAULT)
    cycle(bus, 3)
    assert node.nmt == NmtState.OPERATIONAL


def test_a_node_stopping_on_its_own_is_caught_by_the_loss_counter(bus):
    bus.faults.stop_node(3)
    cycle(bus)
    assert bus.axis("platform_alpha").fault_code == FaultCode.LOSS_PRES
    cycle(bus, 4)
    assert bus.network.nodes[3].nmt == NmtState.OPERATIONAL


def test_disconnected_node_stays_out_until_reconnected(bus):
    bus.faults.disconnect_node(2)
    cycle(bus, 10)
    assert not bus.node_operational(2)
    assert bus.axis("knee").fault_code == FaultCode.LOSS_PRES
    bus.faults.reconnect_node(2)
    cycle(bus, 10)
    assert bus.node_operational(2)


def test_lost_preq_trips_on_the_node_side_as_openpowerlinks_cn_counts_it(bus):
    """A SoC, then the SoA without the node's PReq, in Operational: +8 on its loss of PReq counter
    (0x1C0D/2), -1 per PReq received; two in a row reach 0x1C0D/3 (bus.threshold 15, written at
    boot): NMT error (PreOp1) and E_DLL_LOSS_PREQ_TH on both axes. Threshold 0 disables the trip."""
    node = bus.network.nodes[1]
    od = node.drive.objects

    def cycle_without_preq():
        node.on_soc((0, 0))
        node.on_soa(0, 0)

    assert od.value(0x1C0D, 3) == 15
    cycle_without_preq()
    assert (od.value(0x1C0D, 1), od.value(0x1C0D, 2), node.nmt) == (1, 8, NmtState.OPERATIONAL)
    cycle(bus)                                   # a control period of cycles with its PReq: 5 x -1
    assert od.value(0x1C0D, 2) == 3
    cycle_without_preq()
    assert (od.value(0x1C0D, 2), node.nmt) == (11, NmtState.OPERATIONAL)
    cycle_without_preq()
    assert node.nmt == NmtState.PRE_OPERATIONAL_1 and od.value(0x1C0D, 1) == 3
    assert node.drive.fault_code[0] == node.drive.fault_code[1] == FaultCode.LOSS_PREQ == 0x8242
    cycle(bus, 4)
    assert node.nmt == NmtState.OPERATIONAL
    assert od.write(0x1C0D, 3, bytes(4)) == 0                   # threshold 0: counted, never tripped
    for _ in range(4):
        cycle_without_preq()
    assert node.nmt == NmtState.OPERATIONAL and od.value(0x1C0D, 1) == 7
