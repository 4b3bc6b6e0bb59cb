"""STABILIZING: the electrostatic-field stabilizer (Gastebois 2017, §2.5) as the reference, one step a
cycle from the measured q and tilt."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit

from stabilizer.stabilizer import OK as STAB_OK
from stabilizer.stabilizer import Stabilizer
from stabilizer.stabilizer import reset as stab_reset
from stabilizer.stabilizer import step as stab_step

from ...codes import Event, Reason
from ...telemetry import STAB_EVENT_MASK, STAB_STATUS_BIT0
from ..states import Outcome


@njit(cache=True)
def stab_flag_mask(flags, status):
    """The telemetry's stab_flags (bit order: controller.telemetry.STAB_FLAGS): the
    stabilizer's raised flags, then the bit of a non-OK status."""
    mask = 0
    for k in range(flags.shape[0]):
        if flags[k] != 0.0:
            mask |= 1 << k
    if status != STAB_OK:
        mask |= 1 << (STAB_STATUS_BIT0 + status - 1)
    return mask


class Stabilize:
    """One stabilizer step a cycle on the loop's measured ``q``, ``tilt`` and ``acc``. A non-OK
    status holds the last reference at rest; its onset and the rise of an important flag are
    events (``event``: the loop's); ``failure_cycles`` of them in a row end it
    (STABILIZER_FAILED, after a warning event)."""

    def __init__(self, stab: Stabilizer, q: np.ndarray, tilt: np.ndarray, acc: np.ndarray,
                 failure_cycles: int, event: Callable[..., None]) -> None:
        self.stab, self.q, self.tilt, self.acc = stab, q, tilt, acc
        self.failure_cycles = failure_cycles
        self.event = event
        self.flags = 0                    # last stab_flags mask (rising bits are events)
        self.failed = 0                   # consecutive non-OK stabilizer cycles

    def start(self, q_from: np.ndarray) -> None:
        s = self.stab
        stab_reset(s.params, s.state, q_from, s.out)
        self.flags = self.failed = 0

    def sample(self, t: float, q_ref: np.ndarray, qd_ref: np.ndarray, qdd_ref: np.ndarray) -> Outcome:
        s = self.stab
        s.in_q[:] = self.q
        s.in_tilt[:] = self.tilt
        s.in_acc[:] = self.acc
        status = stab_step(s.params, s.state, s.inputs, s.out)
        if status == STAB_OK:
            q_ref[:] = s.q_ref
            qd_ref[:] = s.qd_ref
            self.failed = 0
        else:
            qd_ref.fill(0.0)
            self.failed += 1
        qdd_ref.fill(0.0)
        mask = stab_flag_mask(s.flags, status)
        rose = mask & ~self.flags & STAB_EVENT_MASK
        self.flags = mask
        if rose:
            self.event(Event.STABILIZER, float(status), float(rose))
        if self.failed >= self.failure_cycles:
            self.event(Event.WARNING, float(Reason.STABILIZER_FAILED), float(status))
            return Outcome.STABILIZER_FAILED
        return Outcome.RUNNING
