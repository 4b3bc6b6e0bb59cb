"""Idempotent retries: the acting requests a client sent, remembered with their replies.

A command that reaches the loop (or ``step``) and carries an ``id`` is remembered with its reply
(the last :data:`RECENT_REQUESTS`), keyed by its client — its socket's routing id, which a client
keeps across reconnections to retry (ZMQ_ROUTER_HANDOVER), and its CURVE key — and the request's
bytes. The same request again is a retry: it gets the first reply, or waits for it, and never acts
twice. Read-only commands are answered afresh and refusals re-validated (they are not remembered).
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

import zmq

RECENT_REQUESTS = 256
"""Acting requests whose replies are remembered for retries."""

Key = tuple[tuple[bytes, ...], bytes, bytes]
"""A remembered request: its routing frames, its client's CURVE key and its digest."""


class Envelope(list):
    """A request's routing frames, and the key its reply is remembered under (None: not remembered)."""
    key: Key | None = None


@dataclass
class _Answer:
    """A remembered request: its reply once sent, and the retries waiting for it meanwhile."""
    reply: bytes | None = None
    retries: list[list[bytes]] = field(default_factory=list)


def client_key(frame: zmq.Frame) -> bytes:
    """The CURVE key of the client that sent ``frame`` (ZAP User-Id); empty without CURVE."""
    try:
        return frame.get("User-Id").encode()
    except zmq.ZMQError:                      # no ZAP user for this mechanism
        return b""


def request_key(envelope: Envelope, user: bytes, raw: bytes) -> Key:
    """The key a request is remembered and recognised under."""
    return tuple(envelope), user, hashlib.blake2b(raw, digest_size=16).digest()


class RecentRequests:
    """The remembered requests of all clients, oldest first; ``send`` is the router's multipart send."""

    def __init__(self, send: Callable[[list[bytes]], None], size: int = RECENT_REQUESTS) -> None:
        self._send, self.size = send, size
        self._recent: dict[Key, _Answer] = {}

    def knows(self, key: Key) -> bool:
        """``key`` is a remembered request (its next arrival is a retry)."""
        return key in self._recent

    def retry(self, envelope: Envelope, key: Key) -> bool:
        """A remembered request again: answer it with the first reply (or when that comes); False if new."""
        answer = self._recent.get(key)
        if answer is None:
            return False
        if answer.reply is None:
            answer.retries.append(envelope)
        else:
            self._send(envelope + [answer.reply])
        return True

    def remember(self, envelope: Envelope, key: Key) -> None:
        """Keep this request's reply for its retries, forgetting the oldest beyond ``size``."""
        envelope.key = key
        self._recent[key] = _Answer()
        while len(self._recent) > self.size:
            del self._recent[next(iter(self._recent))]

    def sent(self, envelope: list[bytes], data: bytes) -> None:
        """A reply went out: a remembered request's is kept, and sent to the retries waiting for it."""
        answer = self._recent.get(getattr(envelope, "key", None))
        if answer is not None:
            answer.reply = data
            for retry in answer.retries:
                self._send(retry + [data])
            answer.retries.clear()
