"""Free loopback ports for the benches a scenario, a campaign trial or a benchmark starts.

A port picked by binding port 0 comes from the kernel's ephemeral range, the same range every
outgoing TCP connection (each ZMQ ``connect``) takes its local port from; between the pick and the
HIL's or the daemon's own bind, another process's connection may take it ("Address already in
use"). So the ports are drawn at random below that range, where only deliberate binds go, and
checked free by binding them. A port is handed out once per process: sessions started together (a
test's threads) all draw before any of them binds, and two of them drawing the same free port would
meet at the bind or at the daemon's instance lock.
"""
from __future__ import annotations

import secrets
import socket
import threading
from pathlib import Path

LOWEST = 20000                                   # well above the registered services most hosts run
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
TRIES = 200
_given: set[int] = set()                         # ports this process handed out (never twice)
_given_lock = threading.Lock()


def _ephemeral_low() -> int:
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):    # not Linux: the IANA dynamic range
        return 49152


def _bindable(port: int, kind: int) -> bool:
    with socket.socket(socket.AF_INET, kind) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """A loopback port of socket type ``kind`` (TCP or UDP) free now and outside the ephemeral
    range; the kernel's pick (port 0) when none is found or the range leaves no room below it."""
    high = _ephemeral_low()
    if high - LOWEST > TRIES:
        for _ in range(TRIES):
            port = LOWEST + secrets.randbelow(high - LOWEST)
            with _given_lock:
                if port in _given or not _bindable(port, kind):
                    continue
                _given.add(port)
            return port
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
