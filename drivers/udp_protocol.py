"""The ``udp`` backend's datagram protocol, shared by the managing node's link
(drivers.backends.udp) and the controlled-node server (drivers.sim.udp_server).

Datagram = 12-byte transport header + payload::

    0 magic b"PL" | 2 kind u8 | 3 res | 4 sequence u32 | 8 res u32
    kind 1 FRAMES (MN -> server): entries u16 length | u8 answer wanted | one Ethernet frame with FCS
         5 ANSWERS (server -> MN, same sequence): per entry that wanted an answer, in order,
           u16 length (0: nothing came back on the wire) | u32 simulated wire delay ns | the frame
         2 SILENCE (no answer within ``timeout_s``: every awaited frame is lost)
         3 CONTROL (payload: JSON request), 4 CONTROL_REPLY (payload: JSON answer)

The delay carries the simulated propagation delay of a PRes, so timing faults are judged against
``bus.pres_timeout_s`` regardless of loopback jitter. Control requests:
``{"op": "fault", "name": ..., "args": {...}}`` (fault injection), ``{"op": "reset"}`` (reset
every node for the next MN session), ``{"op": "shutdown"}``. Any other op goes to the plant's
``control(request) -> dict`` when it has one (the HIL's ``push``), else it is answered with an error.

Waiting for the peer's datagram (both ends, :class:`Waiter`): the socket is non-blocking; the
waiter busy-polls it (``poll(0)`` + ``sched_yield``) for at most ``spin_s``
(:data:`DEFAULT_SPIN_S`), then sleeps in ``poll(2)`` until the datagram or the timeout. A prompt
answer (a PRes, the SoA's plant step) is thus picked up without a scheduler wake-up, which
dominates a lock-step round trip otherwise. The spin adapts: halved after a wait that had to
sleep, doubled (up to ``spin_s``) after one that did not, so an oversubscribed machine (several
benches on 2 cores) spins little. ``spin_s`` comes from the ``spin_s=`` argument of
:func:`~drivers.backends.udp.open_udp` / :func:`~drivers.sim.udp_server.serve_udp`, else
``bus.udp.spin_s``, else the default; 0 disables the spin.
"""
from __future__ import annotations

import json
import math
import os
import select
import socket
import struct
from time import perf_counter

from drivers.config import UdpConfig
from drivers.hal import BackendError, LinkError
from drivers.powerlink import frames
from drivers.powerlink.frames import MessageType

HEADER = struct.Struct("<2sBxII")
ENTRY = struct.Struct("<HB")             # FRAMES entry: frame length, answer wanted
ANSWER = struct.Struct("<HI")            # ANSWERS entry: frame length (0: none), wire delay ns
MAGIC = b"PL"
FRAMES, SILENCE, CONTROL, CONTROL_REPLY, ANSWERS = 1, 2, 3, 4, 5
DATAGRAM = 65507                        # the largest UDP payload on IPv4
_PREQ, _SOA = int(MessageType.PREQ), int(MessageType.SOA)
_NO_SERVICE = int(frames.RequestedService.NO_SERVICE)
DEFAULT_SPIN_S = UdpConfig.spin_s    # s, longest busy-poll before sleeping in poll(2) (module docstring)
MAX_SPIN_S = 0.01
_MIN_SPIN_S = 2.0e-5             # the adaptive spin never drops below this (or spin_s if smaller)


def spin_seconds(config: UdpConfig, spin_s: float | None = None) -> float:
    """The busy-poll bound: ``spin_s``, else ``config.spin_s`` (``bus.udp.spin_s``)."""
    where = "spin_s"
    if spin_s is None:
        where = "bus.udp.spin_s"
        spin_s = config.spin_s
    if isinstance(spin_s, bool) or not isinstance(spin_s, (int, float)) or not 0.0 <= spin_s <= MAX_SPIN_S:
        raise BackendError(f"{where} must be a number of seconds in [0, {MAX_SPIN_S}], got {spin_s!r}")
    return float(spin_s)


class Waiter:
    """Wait for a non-blocking socket to become readable: bounded adaptive busy-poll, then poll(2).
    Once closed (or when its socket was closed under it: POLLNVAL) a wait raises
    ``LinkError("link closed")`` instead of spinning on a descriptor that is gone."""

    def __init__(self, sock: socket.socket, spin_s: float) -> None:
        self._poller = select.poll()
        self._fd = sock.fileno()
        self._poller.register(self._fd, select.POLLIN)
        self.closed = False
        self.spin_max = spin_s
        self.spin = spin_s
        self._floor = min(spin_s, _MIN_SPIN_S)
        self.hits = 0          # waits answered while spinning
        self.sleeps = 0        # waits that fell through to poll(2)

    def close(self) -> None:
        """Stop watching the socket (before it is closed)."""
        if not self.closed:
            self._poller.unregister(self._fd)
            self.closed = True

    def wait(self, timeout_s: float | None) -> bool:
        """True when a datagram (or a socket error) is ready, False after ``timeout_s`` (None: never)."""
        if self.closed:
            raise LinkError("link closed")
        poll = self._poller.poll
        spin = self.spin
        elapsed = 0.0
        if spin > 0.0:
            if timeout_s is not None and spin > timeout_s:
                spin = timeout_s
            t0 = perf_counter()
            end = t0 + spin
            yield_ = os.sched_yield
            while True:
                ready = poll(0)
                if ready:
                    self.hits += 1
                    if self.spin < self.spin_max:
                        self.spin = min(self.spin_max, 2.0 * self.spin)
                    return _readable(ready)
                now = perf_counter()
                if now >= end:
                    break
                yield_()
            elapsed = now - t0
            self.spin = max(self._floor, 0.5 * self.spin)
        self.sleeps += 1
        if timeout_s is None:
            return _readable(poll())
        remaining = timeout_s - elapsed
        if remaining <= 0.0:
            return _readable(poll(0))
        return _readable(poll(math.ceil(remaining * 1e3)))


def _readable(ready: list) -> bool:
    """A poll's answer as :meth:`Waiter.wait`'s; a descriptor closed under the poller (POLLNVAL)
    raises ``LinkError("link closed")``."""
    if ready and ready[0][1] & select.POLLNVAL:
        raise LinkError("link closed")
    return bool(ready)


def answered(frame) -> bool:
    """Whether a CN may answer this MN frame: a PReq, or a SoA inviting a CN (frames.py layout)."""
    kind = frame[frames.MESSAGE_TYPE_AT]
    return kind == _PREQ or (kind == _SOA and frame[frames.SERVICE_AT] != _NO_SERVICE
                             and frame[frames.SERVICE_TARGET_AT] != frames.MN_NODE_ID)


def control_request(host: str, port: int, request: dict, timeout_s: float) -> dict | None:
    """One CONTROL request to the server at ``host:port`` on a socket of its own (tools, and the fault
    injection of a simulated far end on another wire); its JSON answer, None when none came in
    ``timeout_s``."""
    payload = json.dumps(request).encode()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout_s)
        s.sendto(HEADER.pack(MAGIC, CONTROL, 1, 0) + payload, (host, port))
        try:
            data = s.recv(DATAGRAM)
        except (TimeoutError, ConnectionRefusedError):
            return None
    magic, kind, _, _ = HEADER.unpack_from(data)
    return json.loads(data[HEADER.size:]) if magic == MAGIC and kind == CONTROL_REPLY else None
