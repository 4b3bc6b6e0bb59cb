"""A played gait under the whole-robot stabilizer in the loop (controller.daemon.loop.references.stabilized_playback):
BIP 2000 (deploy/bip2000_platform.yaml) in lock-step on the simulated bus's inertia plant, the file written into
the shared buffers as the I/O side does. ``stabilizer enable=true`` in MOVING (during the approach or the
playback) makes the stabilizer's step the reference from the file's first sample; its corrections leave the
file's posture on a platform tilt the file does not know; the file's end leads to HOLD; nothing is allocated."""
from __future__ import annotations

import numpy as np
import pytest

from controller.daemon.codes import Error, StabParam, State
from controller.daemon.shm import H, Cmd
from models.common.support import DOUBLE

from tests.numpy_allocs import CountingHandler
from tests.controller.daemon.loop_harness import Harness, enabled_bip2000
from tests.paths import DEPLOY

CONFIG = DEPLOY / "bip2000_platform.yaml"
SAMPLES, FLEX, LEAN = 1500, 0.3, 0.06


@pytest.fixture
def h():
    """Enabled, standing flexed in HOLD (stabilized there to reach the posture: the inertia plant has no gravity)."""
    harness = enabled_bip2000(CONFIG)
    q = posture(harness, 0.0)
    assert harness.command(Cmd.MOVE_JOINTS, *q, 2.0)[0]
    harness.run(1500, heartbeat_every=10, until=lambda: harness.state == State.HOLD)
    assert harness.state == State.HOLD
    yield harness
    harness.close()


def posture(h: Harness, lean: float) -> np.ndarray:
    """Flexed legs on flat soles, both ankles +lean (the two legs alike: the soles stay where they are)."""
    names = list(h.loop.robot.model.joint_names)
    q = np.zeros(h.loop.n)
    for side in "lr":
        q[names.index(f"{side}_knee")] = 2 * FLEX
        q[names.index(f"{side}_hip_pitch")] = -FLEX
        q[names.index(f"{side}_ankle_sagittal")] = -FLEX + lean
    return q


def load_gait(h: Harness, support: float = DOUBLE) -> None:
    """A forward lean by the ankles in double support, into the shared buffers."""
    s = 0.5 - 0.5 * np.cos(np.pi * np.linspace(0.0, 1.0, SAMPLES))
    traj = np.array([posture(h, LEAN * x) for x in s])
    h.block.traj[:SAMPLES] = traj
    h.block.support[:SAMPLES] = support
    h.block.header[H.TRAJ_LEN] = SAMPLES


def play(h: Harness, beta: float = 0.0) -> np.ndarray:
    """The file under the stabilizer on the platform pitched by beta: |q_ref - file| per cycle."""
    if beta:
        assert h.command(Cmd.PLATFORM, 0.0, beta, 1.0)[0]
        h.run(600, heartbeat_every=10)
    load_gait(h)
    assert h.command(Cmd.RUN_BUFFER)[0] and h.state == State.MOVING
    assert h.command(Cmd.STABILIZER, 1.0)[0]                     # during the approach
    h.run(2000, heartbeat_every=10, until=lambda: h.loop.sup.gen is h.loop.sup.walk)
    assert h.loop.sup.gen is h.loop.sup.walk and h.state == State.MOVING
    walk, errs = h.loop.sup.walk, []
    while h.state == State.MOVING:
        h.run(1, heartbeat_every=1)
        errs.append(np.abs(h.loop.q_ref - walk.q_gait).max())     # the file's sample of the cycle
    return np.array(errs)


def test_on_the_planned_ground_the_stabilized_walk_plays_the_file_and_ends_in_hold(h):
    errs = play(h)
    assert h.state == State.HOLD
    assert errs.max() < 2e-3                                      # rad


def test_on_a_tilt_the_file_does_not_know_the_stabilizer_corrects_the_walk(h):
    errs = play(h, beta=-0.1)
    assert errs.max() > 0.01                                      # rad: the walls moved the reference
    assert h.state == State.HOLD


def test_the_stabilizer_needs_a_file_with_a_support_phase(h):
    load_gait(h, support=-1.0)
    assert h.command(Cmd.RUN_BUFFER)[0]
    assert h.command(Cmd.STABILIZER, 1.0) == (False, Error.NOT_ALLOWED)
    assert h.command(Cmd.STABILIZER, 1.0, float(StabParam.POSTURE_GAIN), 2.0) == (False, Error.NOT_ALLOWED)


@pytest.mark.slow
def test_the_stabilized_walk_allocates_nothing(h):
    load_gait(h)
    assert h.command(Cmd.RUN_BUFFER)[0] and h.command(Cmd.STABILIZER, 1.0)[0]
    h.run(2000, heartbeat_every=10, until=lambda: h.loop.sup.gen is h.loop.sup.walk)
    h.run(5, heartbeat_every=1)
    with CountingHandler() as counter:
        h.run(20, heartbeat_every=1)
    assert h.loop.sup.gen is h.loop.sup.walk and counter.count == 0


def test_a_stabilizer_asked_for_a_file_given_up_does_not_stabilize_the_next(h):
    load_gait(h)
    assert h.command(Cmd.RUN_BUFFER)[0] and h.command(Cmd.STABILIZER, 1.0)[0]
    assert h.command(Cmd.HOLD)[0] and h.state == State.HOLD
    assert h.command(Cmd.RUN_BUFFER)[0]
    h.run(2000, heartbeat_every=10, until=lambda: h.loop.sup.gen is h.loop.sup.playback)
    assert h.loop.sup.gen is h.loop.sup.playback
