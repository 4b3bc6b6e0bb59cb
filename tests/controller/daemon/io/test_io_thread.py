"""The I/O process' command thread never waits on slow work: a slow check runs in the worker thread
(its reply deadline starts when the command is posted), a telemetry backlog is drained in slices
between polls of the command socket, and a reply says ``timeout`` only for a command the loop will
never apply. Slow work is held by events and time is a fake clock: nothing here depends on the
host's speed."""
from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import zmq

import controller.daemon.io.server as server_module
from controller.daemon.codes import Error, State
from controller.daemon.io import protocol
from controller.daemon.io.pump import RING_SLICE
from controller.daemon.io.server import IoServer
from controller.daemon.shm import Cmd, H, begin_record, end_record, post_command, take_replies, withdraw_commands
from controller.daemon.telemetry import RecordLayout
from controller.tools.client import Client, CommandError

from tests.controller.conftest import LOCAL, make_context, small_block
from tests.controller.daemon.loop_harness import Harness
from tests.controller.daemon.io.test_io_server import until

SINE = "sinusoid:axis=y,amplitude=0.05,frequency=1,cycles=4"


class FakeClock:
    """The server's ``time`` module: ``monotonic`` only moves when the test moves it."""

    def __init__(self) -> None:
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(server_module, "time", fake)
    return fake


@pytest.fixture
def gated_check(monkeypatch):
    """The rig motion's stroke check waits for the returned event before it runs."""
    go, started = threading.Event(), threading.Event()
    real = protocol.SLOW_CHECKS[Cmd.RIG_MOTION]

    def gated(values, ctx):
        started.set()
        assert go.wait(10), "the test never released the check"
        real(values, ctx)
    monkeypatch.setitem(protocol.SLOW_CHECKS, Cmd.RIG_MOTION, gated)
    return go, started


def _call_in_thread(client: Client, cmd: str, **args) -> tuple[threading.Thread, list]:
    out: list = []

    def call() -> None:
        try:
            out.append(client.call(cmd, **args))
        except CommandError as e:
            out.append(e)
    t = threading.Thread(target=call, daemon=True)
    t.start()
    return t, out


@contextmanager
def checking(rig, gated_check):
    """A client's ``rig_motion`` whose stroke check is running (held): yields (the rig, its reply
    list, filled once the check is released at the end of the block)."""
    go, started = gated_check
    rig.loop.set_state(State.HOLD)
    with Client(rig.server.command_endpoint, timeout_s=300.0, retries=1) as other:   # a cold Numba cache compiles the check
        caller, out = _call_in_thread(other, "rig_motion", motion=SINE)
        assert started.wait(10)
        try:
            yield out
        finally:
            go.set()
            caller.join(300)


def test_a_rig_motions_stroke_check_runs_off_the_command_thread_and_its_deadline_starts_when_posted(
        rig_factory, stewart, gated_check, clock):
    rig = rig_factory(server_kw={"reply_timeout": 0.5}, ctx_kw={"rig": stewart})
    with checking(rig, gated_check) as out:
        assert rig.client.call("ping")["pong"]           # answered while the check runs
        clock.t += 60.0                                  # the check takes a minute, far past reply_timeout
    assert out == [{"accepted": True, "state": "HOLD"}]  # posted with a fresh deadline, taken at once
    assert [c[1] for c in rig.loop.commands()] == [Cmd.RIG_MOTION]


def test_an_estop_is_answered_while_a_rig_motion_is_checked_and_cancels_it(rig_factory, stewart, gated_check):
    rig = rig_factory(ctx_kw={"rig": stewart})
    with checking(rig, gated_check) as out:
        assert rig.client.call("estop") == {"accepted": True, "state": "ESTOP"}
    assert out[0].code == "not_allowed" and "check was still running when estop arrived" in out[0].message
    assert [c[1] for c in rig.loop.commands()] == [Cmd.ESTOP]


def test_a_second_slow_request_while_one_is_checked_is_busy(rig_factory, stewart, gated_check):
    rig = rig_factory(ctx_kw={"rig": stewart})
    with checking(rig, gated_check) as out, pytest.raises(CommandError) as e:
        rig.client.call("rig_motion", motion=SINE)
    assert e.value.code == "busy" and "rig_motion request's check is still running" in e.value.message
    assert out == [{"accepted": True, "state": "HOLD"}]


@pytest.mark.parametrize("cmd, stepped", [("enable", True), ("estop", False)], ids=["stepped", "priority"])
def test_no_deadline_withdraws_a_stepped_or_a_priority_command(rig_factory, clock, cmd, stepped):
    """A stepped loop takes commands between steps, and an estop is never given up on: however
    late the loop takes them, they get its answer."""
    rig = rig_factory(server_kw={"reply_timeout": 0.1}, loop_kw={"consume": False}, ctx_kw={"stepped": stepped})
    with Client(rig.server.command_endpoint, timeout_s=10.0, retries=1) as other:
        caller, out = _call_in_thread(other, cmd)
        until(lambda: rig.server.counters.requests >= 1, "the request")
        clock.t += 3600.0
        for _ in range(2):                               # each answer is followed by a full pass
            assert rig.client.call("ping")["pong"]
        assert not out and rig.block.header[H.MB_WITHDRAWN] == 0
        rig.loop.consume = True
        caller.join(10)
    assert out[0]["accepted"] is True


def test_the_loop_answers_a_withdrawn_command_timeout_and_does_not_apply_it():
    h = Harness()
    try:
        for token in (1, 2):
            assert post_command(h.block, token, Cmd.ENABLE)
        withdraw_commands(h.block, 1)
        h.run(1)
        first, second = take_replies(h.block)
        assert first == (1, False, int(Error.TIMEOUT), float(State.DISABLED))
        assert second[:3] == (2, True, 0) and h.loop.sup.enabling    # the second, not withdrawn, was applied
    finally:
        h.close()


# ------------------------------------------------------------------ the telemetry backlog

class CountingLog:
    """A cycle log that keeps each record's cycle and, on the first one, has a client send ``ping``."""

    def __init__(self, layout: RecordLayout, on_first) -> None:
        self.cycles: list[int] = []
        self.layout, self.on_first = layout, on_first
        self.records = self.chunks = 0
        self.path = Path("counting.mcap")

    def append(self, rec: np.ndarray) -> None:
        if not self.cycles:
            self.on_first()
        self.cycles.append(int(rec[self.layout.slices["cycle"]][0]))

    def event(self, msg) -> None:
        pass

    def close(self) -> None:
        pass


def _write_records(block, layout: RecordLayout, first: int, n: int) -> None:
    """What the loop writes: one record per cycle."""
    s = layout.slices
    for cycle in range(first, first + n):
        rec = begin_record(block)
        rec[:] = 0.0
        rec[s["cycle"]] = cycle
        rec[s["t"]] = cycle * 0.002
        end_record(block)
    block.header[H.LOOP_CYCLE] = first + n - 1


@pytest.fixture
def manual(leg_desc):
    """A stepped server on a block nobody else touches; the test runs its passes (``server.step``)."""
    block = small_block()
    layout = RecordLayout(4)
    dealer = zmq.Context.instance().socket(zmq.DEALER)
    dealer.linger = 0
    log = CountingLog(layout, lambda: None)
    server = IoServer(block, make_context(leg_desc, stepped=True), LOCAL, log=log)
    dealer.connect(server.command_endpoint)
    sent: list[tuple[dict, int]] = []                    # each reply, with the records logged before it
    send = server._send
    server._send = lambda envelope, data: (sent.append((json.loads(data), len(log.cycles))), send(envelope, data))
    yield server, block, layout, dealer, log, sent
    dealer.close()
    server.close()
    block.close()


def _request(dealer, server, cmd: str, **args) -> None:
    """Send a request and wait until the server's socket holds it (the next poll sees it)."""
    dealer.send_multipart([b"", json.dumps({"id": cmd, "cmd": cmd, "args": args}).encode()])
    assert server._router.poll(5000, zmq.POLLIN)


def test_a_telemetry_backlog_is_drained_between_polls_of_the_command_socket(manual):
    """A ping that arrives while a backlog of records is logged is answered after at most one slice;
    the records are all logged, in order, and the step's reply waits for the last of them."""
    server, block, layout, dealer, log, sent = manual
    n = block.layout.ring_slots - 12                     # a backlog of more than one slice
    assert n > RING_SLICE
    log.on_first = lambda: _request(dealer, server, "ping")
    _request(dealer, server, "step", cycles=n)
    server.step(0)                                       # the step raises the horizon
    _write_records(block, layout, 1, n)                  # the loop runs up to it
    for _ in range(100):
        server.step(0)
        if any(reply["id"] == "step" for reply, _ in sent):
            break
    by_id = {reply["id"]: (reply, logged) for reply, logged in sent}
    assert by_id["ping"][1] <= RING_SLICE                # not behind the whole backlog
    assert log.cycles == list(range(1, n + 1))
    step, logged = by_id["step"]
    assert logged == n and step["result"]["cycle"] == n
    last_frame = (n - 1) // server.decimation * server.decimation     # ring index k holds cycle k + 1
    assert step["result"]["telemetry_t"] == pytest.approx((last_frame + 1) * 0.002)
