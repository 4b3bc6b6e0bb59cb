"""STABILIZING for a tree robot: the whole-robot stabilizer (:mod:`stabilizer.whole_body`, several CoGs
under coherent fields, docs/multi_cog.md) as the reference, one step a cycle from the measured q, the
platform's tilt or the pelvis IMU's specific force (the stabilizer YAML's ``tilt.source``) and the
support phase the ``stabilizer`` command named or the feet's load cells (``support.source``), both
over the bus (drivers.config.SENSORS). Its statuses and flags take
the shared path of :class:`.stabilize.StabilizerReference` with the reactions of the library's
FLAG_REACTIONS: every flag rising is an event, a "hold" flag holds the reference like a failed step."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit

from models.common.support import DOUBLE
from stabilizer.ground import TILT_IMU, TILT_PLATFORM
from stabilizer.pelvis_state import STATE as PELVIS_STATE
from stabilizer.push_recovery import R_ROOT, U_OBSERVER_RATE, V_GYRO, V_ON, V_R, V_RATE, V_VEL
from stabilizer.whole_body import (B_ADM_D, B_ADM_M, B_ADM_VMAX, B_AK, B_WR, CONTACT_SENSORS, FLAG_NAMES,
                                   FLAG_REACTIONS, O_NHULL, O_SUPPORT, P_COG, P_CONTACT, P_DOUBLE_STANCE, P_POST_K,
                                   P_PUSH, P_TILT_SOURCE, P_USE_ACC, STATUS_NAMES, WholeBodyStabilizer, reset,
                                   state_layout, step)

from controller.daemon.codes import Event, StabParam, pack_point
from controller.daemon.telemetry import MAX_WALLS, stab_bit_map
from controller.daemon.loop.references.stabilize import StabilizerReference


BITS = stab_bit_map(FLAG_NAMES, STATUS_NAMES)
HOLD_MASK = int(np.bitwise_or.reduce([1 << int(BITS[k]) for k, f in enumerate(FLAG_NAMES) if FLAG_REACTIONS[f] == "hold"]))


@njit(cache=True)
def copy_margins(margins, n, out):
    """The first ``n`` wall margins into ``out``, NaN after them (the telemetry's walls)."""
    for w in range(out.shape[0]):
        out[w] = margins[w] if w < n else np.nan


_STARTED, _VELOCITY, _ROTATION, _GYRO, _RATE = (PELVIS_STATE.offset(k) for k in ("started", "velocity", "R", "gyro",
                                                                                   "rate"))


@njit(cache=True)
def pelvis_input(state, out):
    """The pelvis estimate's velocity, rotation and gyro rate (a :mod:`stabilizer.pelvis_state` buffer, empty
    when none is estimated) into the capture point's input ``out`` (stabilizer.push_recovery.PELVIS),
    off before the estimate is anchored or while it is not finite."""
    on = state.shape[0] > 0 and state[_STARTED] > 0.0
    for i in range(3):
        if on and not np.isfinite(state[_VELOCITY + i]):
            on = False
    out[V_ON] = 1.0 if on else 0.0
    for i in range(3):
        out[V_VEL + i] = state[_VELOCITY + i] if on else 0.0
    for i in range(9):
        out[V_R + i] = state[_ROTATION + i] if on else 0.0
    out[V_GYRO] = state[_GYRO] if on else 0.0               # and its gyro's rate (push_recovery eq. P2')
    for i in range(3):
        out[V_RATE + i] = state[_RATE + i] if on else 0.0


class StabilizeWholeBody(StabilizerReference):
    """:func:`stabilizer.whole_body.step` on the loop's measured ``q``, ``tilt`` (platform alpha, beta, or
    the pelvis IMU's specific force) and ``acc``, in the support phase ``support`` (models.common.support
    LEFT, RIGHT, DOUBLE) set by :meth:`start`, or the one the feet's ``loads`` (left cells, then right)
    show, with the measured joint velocities ``qd`` and the pelvis estimate ``pelvis`` (the push
    strategies' capture point; set by the estimation when it estimates it); it owns a copy of the
    params (the command's run-time parameters), read-only as the stabilizer's own (writable only
    while :meth:`set_params` writes it): every kernel takes the one array type the I/O process's
    start-posture check compiles too, not a writable twin. An input its
    sources do not use is not copied (a sensor the bus declares but a plant does not measure reads NaN,
    which the step would reject)."""

    bits = BITS
    event_mask = int(np.bitwise_or.reduce(1 << BITS))       # a status and a flag may share a bit
    hold_mask = HOLD_MASK
    param_slots = {StabParam.SATURATION_DISTANCE: P_COG + B_WR, StabParam.ADMITTANCE_DAMPING: P_COG + B_ADM_D,
                   StabParam.ADMITTANCE_MASS: P_COG + B_ADM_M, StabParam.MAX_SPEED: P_COG + B_ADM_VMAX,
                   StabParam.POSTURE_GAIN: P_POST_K, StabParam.ATTRACTOR_GAIN: P_COG + B_AK}

    def __init__(self, stab: WholeBodyStabilizer, q: np.ndarray, tilt: np.ndarray, acc: np.ndarray,
                 failure_cycles: int, event: Callable[..., None], loads: np.ndarray, qd: np.ndarray) -> None:
        params = stab.params.copy()
        params.flags.writeable = False
        super().__init__(params, failure_cycles, event)
        self.stab, self.q, self.tilt, self.acc, self.loads, self.qd = stab, q, tilt, acc, loads, qd
        self.capture, self.strategy, self.tip = stab.capture_point, stab.strategy, stab.tip_point
        self.sensed = self.params[P_CONTACT] == CONTACT_SENSORS
        # the loads feed the sensed support and the capture point's observer (stabilizer.push_recovery eq. P3)
        self.reads_loads = self.sensed or self.params[P_PUSH + U_OBSERVER_RATE] > 0.0
        self.out_q_ref, self.out_qd_ref, self.out_flags = stab.q_ref, stab.qd_ref, stab.flags
        self.margins, self.force = np.full(MAX_WALLS, np.nan), stab.total_force
        self.tilt_source = TILT_IMU if self.params[P_TILT_SOURCE] == TILT_IMU else TILT_PLATFORM
        self.use_acc = bool(self.params[P_USE_ACC])
        self.n = stab.n
        self.support = self.commanded = float(DOUBLE)   # the support in use; the command's
        self.double_stance = int(self.params[P_DOUBLE_STANCE])
        self.step_foot = stab.recovery_step[0:1]  # the recovery step planned this cycle (NaN: none)
        self.stepping = False
        self.recovery = state_layout(self.params, stab.state)[0].recovery   # the recovery step's state (a view)
        self.pelvis = np.zeros(0)           # the pelvis' state in the world (stabilizer.pelvis_state), set by
                                            # the estimation when it estimates it

    def stance(self) -> int:
        """The sole that roots the virtual robot in this support (LEFT or RIGHT): in double support after a
        recovery step the one that stayed down (stabilizer.push_recovery's root), as the stabilizer roots it."""
        if self.support != DOUBLE:
            return int(self.support)
        root = self.recovery[R_ROOT]
        return int(root) - 1 if root > 0.0 else self.double_stance

    def start(self, q_from: np.ndarray, support: float = DOUBLE) -> None:
        """From ``q_from`` in the commanded ``support`` (the one in use until the feet's loads show theirs)."""
        s = self.stab
        self.support = self.commanded = support
        self.stepping = False
        reset(self.params, s.state, q_from, s.out)
        self.flags = self.failed = 0

    def _step(self) -> int:
        s = self.stab
        s.in_q[:] = self.q
        s.in_support[0] = self.commanded
        s.in_tilt[:] = self.tilt
        s.in_acc[:] = self.acc
        s.in_qd[:] = self.qd
        pelvis_input(self.pelvis, s.in_pelvis)
        if self.reads_loads:
            s.in_loads[:] = self.loads
        status = step(s.mbuf, s.dbuf, self.params, s.state, s.inputs, s.out)
        if status == 0:                     # the feet's, or the command's but a recovery step's stance sole
            self.support = s.out[O_SUPPORT]
        planned = status == 0 and self.step_foot[0] == self.step_foot[0]      # finite: a step swings
        if planned and not self.stepping:
            r = s.recovery_step
            self.event(Event.RECOVERY_STEP, r[0], pack_point(r[1], r[2]))
        self.stepping = planned
        copy_margins(s.margins, int(s.out[O_NHULL]) if status == 0 else 0, self.margins)
        return status
