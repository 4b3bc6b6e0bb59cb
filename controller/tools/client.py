"""The daemon's Python client, which ``bipd ctl`` uses and scripts import (docs/scripting.md).

Commands go over REQ with the lazy-pirate pattern (zguide ch. 4): poll with a timeout, on
timeout close and reopen the socket and resend, give up after ``retries`` attempts. A retry
carries the request's id unchanged, from a socket under the same routing id, so the daemon
answers it with the first reply instead of acting twice (an accepted ``move_joints`` stays
accepted). :meth:`Client.keepalive` feeds the
motion watchdog from a thread, :meth:`Client.wait_state` and :meth:`Client.wait_motion` follow
the state, :meth:`Client.subscribe` streams telemetry and events (SUB). Errors are typed:
:class:`CommandError` (the daemon refused, with its code), :class:`ClientTimeout` (no reply, or a
wait that did not end), :class:`MotionError` (a motion that ended otherwise than at its end).
"""
from __future__ import annotations

import itertools
import json
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Self

import zmq

from controller.daemon.endpoints import ClientCurve, is_ipv6
from controller.daemon.io.curve import secure_client

BUSY = frozenset({"MOVING", "STABILIZING"})
"""States a motion runs in (the watchdog is armed there)."""
FIRST_BEAT_S = 0.01
"""Wall seconds between :class:`Heartbeat`'s first two pings, which measure how fast the loop's clock runs."""
DONE = "TRAJECTORY_DONE"
"""The reason a motion that reached its end leaves MOVING with."""


class ClientError(Exception):
    """Anything the client raises about the daemon."""


class ClientTimeout(ClientError, TimeoutError):
    """No reply after every attempt, or a wait that did not end in time."""


class CommandError(ClientError):
    """The daemon refused the command (``code`` is a stable name, e.g. ``"out_of_range"``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message = code, message


class MotionError(ClientError):
    """A motion ended otherwise than at its end: ``state`` and ``reason`` (e.g. HOLD, WATCHDOG;
    FAULT, DRIVE_FAULT), ``status`` the daemon's last status."""

    def __init__(self, state: str, reason: str, status: dict[str, Any]) -> None:
        detail = status.get("fault_detail") if state == "FAULT" else None
        super().__init__(f"the motion ended in {state}, reason {reason}" + (f": {detail}" if detail else ""))
        self.state, self.reason, self.status = state, reason, status


class Client:
    """``Client(endpoint).call("move_joints", q=[...], duration=2.0)`` -> result dict."""

    def __init__(self, endpoint: str = "tcp://127.0.0.1:5555", timeout_s: float = 1.0, retries: int = 3,
                 curve: ClientCurve | None = None, context: zmq.Context | None = None) -> None:
        if retries < 1:
            raise ValueError(f"retries counts attempts and must be at least 1, got {retries}")
        self.endpoint, self.timeout_s, self.retries, self.curve = endpoint, timeout_s, retries, curve
        self._own_context = context is None
        self._ctx = zmq.Context() if context is None else context
        self._ids = itertools.count(1)
        self._prefix = f"{os.getpid()}-{secrets.token_hex(6)}"     # this client's routing id and ids' prefix
        self._sock = self._connected()

    def _open(self, kind: int) -> zmq.Socket:
        sock = self._ctx.socket(kind)
        sock.linger = 0
        sock.ipv6 = is_ipv6(self.endpoint)
        if self.curve is not None:
            secure_client(sock, self.curve)
        return sock

    def _connected(self) -> zmq.Socket:
        sock = self._open(zmq.DEALER)               # a REQ socket would take a stale reply for the next one's
        sock.routing_id = self._prefix.encode()       # the same after a reconnection: the daemon knows a retry
        sock.connect(self.endpoint)
        return sock

    def request(self, cmd: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one request and return the whole reply ``{"id", "ok", ...}``; every attempt
        carries the same id (lazy pirate: a new socket per attempt, under the same routing id)."""
        id_ = f"{self._prefix}-{next(self._ids)}"
        payload = json.dumps({"id": id_, "cmd": cmd, "args": args or {}}).encode()
        for _ in range(self.retries):
            if self._send(payload) and (reply := self._reply(id_)) is not None:
                return reply
            self._sock.close()
            self._sock = self._connected()
        raise ClientTimeout(f"no reply from {self.endpoint} to {cmd} after {self.retries} attempts "
                            f"of {self.timeout_s:g} s")

    def _reply(self, id_: str) -> dict[str, Any] | None:
        """The reply to request ``id_`` within the timeout, None if none came. A reply to one of this
        client's earlier requests is dropped: a request retried after a late reply is answered once per
        attempt, and the late copies must not pass for the next request's answer."""
        deadline = time.monotonic() + self.timeout_s
        while (left := deadline - time.monotonic()) > 0 and self._sock.poll(max(1, round(left * 1000)), zmq.POLLIN):
            raw = self._sock.recv_multipart()[-1]
            try:
                reply = json.loads(raw)
            except (ValueError, UnicodeDecodeError):
                raise CommandError("bad_reply", f"the daemon's reply is not JSON: {raw[:80]!r}.") from None
            if isinstance(reply, dict) and self._earlier(reply.get("id"), id_):
                continue
            if not isinstance(reply, dict) or reply.get("id") != id_ or not isinstance(reply.get("ok"), bool):
                raise CommandError("bad_reply", f"the daemon's reply does not answer request {id_}: {raw[:80]!r}.")
            return reply
        return None

    def _earlier(self, reply_id: object, id_: str) -> bool:
        """``reply_id`` is one of this client's requests before ``id_``."""
        prefix = f"{self._prefix}-"
        return (isinstance(reply_id, str) and reply_id.startswith(prefix) and reply_id[len(prefix):].isdigit()
                and int(reply_id[len(prefix):]) < int(id_[len(prefix):]))

    def _send(self, payload: bytes) -> bool:
        """Queue the request; False if no connection takes it within the timeout (the socket's send
        waits for a peer, and one whose handshake failed, e.g. a wrong CURVE key, never comes)."""
        if not self._sock.poll(int(self.timeout_s * 1000), zmq.POLLOUT):
            return False
        try:
            self._sock.send_multipart([b"", payload], zmq.NOBLOCK)     # the delimiter a REQ socket would add
        except zmq.Again:                     # the connection went between the poll and the send
            return False
        return True

    def call(self, cmd: str, /, **args: Any) -> dict[str, Any]:
        """The command's result; raises :class:`CommandError` or :class:`ClientTimeout`."""
        reply = self.request(cmd, args)
        if reply["ok"]:
            return reply.get("result", {})
        err = reply.get("error") or {}
        raise CommandError(str(err.get("code", "bad_reply")), str(err.get("message", "")))

    def status(self) -> dict[str, Any]:
        """The daemon's ``status`` (state, last telemetry, faults, last transition, configuration)."""
        return self.call("status")

    # ------------------------------------------------------------------ following the state

    def wait_state(self, *states: str, timeout_s: float = 30.0, poll_s: float = 0.05) -> dict[str, Any]:
        """Poll ``status`` every ``poll_s`` (each poll feeds the watchdog; on a stepped daemon,
        after a ``step`` of ``poll_s``) until the state is one of ``states``; returns that status,
        raises :class:`ClientTimeout` after ``timeout_s``."""
        end = time.monotonic() + timeout_s
        while True:
            status = self.status()
            if status["state"] in states:
                return status
            if time.monotonic() >= end:
                raise ClientTimeout(f"the daemon stayed in {status['state']}, not {' or '.join(states)}, "
                                    f"for {timeout_s:g} s")
            self._tick(status, poll_s)

    def wait_motion(self, timeout_s: float | None = None, poll_s: float = 0.05,
                    progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
        """Follow the running motion (MOVING or STABILIZING) to its end, polling ``status`` every
        ``poll_s`` (on a stepped daemon, after a ``step`` of ``poll_s``) inside :meth:`keepalive`;
        ``progress`` sees every status. Returns the final status when the motion reached
        its end (reason TRAJECTORY_DONE) or none was running; raises :class:`MotionError` naming
        the state and reason otherwise (a fault, an emergency stop, the watchdog, an operator's
        stop or hold), :class:`ClientTimeout` after ``timeout_s``."""
        end = None if timeout_s is None else time.monotonic() + timeout_s
        with self.keepalive():
            while True:
                status = self.status()
                if progress is not None:
                    progress(status)
                last = status.get("last_transition") or {}
                if status["state"] not in BUSY and last.get("to_state") in (None, status["state"]):
                    if last.get("from_state") not in BUSY or last.get("reason") == DONE:
                        return status                  # ended at its end, or nothing was running
                    raise MotionError(status["state"], str(last.get("reason")), status)
                if end is not None and time.monotonic() >= end:
                    raise ClientTimeout(f"the motion was still running ({status['state']}) after {timeout_s:g} s")
                self._tick(status, poll_s)

    def _tick(self, status: dict[str, Any], poll_s: float) -> None:
        """Let ``poll_s`` of the loop's time pass: a ``step`` on a stepped daemon, else a sleep."""
        if status.get("stepped"):
            self.call("step", seconds=poll_s)
        else:
            time.sleep(poll_s)

    @contextmanager
    def keepalive(self, period_s: float | None = None) -> Iterator[Heartbeat]:
        """Feed the motion watchdog from a thread while the block runs: a ``ping`` every
        ``period_s`` (default a third of the daemon's ``watchdog_s`` of loop time, shortened when
        the loop's clock runs faster than the wall's, as in lock-step)."""
        config = self.call("get_config")
        beat = Heartbeat(self, float(config.get("watchdog_s", 1.0)) / 3.0, float(config["period"]), period_s)
        beat.start()
        try:
            yield beat
        finally:
            beat.stop()

    def subscribe(self, topics: tuple[str, ...] = ("telemetry", "event"), endpoint: str | None = None) -> Subscription:
        """Telemetry and events as they are published (default endpoint: the daemon's own,
        from ``status``); use it as a context manager, iterate it or :meth:`Subscription.recv`."""
        if endpoint is None:
            endpoint = self.status()["config"]["telemetry_endpoint"]
        return Subscription(self, endpoint, topics)

    def close(self) -> None:
        self._sock.close()
        if self._own_context:
            self._ctx.term()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Heartbeat:
    """The thread :meth:`Client.keepalive` runs: its own socket on the client's ZMQ context;
    ``beats`` counts the pings answered, ``error`` holds the first failure (the thread then stops)."""

    def __init__(self, client: Client, budget_s: float, period: float, period_s: float | None) -> None:
        self.client, self.budget_s, self.period, self.fixed = client, budget_s, period, period_s
        self.beats = 0
        self.error: ClientError | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bipd-keepalive", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        c = self.client
        with Client(c.endpoint, c.timeout_s, c.retries, c.curve, c._ctx) as own:
            interval, last = self.fixed or FIRST_BEAT_S, None     # then from the loop's measured rate
            while not self._stop.is_set():
                try:
                    cycle = own.call("ping")["cycle"]
                except ClientError as e:
                    self.error = e
                    return
                self.beats += 1
                now = time.monotonic()
                if self.fixed is None and last is not None and now > last[0]:
                    rate = (cycle - last[1]) * self.period / (now - last[0])     # loop s per wall s
                    interval = self.budget_s / max(rate, 1.0)
                last = (now, cycle)
                self._stop.wait(interval)


class Subscription:
    """A SUB socket on the daemon's telemetry endpoint: ``(topic, message)`` pairs."""

    def __init__(self, client: Client, endpoint: str, topics: tuple[str, ...]) -> None:
        self._sock = client._open(zmq.SUB)
        self._sock.ipv6 = is_ipv6(endpoint)
        for topic in topics:
            self._sock.subscribe(topic.encode())
        self._sock.connect(endpoint)

    def recv(self, timeout_s: float | None = None) -> tuple[str, dict[str, Any]]:
        """The next message; :class:`ClientTimeout` if none comes within ``timeout_s``."""
        if timeout_s is not None and not self._sock.poll(int(timeout_s * 1000), zmq.POLLIN):
            raise ClientTimeout(f"no telemetry within {timeout_s:g} s")
        topic, data = self._sock.recv_multipart()
        return topic.decode(), json.loads(data)

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        while True:
            yield self.recv()

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
