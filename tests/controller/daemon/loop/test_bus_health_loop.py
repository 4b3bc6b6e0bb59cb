"""The bus' health reaches the I/O side: each cycle's record carries the bus_flags of its write and exchange,
the shared block holds the counters ``status`` answers, and ``bipd ctl status`` prints one line per non-zero
thing (in-process lock-step loop on the simulated bus; the counts are the faults injected)."""
from __future__ import annotations

import pytest

from controller.daemon.io.messages import bus_health as describe
from controller.tools.ctl import bus_lines
from drivers.health import health_buffer

from tests.controller.daemon.loop_harness import Harness


@pytest.fixture(scope="module")
def h():
    harness = Harness()
    yield harness
    harness.close()


def _status(h: Harness) -> dict:
    cfg = h.cfg.bus
    return describe(h.block.bus, tuple(n.node_id for n in cfg.nodes), tuple(a.name for a in cfg.axes))


def test_lost_pres_show_in_the_record_of_their_cycle_and_in_status(h):
    h.run(3)
    assert h.last_record()["bus_flag_names"] == [] and bus_lines(_status(h)) == []
    h.bus.faults.drop_pres(2, count=1)
    h.run(1)
    last = h.last_record()
    assert last["bus_flag_names"] == ["pres_lost"] and last["bus_flags"] == 1
    h.run(1)
    assert h.last_record()["bus_flag_names"] == []
    h.bus.faults.drop_pres(3, count=1)
    h.run(1)
    assert _status(h)["pres_lost"] == {"2": 1, "3": 1}
    assert bus_lines(_status(h)) == ["PRes lost: node 2 1, node 3 1"]


def test_status_prints_the_last_sdo_abort_node_error_and_saturations_one_line_each():
    buf, v = health_buffer(2, 3)
    v.sdo_abort[:] = (2, 0x6041, 0, 0x0602_0000, 1)
    v.node_error[:] = (1, 0x4310, 0x9192, 1)              # a status entry: active, CiA 402
    v.saturations[2] = 7
    v.pres_late[0] = 4
    assert bus_lines(describe(buf, (1, 2), ("a", "b", "c"))) == [
        "PRes late: node 1 4", "setpoint saturations: c 7",
        "last SDO abort: node 2 write 0x6041/0: 0x06020000 object does not exist in the object dictionary",
        "last node error: node 1 0x4310 (active, CiA 402, info 1)"]
