"""The supervisor: commands, the state machine (controller.daemon.loop.states) and the reference.

Each cycle ``drive_faults`` (a drive in Fault: FAULT), ``commands`` (shutdown and parent checks,
heartbeats for the motion watchdog, up to four mailbox commands, the enable and reset sequences)
and ``reference`` (the active generator's sample, controller.daemon.loop.references; its outcome
leads on by states.AFTER; the platform's setpoints). The command handlers are its methods; the
table Cmd -> (handler, allowed states) is built by ``_command_table``.
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable

import numpy as np
from numba import njit

from drivers.cia402 import State as DriveState
from drivers.codes import FaultCode
from models.common.support import DOUBLE

from controller.daemon.codes import Error, Event, Reason, StabParam, State, pack_detail
from controller.daemon.commands import FAULT_ACTIONS, dispatch_table
from controller.daemon.shm import (LANES, Cmd, H, SharedBlock, command_done, next_command, post_event, post_reply,
                                   take_priority, withdrawn)
from controller.daemon.loop.axes import CSP, AxisTasks
from controller.daemon.loop.estimation import Estimation
from controller.daemon.loop.joint_io import JointIO
from controller.daemon.loop.platform import Platform
from controller.daemon.loop.references.hold import Follow, Hold
from controller.daemon.loop.references.move import Move
from controller.daemon.loop.references.playback import Playback, first_stance
from controller.daemon.loop.references.squat import Squat
from controller.daemon.loop.references.stabilized_playback import StabilizedPlayback
from controller.daemon.loop.references.stabilize_whole_body import StabilizeWholeBody
from controller.daemon.loop.references.stop import Stop
from controller.daemon.loop.safety import Watchdog
from controller.daemon.loop.states import AFTER, POWERED, WHILE_ENABLING, Outcome
from controller.daemon.trajectories import QUINTIC, squat_excursion

BUS_CODES = frozenset({FaultCode.COMMUNICATION, FaultCode.LATE_PRES, FaultCode.INVALID_FORMAT,
                       FaultCode.LOSS_PREQ, FaultCode.LOSS_PRES, FaultCode.LOSS_SOC})
Handler = Callable[[np.ndarray, int, float], "tuple[bool, int] | None"]
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
def keep_nan(q, q_ref):
    """Every NaN entry of q takes q_ref's value (a joint the request did not name)."""
    for j in range(q.shape[0]):
        if np.isnan(q[j]):
            q[j] = q_ref[j]


def stab_support(a: np.ndarray, nargs: int) -> float:
    """The support phase a STABILIZER command names ((StabParam.SUPPORT, phase) among its pairs;
    validated on the I/O side), DOUBLE when it names none."""
    for k in range(1, nargs - 1, 2):
        if int(a[k]) == StabParam.SUPPORT:
            return float(a[k + 1])
    return float(DOUBLE)


class Journal:
    """Events to the I/O side, stamped with the loop's cycle count."""

    def __init__(self, block: SharedBlock) -> None:
        self.block, self.cycle = block, 0

    def post(self, kind: Event, a: float = 0.0, b: float = 0.0) -> None:
        post_event(self.block, self.cycle, int(kind), a, b)


class Supervisor:
    """The controller's state and its reference generators; ``gen`` is the active one."""

    def __init__(self, cfg, block: SharedBlock, io: JointIO, platform: Platform, est: Estimation,
                 axes: AxisTasks, stabilize, model, joint_names, soft: tuple[np.ndarray, np.ndarray],
                 journal: Journal, parent_pid: int | None) -> None:
        self.cfg, self.block, self.io, self.bus = cfg, block, io, io.bus
        self.platform, self.est, self.axes, self.stabilize, self.journal = platform, est, axes, stabilize, journal
        self.event = journal.post
        self.period, n = cfg.loop.period, io.q.shape[0]
        self.n, self.q = n, io.q
        self.q_ref, self.qd_ref, self.qdd_ref = np.zeros(n), np.zeros(n), np.zeros(n)
        self.soft_lo, self.soft_hi = soft
        self.watchdog = Watchdog(cfg.control.watchdog)
        self.follow, self.hold = Follow(self.q), Hold()
        self.move = Move(model.vmax * 0.5, model.vmax * 2.0)
        try:
            self.squat = Squat(squat_excursion(joint_names), self.soft_lo, self.soft_hi)
        except ValueError:                         # the thesis squat names the bench leg's joints
            self.squat = None                      # run squat: not_supported (as the I/O side says)
        self.playback = Playback(block.traj, self.period, block.support)
        self.stopping = Stop(n, cfg.control.stop_duration)
        self.stab_tree = isinstance(stabilize, StabilizeWholeBody)   # its support: the feet's, or a recovery step's
        # a played gait under the whole-robot stabilizer; ``walk_armed``: asked for during the approach
        self.walk = StabilizedPlayback(self.playback, stabilize) if isinstance(stabilize, StabilizeWholeBody) else None
        self.walk_armed = False
        self.gen = self.follow
        self.state = State.BOOT
        self.enable_deadline = 0.0
        self.enabling = False
        self.resetting = False
        self.fault_reason = 0
        self.fault_detail = 0.0
        self.heartbeats = 0                # H.HEARTBEATS last seen: valid client requests
        self.stopped = False
        self.shutdown_deadline = math.inf
        self.parent_pid = parent_pid       # the I/O process: if it dies, stop softly and leave
        self.args = np.zeros(32)
        self.commands = self._command_table()

    # ------------------------------------------------------------------ transitions
    def goto(self, state: State, why: Reason) -> None:
        if state == self.state:
            return
        self.event(Event.TRANSITION, float(self.state), float(why) + 1000.0 * float(state))
        self.state = state
        self.block.header[H.LOOP_STATE] = int(state)

    def fault(self, why: Reason, code: int, index: int = -1) -> None:
        """Any state -> FAULT: drives quick-stopped, motion and watchdog cancelled. ``code``
        and ``index`` (bus axis or joint) as in controller.daemon.codes.pack_detail."""
        if self.state in (State.FAULT, State.ESTOP):
            return
        self.fault_reason = int(why)
        self.fault_detail = pack_detail(code, index)
        self.event(Event.FAULT, float(why), self.fault_detail)
        self._each_axis("quick_stop")
        self.enabling = False
        self.gen = self.follow
        self.watchdog.disarm()
        self.goto(State.FAULT, why)

    def _each_axis(self, action: str) -> None:
        b = self.bus
        for i in self.io.all_idx:
            getattr(b.axes[b.axis_names[i]], action)()

    def drive_faults(self) -> None:
        if self.state not in POWERED and not self.enabling:
            return
        i = first_faulted(self.bus.state, self.io.all_idx)
        if i >= 0:
            code = int(self.bus.fault_code[i])
            self.fault(Reason.BUS_FAULT if code in BUS_CODES else Reason.DRIVE_FAULT, code, i)

    # ------------------------------------------------------------------ commands
    def commands_step(self, t: float, cycle: int, limit: int = 4) -> None:
        """The priority lanes first (estop, disable: shm.LANES), then shutdown and parent checks,
        the watchdog's heartbeats, up to ``limit`` mailbox commands (one the I/O side withdrew is
        answered TIMEOUT, not applied)."""
        block = self.block
        for lane, cmd in enumerate(LANES):
            token = take_priority(block, lane)
            if token:
                ok, code = self._apply(cmd, 0, t)
                post_reply(block, token, ok, int(code), float(self.state))
        if self.parent_pid is not None and cycle % 64 == 0 and os.getppid() != self.parent_pid:
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
            self.event(Event.WARNING, float(Reason.WATCHDOG), 0.0)
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
            "platform": lambda a, k, t: self.platform.tilt(a[0], a[1], a[2], t),
            "rig_motion": self.platform.play,
            "rig_buffer": lambda a, k, t: self.platform.play_buffer(a, t),
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
        self.event(Event.COMMAND, float(cmd), 1.0)
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
        self.walk_armed = False                    # a new file plays open-loop unless asked otherwise
        stance = first_stance(self.block.support, self.playback.length)
        est = self.est
        if stance >= 0 and est.phase_root[2] < 0:  # on the ground: the foot the first step does not lift
            est.root = int(est.phase_root[stance])
        est.share(self.playback.shares[0])         # the approach ends on the file's first load split
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

    def _stabilizer(self, a: np.ndarray, nargs: int, t: float) -> tuple[bool, int]:
        if self.stabilize is None:
            return False, Error.NOT_SUPPORTED
        enable = a[0] > 0.5
        if self.state == State.MOVING:
            return self._stabilize_walk(enable, a, nargs)
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
            self.est.stab_support(st)
            self.est.right_share = np.nan          # its stance sole carries the load (no double-support split)
        else:
            st.start(self.q_ref)
        self.gen = st
        self.watchdog.arm(t)
        self.goto(State.STABILIZING, Reason.COMMAND)
        return True, Error.OK

    def _stabilize_walk(self, enable: bool, a: np.ndarray, nargs: int) -> tuple[bool, int]:
        """In MOVING, the stabilizer over a played file: on (from here if the file plays, from its first
        sample if the approach runs) or off (the file plays on open-loop). A tree robot's, a file with a
        support phase per sample and no other motion, else NOT_ALLOWED (NOT_SUPPORTED: a bench leg)."""
        if self.walk is None:
            return False, Error.NOT_SUPPORTED
        approach = self.gen is self.move and self.move.done == Outcome.APPROACHED
        if not enable:
            if self.gen is not self.walk and not (approach and self.walk_armed):
                return False, Error.NOT_ALLOWED
            self.walk_armed = False
            if self.gen is self.walk:
                self.gen = self.playback
            return True, Error.OK
        if not (approach or self.gen is self.playback) or not self.playback.phased:
            return False, Error.NOT_ALLOWED
        self.stabilize.set_params(a, nargs)
        if approach:
            self.walk_armed = True
        else:
            self._start_walk()
        return True, Error.OK

    def _start_walk(self) -> None:
        self.walk.start(self.q_ref)
        self.walk_armed = False
        self.gen = self.walk

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

    # ------------------------------------------------------------------ sequences
    def _enable(self, t: float) -> None:
        b, io = self.bus, self.io
        self.enabling = True
        self.enable_deadline = t + self.cfg.control.enable_timeout
        for i in io.leg_idx:
            b.mode[i] = io.mode
            b.target_position[i] = b.position[i]
            b.target_velocity[i] = 0.0
            b.torque_offset[i] = 0.0
        for i in io.plat_idx:
            b.mode[i] = CSP
            b.target_position[i] = b.position[i]
        self._each_axis("enable")

    def _progress_enable(self, t: float) -> None:
        st, idx = self.bus.state, self.io.all_idx
        if all(st[i] == DriveState.OPERATION_ENABLED for i in idx):
            self.enabling = False
            self._hold(Reason.COMMAND)
        elif t > self.enable_deadline:
            self.enabling = False
            late = [i for i in idx if st[i] != DriveState.OPERATION_ENABLED]
            self.fault(Reason.ENABLE_TIMEOUT, int(st[late[0]]), int(late[0]))

    def _disable(self, why: Reason) -> None:
        self.enabling = False
        self._each_axis("disable")
        self.gen = self.follow
        self.watchdog.disarm()
        self.goto(State.DISABLED, why)

    def _reset(self) -> None:
        self._each_axis("fault_reset")
        self.resetting = True

    def _progress_reset(self) -> None:
        st = self.bus.state
        if all(st[i] not in (DriveState.FAULT, DriveState.FAULT_REACTION_ACTIVE) for i in self.io.all_idx):
            self.resetting = False
            self.fault_reason = 0
            self._disable(Reason.COMMAND)

    def _estop(self) -> None:
        self._each_axis("quick_stop")
        self.enabling = False
        self.gen = self.follow
        self.watchdog.disarm()
        self.goto(State.ESTOP, Reason.ESTOP)

    @property
    def stab_flags(self) -> int:
        """The running stabilizer's stab_flags (the telemetry's), 0 when none runs."""
        return self.stabilize.flags if self.state == State.STABILIZING or (
            self.gen is self.walk and self.walk is not None) else 0

    def _hold(self, why: Reason) -> None:
        self.hold.start(self.q if self.state not in POWERED else self.q_ref, self.q_ref, self.qd_ref, self.qdd_ref)
        if self.state not in POWERED:
            self.axes.reset(self.q)
        self.gen = self.hold
        self.watchdog.disarm()
        self.goto(State.HOLD, why)

    def _start_motion(self, gen: Move | Squat, t: float) -> None:
        """MOVING with ``gen``, started at ``t``."""
        self.gen = gen
        self.watchdog.arm(t)
        self.goto(State.MOVING, Reason.COMMAND)

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

    def _begin_shutdown(self, t: float) -> None:
        if self.state == State.MOVING:
            self._stop(t)
        elif self.state == State.STABILIZING:
            self._hold(Reason.SHUTDOWN)

    def _shutdown_progress(self, t: float) -> None:
        if self.state == State.HOLD or t > self.shutdown_deadline:
            self._disable(Reason.SHUTDOWN)
        if self.state in (State.DISABLED, State.FAULT, State.ESTOP, State.BOOT):
            self.stopped = True

    # ------------------------------------------------------------------ reference
    def reference(self, t: float) -> None:
        """The active generator's sample; a finished one's outcome leads on (``_finished``).
        The platform follows its reference while the drives are powered, its measured pose
        otherwise."""
        outcome = self.gen.sample(t, self.q_ref, self.qd_ref, self.qdd_ref)
        est = self.est
        if self.gen is self.playback or self.gen is self.walk:
            est.share(est.split(self.playback.share, self.playback.phase))   # held after the file
            if self.playback.phase != est.phase:
                est.support(self.playback.phase)
        elif self.stab_tree and self.gen is self.stabilize and self.stabilize.support != est.phase:
            # the feet's loads show another support, or a recovery step swings (its stance sole carries the load)
            est.stab_support(self.stabilize)
        if outcome != Outcome.RUNNING:
            self._finished(outcome, t)
        self.platform.reference(t, self.state in POWERED)
        if self.shutdown_deadline < math.inf:
            self._shutdown_progress(t)

    def _finished(self, outcome: Outcome, t: float) -> None:
        """The next state of a finished generator (states.AFTER): HOLD, or on in MOVING with the
        file once the approach is at its first sample."""
        state, why = AFTER[self.state, outcome]
        if state == State.MOVING:
            self.playback.start(t)
            self.est.phase = -1.0                  # the file's first phase is announced
            self.gen = self.playback
            if self.walk_armed:                    # the stabilizer asked for during the approach
                self.playback.sample(t, self.q_ref, self.qd_ref, self.qdd_ref)
                self._start_walk()
        else:
            self._hold(self.gen.why if why is None else why)
