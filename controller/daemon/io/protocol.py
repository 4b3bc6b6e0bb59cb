"""Command protocol: parse and validate one JSON request (pure, no I/O).

Request ``{"id": any, "cmd": str, "args": {...}}``; reply ``{"id", "ok": true, "result"}`` or
``{"id", "ok": false, "error": {"code", "message"}}``. Codes are :class:`controller.daemon.codes.Error`
names in lower case; a message is one sentence naming what was wrong and where
(docs/conventions.md). A request that passes :func:`validate` carries the float arguments the
loop reads from shared memory; each command's names, arguments, states and validation are its
record in the registry, :mod:`controller.daemon.commands` (docs/commands.md).
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from controller.daemon.arguments import Reject, kind_of
from controller.daemon.codes import MAX_REQUEST_BYTES, Error, State
from controller.daemon.commands import BY_NAME, CODES, COMMANDS, EMPTY, STABILIZER_PARAMS, Lane
from controller.daemon.shm import MAX_ARGS, Cmd
from models.chain.config import ACCELERATION_TIME
from models.rig.tilt import THESIS

MAX_ID_CHARS = 256

STEP = "step"
"""Stepped lock-step only: raises the loop's horizon (shared header, not the mailbox); answered
once the loop has run up to it."""

LOCAL = frozenset(c.name for c in COMMANDS if c.lane == Lane.IO) - {STEP}
"""Commands answered by the I/O process from shared memory, without the mailbox."""

MAILBOX: Mapping[str, tuple[Cmd, ...]] = {c.name: tuple(Cmd[k.name] for k in c.codes) for c in COMMANDS if c.codes}
"""The numeric command(s) each protocol command becomes (controller.daemon.commands)."""

SLOW_CHECKS: Mapping[Cmd, Any] = {Cmd[k.name]: k.check for _, k in CODES if k.check is not None}
"""Numeric commands whose arguments take a check too slow for the command thread (:func:`slow_check`)."""

ALLOWED: Mapping[str, frozenset[State]] = {c.name: c.states for c in COMMANDS}
"""States in which each command is accepted: its registry record (controller.daemon.commands),
from which the loop's own table (controller.daemon.loop.states) is derived too, so the I/O side
refuses early with the same answer the loop would give. ``stabilizer`` in STABILIZING only
accepts ``enable: false``."""

ARGUMENTS: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    c.name: (c.required, c.optional) for c in COMMANDS if c.args}
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
    bus_node_ids: tuple[int, ...] = ()  # the configured nodes, in the bus YAML's order (drivers.health)
    stepped: bool = False               # the loop runs in stepped lock-step (``step`` is served)
    max_step_cycles: int = 1_000_000    # one ``step`` advances at most this many cycles
    soft_limit_margin: float = 0.0      # rad inside qmin, qmax a trajectory must stay (the loop's soft limits)
    transmission_labels: tuple[str, ...] = ()   # each joint's transmission block (faults); empty: the bench leg's
    whole_body: bool = False            # the stabilizer is the whole robot's (``stabilizer`` takes ``support``)
    amax: np.ndarray | None = None      # rad/s² per joint (limits.acceleration); None: vmax / ACCELERATION_TIME
    torques: Any = None                 # a file's joint torques (controller.daemon.io.effort); None: unchecked
    start_posture: Any = None           # the whole-robot stabilizer's start check (controller.daemon.io.start_posture)
    platform_vmax: float = math.inf     # rad/s of the platform's hinges, rig_vmax m/s of the rig's actuators,
    platform_amax: float = math.inf     # and their accelerations: what their drives can make
    rig_vmax: float = math.inf          # (controller.daemon.run.axis_limits); inf: unchecked
    rig_amax: float = math.inf
    state: State = State.BOOT
    q: np.ndarray | None = None
    platform: np.ndarray | None = None  # the platform's (alpha, beta), rad, as the last telemetry record has it

    def __post_init__(self) -> None:
        n = len(self.joint_names)
        if self.amax is None:
            self.amax = np.asarray(self.vmax, dtype=float) / ACCELERATION_TIME
        self.qmin, self.qmax, self.vmax, self.amax = (np.asarray(a, dtype=float)
                                                      for a in (self.qmin, self.qmax, self.vmax, self.amax))
        if any(a.shape != (n,) for a in (self.qmin, self.qmax, self.vmax, self.amax)):
            raise ValueError(f"qmin, qmax, vmax and amax must each hold {n} values, one per joint")
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
                   amax=np.array([j.acceleration_limit for j in desc.joints]),
                   axis_names=names if axis_names is None else tuple(axis_names), **kw)

    def config_summary(self) -> dict[str, Any]:
        """The static configuration as a JSON-ready dict (``get_config``)."""
        return {"joints": list(self.joint_names), "axes": list(self.axis_names),
                "qmin": self.qmin.tolist(), "qmax": self.qmax.tolist(), "vmax": self.vmax.tolist(),
                "amax": self.amax.tolist(),
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
    """A rejected request: a stable code and a one-sentence message; ``exception`` is what a
    command's validator raised instead of refusing (a bug the server logs with the request)."""
    id: Any
    code: Error
    message: str
    exception: Exception | None = None

    @property
    def code_name(self) -> str:
        return self.code.name.lower()

    def to_bytes(self) -> bytes:
        return error_reply(self.id, self.code, self.message)


def ok_reply(id_: Any, result: dict[str, Any]) -> bytes:
    """An ``ok`` reply as strict JSON bytes."""
    return json.dumps({"id": id_, "ok": True, "result": result}, allow_nan=False).encode()


def error_reply(id_: Any, code: Error, message: str) -> bytes:
    """An error reply as strict JSON bytes."""
    return json.dumps({"id": id_, "ok": False, "error": {"code": code.name.lower(), "message": message}},
                      allow_nan=False).encode()


def _check_keys(cmd: str, args: dict[str, Any]) -> None:
    required, optional = ARGUMENTS.get(cmd, ((), ()))
    expected = required + optional
    for key in args:
        if key not in expected:
            listed = f"expected {', '.join(expected)}" if expected else "it takes no arguments"
            raise Reject(Error.BAD_ARGS, f"args.{key} is not an argument of {cmd} ({listed}).")
    for key in required:
        if key not in args:
            raise Reject(Error.BAD_ARGS, f"args.{key} is missing: {cmd} needs {', '.join(required)}.")


class Unchecked(Exception):
    """A command's validator raised instead of refusing: its arguments are refused (``bad_args``)
    and the exception it raised, ``cause``, is reported to be logged."""

    def __init__(self, cmd: str, cause: Exception) -> None:
        super().__init__(f"args of {cmd} could not be checked ({type(cause).__name__}): the request was "
                         "refused and nothing was posted.")
        self.cause = cause


def _command(cmd: str, args: dict[str, Any], ctx: Context) -> tuple[Cmd | None, np.ndarray]:
    """The command's registry record validates its arguments: the numeric command and its floats."""
    rec = BY_NAME[cmd]
    try:
        out = EMPTY if rec.validate is None else rec.validate(args, ctx)
    except Reject:
        raise
    except Exception as e:  # noqa: BLE001 -- a validator's bug refuses the request, never ends the process
        raise Unchecked(cmd, e) from e
    code, values = out if isinstance(out, tuple) else (rec.codes[0] if rec.codes else None, out)
    return (None if code is None else Cmd[code.name]), values


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are all distinct (RFC 8259 §4 leaves duplicates undefined:
    the last would silently win)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise Reject(Error.BAD_REQUEST, f'the key "{key[:40]}" appears twice in one JSON object.')
        out[key] = value
    return out


def _parse(raw: bytes) -> dict[str, Any]:
    if len(raw) > MAX_REQUEST_BYTES:
        raise Reject(Error.BAD_REQUEST, f"the request is {len(raw)} bytes, above the {MAX_REQUEST_BYTES}-byte limit.")
    try:
        msg = json.loads(raw.decode("utf-8"), object_pairs_hook=unique_keys)
    except UnicodeDecodeError as e:
        raise Reject(Error.BAD_JSON, f"the request is not UTF-8 text (byte {e.start}).") from None
    except json.JSONDecodeError as e:
        raise Reject(Error.BAD_JSON, f"the request is not valid JSON: {e.msg} at character {e.pos}.") from None
    except (RecursionError, ValueError):
        raise Reject(Error.BAD_JSON, "the request is not valid JSON (nested too deeply or a number too long).") from None
    if not isinstance(msg, dict):
        raise Reject(Error.BAD_REQUEST, f'the request must be a JSON object {{"id", "cmd", "args"}}, got {kind_of(msg)}.')
    return msg


def _request_id(msg: dict[str, Any]) -> Any:
    id_ = msg.get("id")
    try:
        text = json.dumps(id_, allow_nan=False)
    except (ValueError, RecursionError):
        raise Reject(Error.BAD_REQUEST, "the request id contains a non-finite number.") from None
    if len(text) > MAX_ID_CHARS:
        raise Reject(Error.BAD_REQUEST, f"the request id is {len(text)} characters of JSON, above the {MAX_ID_CHARS} limit.")
    return id_


def validate(raw: bytes, ctx: Context) -> Request | ErrorReply:
    """Parse and check one request against the robot limits and ``ctx.state``; a validator that
    raises instead of refusing (a bug) refuses the request as ``bad_args`` (``ErrorReply.exception``)."""
    id_ = None
    try:
        msg = _parse(raw)
        id_ = _request_id(msg)
        for key in msg:
            if key not in ("id", "cmd", "args"):
                raise Reject(Error.BAD_REQUEST, f'the request key "{key[:40]}" is unknown (expected id, cmd, args).')
        cmd = msg.get("cmd")
        if not isinstance(cmd, str):
            raise Reject(Error.BAD_REQUEST, f'the request needs "cmd" as a string, got {kind_of(cmd)}.')
        if cmd not in ALLOWED:
            raise Reject(Error.UNKNOWN_COMMAND, f"the command {cmd[:40]!r} is unknown (known: {', '.join(ALLOWED)}).")
        args = msg.get("args", {})
        if not isinstance(args, dict):
            raise Reject(Error.BAD_ARGS, f"args of {cmd} must be an object, got {kind_of(args)}.")
        _check_keys(cmd, args)
        mailbox, values = _command(cmd, args, ctx)
        if ctx.state not in ctx.allowed[cmd]:
            allowed = ", ".join(s.name for s in sorted(ctx.allowed[cmd])) or "no state"
            raise Reject(Error.NOT_ALLOWED, f"{cmd} is not allowed in state {ctx.state.name} (allowed in {allowed}).")
        return Request(id_, cmd, args, mailbox, values)
    except Reject as r:
        return ErrorReply(id_, r.code, r.message)
    except Unchecked as u:
        return ErrorReply(id_, Error.BAD_ARGS, str(u), u.cause)


def slow_check(req: Request, ctx: Context) -> ErrorReply | None:
    """The check of a valid request too slow for the command thread (the registry's ``Code.check``,
    e.g. a rig motion against the rig's stroke), which the I/O process runs in its worker thread
    before posting: None when it passes or the command has none."""
    check = SLOW_CHECKS.get(req.mailbox)
    try:
        if check is not None:
            check(req.values, ctx)
    except Reject as r:
        return ErrorReply(req.id, r.code, r.message)
    return None
