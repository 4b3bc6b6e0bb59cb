"""Pure request validation (controller/daemon/io/protocol.py): codes, messages, mailbox arguments."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from controller.daemon.codes import Error, StabParam, State
from controller.daemon.io.protocol import ALLOWED, LOCAL, ErrorReply, Request, validate
from controller.daemon.shm import Cmd
from models.rig.stewart import StewartModel

from tests.controller.conftest import make_context
from tests.paths import STEWART_RIG



@pytest.fixture
def ctx(leg_desc):
    c = make_context(leg_desc)
    c.state = State.HOLD
    return c


def req(cmd, args=None, id_=7, **extra) -> bytes:
    msg = {"id": id_, "cmd": cmd, **extra}
    if args is not None:
        msg["args"] = args
    return json.dumps(msg).encode()


def rejected(raw: bytes, ctx) -> ErrorReply:
    r = validate(raw, ctx)
    assert isinstance(r, ErrorReply), r
    assert r.message.endswith(".") and r.message.count(". ") == 0, r.message   # one sentence
    return r


def test_context_from_robot_yaml_limits(ctx):
    # deploy/robots/bip_leg.yaml: knee position [-1.70, 0.0] rad, velocity 2.5 rad/s
    assert ctx.joint_names == ("ankle_lateral", "ankle_sagittal", "knee", "hip")
    assert (ctx.qmin[2], ctx.qmax[2], ctx.vmax[2]) == (-1.70, 0.0, 2.5)
    assert ctx.platform_limit == pytest.approx(math.radians(25.0))


def test_move_joints_converts_to_mailbox_floats(ctx):
    r = validate(req("move_joints", {"q": [0.0, 0.1, -0.3, 0.2], "duration": 2}), ctx)
    assert isinstance(r, Request) and r.mailbox == Cmd.MOVE_JOINTS and r.id == 7
    np.testing.assert_array_equal(r.values, [0.0, 0.1, -0.3, 0.2, 2.0])
    r = validate(req("move_joints", {"q": [0, 0, -1, 0]}), ctx)
    assert r.values[-1] == -1.0                      # no duration: minimum time


def test_limit_message_names_joint_and_value(ctx):
    r = rejected(req("move_joints", {"q": [0, 0, 3.1, 0]}), ctx)
    assert r.code == Error.OUT_OF_RANGE and r.code_name == "out_of_range"
    assert r.message == "args.q[2] = 3.1 rad is above the knee limit 0 rad."
    qmin = ctx.qmin[0]                                # read from the robot YAML
    r = rejected(req("move_joints", {"q": [qmin - 0.05, 0, 0, 0]}), ctx)
    assert f"below the ankle_lateral limit {qmin:g} rad" in r.message


def test_duration_too_short_for_velocity_limit(ctx):
    ctx.q = np.zeros(4)
    # quintic peak speed 15/8 * 1.0 / 0.5 = 3.75 rad/s > knee 2.5 rad/s
    r = rejected(req("move_joints", {"q": [0, 0, -1.0, 0], "duration": 0.5}), ctx)
    assert r.code == Error.OUT_OF_RANGE and "knee would peak at 3.75 rad/s" in r.message
    assert isinstance(validate(req("move_joints", {"q": [0, 0, -1.0, 0], "duration": 1.0}), ctx), Request)


@pytest.mark.parametrize("raw, code, fragment", [
    (b"{not json", Error.BAD_JSON, "not valid JSON"),
    (b"\xff\xfe", Error.BAD_JSON, "UTF-8"),
    (b"[1, 2]", Error.BAD_REQUEST, "JSON object"),
    (b'{"id": 1}', Error.BAD_REQUEST, '"cmd"'),
    (b'{"id": 1, "cmd": "ping", "x": 1}', Error.BAD_REQUEST, '"x"'),
    (b'{"id": NaN, "cmd": "ping"}', Error.BAD_REQUEST, "non-finite"),
    (b'{"cmd": "fly"}', Error.UNKNOWN_COMMAND, "'fly'"),
    (b'{"cmd": "ping", "args": []}', Error.BAD_ARGS, "must be an object"),
    (b'{"cmd": "ping", "args": {"a": 1}}', Error.BAD_ARGS, "args.a is not an argument of ping"),
    (b"[" * 100000 + b"]" * 100000, Error.BAD_REQUEST, "limit"),
    (b"[" * 30000 + b"]" * 30000, Error.BAD_JSON, "nested"),
])
def test_envelope_errors(ctx, raw, code, fragment):
    r = rejected(raw, ctx)
    assert r.code == code and fragment in r.message


@pytest.mark.parametrize("cmd, args, code, fragment", [
    ("move_joints", {}, Error.BAD_ARGS, "args.q is missing"),
    ("move_joints", {"q": [0, 0, 0]}, Error.BAD_ARGS, "list of 4 joint angles"),
    ("move_joints", {"q": [0, 0, "a", 0]}, Error.BAD_ARGS, "args.q[2] must be a number"),
    ("move_joints", {"q": [0, True, 0, 0]}, Error.BAD_ARGS, "args.q[1] must be a number"),
    ("move_joints", {"q": [0, 0, float("nan"), 0]}, Error.NOT_FINITE, "args.q[2] = nan"),
    ("move_joints", {"q": [0, 0, float("-inf"), 0]}, Error.NOT_FINITE, "not a finite number"),
    ("move_joints", {"q": [0, 0, 0, 10 ** 400]}, Error.OUT_OF_RANGE, "too large"),
    ("move_joints", {"q": [0, 0, 0, 0], "duration": 0}, Error.OUT_OF_RANGE, "outside (0, 600] s"),
    ("move_joints", {"q": [0, 0, 0, 0], "speed": 1}, Error.BAD_ARGS, "args.speed is not an argument"),
    ("run", {"trajectory": ""}, Error.BAD_ARGS, '"squat" or a file path'),
    ("run", {"trajectory": 3}, Error.BAD_ARGS, '"squat" or a file path'),
    ("stabilizer", {"enable": 1}, Error.BAD_ARGS, "true or false"),
    ("stabilizer", {"enable": True, "params": {"gain": 1}}, Error.BAD_ARGS, "args.params.gain is not a stabilizer"),
    ("stabilizer", {"enable": True, "params": {"max_speed": 5.0}}, Error.OUT_OF_RANGE, "outside [0.001, 2] m/s"),
    ("stabilizer", {"enable": False, "params": {"max_speed": 0.1}}, Error.BAD_ARGS, "only accepted with enable"),
    ("stabilizer", {"enable": True, "params": [1]}, Error.BAD_ARGS, "object of stabilizer parameters"),
    ("platform", {"alpha": 0.5, "beta": 0, "duration": 7}, Error.OUT_OF_RANGE, "exceeds the platform limit"),
    ("platform", {"alpha": 0.1, "beta": 0}, Error.BAD_ARGS, "args.duration is missing"),
    ("set_gains", {"axis": "ankle", "kp": 1, "ki": 0, "kd": 0}, Error.BAD_ARGS, "motor1, motor2"),
    ("set_gains", {"axis": "motor1", "kp": -1, "ki": 0, "kd": 0}, Error.OUT_OF_RANGE, "args.kp = -1"),
    ("enable", {"now": True}, Error.BAD_ARGS, "it takes no arguments"),
])
def test_argument_errors(ctx, cmd, args, code, fragment):
    r = rejected(req(cmd, args), ctx)
    assert (r.code, r.id) == (code, 7)
    assert fragment in r.message, r.message


def test_other_commands_convert(ctx):
    r = validate(req("stabilizer", {"enable": True, "params": {"admittance_damping": 150, "max_speed": 0.3}}), ctx)
    np.testing.assert_array_equal(r.values, [1.0, StabParam.ADMITTANCE_DAMPING, 150.0, StabParam.MAX_SPEED, 0.3])
    r = validate(req("platform", {"alpha": 0.1745, "beta": -0.349, "duration": 7}), ctx)
    assert r.mailbox == Cmd.PLATFORM and list(r.values) == [0.1745, -0.349, 7.0]
    r = validate(req("set_gains", {"axis": "motor3", "kp": 900, "ki": 10, "kd": 5}), ctx)
    assert r.mailbox == Cmd.SET_GAINS and list(r.values) == [2.0, 900.0, 10.0, 5.0]
    assert validate(req("run", {"trajectory": "squat"}), ctx).mailbox == Cmd.RUN_SQUAT
    assert validate(req("run", {"trajectory": "walk.csv"}), ctx).mailbox == Cmd.RUN_BUFFER
    for cmd in LOCAL:
        assert validate(req(cmd), ctx).mailbox is None


def test_state_table_is_the_loops():
    # controller/daemon/loop/states.py: the loop refuses the same commands in the same states
    assert ALLOWED["enable"] == {State.DISABLED} and ALLOWED["reset"] == {State.FAULT, State.ESTOP}
    assert ALLOWED["move_joints"] == ALLOWED["run"] == {State.HOLD}
    assert ALLOWED["platform"] == {State.HOLD, State.STABILIZING}
    assert ALLOWED["stabilizer"] == {State.HOLD, State.STABILIZING, State.MOVING}   # MOVING: over a played gait
    assert ALLOWED["estop"] == set(State) - {State.ESTOP} and ALLOWED["shutdown"] == set(State)
    for cmd in LOCAL:
        assert ALLOWED[cmd] == set(State)


@pytest.mark.parametrize("state", list(State))
def test_state_table(ctx, state):
    ctx.state = state
    ctx.stepped = True
    ctx.rig = StewartModel.from_yaml(STEWART_RIG)
    good = {"step": {"cycles": 5}, "move_joints": {"q": [0, 0, 0, 0]}, "run": {"trajectory": "squat"}, "stabilizer": {"enable": False},
            "platform": {"alpha": 0, "beta": 0, "duration": 1}, "set_gains": {"axis": "motor1", "kp": 1, "ki": 0, "kd": 0},
            "inject_fault": {"fault": "drop_pres", "node": 1},
            "rig_motion": {"motion": "heave:amplitude=0.01,frequency=2,cycles=2"}}
    for cmd, states in ALLOWED.items():
        r = validate(req(cmd, good.get(cmd)), ctx)
        if cmd == "stabilizer" and state == State.MOVING and not ctx.whole_body:
            assert r.code == Error.NOT_SUPPORTED and "over a played gait" in r.message   # the bench leg's
        elif state in states:
            assert isinstance(r, Request), (cmd, state, r)
        else:
            assert r.code == Error.NOT_ALLOWED and f"not allowed in state {state.name}" in r.message


@pytest.mark.parametrize("args,code,text", [
    ({"fault": "meltdown", "node": 1}, Error.BAD_ARGS, "args.fault must be one of"),
    ({"fault": "drop_pres"}, Error.BAD_ARGS, "takes node"),
    ({"fault": "drop_pres", "node": 0}, Error.BAD_ARGS, "args.node must be an integer in 1..239"),
    ({"fault": "drop_pres", "node": 1, "axis": "knee"}, Error.BAD_ARGS, "takes node"),
    ({"fault": "drive_fault", "axis": "elbow", "kind": "over_temperature"}, Error.BAD_ARGS, "args.axis must be one of"),
    ({"fault": "encoder_glitch", "axis": "knee", "kind": "wobble"}, Error.BAD_ARGS, "args.kind must be one of"),
])
def test_inject_fault_arguments(ctx, args, code, text):
    r = rejected(req("inject_fault", args), ctx)
    assert r.code == code and text in r.message


def test_inject_fault_encoding_and_no_simulated_bus(ctx):
    r = validate(req("inject_fault", {"fault": "encoder_glitch", "axis": "knee", "kind": "nan"}), ctx)
    assert r.mailbox == Cmd.INJECT_FAULT and list(r.values) == [9.0, 2.0, 1.0, 0.0]
    ctx.bus_axes = ()
    assert rejected(req("inject_fault", {"fault": "drop_pres", "node": 1}), ctx).code == Error.NOT_SUPPORTED


def test_stabilizer_can_only_be_disabled_while_stabilizing(ctx):
    ctx.state = State.STABILIZING
    r = rejected(req("stabilizer", {"enable": True}), ctx)
    assert r.code == Error.NOT_ALLOWED and "only enable: false" in r.message
    assert isinstance(validate(req("stabilizer", {"enable": False}), ctx), Request)


def test_event_and_telemetry_messages_are_named():
    from controller.daemon.codes import Event, Reason
    from controller.daemon.io.messages import event_message, telemetry_message
    from controller.daemon.telemetry import RecordLayout
    # the loop's TRANSITION carries b = reason + 1000 * new state (controller/daemon/loop/loop.py _goto)
    e = event_message(12, Event.TRANSITION, State.HOLD, Reason.COMMAND + 1000.0 * State.MOVING)
    assert e == {"cycle": 12, "kind": "TRANSITION", "from_state": "HOLD", "reason": "COMMAND", "to_state": "MOVING"}
    assert event_message(3, Event.FAULT, Reason.DRIVE_FAULT, 2.0)["reason"] == "DRIVE_FAULT"
    assert event_message(3, 99, 1.0, float("nan")) == {"cycle": 3, "kind": 99, "a": 1.0, "b": None}
    layout = RecordLayout(4)
    rec = np.full(layout.size, np.nan)
    rec[layout.slices["state"]] = State.FAULT
    rec[layout.slices["fault"]] = Reason.HARD_LIMIT
    msg = telemetry_message(layout, rec)
    assert (msg["state_name"], msg["fault_name"], msg["q"]) == ("FAULT", "HARD_LIMIT", [None] * 4)
    json.dumps(msg, allow_nan=False)


def test_the_whole_body_stabilizer_takes_a_support_phase(ctx):
    """``support`` names the phase the whole-robot stabilizer stands in (models.common.support's codes)."""
    ctx.whole_body = True
    r = validate(req("stabilizer", {"enable": True, "support": "left", "params": {"max_speed": 0.3}}), ctx)
    np.testing.assert_array_equal(r.values, [1.0, StabParam.SUPPORT, 0.0, StabParam.MAX_SPEED, 0.3])
    r = validate(req("stabilizer", {"enable": True, "support": "double"}), ctx)
    np.testing.assert_array_equal(r.values, [1.0, StabParam.SUPPORT, 2.0])
    for args, fragment in (({"enable": True, "support": "middle"}, "one of left, right, double, got the string 'middle'"),
                           ({"enable": True, "support": 1}, "one of left, right, double, got 1"),
                           ({"enable": False, "support": "left"}, "only accepted with enable: true")):
        r = rejected(req("stabilizer", args), ctx)
        assert r.code == Error.BAD_ARGS and fragment in r.message, r.message


def test_the_bench_stabilizer_refuses_a_support_phase(ctx):
    r = rejected(req("stabilizer", {"enable": True, "support": "left"}), ctx)
    assert r.code == Error.BAD_ARGS and "for the whole-robot stabilizer" in r.message


@pytest.mark.parametrize("seconds, cycles", [(0.002, 1), (0.003, 2), (0.0031, 2), (2000.0, 1_000_000)])
def test_step_seconds_round_to_whole_periods(ctx, seconds, cycles):
    ctx.stepped = True
    r = validate(req("step", {"seconds": seconds}), ctx)
    assert isinstance(r, Request) and r.values.tolist() == [cycles]


@pytest.mark.parametrize("seconds", [1e308, -1e308, 0.001, 1e-300, 0, -1, 2000.01, 10 ** 400])
def test_step_seconds_outside_one_period_to_the_longest_step_are_refused(ctx, seconds):
    """1e308 s ended a stepped daemon (OverflowError); 0.001 s rounded to no step, silently."""
    ctx.stepped = True
    r = rejected(req("step", {"seconds": seconds}), ctx)
    assert r.code in (Error.OUT_OF_RANGE, Error.NOT_FINITE)
    if seconds != 10 ** 400:
        assert "is outside [0.002, 2000] s: a step runs 1 to 1000000 whole cycles of 0.002 s." in r.message
