"""``udp`` backend, managing-node side: the POWERLINK frames over UDP on loopback to a
controlled-node process (:func:`drivers.sim.udp_server.serve_udp`, the hardware-in-the-loop side),
which plays the controlled nodes, their drives and the plant frame by frame in the order sent.
The datagrams are :mod:`drivers.udp_protocol`'s.

The link holds frames back until the managing node collects answers
(:meth:`~drivers.powerlink.managing_node.ManagingNode.period`): in steady state a whole control
period (five cycles of SoC, PReqs and SoA) is one datagram out and its PRes one datagram back;
otherwise one cycle's SoC and PReqs, or an inviting SoA, is. The period's last SoA follows its
answers, and :meth:`UdpLink.flush` sends it at once, so the server's drives and plant step while
the managing node decodes and the controller computes.
The result is the same frames, in the same order, as the ``sim`` backend.

Steady state runs in Numba on both ends, with the Python path for everything else (tested
byte for byte against it, tests/drivers/powerlink/test_fast_paths.py): the MN queues a period's frames
with :meth:`UdpLink.queue_period` and checks its PRes with
:func:`~drivers.powerlink.checks.steady_pres`; the server hands each datagram to
:meth:`SimulatedNodes.serve_isochronous <drivers.sim.nodes.SimulatedNodes.serve_isochronous>`.

In real time the MN waits ``bus.udp.timeout_s`` for an answer, then counts every awaited frame
lost. In lock-step (:func:`open_udp` ``lockstep=True``) no wall-clock deadline decides a loss: the
MN waits for the server's answer, so losses only come from the server (an ``ANSWERS`` entry of
length 0, e.g. an injected fault) whatever the host's speed; a server silent for
:data:`LOCKSTEP_STALL_S` is a :class:`~drivers.hal.LinkError` naming it.
"""
from __future__ import annotations

import json
import socket
from time import perf_counter, time_ns
from typing import Protocol

import numpy as np
from numba import njit

from drivers.config import BusConfig, UdpConfig
from drivers.fault_api import FaultApi, FaultError
from drivers.hal import LinkError
from drivers.powerlink import frames
from drivers.powerlink.bus import PowerlinkBus
from drivers.powerlink.checks import crc32, le, put_le
from drivers.udp_protocol import (ANSWER, ANSWERS, CONTROL, CONTROL_REPLY, DATAGRAM, ENTRY, FRAMES, HEADER,
                                           MAGIC, SILENCE, Waiter, answered, spin_seconds)

_HEADER_SIZE, _ENTRY_SIZE, _ANSWER_SIZE = HEADER.size, ENTRY.size, ANSWER.size
_PACK_ENTRY = ENTRY.pack_into
LOCKSTEP_STALL_S = 30.0          # s: a lock-step server silent this long is a link failure, not a loss


class Peer(Protocol):
    """A server answering in this process instead of a socket (drivers.sim.udp_server.InProcessServer)."""

    closed: bool

    def send(self, data) -> None: ...

    def recv_into(self, buf) -> int: ...

    def wait(self, timeout_s: float | None) -> bool: ...

    def close(self) -> None: ...


class UdpLink:
    """MN side of the UDP transport (module docstring); ``lockstep``: wait for every answer."""

    def __init__(self, config: UdpConfig, spin_s: float | None = None, lockstep: bool = False,
                 server: Peer | None = None) -> None:
        """``server``: answer in this process (:func:`drivers.backends.sim.open_in_process`) instead of over a socket."""
        self.address = (config.host, config.port)
        self.timeout_s = config.timeout_s
        self.lockstep = lockstep
        spin = spin_seconds(config, spin_s)
        if server is None:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.sock.connect(self.address)
            self.sock.setblocking(False)
            self.waiter = Waiter(self.sock, spin)
        else:
            self.sock = self.waiter = server
        self.reply_delay_s = 0.0
        self.reply_delays: list[float] = []
        self.seq = 0
        self.stale = 0
        self._tx = bytearray(DATAGRAM)
        self._tx_view = memoryview(self._tx)
        self._tx_array = np.frombuffer(self._tx, np.uint8)
        self._fill = HEADER.size
        self._wanted = 0                         # answers the queued frames want
        self._rx = bytearray(DATAGRAM)
        self._rx_view = memoryview(self._rx)
        slots = DATAGRAM // (_ANSWER_SIZE + frames.MIN_FRAME) + 1
        self._offsets = np.zeros(slots, np.int64)
        self._lengths = np.zeros(slots, np.int64)
        self._delays_ns = np.zeros(slots, np.int64)
        # the last collect's answers as arrays (Link protocol, ManagingNode.period's Numba check)
        self._rx_array = np.frombuffer(self._rx, np.uint8)
        self.answers = (self._rx_array, self._offsets, self._lengths, self._delays_ns)
        # both kernels compiled (or loaded from the cache) now, never inside a control cycle
        _parse_answers(self._rx_array, 0, 0, self._offsets, self._lengths, self._delays_ns)
        frame = np.zeros(frames.MIN_FRAME, np.uint8)
        _queue_period(self._tx_array, HEADER.size, frame, frame[None, :], np.zeros(1, np.int64), np.zeros(0, np.int64), frame,
                      0, 0, 1, 0)

    def transfer(self, frame: memoryview) -> memoryview | None:
        """Hold back a frame nothing answers; send an answered one (a SoA inviting a CN) with what is
        held back, and return its answer."""
        if not answered(frame):
            self._queue(frame, 0)
            return None
        self._queue(frame, 1)
        reply = self.collect()[-1]
        self.reply_delay_s = self.reply_delays[-1]
        return reply

    def queue_isochronous(self, soc: memoryview, preqs: tuple[memoryview, ...]) -> None:
        queue = self._queue
        queue(soc, 0)
        for preq in preqs:
            queue(preq, 1)

    def queue_period(self, soc: np.ndarray, preq_rows: np.ndarray, preq_lengths: np.ndarray, rows: np.ndarray,
                     soa: np.ndarray, first_cycle: int, cycles: int, cycle_us: int, epoch_ns: int) -> None:
        """Queue a steady control period at once (Link protocol): the same entries as
        :meth:`queue_isochronous` and :meth:`transfer` of each frame would."""
        end = _queue_period(self._tx_array, self._fill, soc, preq_rows, preq_lengths, rows, soa, first_cycle, cycles,
                            cycle_us, epoch_ns)
        if end < 0:
            raise LinkError(f"the frames of one control period exceed one UDP datagram ({DATAGRAM} bytes)")
        self._fill = end
        self._wanted += cycles * len(rows)

    def collect(self) -> list[memoryview | None]:
        """One datagram out (everything queued), one back (an answer per PReq or inviting SoA)."""
        n, self._wanted = self._wanted, 0
        return self._exchange(n)

    def flush(self) -> None:
        """Send the held-back frames now; nothing answers them."""
        if self._fill > HEADER.size:
            self._send(FRAMES, None, 0)

    def control(self, request: dict) -> dict:
        """Send a control request and return the server's JSON answer."""
        self.flush()
        payload = json.dumps(request).encode()
        self._send(CONTROL, payload, len(payload))
        kind, size = self._receive()
        if kind != CONTROL_REPLY:
            raise LinkError(f"the UDP server at {self.address[0]}:{self.address[1]} did not answer "
                            f"control request {request.get('op')!r}")
        return json.loads(bytes(self._rx_view[HEADER.size:size]))

    def close(self, reset: bool = True) -> None:
        """Ask the server to reset its nodes (``reset``), then release the socket; a receive on
        the closed link raises ``LinkError("link closed")``."""
        self.lockstep = False                    # a server gone for good: give up after timeout_s
        if reset and not self.waiter.closed:
            try:
                self.control({"op": "reset"})
            except (LinkError, OSError):
                pass
        self.waiter.close()
        self.sock.close()

    def _queue(self, frame, answer: int) -> None:
        n = len(frame)
        at = self._fill
        end = at + _ENTRY_SIZE + n
        if end > DATAGRAM:
            raise LinkError(f"the frames of one control period exceed one UDP datagram ({DATAGRAM} bytes)")
        _PACK_ENTRY(self._tx, at, n, answer)
        self._tx_view[end - n:end] = frame
        self._fill = end
        self._wanted += answer

    def _exchange(self, n: int) -> list[memoryview | None]:
        """Send the queue and read the ``n`` answers it wants (None: lost); delays in ``reply_delays``.
        The frames are views into the receive buffer, valid until the next exchange."""
        self._send(FRAMES, None, 0)
        kind, size = self._receive()
        if n > len(self._offsets):
            raise LinkError(f"{n} answers wanted in one datagram, at most {len(self._offsets)} fit")
        _parse_answers(self._rx_array, size if kind == ANSWERS else 0, n, self._offsets, self._lengths,
                       self._delays_ns)
        view = self._rx_view
        replies: list[memoryview | None] = [None] * n
        delays = self.reply_delays
        delays.clear()
        delays.extend([0.0] * n)
        for k, (at, length, delay_ns) in enumerate(zip(self._offsets[:n].tolist(), self._lengths[:n].tolist(),
                                                       self._delays_ns[:n].tolist())):
            if length:
                replies[k] = view[at:at + length]
                delays[k] = delay_ns * 1e-9
        return replies

    def _send(self, kind: int, payload, n: int) -> None:
        """Send the queued frames (``kind`` FRAMES) or ``payload``."""
        self.seq = (self.seq + 1) & 0xFFFF_FFFF
        HEADER.pack_into(self._tx, 0, MAGIC, kind, self.seq, 0)
        if kind == FRAMES:
            n = self._fill - HEADER.size
            self._fill = HEADER.size
        else:
            self._tx_view[HEADER.size:HEADER.size + n] = payload
        try:
            self.sock.send(self._tx_view[:HEADER.size + n])
        except OSError as exc:
            if self.waiter.closed:
                raise LinkError("link closed") from None
            raise LinkError(f"cannot send to the UDP server at {self.address[0]}:{self.address[1]}: "
                            f"{exc}") from None

    def _receive(self) -> tuple[int, int]:
        """(kind, datagram size) of the answer to the last datagram; (SILENCE, 0) when none came
        within ``timeout_s``; in lock-step a :class:`LinkError` when none came within
        :data:`LOCKSTEP_STALL_S`."""
        deadline = perf_counter() + (LOCKSTEP_STALL_S if self.lockstep else self.timeout_s)
        wait = self.waiter.wait
        recv_into = self.sock.recv_into
        if self.waiter.closed:
            raise LinkError("link closed")
        while True:
            try:
                size = recv_into(self._rx)
            except BlockingIOError:
                if not wait(deadline - perf_counter()):
                    if self.lockstep:
                        raise LinkError(f"the UDP server at {self.address[0]}:{self.address[1]} answered nothing "
                                        f"for {LOCKSTEP_STALL_S:g} s (lock-step waits for every answer): is its "
                                        "process stopped or stuck?")
                    return SILENCE, 0
                continue
            except ConnectionRefusedError:
                raise LinkError(f"no UDP controlled-node server at {self.address[0]}:{self.address[1]}"
                                ) from None
            if size >= HEADER.size:
                magic, kind, seq, _ = HEADER.unpack_from(self._rx)
                if magic == MAGIC and seq == self.seq:
                    return kind, size
            self.stale += 1


@njit(cache=True)
def _put_entry(tx, at, frame, answer):
    """One FRAMES entry (length, answer wanted, the frame) at ``tx[at]``; its end, -1 if it overflows."""
    n = frame.shape[0]
    end = at + _ENTRY_SIZE + n
    if end > tx.shape[0]:
        return -1
    put_le(tx, at, n, 2)
    tx[at + 2] = answer
    tx[at + _ENTRY_SIZE:end] = frame
    return end


@njit(cache=True)
def _queue_period(tx, at, soc, preq_rows, preq_lengths, rows, soa, first_cycle, cycles, cycle_us, epoch_ns):
    """The entries of a steady control period from ``tx[at]`` (UdpLink.queue_period); their end or -1.
    The PReq of row ``r`` is ``preq_rows[r, :preq_lengths[r]]``.
    Each SoC gets its NetTime (``epoch_ns`` + its cycle's time), RelativeTime (ManagingNode._queue_isochronous)
    and FCS in place."""
    fcs = soc.shape[0] - frames.FCS_SIZE
    for k in range(cycles):
        rel = (first_cycle + k) * cycle_us
        t = epoch_ns + rel * 1000
        put_le(soc, frames.NET_TIME_AT, t // 1_000_000_000, 4)
        put_le(soc, frames.NET_TIME_NS_AT, t % 1_000_000_000, 4)
        put_le(soc, frames.RELATIVE_TIME_AT, rel, 8)
        put_le(soc, fcs, crc32(soc, 0, fcs), 4)
        at = _put_entry(tx, at, soc, 0)
        for j in range(rows.shape[0]):
            if at >= 0:
                at = _put_entry(tx, at, preq_rows[rows[j], :preq_lengths[rows[j]]], 1)
        if k < cycles - 1 and at >= 0:
            at = _put_entry(tx, at, soa, 0)
        if at < 0:
            return -1
    return at


@njit(cache=True)
def _parse_answers(rx, size, n, offsets, lengths, delays_ns):
    """The first ``n`` entries of an ANSWERS datagram of ``size`` bytes (0: none came): frame
    offset, length (0: lost, also for entries a short datagram misses) and wire delay in ns."""
    at = _HEADER_SIZE
    for k in range(n):
        offsets[k] = lengths[k] = delays_ns[k] = 0
    for k in range(n):
        if at + _ANSWER_SIZE > size:
            return
        length = le(rx, at, 2)
        delay = le(rx, at + 2, 4)
        at += _ANSWER_SIZE
        if at + length > size:
            return
        offsets[k], lengths[k], delays_ns[k] = at, length, delay
        at += length


class RemoteFaults(FaultApi):
    """Fault injection forwarded to the UDP server."""

    def __init__(self, link: UdpLink) -> None:
        self.link = link

    def apply(self, name: str, **args) -> None:
        answer = self.link.control({"op": "fault", "name": name, "args": args})
        if "error" in answer:
            raise FaultError(answer["error"])


def open_udp(config: BusConfig, spin_s: float | None = None, lockstep: bool = False) -> PowerlinkBus:
    """A bus whose controlled nodes are served by :func:`drivers.sim.udp_server.serve_udp` at ``bus.udp.host:port``;
    ``spin_s``: the busy-poll bound of the waits; ``lockstep``: the MN waits for every answer
    instead of counting the frames of a late one lost (module docstring)."""
    link = UdpLink(config.udp, spin_s, lockstep)
    return PowerlinkBus(config, link, RemoteFaults(link), epoch_ns=None if lockstep else time_ns())


def shutdown_server(config: UdpConfig, timeout_s: float = 1.0) -> None:
    """Ask the server at ``config.host:port`` to stop."""
    link = UdpLink(UdpConfig(config.host, config.port, timeout_s))
    try:
        link.control({"op": "shutdown"})
    finally:
        link.close(reset=False)
