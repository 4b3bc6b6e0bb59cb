"""The raw link's wire semantics on a veth pair, against a scripted responder: a PRes within
bus.pres_timeout_s is on time, one after it but within the listen window is late, none is lost,
and one after its window is never taken for the next cycle's (needs root: veth, AF_PACKET)."""
from __future__ import annotations

import os
import subprocess
import threading
import time

import pytest

from drivers.backends.raw import RawLink
from drivers.raw_socket import open_socket
from drivers.powerlink import frames

CYCLE_S = 0.4
PRES_TIMEOUT_S = 0.04           # the listen window is then max(2 ms, half the cycle) = 200 ms
# per cycle: the responder's delay before its PRes (None: no answer). The times are the semantics' at a
# scale where a loaded host's scheduling (tens of ms under a load of 10 on 2 cores) cannot move a PRes
# from one class to another: on time is 40 ms, late 60 ms past it, the stale one 80 ms past its window.
DELAYS = (0.0, 0.1, None, 0.28, 0.0)


@pytest.fixture
def veth():
    if os.geteuid() != 0:
        pytest.skip("a veth pair and AF_PACKET sockets need root")
    a, b = f"rwl{os.getpid() % 100_000}a", f"rwl{os.getpid() % 100_000}b"
    subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], check=True)
    for name in (a, b):
        subprocess.run(["ip", "link", "set", name, "up"], check=True)
    yield a, b
    subprocess.run(["ip", "link", "del", a], check=False)


def _responder(interface: str, ready: threading.Event, done: threading.Event) -> None:
    """Answer the k-th PReq after DELAYS[k] with a PRes carrying k in its payload."""
    sock = open_socket(interface)
    sock.setblocking(True)
    sock.settimeout(0.2)
    pres = frames.pres_frame(1, 1)
    buf = bytearray(frames.MAX_FRAME)
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
            delay = DELAYS[k]
            if delay is not None:
                time.sleep(delay)
                pres.buf[frames.PDO_OFFSET] = k
                sock.send(frames.without_fcs(pres.seal()))
            k += 1
    finally:
        sock.close()


def test_on_time_late_lost_and_a_stale_pres_dropped(veth):
    mn_side, cn_side = veth
    ready, done = threading.Event(), threading.Event()
    thread = threading.Thread(target=_responder, args=(cn_side, ready, done), daemon=True)
    thread.start()
    ready.wait(5)
    link = RawLink(mn_side, CYCLE_S, 1, 1, pres_timeout_s=PRES_TIMEOUT_S)
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
    assert got[0][0] == 0 and got[0][1] < PRES_TIMEOUT_S                  # on time
    assert got[1][0] == 1 and PRES_TIMEOUT_S < got[1][1] < CYCLE_S / 2    # late: the MN counts it so
    assert got[2] is None                                                 # lost
    assert got[3] is None                                                 # after its window: lost ...
    assert got[4][0] == 4                                                 # ... and not taken for cycle 4's
    assert link.stray >= 1
