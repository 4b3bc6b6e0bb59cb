"""Playback of the shared trajectory buffer (a file resampled to the period by the I/O side),
one sample per cycle."""
from __future__ import annotations

import numpy as np
from numba import njit

from controller.daemon.codes import Error
from controller.daemon.loop.states import Outcome


@njit(cache=True)
def playback_sample(traj, k, last, dt, q, qd, qdd):
    """Sample k of the trajectory buffer and its central-difference velocity and acceleration
    (zero at the ends, where the playback starts from and comes back to rest). The acceleration
    feeds the drives' torque feed-forward (A q̈ and the rotors' J_pᵀ J_m J_p q̈): without it the
    drives' speed loop alone carries the gait's inertial torque, as following error."""
    inner = 0 < k < last
    for j in range(q.shape[0]):
        q[j] = traj[k, j]
        qd[j] = (traj[k + 1, j] - traj[k - 1, j]) / (2.0 * dt) if inner else 0.0
        qdd[j] = (traj[k + 1, j] - 2.0 * traj[k, j] + traj[k - 1, j]) / (dt * dt) if inner else 0.0


@njit(cache=True)
def first_stance(support, length):
    """The first single-support phase (0 left, 1 right) of ``support[:length]``, -1 if none."""
    for k in range(length):
        if support[k] == 0.0 or support[k] == 1.0:
            return int(support[k])
    return -1


@njit(cache=True)
def right_shares(support, length, out):
    """The share of the robot's load on the right sole at each sample of ``support[:length]``
    (models.common.support: 0 left, 1 right, 2 double support; anything else: no phase, NaN): 0 on the
    left foot, 1 on the right, and in double support a ramp from the foot before to the foot after,
    reaching it on the last double-support sample. The plan moves its ZMP linearly from one sole's
    centre to the other's over the double support, so the ramp is the ZMP's position between the
    feet, the force distribution ratio of Kajita et al. 2010 (docs/equations.md, double support).
    A double support with no single support before (after) it starts (ends) at ½: standing on
    both feet. Allocation-free."""
    k = 0
    while k < length:
        ph = support[k]
        if ph == 0.0 or ph == 1.0:
            out[k] = ph
            k += 1
            continue
        if ph != 2.0:
            out[k] = np.nan
            k += 1
            continue
        a = k
        while k < length and support[k] == 2.0:
            k += 1
        before = support[a - 1] if a > 0 else -1.0
        after = support[k] if k < length else -1.0
        s0 = before if before == 0.0 or before == 1.0 else 0.5
        s1 = after if after == 0.0 or after == 1.0 else 0.5
        for i in range(a, k):
            out[i] = s0 + (s1 - s0) * (i - a + 1) / (k - a)


class Playback:
    """Sample k = (t - t0) / period of ``traj[:length]``, then the last one; the loop reaches
    the first sample with a :class:`~controller.daemon.loop.references.move.Move` before it starts.
    ``phase`` is the support phase of the last sample (``support[k]``, -1: none), ``share`` the
    load share of the right sole there (:func:`right_shares`, NaN: no phase); ``phased``: every sample
    of the loaded file has one."""

    def __init__(self, traj: np.ndarray, period: float, support: np.ndarray) -> None:
        self.traj, self.period, self.support = traj, period, support
        self.length = 0
        self.t0 = 0.0
        self.phase = -1.0
        self.shares = np.full(support.shape[0], np.nan)
        self.share = np.nan
        self.phased = False             # every sample of the loaded file has a support phase

    def load(self, length: int) -> Error:
        """Take the buffer's first ``length`` samples: BAD_ARGS unless 1 <= length <= its
        capacity, NOT_FINITE if one of them is not finite, else OK."""
        self.length = length
        if not 1 <= length <= self.traj.shape[0]:
            return Error.BAD_ARGS
        if not np.isfinite(self.traj[:length]).all():
            return Error.NOT_FINITE
        right_shares(self.support, length, self.shares)
        self.phased = bool(np.isfinite(self.shares[:length]).all())
        return Error.OK

    def start(self, t: float) -> None:
        self.t0 = t

    def sample(self, t: float, q_ref: np.ndarray, qd_ref: np.ndarray, qdd_ref: np.ndarray) -> Outcome:
        last = self.length - 1
        # t - t0 is a whole number of cycles: rounded, not truncated, so that the clock's float
        # error (k·period·1e-9 in lock-step, the release jitter in real time) can neither repeat a
        # sample nor skip one (the drives would see a period without motion, then a double step).
        k = min(int(round((t - self.t0) / self.period)), last)
        playback_sample(self.traj, k, last, self.period, q_ref, qd_ref, qdd_ref)
        self.phase = self.support[k]
        self.share = self.shares[k]
        return Outcome.TRAJECTORY_DONE if k >= last else Outcome.RUNNING
