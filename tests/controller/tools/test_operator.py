"""The shared operator client: a stepped wait for a state grants loop time chunk by chunk, reads
the state from each step's reply and stops at its simulated-time bound; a step takes exactly one
of seconds and cycles; the demos' stream starts its telemetry at the enable. Against a scripted REP
socket standing in for the daemon (and a PUB socket for its telemetry)."""
from __future__ import annotations

import json
import threading

import pytest
import zmq

from controller.tools.operator import Operator, OperatorError, StreamOperator
from controller.tools.ports import free_port


class FakeDaemon:
    """Answers ``status`` with the current state and ``step`` by advancing a cycle count; the state
    turns HOLD once ``hold_at`` cycles have run. Records every request's (cmd, args)."""

    def __init__(self, hold_at: int) -> None:
        self.endpoint = f"tcp://127.0.0.1:{free_port()}"
        self.hold_at, self.cycle, self.requests = hold_at, 0, []
        self._sock = zmq.Context.instance().socket(zmq.REP)
        self._sock.linger = 0
        self._sock.bind(self.endpoint)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def state(self) -> str:
        return "HOLD" if self.cycle >= self.hold_at else "DISABLED"

    def _serve(self) -> None:
        while not self._stop.is_set():
            if not self._sock.poll(50):
                continue
            req = json.loads(self._sock.recv())
            self.requests.append((req["cmd"], req["args"]))
            if req["cmd"] == "step":
                self.cycle += req["args"].get("cycles") or round(req["args"]["seconds"] / 0.001)
                result = {"state": self.state(), "t": self.cycle * 0.001}
            else:
                result = {"state": self.state()}
            self._sock.send(json.dumps({"id": req["id"], "ok": True, "result": result}).encode())

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2.0)
        self._sock.close()


@pytest.fixture
def daemon():
    d = FakeDaemon(hold_at=250)
    yield d
    d.close()


def test_stepped_wait_grants_chunks_until_the_state(daemon):
    with Operator(daemon.endpoint, stepped=True, timeout_s=5.0) as op:
        assert op.wait_state("HOLD", chunk_s=0.1) == "HOLD"
    # one status, then steps of 0.1 s until the reply says HOLD (250 cycles: the third step)
    assert daemon.requests == [("status", {})] + [("step", {"seconds": 0.1})] * 3


def test_stepped_wait_stops_at_its_simulated_bound(daemon):
    with Operator(daemon.endpoint, stepped=True, timeout_s=5.0) as op:
        with pytest.raises(OperatorError, match="did not reach HOLD within 0.2 s of simulated time"):
            op.wait_state("HOLD", timeout_s=0.2, chunk_s=0.1)
    assert daemon.cycle == 200


def test_step_by_cycles(daemon):
    with Operator(daemon.endpoint, stepped=True, timeout_s=5.0) as op:
        assert op.step(cycles=7)["t"] == pytest.approx(0.007)
    assert daemon.requests == [("step", {"cycles": 7})]


@pytest.mark.parametrize("grant", [{}, {"seconds": 0.1, "cycles": 100}])
def test_step_takes_exactly_one_grant(daemon, grant):
    with Operator(daemon.endpoint, stepped=True, timeout_s=5.0) as op:
        with pytest.raises(ValueError, match="exactly one of seconds and cycles"):
            op.step(**grant)
    assert daemon.requests == []


def test_stream_drops_the_boot_frames_still_queued_at_the_enable(daemon):
    """Frames the I/O process published before the enable (BOOT, DISABLED) may reach the demo after
    the enable's reply: they are not the motion's, so the states seen start at HOLD; events all pass,
    and a DISABLED after the motion started is kept."""
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    pub = zmq.Context.instance().socket(zmq.PUB)
    pub.linger = 0
    pub.bind(endpoint)
    with StreamOperator(daemon.endpoint, endpoint, timeout_s=10.0) as op:
        op.stepped = True
        while not op.sub.poll(20):                  # until the subscription has reached the publisher
            pub.send_multipart([b"event", b'{"sync": true}'])
        while op.sub.poll(100):
            op.sub.recv_multipart()
        sent = [("telemetry", {"t": 0.0, "state_name": "BOOT"}), ("telemetry", {"t": 0.1, "state_name": "DISABLED"}),
                ("event", {"t": 0.15, "text": "DISABLED -> HOLD"}), ("telemetry", {"t": 0.2, "state_name": "HOLD"}),
                ("telemetry", {"t": 0.3, "state_name": "DISABLED"}), ("telemetry", {"t": 0.4, "state_name": "FAULT"})]
        for topic, msg in sent:
            pub.send_multipart([topic.encode(), json.dumps(msg).encode()])
        got = []
        for topic, msg in op.frames():
            got.append((topic, msg))
            if msg.get("state_name") == "FAULT":
                break
    pub.close()
    assert got == sent[2:]
