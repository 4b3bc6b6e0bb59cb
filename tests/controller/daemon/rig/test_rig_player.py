"""The rig's loop side (controller.daemon.rig.player): setpoints by the inverse kinematics (Staicu 2008,
eq. 8-18), the platform measured back by forward kinematics and S V = λ' (eq. 15), its tilt as the
hinge angles (Gastebois 2017, eq. 46) and its acceleration, without allocating."""
from __future__ import annotations

import math

import numpy as np
import pytest

from controller.daemon.rig.motions import MotionError, TiltSequence, sinusoid
from controller.daemon.rig.player import RigPlayer
from models.rig.stewart import OK, OUT_OF_STROKE

from tests.numpy_allocs import CountingHandler

PERIOD, GEAR = 0.002, 2 * math.pi / 0.02


def _play(player: RigPlayer, motion, t_end: float, each=None) -> None:
    """Cycles with ideal drives: the measured motors are the last setpoints."""
    player.start(motion, 0.0)
    for k in range(1, round(t_end / PERIOD) + 1):
        t = k * PERIOD
        assert player.reference(t) == OK
        assert player.measure(player.position, player.velocity) == OK
        if each is not None:
            each(t)


def test_the_measured_platform_is_the_played_one(stewart):
    """A 0.5 Hz, 0.1 m sinusoid along y: the measured pose and twist are the reference's, and G's
    acceleration (unfiltered: the twist's difference over a period) is −A ω² sin ωt at mid-period."""
    p = RigPlayer(stewart, GEAR, PERIOD, accel_tau=0.0)
    m = sinusoid("y", 0.1, 0.5, cycles=3)
    w = math.pi
    worst = np.zeros(3)

    def check(t):
        worst[0] = max(worst[0], np.abs(p.pose - p.pose_ref).max())
        worst[1] = max(worst[1], np.abs(p.twist[:3] - p.pose_ref_d[:3]).max())
        if 2.0 < t < 4.0:                       # between the fades: a pure sinusoid
            tm = t - PERIOD / 2
            worst[2] = max(worst[2], abs(p.acc[1] + 0.1 * w * w * math.sin(w * tm)))
            assert p.support_acc[1] == p.acc[1] and p.support_acc[0] == p.acc[0]
    _play(p, m, 6.0, check)
    assert worst[0] < 1e-9 and worst[1] < 1e-9 and worst[2] < 1e-5
    assert p.motion is None                      # over after 6 s
    _play(p, sinusoid("x", 0.01, 1.0, cycles=2), 0.1)
    assert p.motion is not None


def test_the_measured_tilt_is_the_hinge_tilt(stewart):
    p = RigPlayer(stewart, GEAR, PERIOD)
    seen = []
    _play(p, TiltSequence([(0.17, 0.35, 2.0), (0.0, 0.0, 2.0)]), 2.0, lambda t: seen.append(p.tilt.copy()))
    assert np.allclose(seen[-1], (0.17, 0.35), atol=1e-9)
    assert np.allclose(seen[round(1.0 / PERIOD) - 1], (0.17 * 0.5, 0.35 * 0.5), atol=1e-9)   # the quintic's midpoint


def test_lengths_beyond_the_stroke_keep_the_last_pose(stewart):
    p = RigPlayer(stewart, GEAR, PERIOD)
    before = p.pose.copy()
    bad = p.position.copy()
    bad[2] = GEAR * 0.9
    assert p.measure(bad, np.zeros(6)) == OUT_OF_STROKE
    assert np.array_equal(p.pose, before)


def test_one_motion_at_a_time(stewart):
    p = RigPlayer(stewart, GEAR, PERIOD)
    p.start(sinusoid("x", 0.01, 1.0), 0.0)
    with pytest.raises(MotionError, match="still playing"):
        p.start(sinusoid("y", 0.01, 1.0), 0.0)


def test_a_cycle_allocates_no_array(stewart):
    p = RigPlayer(stewart, GEAR, PERIOD)
    p.start(sinusoid("x", 0.05, 1.0), 0.0)
    p.reference(PERIOD)
    p.measure(p.position, p.velocity)
    with CountingHandler() as counter:
        for k in range(2, 200):
            p.reference(k * PERIOD)
            p.measure(p.position, p.velocity)
    assert counter.count == 0
