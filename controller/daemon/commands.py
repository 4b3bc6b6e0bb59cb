"""The command registry: every command the daemon serves, declared once (docs/commands.md).

One :class:`Command` per protocol command: its name, the numeric code(s) it becomes in shared
memory, its arguments (name, JSON type, unit, range, doc), the states it is allowed in, its
I/O-side validation, the loop-side handler of each code (a name the loop binds at construction)
and its lane:

* ``io``       answered by the I/O process itself (from shared memory, or the stepped horizon);
* ``mailbox``  the bounded command mailbox, in order, a few per cycle;
* ``priority`` a slot of its own in shared memory that the loop reads first every cycle, before
  the mailbox: no flood of other commands can delay it or fill it. Requests of one priority
  command that arrive while the loop has not yet read the last one are that one request: they
  all receive its reply.

Derived from this table: the shared-memory codes (:class:`controller.daemon.shm.Cmd`) and lanes,
the state machine's ``ALLOWED`` (:mod:`controller.daemon.loop.states`), the protocol's names,
arguments and validation (:mod:`controller.daemon.io.protocol`), the loop's dispatch table,
``bipd ctl --help`` and docs/commands.md (``python -m controller.daemon.commands``; a test
checks the file). A validator takes the request's ``args`` and the protocol's ``Context`` and
returns the float arguments of the command's first code, or ``(code, arguments)``.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

import numpy as np

from controller.daemon.arguments import Reject, boolean, duration, integer, kind_of, number, within
from controller.daemon.codes import DRIVE_FAULT_KINDS, GLITCH_KINDS, NODE_FAULTS, Error, FaultKind, StabParam, State
from controller.daemon.trajectories import SQUAT_DEG, squat_excursion
from models.common.support import DOUBLE, SUPPORT_NAMES

Context = Any
"""The protocol's validation context (:class:`controller.daemon.io.protocol.Context`: the robot's limits
and the loop's live state), named here without importing the I/O side the registry sits below."""
S = State
QUINTIC_PEAK = 1.875          # peak speed of a quintic move = 15/8 * |dq| / T
QUINTIC_PEAK_ACCEL = 10.0 / math.sqrt(3.0)   # its peak acceleration = 10/sqrt(3) * |dq| / T² (at s = 1/2 ∓ sqrt(3)/6)
MAX_PATH_CHARS = 4096
EMPTY = np.empty(0)


class Lane(StrEnum):
    """How a command reaches whoever serves it (module docstring)."""
    IO = "io"
    MAILBOX = "mailbox"
    PRIORITY = "priority"


@dataclass(frozen=True)
class Arg:
    """One request argument, as documented (the validator checks it)."""
    name: str
    type: str
    doc: str
    unit: str = ""
    range: str = ""
    required: bool = True


@dataclass(frozen=True)
class Code:
    """One numeric command shared memory carries to the loop, and the loop's handler for it."""
    name: str
    value: int
    handler: str
    doc: str = ""              # its float arguments in the slot
    file: bool = False         # the I/O side loads a file into shared memory before posting it
    check: Callable[[np.ndarray, Context], None] | None = None
    """A check of the code's arguments too slow for the command thread (over ~1 ms): the I/O
    process runs it in its worker thread before posting; it raises ``Reject``."""


@dataclass(frozen=True)
class Command:
    """One protocol command (module docstring)."""
    name: str
    doc: str
    lane: Lane
    states: frozenset[State]
    codes: tuple[Code, ...] = ()
    args: tuple[Arg, ...] = ()
    validate: Callable[[dict[str, Any], Context], Any] | None = None
    while_enabling: bool = False      # accepted while the drives are being enabled
    cancels_loading: bool = False     # cancels a file still loading for the loop
    starts_motion: bool = False       # refused once the cycle log failed (io.on_log_failure: refuse_motions)

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.args if a.required)

    @property
    def optional(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.args if not a.required)


STABILIZER_PARAMS: Mapping[str, tuple[StabParam, float, float, str]] = {
    "saturation_distance": (StabParam.SATURATION_DISTANCE, 1e-4, 0.1, "m"),
    "admittance_damping": (StabParam.ADMITTANCE_DAMPING, 1.0, 1e4, "N s/m"),
    "admittance_mass": (StabParam.ADMITTANCE_MASS, 0.0, 100.0, "kg"),
    "max_speed": (StabParam.MAX_SPEED, 1e-3, 2.0, "m/s"),
    "posture_gain": (StabParam.POSTURE_GAIN, 0.0, 100.0, "1/s"),
    "attractor_gain": (StabParam.ATTRACTOR_GAIN, 0.0, 100.0, "N m^2"),
}
"""Stabilizer parameters settable at run time: (code, min, max, unit), bounds inclusive."""


# ------------------------------------------------------------------ validators (I/O side)

def _move_joints(args: dict[str, Any], ctx: Context) -> np.ndarray:
    """``q``: every joint's angle (a list in the robot's joint order) or some joints by name (an
    object); a joint not named keeps its current reference (NaN in the mailbox: the loop fills it)."""
    names, n = ctx.joint_names, len(ctx.joint_names)
    q = args["q"]
    out = np.full(n + 1, np.nan)
    if isinstance(q, dict):
        if not q:
            raise Reject(Error.BAD_ARGS, f"args.q names no joint (joints: {', '.join(names)}).")
        for name in q:
            if name not in names:
                raise Reject(Error.BAD_ARGS, f"args.q.{name[:40]} is not a joint of this robot "
                                             f"(joints: {', '.join(names)}).")
        given = [(names.index(name), f"args.q.{name}", v) for name, v in q.items()]
    elif isinstance(q, list) and len(q) == n:
        given = [(i, f"args.q[{i}]", v) for i, v in enumerate(q)]
    else:
        raise Reject(Error.BAD_ARGS, f"args.q must be a list of {n} joint angles in rad "
                                     f"({', '.join(names)}) or an object of some of them by name, got {kind_of(q)}.")
    for i, where, v in given:
        x = number(where, v, "rad")
        if x < ctx.qmin[i]:
            raise Reject(Error.OUT_OF_RANGE, f"{where} = {x:g} rad is below the {names[i]} limit {ctx.qmin[i]:g} rad.")
        if x > ctx.qmax[i]:
            raise Reject(Error.OUT_OF_RANGE, f"{where} = {x:g} rad is above the {names[i]} limit {ctx.qmax[i]:g} rad.")
        out[i] = x
    out[n] = -1.0
    if "duration" in args:
        t = duration("args.duration", args["duration"], ctx.max_duration)
        if ctx.q is not None:
            target = np.where(np.isnan(out[:n]), ctx.q, out[:n])        # a joint not named stays
            speed = QUINTIC_PEAK * np.abs(target - ctx.q) / t
            i = int(np.argmax(speed / ctx.vmax))
            if speed[i] > ctx.vmax[i]:
                raise Reject(Error.OUT_OF_RANGE, f"args.duration = {t:g} s is too short: {names[i]} would peak at "
                                                 f"{speed[i]:.3g} rad/s, above its {ctx.vmax[i]:g} rad/s limit.")
        out[n] = t
    return out


def _run(args: dict[str, Any], ctx: Context) -> tuple[Code, np.ndarray]:
    traj = args["trajectory"]
    if not isinstance(traj, str) or not traj or len(traj) > MAX_PATH_CHARS:
        raise Reject(Error.BAD_ARGS, f'args.trajectory must be "squat" or a file path, got {kind_of(traj)}.')
    if traj != "squat":
        return RUN_BUFFER, EMPTY
    _squat_fits(ctx)
    return RUN_SQUAT, EMPTY


def _squat_fits(ctx: Context) -> None:
    """The thesis squat goes ankle +16°, knee −85°, hip +70° from the current posture (thesis
    §2.6.1): refuse it where the bottom would leave the soft limits (the loop checks again
    from its reference, the final authority)."""
    try:
        step = squat_excursion(ctx.joint_names)
    except ValueError as e:
        raise Reject(Error.NOT_SUPPORTED, f"{e}.") from None
    if ctx.q is None or ctx.state not in ctx.allowed["run"]:     # no posture yet, or refused by state
        return
    lo, hi = ctx.qmin + ctx.soft_limit_margin, ctx.qmax - ctx.soft_limit_margin
    for i, name in enumerate(ctx.joint_names):
        bottom = ctx.q[i] + step[i]
        if not lo[i] <= bottom <= hi[i]:
            side, limit = ("below", lo[i]) if bottom < lo[i] else ("above", hi[i])
            raise Reject(Error.OUT_OF_RANGE, f"the squat moves {name} by {SQUAT_DEG[name]:+g} deg: from "
                         f"{ctx.q[i]:.3f} rad it would reach {bottom:.3f} rad, {side} its limit {limit:.3f} rad.")


def _stabilizer(args: dict[str, Any], ctx: Context) -> np.ndarray:
    enable = boolean("args.enable", args["enable"])
    params = args.get("params", {})
    if not isinstance(params, dict):
        raise Reject(Error.BAD_ARGS, f"args.params must be an object of stabilizer parameters, got {kind_of(params)}.")
    if params and not enable:
        raise Reject(Error.BAD_ARGS, "args.params is only accepted with enable: true.")
    if ctx.state == State.STABILIZING and enable:
        raise Reject(Error.NOT_ALLOWED, "the stabilizer is already running: only enable: false is accepted in STABILIZING.")
    out = [1.0 if enable else 0.0]
    support = args.get("support")
    walking = ctx.state == State.MOVING
    if walking and not ctx.whole_body:
        raise Reject(Error.NOT_SUPPORTED, "in MOVING the stabilizer runs over a played gait: the whole-robot "
                                          "stabilizer's (a tree robot); the bench leg's stabilizes standing only.")
    if walking and support is not None:
        raise Reject(Error.BAD_ARGS, "args.support is not accepted in MOVING: the played file's support column "
                                     "gives the phase.")
    if support is not None:
        if not ctx.whole_body:
            raise Reject(Error.BAD_ARGS, "args.support is for the whole-robot stabilizer (a tree robot); "
                                         "the bench leg stands on its one foot.")
        if not enable:
            raise Reject(Error.BAD_ARGS, "args.support is only accepted with enable: true.")
        if support not in SUPPORT_NAMES:
            raise Reject(Error.BAD_ARGS, f"args.support must be one of {', '.join(SUPPORT_NAMES)}, "
                                         f"got {kind_of(support)}.")
        out += [float(StabParam.SUPPORT), float(SUPPORT_NAMES.index(support))]
    if enable and not walking and ctx.start_posture is not None and ctx.q is not None:
        why = ctx.start_posture.reason(ctx.q, SUPPORT_NAMES.index(support) if support is not None else DOUBLE)
        if why is not None:
            raise Reject(Error.OUT_OF_RANGE, f"{why}.")
    for key, v in params.items():
        if key not in STABILIZER_PARAMS:
            raise Reject(Error.BAD_ARGS, f"args.params.{key} is not a stabilizer parameter "
                                         f"(expected {', '.join(STABILIZER_PARAMS)}).")
        code, lo, hi, unit = STABILIZER_PARAMS[key]
        out += [float(code), within(f"args.params.{key}", number(f"args.params.{key}", v, unit), lo, hi, unit)]
    return np.array(out)


def _platform(args: dict[str, Any], ctx: Context) -> np.ndarray:
    lim = ctx.platform_limit
    out = np.empty(3)
    for i, key in enumerate(("alpha", "beta")):
        x = number(f"args.{key}", args[key], "rad")
        if abs(x) > lim:
            raise Reject(Error.OUT_OF_RANGE, f"args.{key} = {x:g} rad ({math.degrees(x):.1f} deg) exceeds the "
                                             f"platform limit of {lim:g} rad ({math.degrees(lim):.1f} deg).")
        out[i] = x
    out[2] = t = duration("args.duration", args["duration"], ctx.max_duration)
    start = ctx.platform if ctx.platform is not None and np.all(np.isfinite(ctx.platform)) else None
    for i, key in enumerate(("alpha", "beta")):
        step = abs(out[i] - start[i]) if start is not None else abs(out[i]) + lim   # unknown: the worst start
        for what, peak, limit, unit in (("speed", QUINTIC_PEAK * step / t, ctx.platform_vmax, "rad/s"),
                                         ("acceleration", QUINTIC_PEAK_ACCEL * step / t ** 2, ctx.platform_amax,
                                          "rad/s²")):
            if peak > limit:
                raise Reject(Error.OUT_OF_RANGE, f"args.duration = {t:g} s is too short: the platform's {key} hinge "
                                                 f"would peak at {peak:.3g} {unit}, above the {limit:.3g} {unit} "
                                                 f"its drives can follow ({what}).")
    return out


def _rig_motion(args: dict[str, Any], ctx: Context) -> tuple[Code, np.ndarray]:
    """A built-in rig motion (controller.daemon.rig.spec) as its mailbox arguments, its stroke checked
    later off the command thread (:func:`_rig_stroke`); an earthquake file is RIG_BUFFER, loaded and
    checked by the server (the file is in ``args``)."""
    from controller.daemon.rig.motions import MotionError
    from controller.daemon.rig.spec import file_motion, motion_args

    if ctx.rig is None:
        raise Reject(Error.NOT_SUPPORTED, "rig_motion needs the Stewart-Gough rig (control.platform.kind: stewart).")
    spec = args["motion"]
    if not isinstance(spec, str) or len(spec) > 400:
        raise Reject(Error.BAD_ARGS, f"args.motion must be a string KIND or KIND:key=value,... , got {kind_of(spec)}.")
    try:
        if file_motion(spec) is not None:
            return RIG_BUFFER, EMPTY
        out = motion_args(spec)
    except MotionError as exc:
        raise Reject(Error.BAD_ARGS, f"args.motion: {exc}.") from None
    return RIG_MOTION, out


def _rig_stroke(values: np.ndarray, ctx: Context) -> None:
    """A built-in rig motion is refused unless the rig's stroke holds all of it (sampled over its whole
    duration: seconds for a long ship deck, hence run off the command thread)."""
    from controller.daemon.rig.motions import MotionError
    from controller.daemon.rig.spec import motion_from_args
    from controller.daemon.rig.stroke import check_motion

    try:
        check_motion(ctx.rig, motion_from_args(values, ctx.rig_convention), vmax=ctx.rig_vmax, amax=ctx.rig_amax)
    except MotionError as exc:
        raise Reject(Error.OUT_OF_RANGE, f"args.motion: {exc}.") from None


def _set_gains(args: dict[str, Any], ctx: Context) -> np.ndarray:
    axis = args["axis"]
    if not isinstance(axis, str) or axis not in ctx.axis_names:
        raise Reject(Error.BAD_ARGS, f"args.axis must be one of {', '.join(ctx.axis_names)}, got {kind_of(axis)}.")
    out = [float(ctx.axis_names.index(axis))]
    for key in ("kp", "ki", "kd"):
        out.append(within(f"args.{key}", number(f"args.{key}", args[key], ""), 0.0, ctx.max_gain, ""))
    return np.array(out)


def _inject_fault(args: dict[str, Any], ctx: Context) -> np.ndarray:
    """Simulated fault (drivers.sim.faults): [kind, target, count or sub-kind, value]."""
    if not ctx.bus_axes:
        raise Reject(Error.NOT_SUPPORTED, "fault injection needs a simulated bus (sim or udp backend, or raw in "
                     "lock-step to the HIL).")
    name = args["fault"]
    names = {k.name.lower(): k for k in FaultKind}
    if not isinstance(name, str) or name not in names:
        raise Reject(Error.BAD_ARGS, f"args.fault must be one of {', '.join(names)}, got {kind_of(name)}.")
    kind = names[name]
    if kind in NODE_FAULTS:
        extra = set(args) - {"fault", "node", "count", "delay_s"}
        if "node" not in args or extra:
            raise Reject(Error.BAD_ARGS, f"{name} takes node (and count, delay_s for delay_pres); "
                                         f"got {', '.join(sorted(set(args) - {'fault'})) or 'nothing'}.")
        node = integer("args.node", args["node"], 1, 239)
        count = integer("args.count", args.get("count", 1), 1, 1000)
        delay = within("args.delay_s", number("args.delay_s", args.get("delay_s", 0.0), "s"), 0.0, 0.01, "s")
        return np.array([float(kind), float(node), float(count), delay])
    axis = args.get("axis")
    if not isinstance(axis, str) or axis not in ctx.bus_axes:
        raise Reject(Error.BAD_ARGS, f"args.axis must be one of {', '.join(ctx.bus_axes)}, got {kind_of(axis)}.")
    kinds = DRIVE_FAULT_KINDS if kind == FaultKind.DRIVE_FAULT else GLITCH_KINDS
    sub = args.get("kind")
    if sub not in kinds:
        raise Reject(Error.BAD_ARGS, f"args.kind must be one of {', '.join(kinds)}, got {kind_of(sub)}.")
    value = number("args.value", args.get("value", 0.0), "rad")
    return np.array([float(kind), float(ctx.bus_axes.index(axis)), float(kinds.index(sub)), value])


def _step(args: dict[str, Any], ctx: Context) -> np.ndarray:
    """Cycles to advance: ``cycles``, or ``seconds`` rounded to whole periods (exactly one); ``seconds``
    shorter than one period is refused, never rounded to no step at all."""
    if not ctx.stepped:
        raise Reject(Error.NOT_SUPPORTED, "step needs a stepped lock-step daemon (bipd run --stepped, "
                                          "loop.stepped: true); this one runs on its own clock.")
    if ("cycles" in args) == ("seconds" in args):
        raise Reject(Error.BAD_ARGS, "step takes exactly one of args.cycles and args.seconds.")
    if "cycles" in args:
        cycles = integer("args.cycles", args["cycles"], 1, ctx.max_step_cycles)
    else:
        seconds = number("args.seconds", args["seconds"], "s")
        longest = ctx.max_step_cycles * ctx.period
        if not ctx.period <= seconds <= longest:         # checked before dividing: 1e308 s, 1e-300 s
            raise Reject(Error.OUT_OF_RANGE, f"args.seconds = {seconds:g} s is outside [{ctx.period:g}, {longest:g}] s: "
                                             f"a step runs 1 to {ctx.max_step_cycles} whole cycles of {ctx.period:g} s.")
        cycles = min(max(round(seconds / ctx.period), 1), ctx.max_step_cycles)
    return np.array([float(cycles)])


# ------------------------------------------------------------------ loop-side fault dispatch

FaultAction = Callable[[Any, tuple[str, ...], int, int, float], None]
FAULT_ACTIONS: Mapping[FaultKind, FaultAction] = {
    FaultKind.DROP_PRES: lambda f, axes, node, count, value: f.drop_pres(node, count=count),
    FaultKind.DELAY_PRES: lambda f, axes, node, count, value: f.delay_pres(node, value, count),
    FaultKind.CORRUPT_PRES: lambda f, axes, node, count, value: f.corrupt_pres(node, count=count),
    FaultKind.DROP_SOC: lambda f, axes, node, count, value: f.drop_soc(node, count=count),
    FaultKind.STOP_NODE: lambda f, axes, node, count, value: f.stop_node(node),
    FaultKind.DISCONNECT_NODE: lambda f, axes, node, count, value: f.disconnect_node(node),
    FaultKind.RECONNECT_NODE: lambda f, axes, node, count, value: f.reconnect_node(node),
    FaultKind.DRIVE_FAULT: lambda f, axes, axis, sub, value: f.drive_fault(axes[axis], DRIVE_FAULT_KINDS[sub]),
    FaultKind.ENCODER_GLITCH: lambda f, axes, axis, sub, value: f.encoder_glitch(axes[axis], GLITCH_KINDS[sub], value),
}
"""``inject_fault`` on the loop side: each kind's call on the bus' fault API
(drivers.fault_api.FaultApi) from the mailbox's (target, count or sub-kind, value); the bus'
axis names turn an axis index into its name."""


# ------------------------------------------------------------------ the registry

ENABLE = Code("ENABLE", 2, "enable")
DISABLE = Code("DISABLE", 3, "disable")
RESET = Code("RESET", 4, "reset")
ESTOP = Code("ESTOP", 5, "estop")
STOP = Code("STOP", 6, "stop")
HOLD = Code("HOLD", 7, "hold")
MOVE_JOINTS = Code("MOVE_JOINTS", 8, "move_joints", "q[n] (NaN: keep), duration (<= 0: minimum time)")
RUN_SQUAT = Code("RUN_SQUAT", 9, "run_squat")
RUN_BUFFER = Code("RUN_BUFFER", 10, "run_buffer", "none: the traj buffer, TRAJ_LEN samples", file=True)
STABILIZER = Code("STABILIZER", 11, "stabilizer", "enable, then (parameter code, value) pairs")
PLATFORM = Code("PLATFORM", 12, "platform", "alpha, beta, duration")
SET_GAINS = Code("SET_GAINS", 13, "set_gains", "axis index, kp, ki, kd")
SHUTDOWN = Code("SHUTDOWN", 14, "shutdown")
INJECT_FAULT = Code("INJECT_FAULT", 15, "inject_fault", "fault kind, node or axis index, count or sub-kind, value")
RIG_MOTION = Code("RIG_MOTION", 16, "rig_motion", "controller.daemon.rig.spec.motion_args", check=_rig_stroke)
RIG_BUFFER = Code("RIG_BUFFER", 17, "rig_buffer", "the nodes' spacing (s); the rig buffer, RIG_LEN nodes", file=True)

EVERY = frozenset(State)
DURATION = "(0, io.max_duration] (600 by default)"

COMMANDS: tuple[Command, ...] = (
    Command("get_config", "The static configuration: joints, axes, limits, the allowed-states table.",
            Lane.IO, EVERY),
    Command("ping", "Liveness: state, ready, cycle.", Lane.IO, EVERY),
    Command("stats", "The profiler's statistics and the I/O side's counters.", Lane.IO, EVERY),
    Command("status", "State, the loop's cycle, last telemetry (`record_cycle`: the cycle it is of, which lags "
            "`cycle` while the loop runs), faults, last transition; the answer first reads everything the loop "
            "had posted, so a FAULT state comes with its fault event.", Lane.IO, EVERY),
    Command("step", "Stepped lock-step only: run the loop this many more cycles; answered once it has.",
            Lane.IO, EVERY, validate=_step, args=(
                Arg("cycles", "integer", "cycles to run (exactly one of cycles, seconds)",
                    range="1..max_step_cycles (1000000)", required=False),
                Arg("seconds", "number", "time to run, rounded to whole periods (less than one period is refused)",
                    "s", "[period, max_step_cycles periods]", required=False))),
    Command("enable", "Power the drives and hold the current posture.", Lane.MAILBOX, frozenset({S.DISABLED}),
            (ENABLE,)),
    Command("disable", "Switch the drives' voltage off.", Lane.PRIORITY, frozenset({S.DISABLED, S.HOLD}),
            (DISABLE,), while_enabling=True, cancels_loading=True),
    Command("reset", "Clear a fault or an emergency stop.", Lane.MAILBOX,
            frozenset({S.FAULT, S.ESTOP}), (RESET,)),
    Command("estop", "Emergency stop: quick stop, then voltage off.", Lane.PRIORITY, EVERY - {S.ESTOP},
            (ESTOP,), while_enabling=True, cancels_loading=True),
    Command("stop", "Decelerate the motion to rest, then hold.", Lane.MAILBOX,
            frozenset({S.HOLD, S.MOVING, S.STABILIZING}), (STOP,), cancels_loading=True),
    Command("hold", "Hold here at once.", Lane.MAILBOX, frozenset({S.HOLD, S.MOVING, S.STABILIZING}),
            (HOLD,), cancels_loading=True),
    Command("shutdown", "Stop the motion, then end the daemon.", Lane.MAILBOX, EVERY, (SHUTDOWN,),
            while_enabling=True, cancels_loading=True),
    Command("move_joints", "A quintic move of some or all joints.", Lane.MAILBOX, frozenset({S.HOLD}),
            (MOVE_JOINTS,), validate=_move_joints, starts_motion=True, args=(
                Arg("q", "list or object", "every joint's angle in joint order, or some joints by name "
                    "(the others keep their reference)", "rad", "within each joint's limits"),
                Arg("duration", "number", "the move's time (absent: the minimum time); its peak speed "
                    "stays within each joint's vmax", "s", DURATION, required=False))),
    Command("run", "Play the thesis squat or a trajectory file.", Lane.MAILBOX, frozenset({S.HOLD}),
            (RUN_SQUAT, RUN_BUFFER), validate=_run, starts_motion=True, args=(
                Arg("trajectory", "string", '"squat", or a file in io.trajectory_dir (its positions, speeds, '
                    "accelerations and inverse-dynamics torques within the limits, docs/operations.md)",
                    range=f"at most {MAX_PATH_CHARS} characters"),)),
    Command("stabilizer", "Start (enable: true) or stop the stabilizer; in MOVING, over the played file.",
            Lane.MAILBOX, frozenset({S.HOLD, S.MOVING, S.STABILIZING}), (STABILIZER,), validate=_stabilizer,
            starts_motion=True, args=(
                Arg("enable", "boolean", "start or stop; in STABILIZING only false; a whole robot starts only "
                    "with its CoG and trunk's CoG clear of their walls (docs/operations.md); in MOVING, a "
                    "tree robot's stabilizer over a played file with a support column (docs/walking.md)"),
                Arg("params", "object", "stabilizer parameters by name (with enable: true)",
                    range=", ".join(f"{k} [{lo:g}, {hi:g}] {u}" for k, (_, lo, hi, u) in STABILIZER_PARAMS.items()),
                    required=False),
                Arg("support", "string", "the whole robot's support phase (with enable: true)",
                    range=", ".join(SUPPORT_NAMES), required=False))),
    Command("platform", "Tilt the platform in a quintic ramp.", Lane.MAILBOX, frozenset({S.HOLD, S.STABILIZING}),
            (PLATFORM,), validate=_platform, starts_motion=True, args=(
                Arg("alpha", "number", "tilt about x", "rad", "|alpha| <= control.platform_limit"),
                Arg("beta", "number", "tilt about y", "rad", "|beta| <= control.platform_limit"),
                Arg("duration", "number", "the ramp's time; each hinge's peak speed and acceleration within "
                    "its drives'", "s", DURATION))),
    Command("set_gains", "Set one axis task's PID gains.", Lane.MAILBOX, EVERY - {S.BOOT, S.ESTOP}, (SET_GAINS,),
            validate=_set_gains, args=(
                Arg("axis", "string", "the axis task (get_config: axes)"),
                Arg("kp", "number", "proportional gain", range="[0, io.max_gain]"),
                Arg("ki", "number", "integral gain", range="[0, io.max_gain]"),
                Arg("kd", "number", "derivative gain", range="[0, io.max_gain]"))),
    Command("inject_fault", "Raise a simulated bus or drive fault (sim, udp; raw in lock-step).", Lane.MAILBOX, EVERY - {S.BOOT, S.ESTOP},
            (INJECT_FAULT,), validate=_inject_fault, args=(
                Arg("fault", "string", "the fault", range=", ".join(k.name.lower() for k in FaultKind)),
                Arg("node", "integer", "the POWERLINK node (node faults)", range="1..239", required=False),
                Arg("axis", "string", "the bus axis (drive_fault, encoder_glitch)", required=False),
                Arg("count", "integer", "cycles affected (node faults; default 1)", range="1..1000", required=False),
                Arg("kind", "string", "drive_fault: " + ", ".join(DRIVE_FAULT_KINDS) + "; encoder_glitch: "
                    + ", ".join(GLITCH_KINDS), required=False),
                Arg("value", "number", "encoder_glitch's jump (default 0)", "rad", required=False),
                Arg("delay_s", "number", "delay_pres' delay (default 0)", "s", "[0, 0.01]", required=False))),
    Command("rig_motion", "Drive the Stewart-Gough rig: a built-in motion or an earthquake file.", Lane.MAILBOX,
            frozenset({S.HOLD, S.STABILIZING}), (RIG_MOTION, RIG_BUFFER), validate=_rig_motion, starts_motion=True,
            args=(
                Arg("motion", "string", "KIND or KIND:key=value,... (docs/rig.md), held within the rig's stroke "
                    "and its actuators' speed and acceleration",
                    range="at most 400 characters"),)),
)
"""Every command, in the order an unknown command's error lists them."""

BY_NAME: Mapping[str, Command] = {c.name: c for c in COMMANDS}
CODES: tuple[tuple[Command, Code], ...] = tuple(sorted(((c, k) for c in COMMANDS for k in c.codes),
                                                      key=lambda ck: ck[1].value))
"""Every numeric code with the command it belongs to, by value."""

H_ = TypeVar("H_")


def dispatch_table(handlers: Mapping[str, H_]) -> dict[int, tuple[H_, frozenset[State]]]:
    """The loop's dispatch table: code -> (its handler, the states its command is allowed in),
    binding each code's handler by the name its record gives; every name must be bound, once."""
    names = {k.handler for _, k in CODES}
    if names != set(handlers):
        raise ValueError(f"the loop's handlers must be exactly the registry's {sorted(names)}: "
                         f"missing {sorted(names - set(handlers))}, unknown {sorted(set(handlers) - names)}")
    return {k.value: (handlers[k.handler], c.states) for c, k in CODES}


def markdown() -> str:
    """docs/commands.md: the registry as tables (regenerate with ``python -m controller.daemon.commands``)."""
    lines = ["# Commands", "",
             "<!-- generated from controller/daemon/commands.py by `python -m controller.daemon.commands "
             "> docs/commands.md`; tests/controller/daemon/test_commands.py fails when it drifts -->", "",
             "Requests are `{\"id\", \"cmd\", \"args\"}` (docs/cycle.md). Lanes: `io` is answered by the I/O "
             "process; `mailbox` is the loop's bounded command mailbox, in order; `priority` has a slot of its "
             "own in shared memory that the loop reads first every cycle, so no flood of other commands "
             "delays it (requests that arrive before the loop read the last one share its reply).", "",
             "| command | lane | allowed in | code(s) | what it does |", "|---|---|---|---|---|"]
    for c in COMMANDS:
        states = "any" if c.states == EVERY else ", ".join(s.name for s in sorted(c.states))
        codes = ", ".join(f"{k.name} = {k.value}" for k in c.codes) or "—"
        lines.append(f"| `{c.name}` | {c.lane} | {states} | {codes} | {c.doc} |")
    lines += ["", "While the drives are being enabled only "
              + ", ".join(f"`{c.name}`" for c in COMMANDS if c.while_enabling) + " are accepted.", "",
              "Once the cycle log has failed (a full disk; `io.on_log_failure: refuse_motions`, the default) "
              + ", ".join(f"`{c.name}`" for c in COMMANDS if c.starts_motion)
              + " (`stabilizer` with `enable: true`) are refused with `log_failed`.", "",
              "## Arguments", "", "| command | argument | type | unit | range | required | meaning |",
              "|---|---|---|---|---|---|---|"]
    for c in COMMANDS:
        for a in c.args:
            lines.append(f"| `{c.name}` | `{a.name}` | {a.type} | {a.unit or '—'} | {a.range or '—'} | "
                         f"{'yes' if a.required else 'no'} | {a.doc} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
