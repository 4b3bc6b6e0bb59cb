"""The control loop: read -> models -> reference -> axes -> write, every period.

One cycle (docs/cycle.md)::

    bus.read()                 motor positions/velocities, CiA 402 states
    transmission               motor -> joint (Newton from the last q), qd = J_p^-1 qd_m
    models.update              FK, J, CoG J, A, C, G (one Numba call)
    commands, state machine    mailbox -> transitions (controller.daemon.loop.states)
    reference                  the active generator (controller.daemon.loop.references) -> q_ref,
                               qd_ref, qdd_ref; its outcome -> the next state (states.AFTER)
    safety, axes               hard limits fault, soft limits clamp, PID or CSP + G(q)
    transmission               joint -> motor setpoints (J_p, J_p^-T)
    bus.write(); exchange()    next PReq payloads; five POWERLINK cycles
    telemetry, profiler        one record in the shared ring, task times

Everything is preallocated in ``__init__``; the cycle allocates no arrays, logs
nothing, holds no lock and never touches ZMQ. A fault anywhere (drive, bus,
transmission, hard limit, non-finite value) moves to FAULT and nothing non-finite
is ever written to a drive. Commands come from the shared-memory mailbox and are
acknowledged through the replies ring; the client heartbeats that feed the motion watchdog
are a count in the shared header. In stepped lock-step (``loop.stepped``) the loop pauses at
a cycle boundary until a client's ``step`` raises the horizon, applying commands meanwhile,
so every command and heartbeat lands at an exact cycle whatever the host's speed.
"""
from __future__ import annotations

import math
import os
import time
from collections.abc import Callable

import numpy as np
from numba import njit

from drivers.cia402 import Mode
from drivers.cia402 import State as DriveState
from drivers.codes import FaultCode
from drivers.hal import Bus
from models.common.support import DOUBLE, LEFT, RIGHT, SOLES
from models.chain.robot import Robot
from models.tree.robot import TreeRobot
from models.transmission import OK as TR_OK
from models.tilt import rotation_world_foot
from models.transmission import joint_velocity, motor_bias, motor_to_joint, transmission_jacobian
from stabilizer.contact import (CELLS, CONTACT_STATE, DWELL_S, LOADS_OK, MAX_LOAD, MIN_LOAD, RELEASE_LOAD,
                                debounced_contact, foot_loads, loads_status)
from stabilizer.contact import right_share as measured_share
from stabilizer.ground import TILT_IMU, TILT_OK, TILT_PLATFORM
from stabilizer.stabilizer import Stabilizer
from stabilizer.tilt_observer import ObserverSettings, observe_tilt
from stabilizer.whole_body import P_DWELL, P_MAX_LOAD, P_MIN_LOAD, P_RELEASE_LOAD, WholeBodyStabilizer
from stabilizer.tilt_observer import new_state as new_observer

from controller.daemon.codes import (
    Error,
    Event,
    Reason,
    StabParam,
    State,
    pack_detail,
)
from controller.daemon.commands import FAULT_ACTIONS, dispatch_table
from controller.daemon.config import DaemonConfig
from controller.daemon.shm import (
    LANES,
    Cmd,
    H,
    SharedBlock,
    begin_record,
    command_done,
    end_record,
    next_command,
    post_event,
    post_reply,
    take_priority,
    withdrawn,
)
from controller.daemon.telemetry import LOADS_MASK, RIG_ACTUATORS, ST_OVERRUNS, TILT_HELD_MASK, RecordLayout
from controller.daemon.loop.axes import CSP, AxisTasks, drive_feedforward, feedforward, motor_setpoints
from controller.daemon.loop.profiler import profile_cycle
from controller.daemon.loop.safety import OK as SAFE_OK
from controller.daemon.loop.safety import MARGIN, QMAX, QMIN, Limits, Watchdog, first_nonfinite, reason
from controller.daemon.loop.robot_models import robot_models
from controller.daemon.loop.references.hold import Follow, Hold
from controller.daemon.loop.references.move import Move
from controller.daemon.loop.references.playback import Playback, first_stance, playback_sample, right_shares
from controller.daemon.loop.references.squat import Squat
from controller.daemon.loop.references.stabilize import Stabilize
from controller.daemon.loop.references.stabilize_whole_body import StabilizeWholeBody
from controller.daemon.loop.references.stop import Stop, decelerate
from controller.daemon.loop.states import AFTER, POWERED, WHILE_ENABLING, Outcome
from controller.daemon.trajectories import QUINTIC, sample_move, squat_bottom, squat_excursion, squat_sample
from controller.daemon.rig.loop_side import rig_player
from controller.daemon.rig.motions import SplineMotion
from controller.daemon.rig.spec import motion_from_args

BUS_CODES = frozenset({FaultCode.COMMUNICATION, FaultCode.LATE_PRES, FaultCode.INVALID_FORMAT,
                       FaultCode.LOSS_PRES, FaultCode.LOSS_SOC})
Handler = Callable[[np.ndarray, int, float], "tuple[bool, int] | None"]
PAUSE_S = 2e-4          # stepped lock-step: sleep between looks at the horizon (never a hot spin)
LOAD_SPLIT_FILTER_S = 0.02   # s, the first-order low-pass of the measured load split (control.load_split)


@njit(cache=True)
def gather(src, idx, dst):
    for k in range(idx.shape[0]):
        dst[k] = src[idx[k]]


@njit(cache=True)
def scatter(src, idx, dst, scale):
    for k in range(idx.shape[0]):
        dst[idx[k]] = scale * src[k]


_FAULT, _FAULT_REACTION = int(DriveState.FAULT), int(DriveState.FAULT_REACTION_ACTIVE)


@njit(cache=True)
def first_faulted(state, idx):
    """Bus index of the first axis in Fault or Fault Reaction Active, -1 if none."""
    for k in range(idx.shape[0]):
        s = state[idx[k]]
        if s == _FAULT or s == _FAULT_REACTION:
            return idx[k]
    return -1


@njit(cache=True)
def sensor_values(aux, rows, out):
    """A bus sensor's values from the auxiliary inputs of its axes ``rows`` (drivers.config.Sensor: three
    per input, in bus order) into ``out``, as many as it holds."""
    for k in range(out.shape[0]):
        out[k] = aux[rows[k // 3], k % 3]


@njit(cache=True)
def keep_nan(q, q_ref):
    """Every NaN entry of q takes q_ref's value (a joint the request did not name)."""
    for j in range(q.shape[0]):
        if np.isnan(q[j]):
            q[j] = q_ref[j]


@njit(cache=True)
def all_finite(x):
    for v in x.flat:
        if not np.isfinite(v):
            return False
    return True


@njit(cache=True)
def write_record(rec, offs, t, cycle, state, fault, fault_info, q, qd, q_ref, tau, com, margins,
                 force, stab_flags, wake_us, marks, telemetry_us, overruns, missed, plat, support, rig_ferr,
                 feet_load, contact, tilt):
    """One telemetry record (layout: controller.daemon.telemetry.RecordLayout; ``offs`` holds
    the start of each field in its order). The telemetry task's own time is the
    previous cycle's (this one is still being written)."""
    rec[offs[0]] = t
    rec[offs[1]] = cycle
    rec[offs[2]] = state
    rec[offs[3]] = fault
    n = q.shape[0]
    for j in range(n):
        rec[offs[4] + j] = q[j]
        rec[offs[5] + j] = qd[j]
        rec[offs[6] + j] = q_ref[j]
        rec[offs[7] + j] = tau[j]
    for r in range(3):
        rec[offs[8] + r] = com[r]
        rec[offs[10] + r] = force[r]
    for w in range(offs[10] - offs[9]):
        rec[offs[9] + w] = margins[w] if w < margins.shape[0] else np.nan
    rec[offs[11]] = stab_flags
    rec[offs[12]] = wake_us
    ntask = offs[14] - offs[13]
    for k in range(ntask - 1):
        rec[offs[13] + k] = (marks[k + 1] - marks[k]) / 1e3
    rec[offs[13] + ntask - 1] = telemetry_us
    rec[offs[14]] = overruns
    rec[offs[15]] = missed
    rec[offs[16]] = plat[0]
    rec[offs[16] + 1] = plat[1]
    rec[offs[17]] = fault_info
    rec[offs[18]] = support
    for k in range(rig_ferr.shape[0]):
        rec[offs[19] + k] = rig_ferr[k]
    rec[offs[20]] = feet_load[0]
    rec[offs[20] + 1] = feet_load[1]
    rec[offs[21]] = contact
    rec[offs[22]] = tilt[0]
    rec[offs[22] + 1] = tilt[1]


def stab_support(a: np.ndarray, nargs: int) -> float:
    """The support phase a STABILIZER command names ((StabParam.SUPPORT, phase) among its pairs;
    validated on the I/O side), DOUBLE when it names none."""
    for k in range(1, nargs - 1, 2):
        if int(a[k]) == StabParam.SUPPORT:
            return float(a[k + 1])
    return float(DOUBLE)


def support_roots(roots: tuple[str, ...], base: str, support: str) -> np.ndarray:
    """The root index for each support phase (models.gait.plan: left, right, double). ``hung``: the
    base (the pelvis, held by the gantry) whatever the phase; ``ground``: the stance sole (SOLES),
    and -1 for double support (keep the last stance foot)."""
    if support == "hung":
        return np.full(3, roots.index(base), np.int64)
    return np.array([roots.index(SOLES[LEFT]), roots.index(SOLES[RIGHT]), -1], np.int64)


@njit(cache=True)
def support_acceleration(alpha, beta, f, R, out):
    """Horizontal acceleration (a_y, a_z) of the support in world axes from the specific force f
    an IMU on the foot measures in R0 axes: R_M->O0 f = a + g0 x_g (thesis eq. 46, x_g up), so
    the horizontal components of R_M->O0 f are those of a. R is scratch (3 x 3)."""
    rotation_world_foot(alpha, beta, R)
    for r in range(2):
        out[r] = R[r + 1, 0] * f[0] + R[r + 1, 1] * f[1] + R[r + 1, 2] * f[2]


class ControlLoop:
    """The loop process' whole state. ``run()`` cycles until asked to stop."""

    def __init__(self, cfg: DaemonConfig, block: SharedBlock, bus: Bus, robot: Robot | TreeRobot,
                 stabilizer: Stabilizer | WholeBodyStabilizer | None, clock, parent_pid: int | None = None) -> None:
        self.cfg, self.block, self.bus, self.robot, self.stab, self.clock = cfg, block, bus, robot, stabilizer, clock
        n = self.n = robot.n
        ctl = cfg.control
        self.period = cfg.loop.period
        self.models = md = robot_models(robot)     # the chain's or the tree's update, A, h, G, CoG, root
        self.data = robot.data
        self.P = md.transmission.params
        self.leg_idx = np.array([bus.axis_names.index(a) for a in ctl.joint_axes], np.int64)
        self.plat_idx = np.array([bus.axis_names.index(a) for a in ctl.platform_axes], np.int64)
        self.all_idx = np.concatenate([self.leg_idx, self.plat_idx])
        self.ratio = ctl.platform_ratio
        self.plat_div = np.array(self.ratio)     # 0-d: a Python float divisor makes a temporary array each cycle
        self.mode = CSP if ctl.mode == "csp" else Mode.CST
        m = robot.model
        self.fv, self.fs = m.viscous, m.coulomb                 # joint friction (drive_feedforward)
        self.limits = Limits(m.qmin, m.qmax, m.vmax, m.taumax, margin=ctl.soft_limit_margin)
        self.axes = AxisTasks(n, ctl.mode, self.period, ctl.kp, ctl.ki, ctl.kd, ctl.derivative_filter,
                              kaw=10.0, umax=m.taumax)
        self.watchdog = Watchdog(ctl.watchdog)
        lim = self.limits.lim
        self.soft_lo, self.soft_hi = lim[QMIN] + lim[MARGIN], lim[QMAX] - lim[MARGIN]
        # measurements and references (joint space), motor-side buffers
        z = lambda k=n: np.zeros(k)  # noqa: E731
        self.qm, self.qmd, self.q, self.qd = z(), z(), z(), z()
        self.Jp = np.zeros((n, n))
        self.bias, self.bias_q, self.bias_b, self.Jp2 = z(), z(), z(), np.zeros((n, n))   # J̇_p q̇ (motor_bias)
        # the tilt the feed-forward's gravity follows: the stabilizer's source (platform angles or
        # foot IMU, models.tilt / stabilizer.ground), the platform angles without a stabilizer
        self.g0 = float(np.linalg.norm(md.level))
        self.tilt_in, self.acc_in, self.tilt, self.R3 = z(3), z(2), z(2), np.zeros((3, 3))
        # BIP 2000's feet load cells on the bus (drivers.config.SENSORS): left foot's cells, then right's (N)
        self.load_rows = (np.array(bus.config.sensor_axes("left_loads"), np.int64),
                          np.array(bus.config.sensor_axes("right_loads"), np.int64))
        self.has_loads = self.load_rows[0].size > 0 and self.load_rows[1].size > 0
        self.loads = z(2 * CELLS)
        self.loads_l, self.loads_r = self.loads[:CELLS], self.loads[CELLS:]
        if isinstance(stabilizer, WholeBodyStabilizer):
            self.stabilize = StabilizeWholeBody(stabilizer, self.q, self.tilt_in, self.acc_in,
                                                ctl.stabilizer_failure_cycles, self._event, self.loads)
        else:
            self.stabilize = None if stabilizer is None else Stabilize(
                stabilizer, self.q, self.tilt_in, self.acc_in, ctl.stabilizer_failure_cycles, self._event)
        st = self.stabilize
        wb = isinstance(st, StabilizeWholeBody)
        # the feet's contact: the whole-robot stabilizer's thresholds (stabilizer.contact), else their defaults
        self.min_load, self.release_load, self.max_load, self.dwell = (
            (st.params[P_MIN_LOAD], st.params[P_RELEASE_LOAD], st.params[P_MAX_LOAD], st.params[P_DWELL]) if wb
            else (MIN_LOAD, RELEASE_LOAD, MAX_LOAD, float(max(1, round(DWELL_S / self.period)))))
        self.contact_state = np.full(CONTACT_STATE, np.nan)   # stabilizer.contact.debounced_contact
        self.feet_load = np.full(2, np.nan)        # each foot's load (telemetry)
        self.contact = -1                          # the support phase the loads show (-1: none)
        self.load_share = math.nan                 # the right foot's share of the feet's load
        self.loads_state = LOADS_OK                # stabilizer.contact.loads_status of the last cycle
        self.stab_sensed = wb and st.sensed        # support.source: sensors
        # control.load_split: measured: in double support on the ground the feed-forward shares the ground
        # wrench by the feet's measured loads, low-passed (LOAD_SPLIT_FILTER_S); the plan's ramp without them
        self.measured_split = ctl.load_split == "measured" and self.has_loads
        self.split_gain = self.period / (self.period + LOAD_SPLIT_FILTER_S)
        self.share_f = math.nan                    # the filtered measured share (NaN: none)
        self.tilt_source = st.tilt_source if st is not None else TILT_PLATFORM
        self.tilt_use_acc = st.use_acc if st is not None else False
        imu = bus.config.imu_axis                  # the foot IMU on a drive's auxiliary input (config-checked)
        self.imu = bus.aux[imu] if imu is not None and (self.tilt_source == TILT_IMU or self.tilt_use_acc) else None
        sole = bus.config.sensor_axis("sole")      # the sole's load cells (config-checked with tilt.source imu)
        self.sole = bus.aux[sole] if sole is not None else None
        foot = md.foot
        self.foot_abc = (foot["a"], foot["b"], foot["c"]) if foot else (0.0, 0.0, 0.0)
        # a tree's pelvis IMU (tilt.source: imu; config-checked with the feet's loads): through the tilt
        # observer as the foot IMU, believed while the feet carry its min_load and |f| is g0 (its "sole" is
        # the feet's total load, no centre of pressure: a unit rectangle that never binds), low-passed; the
        # stabilizer and the feed-forward's gravity (TreeModels.imu_gravity) follow that specific force
        self.imu_rows = np.array(bus.config.sensor_axes("pelvis_imu"), np.int64)
        self.pelvis_imu = wb and self.tilt_source == TILT_IMU
        self.imu_frame = md.robot.model.index("frame", "pelvis") if self.pelvis_imu else -1
        if self.pelvis_imu:
            self.imu, self.sole, self.foot_abc = z(3), np.array([np.nan, 0.0, 0.0]), (1.0, 1.0, 1.0)
        self.tilt_obs = new_observer()             # the IMU's tilt, believed while the foot is flat
        obs = st.observer if st is not None else ObserverSettings()
        self.tilt_settings, self.tilt_unconfirmed_s = obs.array(), obs.unconfirmed_s
        self.tilt_unconfirmed = 0.0                # s since the observer last accepted a sample
        self.tilt_held = False                     # a valid tilt held unconfirmed for tilt_unconfirmed_s
        self.g_level = md.level
        self.tilt_ok = True
        self.q_ref, self.qd_ref, self.qdd_ref = z(), z(), z()
        self.tau_ff, self.qm_cmd, self.qmd_cmd, self.tau_m = z(), z(), z(), z()
        self.ff_scratch = z()
        self.plat, self.plat_ref, self.plat_cmd = z(2), z(2), z(2)
        self.plat_from, self.plat_to, self.plat_v, self.plat_a = z(2), z(2), z(2), z(2)
        self.plat_t, self.plat_T = 0.0, 0.0
        self.rig = rig_player(ctl.rig, self.period)   # the Stewart-Gough rig instead of the hinges (docs/rig.md)
        self.args = np.zeros(32)
        self.marks = np.zeros(7, np.int64)
        self.layout = RecordLayout(n)
        self.rec_offsets = np.array([s.start for s in self.layout.slices.values()], np.int64)
        self.no_margins = np.full(0, np.nan)
        self.no_force = np.zeros(3)
        self.no_ferr = np.full(RIG_ACTUATORS, np.nan)
        self.telemetry_us = 0.0
        self.state = State.BOOT
        # the reference generators; ``gen`` is the active one (controller.daemon.loop.references)
        self.follow, self.hold = Follow(self.q), Hold()
        self.move = Move(m.vmax * 0.5, m.vmax * 2.0)
        try:
            self.squat = Squat(squat_excursion(md.joint_names), self.soft_lo, self.soft_hi)
        except ValueError:                         # the thesis squat names the bench leg's joints
            self.squat = None                      # run squat: not_supported (as the I/O side says)
        self.playback = Playback(block.traj, self.period, block.support)
        # the model's root per support phase (left, right, double: -1 keeps the last single support)
        self.phase_root = support_roots(md.roots, md.base, ctl.support)
        self.phase = -1.0                          # support phase of the played file (-1: none)
        self.root = int(self.phase_root[LEFT])     # before any file: on the ground, the left sole
        self.model_root = self.root                # the rooting of this cycle's models
        md.set_root(self.root)
        # on the ground, the soles' rootings (left, right) that share the load in double support
        self.soles = (int(self.phase_root[LEFT]), int(self.phase_root[RIGHT])) if self.phase_root[2] < 0 else None
        # the right sole's load share (NaN: no phase, no split); before any file the robot stands on both feet
        self.right_share = 0.5 if self.soles is not None else np.nan
        self.stopping = Stop(n, ctl.stop_duration)
        self.gen = self.follow
        self.enable_deadline = 0.0
        self.enabling = False
        self.resetting = False
        self.fault_reason = 0
        self.fault_detail = 0.0
        self.soft_flags = 0
        self.overruns = 0
        self.missed = 0
        self.cycle_count = 0
        self.stepped = cfg.loop.stepped    # run only up to the horizon a client grants (H.HORIZON)
        self.heartbeats = 0                # H.HEARTBEATS last seen: valid client requests
        self.stopped = False
        self.shutdown_deadline = math.inf
        self.parent_pid = parent_pid      # the I/O process: if it dies, stop softly and leave
        self.warnings: list[str] = []
        self.commands = self._command_table()

    # ------------------------------------------------------------------ events
    def _event(self, kind: Event, a: float = 0.0, b: float = 0.0) -> None:
        post_event(self.block, self.cycle_count, int(kind), a, b)

    def _goto(self, state: State, why: Reason) -> None:
        if state == self.state:
            return
        self._event(Event.TRANSITION, float(self.state), float(why) + 1000.0 * float(state))
        self.state = state
        self.block.header[H.LOOP_STATE] = int(state)

    def _fault(self, why: Reason, code: int, index: int = -1) -> None:
        """Any state -> FAULT: drives quick-stopped, motion and watchdog cancelled. ``code``
        and ``index`` (bus axis or joint) as in controller.daemon.codes.pack_detail."""
        if self.state in (State.FAULT, State.ESTOP):
            return
        self.fault_reason = int(why)
        self.fault_detail = pack_detail(code, index)
        self._event(Event.FAULT, float(why), self.fault_detail)
        for i in self.all_idx:
            self.bus.axes[self.bus.axis_names[i]].quick_stop()
        self.enabling = False
        self.gen = self.follow
        self.watchdog.disarm()
        self._goto(State.FAULT, why)

    # ------------------------------------------------------------------ start
    def start(self) -> None:
        """Boot the network, compile everything the cycle calls, go DISABLED."""
        self.block.header[H.LOOP_STATE] = int(State.BOOT)
        self.bus.boot()
        self._measure()
        self.q_ref[:] = self.q
        self._warmup()
        self._goto(State.DISABLED, Reason.BOOTED)
        self.block.header[H.READY] = 1

    def _warmup(self) -> None:
        """Call every kernel the cycle can reach once, on scratch copies, so that all
        are compiled (or loaded from the cache) before the first cycle."""
        n, d = self.n, self.models
        q, z = self.q.copy(), np.zeros(n)
        o1, o2, o3 = np.zeros(n), np.zeros(n), np.zeros(n)
        p1, p2, p3 = np.zeros(2), np.zeros(2), np.zeros(2)
        self._cycle_compute()
        gather(self.bus.position, self.leg_idx, o1)
        scatter(z, self.leg_idx, self.bus.target_position.copy(), 1.0)
        first_faulted(self.bus.state, self.all_idx)
        decelerate(q, z, 1.0, 0.5, o1, o2, o3)
        support_acceleration(0.0, 0.0, o1, self.R3.copy(), p1)
        sensor_values(self.bus.aux, np.zeros(1, np.int64), p1)
        loads_status(self.loads, 1.0, 2.0)
        debounced_contact(self.loads, 1.0, 0.5, 1.0, self.contact_state.copy())
        foot_loads(self.loads, p1)
        measured_share(self.loads)
        if self.pelvis_imu:
            self.models.imu_gravity(self.imu_frame, self.tilt_in, self.g0, p1)
        observe_tilt(o1, o2, 0.1, 0.2, 0.1, self.g0, self.period, self.tilt_settings, new_observer(), o3)
        squat_bottom(q, z if self.squat is None else self.squat.step, self.soft_lo, self.soft_hi, o1)
        squat_sample(0.1, q, q if self.squat is None else self.squat.q_bottom, o1, o2, o3)
        self.move.start(0.0, q, q, QUINTIC, 1.0)
        self.move.sample(0.1, o1, o2, o3)
        sample_move(QUINTIC, 0.5, 1.0, p1, p2, 0.1, p3, self.plat_v.copy(), self.plat_a.copy())
        feedforward(d.A, d.h, d.G, z, True, o1)
        drive_feedforward(self.P, self.Jp, z, self.fv, self.fs, z, z, o2, o1)
        self.limits.check(q, z, q, z, o1)
        self.limits.clamp(q.copy(), z.copy(), o1)
        spare = AxisTasks(n, "cst", self.period, 1.0, 0.0, 0.0, 0.01, 0.0, 1.0)
        spare.reset(q)
        spare.step(q, z, q, z)
        self.axes.step(q, z, q, z)
        motor_setpoints(self.mode, self.P, self.Jp, q, z, z, o1, o2, o3)
        if self.stabilize is not None:
            self.stabilize.warmup()
        profile_cycle(self.block.stats.copy(), self.marks, 0, 0, False)
        all_finite(o1)
        first_nonfinite(o1)
        keep_nan(o1, q)
        playback_sample(self.block.traj, 0, 1, self.period, o1, o2, o3)
        first_stance(self.block.support, 0)
        right_shares(self.block.support, 0, self.playback.shares)
        if self.soles is not None:
            self.models.contact(self.soles[RIGHT], 0.5, z, z, o1)
        self.models.set_root(self.root)
        self._telemetry(0.0, 0)

    # ------------------------------------------------------------------ the cycle
    def _measure(self) -> int:
        b = self.bus
        gather(b.position, self.leg_idx, self.qm)
        gather(b.velocity, self.leg_idx, self.qmd)
        if self.rig is None:
            gather(b.position, self.plat_idx, self.plat)
            self.plat /= self.plat_div
        else:                                      # NaN tilt if its forward kinematics fails (TILT_INPUT)
            self.rig.measure_bus(b.position, b.velocity, b.target_position, self.plat_idx, self.plat)
        st = motor_to_joint(self.P, self.qm, self.q)        # self.q: last q as the guess
        if st != TR_OK:
            return st
        st = transmission_jacobian(self.P, self.q, self.Jp)
        if st != TR_OK:
            return st
        st = joint_velocity(self.Jp, self.qmd, self.qd)
        if st != TR_OK:
            return st
        if self.has_loads:
            sensor_values(b.aux, self.load_rows[0], self.loads_l)
            sensor_values(b.aux, self.load_rows[1], self.loads_r)
            self._feet()
        if self.pelvis_imu:                        # specific force in pelvis axes
            sensor_values(b.aux, self.imu_rows, self.imu)
            self.sole[0] = self.feet_load[0] + self.feet_load[1]
        if self.imu is not None and self.tilt_source == TILT_IMU:     # specific force in R0 (stabilizer.ground)
            a, b, c = self.foot_abc
            if observe_tilt(self.imu, self.sole, a, b, c, self.g0, self.period, self.tilt_settings, self.tilt_obs,
                            self.tilt_in):
                self.tilt_unconfirmed = 0.0
            else:
                self.tilt_unconfirmed += self.period
        else:
            self.tilt_in[0], self.tilt_in[1] = self.plat[0], self.plat[1]
            if self.rig is not None:               # use_acceleration: the rig's, by its forward kinematics
                self.acc_in[:] = self.rig.support_acc
            elif self.imu is not None:             # use_acceleration: the support's, from the IMU
                support_acceleration(self.plat[0], self.plat[1], self.imu, self.R3, self.acc_in)
        return motor_bias(self.P, self.q, self.qd, self.Jp2, self.bias_q, self.bias, self.bias_b)

    def _cycle_compute(self) -> None:
        """The models under the gravity of the measured tilt, R_M->O0ᵀ g (thesis eq. 46); an
        unusable tilt keeps the last valid gravity and posts a warning when it becomes unusable
        (detail 0), as does an IMU tilt the foot has not confirmed flat for ``tilt.unconfirmed_s`` (detail 1:
        held by the tilt observer, still used; the telemetry's ``tilt_held`` while it lasts)."""
        if self.pelvis_imu:
            ok = self.models.imu_gravity(self.imu_frame, self.tilt_in, self.g0, self.tilt)
        else:
            ok = self.models.apparent_tilt(self.tilt_source, self.tilt_use_acc, self.g0, self.tilt_in, self.acc_in,
                                           self.R3, self.tilt) == TILT_OK
            if ok:
                self.models.tilted_gravity(self.tilt[0], self.tilt[1], self.g_level, self.models.gravity)
        held = self.tilt_held = ok and self.tilt_unconfirmed >= self.tilt_unconfirmed_s   # held that long
        ok = ok and not held
        if ok != self.tilt_ok:
            self.tilt_ok = ok
            if not ok:
                self._event(Event.WARNING, float(Reason.TILT_INPUT), 1.0 if held else 0.0)
        if self.model_root != self.root:
            self.model_root = self.root
            self.models.set_root(self.root)
        self.models.update(self.q, self.qd)

    def run_cycle(self) -> None:
        clock, marks, b = self.clock, self.marks, self.bus
        h = self.block.header
        if self.stepped and self.cycle_count >= h[H.HORIZON] and not h[H.SHUTDOWN]:
            self._pause()
        latency, missed = clock.wait()
        now_ns = time.monotonic_ns
        marks[0] = now_ns()
        self.cycle_count += 1 + missed
        t = clock.now_s()
        b.read()
        status = self._measure()
        marks[1] = now_ns()
        if status != TR_OK:
            self._fault(Reason.TRANSMISSION, status, self._nonfinite_axis(self.qm))
        self._cycle_compute()
        marks[2] = now_ns()
        self._drive_faults()
        self._commands(t)
        self._reference(t)
        marks[3] = now_ns()
        self._axes()
        marks[4] = now_ns()
        b.write()
        b.exchange()
        marks[5] = now_ns()
        self._telemetry(t, latency)
        marks[6] = now_ns()
        self.telemetry_us = int(marks[6] - marks[5]) / 1e3     # an int64 / float would allocate
        overrun = clock.end_of_cycle_overrun()
        profile_cycle(self.block.stats, marks, latency, missed, overrun)
        if missed:
            self.missed += missed
            self._event(Event.OVERRUN, missed, latency / 1e3)
        self.block.header[H.LOOP_CYCLE] = self.cycle_count

    def _pause(self) -> None:
        """Stepped lock-step: wait at this cycle boundary until a client grants cycles beyond it
        (``H.HORIZON``), meanwhile applying commands at the last cycle's time and posting their
        replies, feeding the watchdog and watching for shutdown (which ends the pause for good)
        and for the I/O process' death. The horizon is read before the mailbox and the heartbeat
        counter, so whatever a client sent before it raised the horizon lands at this cycle."""
        h = self.block.header
        t = self.clock.now_s()
        while True:
            horizon = int(h[H.HORIZON])
            if self.parent_pid is not None and os.getppid() != self.parent_pid:
                h[H.SHUTDOWN] = 1
            self._commands(t, self.block.layout.mailbox_slots)
            if self.cycle_count < horizon or h[H.SHUTDOWN]:
                return
            time.sleep(PAUSE_S)

    # ------------------------------------------------------------------ faults from drivers
    def _drive_faults(self) -> None:
        if self.state not in POWERED and not self.enabling:
            return
        i = first_faulted(self.bus.state, self.all_idx)
        if i >= 0:
            code = int(self.bus.fault_code[i])
            self._fault(Reason.BUS_FAULT if code in BUS_CODES else Reason.DRIVE_FAULT, code, i)

    # ------------------------------------------------------------------ commands
    def _commands(self, t: float, limit: int = 4) -> None:
        """The priority lanes first (estop, disable: shm.LANES), then shutdown and parent checks,
        the watchdog's heartbeats, up to ``limit`` mailbox commands (one the I/O side withdrew is
        answered TIMEOUT, not applied)."""
        block = self.block
        for lane, cmd in enumerate(LANES):
            token = take_priority(block, lane)
            if token:
                ok, code = self._apply(cmd, 0, t)
                post_reply(block, token, ok, int(code), float(self.state))
        if self.parent_pid is not None and self.cycle_count % 64 == 0 and os.getppid() != self.parent_pid:
            block.header[H.SHUTDOWN] = 1                     # orphaned: nobody can command us any more
        if block.header[H.SHUTDOWN] and self.shutdown_deadline == math.inf:
            self.shutdown_deadline = t + 2.0 * self.cfg.control.stop_duration + 1.0
            self._begin_shutdown(t)
        beats = int(block.header[H.HEARTBEATS])      # the I/O side counts valid client requests
        if beats != self.heartbeats:
            self.heartbeats = beats
            self.watchdog.feed(t)
        for _ in range(limit):                       # bounded work per cycle
            slot = next_command(block)
            if slot is None:
                break
            token, cmd, nargs = slot[0], int(slot[1]), int(slot[2])
            self.args[:nargs] = slot[3:3 + nargs]
            command_done(block)
            if withdrawn(block, token):              # the I/O side gave up on it: never applied
                ok, code = False, Error.TIMEOUT
            else:
                ok, code = self._apply(Cmd(cmd), nargs, t) if cmd in Cmd._value2member_map_ else (False, Error.BAD_REQUEST)
            post_reply(block, token, ok, int(code), float(self.state))
        if self.enabling:
            self._progress_enable(t)
        if self.resetting:
            self._progress_reset()
        if self.watchdog.expired(t):
            self.watchdog.disarm()
            self._event(Event.WARNING, float(Reason.WATCHDOG), 0.0)
            self._stop(t, Reason.WATCHDOG)

    def _command_table(self) -> dict[Cmd, tuple[Handler, frozenset[State]]]:
        """Command -> (handler, the states it is allowed in), from the registry
        (controller.daemon.commands): each code's handler bound here by the name its record gives.
        A handler takes (args, nargs, t) and returns None when accepted (a COMMAND event follows)
        or its own (ok, error code) reply."""
        handlers: dict[str, Handler] = {
            "enable": lambda a, k, t: self._enable(t),
            "disable": lambda a, k, t: self._disable(Reason.COMMAND),
            "reset": lambda a, k, t: self._reset(),
            "estop": lambda a, k, t: self._estop(),
            "stop": lambda a, k, t: self._stop(t),
            "hold": lambda a, k, t: self._hold(Reason.COMMAND),
            "move_joints": self._move_joints,
            "run_squat": self._run_squat,
            "run_buffer": self._run_buffer,
            "stabilizer": self._stabilizer,
            "platform": self._platform_cmd,
            "rig_motion": self._rig_motion,
            "rig_buffer": self._rig_buffer,
            "set_gains": self._set_gains,
            "shutdown": lambda a, k, t: self._ask_shutdown(),
            "inject_fault": lambda a, k, t: self._inject(a),
        }
        return {Cmd(code): entry for code, entry in dispatch_table(handlers).items()}

    def _apply(self, cmd: Cmd, nargs: int, t: float) -> tuple[bool, int]:
        handler, states = self.commands[cmd]
        if self.state not in states or (self.enabling and cmd not in WHILE_ENABLING):
            return False, Error.NOT_ALLOWED
        self.watchdog.feed(t)
        reply = handler(self.args, nargs, t)
        if reply is not None:
            return reply
        self._event(Event.COMMAND, float(cmd), 1.0)
        return True, Error.OK

    def _move_joints(self, a: np.ndarray, nargs: int, t: float) -> None:
        """To q (NaN: keep that joint's current reference) in ``a[n]`` s (<= 0: minimum time)."""
        keep_nan(a[:self.n], self.q_ref)
        self.move.start(t, self.q_ref, a[:self.n], QUINTIC, max(a[self.n], 0.0))
        self._start_motion(self.move, t)

    def _run_squat(self, a: np.ndarray, nargs: int, t: float) -> tuple[bool, int] | None:
        """The thesis' excursions from here, within the soft limits."""
        if self.squat is None:
            return False, Error.NOT_SUPPORTED
        if self.squat.start(t, self.q_ref) >= 0:
            return False, Error.OUT_OF_RANGE
        self._start_motion(self.squat, t)
        return None

    def _run_buffer(self, a: np.ndarray, nargs: int, t: float) -> tuple[bool, int] | None:
        code = self.playback.load(int(self.block.header[H.TRAJ_LEN]))
        if code != Error.OK:
            return False, code
        # to the first sample, within the soft limits: the loop clamps the setpoints there anyway, and
        # a move aimed past them (a gait starting with its knees on their limit) would be cut short
        # at full speed, a velocity step the drives take as following error
        self.move.start(t, self.q_ref, np.clip(self.block.traj[0], self.soft_lo, self.soft_hi), QUINTIC, 0.0,
                        Outcome.APPROACHED)
        self._start_motion(self.move, t)
        stance = first_stance(self.block.support, self.playback.length)
        if stance >= 0 and self.phase_root[2] < 0:  # on the ground: the foot the first step does not lift
            self._set_root(int(self.phase_root[stance]))
        self._share(self.playback.shares[0])       # the approach ends on the file's first load split
        return None

    def _set_gains(self, a: np.ndarray, nargs: int, t: float) -> tuple[bool, int] | None:
        names = ("kp", "ki", "kd")
        gains = {names[k]: a[1 + k] for k in range(min(nargs - 1, 3))}
        try:                                   # validated on the I/O side; never trust it here
            self.axes.set_gains(int(a[0]), **gains)
        except ValueError:
            return False, Error.BAD_ARGS
        return None

    def _ask_shutdown(self) -> None:
        self.block.header[H.SHUTDOWN] = 1

    def _enable(self, t: float) -> None:
        b = self.bus
        self.enabling = True
        self.enable_deadline = t + self.cfg.control.enable_timeout
        for k, i in enumerate(self.leg_idx):
            b.mode[i] = self.mode
            b.target_position[i] = b.position[i]
            b.target_velocity[i] = 0.0
            b.torque_offset[i] = 0.0
        for i in self.plat_idx:
            b.mode[i] = CSP
            b.target_position[i] = b.position[i]
        for i in self.all_idx:
            b.axes[b.axis_names[i]].enable()

    def _progress_enable(self, t: float) -> None:
        st = self.bus.state
        if all(st[i] == DriveState.OPERATION_ENABLED for i in self.all_idx):
            self.enabling = False
            self._hold(Reason.COMMAND)
        elif t > self.enable_deadline:
            self.enabling = False
            late = [i for i in self.all_idx if st[i] != DriveState.OPERATION_ENABLED]
            self._fault(Reason.ENABLE_TIMEOUT, int(st[late[0]]), int(late[0]))

    def _disable(self, why: Reason) -> None:
        b = self.bus
        self.enabling = False
        for i in self.all_idx:
            b.axes[b.axis_names[i]].disable()
        self.gen = self.follow
        self.watchdog.disarm()
        self._goto(State.DISABLED, why)

    def _reset(self) -> None:
        b = self.bus
        for i in self.all_idx:
            b.axes[b.axis_names[i]].fault_reset()
        self.resetting = True

    def _progress_reset(self) -> None:
        st = self.bus.state
        if all(st[i] not in (DriveState.FAULT, DriveState.FAULT_REACTION_ACTIVE) for i in self.all_idx):
            self.resetting = False
            self.fault_reason = 0
            self._disable(Reason.COMMAND)

    def _estop(self) -> None:
        b = self.bus
        for i in self.all_idx:
            b.axes[b.axis_names[i]].quick_stop()
        self.enabling = False
        self.gen = self.follow
        self.watchdog.disarm()
        self._goto(State.ESTOP, Reason.ESTOP)

    def _hold(self, why: Reason) -> None:
        self.hold.start(self.q if self.state not in POWERED else self.q_ref, self.q_ref, self.qd_ref, self.qdd_ref)
        if self.state not in POWERED:
            self.axes.reset(self.q)
        self.gen = self.hold
        self.watchdog.disarm()
        self._goto(State.HOLD, why)

    def _start_motion(self, gen: Move | Squat, t: float) -> None:
        """MOVING with ``gen``, started at ``t``."""
        self.gen = gen
        self.watchdog.arm(t)
        self._goto(State.MOVING, Reason.COMMAND)

    def _stop(self, t: float, why: Reason | None = None) -> None:
        """Soft stop: decelerate from the current reference to rest, then HOLD; the HOLD
        transition carries ``why`` (default COMMAND from STABILIZING, STOP_DONE after a motion)."""
        if self.state == State.STABILIZING:
            self._hold(why or Reason.COMMAND)
            return
        if self.state != State.MOVING:
            return
        self.stopping.start(t, self.q_ref, self.qd_ref, why or Reason.STOP_DONE)
        self.gen = self.stopping
        self.watchdog.disarm()

    def _stabilizer(self, a: np.ndarray, nargs: int, t: float) -> tuple[bool, int]:
        if self.stabilize is None:
            return False, Error.NOT_SUPPORTED
        enable = a[0] > 0.5
        if not enable:
            if self.state != State.STABILIZING:
                return False, Error.NOT_ALLOWED
            self._hold(Reason.COMMAND)
            return True, Error.OK
        if self.state != State.HOLD:
            return False, Error.NOT_ALLOWED
        st = self.stabilize
        st.set_params(a, nargs)
        if isinstance(st, StabilizeWholeBody):     # on the soles of the commanded support phase
            st.start(self.q_ref, stab_support(a, nargs))
            self._stab_support(st)
            self.right_share = np.nan              # its stance sole carries the load (no double-support split)
        else:
            st.start(self.q_ref)
        self.gen = st
        self.watchdog.arm(t)
        self._goto(State.STABILIZING, Reason.COMMAND)
        return True, Error.OK

    def _platform_cmd(self, a: np.ndarray, nargs: int, t: float) -> tuple[bool, int] | None:
        if self.plat_idx.size == 0:                # no tilting platform on this robot's bus
            return False, Error.NOT_SUPPORTED
        if self.rig is None:
            self._platform(a[0], a[1], a[2])
        elif not self.rig.tilt(a[0], a[1], a[2], t):
            return False, Error.OUT_OF_RANGE
        return None

    def _rig_motion(self, a: np.ndarray, nargs: int, t: float) -> tuple[bool, int] | None:
        if self.rig is None:
            return False, Error.NOT_SUPPORTED
        if not self.rig.play(motion_from_args(a[:nargs], self.rig.player.convention), t):
            return False, Error.NOT_ALLOWED
        return None

    def _rig_buffer(self, a: np.ndarray, nargs: int, t: float) -> tuple[bool, int] | None:
        """Play the recorded motion the I/O side checked into the rig buffer (``a[0]``: its nodes'
        spacing); the buffer is the motion's (H.RIG_BUSY) until it ends."""
        if self.rig is None:
            return False, Error.NOT_SUPPORTED
        n, rig = int(self.block.header[H.RIG_LEN]), self.block.rig
        if not (2 <= n <= rig.shape[1] and math.isfinite(a[0]) and a[0] > 0.0):
            return False, Error.BAD_ARGS
        motion = SplineMotion(a[0], rig[0, :n], rig[1, :n], rig[2, :n], name="recorded rig motion")
        if not self.rig.play(motion, t):
            return False, Error.NOT_ALLOWED
        self.block.header[H.RIG_BUSY] = 1
        return None

    def _platform(self, alpha: float, beta: float, duration: float) -> None:
        self.plat_from[:] = self.plat_ref
        self.plat_to[0], self.plat_to[1] = alpha, beta
        self.plat_t = 0.0
        self.plat_T = max(duration, self.period)

    def _inject(self, a: np.ndarray) -> tuple[bool, int]:
        """Simulated fault (validated on the I/O side); a bus without the fault API, or
        a fault it cannot raise, answers not_supported."""
        faults = getattr(self.bus, "faults", None)
        kind, target, count, value = int(a[0]), int(a[1]), int(a[2]), float(a[3])
        action = FAULT_ACTIONS.get(kind)           # controller.daemon.commands: one call per kind
        if action is None:
            return False, Error.BAD_ARGS
        try:
            action(faults, self.bus.axis_names, target, count, value)
        except (AttributeError, ValueError, IndexError):     # no fault API, or a fault it refuses
            return False, Error.NOT_SUPPORTED
        return True, Error.OK

    def _begin_shutdown(self, t: float) -> None:
        if self.state == State.MOVING:
            self._stop(t)
        elif self.state == State.STABILIZING:
            self._hold(Reason.SHUTDOWN)

    # ------------------------------------------------------------------ references
    def _reference(self, t: float) -> None:
        """The active generator's sample; a finished one's outcome leads on (``_finished``).
        The platform follows its ramp while the drives are powered, its measured angles
        otherwise."""
        outcome = self.gen.sample(t, self.q_ref, self.qd_ref, self.qdd_ref)
        if self.gen is self.playback:
            self._share(self._split(self.playback.share, self.playback.phase))   # held after the file
            if self.playback.phase != self.phase:
                self._support(self.playback.phase)
        elif self.stab_sensed and self.gen is self.stabilize and self.stabilize.support != self.phase:
            # the feet's loads show another support
            self._stab_support(self.stabilize)
        if outcome != Outcome.RUNNING:
            self._finished(outcome, t)
        if self.rig is not None:
            self.rig.reference(t, self.state in POWERED)
            if self.block.header[H.RIG_BUSY] and self.rig.player.motion is None:
                self.block.header[H.RIG_BUSY] = 0        # the recorded motion is over: the I/O side may refill
        elif self.state in POWERED:
            if self.plat_T > 0.0:
                self.plat_t += self.period
                sample_move(QUINTIC, 0.5, self.plat_T, self.plat_from, self.plat_to,
                            self.plat_t, self.plat_ref, self.plat_v, self.plat_a)
                if self.plat_t >= self.plat_T:
                    self.plat_T = 0.0
        else:
            self.plat_ref[:] = self.plat
            self.plat_v.fill(0.0)
        if self.shutdown_deadline < math.inf:
            self._shutdown_progress(t)

    def _finished(self, outcome: Outcome, t: float) -> None:
        """The next state of a finished generator (states.AFTER): HOLD, or on in MOVING with the
        file once the approach is at its first sample."""
        state, why = AFTER[self.state, outcome]
        if state == State.MOVING:
            self.playback.start(t)
            self.phase = -1.0                      # the file's first phase is announced
            self.gen = self.playback
        else:
            self._hold(self.gen.why if why is None else why)

    def _support(self, phase: float) -> None:
        """A new support phase of the played file: the model's root follows it (``phase_root``;
        double support keeps the last stance foot, the feed-forward shares the load with the
        other sole), used from the next cycle's models; a
        SUPPORT event and the telemetry's ``support`` say so."""
        self.phase = phase
        if phase >= 0.0:
            r = self.phase_root[int(phase)]
            if r >= 0:
                self._set_root(int(r))
        self._event(Event.SUPPORT, phase, float(self.root))

    def _split(self, planned: float, phase: float) -> float:
        """The right sole's load share the feed-forward takes: the played file's, or in double support with
        ``control.load_split: measured`` the feet's measured share, low-passed, while their loads are
        plausible (else the file's again: the FEET_LOADS warning said why)."""
        if self.measured_split and phase == DOUBLE and self.share_f == self.share_f:
            return self.share_f
        return planned

    def _stab_support(self, st: StabilizeWholeBody) -> None:
        """The whole-robot stabilizer's support phase (the command's, or the one the feet's loads show):
        the models rooted at its stance sole from the next cycle, a SUPPORT event."""
        self.phase = st.support
        self._set_root(int(self.phase_root[st.stance()]))
        self._event(Event.SUPPORT, self.phase, float(self.root))

    def _feet(self) -> None:
        """The feet's loads (stabilizer.contact): each foot's, their plausibility (failing: a WARNING
        FEET_LOADS event as it starts, the telemetry's loads_implausible while it lasts, no sensed
        support), the support phase they show with hysteresis and dwell (a CONTACT event per change)
        and the right foot's share."""
        foot_loads(self.loads, self.feet_load)
        st = loads_status(self.loads, self.min_load, self.max_load)
        if st != self.loads_state:
            self.loads_state = st
            if st != LOADS_OK:
                self._event(Event.WARNING, float(Reason.FEET_LOADS), float(st))
        ok = st == LOADS_OK
        if not ok:
            self.contact_state[0] = math.nan      # the loads back: their support taken at once
        contact = debounced_contact(self.loads, self.min_load, self.release_load, self.dwell,
                                    self.contact_state) if ok else -1
        share = self.load_share = measured_share(self.loads) if ok else math.nan
        if share != share or self.share_f != self.share_f:
            self.share_f = share
        else:
            self.share_f += self.split_gain * (share - self.share_f)
        if contact != self.contact:
            self.contact = contact
            self._event(Event.CONTACT, float(contact), self.load_share)

    def _share(self, share: float) -> None:
        """The right sole's load share of a played sample; one without a phase (NaN) keeps the last."""
        if share == share:
            self.right_share = share

    def _set_root(self, r: int) -> None:
        self.root = r                              # the models take it at the next update

    def _shutdown_progress(self, t: float) -> None:
        if self.state == State.HOLD or t > self.shutdown_deadline:
            self._disable(Reason.SHUTDOWN)
        if self.state in (State.DISABLED, State.FAULT, State.ESTOP, State.BOOT):
            self.stopped = True

    # ------------------------------------------------------------------ axes
    def _feedforward(self) -> None:
        """τ_ff = (A + J_pᵀ J_m J_p) q̈_ref + C q̇ + G_tilt − J_cᵀ f_c + J_pᵀ J_m J̇_p q̇ + friction at
        q̇_ref: the plants' equation of motion (drivers.sim.plant_leg) solved for the torque; on the
        ground, f_c is the share of the ground wrench the sole that does not root the model
        carries (``right_share``, models.tree.dynamics.contact_share): 0 in its swing, all of it
        once it stands alone (until the root switches to it), a ramp in double support."""
        d = self.models
        feedforward(d.A, d.h, d.G, self.qdd_ref, True, self.tau_ff)
        if self.soles is not None and self.right_share == self.right_share:   # not NaN
            left, right = self.soles[0], self.soles[1]
            if self.model_root == left:
                d.contact(right, self.right_share, self.qd, self.qdd_ref, self.tau_ff)
            elif self.model_root == right:
                d.contact(left, 1.0 - self.right_share, self.qd, self.qdd_ref, self.tau_ff)
        drive_feedforward(self.P, self.Jp, self.bias, self.fv, self.fs, self.qdd_ref, self.qd_ref,
                          self.ff_scratch, self.tau_ff)

    def _axes(self) -> None:
        b = self.bus
        if self.state not in POWERED:
            return
        self._feedforward()
        code, joint = self.limits.check(self.q, self.qd, self.q_ref, self.qd_ref, self.tau_ff)
        if code != SAFE_OK:
            self._fault(reason(code), code, joint)
            return
        flags, joint = self.limits.clamp(self.q_ref, self.qd_ref, self.tau_ff)
        if flags and not self.soft_flags:
            self._event(Event.WARNING, float(Reason.SOFT_LIMIT), joint)
        self.soft_flags = flags
        self.axes.apply_staged()
        self.axes.step(self.q_ref, self.qd_ref, self.q, self.tau_ff)
        st = motor_setpoints(self.mode, self.P, self.Jp, self.axes.q_cmd, self.axes.qd_cmd,
                             self.axes.tau, self.qm_cmd, self.qmd_cmd, self.tau_m)
        if st != TR_OK or not all_finite(self.tau_m) or not all_finite(self.qm_cmd):
            bad = self._nonfinite_axis(self.qm_cmd)
            self._fault(Reason.TRANSMISSION, st, bad if bad >= 0 else self._nonfinite_axis(self.tau_m))
            return
        if self.mode == CSP:
            scatter(self.qm_cmd, self.leg_idx, b.target_position, 1.0)
            scatter(self.qmd_cmd, self.leg_idx, b.target_velocity, 1.0)
        scatter(self.tau_m, self.leg_idx, b.torque_offset, 1.0)
        if self.rig is not None:
            scatter(self.rig.position, self.plat_idx, b.target_position, 1.0)
            scatter(self.rig.velocity, self.plat_idx, b.target_velocity, 1.0)
            return
        scatter(self.plat_ref, self.plat_idx, b.target_position, self.ratio)
        scatter(self.plat_v, self.plat_idx, b.target_velocity, self.ratio)

    def _nonfinite_axis(self, motors: np.ndarray) -> int:
        """Bus index of the first leg motor value in ``motors`` that is not finite, -1 if none."""
        k = first_nonfinite(motors)
        return int(self.leg_idx[k]) if k >= 0 else -1

    # ------------------------------------------------------------------ telemetry
    def _telemetry(self, t: float, latency_ns: int) -> None:
        rec = begin_record(self.block)
        stab = self.stabilize
        write_record(rec, self.rec_offsets, t, float(self.cycle_count), float(self.state), float(self.fault_reason),
                     self.fault_detail, self.q, self.qd, self.q_ref, self.axes.tau, self.models.com,
                     stab.margins if stab is not None else self.no_margins,
                     stab.force if stab is not None else self.no_force,
                     float((self.stabilize.flags if self.state == State.STABILIZING else 0)
                           | (TILT_HELD_MASK if self.tilt_held else 0)
                           | (LOADS_MASK if self.loads_state != LOADS_OK else 0)),
                     latency_ns / 1e3, self.marks, self.telemetry_us,
                     self.block.stats[ST_OVERRUNS], float(self.missed), self.plat, self.phase,
                     self.rig.following_error if self.rig is not None and self.state in POWERED else self.no_ferr,
                     self.feet_load, float(self.contact) if self.has_loads else math.nan, self.tilt)
        end_record(self.block)

    # ------------------------------------------------------------------ run
    def run(self, max_cycles: int | None = None) -> int:
        """Cycle until shutdown (or ``max_cycles``); returns an exit code."""
        self.clock.start()
        count = 0
        while not self.stopped:
            self.run_cycle()
            count += 1
            if max_cycles is not None and count >= max_cycles:
                break
        return 0
