"""The telemetry room: one record per cycle in the shared ring (layout: controller.daemon.telemetry,
RECORD_FIELDS; the writer finds each field's start by name through FIELD)."""
from __future__ import annotations

import numpy as np
from numba import njit

from stabilizer.contact import LOADS_OK
from stabilizer.feet import STATE as FEET_STATE
from stabilizer.pelvis_state import STATE as PELVIS_STATE

from controller.daemon.codes import State
from controller.daemon.shm import SharedBlock, begin_record, end_record
from controller.daemon.telemetry import FIELD, LOADS_MASK, MAX_WALLS, ST_OVERRUNS, TASKS, TILT_HELD_MASK, RecordLayout
from controller.daemon.loop.states import POWERED

_T, _CYCLE, _STATE, _FAULT = FIELD["t"], FIELD["cycle"], FIELD["state"], FIELD["fault"]
_Q, _QD, _Q_REF, _TAU = FIELD["q"], FIELD["qd"], FIELD["q_ref"], FIELD["tau"]
_COM, _MARGINS, _FORCE, _STAB_FLAGS = FIELD["com"], FIELD["margins"], FIELD["force"], FIELD["stab_flags"]
_WAKE_US, _TASK_US, _OVERRUNS, _MISSED = FIELD["wake_us"], FIELD["task_us"], FIELD["overruns"], FIELD["missed"]
_PLATFORM, _FAULT_INFO, _SUPPORT, _RIG_FERR = FIELD["platform"], FIELD["fault_info"], FIELD["support"], FIELD["rig_ferr"]
_FEET_LOAD, _CONTACT, _TILT, _BUS_FLAGS = FIELD["feet_load"], FIELD["contact"], FIELD["tilt"], FIELD["bus_flags"]
# the pelvis estimator's outputs (stabilizer.pelvis_state.OUTPUTS): (record field, state offset, size)
_PELVIS_OFFSETS = PELVIS_STATE.offsets()
_PELVIS = np.array([(FIELD[name], _PELVIS_OFFSETS[out], size) for name, out, size in
                    (("pelvis_pos", "position", 3), ("pelvis_vel", "velocity", 3), ("pelvis_rpy", "rpy", 3),
                     ("stance", "stance", 1))], np.int64)
_CAPTURE, _STRATEGY, _TIP = FIELD["capture_point"], FIELD["push_strategy"], FIELD["tip_point"]
# the feet's (stabilizer.feet.STATE): (record field, state offset, size)
_FEET_OFFSETS = FEET_STATE.offsets()
_FEET = np.array([(FIELD[name], _FEET_OFFSETS[out], 2) for name, out in (("ground_slope", "slope"), ("edge", "edge"))],
                 np.int64)


@njit(cache=True)
def write_record(rec, offs, t, cycle, state, fault, fault_info, q, qd, q_ref, tau, com, margins,
                 force, stab_flags, wake_us, marks, telemetry_us, overruns, missed, plat, support, rig_ferr,
                 feet_load, contact, tilt, pelvis, stabilizing, capture, strategy, bus_flags, feet, tip):
    """One telemetry record (``offs``: RecordLayout.offsets). The telemetry task's own time is the
    previous cycle's (this one is still being written)."""
    rec[offs[_T]] = t
    rec[offs[_CYCLE]] = cycle
    rec[offs[_STATE]] = state
    rec[offs[_FAULT]] = fault
    n = q.shape[0]
    for j in range(n):
        rec[offs[_Q] + j] = q[j]
        rec[offs[_QD] + j] = qd[j]
        rec[offs[_Q_REF] + j] = q_ref[j]
        rec[offs[_TAU] + j] = tau[j]
    for r in range(3):
        rec[offs[_COM] + r] = com[r]
        rec[offs[_FORCE] + r] = force[r]
    for w in range(MAX_WALLS):
        rec[offs[_MARGINS] + w] = margins[w] if w < margins.shape[0] else np.nan
    rec[offs[_STAB_FLAGS]] = stab_flags
    rec[offs[_WAKE_US]] = wake_us
    ntask = len(TASKS)
    for k in range(ntask - 1):
        rec[offs[_TASK_US] + k] = (marks[k + 1] - marks[k]) / 1e3
    rec[offs[_TASK_US] + ntask - 1] = telemetry_us
    rec[offs[_OVERRUNS]] = overruns
    rec[offs[_MISSED]] = missed
    rec[offs[_PLATFORM]] = plat[0]
    rec[offs[_PLATFORM] + 1] = plat[1]
    rec[offs[_FAULT_INFO]] = fault_info
    rec[offs[_SUPPORT]] = support
    for k in range(rig_ferr.shape[0]):
        rec[offs[_RIG_FERR] + k] = rig_ferr[k]
    rec[offs[_FEET_LOAD]] = feet_load[0]
    rec[offs[_FEET_LOAD] + 1] = feet_load[1]
    rec[offs[_CONTACT]] = contact
    rec[offs[_TILT]] = tilt[0]
    rec[offs[_TILT] + 1] = tilt[1]
    for k in range(_PELVIS.shape[0]):
        for i in range(_PELVIS[k, 2]):
            rec[offs[_PELVIS[k, 0]] + i] = pelvis[_PELVIS[k, 1] + i]
    rec[offs[_CAPTURE]] = capture[0] if stabilizing else np.nan
    rec[offs[_CAPTURE] + 1] = capture[1] if stabilizing else np.nan
    rec[offs[_STRATEGY]] = strategy[0] if stabilizing else np.nan
    rec[offs[_TIP]] = tip[0] if stabilizing else np.nan
    rec[offs[_TIP] + 1] = tip[1] if stabilizing else np.nan
    rec[offs[_BUS_FLAGS]] = bus_flags
    for k in range(_FEET.shape[0]):
        for i in range(_FEET[k, 2]):
            rec[offs[_FEET[k, 0]] + i] = feet[_FEET[k, 1] + i]


class Recorder:
    """Writes the cycle's record from the rooms' state (``record``) and copies the bus' health
    (drivers.health) into the shared block, allocation-free."""

    def __init__(self, block: SharedBlock, n: int, sup, io, est, platform, models, marks: np.ndarray,
                 q_ref: np.ndarray) -> None:
        self.block, self.sup, self.io, self.est, self.platform, self.models = block, sup, io, est, platform, models
        self.q_ref = q_ref                         # the commanded reference (the feet room's)
        self.marks = marks
        self.layout = RecordLayout(n)
        self.rec_offsets = self.layout.offsets
        stab = sup.stabilize
        self.margins = stab.margins if stab is not None else np.full(0, np.nan)
        self.force = stab.force if stab is not None else np.zeros(3)
        self.capture = stab.capture if stab is not None else np.full(2, np.nan)
        self.strategy = stab.strategy if stab is not None else np.full(1, np.nan)
        self.tip = stab.tip if stab is not None else np.full(2, np.nan)
        self.telemetry_us = 0.0
        self.missed = 0
        self.health = io.bus.health
        self.bus_flags = io.bus.health_views.flags

    def record(self, t: float, cycle: int, latency_ns: int) -> None:
        sup, est, io = self.sup, self.est, self.io
        rec = begin_record(self.block)
        write_record(rec, self.rec_offsets, t, float(cycle), float(sup.state), float(sup.fault_reason),
                     sup.fault_detail, io.q, io.qd, self.q_ref, sup.axes.tau, self.models.com,
                     self.margins, self.force,
                     float(sup.stab_flags
                           | (TILT_HELD_MASK if est.tilt_held else 0)
                           | (LOADS_MASK if est.loads_state != LOADS_OK else 0)),
                     latency_ns / 1e3, self.marks, self.telemetry_us,
                     self.block.stats[ST_OVERRUNS], float(self.missed), self.platform.plat, est.phase,
                     self.platform.following_error(sup.state in POWERED),
                     est.feet_load, est.contact_field, est.tilt, est.pelvis_state,
                     sup.state == State.STABILIZING, self.capture, self.strategy, self.bus_flags[0], est.feet_state,
                     self.tip)
        end_record(self.block)
        self.block.bus[:] = self.health
