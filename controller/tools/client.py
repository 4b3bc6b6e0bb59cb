"""Command client with the lazy-pirate pattern (zguide ch. 4): REQ, poll with a timeout,
on timeout close and reopen the socket and resend, give up after ``retries`` attempts.

A retried command may reach the daemon twice when only its reply was lost; the state
table makes that harmless for motion (a second ``move_joints`` meets MOVING and is
refused with ``not_allowed``).
"""
from __future__ import annotations

import itertools
import json
import os
from typing import Any, Self

import zmq

from controller.daemon.endpoints import ClientCurve, is_ipv6
from controller.daemon.io.curve import secure_client


class ClientTimeout(TimeoutError):
    """No reply after every attempt."""


class CommandError(Exception):
    """The daemon answered with an error (``code`` is a stable name, e.g. ``"out_of_range"``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message = code, message


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
        self._prefix = f"{os.getpid()}-{id(self):x}"
        self._sock = self._open()

    def _open(self) -> zmq.Socket:
        sock = self._ctx.socket(zmq.REQ)
        sock.linger = 0
        sock.ipv6 = is_ipv6(self.endpoint)
        if self.curve is not None:
            secure_client(sock, self.curve)
        sock.connect(self.endpoint)
        return sock

    def request(self, cmd: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one request and return the whole reply ``{"id", "ok", ...}``."""
        id_ = f"{self._prefix}-{next(self._ids)}"
        payload = json.dumps({"id": id_, "cmd": cmd, "args": args or {}}).encode()
        for _ in range(self.retries):
            if self._send(payload) and self._sock.poll(int(self.timeout_s * 1000), zmq.POLLIN):
                raw = self._sock.recv()
                try:
                    reply = json.loads(raw)
                except (ValueError, UnicodeDecodeError):
                    raise CommandError("bad_reply", f"the daemon's reply is not JSON: {raw[:80]!r}.") from None
                if not isinstance(reply, dict) or reply.get("id") != id_ or not isinstance(reply.get("ok"), bool):
                    raise CommandError("bad_reply", f"the daemon's reply does not answer request {id_}: {raw[:80]!r}.")
                return reply
            self._sock.close()                 # lazy pirate: a REQ socket cannot resend, open a new one
            self._sock = self._open()
        raise ClientTimeout(f"no reply from {self.endpoint} to {cmd} after {self.retries} attempts "
                            f"of {self.timeout_s:g} s")

    def _send(self, payload: bytes) -> bool:
        """Queue the request; False if no connection takes it within the timeout (a REQ socket's
        send waits for a peer, and one whose handshake failed, e.g. a wrong CURVE key, never comes)."""
        if not self._sock.poll(int(self.timeout_s * 1000), zmq.POLLOUT):
            return False
        try:
            self._sock.send(payload, zmq.NOBLOCK)
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

    def close(self) -> None:
        self._sock.close()
        if self._own_context:
            self._ctx.term()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
