"""The command registry (controller.daemon.commands) and the emergency-stop lane: the docs are
the registry's, the loop binds exactly the registry's handlers, and estop is read before a full
mailbox, in the loop and under a flood of valid requests over ZMQ."""
from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest
import zmq

from controller.daemon.codes import Error, State
from controller.daemon.commands import COMMANDS, Lane, dispatch_table, markdown
from controller.daemon.io.protocol import Context
from controller.daemon.io.server import IoServer
from controller.daemon.shm import (LANES, Cmd, H, Layout, SharedBlock, post_command, post_priority, take_priority,
                                   take_replies)
from controller.tools.client import Client, CommandError

from tests.controller.conftest import LOCAL
from tests.controller.daemon.loop_harness import Harness
from tests.paths import ROOT

DOCS = ROOT / "docs" / "commands.md"
GAINS = (0.0, 100.0, 0.0, 0.0)         # set_gains on axis 0, valid in every state the tests reach
TRIALS = 10                            # estops under the flood (the closing note's figure: 100)


def test_docs_are_the_registry():
    assert DOCS.read_text() == markdown(), "regenerate: python -m controller.daemon.commands > docs/commands.md"


def test_estop_and_disable_have_the_priority_lane():
    assert {c.name for c in COMMANDS if c.lane == Lane.PRIORITY} == {"estop", "disable"}
    assert set(LANES) == {Cmd.ESTOP, Cmd.DISABLE}


def test_the_loop_binds_exactly_the_registry_handlers():
    names = {k.handler for c in COMMANDS for k in c.codes}
    table = dispatch_table({n: n for n in names})
    assert sorted(table) == sorted(int(c) for c in Cmd)
    with pytest.raises(ValueError, match=r"missing \['estop'\]"):
        dispatch_table({n: n for n in names - {"estop"}})
    with pytest.raises(ValueError, match=r"unknown \['extra'\]"):
        dispatch_table({n: n for n in names | {"extra"}})


def test_a_lane_holds_one_untaken_command():
    block = SharedBlock(Layout(n_joints=4, n_axes=4, record_size=8, mailbox_slots=4), create=True)
    try:
        assert take_priority(block, 0) == 0
        assert post_priority(block, 0, 7) and not post_priority(block, 0, 8)   # untaken: refused
        assert take_priority(block, 0) == 7 and take_priority(block, 0) == 0   # taken once
        assert post_priority(block, 0, 9) and take_priority(block, 0) == 9
    finally:
        block.close()


@pytest.fixture
def harness():
    h = Harness()
    yield h
    h.close()


def test_the_loop_reads_the_lane_before_a_full_mailbox(harness):
    h = harness
    slots = h.block.layout.mailbox_slots
    for token in range(100, 100 + slots):
        assert post_command(h.block, token, Cmd.SET_GAINS, np.array(GAINS))
    assert not post_command(h.block, 999, Cmd.SET_GAINS, np.array(GAINS))        # full
    assert post_priority(h.block, LANES.index(Cmd.ESTOP), 7)
    h.run(1)
    replies = take_replies(h.block)
    assert replies[0] == (7, True, int(Error.OK), float(State.ESTOP))           # first, before the mailbox's
    assert h.state == State.ESTOP
    assert [r[0] for r in replies[1:]] == [100, 101, 102, 103]                  # then 4 mailbox commands, refused
    assert all(not ok and code == Error.NOT_ALLOWED for _, ok, code, _ in replies[1:])


def test_concurrent_estops_share_one_untaken_lane_and_its_reply(rig_factory):
    rig = rig_factory(loop_kw={"consume": False})
    results: list[dict] = []

    def estop() -> None:
        with Client(rig.server.command_endpoint, timeout_s=3.0, retries=1) as c:
            results.append(c.call("estop"))

    threads = [threading.Thread(target=estop) for _ in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.3)                          # all three wait on the one untaken lane slot
    rig.loop.consume = True
    for t in threads:
        t.join(5)
    assert results == [{"accepted": True, "state": "ESTOP"}] * 3
    assert [cmd for _, cmd, _ in rig.loop.commands()] == [Cmd.ESTOP]          # one command reached the loop


# ------------------------------------------------------------------ the flood (real loop, real ZMQ)

class Flooder(threading.Thread):
    """One client pipelining valid set_gains (up to ``depth`` outstanding) while ``on`` is set."""

    def __init__(self, context: zmq.Context, endpoint: str, on: threading.Event, stop: threading.Event,
                 depth: int = 8) -> None:
        super().__init__(daemon=True)
        self.sock = context.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(endpoint)
        self.on, self.stop, self.depth = on, stop, depth
        self.sent = self.busy = self.outstanding = 0

    def run(self) -> None:
        request = {"cmd": "set_gains", "args": {"axis": "knee", "kp": 1000, "ki": 0, "kd": 10}}
        while not self.stop.is_set():
            while self.on.is_set() and self.outstanding < self.depth:    # each its own id: the same id is a retry
                self.sock.send_multipart([b"", json.dumps({"id": self.sent, **request}).encode()])
                self.sent += 1
                self.outstanding += 1
            if self.sock.poll(1):
                reply = json.loads(self.sock.recv_multipart()[-1])
                self.outstanding -= 1
                self.busy += not reply["ok"] and reply["error"]["code"] == "busy"
        self.sock.close()


def wait_state(c: Client, state: str, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while c.call("status")["state"] != state:
        assert time.monotonic() < end, f"never reached {state}"
        time.sleep(0.005)


def until_accepted(c: Client, cmd: str, timeout: float = 10.0) -> None:
    """Mailbox commands may meet the end of the flood's backlog: retry a busy one."""
    end = time.monotonic() + timeout
    while True:
        try:
            c.call(cmd)
            return
        except CommandError as e:
            assert e.code == "busy" and time.monotonic() < end, e


def test_no_flood_delays_an_estop(harness):
    h = harness
    cfg = h.cfg
    ctx = Context.from_description(h.loop.robot.description, period=cfg.loop.period,
                                   platform_limit=cfg.control.platform_limit)
    server = IoServer(h.block, ctx, LOCAL, reply_timeout=2.0)
    stop, flood = threading.Event(), threading.Event()

    def cycle() -> None:                     # the real loop beside the server, about 2 ms per cycle
        while not stop.is_set():
            h.loop.run_cycle()
            time.sleep(cfg.loop.period)

    threads = [threading.Thread(target=cycle), threading.Thread(target=server.serve, args=(stop,))]
    for t in threads:
        t.start()
    context = zmq.Context()
    flooders = [Flooder(context, server.command_endpoint, flood, stop) for _ in range(10)]
    for f in flooders:
        f.start()
    c = Client(server.command_endpoint, timeout_s=3.0, retries=1)
    slots, hdr = h.block.layout.mailbox_slots, h.block.header
    trials = TRIALS
    refused, cycles, wall = 0, [], []
    try:
        wait_state(c, "DISABLED")
        for _ in range(trials):
            until_accepted(c, "enable")
            wait_state(c, "HOLD")
            flood.set()
            end = time.monotonic() + 5.0
            while hdr[H.MB_HEAD] - hdr[H.MB_TAIL] < slots:                  # the mailbox is full
                assert time.monotonic() < end, "the flood never filled the mailbox"
                time.sleep(0.0005)
            cycle0, t0 = int(hdr[H.LOOP_CYCLE]), time.perf_counter()
            try:
                reply = c.call("estop")
                assert reply["state"] == "ESTOP"
            except CommandError as e:
                refused += 1
                print("estop refused:", e.code, e.message)
            wall.append(time.perf_counter() - t0)
            cycles.append(int(hdr[H.LOOP_CYCLE]) - cycle0)
            assert State(int(hdr[H.LOOP_STATE])) == State.ESTOP
            flood.clear()
            until_accepted(c, "reset")
            wait_state(c, "DISABLED")
        busy = sum(f.busy for f in flooders)
        print(f"\nestop under a flood of 10 set_gains clients ({sum(f.sent for f in flooders)} sent, {busy} busy): "
              f"{trials} estops, {refused} refused; latency p50 {np.median(cycles):.0f} cycles / "
              f"{np.median(wall) * 1e3:.1f} ms, max {max(cycles)} cycles / {max(wall) * 1e3:.1f} ms")
        assert busy > 0                       # the flood did fill the mailbox
        assert refused == 0
    finally:
        c.close()
        stop.set()
        for t in [*threads, *flooders]:
            t.join(5)
        context.term()
        server.close()
