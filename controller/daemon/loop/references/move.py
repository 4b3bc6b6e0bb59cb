"""A synchronised joint move (Lammari 2012, eq. V.1): ``move_joints``, and the approach to a
played file's first sample."""
from __future__ import annotations

import numpy as np

from controller.daemon.loop.states import Outcome
from controller.daemon.trajectories import JointMove


class Move:
    """A :class:`JointMove` sampled from its start time; ``done`` is the outcome at its end
    (TRAJECTORY_DONE for a command's move, APPROACHED before a playback)."""

    def __init__(self, kv: np.ndarray, ka: np.ndarray) -> None:
        self.move = JointMove(kv, ka)
        self.t0 = 0.0
        self.done = Outcome.TRAJECTORY_DONE

    def start(self, t: float, q0: np.ndarray, q1: np.ndarray, kind: int, duration: float,
              done: Outcome = Outcome.TRAJECTORY_DONE) -> None:
        self.move.start(q0, q1, kind, duration)
        self.t0 = t
        self.done = done

    def sample(self, t: float, q_ref: np.ndarray, qd_ref: np.ndarray, qdd_ref: np.ndarray) -> Outcome:
        dt = t - self.t0
        self.move.sample(dt, q_ref, qd_ref, qdd_ref)
        return self.done if dt >= self.move.tf else Outcome.RUNNING
