"""Soft stop (STOPPING): from the current reference and velocity to rest in
``control.stop_duration`` s."""
from __future__ import annotations

import numpy as np
from numba import njit

from controller.daemon.codes import Reason
from controller.daemon.loop.states import Outcome


@njit(cache=True)
def decelerate(q0, v0, duration, t, out_q, out_qd, out_qdd):
    """Soft stop: quintic Hermite from (q0, v0, 0) to rest at q0 + v0 T / 2 with zero
    velocity and acceleration, in T = ``duration`` s."""
    s = min(max(t / duration, 0.0), 1.0)
    s2, s3 = s * s, s * s * s
    h1 = s - 6 * s3 + 8 * s3 * s - 3 * s3 * s2            # velocity basis
    d1 = 1 - 18 * s2 + 32 * s3 - 15 * s2 * s2
    dd1 = -36 * s + 96 * s2 - 60 * s3
    h5 = 10 * s3 - 15 * s3 * s + 6 * s3 * s2             # end-point basis
    d5 = 30 * s2 - 60 * s3 + 30 * s2 * s2
    dd5 = 60 * s - 180 * s2 + 120 * s3
    for j in range(q0.shape[0]):
        v = v0[j] * duration
        dq = 0.5 * v                                       # q1 - q0
        out_q[j] = q0[j] + v * h1 + dq * h5
        out_qd[j] = (v * d1 + dq * d5) / duration
        out_qdd[j] = (v * dd1 + dq * dd5) / (duration * duration)


class Stop:
    """:func:`decelerate` from the reference and velocity at ``start``; ``why`` is the reason
    the HOLD after it carries (STOP_DONE after a command, WATCHDOG after a silent client)."""

    def __init__(self, n: int, duration: float) -> None:
        self.q0, self.v0 = np.zeros(n), np.zeros(n)
        self.duration = duration
        self.t0 = 0.0
        self.why = Reason.STOP_DONE

    def start(self, t: float, q_from: np.ndarray, v_from: np.ndarray, why: Reason) -> None:
        self.q0[:] = q_from
        self.v0[:] = v_from
        self.why = why
        self.t0 = t

    def sample(self, t: float, q_ref: np.ndarray, qd_ref: np.ndarray, qdd_ref: np.ndarray) -> Outcome:
        dt = t - self.t0
        decelerate(self.q0, self.v0, self.duration, dt, q_ref, qd_ref, qdd_ref)
        return Outcome.STOP_DONE if dt >= self.duration else Outcome.RUNNING
