"""The loop's playback of the trajectory buffer: one sample per cycle on the loop's own clock, with
the velocity and acceleration the drives' feed-forward takes."""
from __future__ import annotations

import numpy as np

from controller.daemon.loop.references.playback import Playback, right_shares
from controller.daemon.loop.states import Outcome
from controller.daemon.loop.timing import LockstepClock

PERIOD = 0.002


def play(traj: np.ndarray, first_cycle: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every cycle's (q_ref, qd_ref, qdd_ref) of ``traj`` started at ``first_cycle`` of a lock-step clock."""
    clock = LockstepClock(PERIOD)
    playback = Playback(traj, PERIOD, np.full(len(traj), -1.0))
    assert playback.load(len(traj)) == 0
    clock.cycle = first_cycle
    playback.start(clock.now_s())
    n = traj.shape[1]
    out = [], [], []
    q, qd, qdd = np.zeros(n), np.zeros(n), np.zeros(n)
    while True:
        outcome = playback.sample(clock.now_s(), q, qd, qdd)
        for rows, v in zip(out, (q, qd, qdd)):
            rows.append(v.copy())
        if outcome != Outcome.RUNNING:
            return tuple(np.array(rows) for rows in out)
        clock.wait()


def test_every_sample_is_played_once_in_order_on_the_lockstep_clock():
    """t − t0 of the lock-step clock (cycle · period_ns · 1e-9) is a whole number of periods up to
    float error: each sample comes exactly once (a repeated one then a skipped one would give the
    drives a period without motion, then a double step)."""
    k = np.arange(3000.0)
    for first_cycle in (0, 777, 123457):
        q, _, _ = play(k[:, None], first_cycle)
        np.testing.assert_array_equal(q[:, 0], k)


def test_velocity_and_acceleration_are_the_central_differences_and_zero_at_the_ends():
    """On q = a t² + b t the central differences are exact: q̇ = 2 a t + b, q̈ = 2 a inside; the
    playback starts from and ends at rest (both zero at the first and the last sample)."""
    t = np.arange(500) * PERIOD
    a, b = np.array([0.7, -3.0]), np.array([0.1, 0.4])
    traj = a * t[:, None] ** 2 + b * t[:, None]
    q, qd, qdd = play(traj, 41)
    np.testing.assert_allclose(q, traj, rtol=0, atol=1e-15)
    np.testing.assert_allclose(qd[1:-1], 2 * a * t[1:-1, None] + b, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(qdd[1:-1], np.broadcast_to(2 * a, qdd[1:-1].shape), rtol=1e-6)
    for end in (0, -1):
        assert not qd[end].any() and not qdd[end].any()


def test_the_right_soles_share_ramps_over_each_double_support():
    """0 on the left foot, 1 on the right; in double support a ramp from the foot before to the foot
    after, reached on its last sample; ½ at the ends (standing on both feet); NaN without a phase."""
    L, R, D = 0.0, 1.0, 2.0
    support = np.array([D, D, L, L, D, D, D, D, R, D, D, L, D, D, -1.0, -1.0])
    out = np.full(support.size, 7.0)
    right_shares(support, support.size - 2, out)            # the last two samples are not the file's
    np.testing.assert_allclose(out[:14], [0.25, 0.0, 0.0, 0.0, 0.25, 0.5, 0.75, 1.0, 1.0, 0.5, 0.0, 0.0,
                                          0.25, 0.5])
    assert out[14] == 7.0 and out[15] == 7.0                # beyond the length: untouched
    right_shares(np.array([L, -1.0, D]), 3, out)
    assert out[0] == 0.0 and np.isnan(out[1]) and out[2] == 0.5
