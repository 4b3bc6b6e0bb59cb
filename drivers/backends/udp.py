"""``udp`` backend: the POWERLINK frames over UDP on loopback to a controlled-node process.

The MN side (:func:`open_udp`) sends the frames to the server (:func:`serve_udp`, run in another
process: the hardware-in-the-loop side), which plays the controlled nodes, their drives and the
plant through :class:`~drivers.sim.nodes.SimulatedNodes`, frame by frame in the order sent.

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
:meth:`SimulatedNodes.serve_isochronous <drivers.sim.nodes.SimulatedNodes.serve_isochronous>`
(SoC, PReq and idle SoA of Operational nodes, :mod:`drivers.sim.isochronous`).

Datagram = 12-byte transport header + payload::

    0 magic b"PL" | 2 kind u8 | 3 res | 4 sequence u32 | 8 res u32
    kind 1 FRAMES (MN -> server): entries u16 length | u8 answer wanted | one Ethernet frame with FCS
         5 ANSWERS (server -> MN, same sequence): per entry that wanted an answer, in order,
           u16 length (0: nothing came back on the wire) | u32 simulated wire delay ns | the frame
         2 SILENCE (no answer within ``timeout_s``: every awaited frame is lost)

In real time the MN waits ``bus.udp.timeout_s`` for an answer, then counts every awaited frame
lost. In lock-step (:func:`open_udp` ``lockstep=True``) no wall-clock deadline decides a loss: the
MN waits for the server's answer, so losses only come from the server (an ``ANSWERS`` entry of
length 0, e.g. an injected fault) whatever the host's speed; a server silent for
:data:`LOCKSTEP_STALL_S` is a :class:`~drivers.hal.LinkError` naming it.
         3 CONTROL (payload: JSON request), 4 CONTROL_REPLY (payload: JSON answer)

The delay carries the simulated propagation delay of a PRes, so timing faults are judged against
``bus.pres_timeout_s`` regardless of loopback jitter. Control requests:
``{"op": "fault", "name": ..., "args": {...}}`` (fault injection), ``{"op": "reset"}`` (reset
every node for the next MN session), ``{"op": "shutdown"}``. Any other op goes to the plant's
``control(request) -> dict`` when it has one (the HIL's ``push``), else it is answered with an error.

Waiting for the peer's datagram (both ends): the socket is non-blocking; the waiter busy-polls it
(``poll(0)`` + ``sched_yield``) for at most ``spin_s`` (:data:`DEFAULT_SPIN_S`), then sleeps in
``poll(2)`` until the datagram or the timeout. A prompt answer (a PRes, the SoA's plant step) is
thus picked up without a scheduler wake-up, which dominates a lock-step round trip otherwise. The
spin adapts: halved after a wait that had to sleep, doubled (up to ``spin_s``) after one that did
not, so an oversubscribed machine (several benches on 2 cores) spins little. ``spin_s`` comes from
the ``spin_s=`` argument of :func:`open_udp` / :func:`serve_udp`, else the environment variable
``BIPD_UDP_SPIN_S``, else ``bus.udp.spin_s``, else the default; 0 disables the spin.

Run a server from a shell: ``python -m drivers.backends.udp robot.yaml`` (the ``bus:`` section).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import select
import socket
import struct
from collections.abc import Callable, Mapping
from time import perf_counter

import numpy as np
from numba import njit

from models import ConfigError
from models.common.validation import read_yaml

from drivers.config import BusConfig, BusConfigError, UdpConfig, parse_bus_config
from drivers.sim import isochronous
from drivers.sim.faults import FaultApi, FaultError
from drivers.hal import BackendError, LinkError
from drivers.sim.plant import InertiaPlant, Plant
from drivers.powerlink import frames
from drivers.powerlink.bus import PowerlinkBus
from drivers.powerlink.checks import crc32, le, put_le
from drivers.powerlink.frames import MessageType
from drivers.sim.nodes import SimulatedNodes

HEADER = struct.Struct("<2sBxII")
ENTRY = struct.Struct("<HB")             # FRAMES entry: frame length, answer wanted
ANSWER = struct.Struct("<HI")            # ANSWERS entry: frame length (0: none), wire delay ns
_HEADER_SIZE, _ENTRY_SIZE, _ANSWER_SIZE = HEADER.size, ENTRY.size, ANSWER.size
_PACK_ENTRY = ENTRY.pack_into
MAGIC = b"PL"
FRAMES, SILENCE, CONTROL, CONTROL_REPLY, ANSWERS = 1, 2, 3, 4, 5
_DATAGRAM = 65507                        # the largest UDP payload on IPv4
_PREQ, _SOA = int(MessageType.PREQ), int(MessageType.SOA)
_NO_SERVICE = int(frames.RequestedService.NO_SERVICE)
DEFAULT_SPIN_S = UdpConfig.spin_s    # s, longest busy-poll before sleeping in poll(2) (module docstring)
MAX_SPIN_S = 0.01
SPIN_ENV = "BIPD_UDP_SPIN_S"
_MIN_SPIN_S = 2.0e-5             # the adaptive spin never drops below this (or spin_s if smaller)
LOCKSTEP_STALL_S = 30.0          # s: a lock-step server silent this long is a link failure, not a loss


def spin_seconds(config: UdpConfig, spin_s: float | None = None) -> float:
    """The busy-poll bound: ``spin_s``, else $BIPD_UDP_SPIN_S, else ``config.spin_s``, else the default."""
    where = "spin_s"
    if spin_s is None:
        env = os.environ.get(SPIN_ENV, "").strip()
        if env:
            where = SPIN_ENV
            try:
                spin_s = float(env)
            except ValueError:
                raise BackendError(f"{SPIN_ENV} must be a number of seconds, got {env!r}") from None
        else:
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
    kind = frame[14]
    return kind == _PREQ or (kind == _SOA and frame[20] != _NO_SERVICE and frame[21] != frames.MN_NODE_ID)


class UdpLink:
    """MN side of the UDP transport (module docstring); ``lockstep``: wait for every answer."""

    def __init__(self, config: UdpConfig, spin_s: float | None = None, lockstep: bool = False,
                 server: InProcessServer | None = None) -> None:
        """``server``: answer in this process (:func:`open_in_process`) instead of over a socket."""
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
        self._tx = bytearray(_DATAGRAM)
        self._tx_view = memoryview(self._tx)
        self._tx_array = np.frombuffer(self._tx, np.uint8)
        self._fill = HEADER.size
        self._wanted = 0                         # answers the queued frames want
        self._rx = bytearray(_DATAGRAM)
        self._rx_view = memoryview(self._rx)
        slots = _DATAGRAM // (_ANSWER_SIZE + frames.MIN_FRAME) + 1
        self._offsets = np.zeros(slots, np.int64)
        self._lengths = np.zeros(slots, np.int64)
        self._delays_ns = np.zeros(slots, np.int64)
        # the last collect's answers as arrays (Link protocol, ManagingNode.period's Numba check)
        self._rx_array = np.frombuffer(self._rx, np.uint8)
        self.answers = (self._rx_array, self._offsets, self._lengths, self._delays_ns)
        # both kernels compiled (or loaded from the cache) now, never inside a control cycle
        _parse_answers(self._rx_array, 0, 0, self._offsets, self._lengths, self._delays_ns)
        frame = np.zeros(frames.MIN_FRAME, np.uint8)
        _queue_period(self._tx_array, HEADER.size, frame, frame[None, :], np.zeros(0, np.int64), frame, 0, 0, 1)

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

    def queue_period(self, soc: np.ndarray, preq_rows: np.ndarray, rows: np.ndarray, soa: np.ndarray,
                     first_cycle: int, cycles: int, cycle_us: int) -> None:
        """Queue a steady control period at once (Link protocol): the same entries as
        :meth:`queue_isochronous` and :meth:`transfer` of each frame would."""
        end = _queue_period(self._tx_array, self._fill, soc, preq_rows, rows, soa, first_cycle, cycles, cycle_us)
        if end < 0:
            raise LinkError(f"the frames of one control period exceed one UDP datagram ({_DATAGRAM} bytes)")
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
        if end > _DATAGRAM:
            raise LinkError(f"the frames of one control period exceed one UDP datagram ({_DATAGRAM} bytes)")
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
def _queue_period(tx, at, soc, preq_rows, rows, soa, first_cycle, cycles, cycle_us):
    """The entries of a steady control period from ``tx[at]`` (UdpLink.queue_period); their end or -1.
    Each SoC gets its NetTime and RelativeTime (frames.set_soc_time) and FCS in place."""
    fcs = soc.shape[0] - frames.FCS_SIZE
    for k in range(cycles):
        rel = (first_cycle + k) * cycle_us
        put_le(soc, 20, rel // 1_000_000, 4)
        put_le(soc, 24, (rel % 1_000_000) * 1000, 4)
        put_le(soc, 28, rel, 8)
        put_le(soc, fcs, crc32(soc, 0, fcs), 4)
        at = _put_entry(tx, at, soc, 0)
        for j in range(rows.shape[0]):
            if at >= 0:
                at = _put_entry(tx, at, preq_rows[rows[j]], 1)
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


class _DeferredPlant(Plant):
    """The server's plant behind the drives: ``step`` only records the torques; :meth:`flush` runs
    the step after the SoA's answer has been sent, so the plant integrates while the managing node
    goes on (its next answered frame is read only after the flush: same frames, same physics)."""

    def __init__(self, plant: Plant) -> None:
        self.plant = plant
        self.n_motors = plant.n_motors
        self.motor_position = plant.motor_position
        self.motor_velocity = plant.motor_velocity
        self.sensors = plant.sensors
        self._torque = np.zeros(plant.n_motors)
        self._dt: float | None = None

    def reset(self) -> None:
        self._dt = None
        self.plant.reset()

    def step(self, dt: float, motor_torque: np.ndarray) -> None:
        self.flush()
        self._torque[:] = motor_torque
        self._dt = dt

    @property
    def pending(self) -> bool:
        """A step is waiting for :meth:`flush`."""
        return self._dt is not None

    def flush(self) -> None:
        dt = self._dt
        if dt is not None:
            self._dt = None
            self.plant.step(dt, self._torque)

    def idle(self) -> None:
        self.plant.idle()

    def __getattr__(self, name: str):
        return getattr(self.plant, name)        # control(), time, ... of the served plant


class RemoteFaults(FaultApi):
    """Fault injection forwarded to the UDP server."""

    def __init__(self, link: UdpLink) -> None:
        self.link = link

    def apply(self, name: str, **args) -> None:
        answer = self.link.control({"op": "fault", "name": name, "args": args})
        if "error" in answer:
            raise FaultError(answer["error"])


def open_udp(config: BusConfig, spin_s: float | None = None, lockstep: bool = False) -> PowerlinkBus:
    """A bus whose controlled nodes are served by :func:`serve_udp` at ``bus.udp.host:port``;
    ``spin_s``: the busy-poll bound of the waits; ``lockstep``: the MN waits for every answer
    instead of counting the frames of a late one lost (module docstring)."""
    link = UdpLink(config.udp, spin_s, lockstep)
    return PowerlinkBus(config, link, RemoteFaults(link))


def serve_udp(config: BusConfig | Mapping, plant: Plant | None = None, *,
              idle_timeout_s: float | None = None, spin_s: float | None = None,
              on_network: Callable[[SimulatedNodes], None] | None = None) -> None:
    """Play the controlled nodes of ``config`` (a BusConfig or ``bus:`` mapping; a mapping may hold
    ``udp.spin_s``) on ``bus.udp.host:port`` until a shutdown request, or ``idle_timeout_s`` without
    traffic; ``spin_s``: the busy-poll bound of the waits (module docstring); ``on_network`` gets
    the simulated nodes (their drives) before the first frame."""
    if not isinstance(config, BusConfig):
        udp = config.get("udp") if isinstance(config, Mapping) else None
        if isinstance(udp, Mapping) and "spin_s" in udp:
            raw = dict(udp)
            if spin_s is None:
                spin_s = raw["spin_s"]
            del raw["spin_s"]
            config = dict(config, udp=raw)
        config = parse_bus_config(config)
    spin = spin_seconds(config.udp, spin_s)
    deferred = _DeferredPlant(plant if plant is not None else InertiaPlant.from_config(config))
    flush, idle = deferred.flush, deferred.idle
    network = SimulatedNodes(config, deferred)
    if on_network is not None:
        on_network(network)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((config.udp.host, config.udp.port))
    sock.setblocking(False)
    wait = Waiter(sock, spin).wait
    recvfrom_into = sock.recvfrom_into
    d = Datagrams()
    rx, tx_view = d.rx, d.tx_view
    network.serve_isochronous(d.rx_array, d.tx_array, d.io)    # compiles (or loads) the Numba path now
    try:
        while True:
            try:
                size, peer = recvfrom_into(rx)
            except BlockingIOError:
                if idle_timeout_s is None:
                    wait(None)
                elif not wait(idle_timeout_s):
                    return
                continue
            out, stop = answer_datagram(network, d, size)
            if out:
                sock.sendto(tx_view[:out], peer)
            flush()                         # the SoA's plant step, once the answers are on their way
            idle()
            if stop:
                return
    finally:
        sock.close()


class Datagrams:
    """The server's receive and transmit buffers, as bytes (memoryviews) and as numpy arrays for
    the Numba fast path, with its ``io`` offsets (drivers.sim.isochronous)."""

    def __init__(self) -> None:
        self.rx = bytearray(_DATAGRAM)
        self.rx_view = memoryview(self.rx)
        self.rx_array = np.frombuffer(self.rx, np.uint8)
        self.tx = bytearray(_DATAGRAM)
        self.tx_view = memoryview(self.tx)
        self.tx_array = np.frombuffer(self.tx, np.uint8)
        self.io = np.zeros(isochronous.N_IO, np.int64)


def answer_datagram(network: SimulatedNodes, d: Datagrams, size: int, fast: bool = True) -> tuple[int, bool]:
    """The server's answer to the datagram of ``size`` bytes in ``d.rx``: its length in ``d.tx``
    (0: nothing to send) and whether it was a shutdown request. ``network.plant`` is the server's
    :class:`_DeferredPlant`: its ``flush()`` then ``idle()`` are the caller's, once the answer is
    sent. ``fast``: see :func:`_serve_frames`."""
    if size < HEADER.size:
        return 0, False
    magic, kind, seq, _ = HEADER.unpack_from(d.rx)
    if magic != MAGIC:
        return 0, False
    if kind == FRAMES:
        out = _serve_frames(network, network.plant.flush, d, size, fast)
        if out:
            HEADER.pack_into(d.tx, 0, MAGIC, ANSWERS, seq, 0)
        return out, False
    if kind == CONTROL:
        answer, stop = _control(network, bytes(d.rx_view[HEADER.size:size]))
        payload = json.dumps(answer).encode()
        HEADER.pack_into(d.tx, 0, MAGIC, CONTROL_REPLY, seq, 0)
        d.tx_view[HEADER.size:HEADER.size + len(payload)] = payload
        return HEADER.size + len(payload), stop
    return 0, False


def _serve_frames(network: SimulatedNodes, flush, d: Datagrams, size: int, fast: bool = True) -> int:
    """Deliver the frames of a FRAMES datagram (``size`` bytes in ``d.rx``) in order and write the
    answers wanted into ``d.tx`` after the header; their end, or 0 when none was wanted. A
    truncated entry ends the datagram. ``flush`` runs the pending plant step before a SoA: its
    drive step reads the plant. With ``fast``, the network's Numba path takes every run of frames
    it can (:meth:`SimulatedNodes.serve_isochronous`) and this loop the frames it leaves; the
    plant step of a SoA it stepped runs at once when another SoA follows, else after the answer
    (the network's plant is the server's :class:`_DeferredPlant`)."""
    rx, rx_view, tx, tx_view, io = d.rx, d.rx_view, d.tx, d.tx_view, d.io
    at = HEADER.size
    out = HEADER.size
    wanted = False
    transfer = network.transfer
    unpack_entry, pack_answer = ENTRY.unpack_from, ANSWER.pack_into
    io[isochronous.SIZE] = size
    while at + _ENTRY_SIZE <= size:
        if fast:
            io[isochronous.AT] = at
            io[isochronous.OUT] = out
            io[isochronous.WANTED] = 0
            io[isochronous.PENDING] = network.plant.pending
            network.serve_isochronous(d.rx_array, d.tx_array, io)
            at = int(io[isochronous.AT])
            out = int(io[isochronous.OUT])
            wanted = wanted or bool(io[isochronous.WANTED])
            if io[isochronous.STEPPED]:
                if io[isochronous.MORE_SOA]:
                    flush()
                continue
            if at + _ENTRY_SIZE > size:
                break
        n, answer = unpack_entry(rx, at)
        at += _ENTRY_SIZE
        end = at + n
        if end > size:
            network.rx_errors += 1
            break
        if n > 14 and rx[at + 14] == _SOA:
            flush()
        reply = transfer(rx_view[at:end])
        at = end
        if answer:
            wanted = True
            if reply is None:
                pack_answer(tx, out, 0, 0)
                out += _ANSWER_SIZE
                continue
            m = len(reply)
            delay = network.reply_delay_s
            pack_answer(tx, out, m, round(delay * 1e9) if delay else 0)
            out += _ANSWER_SIZE
            tx_view[out:out + m] = reply
            out += m
    return out if wanted else 0


def _control(network: SimulatedNodes, payload: bytes) -> tuple[dict, bool]:
    """(answer, stop) for one control request; ops other than fault, reset and shutdown go to
    ``network.plant.control(request)`` when the plant has that method."""
    try:
        request = json.loads(payload)
        op = request["op"]
        if op == "fault":
            network.faults.apply(request["name"], **request.get("args", {}))
        elif op == "reset":
            network.reset()
        elif op != "shutdown":
            hook = getattr(network.plant, "control", None)
            if hook is None:
                return {"error": f"unknown control op {op!r} (known: fault, reset, shutdown)"}, False
            answer = hook(request)
            return (answer if isinstance(answer, dict) else {"error": f"control op {op!r}: no answer"}), False
        return {"ok": True}, op == "shutdown"
    except FaultError as exc:
        return {"error": str(exc)}, False
    except (ValueError, KeyError, TypeError) as exc:
        return {"error": f"malformed control request: {exc}"}, False


class InProcessServer:
    """A stand-in for a :class:`UdpLink`'s socket that answers each datagram in this process with
    the server's code (:func:`answer_datagram`, then the plant's flush and idle): the same
    datagrams and code paths as :func:`serve_udp` behind a real socket, without the second process
    or the kernel's UDP (benchmarks, tests). ``fast``: the server's Numba path."""

    def __init__(self, config: BusConfig, plant: Plant | None = None, fast: bool = True) -> None:
        self.plant = _DeferredPlant(plant if plant is not None else InertiaPlant.from_config(config))
        self.network = SimulatedNodes(config, self.plant)
        self.datagrams = Datagrams()
        self.fast = fast
        self._reply = 0
        self.closed = False

    def send(self, data) -> None:
        d = self.datagrams
        size = len(data)
        d.rx[:size] = data
        self._reply, _ = answer_datagram(self.network, d, size, self.fast)
        self.plant.flush()
        self.plant.idle()

    def reply(self) -> bytes:
        """The answer to the last datagram (b"": none)."""
        return bytes(self.datagrams.tx[:self._reply])

    def recv_into(self, buf) -> int:
        n = self._reply
        if not n:
            raise BlockingIOError
        buf[:n] = self.datagrams.tx[:n]
        self._reply = 0
        return n

    def wait(self, timeout_s: float | None) -> bool:
        """Whether an answer is pending (the link's waiter): the answer to a datagram comes
        with its send or never, so this never waits."""
        if self.closed:
            raise LinkError("link closed")
        return self._reply > 0

    def close(self) -> None:
        """Nothing to release; later waits raise ``LinkError("link closed")``."""
        self.closed = True


def open_in_process(config: BusConfig, plant: Plant | None = None, fast: bool = True,
                    server: InProcessServer | None = None) -> PowerlinkBus:
    """A ``udp`` bus (MN side as :func:`open_udp`) whose server runs in this process
    (:class:`InProcessServer`, or ``server``); without ``fast``, both ends take their Python paths
    only (the reference the Numba paths are measured and tested against)."""
    link = UdpLink(config.udp, server=server if server is not None else InProcessServer(config, plant, fast))
    if not fast:
        link.answers = link.queue_period = None          # the MN looks for them at construction
    return PowerlinkBus(config, link, RemoteFaults(link))


def shutdown_server(config: UdpConfig, timeout_s: float = 1.0) -> None:
    """Ask the server at ``config.host:port`` to stop."""
    link = UdpLink(UdpConfig(config.host, config.port, timeout_s))
    try:
        link.control({"op": "shutdown"})
    finally:
        link.close(reset=False)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the simulated POWERLINK controlled nodes over UDP.")
    parser.add_argument("config", help="YAML file with a bus: section")
    parser.add_argument("--idle-timeout", type=float, default=None, help="stop after this many idle seconds")
    args = parser.parse_args(argv)
    try:
        document = read_yaml(args.config)
        serve_udp(document["bus"] if isinstance(document, dict) and "bus" in document else document,
                  idle_timeout_s=args.idle_timeout)
    except ConfigError as e:
        parser.exit(2, f"{parser.prog}: error: {e}\n")
    except BusConfigError as e:
        parser.exit(2, f"{parser.prog}: error: {args.config}: {e}\n")


if __name__ == "__main__":
    main()
