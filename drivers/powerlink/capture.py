"""Frame capture to pcapng (IETF draft-ietf-opsawg-pcapng: SHB, IDB, EPB), linktype Ethernet.

:class:`Capture` keeps frames in a ring preallocated at construction: :meth:`Capture.record` copies
one frame into its slot with its time stamp and direction (one memcpy, no allocation, no I/O, no
lock), so it may run inside the control loop's cycle. A daemon thread drains the ring to the file
every ``drain_s`` (:data:`DRAIN_S`) and at :meth:`Capture.close`; the ring never blocks its writer: when the
drain falls ``slots`` frames behind, later frames are dropped and counted (``dropped``, and an
``if_drop`` count in the file's interface statistics).

:class:`CaptureLink` puts a capture on a managing node's link: every frame the MN sends and every
answer it receives, in wire order. It leaves out the link's Numba steady-period members, so the MN
takes its Python path (the same frames, byte for byte: tests/drivers/powerlink/test_fast_paths.py).
Time stamps come from ``clock`` (ns since 1970): the host clock in real time; in lock-step
(``net_time=True``) the simulated time, never the host's: a SoC is stamped with its own NetTime,
other frames with the MN's (:meth:`ManagingNode.net_time_ns
<drivers.powerlink.managing_node.ManagingNode.net_time_ns>`). Every frame is stamped at least
1 ns after the previous one, so that the order survives sorting by time.
"""
from __future__ import annotations

import struct
import threading
from pathlib import Path
from typing import Callable

import numpy as np

from drivers.powerlink import frames

DRAIN_S = 0.05
LINKTYPE_ETHERNET = 1
_SHB = struct.Struct("<IHHq")          # byte-order magic, version 1.0, section length (-1: unknown)
_IDB_HEAD = struct.Struct("<HHI")        # linktype, reserved, snaplen
_EPB_HEAD = struct.Struct("<IIIIIII")
_OPTION = struct.Struct("<HH")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_OPT_END, _OPT_COMMENT = 0, 1
_IF_NAME, _IF_TSRESOL, _IF_FCSLEN = 2, 9, 13
_EPB_FLAGS = 2
_ISB_STARTTIME, _ISB_ENDTIME, _ISB_IFDROP = 2, 3, 5
_INBOUND, _OUTBOUND = 1, 2            # epb_flags direction bits
_SOC = int(frames.MessageType.SOC)
_NET_TIME = struct.Struct("<II")


def _option(code: int, value: bytes) -> bytes:
    return _OPTION.pack(code, len(value)) + value + bytes(-len(value) % 4)


def _block(kind: int, body: bytes) -> bytes:
    total = 12 + len(body)
    return _U32.pack(kind) + _U32.pack(total) + body + _U32.pack(total)


class Capture:
    """A pcapng file of Ethernet frames fed through a preallocated ring (module docstring).
    ``fcs``: the recorded frames end with their FCS (the ``sim`` and ``udp`` links)."""

    def __init__(self, path: str | Path, fcs: bool = True, slots: int = 8192, interface: str = "bipd-mn",
                 drain_s: float = DRAIN_S) -> None:
        if slots < 1:
            raise ValueError(f"a capture ring needs at least one slot, got {slots}")
        self.path = Path(path)
        try:
            self._file = open(self.path, "wb")
        except OSError as exc:
            raise ValueError(f"cannot write the capture file {self.path}: {exc.strerror}") from None
        self.slots = slots
        self.dropped = 0
        self._ring = bytearray(slots * frames.MAX_FRAME)
        self._view = memoryview(self._ring)   # assigning into a bytearray slice copies the source first
        self._length = np.zeros(slots, np.int64)
        self._time = np.zeros(slots, np.int64)
        self._flags = np.zeros(slots, np.int64)
        self._head = 0                    # frames recorded (the loop's side)
        self._tail = 0                    # frames written (the drain's side)
        self._first_ns = self._last_ns = 0
        self._drain_s = drain_s
        options = (_option(_IF_NAME, interface.encode()) + _option(_IF_TSRESOL, b"\x09")
                   + _option(_IF_FCSLEN, bytes((frames.FCS_SIZE if fcs else 0,))) + _option(_OPT_END, b""))
        self._file.write(_block(0x0A0D0D0A, _SHB.pack(0x1A2B3C4D, 1, 0, -1)
                                + _option(_OPT_COMMENT, b"bipd POWERLINK managing node") + _option(_OPT_END, b"")))
        self._file.write(_block(1, _IDB_HEAD.pack(LINKTYPE_ETHERNET, 0, frames.MAX_FRAME) + options))
        self._stop = threading.Event()
        self._lock = threading.Lock()     # drains only: record() never takes it
        self._thread = threading.Thread(target=self._drain_loop, name="bipd-capture", daemon=True)
        self._thread.start()

    def record(self, frame, time_ns: int, outbound: bool) -> None:
        """Copy ``frame`` into the ring with its time stamp and direction (hot path: no allocation)."""
        head = self._head
        if head - self._tail >= self.slots:
            self.dropped += 1
            return
        i = head % self.slots
        n = len(frame)
        at = i * frames.MAX_FRAME
        self._view[at:at + n] = frame
        self._length[i] = n
        self._time[i] = time_ns
        self._flags[i] = _OUTBOUND if outbound else _INBOUND
        self._head = head + 1

    def drain(self) -> int:
        """Write the recorded frames to the file; how many."""
        with self._lock:
            head, tail = self._head, self._tail
            out = self._file
            for k in range(tail, head):
                i = k % self.slots
                n = int(self._length[i])
                t = int(self._time[i])
                if not self._first_ns:
                    self._first_ns = t
                self._last_ns = t
                pad = -n % 4
                at = i * frames.MAX_FRAME
                total = _EPB_HEAD.size + n + pad + 12 + 4
                out.write(_EPB_HEAD.pack(6, total, 0, t >> 32, t & 0xFFFFFFFF, n, n))
                out.write(self._ring[at:at + n])
                out.write(bytes(pad) + _option(_EPB_FLAGS, _U32.pack(int(self._flags[i]))) + _U32.pack(_OPT_END)
                          + _U32.pack(total))
                self._tail = k + 1
            out.flush()
            return head - tail

    def _drain_loop(self) -> None:
        while not self._stop.wait(self._drain_s):
            self.drain()

    def close(self) -> None:
        """Drain what is left, write the interface statistics (drops) and close the file."""
        if self._file.closed:
            return
        self._stop.set()
        self._thread.join()
        self.drain()
        stats = (_option(_ISB_STARTTIME, _U32.pack(self._first_ns >> 32) + _U32.pack(self._first_ns & 0xFFFFFFFF))
                 + _option(_ISB_ENDTIME, _U32.pack(self._last_ns >> 32) + _U32.pack(self._last_ns & 0xFFFFFFFF))
                 + _option(_ISB_IFDROP, _U64.pack(self.dropped)) + _option(_OPT_END, b""))
        t = self._last_ns
        self._file.write(_block(5, _U32.pack(0) + _U32.pack(t >> 32) + _U32.pack(t & 0xFFFFFFFF) + stats))
        self._file.close()


class CaptureLink:
    """A managing node's link that records every frame into a :class:`Capture` (module docstring)."""

    def __init__(self, link, capture: Capture, clock: Callable[[], int], net_time: bool = False) -> None:
        self.link = link
        self.capture = capture
        self.clock = clock
        self.net_time = net_time
        self.fcs = getattr(link, "fcs", True)
        self._last_ns = 0

    @property
    def reply_delay_s(self) -> float:
        return self.link.reply_delay_s

    @property
    def reply_delays(self) -> list[float]:
        return self.link.reply_delays

    def _record(self, frame, outbound: bool) -> None:
        if self.net_time and frame[frames.MESSAGE_TYPE_AT] == _SOC:
            seconds, nanoseconds = _NET_TIME.unpack_from(frame, frames.NET_TIME_AT)
            t = max(seconds * 1_000_000_000 + nanoseconds, self._last_ns + 1)
        else:
            t = max(self.clock(), self._last_ns + 1)
        self._last_ns = t
        self.capture.record(frame, t, outbound)

    def transfer(self, frame):
        self._record(frame, True)
        reply = self.link.transfer(frame)
        if reply is not None:
            self._record(reply, False)
        return reply

    def queue_isochronous(self, soc, preqs) -> None:
        self._record(soc, True)
        for preq in preqs:
            self._record(preq, True)
        self.link.queue_isochronous(soc, preqs)

    def collect(self) -> list:
        replies = self.link.collect()
        for reply in replies:
            if reply is not None:
                self._record(reply, False)
        return replies

    def flush(self) -> None:
        self.link.flush()

    def close(self) -> None:
        try:
            self.link.close()
        finally:
            self.capture.close()
