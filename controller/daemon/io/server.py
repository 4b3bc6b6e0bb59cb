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
own answer. A trajectory file, a recorded rig motion or a check too slow for the command thread
is handled in the worker thread (:mod:`controller.daemon.io.worker`), so that ``estop``, ``stop``,
``hold`` and ``disable`` are answered while it runs (and cancel it); messages above
``max_request_bytes`` never reach the handler (ZMQ_MAXMSGSIZE drops the sender). ``ping``,
``status``, ``stats`` and ``get_config`` are answered from shared memory
(:mod:`controller.daemon.io.answers`). Every valid request counts one client heartbeat in the
shared header (``H.HEARTBEATS``), which feeds the loop's motion watchdog. A command that acts and
carries an ``id`` is remembered with its reply, so a client's retry of it gets that reply and never
acts twice (:mod:`controller.daemon.io.recent`).
In stepped lock-step, ``step`` raises the loop's horizon (``H.HORIZON``) and is answered
once the loop has run up to it and its telemetry and events are published. Every pass
(about 1 ms) also drains the replies, then the events and telemetry rings
(:mod:`controller.daemon.io.pump`: events, telemetry frames, the cycle log, the live view), and
sends ``stats`` frames once per ``stats_period``. The loop process never waits for any of this
(docs/cycle.md). Once the cycle log failed, ``on_log_failure`` says whether new motions are
refused (docs/logs.md).
"""
from __future__ import annotations

import errno
import json
import queue
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Self

import zmq

from controller.daemon.codes import MAX_REQUEST_BYTES, ON_LOG_FAILURE, Error, State
from controller.daemon.commands import CODES, COMMANDS
from controller.daemon.rig.spec import file_motion
from controller.daemon.shm import (
    LANES,
    Cmd,
    H,
    SharedBlock,
    post_command,
    post_priority,
    posted_priority,
    take_replies,
    withdraw_commands,
)
from controller.daemon.telemetry import RecordLayout

from controller.daemon.endpoints import ServerCurve, is_ipv6
from controller.daemon.io.answers import Answers
from controller.daemon.io.curve import check_endpoints, secure_server, start_authenticator
from controller.daemon.io.log import CycleLogWriter
from controller.daemon.io.messages import Names, name_of
from controller.daemon.io.recent import Envelope, RecentRequests, client_key, request_key
from controller.daemon.io.protocol import (
    LOCAL,
    SLOW_CHECKS,
    STEP,
    Context,
    ErrorReply,
    Request,
    error_reply,
    ok_reply,
    validate,
)
from controller.daemon.io.pump import IoCounters, Publisher
from controller.daemon.io.worker import Loading, Worker

FILE_COMMANDS = frozenset(Cmd[k.name] for _, k in CODES if k.file)
"""Mailbox commands whose file the worker thread loads into shared memory first."""
MOTIONS = frozenset(c.name for c in COMMANDS if c.starts_motion)
"""Commands that start a motion (``stabilizer`` only with ``enable: true``)."""
LANE_OF = {cmd: lane for lane, cmd in enumerate(LANES)}
"""The priority lane of each command that has one (shm.LANES)."""


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
class _Pending:
    envelope: list[bytes]
    id: Any
    cmd: str
    mailbox: Cmd
    deadline: float                     # reply_timeout after it was posted
    args: dict[str, Any] = field(default_factory=dict)   # the request's (for on_accepted)
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


def _short(exc: Exception) -> str:
    """An exception in a reply: its type and the start of its first line."""
    text = str(exc).strip().splitlines()[0][:80].replace(". ", "; ") if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class _Part:
    """An IoServer attribute kept by one of its parts (``IoServer.<part>.<name>``)."""

    def __init__(self, part: str) -> None:
        self.part = part

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        return self if obj is None else getattr(getattr(obj, self.part), self.name)

    def __set__(self, obj: object, value: Any) -> None:
        setattr(getattr(obj, self.part), self.name, value)


class LocalEnvelope(Envelope):
    """The envelope of a request made inside the I/O process (:meth:`LocalRequests.submit`): its reply
    goes to ``reply`` instead of the command socket."""

    def __init__(self, reply: Callable[[bytes], None]) -> None:
        super().__init__()
        self.reply = reply


class LocalRequests:
    """Requests from other threads of the I/O process (the live view's parameters), which
    :meth:`IoServer.step` serves as the command socket's: the same validation, lanes and replies."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[bytes, Callable[[bytes], None]]] = queue.SimpleQueue()

    def submit(self, request: bytes, reply: Callable[[bytes], None]) -> None:
        """Queue ``request``; ``reply`` gets its reply's JSON bytes, from the serving thread."""
        self._queue.put((request, reply))

    def serve(self, handle: Callable[[bytes, LocalEnvelope], None]) -> None:
        while not self._queue.empty():
            raw, reply = self._queue.get_nowait()
            handle(raw, LocalEnvelope(reply))


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
    Its parts: ``worker`` (files and slow checks), ``publisher`` (shared memory -> ZMQ, the log),
    ``answers`` (``ping``, ``status``, ``stats``, ``get_config``).
    """

    log = _Part("publisher")
    live = _Part("publisher")         # the Foxglove live view, if enabled (see controller.daemon.io.live)
    log_error = _Part("publisher")    # the cycle log's failure, once it failed
    on_accepted: Callable[[str, dict[str, Any]], None] | None = None   # (cmd, args) of each the loop accepted

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

        self.worker = Worker(block, ctx, trajectory_dir, trajectory_max_bytes)
        self.publisher = Publisher(block, self.layout, self.names, self._pub, self.counters, decimation,
                                   stats_window, on_log_failure, log)
        self.answers = Answers(block, ctx, self.publisher, {
            "command_endpoint": self.command_endpoint, "telemetry_endpoint": self.telemetry_endpoint,
            "decimation": decimation, "reply_timeout": reply_timeout, "sndhwm": sndhwm})
        self._pending: dict[int, _Pending] = {}
        self.recent = RecentRequests(self._router.send_multipart)
        self._step: _Step | None = None
        self.local = LocalRequests()
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
        backlog), handle them, drain shared memory (at most ``pump.RING_SLICE`` records)."""
        if self._poller.poll(0 if self.publisher.backlog else timeout_ms):
            for _ in range(256):
                try:
                    frames = self._router.recv_multipart(zmq.NOBLOCK, copy=False)
                except zmq.Again:
                    break
                self._handle([f.bytes for f in frames], client_key(frames[-1]))
        self.local.serve(lambda raw, envelope: self._handle([raw], envelope=envelope))
        self._pump(time.monotonic())

    @property
    def done(self) -> bool:
        """True once a ``shutdown`` command has been answered."""
        return self._done

    def close(self) -> None:
        """Close the log (writing its last chunk; a failure is published), then the sockets."""
        self.publisher.close_log()
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
        """Send a reply (kept for the retries of a remembered request)."""
        if isinstance(envelope, LocalEnvelope):
            return envelope.reply(data)
        self._router.send_multipart(envelope + [data])
        self.recent.sent(envelope, data)

    def _reject(self, envelope: list[bytes], id_: Any, code: Error, message: str) -> None:
        self.counters.rejected += 1
        self._send(envelope, error_reply(id_, code, message))

    def _handle(self, frames: list[bytes], user: bytes = b"", envelope: Envelope | None = None) -> None:
        """One request, answered whatever happens: a validator that raises refuses it (``bad_args``), a
        failure anywhere else is ``internal``; either is logged on stderr with the request. A retry of a
        remembered request (``user``: its client's CURVE key) gets the first reply; ``envelope``: a submitted one's."""
        envelope, raw = Envelope(frames[:-1]) if envelope is None else envelope, frames[-1]
        self.counters.requests += 1
        key = request_key(envelope, user, raw)
        if self.recent.retry(envelope, key):
            self.counters.retries += 1
            self._heartbeat()                          # a valid request, as the first was
            return
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
            if req.id is not None and req.cmd not in LOCAL:
                self.recent.remember(envelope, key)
            if req.cmd == STEP:
                self._begin_step(envelope, req)
            elif req.mailbox is None:
                self._send(envelope, ok_reply(req.id, self.answers.answer(req.cmd, len(self._pending),
                                                                          self.loop_error)))
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
        if self.publisher.ring_next < step.records:
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
            "telemetry_t": self.publisher.telemetry_t}))

    def _refresh_context(self) -> None:
        state = name_of(State, float(self.block.header[H.LOOP_STATE]))
        self.ctx.state = State[state] if isinstance(state, str) else State.FAULT
        p = self.publisher
        self.ctx.q = p.last[self.layout.slices["q"]].copy() if p.have_last else None
        self.ctx.platform = p.last[self.layout.slices["platform"]].copy() if p.have_last else None

    def _dispatch(self, envelope: list[bytes], req: Request) -> None:
        h = self.block.header
        self.worker.cancel(req.cmd)
        if req.cmd == "shutdown":
            h[H.SHUTDOWN] = 1
        elif h[H.LOOP_EXIT]:
            self._reject(envelope, req.id, Error.NOT_ALLOWED,
                         f"the control loop has exited (code {int(h[H.LOOP_EXIT_CODE])}): only ping, status, "
                         "stats, get_config and shutdown are answered.")
            return
        if self.publisher.refuses_motions() and req.cmd in MOTIONS and req.args.get("enable", True):
            self._reject(envelope, req.id, Error.LOG_FAILED, f"{req.cmd} refused: {self.log_error} "
                         "(io.on_log_failure: refuse_motions; estop, stop, hold and disable are still accepted).")
            return
        if req.mailbox in FILE_COMMANDS or req.mailbox in SLOW_CHECKS:
            file, loading = req.mailbox in FILE_COMMANDS, self.worker.loading
            if loading is not None or (file and any(p.mailbox in FILE_COMMANDS for p in self._pending.values())):
                self.counters.busy += 1
                self._reject(envelope, req.id, Error.BUSY, "a file is already being handed to the loop; wait for "
                             "its reply." if loading is None or loading.path is not None else
                             f"{loading.subject} is still running; wait for its reply.")
                return
            path = None
            if file:
                path = (self.worker.path(req.args["trajectory"]) if req.mailbox == Cmd.RUN_BUFFER else
                        self.worker.path(file_motion(req.args["motion"])[0], "motion", "not"))
                if isinstance(path, str):
                    self._reject(envelope, req.id, Error.BAD_FILE, path)
                    return
            self.worker.start(envelope, req, path)
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
        self._pending[token] = _Pending(envelope, req.id, req.cmd, req.mailbox, now + self.reply_timeout, req.args)

    def _post_priority(self, envelope: list[bytes], req: Request, lane: int, now: float) -> None:
        """A priority command never waits behind the mailbox: its lane takes it, or, while the loop
        has not yet taken the last one, it rides on that one and gets the same reply."""
        token = posted_priority(self.block, lane)
        if token:
            pending = self._pending.get(token)
            if pending is not None:
                pending.riders.append((envelope, req.id))
            else:                                  # its waiters were answered when the loop left
                self._pending[token] = _Pending(envelope, req.id, req.cmd, req.mailbox, now + self.reply_timeout, req.args)
            return
        token = self._token
        self._token += 1
        post_priority(self.block, lane, token)
        self._pending[token] = _Pending(envelope, req.id, req.cmd, req.mailbox, now + self.reply_timeout, req.args)

    def _finish_shutdown(self, envelope: list[bytes], id_: Any, acknowledged: bool) -> None:
        self._send(envelope, ok_reply(id_, {"acknowledged": acknowledged}))
        self._done = True

    def _finish_loading(self, loading: Loading) -> None:
        """Hand a parsed file or a checked request to the loop, or report why not (``internal``,
        logged, if that fails)."""
        try:
            self._refresh_context()
            handed = self.worker.hand_over(loading)
            if isinstance(handed, ErrorReply):
                self._reject(loading.envelope, handed.id, handed.code, handed.message)
            else:
                self._post(loading.envelope, handed)
        except Exception as e:  # noqa: BLE001 -- one request must never stop the server
            req = loading.req
            self._log_exception(json.dumps({"id": req.id, "cmd": req.cmd, "args": req.args}), e)
            self._reject(loading.envelope, req.id, Error.INTERNAL,
                         f"{req.cmd} failed inside the I/O process ({_short(e)}); it was logged.")

    # ------------------------------------------------------------------ shared memory -> ZMQ

    def _pump(self, now: float) -> None:
        loading = self.worker.done()
        if loading is not None:
            self._finish_loading(loading)
        exited = bool(self.block.header[H.LOOP_EXIT])   # read first: the replies posted before it are read next
        self._replies()
        if exited:
            self._loop_left()
        else:
            self._withdraw_overdue(now)
        self.publisher.drain()
        self._end_step()
        if now >= self._next_stats:
            self._next_stats = now + self.stats_period
            self.publisher.publish(b"stats", self.answers.stats(len(self._pending)))

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
            if ok and self.on_accepted is not None:
                self.on_accepted(p.cmd, p.args)       # before the replies: their readers see it applied
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
