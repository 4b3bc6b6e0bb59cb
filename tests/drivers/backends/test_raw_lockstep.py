"""The raw link in lock-step (a simulated far end, the HIL): no wall clock decides anything. A
PRes is awaited however late it comes and counts as on time, a silence frame from the far end is
the only loss, and cycles do not wait for their schedule (needs root: veth, AF_PACKET)."""
from __future__ import annotations

import select
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from drivers.backends.raw import RawLink
from drivers.powerlink import frames
from drivers.raw_socket import open_socket, silence_frame
from tests.drivers.backends.test_raw_link import veth  # noqa: F401 (the fixture)

CYCLE_S = 3600.0                # paced on the wall clock, three cycles would take hours
PRES_TIMEOUT_S = 0.002          # real time would listen max(2 ms, half the cycle)
# per PReq: the responder's delay before its PRes (None: a silence frame instead)
DELAYS = (0.05, None, 0.0, None)


def _preqs(sock, done: threading.Event) -> Iterator[memoryview]:
    """The PReqs arriving on ``sock`` until ``done``."""
    buf = bytearray(frames.MAX_FRAME)
    while not done.is_set():
        if not select.select((sock,), (), (), 0.2)[0]:
            continue
        n = sock.recv_into(buf)
        if n > frames.SRC_NODE_AT and buf[frames.MESSAGE_TYPE_AT] == frames.MessageType.PREQ:
            yield memoryview(buf)[:n]


def _responder(interface: str, ready: threading.Event, done: threading.Event) -> None:
    """Answer the k-th PReq after DELAYS[k] with a PRes carrying k, or declare it unanswered."""
    sock = open_socket(interface)
    mac = bytes(sock.getsockname()[4][:6])
    pres, quiet = frames.pres_frame(1, 1), bytearray(frames.MAX_FRAME)
    ready.set()
    try:
        for delay, preq in zip(DELAYS, _preqs(sock, done)):
            if delay is None:
                sock.send(silence_frame(quiet, mac, preq[frames.DST_NODE_AT]))
                continue
            time.sleep(delay)
            pres.buf[frames.PDO_OFFSET] = DELAYS.index(delay)
            sock.send(frames.without_fcs(pres.seal()))
    finally:
        sock.close()


@contextmanager
def _far_end(interface: str) -> Iterator[None]:
    """:func:`_responder` on ``interface`` in a thread for the block."""
    ready, done = threading.Event(), threading.Event()
    thread = threading.Thread(target=_responder, args=(interface, ready, done), daemon=True)
    thread.start()
    ready.wait(5)
    try:
        yield
    finally:
        done.set()
        thread.join(5)


def _cycle(link: RawLink, soc: frames.TxFrame, preq: frames.TxFrame) -> tuple[int, float] | None:
    """One cycle of one PReq: (the PRes's payload byte, its delay), None when lost."""
    link.queue_isochronous(soc.seal(), (preq.seal(),))
    reply = link.collect()[0]
    return None if reply is None else (reply[frames.PDO_OFFSET], link.reply_delays[0])


def test_lockstep_waits_for_every_answer_and_loses_only_what_the_far_end_declares(veth):  # noqa: F811
    mn_side, cn_side = veth
    with _far_end(cn_side):
        link = RawLink(mn_side, CYCLE_S, 1, 1, pres_timeout_s=PRES_TIMEOUT_S, lockstep=True)
        try:
            got = [_cycle(link, frames.soc_frame(), frames.preq_frame(1, 0)) for _ in DELAYS]
        finally:
            link.close()
    assert got == [(0, 0.0), None, (2, 0.0), None]     # 50 ms late (25x the timeout): taken, on time
    assert link.cycles == len(DELAYS) and link.overruns == 0
