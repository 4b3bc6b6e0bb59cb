"""STABILIZING: the electrostatic-field stabilizer (Gastebois 2017, §2.5) as the reference, one step a
cycle from the measured q and tilt. :class:`StabilizerReference` holds what every stabilizer shares in
the loop (its status and flags into the telemetry's stab_flags, events, the hold reaction, the failure
count); :class:`Stabilize` runs the bench leg's, :mod:`.stabilize_whole_body` the whole robot's."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit

from stabilizer.ground import TILT_PLATFORM
from stabilizer.stabilizer import FLAG_NAMES, P_ADM_D, P_ADM_M, P_ADM_VMAX, P_AK, P_POST_K, P_SOURCE, P_USE_ACC, \
    P_WR, STATUS_NAMES, Stabilizer
from stabilizer.stabilizer import OK as STAB_OK
from stabilizer.stabilizer import reset as stab_reset
from stabilizer.stabilizer import step as stab_step
from stabilizer.tilt_observer import ObserverSettings

from controller.daemon.codes import Event, Reason, StabParam
from controller.daemon.telemetry import STAB_EVENT_MASK, stab_bit_map
from controller.daemon.loop.states import Outcome


@njit(cache=True)
def flag_mask(flags, status, bits):
    """The telemetry's stab_flags (bit order: controller.daemon.telemetry.STAB_FLAGS): bit ``bits[k]`` for
    each raised flag k, ``bits[nflags + status - 1]`` for a non-OK status (stab_bit_map)."""
    mask = 0
    nf = flags.shape[0]
    for k in range(nf):
        if flags[k] != 0.0:
            mask |= 1 << bits[k]
    if status != STAB_OK:
        mask |= 1 << bits[nf + status - 1]
    return mask


class StabilizerReference:
    """One stabilizer step a cycle (``_step``, a subclass', returning its kernel's status; 0 is OK;
    its results in ``out_q_ref``, ``out_qd_ref``, ``out_flags``). A non-OK status, or a raised flag of
    ``hold_mask`` (its library's "hold" reaction), holds the last reference at rest; the onset of a
    status and the rise of a flag of ``event_mask`` are STABILIZER events (``event``: the loop's);
    ``failure_cycles`` held cycles in a row end it (STABILIZER_FAILED, after a warning event).
    ``margins`` (walls) and ``force`` feed the telemetry; ``tilt_source``, ``use_acc`` and
    ``observer`` say which tilt the loop measures for it."""

    bits: np.ndarray
    event_mask: int
    hold_mask: int = 0
    out_q_ref: np.ndarray
    out_qd_ref: np.ndarray
    out_flags: np.ndarray
    margins: np.ndarray
    force: np.ndarray
    tilt_source: int = TILT_PLATFORM
    use_acc: bool = False
    observer: ObserverSettings = ObserverSettings()
    param_slots: dict[int, int] = {}
    capture: np.ndarray = np.full(2, np.nan)     # the capture point (e1, e2) and the push strategy, where
    strategy: np.ndarray = np.full(1, np.nan)    # the stabilizer has them (stabilizer.push_recovery), and the
    tip: np.ndarray = np.full(2, np.nan)         # one with the pelvis gyro (eq. P2')

    def __init__(self, params: np.ndarray, failure_cycles: int, event: Callable[..., None]) -> None:
        self.params = params
        self.failure_cycles = failure_cycles
        self.event = event
        self.flags = 0                    # last stab_flags mask (rising bits are events)
        self.failed = 0                   # consecutive held cycles

    def _step(self) -> int:
        raise NotImplementedError

    def set_params(self, a: np.ndarray, nargs: int) -> None:
        """(StabParam, value) pairs after ``enable``; validated on the I/O side. A read-only parameter array
        stays read-only to its kernels (its array type is the one compiled before the first cycle): it is
        writable only while it is written."""
        writeable = self.params.flags.writeable
        self.params.flags.writeable = True
        try:
            for k in range(1, nargs - 1, 2):
                slot = self.param_slots.get(int(a[k]))
                if slot is not None:
                    self.params[slot] = a[k + 1]
        finally:
            self.params.flags.writeable = writeable

    def sample(self, t: float, q_ref: np.ndarray, qd_ref: np.ndarray, qdd_ref: np.ndarray) -> Outcome:
        status = self._step()
        mask = flag_mask(self.out_flags, status, self.bits)
        if status == STAB_OK and not mask & self.hold_mask:
            q_ref[:] = self.out_q_ref
            qd_ref[:] = self.out_qd_ref
            self.failed = 0
        else:
            qd_ref.fill(0.0)
            self.failed += 1
        qdd_ref.fill(0.0)
        rose = mask & ~self.flags & self.event_mask
        self.flags = mask
        if rose:
            self.event(Event.STABILIZER, float(status), float(rose))
        if self.failed >= self.failure_cycles:
            self.event(Event.WARNING, float(Reason.STABILIZER_FAILED), float(status))
            return Outcome.STABILIZER_FAILED
        return Outcome.RUNNING


class Stabilize(StabilizerReference):
    """The bench leg's stabilizer (:mod:`stabilizer.stabilizer`) on the loop's measured ``q``,
    ``tilt`` and ``acc``."""

    bits = stab_bit_map(FLAG_NAMES, STATUS_NAMES)
    event_mask = STAB_EVENT_MASK
    param_slots = {StabParam.SATURATION_DISTANCE: P_WR, StabParam.ADMITTANCE_DAMPING: P_ADM_D,
                   StabParam.ADMITTANCE_MASS: P_ADM_M, StabParam.MAX_SPEED: P_ADM_VMAX,
                   StabParam.POSTURE_GAIN: P_POST_K, StabParam.ATTRACTOR_GAIN: P_AK}

    def __init__(self, stab: Stabilizer, q: np.ndarray, tilt: np.ndarray, acc: np.ndarray,
                 failure_cycles: int, event: Callable[..., None]) -> None:
        super().__init__(stab.params, failure_cycles, event)
        self.stab, self.q, self.tilt, self.acc = stab, q, tilt, acc
        self.out_q_ref, self.out_qd_ref, self.out_flags = stab.q_ref, stab.qd_ref, stab.flags
        self.margins, self.force = stab.margins, stab.total_force
        self.tilt_source, self.use_acc = int(stab.params[P_SOURCE]), bool(stab.params[P_USE_ACC])
        self.observer = stab.config.tilt_observer

    def start(self, q_from: np.ndarray) -> None:
        s = self.stab
        stab_reset(s.params, s.state, q_from, s.out)
        self.flags = self.failed = 0

    def _step(self) -> int:
        s = self.stab
        s.in_q[:] = self.q
        s.in_tilt[:] = self.tilt
        s.in_acc[:] = self.acc
        return stab_step(s.params, s.state, s.inputs, s.out)
