"""The I/O process's ZMQ side: commands in (ROUTER), telemetry out (PUB), shared memory between.

One thread, one :class:`zmq.Poller` (zguide ch. 3, ROUTER; ch. 5, PUB with a high-water
mark). Each request is validated here (:mod:`controller.daemon.io.protocol`); a valid command is
posted with a token, to its priority lane (``estop``, ``disable``: never behind the bounded
mailbox, :mod:`controller.daemon.shm`) or to the mailbox, and answered when the loop's reply for
that token arrives, or with ``timeout`` after ``reply_timeout``. A trajectory file (only from
``trajectory_dir``), as a recorded rig motion (an earthquake CSV, same folder: read, made
drift-free and checked against the rig's stroke, :mod:`controller.daemon.rig.earthquake`), is parsed
in a worker thread, so that ``estop``, ``stop``, ``hold`` and
``disable`` are answered while it loads (and cancel it); messages above
``max_request_bytes`` never reach the handler (ZMQ_MAXMSGSIZE drops the sender). ``ping``,
``status``, ``stats`` and ``get_config`` are answered from shared memory. Every valid request
counts one client heartbeat in the shared header (``H.HEARTBEATS``), which feeds the loop's
motion watchdog. A command that reaches the loop (or ``step``) and carries an ``id`` is remembered
with its reply (the last ``RECENT_REQUESTS``, per client: its socket's routing id, which a client
keeps across reconnections to retry, ZMQ_ROUTER_HANDOVER, and its CURVE key): the same request
again, byte for byte, is a retry and gets the first reply, or waits for it, without acting twice
(idempotent retries; read-only commands are answered afresh, refusals re-validated).
In stepped lock-step, ``step`` raises the loop's horizon (``H.HORIZON``) and is answered
once the loop has run up to it and its telemetry and events are published. Every pass
(about 1 ms) also drains the replies, the events ring (``event`` frames) and then the
telemetry ring (cycle log, ``telemetry`` frames every ``decimation`` records) up to the
record count read first, so a cycle's events are published before its telemetry frame,
and sends ``stats`` frames once per ``stats_period``. The loop process never waits for
any of this (docs/cycle.md).
"""
from __future__ import annotations

import errno
import hashlib
import json
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Self

import numpy as np
import zmq

from controller.daemon.codes import MAX_REQUEST_BYTES, Error, Event, State
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
    name_of,
    profiler_summary,
    telemetry_message,
)
from controller.daemon.io.protocol import LOCAL, STEP, Context, ErrorReply, Request, error_reply, ok_reply, validate

TOPICS = (b"telemetry", b"event", b"stats")
FAULT_KEYS = ("fault_name", "fault_code", "fault_axis", "fault_node", "fault_joint", "fault_detail")
CANCELS_LOADING = frozenset(c.name for c in COMMANDS if c.cancels_loading)
"""Commands that cancel a trajectory file still being loaded (it never reaches the loop)."""
FILE_COMMANDS = frozenset(Cmd[k.name] for _, k in CODES if k.file)
"""Mailbox commands whose file the worker thread loads into shared memory first."""
LANE_OF = {cmd: lane for lane, cmd in enumerate(LANES)}
"""The priority lane of each command that has one (shm.LANES)."""
RECENT_REQUESTS = 256
"""Acting requests whose replies are remembered for retries (module docstring)."""


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
    retries: int = 0          # repeated requests answered with their first reply
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
    deadline: float
    riders: list[tuple[list[bytes], Any]] = field(default_factory=list)   # same priority request, same reply

    def waiters(self) -> list[tuple[list[bytes], Any]]:
        """(envelope, id) of every request this reply answers."""
        return [(self.envelope, self.id), *self.riders]


_Key = tuple[tuple[bytes, ...], bytes, bytes]
"""A remembered request: its routing frames, its client's CURVE key and its digest."""


class _Envelope(list):
    """A request's routing frames, and the key its reply is remembered under (None: not remembered)."""
    key: _Key | None = None


@dataclass
class _Answer:
    """A remembered request: its reply once sent, and the retries waiting for it meanwhile."""
    reply: bytes | None = None
    retries: list[list[bytes]] = field(default_factory=list)


def _user(frame: zmq.Frame) -> bytes:
    """The CURVE key of the client that sent ``frame`` (ZAP User-Id); empty without CURVE."""
    try:
        return frame.get("User-Id").encode()
    except zmq.ZMQError:                      # no ZAP user for this mechanism
        return b""


@dataclass
class _Step:
    envelope: list[bytes]
    id: Any
    horizon: int


@dataclass
class _Loading:
    """A file being parsed by the worker thread for a ``run`` (trajectory) or ``rig_motion``
    (earthquake) request."""
    envelope: list[bytes]
    req: Request
    path: Path
    done: threading.Event
    result: Any = None        # the samples (a motion for the rig), or a one-sentence problem
    cancelled_by: str | None = None


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
                 trajectory_max_bytes: int = 16 << 20, max_request_bytes: int = MAX_REQUEST_BYTES) -> None:
        if decimation < 1:
            raise ValueError(f"decimation must be at least 1, got {decimation}")
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
        self.log_error: str | None = None
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
        self._router.router_handover = 1             # a client reconnecting under its routing id takes it over
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
        self._ev_next = 0
        self._faults: deque[dict[str, Any]] = deque(maxlen=16)
        self._pending: dict[int, _Pending] = {}
        self._recent: dict[_Key, _Answer] = {}    # oldest first
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
        """One pass: wait up to ``timeout_ms`` for requests, handle them, drain shared memory."""
        if self._poller.poll(timeout_ms):
            for _ in range(256):
                try:
                    frames = self._router.recv_multipart(zmq.NOBLOCK, copy=False)
                except zmq.Again:
                    break
                self._handle([f.bytes for f in frames], _user(frames[-1]))
        self._pump(time.monotonic())

    @property
    def done(self) -> bool:
        """True once a ``shutdown`` command has been answered."""
        return self._done

    def close(self) -> None:
        """Close the sockets (and the log, flushing its last chunk)."""
        self._close_sockets()
        if self.live is not None:
            self.live.close()
        if self.log is not None:
            self.log.close()

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
        """Send a reply; a remembered request's is kept, and sent to its retries waiting for it."""
        self._router.send_multipart(envelope + [data])
        answer = self._recent.get(getattr(envelope, "key", None))
        if answer is not None:
            answer.reply = data
            for retry in answer.retries:
                self._router.send_multipart(retry + [data])
            answer.retries.clear()

    def _reject(self, envelope: list[bytes], id_: Any, code: Error, message: str) -> None:
        self.counters.rejected += 1
        self._send(envelope, error_reply(id_, code, message))

    def _handle(self, frames: list[bytes], user: bytes = b"") -> None:
        envelope, raw = _Envelope(frames[:-1]), frames[-1]
        self.counters.requests += 1
        now = time.monotonic()
        key = (tuple(envelope), user, hashlib.blake2b(raw, digest_size=16).digest())
        if self._retry(envelope, key):
            return
        self._refresh_context()
        req = validate(raw, self.ctx)
        if isinstance(req, ErrorReply):
            self._reject(envelope, req.id, req.code, req.message)
            return
        self._heartbeat()
        if req.id is not None and req.cmd not in LOCAL:
            self._remember(envelope, key)
        try:
            if req.cmd == STEP:
                self._begin_step(envelope, req)
            elif req.mailbox is None:
                self._send(envelope, ok_reply(req.id, self._local(req.cmd)))
            else:
                self._dispatch(envelope, req, now)
        except Exception as e:  # noqa: BLE001 -- one request must never stop the server
            self.counters.internal_errors += 1
            self._reject(envelope, req.id, Error.INTERNAL,
                         f"{req.cmd} failed inside the I/O process: {type(e).__name__}: {e}.")

    def _retry(self, envelope: list[bytes], key: _Key) -> bool:
        """A remembered request again: answer it with the first reply (or when that comes)."""
        answer = self._recent.get(key)
        if answer is None:
            return False
        self.counters.retries += 1
        self._heartbeat()                         # a valid request, as the first was
        if answer.reply is None:
            answer.retries.append(envelope)
        else:
            self._router.send_multipart(envelope + [answer.reply])
        return True

    def _remember(self, envelope: _Envelope, key: _Key) -> None:
        """Keep this request's reply for its retries, forgetting the oldest beyond RECENT_REQUESTS."""
        envelope.key = key
        self._recent[key] = _Answer()
        while len(self._recent) > RECENT_REQUESTS:
            del self._recent[next(iter(self._recent))]

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
        """Answer the running step once the loop has completed its horizon (or has exited), after
        publishing every event and telemetry frame up to it."""
        step, h = self._step, self.block.header
        if step is None or (int(h[H.LOOP_CYCLE]) < step.horizon and not h[H.LOOP_EXIT]):
            return
        self._step = None
        self._read_events_then_ring()
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

    def _dispatch(self, envelope: list[bytes], req: Request, now: float) -> None:
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
        if req.mailbox in FILE_COMMANDS:
            if self._loading is not None or any(p.mailbox in FILE_COMMANDS for p in self._pending.values()):
                self.counters.busy += 1
                self._reject(envelope, req.id, Error.BUSY,
                             "a file is already being handed to the loop; wait for its reply.")
                return
            path = (self._trajectory_path(req.args["trajectory"]) if req.mailbox == Cmd.RUN_BUFFER else
                    self._trajectory_path(file_motion(req.args["motion"])[0], "motion", "not"))
            if isinstance(path, str):
                self._reject(envelope, req.id, Error.BAD_FILE, path)
                return
            self._start_loading(envelope, req, path)
            return
        self._post(envelope, req, now)

    def _post(self, envelope: list[bytes], req: Request, now: float) -> None:
        """Post a validated command to its lane or the mailbox; its reply comes back through :meth:`_replies`."""
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
            else:                                  # the last one timed out untaken: wait for it again
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

    def _start_loading(self, envelope: list[bytes], req: Request, path: Path) -> None:
        loading = _Loading(envelope, req, path, threading.Event())
        self._loading = loading
        parse = self._parse_trajectory if req.mailbox == Cmd.RUN_BUFFER else self._parse_rig_motion
        threading.Thread(target=parse, args=(loading,), name="bipd-trajectory", daemon=True).start()

    def _parse_trajectory(self, loading: _Loading) -> None:
        """Worker thread: parse and validate the file, then hand it back to :meth:`_pump`."""
        c = self.ctx
        try:
            traj, support = load_trajectory(loading.path, c.joint_names, c.qmin, c.qmax, c.vmax, c.period,
                                            with_support=True)
            cap = self.block.traj.shape[0]
            loading.result = (traj, support) if len(traj) <= cap else (
                f"{loading.path.name} resamples to {len(traj)} samples, more than the trajectory buffer's "
                f"{cap} ({cap * c.period:g} s).")
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
                check_motion(self.ctx.rig, motion)
                loading.result = motion
        except MotionError as e:
            loading.result = str(e)
        except Exception as e:  # noqa: BLE001 -- reported to the client, never lost
            loading.result = f"{loading.path.name} could not be loaded: {type(e).__name__}."
        finally:
            loading.done.set()

    def _finish_loading(self, now: float) -> None:
        """On the I/O thread: hand a parsed trajectory to the loop, or report why not."""
        loading, self._loading = self._loading, None
        envelope, req = loading.envelope, loading.req
        self._refresh_context()
        if loading.cancelled_by is not None:
            self._reject(envelope, req.id, Error.NOT_ALLOWED, f"{req.args['trajectory']!s:.80} was still loading "
                         f"when {loading.cancelled_by} arrived: it was cancelled and never reached the loop.")
        elif isinstance(loading.result, str):
            self._reject(envelope, req.id, Error.BAD_FILE, loading.result)
        elif self.block.header[H.LOOP_EXIT] or self.ctx.state not in self.ctx.allowed[req.cmd]:
            self._reject(envelope, req.id, Error.NOT_ALLOWED, f"{req.cmd} is no longer allowed: the loop went to "
                         f"{self.ctx.state.name} while the file was loading.")
        elif req.mailbox == Cmd.RIG_BUFFER:
            self._hand_rig_motion(envelope, req, loading.result, now)
        else:
            traj, support = loading.result
            self.block.traj[:len(traj)] = traj
            self.block.support[:len(traj)] = -1.0 if support is None else support
            self.block.header[H.TRAJ_LEN] = len(traj)
            self._post(envelope, req, now)

    def _hand_rig_motion(self, envelope: list[bytes], req: Request, motion, now: float) -> None:
        """The earthquake's spline nodes into the rig buffer, unless the rig still plays the last one."""
        h = self.block.header
        if h[H.RIG_BUSY]:
            self._reject(envelope, req.id, Error.NOT_ALLOWED, "the rig is still playing a recorded motion; "
                         "wait until it ends.")
            return
        n = len(motion.x)
        self.block.rig[0, :n], self.block.rig[1, :n], self.block.rig[2, :n] = motion.x, motion.v, motion.a
        h[H.RIG_LEN] = n
        self._post(envelope, replace(req, values=np.array([motion.dt])), now)

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
                "shutdown_requested": bool(h[H.SHUTDOWN]),
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
                "log": {"path": str(self.log.path), "records": self.log.records, "chunks": self.log.chunks,
                        "error": self.log_error} if self.log else None}

    # ------------------------------------------------------------------ shared memory -> ZMQ

    def _pump(self, now: float) -> None:
        if self._loading is not None and self._loading.done.is_set():
            self._finish_loading(now)
        self._replies()
        if self.block.header[H.LOOP_EXIT]:       # a loop that left on the header flag never replies:
            for token in [t for t, p in self._pending.items() if p.cmd == "shutdown"]:
                p = self._pending.pop(token)      # answer now, before the daemon stops serving
                self._finish_shutdown(p.envelope, p.id, acknowledged=True)
        for token in [t for t, p in self._pending.items() if now >= p.deadline]:
            p = self._pending.pop(token)
            if p.cmd == "shutdown":
                self._finish_shutdown(p.envelope, p.id, acknowledged=False)
                continue
            for envelope, id_ in p.waiters():
                self.counters.timeouts += 1
                self._reject(envelope, id_, Error.TIMEOUT,
                             f"the control loop did not acknowledge {p.cmd} within {self.reply_timeout * 1e3:.0f} ms; "
                             "check status before retrying.")
        self._read_events_then_ring()
        self._end_step()
        if now >= self._next_stats:
            self._next_stats = now + self.stats_period
            self._publish(b"stats", self._stats())

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
                if ok:
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
        slots = self.block.layout.ring_slots
        if count - self._ring_next > slots:
            self.counters.ring_drops += count - slots - self._ring_next
            self._ring_next = count - slots
        while self._ring_next < count:
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
        """A record (``append``) or an event into the cycle log; the first write that fails
        stops the log and says why in ``stats``."""
        if self.log is not None and self.log_error is None:
            try:
                getattr(self.log, kind)(item)
            except OSError as e:
                self.log_error = f"the cycle log stopped at record {self.log.records}: {e}"

    def _publish(self, topic: bytes, msg: dict[str, Any]) -> None:
        data = json.dumps(msg, allow_nan=False, separators=(",", ":")).encode()
        try:
            self._pub.send_multipart([topic, data], zmq.NOBLOCK)
            self.counters.pub_sent += 1
        except zmq.Again:
            self.counters.pub_drops += 1
