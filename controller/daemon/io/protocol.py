"""Command protocol: parse and validate one JSON request (pure, no I/O).

Request ``{"id": any, "cmd": str, "args": {...}}``; reply ``{"id", "ok": true, "result"}`` or
``{"id", "ok": false, "error": {"code", "message"}}``. Codes are :class:`controller.daemon.codes.Error`
names in lower case; a message is one sentence naming what was wrong and where
(docs/conventions.md). A request that passes :func:`validate` carries the float arguments the
loop reads from the shared-memory mailbox (layouts in :class:`controller.daemon.shm.Cmd`).
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from controller.daemon.codes import MAX_REQUEST_BYTES, Error, StabParam, State
from controller.daemon.codes import DRIVE_FAULT_KINDS, GLITCH_KINDS, NODE_FAULTS, FaultKind
from controller.daemon.loop.states import ALLOWED as LOOP_ALLOWED
from controller.daemon.trajectories import SQUAT_DEG, squat_excursion
from controller.daemon.shm import MAX_ARGS, Cmd
from models.common.support import SUPPORT_NAMES
from models.rig.tilt import THESIS

MAX_ID_CHARS = 256
MAX_PATH_CHARS = 4096
QUINTIC_PEAK = 1.875          # peak speed of a quintic move = 15/8 * |dq| / T

LOCAL = frozenset({"ping", "status", "stats", "get_config"})
"""Commands answered by the I/O process from shared memory, without the mailbox."""

STEP = "step"
"""Stepped lock-step only: raises the loop's horizon (shared header, not the mailbox); answered
once the loop has run up to it."""

MAILBOX: Mapping[str, tuple[Cmd, ...]] = {
    "enable": (Cmd.ENABLE,), "disable": (Cmd.DISABLE,), "reset": (Cmd.RESET,), "estop": (Cmd.ESTOP,),
    "stop": (Cmd.STOP,), "hold": (Cmd.HOLD,), "shutdown": (Cmd.SHUTDOWN,),
    "move_joints": (Cmd.MOVE_JOINTS,), "run": (Cmd.RUN_SQUAT, Cmd.RUN_BUFFER), "stabilizer": (Cmd.STABILIZER,),
    "platform": (Cmd.PLATFORM,), "set_gains": (Cmd.SET_GAINS,), "inject_fault": (Cmd.INJECT_FAULT,),
    "rig_motion": (Cmd.RIG_MOTION, Cmd.RIG_BUFFER),
}
"""The mailbox command(s) each protocol command becomes."""

ALLOWED: Mapping[str, frozenset[State]] = {
    **{name: frozenset(State) for name in sorted(LOCAL | {STEP})},
    **{name: frozenset(s for s in State if all(c in LOOP_ALLOWED[s] for c in cmds)) for name, cmds in MAILBOX.items()},
}
"""States in which each command is accepted: the loop's own table (controller.daemon.loop.states),
so the I/O side refuses early with the same answer the loop would give. ``stabilizer``
in STABILIZING only accepts ``enable: false``."""

_SIMPLE = frozenset({"enable", "disable", "reset", "estop", "stop", "hold", "shutdown"})

STABILIZER_PARAMS: Mapping[str, tuple[StabParam, float, float, str]] = {
    "saturation_distance": (StabParam.SATURATION_DISTANCE, 1e-4, 0.1, "m"),
    "admittance_damping": (StabParam.ADMITTANCE_DAMPING, 1.0, 1e4, "N s/m"),
    "admittance_mass": (StabParam.ADMITTANCE_MASS, 0.0, 100.0, "kg"),
    "max_speed": (StabParam.MAX_SPEED, 1e-3, 2.0, "m/s"),
    "posture_gain": (StabParam.POSTURE_GAIN, 0.0, 100.0, "1/s"),
    "attractor_gain": (StabParam.ATTRACTOR_GAIN, 0.0, 100.0, "N m^2"),
}
"""Stabilizer parameters settable at run time: (code, min, max, unit), bounds inclusive."""

ARGUMENTS: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "move_joints": (("q",), ("duration",)),
    "run": (("trajectory",), ()),
    "stabilizer": (("enable",), ("params", "support")),
    "platform": (("alpha", "beta", "duration"), ()),
    "rig_motion": (("motion",), ()),
    "set_gains": (("axis", "kp", "ki", "kd"), ()),
    "inject_fault": (("fault",), ("node", "axis", "count", "kind", "value", "delay_s")),
    "step": ((), ("cycles", "seconds")),
}
"""(required, optional) argument names; every other command takes none."""


@dataclass
class Context:
    """What validation needs: the robot's limits (fixed) and the loop's live state.

    ``state`` and ``q`` are refreshed by the server from shared memory before each request
    (``q`` is None until the first telemetry record).
    """
    joint_names: tuple[str, ...]
    qmin: np.ndarray
    qmax: np.ndarray
    vmax: np.ndarray
    axis_names: tuple[str, ...]
    period: float = 0.002
    platform_limit: float = math.radians(25.0)
    rig: Any = None                     # the Stewart-Gough rig's StewartModel (rig_motion), None: the hinges
    rig_convention: int = THESIS        # what a rig tilt's (α, β) mean on the plate (models.rig.tilt)
    max_duration: float = 600.0
    max_gain: float = 1e6
    allowed: Mapping[str, frozenset[State]] = field(default_factory=lambda: dict(ALLOWED))
    summary: dict[str, Any] = field(default_factory=dict)
    bus_axes: tuple[str, ...] = ()      # bus axis names (inject_fault); empty: no simulated bus
    bus_nodes: tuple[int, ...] = ()     # POWERLINK node of each bus axis (named in faults)
    stepped: bool = False               # the loop runs in stepped lock-step (``step`` is served)
    max_step_cycles: int = 1_000_000    # one ``step`` advances at most this many cycles
    soft_limit_margin: float = 0.0      # rad inside qmin, qmax a trajectory must stay (the loop's soft limits)
    transmission_labels: tuple[str, ...] = ()   # each joint's transmission block (faults); empty: the bench leg's
    whole_body: bool = False            # the stabilizer is the whole robot's (``stabilizer`` takes ``support``)
    state: State = State.BOOT
    q: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.joint_names)
        self.qmin, self.qmax, self.vmax = (np.asarray(a, dtype=float) for a in (self.qmin, self.qmax, self.vmax))
        if any(a.shape != (n,) for a in (self.qmin, self.qmax, self.vmax)):
            raise ValueError(f"qmin, qmax and vmax must each hold {n} values, one per joint")
        if len(self.axis_names) != n:
            raise ValueError(f"set_gains addresses the loop's joint-space axis tasks: give {n} axis names, "
                             f"got {len(self.axis_names)}")
        if n + 1 > MAX_ARGS:
            raise ValueError(f"{n} joints do not fit a mailbox slot of {MAX_ARGS} arguments")
        unknown = set(self.allowed) ^ set(ALLOWED)
        if unknown:
            raise ValueError(f"the allowed-commands table must list exactly {sorted(ALLOWED)}, differs on {sorted(unknown)}")

    @classmethod
    def from_description(cls, desc: Any, axis_names: tuple[str, ...] | None = None, **kw: Any) -> Context:
        """From a :class:`models.RobotDescription`; the axes default to the joint names."""
        names = tuple(j.name for j in desc.joints)
        tr = getattr(desc, "transmission", None)
        kw.setdefault("transmission_labels", tr.labels if tr is not None else ())
        return cls(joint_names=names,
                   qmin=np.array([j.position_limits[0] for j in desc.joints]),
                   qmax=np.array([j.position_limits[1] for j in desc.joints]),
                   vmax=np.array([j.velocity_limit for j in desc.joints]),
                   axis_names=names if axis_names is None else tuple(axis_names), **kw)

    def config_summary(self) -> dict[str, Any]:
        """The static configuration as a JSON-ready dict (``get_config``)."""
        return {"joints": list(self.joint_names), "axes": list(self.axis_names),
                "qmin": self.qmin.tolist(), "qmax": self.qmax.tolist(), "vmax": self.vmax.tolist(),
                "period": self.period, "platform_limit": self.platform_limit,
                "max_duration": self.max_duration, "max_gain": self.max_gain,
                "stabilizer_params": {k: [lo, hi, unit] for k, (_, lo, hi, unit) in STABILIZER_PARAMS.items()},
                "allowed": {c: sorted(s.name for s in states) for c, states in self.allowed.items()},
                **self.summary}


@dataclass(frozen=True)
class Request:
    """A valid request. ``mailbox`` is None for commands the I/O process answers itself;
    ``values`` are the mailbox float arguments (for ``RUN_BUFFER`` and ``RIG_BUFFER`` the file is in
    ``args``)."""
    id: Any
    cmd: str
    args: dict[str, Any]
    mailbox: Cmd | None
    values: np.ndarray


@dataclass(frozen=True)
class ErrorReply:
    """A rejected request: a stable code and a one-sentence message."""
    id: Any
    code: Error
    message: str

    @property
    def code_name(self) -> str:
        return self.code.name.lower()

    def to_bytes(self) -> bytes:
        return error_reply(self.id, self.code, self.message)


class _Reject(Exception):
    def __init__(self, code: Error, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def ok_reply(id_: Any, result: dict[str, Any]) -> bytes:
    """An ``ok`` reply as strict JSON bytes."""
    return json.dumps({"id": id_, "ok": True, "result": result}, allow_nan=False).encode()


def error_reply(id_: Any, code: Error, message: str) -> bytes:
    """An error reply as strict JSON bytes."""
    return json.dumps({"id": id_, "ok": False, "error": {"code": code.name.lower(), "message": message}},
                      allow_nan=False).encode()


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f"the string {v[:40]!r}"
    if isinstance(v, list):
        return f"a list of {len(v)}"
    if isinstance(v, dict):
        return "an object"
    return repr(v)


def _number(where: str, v: Any, unit: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _Reject(Error.BAD_ARGS, f"{where} must be a number{f' in {unit}' if unit else ''}, got {_kind(v)}.")
    try:
        x = float(v)
    except OverflowError:
        raise _Reject(Error.OUT_OF_RANGE, f"{where} is an integer too large for a float.") from None
    if not math.isfinite(x):
        raise _Reject(Error.NOT_FINITE, f"{where} = {x} is not a finite number.")
    return x


def _within(where: str, x: float, lo: float, hi: float, unit: str) -> float:
    u = f" {unit}" if unit else ""
    if not lo <= x <= hi:
        raise _Reject(Error.OUT_OF_RANGE, f"{where} = {x:g}{u} is outside [{lo:g}, {hi:g}]{u}.")
    return x


def _duration(where: str, v: Any, ctx: Context) -> float:
    x = _number(where, v, "s")
    if not 0.0 < x <= ctx.max_duration:
        raise _Reject(Error.OUT_OF_RANGE, f"{where} = {x:g} s is outside (0, {ctx.max_duration:g}] s.")
    return x


def _bool(where: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise _Reject(Error.BAD_ARGS, f"{where} must be true or false, got {_kind(v)}.")
    return v


def _check_keys(cmd: str, args: dict[str, Any]) -> None:
    required, optional = ARGUMENTS.get(cmd, ((), ()))
    expected = required + optional
    for key in args:
        if key not in expected:
            listed = f"expected {', '.join(expected)}" if expected else "it takes no arguments"
            raise _Reject(Error.BAD_ARGS, f"args.{key} is not an argument of {cmd} ({listed}).")
    for key in required:
        if key not in args:
            raise _Reject(Error.BAD_ARGS, f"args.{key} is missing: {cmd} needs {', '.join(required)}.")


def _move_joints(args: dict[str, Any], ctx: Context) -> np.ndarray:
    """``q``: every joint's angle (a list in the robot's joint order) or some joints by name (an
    object); a joint not named keeps its current reference (NaN in the mailbox: the loop fills it)."""
    names, n = ctx.joint_names, len(ctx.joint_names)
    q = args["q"]
    out = np.full(n + 1, np.nan)
    if isinstance(q, dict):
        if not q:
            raise _Reject(Error.BAD_ARGS, f"args.q names no joint (joints: {', '.join(names)}).")
        for name in q:
            if name not in names:
                raise _Reject(Error.BAD_ARGS, f"args.q.{name[:40]} is not a joint of this robot "
                                              f"(joints: {', '.join(names)}).")
        given = [(names.index(name), f"args.q.{name}", v) for name, v in q.items()]
    elif isinstance(q, list) and len(q) == n:
        given = [(i, f"args.q[{i}]", v) for i, v in enumerate(q)]
    else:
        raise _Reject(Error.BAD_ARGS, f"args.q must be a list of {n} joint angles in rad "
                                      f"({', '.join(names)}) or an object of some of them by name, got {_kind(q)}.")
    for i, where, v in given:
        x = _number(where, v, "rad")
        if x < ctx.qmin[i]:
            raise _Reject(Error.OUT_OF_RANGE, f"{where} = {x:g} rad is below the {names[i]} limit {ctx.qmin[i]:g} rad.")
        if x > ctx.qmax[i]:
            raise _Reject(Error.OUT_OF_RANGE, f"{where} = {x:g} rad is above the {names[i]} limit {ctx.qmax[i]:g} rad.")
        out[i] = x
    out[n] = -1.0
    if "duration" in args:
        t = _duration("args.duration", args["duration"], ctx)
        if ctx.q is not None:
            target = np.where(np.isnan(out[:n]), ctx.q, out[:n])        # a joint not named stays
            speed = QUINTIC_PEAK * np.abs(target - ctx.q) / t
            i = int(np.argmax(speed / ctx.vmax))
            if speed[i] > ctx.vmax[i]:
                raise _Reject(Error.OUT_OF_RANGE, f"args.duration = {t:g} s is too short: {names[i]} would peak at "
                                                  f"{speed[i]:.3g} rad/s, above its {ctx.vmax[i]:g} rad/s limit.")
        out[n] = t
    return out


def _stabilizer(args: dict[str, Any], ctx: Context) -> np.ndarray:
    enable = _bool("args.enable", args["enable"])
    params = args.get("params", {})
    if not isinstance(params, dict):
        raise _Reject(Error.BAD_ARGS, f"args.params must be an object of stabilizer parameters, got {_kind(params)}.")
    if params and not enable:
        raise _Reject(Error.BAD_ARGS, "args.params is only accepted with enable: true.")
    if ctx.state == State.STABILIZING and enable:
        raise _Reject(Error.NOT_ALLOWED, "the stabilizer is already running: only enable: false is accepted in STABILIZING.")
    out = [1.0 if enable else 0.0]
    support = args.get("support")
    if support is not None:
        if not ctx.whole_body:
            raise _Reject(Error.BAD_ARGS, "args.support is for the whole-robot stabilizer (a tree robot); "
                                          "the bench leg stands on its one foot.")
        if not enable:
            raise _Reject(Error.BAD_ARGS, "args.support is only accepted with enable: true.")
        if support not in SUPPORT_NAMES:
            raise _Reject(Error.BAD_ARGS, f"args.support must be one of {', '.join(SUPPORT_NAMES)}, "
                                          f"got {_kind(support)}.")
        out += [float(StabParam.SUPPORT), float(SUPPORT_NAMES.index(support))]
    for key, v in params.items():
        if key not in STABILIZER_PARAMS:
            raise _Reject(Error.BAD_ARGS, f"args.params.{key} is not a stabilizer parameter "
                                          f"(expected {', '.join(STABILIZER_PARAMS)}).")
        code, lo, hi, unit = STABILIZER_PARAMS[key]
        out += [float(code), _within(f"args.params.{key}", _number(f"args.params.{key}", v, unit), lo, hi, unit)]
    return np.array(out)


def _rig_motion(args: dict[str, Any], ctx: Context) -> tuple[Cmd, np.ndarray]:
    """A built-in rig motion (controller.daemon.rig.spec), refused unless the rig's stroke holds all of it;
    an earthquake file is RIG_BUFFER, loaded and checked by the server (the file is in ``args``)."""
    from controller.daemon.rig.motions import MotionError
    from controller.daemon.rig.spec import file_motion, motion_args, motion_from_args
    from controller.daemon.rig.stroke import check_motion

    if ctx.rig is None:
        raise _Reject(Error.NOT_SUPPORTED, "rig_motion needs the Stewart-Gough rig (control.platform.kind: stewart).")
    spec = args["motion"]
    if not isinstance(spec, str) or len(spec) > 400:
        raise _Reject(Error.BAD_ARGS, f"args.motion must be a string KIND or KIND:key=value,... , got {_kind(spec)}.")
    try:
        if file_motion(spec) is not None:
            return Cmd.RIG_BUFFER, _EMPTY
        out = motion_args(spec)
    except MotionError as exc:
        raise _Reject(Error.BAD_ARGS, f"args.motion: {exc}.") from None
    try:
        check_motion(ctx.rig, motion_from_args(out, ctx.rig_convention))
    except MotionError as exc:
        raise _Reject(Error.OUT_OF_RANGE, f"args.motion: {exc}.") from None
    return Cmd.RIG_MOTION, out


def _platform(args: dict[str, Any], ctx: Context) -> np.ndarray:
    lim = ctx.platform_limit
    out = np.empty(3)
    for i, key in enumerate(("alpha", "beta")):
        x = _number(f"args.{key}", args[key], "rad")
        if abs(x) > lim:
            raise _Reject(Error.OUT_OF_RANGE, f"args.{key} = {x:g} rad ({math.degrees(x):.1f} deg) exceeds the "
                                              f"platform limit of {lim:g} rad ({math.degrees(lim):.1f} deg).")
        out[i] = x
    out[2] = _duration("args.duration", args["duration"], ctx)
    return out


def _set_gains(args: dict[str, Any], ctx: Context) -> np.ndarray:
    axis = args["axis"]
    if not isinstance(axis, str) or axis not in ctx.axis_names:
        raise _Reject(Error.BAD_ARGS, f"args.axis must be one of {', '.join(ctx.axis_names)}, got {_kind(axis)}.")
    out = [float(ctx.axis_names.index(axis))]
    for key in ("kp", "ki", "kd"):
        out.append(_within(f"args.{key}", _number(f"args.{key}", args[key], ""), 0.0, ctx.max_gain, ""))
    return np.array(out)


def _integer(where: str, v: Any, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise _Reject(Error.BAD_ARGS, f"{where} must be an integer in {lo}..{hi}, got {_kind(v)}.")
    return v


def _inject_fault(args: dict[str, Any], ctx: Context) -> np.ndarray:
    """Simulated fault (drivers.sim.faults): [kind, target, count or sub-kind, value]."""
    if not ctx.bus_axes:
        raise _Reject(Error.NOT_SUPPORTED, "fault injection needs a simulated bus (sim or udp backend).")
    name = args["fault"]
    names = {k.name.lower(): k for k in FaultKind}
    if not isinstance(name, str) or name not in names:
        raise _Reject(Error.BAD_ARGS, f"args.fault must be one of {', '.join(names)}, got {_kind(name)}.")
    kind = names[name]
    if kind in NODE_FAULTS:
        extra = set(args) - {"fault", "node", "count", "delay_s"}
        if "node" not in args or extra:
            raise _Reject(Error.BAD_ARGS, f"{name} takes node (and count, delay_s for delay_pres); "
                                          f"got {', '.join(sorted(set(args) - {'fault'})) or 'nothing'}.")
        node = _integer("args.node", args["node"], 1, 239)
        count = _integer("args.count", args.get("count", 1), 1, 1000)
        delay = _within("args.delay_s", _number("args.delay_s", args.get("delay_s", 0.0), "s"), 0.0, 0.01, "s")
        return np.array([float(kind), float(node), float(count), delay])
    axis = args.get("axis")
    if not isinstance(axis, str) or axis not in ctx.bus_axes:
        raise _Reject(Error.BAD_ARGS, f"args.axis must be one of {', '.join(ctx.bus_axes)}, got {_kind(axis)}.")
    kinds = DRIVE_FAULT_KINDS if kind == FaultKind.DRIVE_FAULT else GLITCH_KINDS
    sub = args.get("kind")
    if sub not in kinds:
        raise _Reject(Error.BAD_ARGS, f"args.kind must be one of {', '.join(kinds)}, got {_kind(sub)}.")
    value = _number("args.value", args.get("value", 0.0), "rad")
    return np.array([float(kind), float(ctx.bus_axes.index(axis)), float(kinds.index(sub)), value])


def _step(args: dict[str, Any], ctx: Context) -> np.ndarray:
    """Cycles to advance: ``cycles``, or ``seconds`` rounded to whole periods (exactly one)."""
    if not ctx.stepped:
        raise _Reject(Error.NOT_SUPPORTED, "step needs a stepped lock-step daemon (bipd run --stepped, "
                                           "loop.stepped: true); this one runs on its own clock.")
    if ("cycles" in args) == ("seconds" in args):
        raise _Reject(Error.BAD_ARGS, "step takes exactly one of args.cycles and args.seconds.")
    if "cycles" in args:
        cycles = _integer("args.cycles", args["cycles"], 1, ctx.max_step_cycles)
    else:
        seconds = _number("args.seconds", args["seconds"], "s")
        cycles = round(seconds / ctx.period)
        if not 1 <= cycles <= ctx.max_step_cycles:
            raise _Reject(Error.OUT_OF_RANGE, f"args.seconds = {seconds:g} s is {cycles} cycles of {ctx.period:g} s, "
                                              f"outside 1..{ctx.max_step_cycles}.")
    return np.array([float(cycles)])


def _run(args: dict[str, Any], ctx: Context) -> Cmd:
    traj = args["trajectory"]
    if not isinstance(traj, str) or not traj or len(traj) > MAX_PATH_CHARS:
        raise _Reject(Error.BAD_ARGS, f'args.trajectory must be "squat" or a file path, got {_kind(traj)}.')
    if traj != "squat":
        return Cmd.RUN_BUFFER
    _squat_fits(ctx)
    return Cmd.RUN_SQUAT


def _squat_fits(ctx: Context) -> None:
    """The thesis squat goes ankle +16°, knee −85°, hip +70° from the current posture (thesis
    §2.6.1): refuse it where the bottom would leave the soft limits (the loop checks again
    from its reference, the final authority)."""
    try:
        step = squat_excursion(ctx.joint_names)
    except ValueError as e:
        raise _Reject(Error.NOT_SUPPORTED, f"{e}.") from None
    if ctx.q is None or ctx.state not in ctx.allowed["run"]:     # no posture yet, or refused by state
        return
    lo, hi = ctx.qmin + ctx.soft_limit_margin, ctx.qmax - ctx.soft_limit_margin
    for i, name in enumerate(ctx.joint_names):
        bottom = ctx.q[i] + step[i]
        if not lo[i] <= bottom <= hi[i]:
            side, limit = ("below", lo[i]) if bottom < lo[i] else ("above", hi[i])
            raise _Reject(Error.OUT_OF_RANGE, f"the squat moves {name} by {SQUAT_DEG[name]:+g} deg: from "
                          f"{ctx.q[i]:.3f} rad it would reach {bottom:.3f} rad, {side} its limit {limit:.3f} rad.")


_EMPTY = np.empty(0)


def _command(cmd: str, args: dict[str, Any], ctx: Context) -> tuple[Cmd | None, np.ndarray]:
    if cmd == STEP:
        return None, _step(args, ctx)
    if cmd in LOCAL:
        return None, _EMPTY
    if cmd in _SIMPLE:
        return MAILBOX[cmd][0], _EMPTY
    if cmd == "move_joints":
        return Cmd.MOVE_JOINTS, _move_joints(args, ctx)
    if cmd == "run":
        return _run(args, ctx), _EMPTY
    if cmd == "stabilizer":
        return Cmd.STABILIZER, _stabilizer(args, ctx)
    if cmd == "platform":
        return Cmd.PLATFORM, _platform(args, ctx)
    if cmd == "inject_fault":
        return Cmd.INJECT_FAULT, _inject_fault(args, ctx)
    if cmd == "rig_motion":
        return _rig_motion(args, ctx)
    return Cmd.SET_GAINS, _set_gains(args, ctx)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are all distinct (RFC 8259 §4 leaves duplicates undefined:
    the last would silently win)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Reject(Error.BAD_REQUEST, f'the key "{key[:40]}" appears twice in one JSON object.')
        out[key] = value
    return out


def _parse(raw: bytes) -> dict[str, Any]:
    if len(raw) > MAX_REQUEST_BYTES:
        raise _Reject(Error.BAD_REQUEST, f"the request is {len(raw)} bytes, above the {MAX_REQUEST_BYTES}-byte limit.")
    try:
        msg = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique_keys)
    except UnicodeDecodeError as e:
        raise _Reject(Error.BAD_JSON, f"the request is not UTF-8 text (byte {e.start}).") from None
    except json.JSONDecodeError as e:
        raise _Reject(Error.BAD_JSON, f"the request is not valid JSON: {e.msg} at character {e.pos}.") from None
    except (RecursionError, ValueError):
        raise _Reject(Error.BAD_JSON, "the request is not valid JSON (nested too deeply or a number too long).") from None
    if not isinstance(msg, dict):
        raise _Reject(Error.BAD_REQUEST, f'the request must be a JSON object {{"id", "cmd", "args"}}, got {_kind(msg)}.')
    return msg


def _request_id(msg: dict[str, Any]) -> Any:
    id_ = msg.get("id")
    try:
        text = json.dumps(id_, allow_nan=False)
    except (ValueError, RecursionError):
        raise _Reject(Error.BAD_REQUEST, "the request id contains a non-finite number.") from None
    if len(text) > MAX_ID_CHARS:
        raise _Reject(Error.BAD_REQUEST, f"the request id is {len(text)} characters of JSON, above the {MAX_ID_CHARS} limit.")
    return id_


def validate(raw: bytes, ctx: Context) -> Request | ErrorReply:
    """Parse and check one request against the robot limits and ``ctx.state``."""
    id_ = None
    try:
        msg = _parse(raw)
        id_ = _request_id(msg)
        for key in msg:
            if key not in ("id", "cmd", "args"):
                raise _Reject(Error.BAD_REQUEST, f'the request key "{key[:40]}" is unknown (expected id, cmd, args).')
        cmd = msg.get("cmd")
        if not isinstance(cmd, str):
            raise _Reject(Error.BAD_REQUEST, f'the request needs "cmd" as a string, got {_kind(cmd)}.')
        if cmd not in ALLOWED:
            raise _Reject(Error.UNKNOWN_COMMAND, f"the command {cmd[:40]!r} is unknown (known: {', '.join(ALLOWED)}).")
        args = msg.get("args", {})
        if not isinstance(args, dict):
            raise _Reject(Error.BAD_ARGS, f"args of {cmd} must be an object, got {_kind(args)}.")
        _check_keys(cmd, args)
        mailbox, values = _command(cmd, args, ctx)
        if ctx.state not in ctx.allowed[cmd]:
            allowed = ", ".join(s.name for s in sorted(ctx.allowed[cmd])) or "no state"
            raise _Reject(Error.NOT_ALLOWED, f"{cmd} is not allowed in state {ctx.state.name} (allowed in {allowed}).")
        return Request(id_, cmd, args, mailbox, values)
    except _Reject as r:
        return ErrorReply(id_, r.code, r.message)
