"""The thesis squat (§2.6.1: ankle +16°, knee −85°, hip +70°, 7 s down by a quintic, 7 s up)
from the posture the leg stands in, and its refusal, naming the joint, where the bottom would
leave the soft limits: on the I/O side (validation, from the telemetry's q) and in the loop
(from its reference, the final authority)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from controller.daemon.codes import Error, State
from controller.daemon.io.protocol import ErrorReply, validate
from controller.daemon.trajectories import SQUAT_DURATION_S
from controller.daemon.shm import Cmd, take_replies

from tests.controller.conftest import make_context
from tests.controller.loop_harness import Harness

EXCURSION_DEG = np.array([0.0, 16.0, -85.0, 70.0])        # ankle_lateral, ankle_sagittal, knee, hip
STARTS = [(0.0, 0.0, -0.1, 0.0), (0.1, -0.2, -0.15, 0.2)]
TOO_DEEP = (0.0, 0.25, -0.5, 0.25)                        # the HIL stance: the knee would reach -1.98 rad


def squat_request(ctx, q) -> object:
    ctx.q = np.array(q, dtype=float)
    return validate(json.dumps({"id": 1, "cmd": "run", "args": {"trajectory": "squat"}}).encode(), ctx)


@pytest.fixture
def ctx(leg_desc):
    c = make_context(leg_desc, soft_limit_margin=0.02)
    c.state = State.HOLD
    return c


@pytest.mark.parametrize("q", STARTS)
def test_validation_accepts_the_squat_where_it_fits(ctx, q):
    assert squat_request(ctx, q).mailbox == Cmd.RUN_SQUAT


def test_validation_refuses_a_squat_that_crosses_a_limit_naming_the_joint(ctx):
    r = squat_request(ctx, TOO_DEEP)
    assert isinstance(r, ErrorReply) and r.code == Error.OUT_OF_RANGE
    assert r.message == ("the squat moves knee by -85 deg: from -0.500 rad it would reach -1.984 rad, "
                         "below its limit -1.680 rad.")
    r = squat_request(ctx, (0.0, 0.0, -0.1, 0.3))             # hip 0.3 + 1.222 > 1.48
    assert isinstance(r, ErrorReply) and "hip" in r.message and "above its limit 1.480 rad" in r.message


@pytest.fixture(scope="module")
def h():
    harness = Harness()
    ok, _ = harness.command(Cmd.ENABLE)
    assert ok
    harness.run(100, until=lambda: harness.state == State.HOLD)
    yield harness
    harness.close()


def move_to(h: Harness, q) -> None:
    assert h.command(Cmd.MOVE_JOINTS, *q, 1.0)[0]
    h.run(1000, heartbeat_every=50, until=lambda: h.state == State.HOLD)
    h.run(100)
    assert h.state == State.HOLD


@pytest.mark.parametrize("start", STARTS)
def test_the_loop_squats_the_thesis_ranges_from_where_it_stands(h, start):
    move_to(h, start)
    q_stand = h.loop.q_ref.copy()
    assert h.command(Cmd.RUN_SQUAT)[0]
    down = round(SQUAT_DURATION_S / h.loop.period) - 1          # the command cycle is t = 0
    lowest = np.full(4, np.inf)
    for k in range(down):
        h.run(1, heartbeat_every=1) if k % 50 == 0 else h.run(1)
        lowest = np.minimum(lowest, np.sign(EXCURSION_DEG) * (h.loop.q_ref - q_stand))
    np.testing.assert_allclose(np.degrees(h.loop.q_ref - q_stand), EXCURSION_DEG, atol=1e-9)
    np.testing.assert_allclose(np.degrees(h.loop.q - q_stand), EXCURSION_DEG, atol=0.2)   # tracked
    assert lowest.min() >= -1e-12                             # monotonic: never the wrong way
    take_replies(h.block)                                     # the heartbeats' acknowledgements
    assert h.command(Cmd.STOP)[0]
    h.run(2000, heartbeat_every=50, until=lambda: h.state == State.HOLD)


def test_the_loop_refuses_a_squat_that_crosses_a_limit(h):
    move_to(h, TOO_DEEP)
    q = h.loop.q_ref.copy()
    assert h.command(Cmd.RUN_SQUAT) == (False, Error.OUT_OF_RANGE)
    h.run(10)
    assert h.state == State.HOLD
    np.testing.assert_array_equal(h.loop.q_ref, q)            # nothing moved
