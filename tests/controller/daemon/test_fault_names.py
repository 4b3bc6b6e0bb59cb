"""Every fault tells the truth: the real loop in lock-step faults on an injected drive
fault, a POWERLINK loss, a NaN encoder and a hard limit; the real I/O server, asked over
ZMQ, names the reason, the code (by name and hex for CiA 402 / POWERLINK codes) and the
axis, node or joint by name."""
from __future__ import annotations

import threading

import pytest

from controller.daemon.codes import Event, Reason, State, pack_detail, pack_point, unpack_detail
from controller.tools.client import Client
from controller.daemon.io.messages import Names, event_message, fault_fields
from controller.daemon.io.protocol import Context
from controller.daemon.io.server import IoServer
from controller.daemon.shm import Cmd

from tests.controller.conftest import LOCAL
from tests.controller.daemon.loop_harness import Harness


@pytest.fixture
def h():
    harness = Harness()
    assert harness.command(Cmd.ENABLE)[0]
    harness.run(100, until=lambda: harness.state == State.HOLD)
    assert harness.state == State.HOLD
    yield harness
    harness.close()


def status_after_fault(h: Harness) -> dict:
    """Run the loop into FAULT, then ask a real I/O server for ``status`` over ZMQ."""
    h.run(50, until=lambda: h.state == State.FAULT)
    assert h.state == State.FAULT
    robot = h.loop.robot
    ctx = Context.from_description(robot.description, period=h.cfg.loop.period,
                                   bus_axes=tuple(a.name for a in h.cfg.bus.axes),
                                   bus_nodes=tuple(a.node_id for a in h.cfg.bus.axes))
    server = IoServer(h.block, ctx, LOCAL, reply_timeout=0.5)
    stop = threading.Event()
    thread = threading.Thread(target=server.serve, args=(stop,), daemon=True)
    thread.start()
    client = Client(server.command_endpoint, timeout_s=2.0, retries=1)
    try:
        for _ in range(20):                  # each request is followed by a pass over shared memory
            st = client.call("status")
            if st["fault_name"] is not None and st["faults"]:
                return st
        raise AssertionError(f"status never showed the fault: {st}")
    finally:
        client.close()
        stop.set()
        thread.join(5)
        server.close()


def test_a_status_answer_names_the_fault_the_loop_posted_before_it(h):
    """No pass over shared memory between the fault and the request (requests handled back to back):
    the answer itself reads what the loop posted, so FAULT comes with its reason and event."""
    h.bus.faults.drive_fault("knee", "over_temperature")
    h.run(50, until=lambda: h.state == State.FAULT)
    robot = h.loop.robot
    ctx = Context.from_description(robot.description, period=h.cfg.loop.period)
    server = IoServer(h.block, ctx, LOCAL, reply_timeout=0.5)
    try:
        st = server.answers.answer("status", 0, None)
    finally:
        server.close()
    assert st["state"] == "FAULT" and st["fault_name"] == "DRIVE_FAULT"
    assert st["faults"][-1]["reason"] == "DRIVE_FAULT" and st["record_cycle"] == st["cycle"]


def test_drive_fault_names_code_axis_and_node(h):
    h.bus.faults.drive_fault("knee", "over_temperature")
    st = status_after_fault(h)
    assert st["fault_name"] == "DRIVE_FAULT"
    assert st["fault_code"] == "OVER_TEMPERATURE 0x4310"
    assert (st["fault_axis"], st["fault_node"], st["fault_joint"]) == ("knee", 2, None)
    assert st["fault_detail"] == "drive fault OVER_TEMPERATURE 0x4310 on axis knee (node 2)"
    assert st["faults"][-1]["detail"] == st["fault_detail"] and st["faults"][-1]["reason"] == "DRIVE_FAULT"


def test_bus_loss_names_the_powerlink_code_and_node(h):
    h.bus.faults.drop_pres(2, count=3)
    st = status_after_fault(h)
    assert st["fault_name"] == "BUS_FAULT"
    assert st["fault_code"] == "LOSS_PRES 0x8243"
    assert st["fault_node"] == 2 and st["fault_axis"] in ("knee", "hip")
    assert "LOSS_PRES 0x8243" in st["fault_detail"] and "(node 2)" in st["fault_detail"]


def test_nan_encoder_the_drive_detects_is_its_encoder_fault(h):
    h.bus.faults.encoder_glitch("knee", "nan")
    st = status_after_fault(h)
    assert st["fault_name"] == "DRIVE_FAULT"
    assert st["fault_detail"] == "drive fault ENCODER 0x7305 on axis knee (node 2)"


def test_nan_reading_that_reaches_the_loop_is_a_transmission_fault_on_the_knee(h, monkeypatch):
    """A drive that passes a NaN position on: the transmission cannot invert it."""
    knee = h.bus.axis_names.index("knee")
    read = h.bus.read

    def nan_knee() -> None:
        read()
        h.bus.position[knee] = float("nan")
    monkeypatch.setattr(h.bus, "read", nan_knee)
    st = status_after_fault(h)
    assert st["fault_name"] == "TRANSMISSION"          # not a reason decoded from the detail number
    assert (st["fault_axis"], st["fault_node"]) == ("knee", 2)
    assert st["fault_detail"].startswith("transmission knee (q3): ")
    assert st["fault_detail"].endswith("; the reading of axis knee (node 2) is not finite")


def test_hard_limit_names_the_limit_and_the_joint(h):
    h.loop.q_ref[2] = h.loop.robot.model.qmax[2] + 0.2      # a reference far beyond the knee's stop
    st = status_after_fault(h)
    assert st["fault_name"] == "HARD_LIMIT"
    assert st["fault_detail"] == "q_ref beyond its hard limit on knee"
    assert (st["fault_joint"], st["fault_axis"]) == ("knee", None)


def test_detail_packs_code_and_index_exactly():
    for code, index in ((0x8243, 5), (0, -1), (0xFFFF, 0), (3, 14)):
        assert unpack_detail(pack_detail(code, index)) == (code, index)


def test_a_recovery_step_event_names_its_foot_and_target_to_the_tenth_of_a_millimetre():
    for x, y in ((0.23891, -0.22082), (-0.3, 0.0), (1.25, 4.9999)):
        m = event_message(5, Event.RECOVERY_STEP, 1.0, pack_point(x, y))
        assert (m["kind"], m["foot"]) == ("RECOVERY_STEP", "right")
        assert m["target"] == [pytest.approx(x, abs=5e-5), pytest.approx(y, abs=5e-5)]


def test_a_touchdown_event_names_its_foot_and_the_offset():
    assert event_message(5, Event.TOUCHDOWN, 0.0, 0.0096)["foot"] == "left"
    m = event_message(5, Event.TOUCHDOWN, 1.0, -0.012)
    assert (m["kind"], m["foot"], m["offset_m"]) == ("TOUCHDOWN", "right", -0.012)


def test_a_toe_down_event_names_its_foot_and_the_pitch_in_degrees():
    m = event_message(5, Event.TOE_DOWN, 1.0, 0.04)
    assert (m["kind"], m["foot"], m["pitch_deg"]) == ("TOE_DOWN", "right", pytest.approx(2.2918, abs=1e-4))


def test_a_side_down_event_names_its_foot_and_the_roll_in_degrees():
    m = event_message(5, Event.SIDE_DOWN, 0.0, -0.03)
    assert (m["kind"], m["foot"], m["roll_deg"]) == ("SIDE_DOWN", "left", pytest.approx(-1.7189, abs=1e-4))


def test_unknown_codes_and_reasons_stay_numbers_not_wrong_names():
    names = Names(("a", "b"), ("m1", "m2"), (1, 1))
    f = fault_fields(Reason.DRIVE_FAULT, pack_detail(0x1234, 1), names)
    assert (f["fault_code"], f["fault_axis"], f["fault_node"]) == ("0x1234", "m2", 1)
    f = fault_fields(Reason.NON_FINITE, pack_detail(2, 0), names)
    assert f["fault_detail"] == "non-finite q̇ on a"
    assert event_message(1, 2, 99.0, 7.0, names)["reason"] == 99
    assert event_message(1, 3, Reason.SOFT_LIMIT, 1.0, names)["joint"] == "b"      # warnings name the joint


def test_a_strike_event_names_its_foot_and_the_raise():
    m = event_message(5, Event.STRIKE, 1.0, 0.01)
    assert (m["kind"], m["foot"], m["raise_m"]) == ("STRIKE", "right", 0.01)
