"""Idempotent retries over real sockets: a client whose first reply is lost resends the same
request (same id) and gets the first reply; the loop receives the command once."""
from __future__ import annotations

import json
import threading
import time

import pytest
import zmq

from controller.daemon.codes import State
from controller.daemon.shm import Cmd, H
from controller.tools.client import Client, CommandError

from tests.controller.daemon.io.test_io_thread import _call_in_thread, clock  # noqa: F401 (the fixture)


class LossyProxy:
    """Forwards requests from ``endpoint`` to the server and drops the first ``drop`` replies,
    as a network that loses them would."""

    def __init__(self, server: str, drop: int = 1) -> None:
        self.ctx = zmq.Context()
        self.front, self.back = self.ctx.socket(zmq.ROUTER), self.ctx.socket(zmq.DEALER)
        for s in (self.front, self.back):
            s.linger = 0
        self.front.bind("tcp://127.0.0.1:*")
        self.back.connect(server)
        self.endpoint = self.front.getsockopt_string(zmq.LAST_ENDPOINT)
        self.drop, self.requests = drop, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        poller = zmq.Poller()
        poller.register(self.front, zmq.POLLIN)
        poller.register(self.back, zmq.POLLIN)
        while not self.stop.is_set():
            for sock, _ in poller.poll(10):
                frames = sock.recv_multipart()
                if sock is self.front:
                    self.requests += 1
                    self.back.send_multipart(frames)
                elif self.drop:
                    self.drop -= 1
                else:
                    self.front.send_multipart(frames)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.front.close()
        self.back.close()
        self.ctx.term()


@pytest.fixture
def lossy(rig_factory):
    made = []

    def make(drop: int = 1, **rig_kw):
        rig = rig_factory(**rig_kw)
        proxy = LossyProxy(rig.server.command_endpoint, drop)
        made.append(proxy)
        return rig, proxy

    yield make
    for p in made:
        p.close()


def _until(cond, what: str, bound_s: float = 60.0) -> None:
    """Wait for ``cond`` (a bound for a hang, not a verdict)."""
    end = time.monotonic() + bound_s
    while not cond():
        assert time.monotonic() < end, f"never saw {what}"
        time.sleep(0.01)


def _moves(rig) -> int:
    return sum(cmd == Cmd.MOVE_JOINTS for _, cmd, _ in rig.loop.commands())


def test_an_accepted_move_retried_after_a_lost_reply_is_still_accepted_and_runs_once(lossy):
    rig, proxy = lossy(drop=1)
    rig.client.call("enable")
    rig.loop.wait_state(State.HOLD)
    with Client(proxy.endpoint, timeout_s=0.5, retries=3) as c:
        assert c.call("move_joints", q=[0, 0.1, -0.3, 0.2], duration=2) == {"accepted": True, "state": "MOVING"}
        assert proxy.requests == 2                          # the first reply was lost, the retry answered
        assert _moves(rig) == 1 and rig.server.counters.retries == 1
        with pytest.raises(CommandError, match="not_allowed"):     # a new request (new id) meets MOVING
            c.call("move_joints", q=[0, 0.1, -0.3, 0.2], duration=2)


def test_a_retry_that_arrives_before_the_first_reply_waits_for_it(lossy, clock):
    """The loop leaves the move in its mailbox past the deadline: the I/O side withdraws it and the
    loop, taking it later, answers TIMEOUT without applying it. The retries that came meanwhile
    wait for that one answer; the move never runs."""
    rig, proxy = lossy(drop=1, loop_kw={"consume": False}, server_kw={"reply_timeout": 1.0})
    rig.loop.set_state(State.HOLD)
    with Client(proxy.endpoint, timeout_s=0.3, retries=1000) as c:
        caller, out = _call_in_thread(c, "move_joints", q=[0, 0.1, -0.3, 0.2], duration=2)
        _until(lambda: proxy.requests >= 3, "three tries of the same request")
        clock.t += 60.0                                   # past the deadline: withdrawn on the next pass
        _until(lambda: rig.block.header[H.MB_WITHDRAWN] > 0, "the withdrawal")
        rig.loop.consume = True
        caller.join(60)
    assert isinstance(out[0], CommandError) and out[0].code == "timeout"    # the first request's own answer
    assert _moves(rig) == 0 and rig.server.counters.retries >= 2


def test_only_the_same_request_is_a_retry_and_reads_are_answered_afresh(rig):
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(rig.server.command_endpoint)
    try:
        def send(msg: dict) -> dict:
            sock.send_multipart([b"", json.dumps(msg).encode()])
            assert sock.poll(5000)
            return json.loads(sock.recv_multipart()[-1])

        first = send({"id": 7, "cmd": "enable"})
        rig.loop.wait_state(State.HOLD)
        assert send({"id": 7, "cmd": "enable"}) == first            # the retry: the first answer
        assert send({"id": 7, "cmd": "disable"})["result"]["state"] == "DISABLED"   # same id, new request
        assert send({"id": 7, "cmd": "status"})["result"]["state"] == "DISABLED"
        rig.loop.set_state(State.HOLD)
        rig.loop.wait_state(State.HOLD)
        assert send({"id": 7, "cmd": "status"})["result"]["state"] == "HOLD"   # not a stale answer
        assert sum(cmd == Cmd.ENABLE for _, cmd, _ in rig.loop.commands()) == 1
        assert send({"cmd": "disable"})["ok"] and send({"cmd": "disable"})["ok"]   # no id: never a retry
        assert sum(cmd == Cmd.DISABLE for _, cmd, _ in rig.loop.commands()) == 3
    finally:
        sock.close()


def test_two_clients_using_the_same_id_are_not_each_others_retries(rig):
    socks = [zmq.Context.instance().socket(zmq.DEALER) for _ in range(2)]
    try:
        for s in socks:
            s.linger = 0
            s.connect(rig.server.command_endpoint)
            s.send_multipart([b"", json.dumps({"id": 1, "cmd": "disable"}).encode()])
            assert s.poll(5000) and json.loads(s.recv_multipart()[-1])["ok"]
        assert sum(cmd == Cmd.DISABLE for _, cmd, _ in rig.loop.commands()) == 2
    finally:
        for s in socks:
            s.close()


def test_a_late_duplicate_reply_is_not_taken_for_the_next_answer():
    """A request retried after its reply was late is answered once per attempt, and both copies
    reach the client (same routing id); the late copy, arriving after the client sent its next
    request, must be dropped, not read as that request's answer (which a REQ socket does: a
    'bad_reply' on a loaded host)."""
    ctx = zmq.Context.instance()
    router = ctx.socket(zmq.ROUTER)
    router.linger = 0
    router.router_handover = 1                     # as the daemon's: a reconnecting client takes its id over
    port = router.bind_to_random_port("tcp://127.0.0.1")
    stop = threading.Event()

    def serve() -> None:
        seen, late = 0, []
        while not stop.is_set():
            if not router.poll(20):
                continue
            *envelope, raw = router.recv_multipart()
            req = json.loads(raw)
            seen += 1
            reply = json.dumps({"id": req["id"], "ok": True, "result": {"cmd": req["cmd"]}}).encode()
            if seen == 1:
                continue                               # the first attempt's reply is late: not yet sent
            for frames in late:                        # ... and arrives once the client has sent its next request
                router.send_multipart(frames)
            late = [[*envelope, reply]] if seen == 2 else []
            router.send_multipart([*envelope, reply])

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with Client(f"tcp://127.0.0.1:{port}", timeout_s=0.5, retries=2) as c:
            assert c.call("status") == {"cmd": "status"}
            assert c.call("stats") == {"cmd": "stats"}
            assert c.call("ping") == {"cmd": "ping"}
    finally:
        stop.set()
        thread.join(2)
        router.close()
