"""The thesis squat (Gastebois 2017, §2.6.1): down to the excursion's bottom and back up, from the posture it
starts at."""
from __future__ import annotations

import numpy as np

from controller.daemon.loop.states import Outcome
from controller.daemon.trajectories import SQUAT_DURATION_S, squat_bottom, squat_sample


class Squat:
    """``step`` is the excursion (trajectories.squat_excursion); the bottom must stay within
    [lo, hi], the soft position limits."""

    def __init__(self, step: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        self.step, self.lo, self.hi = step, lo, hi
        self.q_stand, self.q_bottom = np.zeros(step.size), np.zeros(step.size)
        self.t0 = 0.0

    def start(self, t: float, q_from: np.ndarray) -> int:
        """Plan from ``q_from``; returns the first joint whose bottom leaves the soft limits
        (nothing planned), -1 when the squat can start."""
        bad = squat_bottom(q_from, self.step, self.lo, self.hi, self.q_bottom)
        if bad >= 0:
            return bad
        self.q_stand[:] = q_from
        self.t0 = t
        return -1

    def sample(self, t: float, q_ref: np.ndarray, qd_ref: np.ndarray, qdd_ref: np.ndarray) -> Outcome:
        dt = t - self.t0
        squat_sample(dt, self.q_stand, self.q_bottom, q_ref, qd_ref, qdd_ref)
        return Outcome.TRAJECTORY_DONE if dt >= 2.0 * SQUAT_DURATION_S else Outcome.RUNNING
