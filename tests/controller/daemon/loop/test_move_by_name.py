"""move_joints with joints by name: the I/O side's validation (unknown names and wrong-length
vectors refused naming them, nothing posted) and the loop's fill-in (a joint the request does not
name keeps its current reference), in lock-step on the simulated bench leg."""
from __future__ import annotations

import json

import numpy as np
import pytest

from controller.daemon.codes import Error, State
from controller.daemon.io.protocol import ErrorReply, Request, validate
from controller.daemon.shm import Cmd

from tests.controller.conftest import make_context
from tests.controller.daemon.loop_harness import Harness


@pytest.fixture
def ctx(leg_desc):
    c = make_context(leg_desc)
    c.state = State.HOLD
    return c


def req(args) -> bytes:
    return json.dumps({"id": 1, "cmd": "move_joints", "args": args}).encode()


def test_joints_by_name_leave_the_others_nan_for_the_loop(ctx):
    r = validate(req({"q": {"knee": -0.4, "hip": 0.2}, "duration": 2}), ctx)
    assert isinstance(r, Request) and r.mailbox == Cmd.MOVE_JOINTS
    np.testing.assert_array_equal(r.values, [np.nan, np.nan, -0.4, 0.2, 2.0])


@pytest.mark.parametrize("q, code, message", [
    ({"left_knee_name": -0.4}, Error.BAD_ARGS,
     "args.q.left_knee_name is not a joint of this robot (joints: ankle_lateral, ankle_sagittal, knee, hip)."),
    ({}, Error.BAD_ARGS, "args.q names no joint (joints: ankle_lateral, ankle_sagittal, knee, hip)."),
    ({"knee": 0.5}, Error.OUT_OF_RANGE, "args.q.knee = 0.5 rad is above the knee limit 0 rad."),
    ({"knee": "x"}, Error.BAD_ARGS, "args.q.knee must be a number in rad, got the string 'x'."),
    ([0.0, 0.1, -0.3], Error.BAD_ARGS, "args.q must be a list of 4 joint angles in rad (ankle_lateral, "
     "ankle_sagittal, knee, hip) or an object of some of them by name, got a list of 3."),
])
def test_bad_names_and_lengths_are_refused_naming_them(ctx, q, code, message):
    r = validate(req({"q": q}), ctx)
    assert isinstance(r, ErrorReply) and r.code == code
    assert r.message == message


def test_speed_check_counts_the_named_joints_only(ctx):
    """A joint not named does not move, whatever its angle (0.4 rad off zero in 0.25 s would peak
    at 3 rad/s): only the knee's 1 rad in 0.5 s is too fast."""
    ctx.q = np.array([0.4, 0.4, 0.0, 0.4])
    assert isinstance(validate(req({"q": {"hip": 0.45}, "duration": 0.25}), ctx), Request)
    r = validate(req({"q": {"knee": -1.0}, "duration": 0.5}), ctx)
    assert isinstance(r, ErrorReply) and "knee would peak at 3.75 rad/s" in r.message


def test_loop_keeps_the_reference_of_joints_not_named():
    h = Harness()
    try:
        assert h.command(Cmd.ENABLE)[0]
        h.run(200, until=lambda: h.state == State.HOLD)
        before = h.loop.q_ref.copy()
        assert h.command(Cmd.MOVE_JOINTS, np.nan, np.nan, before[2] - 0.2, np.nan, 0.5) == (True, Error.OK)
        h.run(400, heartbeat_every=50, until=lambda: h.state == State.HOLD)
        assert h.state == State.HOLD
        after = h.loop.q_ref
        np.testing.assert_array_equal(after[[0, 1, 3]], before[[0, 1, 3]])
        assert after[2] == pytest.approx(before[2] - 0.2, abs=1e-12)
    finally:
        h.close()
