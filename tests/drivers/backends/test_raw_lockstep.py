"""The raw link in lock-step (a simulated far end, the HIL): no wall clock decides anything. A
PRes is awaited however late it comes and counts as on time, a silence frame from the far end is
the only loss, and cycles do not wait for their schedule (needs root: veth, AF_PACKET)."""
from __future__ import annotations

import threading
import time

from drivers.backends.raw import RawLink
from drivers.powerlink import frames
from drivers.raw_socket import open_socket, silence_frame
from tests.drivers.backends.test_raw_link import veth  # noqa: F401 (the fixture)

CYCLE_S = 3600.0                # paced on the wall clock, three cycles would take hours
PRES_TIMEOUT_S = 0.002          # real time would listen max(2 ms, half the cycle)
# per PReq: the responder's delay before its PRes (None: a silence frame instead)
DELAYS = (0.05, None, 0.0, None)


def _responder(interface: str, ready: threading.Event, done: threading.Event) -> None:
    """Answer the k-th PReq after DELAYS[k] with a PRes carrying k, or declare it unanswered."""
    sock = open_socket(interface)
    sock.setblocking(True)
    sock.settimeout(0.2)
    mac = bytes(sock.getsockname()[4][:6])
    pres = frames.pres_frame(1, 1)
    buf, quiet = bytearray(frames.MAX_FRAME), bytearray(frames.MAX_FRAME)
    k = 0
    ready.set()
    try:
        while not done.is_set() and k < len(DELAYS):
            try:
                n = sock.recv_into(buf)
            except TimeoutError:
                continue
            if n <= frames.SRC_NODE_AT or buf[frames.MESSAGE_TYPE_AT] != frames.MessageType.PREQ:
                continue
            if DELAYS[k] is None:
                sock.send(silence_frame(quiet, mac, buf[frames.DST_NODE_AT]))
            else:
                time.sleep(DELAYS[k])
                pres.buf[frames.PDO_OFFSET] = k
                sock.send(frames.without_fcs(pres.seal()))
            k += 1
    finally:
        sock.close()


def test_lockstep_waits_for_every_answer_and_loses_only_what_the_far_end_declares(veth):  # noqa: F811
    mn_side, cn_side = veth
    ready, done = threading.Event(), threading.Event()
    thread = threading.Thread(target=_responder, args=(cn_side, ready, done), daemon=True)
    thread.start()
    ready.wait(5)
    link = RawLink(mn_side, CYCLE_S, 1, 1, pres_timeout_s=PRES_TIMEOUT_S, lockstep=True)
    soc, preq = frames.soc_frame(), frames.preq_frame(1, 0)
    got = []
    try:
        for _ in DELAYS:
            link.queue_isochronous(soc.seal(), (preq.seal(),))
            [reply], [delay] = link.collect(), list(link.reply_delays)
            got.append(None if reply is None else (reply[frames.PDO_OFFSET], delay))
    finally:
        done.set()
        link.close()
        thread.join(5)
    assert got == [(0, 0.0), None, (2, 0.0), None]     # 50 ms late (25x the timeout): taken, on time
    assert link.cycles == len(DELAYS) and link.overruns == 0
