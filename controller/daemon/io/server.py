"""The I/O process's ZMQ side: commands in (ROUTER), telemetry out (PUB), shared memory between.

One thread, one :class:`zmq.Poller` (zguide ch. 3, ROUTER; ch. 5, PUB with a high-water
mark). Each request is validated here (:mod:`controller.daemon.io.protocol`); a valid command is
posted with a token, to its priority lane (``estop``, ``disable``: never behind the bounded
mailbox, :mod:`controller.daemon.shm`) or to the mailbox, and answered with the loop's reply for
that token. A mailbox command the loop has not taken ``reply_timeout`` after it was posted is
withdrawn (real time only); the loop then answers it ``timeout`` when it reaches it, unless it took
it first, and never applies a withdrawn command, so ``timeout`` always means "not applied". A
priority command is never withdrawn; in stepped lock-step no command is (the paused loop takes
commands between steps). Until the loop has left (``H.LOOP_EXIT``), every command gets the loop's
own answer. A trajectory file (only from
``trajectory_dir``), as a recorded rig motion (an earthquake CSV, same folder: read, made
drift-free and checked against the rig's stroke, :mod:`controller.daemon.rig.earthquake`), is parsed
in a worker thread, as is a check too slow for the command thread (a built-in rig motion against
the rig's stroke: ``Code.check`` in :mod:`controller.daemon.commands`), so that ``estop``, ``stop``,
``hold`` and ``disable`` are answered while it runs (and cancel it); messages above
``max_request_bytes`` never reach the handler (ZMQ_MAXMSGSIZE drops the sender). ``ping``,
``status``, ``stats`` and ``get_config`` are answered from shared memory. Every valid request
counts one client heartbeat in the shared header (``H.HEARTBEATS``), which feeds the loop's
motion watchdog.
In stepped lock-step, ``step`` raises the loop's horizon (``H.HORIZON``) and is answered
once the loop has run up to it and its telemetry and events are published. Every pass
(about 1 ms) also drains the replies, the events ring (``event`` frames) and then the
telemetry ring (cycle log, ``telemetry`` frames every ``decimation`` records) up to the
record count read first, so a cycle's events are published before its telemetry frame, at
most ``RING_SLICE`` records a pass: a backlog (a stepped loop running a long step) is worked
off between looks at the command socket, never ahead of the requests; and it sends ``stats``
frames once per ``stats_period``. The loop process never waits for
any of this (docs/cycle.md). A cycle log write that fails (a full disk) is a WARNING event
(reason LOG_FAILED) and ``status.log``; ``on_log_failure`` says whether new motions are then
refused (docs/logs.md).
"""
from __future__ import annotations

import errno
import json
import sys
import threading
import time
import traceback
from collections import deque
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Self

import numpy as np
import zmq

from controller.daemon.codes import MAX_REQUEST_BYTES, ON_LOG_FAILURE, Error, Event, State
from controller.daemon.commands import CODES, COMMANDS
from controller.daemon.rig.earthquake import load_earthquake
from controller.daemon.rig.motions import MotionError
from controller.daemon.rig.spec import file_motion
from controller.daemon.rig.stroke import check_motion
from controller.daemon.shm import (
    LANES,
    Cmd,
    H,
    SharedBlock,
    post_command,
    post_priority,
    posted_priority,
    read_events,
    read_record,
    take_replies,
    withdraw_commands,
)
from controller.daemon.telemetry import RecordLayout, stats_summary

from controller.daemon.endpoints import ServerCurve, is_ipv6
from controller.daemon.io.curve import check_endpoints, secure_server, start_authenticator
from controller.daemon.io.live import LiveView
from controller.daemon.io.log import CycleLogWriter
from controller.daemon.io.playback import TrajectoryFileError, load_trajectory
from controller.daemon.io.messages import (
    Names,
    event_message,
    finite_or_none,
    log_failed_message,
    name_of,
    profiler_summary,
    telemetry_message,
)
from controller.daemon.io.protocol import (
    SLOW_CHECKS,
    STEP,
    Context,
    ErrorReply,
    Request,
    error_reply,
    ok_reply,
    slow_check,
    validate,
)

TOPICS = (b"telemetry", b"event", b"stats")
FAULT_KEYS = ("fault_name", "fault_code", "fault_axis", "fault_node", "fault_joint", "fault_detail")
CANCELS_LOADING = frozenset(c.name for c in COMMANDS if c.cancels_loading)
"""Commands that cancel a trajectory file still being loaded (it never reaches the loop)."""
FILE_COMMANDS = frozenset(Cmd[k.name] for _, k in CODES if k.file)
"""Mailbox commands whose file the worker thread loads into shared memory first."""
MOTIONS = frozenset(c.name for c in COMMANDS if c.starts_motion)
"""Commands that start a motion (``stabilizer`` only with ``enable: true``)."""
LANE_OF = {cmd: lane for lane, cmd in enumerate(LANES)}
"""The priority lane of each command that has one (shm.LANES)."""
RING_SLICE = 256
"""Telemetry records handled per pass, between two looks at the command socket."""


class BindError(OSError):
    """An endpoint that cannot be bound; ``key`` is ``command`` or ``telemetry``."""

    def __init__(self, key: str, endpoint: str, error: zmq.ZMQError) -> None:
        in_use = error.errno == errno.EADDRINUSE
        super().__init__(f"{endpoint} is in use (another bipd?)" if in_use
                         else f"cannot bind {endpoint}: {error.strerror}")
        self.key, self.endpoint = key, endpoint


@dataclass(frozen=True)
class Endpoints:
    """Where to bind; ``tcp://127.0.0.1:*`` picks a free port (see ``IoServer.*_endpoint``)."""
    command: str = "tcp://127.0.0.1:5555"
    telemetry: str = "tcp://127.0.0.1:5556"


@dataclass
class IoCounters:
    """What the I/O side counts (reported by ``stats``)."""
    requests: int = 0
    rejected: int = 0
    busy: int = 0
    timeouts: int = 0
    late_replies: int = 0
    internal_errors: int = 0
    heartbeats: int = 0
    records: int = 0
    ring_drops: int = 0
    events: int = 0
    event_drops: int = 0
    pub_sent: int = 0
    pub_drops: int = 0


@dataclass
class _Pending:
    envelope: list[bytes]
    id: Any
    cmd: str
    mailbox: Cmd
    deadline: float                     # reply_timeout after it was posted
    riders: list[tuple[list[bytes], Any]] = field(default_factory=list)   # same priority request, same reply
    withdrawn: bool = False             # given up on: the loop answers TIMEOUT unless it took it first

    def waiters(self) -> list[tuple[list[bytes], Any]]:
        """(envelope, id) of every request this reply answers."""
        return [(self.envelope, self.id), *self.riders]


@dataclass
class _Step:
    envelope: list[bytes]
    id: Any
    horizon: int
    records: int | None = None          # the ring's record count once the loop reached the horizon


@dataclass
class _Loading:
    """A file being parsed by the worker thread for a ``run`` (trajectory) or ``rig_motion``
    (earthquake) request, or (``path`` None) a request's slow check (``protocol.slow_check``)."""
    envelope: list[bytes]
    req: Request
    path: Path | None
    done: threading.Event
    result: Any = None        # the samples (a motion for the rig), a one-sentence problem, the check's ErrorReply
    cancelled_by: str | None = None

    @property
    def subject(self) -> str:
        """What is being loaded or checked, as a reply names it."""
        return f"{self.path.name:.80}" if self.path is not None else f"the {self.req.cmd} request's check"


def _short(exc: Exception) -> str:
    """An exception in a reply: its type and the start of its first line."""
    text = str(exc).strip().splitlines()[0][:80].replace(". ", "; ") if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _loop_error(code: int) -> Error:
    """The error code a loop refusal carries (INTERNAL when it is not a known error)."""
    try:
        err = Error(code)
    except ValueError:
        return Error.INTERNAL
    return Error.INTERNAL if err == Error.OK else err


class IoServer:
    """Serves commands and telemetry for one shared block.

    ``ctx`` holds the robot limits (its ``state``/``q`` are refreshed from shared memory);
    ``log``, if given, receives every record read and is closed by :meth:`close`;
    ``curve`` is required when an endpoint binds beyond loopback; a bind that fails raises
    :class:`BindError`. ``trajectory_dir`` is the only folder ``run`` reads files from (None:
    file trajectories are refused), each at most ``trajectory_max_bytes``. A command the loop
    accepts is answered ``{"accepted": true, "state": <state right after it>}``; some
    transitions complete later (``enable`` waits for the drives, ``stop`` decelerates).
    """

    def __init__(self, block: SharedBlock, ctx: Context, endpoints: Endpoints = Endpoints(),
                 decimation: int = 10, *, reply_timeout: float = 0.1, sndhwm: int = 100,
                 stats_period: float = 1.0, stats_window: int = 5000,
                 log: CycleLogWriter | None = None, curve: ServerCurve | None = None,
                 context: zmq.Context | None = None, trajectory_dir: Path | None = None,
                 trajectory_max_bytes: int = 16 << 20, max_request_bytes: int = MAX_REQUEST_BYTES,
                 on_log_failure: str = "refuse_motions") -> None:
        if decimation < 1:
            raise ValueError(f"decimation must be at least 1, got {decimation}")
        if on_log_failure not in ON_LOG_FAILURE:
            raise ValueError(f"on_log_failure must be one of {ON_LOG_FAILURE}, got {on_log_failure!r}")
        self.layout = RecordLayout(len(ctx.joint_names))
        self.names = Names(ctx.joint_names, ctx.bus_axes, ctx.bus_nodes, ctx.transmission_labels)
        if block.layout.record_size != self.layout.size or block.layout.n_joints != len(ctx.joint_names):
            raise ValueError(f"the shared block holds {block.layout.n_joints} joints and records of "
                             f"{block.layout.record_size} floats; the context needs {len(ctx.joint_names)} "
                             f"and {self.layout.size}")
        check_endpoints([endpoints.command, endpoints.telemetry], curve)
        self.block, self.ctx, self.decimation = block, ctx, decimation
        self.reply_timeout, self.stats_period = reply_timeout, stats_period
        self.sndhwm = sndhwm
        self.trajectory_dir = None if trajectory_dir is None else Path(trajectory_dir).resolve()
        self.trajectory_max_bytes = trajectory_max_bytes
        self.log = log
        self.live: LiveView | None = None        # the Foxglove live view, if enabled (see controller.daemon.io.live)
        self.log_error: str | None = None       # the cycle log's failure, once it failed
        self.on_log_failure = on_log_failure
        self.loop_error: str | None = None     # set by the daemon when the loop process died
        self.counters = IoCounters()

        self._own_context = context is None
        self._zctx = zmq.Context() if context is None else context
        self._auth = start_authenticator(self._zctx, curve) if curve is not None else None
        self._router = self._zctx.socket(zmq.ROUTER)
        self._pub = self._zctx.socket(zmq.PUB)
        for sock in (self._router, self._pub):
            sock.linger = 0
            if curve is not None:
                secure_server(sock, curve)
        self._pub.sndhwm = sndhwm
        self._pub.setsockopt(zmq.XPUB_NODROP, 1)     # a full queue is an EAGAIN we can count
        self._router.maxmsgsize = max_request_bytes
        for sock, key, ep in ((self._router, "command", endpoints.command),
                              (self._pub, "telemetry", endpoints.telemetry)):
            try:
                sock.ipv6 = is_ipv6(ep)
                sock.bind(ep)
            except zmq.ZMQError as e:
                self._close_sockets()
                raise BindError(key, ep, e) from None
        self.command_endpoint: str = self._router.getsockopt_string(zmq.LAST_ENDPOINT)
        self.telemetry_endpoint: str = self._pub.getsockopt_string(zmq.LAST_ENDPOINT)
        self._poller = zmq.Poller()
        self._poller.register(self._router, zmq.POLLIN)

        self._rec = np.empty(self.layout.size)
        self._last = np.full(self.layout.size, np.nan)
        self._have_last = False
        self._wake = np.full(stats_window, np.nan)
        self._tasks = np.full((stats_window, self.layout.slices["task_us"].stop
                               - self.layout.slices["task_us"].start), np.nan)
        self._window_i = 0
        self._ring_next = max(0, int(block.header[H.RING_COUNT]) - block.layout.ring_slots)
        self._backlog = False          # the last pass left records in the ring (RING_SLICE)
        self._ev_next = 0
        self._faults: deque[dict[str, Any]] = deque(maxlen=16)
        self._pending: dict[int, _Pending] = {}
        self._step: _Step | None = None
        self._last_transition: dict[str, Any] | None = None
        self._telemetry_t: float | None = None         # t of the last telemetry frame published
        self._loading: _Loading | None = None
        self._token = 1
        self._next_stats = time.monotonic() + stats_period
        self._done = False

    # ------------------------------------------------------------------ life cycle

    def serve(self, stop: threading.Event | None = None, deadline: float | None = None) -> None:
        """Run until ``stop`` is set, ``time.monotonic()`` reaches ``deadline`` or a
        ``shutdown`` command has been answered."""
        while not self._done:
            if stop is not None and stop.is_set():
                return
            if deadline is not None and time.monotonic() >= deadline:
                return
            self.step(1)

    def step(self, timeout_ms: int = 1) -> None:
        """One pass: wait up to ``timeout_ms`` for requests (not at all while the ring holds a
        backlog), handle them, drain shared memory (at most ``RING_SLICE`` records)."""
        if self._poller.poll(0 if self._backlog else timeout_ms):
            for _ in range(256):
                try:
                    frames = self._router.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
                self._handle(frames)
        self._pump(time.monotonic())

    @property
    def done(self) -> bool:
        """True once a ``shutdown`` command has been answered."""
        return self._done

    def close(self) -> None:
        """Close the log (writing its last chunk; a failure is published), then the sockets."""
        if self.log is not None and self.log_error is None:
            try:
                self.log.close()
            except OSError as e:
                self._log_failed(e)
        self._close_sockets()
        if self.live is not None:
            self.live.close()

    def _close_sockets(self) -> None:
        self._router.close()
        self._pub.close()
        if self._auth is not None:
            self._auth.stop()
        if self._own_context:
            self._zctx.term()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ commands

    def _send(self, envelope: list[bytes], data: bytes) -> None:
        self._router.send_multipart(envelope + [data])

    def _reject(self, envelope: list[bytes], id_: Any, code: Error, message: str) -> None:
        self.counters.rejected += 1
        self._send(envelope, error_reply(id_, code, message))

    def _handle(self, frames: list[bytes]) -> None:
        """One request, answered whatever happens: a validator that raises refuses it (``bad_args``), a
        failure anywhere else is ``internal``; either is logged on stderr with the request."""
        envelope, raw = frames[:-1], frames[-1]
        self.counters.requests += 1
        req: Request | ErrorReply | None = None
        try:
            self._refresh_context()
            req = validate(raw, self.ctx)
            if isinstance(req, ErrorReply):
                if req.exception is not None:
                    self._log_exception(raw, req.exception)
                self._reject(envelope, req.id, req.code, req.message)
                return
            self._heartbeat()
            if req.cmd == STEP:
                self._begin_step(envelope, req)
            elif req.mailbox is None:
                self._send(envelope, ok_reply(req.id, self._local(req.cmd)))
            else:
                self._dispatch(envelope, req)
        except Exception as e:  # noqa: BLE001 -- one request must never stop the server
            self._log_exception(raw, e)
            what = req.cmd if isinstance(req, Request) else "the request"
            self._reject(envelope, getattr(req, "id", None), Error.INTERNAL,
                         f"{what} failed inside the I/O process ({_short(e)}); it was logged.")

    def _log_exception(self, request: bytes | str, exc: Exception) -> None:
        """An exception a request raised, on stderr (the daemon's log) with the request, counted."""
        self.counters.internal_errors += 1
        shown = request[:300].decode("utf-8", "replace") if isinstance(request, bytes) else request[:300]
        print(f"bipd: I/O process: a request raised {type(exc).__name__}; request: {shown!r}\n"
              + "".join(traceback.format_exception(exc)), file=sys.stderr, end="", flush=True)

    def _heartbeat(self) -> None:
        """A valid request feeds the loop's motion watchdog: one count in the header, which the
        loop reads every cycle (and while paused), so no rate of requests can fill the mailbox.
        Written before a ``step`` raises the horizon, so the loop sees it at the paused cycle."""
        self.block.header[H.HEARTBEATS] += 1
        self.counters.heartbeats += 1

    def _begin_step(self, envelope: list[bytes], req: Request) -> None:
        """Raise the stepped loop's horizon by the cycles asked; answered by :meth:`_end_step`."""
        h = self.block.header
        if self._step is not None:
            self.counters.busy += 1
            self._reject(envelope, req.id, Error.BUSY, "a step is already running; wait for its reply.")
            return
        if h[H.LOOP_EXIT]:
            self._reject(envelope, req.id, Error.NOT_ALLOWED, "the control loop has exited: nothing to step.")
            return
        horizon = int(h[H.HORIZON]) + int(req.values[0])
        h[H.HORIZON] = horizon
        self._step = _Step(envelope, req.id, horizon)

    def _end_step(self) -> None:
        """Answer the running step once the loop has completed its horizon (or has exited) and
        every event and telemetry frame up to it is published (by :meth:`_pump`, slice by slice)."""
        step, h = self._step, self.block.header
        if step is None:
            return
        if step.records is None:
            if int(h[H.LOOP_CYCLE]) < step.horizon and not h[H.LOOP_EXIT]:
                return
            step.records = int(h[H.RING_COUNT])
        if self._ring_next < step.records:
            return
        self._step = None
        cycle = int(h[H.LOOP_CYCLE])
        if cycle < step.horizon:
            self._reject(step.envelope, step.id, Error.NOT_ALLOWED,
                         f"the control loop exited (code {int(h[H.LOOP_EXIT_CODE])}) at cycle {cycle}, "
                         f"before the step's horizon {step.horizon}.")
            return
        self._send(step.envelope, ok_reply(step.id, {
            "cycle": cycle, "t": cycle * self.ctx.period, "state": name_of(State, float(h[H.LOOP_STATE])),
            "telemetry_t": self._telemetry_t}))

    def _refresh_context(self) -> None:
        state = name_of(State, float(self.block.header[H.LOOP_STATE]))
        self.ctx.state = State[state] if isinstance(state, str) else State.FAULT
        self.ctx.q = self._last[self.layout.slices["q"]].copy() if self._have_last else None
        self.ctx.platform = self._last[self.layout.slices["platform"]].copy() if self._have_last else None

    def _dispatch(self, envelope: list[bytes], req: Request) -> None:
        h = self.block.header
        if self._loading is not None and req.cmd in CANCELS_LOADING:
            self._loading.cancelled_by = req.cmd
        if req.cmd == "shutdown":
            h[H.SHUTDOWN] = 1
        elif h[H.LOOP_EXIT]:
            self._reject(envelope, req.id, Error.NOT_ALLOWED,
                         f"the control loop has exited (code {int(h[H.LOOP_EXIT_CODE])}): only ping, status, "
                         "stats, get_config and shutdown are answered.")
            return
        if self.log_error is not None and self.on_log_failure == "refuse_motions" and req.cmd in MOTIONS \
                and req.args.get("enable", True):
            self._reject(envelope, req.id, Error.LOG_FAILED, f"{req.cmd} refused: {self.log_error} "
                         "(io.on_log_failure: refuse_motions; estop, stop, hold and disable are still accepted).")
            return
        if req.mailbox in FILE_COMMANDS or req.mailbox in SLOW_CHECKS:
            file = req.mailbox in FILE_COMMANDS
            if self._loading is not None or (file and any(p.mailbox in FILE_COMMANDS for p in self._pending.values())):
                self.counters.busy += 1
                self._reject(envelope, req.id, Error.BUSY, "a file is already being handed to the loop; wait for "
                             "its reply." if self._loading is None or self._loading.path is not None else
                             f"{self._loading.subject} is still running; wait for its reply.")
                return
            path = None
            if file:
                path = (self._trajectory_path(req.args["trajectory"]) if req.mailbox == Cmd.RUN_BUFFER else
                        self._trajectory_path(file_motion(req.args["motion"])[0], "motion", "not"))
                if isinstance(path, str):
                    self._reject(envelope, req.id, Error.BAD_FILE, path)
                    return
            self._start_loading(envelope, req, path)
            return
        self._post(envelope, req)

    def _post(self, envelope: list[bytes], req: Request) -> None:
        """Post a validated command to its lane or the mailbox; its reply comes back through
        :meth:`_replies`. Its deadline starts now, when the loop can first see it."""
        now = time.monotonic()
        token = self._token
        lane = LANE_OF.get(req.mailbox)
        if lane is not None:
            self._post_priority(envelope, req, lane, now)
            return
        if not post_command(self.block, token, req.mailbox, req.values):
            if req.cmd == "shutdown":
                self._finish_shutdown(envelope, req.id, acknowledged=False)
                return
            self.counters.busy += 1
            self._reject(envelope, req.id, Error.BUSY,
                         f"the command mailbox is full ({self.block.layout.mailbox_slots} commands pending); retry later.")
            return
        self._token += 1
        self._pending[token] = _Pending(envelope, req.id, req.cmd, req.mailbox, now + self.reply_timeout)

    def _post_priority(self, envelope: list[bytes], req: Request, lane: int, now: float) -> None:
        """A priority command never waits behind the mailbox: its lane takes it, or, while the loop
        has not yet taken the last one, it rides on that one and gets the same reply."""
        token = posted_priority(self.block, lane)
        if token:
            pending = self._pending.get(token)
            if pending is not None:
                pending.riders.append((envelope, req.id))
            else:                                  # its waiters were answered when the loop left
                self._pending[token] = _Pending(envelope, req.id, req.cmd, req.mailbox, now + self.reply_timeout)
            return
        token = self._token
        self._token += 1
        post_priority(self.block, lane, token)
        self._pending[token] = _Pending(envelope, req.id, req.cmd, req.mailbox, now + self.reply_timeout)

    def _finish_shutdown(self, envelope: list[bytes], id_: Any, acknowledged: bool) -> None:
        self._send(envelope, ok_reply(id_, {"acknowledged": acknowledged}))
        self._done = True

    def _trajectory_path(self, text: str, key: str = "trajectory", other: str = 'neither "squat" nor') -> Path | str:
        """The file ``args.<key>`` names inside ``trajectory_dir`` (symlinks resolved),
        or a one-sentence problem that quotes nothing read from the file system."""
        shown = text if len(text) <= 80 else text[:77] + "..."
        if self.trajectory_dir is None:
            noun = "trajectories" if key == "trajectory" else "motions"
            return (f"args.{key} = {shown!r}: file {noun} are disabled on this daemon "
                    "(set io.trajectory_dir in its configuration).")
        outside = f"args.{key} = {shown!r} is {other} a file in {self.trajectory_dir}."
        try:
            path = (self.trajectory_dir / text).resolve()
            if not path.is_relative_to(self.trajectory_dir) or not path.is_file():
                return outside
            size = path.stat().st_size
        except (OSError, ValueError):             # e.g. a NUL byte, a name too long
            return outside
        if size > self.trajectory_max_bytes:
            return (f"args.{key} = {shown!r} is {size} bytes, above the {self.trajectory_max_bytes}-byte "
                    "limit (io.trajectory_max_bytes).")
        return path

    def _start_loading(self, envelope: list[bytes], req: Request, path: Path | None) -> None:
        loading = _Loading(envelope, req, path, threading.Event())
        self._loading = loading
        work = (self._check_slowly if path is None else
                self._parse_trajectory if req.mailbox == Cmd.RUN_BUFFER else self._parse_rig_motion)
        threading.Thread(target=work, args=(loading,), name="bipd-worker", daemon=True).start()

    def _check_slowly(self, loading: _Loading) -> None:
        """Worker thread: the request's slow check (it reads only the context's fixed limits), then
        back to :meth:`_pump`."""
        req = loading.req
        try:
            loading.result = slow_check(req, self.ctx)
        except Exception as e:  # noqa: BLE001 -- reported to the client, never lost
            loading.result = ErrorReply(req.id, Error.INTERNAL, f"checking {req.cmd} failed inside the I/O "
                                                                f"process: {type(e).__name__}.")
        finally:
            loading.done.set()

    def _parse_trajectory(self, loading: _Loading) -> None:
        """Worker thread: parse and validate the file, then hand it back to :meth:`_pump`."""
        c = self.ctx
        try:
            loading.result = load_trajectory(loading.path, c.joint_names, c.qmin, c.qmax, c.vmax, c.period,
                                             with_support=True, max_samples=self.block.traj.shape[0],
                                             amax=c.amax, torques=c.torques)
        except TrajectoryFileError as e:
            loading.result = str(e)
        except Exception as e:  # noqa: BLE001 -- reported to the client, never lost
            loading.result = f"{loading.path.name} could not be loaded: {type(e).__name__}."
        finally:
            loading.done.set()

    def _parse_rig_motion(self, loading: _Loading) -> None:
        """Worker thread: read the earthquake file, make it drift-free and check it against the rig's
        stroke (controller.daemon.rig.earthquake, controller.daemon.rig.stroke), then hand it back to :meth:`_pump`."""
        try:
            _, options = file_motion(loading.req.args["motion"])
            motion = load_earthquake(loading.path, **options)
            cap = self.block.rig.shape[1]
            if len(motion.x) > cap:
                loading.result = (f"{loading.path.name} makes {len(motion.x)} spline nodes, more than the rig "
                                  f"buffer's {cap} ({(cap - 1) * motion.dt:g} s).")
            else:
                check_motion(self.ctx.rig, motion, vmax=self.ctx.rig_vmax, amax=self.ctx.rig_amax)
                loading.result = motion
        except MotionError as e:
            loading.result = str(e)
        except Exception as e:  # noqa: BLE001 -- reported to the client, never lost
            loading.result = f"{loading.path.name} could not be loaded: {type(e).__name__}."
        finally:
            loading.done.set()

    def _finish_loading(self) -> None:
        """On the I/O thread: hand a parsed trajectory or a checked request to the loop, or report why not
        (``internal``, logged, if that fails)."""
        loading, self._loading = self._loading, None
        try:
            self._hand_over(loading)
        except Exception as e:  # noqa: BLE001 -- one request must never stop the server
            req = loading.req
            self._log_exception(json.dumps({"id": req.id, "cmd": req.cmd, "args": req.args}), e)
            self._reject(loading.envelope, req.id, Error.INTERNAL,
                         f"{req.cmd} failed inside the I/O process ({_short(e)}); it was logged.")

    def _hand_over(self, loading: _Loading) -> None:
        envelope, req = loading.envelope, loading.req
        self._refresh_context()
        if loading.cancelled_by is not None:
            self._reject(envelope, req.id, Error.NOT_ALLOWED, f"{loading.subject} was still "
                         f"{'loading' if loading.path is not None else 'running'} "
                         f"when {loading.cancelled_by} arrived: it was cancelled and never reached the loop.")
        elif isinstance(loading.result, str):
            self._reject(envelope, req.id, Error.BAD_FILE, loading.result)
        elif isinstance(loading.result, ErrorReply):
            self._reject(envelope, req.id, loading.result.code, loading.result.message)
        elif self.block.header[H.LOOP_EXIT] or self.ctx.state not in self.ctx.allowed[req.cmd]:
            self._reject(envelope, req.id, Error.NOT_ALLOWED, f"{req.cmd} is no longer allowed: the loop went to "
                         f"{self.ctx.state.name} while the file was loading.")
        elif req.mailbox == Cmd.RIG_BUFFER:
            self._hand_rig_motion(envelope, req, loading.result)
        elif req.mailbox == Cmd.RUN_BUFFER:
            traj, support = loading.result
            self.block.traj[:len(traj)] = traj
            self.block.support[:len(traj)] = -1.0 if support is None else support
            self.block.header[H.TRAJ_LEN] = len(traj)
            self._post(envelope, req)
        else:
            self._post(envelope, req)

    def _hand_rig_motion(self, envelope: list[bytes], req: Request, motion) -> None:
        """The earthquake's spline nodes into the rig buffer, unless the rig still plays the last one."""
        h = self.block.header
        if h[H.RIG_BUSY]:
            self._reject(envelope, req.id, Error.NOT_ALLOWED, "the rig is still playing a recorded motion; "
                         "wait until it ends.")
            return
        n = len(motion.x)
        self.block.rig[0, :n], self.block.rig[1, :n], self.block.rig[2, :n] = motion.x, motion.v, motion.a
        h[H.RIG_LEN] = n
        self._post(envelope, replace(req, values=np.array([motion.dt])))

    def _local(self, cmd: str) -> dict[str, Any]:
        h = self.block.header
        state = name_of(State, float(h[H.LOOP_STATE]))
        if cmd == "ping":
            return {"pong": True, "state": state, "ready": bool(h[H.READY]), "cycle": int(h[H.LOOP_CYCLE])}
        if cmd == "status":
            return self._status(state)
        if cmd == "stats":
            return self._stats()
        return {**self.ctx.config_summary(), **self._io_config()}

    def _io_config(self) -> dict[str, Any]:
        return {"command_endpoint": self.command_endpoint, "telemetry_endpoint": self.telemetry_endpoint,
                "decimation": self.decimation, "reply_timeout": self.reply_timeout, "sndhwm": self.sndhwm,
                "mailbox_slots": self.block.layout.mailbox_slots, "ring_slots": self.block.layout.ring_slots,
                "traj_samples": self.block.layout.traj_samples, "log": str(self.log.path) if self.log else None}

    def _status(self, state: str | int) -> dict[str, Any]:
        h = self.block.header
        last = telemetry_message(self.layout, self._last, self.names) if self._have_last else {}
        return {"state": state, "ready": bool(h[H.READY]), "cycle": int(h[H.LOOP_CYCLE]),
                "loop_exited": bool(h[H.LOOP_EXIT]), "exit_code": int(h[H.LOOP_EXIT_CODE]),
                "loop_error": self.loop_error,
                "shutdown_requested": bool(h[H.SHUTDOWN]), "log": self._log_status(),
                "t": last.get("t"), "q": last.get("q"), "qd": last.get("qd"), "q_ref": last.get("q_ref"),
                **{k: last.get(k) for k in FAULT_KEYS}, "faults": list(self._faults),
                "last_transition": self._last_transition, "stepped": self.ctx.stepped,
                "horizon": int(h[H.HORIZON]) if self.ctx.stepped else None,
                "config": {"joints": list(self.ctx.joint_names), "period": self.ctx.period,
                           "decimation": self.decimation, "command_endpoint": self.command_endpoint,
                           "telemetry_endpoint": self.telemetry_endpoint, **self.ctx.summary}}

    def _stats(self) -> dict[str, Any]:
        last = self._last
        s = self.layout.slices
        return {"loop": stats_summary(self.block.stats),      # whole run (B&R-style profiler)
                "profiler": profiler_summary(self._wake, self._tasks),   # recent window
                "overruns": finite_or_none(float(last[s["overruns"]][0])) if self._have_last else None,
                "missed": finite_or_none(float(last[s["missed"]][0])) if self._have_last else None,
                "io": asdict(self.counters),
                "pending": len(self._pending),
                "live_view": {"port": self.live.port, "frames": self.live.frames,
                              "subscriptions": self.live.subscriptions} if self.live else None,
                "log": self._log_status()}

    def _log_status(self) -> dict[str, Any] | None:
        """The cycle log: ``records`` and ``chunks`` on disk, ``ok`` False once it failed (``error``)."""
        if self.log is None:
            return None
        return {"ok": self.log_error is None, "path": str(self.log.path), "records": self.log.records,
                "chunks": self.log.chunks, "error": self.log_error, "on_failure": self.on_log_failure}

    # ------------------------------------------------------------------ shared memory -> ZMQ

    def _pump(self, now: float) -> None:
        if self._loading is not None and self._loading.done.is_set():
            self._finish_loading()
        exited = bool(self.block.header[H.LOOP_EXIT])   # read first: the replies posted before it are read next
        self._replies()
        if exited:
            self._loop_left()
        else:
            self._withdraw_overdue(now)
        self._read_events_then_ring()
        self._end_step()
        if now >= self._next_stats:
            self._next_stats = now + self.stats_period
            self._publish(b"stats", self._stats())

    def _loop_left(self) -> None:
        """A loop that has left takes nothing more: answer every command still waiting (``shutdown``
        as acknowledged), now, before the daemon stops serving."""
        h = self.block.header
        for p in self._pending.values():
            if p.cmd == "shutdown":
                self._finish_shutdown(p.envelope, p.id, acknowledged=True)
                continue
            for envelope, id_ in p.waiters():
                self._reject(envelope, id_, Error.NOT_ALLOWED, f"the control loop exited (code "
                             f"{int(h[H.LOOP_EXIT_CODE])}) before it acknowledged {p.cmd}.")
        self._pending.clear()

    def _withdraw_overdue(self, now: float) -> None:
        """Past its deadline, a mailbox command is withdrawn (answered once the loop says whether it
        took it first); a ``shutdown`` is answered unacknowledged (the header flag stops the loop anyway);
        a priority command, and any in stepped lock-step, waits for the loop's reply."""
        for token, p in list(self._pending.items()):
            if p.withdrawn or now < p.deadline:
                continue
            if p.cmd == "shutdown":
                del self._pending[token]
                self._finish_shutdown(p.envelope, p.id, acknowledged=False)
            elif p.mailbox not in LANE_OF and not self.ctx.stepped:
                withdraw_commands(self.block, token)
                p.withdrawn = True

    def _replies(self) -> None:
        for token, ok, code, value in take_replies(self.block):
            p = self._pending.pop(token, None)
            if p is None:
                self.counters.late_replies += 1
                continue
            if p.cmd == "shutdown":
                self._finish_shutdown(p.envelope, p.id, acknowledged=True)
                continue
            state = name_of(State, value)           # the loop replies with its state after the command
            for envelope, id_ in p.waiters():
                if p.withdrawn and not ok and code == Error.TIMEOUT:
                    self.counters.timeouts += 1
                    self._reject(envelope, id_, Error.TIMEOUT, f"the control loop did not take {p.cmd} within "
                                 f"{self.reply_timeout * 1e3:.0f} ms of its posting: it was withdrawn and never "
                                 "applied; check status before retrying.")
                elif ok:
                    self._send(envelope, ok_reply(id_, {"accepted": True, "state": state}))
                else:
                    err = _loop_error(code)
                    self._reject(envelope, id_, err, f"the control loop refused {p.cmd} ({err.name.lower()}) in state {state}.")

    def _read_events_then_ring(self) -> None:
        """Events, then the records completed before them: the loop posts a cycle's events
        before it completes the cycle's record, so an event never follows its cycle's frame."""
        count = int(self.block.header[H.RING_COUNT])
        self._read_events()
        self._read_ring(count)

    def _read_ring(self, count: int) -> None:
        """The records up to ``count``, at most ``RING_SLICE`` of them (``_backlog`` if more are left)."""
        slots = self.block.layout.ring_slots
        if count - self._ring_next > slots:
            self.counters.ring_drops += count - slots - self._ring_next
            self._ring_next = count - slots
        end = min(count, self._ring_next + RING_SLICE)
        self._backlog = end < count
        while self._ring_next < end:
            i = self._ring_next
            self._ring_next += 1
            if not read_record(self.block, i, self._rec):
                self.counters.ring_drops += 1
                continue
            self._on_record(i, self._rec)

    def _on_record(self, index: int, rec: np.ndarray) -> None:
        s = self.layout.slices
        self.counters.records += 1
        self._last[:] = rec
        self._have_last = True
        w = self._window_i % len(self._wake)
        self._wake[w] = rec[s["wake_us"]][0]
        self._tasks[w] = rec[s["task_us"]]
        self._window_i += 1
        self._to_log("append", rec)
        if self.live is not None:
            self.live.offer(rec)
        if index % self.decimation == 0:
            self._publish(b"telemetry", telemetry_message(self.layout, rec, self.names))
            self._telemetry_t = float(rec[s["t"]][0])

    def _read_events(self) -> None:
        events, self._ev_next, dropped = read_events(self.block, self._ev_next)
        self.counters.event_drops += dropped
        for cycle, code, a, b in events:
            self.counters.events += 1
            msg = event_message(cycle, code, a, b, self.names)
            if code == Event.FAULT:
                self._faults.append(msg)
            elif code == Event.TRANSITION:
                self._last_transition = msg
            self._publish(b"event", msg)
            self._to_log("event", msg)

    def _to_log(self, kind: str, item: Any) -> None:
        """A record (``append``) or an event into the cycle log, until a write fails."""
        if self.log is not None and self.log_error is None:
            try:
                getattr(self.log, kind)(item)
            except OSError as e:
                self._log_failed(e)

    def _log_failed(self, e: OSError) -> None:
        """The cycle log's first failure: said in ``status`` and ``stats`` and published as a WARNING
        event (reason LOG_FAILED); under ``refuse_motions`` new motions are refused from now on."""
        self.log_error = (f"the cycle log {self.log.path.name} failed after {self.log.records} records on disk "
                          f"({e.strerror or e})")
        self._publish(b"event", log_failed_message(int(self.block.header[H.LOOP_CYCLE]), self.log_error, e,
                                                   self.log.records))

    def _publish(self, topic: bytes, msg: dict[str, Any]) -> None:
        data = json.dumps(msg, allow_nan=False, separators=(",", ":")).encode()
        try:
            self._pub.send_multipart([topic, data], zmq.NOBLOCK)
            self.counters.pub_sent += 1
        except zmq.Again:
            self.counters.pub_drops += 1
