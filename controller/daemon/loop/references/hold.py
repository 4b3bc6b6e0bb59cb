"""Standing still: HOLD keeps the reference it entered with; with the drives off the
reference follows the measurement."""
from __future__ import annotations

import numpy as np

from controller.daemon.loop.states import Outcome


class Hold:
    """HOLD: the reference set by ``start`` at rest, until a command leaves (the soft limits'
    clamp in the axes may still pull it inside)."""

    def start(self, q_from: np.ndarray, q_ref: np.ndarray, qd_ref: np.ndarray, qdd_ref: np.ndarray) -> None:
        q_ref[:] = q_from
        qd_ref.fill(0.0)
        qdd_ref.fill(0.0)

    def sample(self, t: float, q_ref: np.ndarray, qd_ref: np.ndarray, qdd_ref: np.ndarray) -> Outcome:
        return Outcome.RUNNING


class Follow:
    """Drives off (BOOT, DISABLED, FAULT, ESTOP): the reference is the measured q at rest, so
    that powering on starts where the leg is."""

    def __init__(self, q: np.ndarray) -> None:
        self.q = q                                    # the loop's measured joint positions

    def sample(self, t: float, q_ref: np.ndarray, qd_ref: np.ndarray, qdd_ref: np.ndarray) -> Outcome:
        q_ref[:] = self.q
        qd_ref.fill(0.0)
        qdd_ref.fill(0.0)
        return Outcome.RUNNING
