"""``raw`` backend: POWERLINK on a real Ethernet wire, through an AF_PACKET socket bound to
``bus.interface`` and EtherType 0x88AB (EPSG DS 301 §4.2 cycle, §4.6 frames on Ethernet II).

:class:`RawLink` is the managing node's :class:`~drivers.powerlink.managing_node.Link` on a socket:

- frames go out one by one, in real time, every POWERLINK cycle paced on the monotonic clock
  (``bus.cycle_time_s``): the SoC at the cycle's start, each PReq after the previous CN's PRes or
  its listen window, the SoA and an ASnd after the isochronous phase. Nothing is batched over a
  control period (the UDP link's datagram-per-period has no wire equivalent).
- a PReq's PRes is awaited for a listen window, ``bus.pres_timeout_s`` (DS 301's PResTimeout) or
  half the cycle shared by the polled CNs if that is longer; one that comes within it carries its
  round trip as ``reply_delays`` (the MN counts it *late* beyond ``bus.pres_timeout_s``), none is
  *lost*: both feed the DS 301 threshold counters (:mod:`drivers.powerlink.threshold`) in the
  managing node. A PRes that comes after its window is dropped before the next PReq goes out.
- the MN's frames carry the interface's own MAC as source; a CN's MAC is the one the managing
  node learned from its IdentResponse (the PReq's destination).
- the kernel adds the FCS on transmit and strips it on receive: an MN frame's FCS is not sent;
  what arrives is handed to the MN's decoders as received (``fcs = False``: without FCS, maybe
  padded to the 60-byte Ethernet minimum).

Buffers are allocated once (one transmit buffer, one receive slot per answer a control period can
bring); every receive is a ``recv_into``. Timing is kept in preallocated rings for
``bipd bench wire``: each cycle's wake-up lateness and each PReq→PRes round trip (:meth:`RawLink.timing`).

In lock-step (``loop.lockstep``, a simulated far end: the HIL's controlled nodes, drivers.sim.hil.wire)
no wall clock decides anything: cycles start at once instead of on the monotonic clock, a PReq or
inviting SoA waits for its answer or for the far end's *silence* frame
(:data:`drivers.raw_socket.SILENCE_ETHERTYPE`), and every answer counts as on time (delay 0, the
simulated nodes answer at once), so losses come from the simulation only, whatever the host's
speed; a far end silent for :data:`~drivers.backends.udp.LOCKSTEP_STALL_S` (e.g. a real node,
which never sends a silence frame) is a :class:`~drivers.hal.LinkError` naming it. Faults are injected
there through the far end's control channel (:class:`FarEndFaults`); on a real wire (real time) they
are refused (:class:`NoFaults`).

Opening the socket needs root or the ``CAP_NET_RAW`` capability (deploy/INSTALL.md: the systemd
unit's ``AmbientCapabilities=CAP_NET_RAW``); without it :func:`open_socket` raises a
:class:`~drivers.hal.LinkError` naming the capability (:func:`drivers.raw_socket.open_socket`).
"""
from __future__ import annotations

import os
import select
from time import perf_counter_ns, sleep

import numpy as np

from drivers.config import BusConfig, UdpConfig
from drivers.fault_api import FaultApi, FaultError
from drivers.hal import LinkError
from drivers.raw_socket import MIN_ETHERNET, SILENCE_ETHERTYPE, SILENCE_NODE_AT, open_socket
from drivers.powerlink import frames
from drivers.powerlink.bus import PowerlinkBus
from drivers.backends.udp import LOCKSTEP_STALL_S
from drivers.udp_protocol import answered, control_request

DEFAULT_SPIN_S = 2.0e-4               # s: busy-poll before sleeping in select(2) for an answer
WAKE_SPIN_S = 2.0e-4                  # s: the cycle start is approached by sleeping to this, then spinning
TIMING_SAMPLES = 1 << 16              # per ring (round trips, wake-ups): the last samples kept
_PRES, _SOA, _ASND = int(frames.MessageType.PRES), int(frames.MessageType.SOA), int(frames.MessageType.ASND)
_MAC = frames.SRC_MAC_AT - frames.DST_MAC_AT


class RawLink:
    """MN side of the raw Ethernet wire (module docstring). ``slots``: the answers one control
    period can bring (PRes per cycle and CN, plus one ASnd); ``lockstep``: see the module docstring."""

    fcs = False                        # frames arrive as the kernel hands them: no FCS, maybe padded

    def __init__(self, interface: str, cycle_time_s: float, nodes: int, slots: int,
                 spin_s: float = DEFAULT_SPIN_S, pres_timeout_s: float = 0.0, lockstep: bool = False) -> None:
        self.interface = interface
        self.lockstep = lockstep
        self.sock = open_socket(interface)
        self.mac = bytes(self.sock.getsockname()[4][:_MAC])
        self._fd = self.sock.fileno()
        self._poll = select.poll()
        self._poll.register(self._fd, select.POLLIN)
        self._silence = open_socket(interface, SILENCE_ETHERTYPE) if lockstep else None
        self._fds: tuple[int, ...] = (self._fd,)
        if self._silence is not None:
            self._fds += (self._silence.fileno(),)
            self._poll.register(self._fds[1], select.POLLIN)
        self._silence_rx = bytearray(frames.MAX_FRAME)
        self.cycle_ns = round(cycle_time_s * 1e9)
        self.listen_ns = max(round(pres_timeout_s * 1e9), self.cycle_ns // (2 * max(1, nodes)))
        self.spin_s = spin_s
        self.reply_delay_s = 0.0
        self.reply_delays: list[float] = []              # aligned with what the last collect returned
        self._replies: list[memoryview | None] = []     # the answers since then, and their delays
        self._delays: list[float] = []
        self._spare = ([], [])                           # the other pair of lists: collect swaps them
        self._tx = bytearray(frames.MAX_FRAME)
        self._txv = memoryview(self._tx)
        self._slots = [bytearray(frames.MAX_FRAME) for _ in range(slots + 1)]   # the last: drained frames
        self._slot_views = [memoryview(s) for s in self._slots]
        self._used = 0                                  # slots holding answers not yet collected
        self._next_ns = 0                               # the next cycle's start (perf_counter_ns)
        self._in_cycle = False
        self.cycles = 0
        self.overruns = 0                               # cycles started more than one cycle late
        self.stray = 0                                  # frames received that nothing awaited
        self.round_trips_ns = np.zeros(TIMING_SAMPLES, np.int64)
        self.round_trip_nodes = np.zeros(TIMING_SAMPLES, np.uint8)     # the node each round trip was with
        self.wakeups_ns = np.zeros(TIMING_SAMPLES, np.int64)
        self.round_trip_count = 0

    # -- Link contract ------------------------------------------------------------------------------
    def queue_isochronous(self, soc: memoryview, preqs: tuple[memoryview, ...]) -> None:
        """Start the next cycle on time, send the SoC, then each PReq and wait for its PRes."""
        self._start_cycle()
        self._send(soc)
        for preq in preqs:
            self._drain()
            node = preq[frames.DST_NODE_AT]
            sent = self._send(preq)
            slot = self._used
            n, arrived = self._await(_PRES, node, sent + self.listen_ns, slot)
            if n:
                self._used += 1
                delay = 0 if self.lockstep else arrived - sent
                self._replies.append(self._slot_views[slot][:n])
                self._delays.append(delay * 1e-9)
                self.round_trips_ns[self.round_trip_count % TIMING_SAMPLES] = delay
                self.round_trip_nodes[self.round_trip_count % TIMING_SAMPLES] = node
                self.round_trip_count += 1
            else:
                self._replies.append(None)
                self._delays.append(0.0)

    def collect(self) -> list[memoryview | None]:
        """The PRes of the PReqs sent since the last collect (None: lost), valid until the next collect."""
        replies, self.reply_delays = self._replies, self._delays
        self._replies, self._delays = self._spare
        self._replies.clear()
        self._delays.clear()
        self._spare = (replies, self.reply_delays)
        self._used = 0
        return replies

    def transfer(self, frame: memoryview) -> memoryview | None:
        """Send one MN frame; a SoA ends the cycle's isochronous phase (it starts a cycle that had
        none, in PreOp1) and, when it invites a CN, its ASnd is awaited until the cycle's end."""
        kind = frame[frames.MESSAGE_TYPE_AT]
        if kind == _SOA and not self._in_cycle:
            self._start_cycle()
        if kind == _SOA:
            self._in_cycle = False
        sent = self._send(frame)
        if not answered(frame):
            return None
        slot = len(self._slots) - 2
        deadline = max(self._next_ns - self.listen_ns // 4, sent + self.listen_ns)
        n, arrived = self._await(_ASND, frame[frames.SERVICE_TARGET_AT], deadline, slot)
        if not n:
            return None
        self.reply_delay_s = 0.0 if self.lockstep else (arrived - sent) * 1e-9
        return self._slot_views[slot][:n]

    def flush(self) -> None:
        """Every frame is on the wire when sent: nothing is held back."""

    def close(self) -> None:
        if self._fd >= 0:
            for fd in self._fds:
                self._poll.unregister(fd)
            self._fd = -1
            self.sock.close()
            if self._silence is not None:
                self._silence.close()

    # -- timing -------------------------------------------------------------------------------------
    def timing(self) -> dict[str, np.ndarray]:
        """The kept PReq→PRes round trips (and the node of each) and cycle wake-up latenesses, in ns
        (oldest first)."""
        return {"round_trip_ns": _ring(self.round_trips_ns, self.round_trip_count),
                "round_trip_node": _ring(self.round_trip_nodes, self.round_trip_count),
                "wakeup_ns": _ring(self.wakeups_ns, self.cycles)}

    # -- internals ----------------------------------------------------------------------------------
    def _start_cycle(self) -> None:
        """Wait for the next cycle's start (sleep, then spin the last WAKE_SPIN_S), record how late
        the cycle starts against its schedule; a start more than a cycle behind resynchronises the
        schedule (an overrun, its whole lateness recorded)."""
        now = perf_counter_ns()
        scheduled = start = self._next_ns
        if self.lockstep:                         # simulated time: a cycle starts when the MN is ready
            scheduled = start = now
        elif not self.cycles or now - start > self.cycle_ns:
            if self.cycles:
                self.overruns += 1
            else:
                scheduled = now
            start = now
        else:
            ahead = (start - now) * 1e-9 - WAKE_SPIN_S
            if ahead > 0:
                sleep(ahead)
            while perf_counter_ns() < start:
                pass
        self.wakeups_ns[self.cycles % TIMING_SAMPLES] = perf_counter_ns() - scheduled
        self.cycles += 1
        self._next_ns = start + self.cycle_ns
        self._in_cycle = True

    def _send(self, frame) -> int:
        """Put ``frame`` on the wire without its FCS, from our MAC; the time (perf_counter_ns) the
        send began: on a veth the peer may be served inside it."""
        n = len(frame) - frames.FCS_SIZE          # the encoders seal every frame with its FCS
        tx = self._txv
        tx[:n] = frame[:n]
        tx[frames.SRC_MAC_AT:frames.ETHERTYPE_AT] = self.mac
        sent = perf_counter_ns()
        try:
            self.sock.send(tx[:max(n, MIN_ETHERNET)])
        except OSError as exc:
            raise LinkError(f"cannot send on bus.interface {self.interface!r}: {exc.strerror}") from None
        return sent

    def _await(self, kind: int, node: int, deadline_ns: int, slot: int) -> tuple[int, int]:
        """Receive into ``slot`` until a frame of ``kind`` from ``node`` arrives or ``deadline_ns``
        passes; (its length, arrival time) or (0, 0). In lock-step the deadline is the stall bound
        and the far end's silence frame for ``node`` is the (0, 0)."""
        buf = self._slots[slot]
        recv_into = self.sock.recv_into
        if self.lockstep:
            deadline_ns = perf_counter_ns() + int(LOCKSTEP_STALL_S * 1e9)
        while True:
            try:
                n = recv_into(buf)
            except BlockingIOError:
                if self.lockstep and self._silent(node):
                    return 0, 0
                if not self._wait(deadline_ns):
                    if self.lockstep:
                        raise LinkError(f"nothing answered on bus.interface {self.interface!r} for "
                                        f"{LOCKSTEP_STALL_S:g} s: lock-step waits for an answer or a silence frame "
                                        f"from node {node}, which only a simulated far end sends (is the HIL stopped?)")
                    return 0, 0
                continue
            except OSError as exc:
                raise LinkError(f"cannot receive on bus.interface {self.interface!r}: {exc.strerror}") from None
            arrived = perf_counter_ns()
            if n <= frames.SRC_NODE_AT or buf[frames.SRC_MAC_AT:frames.ETHERTYPE_AT] == self.mac:
                continue
            if buf[frames.MESSAGE_TYPE_AT] == kind and buf[frames.SRC_NODE_AT] == node:
                return n, arrived
            self.stray += 1

    def _silent(self, node: int) -> bool:
        """A lock-step silence frame for ``node`` arrived (others are strays)."""
        buf = self._silence_rx
        while True:
            try:
                n = self._silence.recv_into(buf)
            except BlockingIOError:
                return False
            if n > SILENCE_NODE_AT and buf[SILENCE_NODE_AT] == node:
                return True
            self.stray += 1

    def _wait(self, deadline_ns: int) -> bool:
        """Readable before ``deadline_ns``: busy-poll up to ``spin_s``, then select(2) (µs timeout)."""
        poll = self._poll.poll
        spin_end = perf_counter_ns() + int(self.spin_s * 1e9)
        while True:
            if poll(0):
                return True
            now = perf_counter_ns()
            if now >= deadline_ns:
                return False
            if now >= spin_end:
                break
            os.sched_yield()
        remaining = (deadline_ns - perf_counter_ns()) * 1e-9
        return remaining > 0 and bool(select.select(self._fds, (), (), remaining)[0])

    def _drain(self) -> None:
        """Drop what arrived since the last awaited answer (a PRes after its listen window) so that
        it is not taken for the next one."""
        buf = self._slots[-1]
        while True:
            try:
                self.sock.recv_into(buf)
            except BlockingIOError:
                return
            self.stray += 1


def _ring(ring: np.ndarray, count: int) -> np.ndarray:
    if count <= len(ring):
        return ring[:count].copy()
    k = count % len(ring)
    return np.concatenate((ring[k:], ring[:k]))


class NoFaults(FaultApi):
    """A real wire has no fault injection: unplug the cable or stop the node instead."""

    def apply(self, name: str, **args) -> None:
        raise FaultError(f"fault {name!r} cannot be injected on the raw backend (a real wire): "
                         "disconnect or stop the node itself")


class FarEndFaults(FaultApi):
    """Fault injection on a simulated far end (the HIL's controlled nodes, drivers.sim.hil.wire): the
    request goes over its control channel (``bus.udp.host:port``), which it serves only after every
    frame already on the wire, so the fault lands between the same two frames as over ``udp``."""

    def __init__(self, config: UdpConfig) -> None:
        self.config = config

    def apply(self, name: str, **args) -> None:
        c = self.config
        answer = control_request(c.host, c.port, {"op": "fault", "name": name, "args": args},
                                 max(c.timeout_s, LOCKSTEP_STALL_S))
        if answer is None:
            raise LinkError(f"the far end's control channel at {c.host}:{c.port} did not answer fault {name!r}")
        if "error" in answer:
            raise FaultError(answer["error"])


def open_raw(config: BusConfig, spin_s: float = DEFAULT_SPIN_S, lockstep: bool = False) -> PowerlinkBus:
    """A bus on ``bus.interface`` (raw Ethernet, module docstring); ``lockstep``: a simulated far end,
    whose faults are injected through its control channel (:class:`FarEndFaults`)."""
    if not config.interface:
        raise LinkError("the raw backend needs bus.interface (the Ethernet interface the nodes are on)")
    slots = config.cycles_per_control * len(config.nodes) + 1
    link = RawLink(config.interface, config.cycle_time_s, len(config.nodes), slots, spin_s, config.pres_timeout_s,
                   lockstep)
    return PowerlinkBus(config, link, FarEndFaults(config.udp) if lockstep else NoFaults())
