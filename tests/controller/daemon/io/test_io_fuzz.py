"""Hypothesis fuzz of the command protocol over a real socket: the server answers every
request with ``ok`` or a coded error, never dies, and a rejected request never reaches
the mailbox (so never moves the robot)."""
from __future__ import annotations

import json
import time

import pytest
import zmq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.daemon.codes import Error
from controller.daemon.io.protocol import ALLOWED, ARGUMENTS, STABILIZER_PARAMS

CODES = {e.name.lower() for e in Error if e != Error.OK}
COMMANDS = sorted(set(ALLOWED) - {"shutdown"})
ARG_NAMES = ["q", "duration", "trajectory", "enable", "params", "alpha", "beta", "axis", "kp", "ki", "kd", "x"]

scalars = (st.none() | st.booleans() | st.integers(-10 ** 30, 10 ** 30)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12))
json_values = st.recursive(scalars, lambda c: st.lists(c, max_size=5) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                           max_leaves=12)
angles = st.floats(-4.0, 4.0) | st.sampled_from([float("nan"), float("inf"), 1e308])
arg_values = (json_values | st.lists(angles, min_size=3, max_size=5) | st.sampled_from(["squat", "motor1", "/nonexistent.csv"])
              | st.dictionaries(st.sampled_from(sorted(STABILIZER_PARAMS)), angles, max_size=3))
ids = st.none() | st.integers() | st.text(max_size=8) | json_values
requests = st.fixed_dictionaries(
    {"id": ids, "cmd": st.sampled_from(COMMANDS) | st.text(max_size=10),
     "args": st.dictionaries(st.sampled_from(ARG_NAMES), arg_values, max_size=4) | json_values})


typed_values = st.one_of(angles, angles, st.lists(angles, min_size=4, max_size=4), st.booleans(),
                         st.sampled_from(["squat", "motor1", "/nonexistent.csv"]),
                         st.dictionaries(st.sampled_from(sorted(STABILIZER_PARAMS)), angles, max_size=3), json_values)


def _typed(cmd: str) -> st.SearchStrategy:
    """Requests with the command's own argument names and fuzzed values (reach the range checks)."""
    required, optional = ARGUMENTS.get(cmd, ((), ()))
    args = st.fixed_dictionaries({k: typed_values for k in required},
                                 optional={k: typed_values for k in optional})
    return st.fixed_dictionaries({"id": st.integers(), "cmd": st.just(cmd), "args": args})


typed_requests = st.sampled_from(COMMANDS).flatmap(_typed).map(lambda r: json.dumps(r).encode())
payloads = st.one_of(st.binary(max_size=200), json_values.map(lambda v: json.dumps(v).encode()),
                     requests.map(lambda r: json.dumps(r).encode()), typed_requests, typed_requests, typed_requests)


@pytest.fixture
def fuzz_rig(rig_factory):
    rig = rig_factory(server_kw={"reply_timeout": 0.5})
    rig.client.call("enable")
    sock = zmq.Context.instance().socket(zmq.REQ)
    sock.linger = 0
    sock.connect(rig.server.command_endpoint)
    yield rig, sock
    sock.close()


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(raw=payloads)
def test_protocol_fuzz(fuzz_rig, raw):
    rig, sock = fuzz_rig
    try:
        if json.loads(raw).get("cmd") == "shutdown":
            return
    except (ValueError, AttributeError, UnicodeDecodeError, RecursionError):
        pass
    before = len(rig.loop.commands())
    sock.send(raw)
    assert sock.poll(3000), f"no reply to {raw[:80]!r}"
    reply = json.loads(sock.recv())
    assert isinstance(reply["ok"], bool) and "id" in reply
    if reply["ok"]:
        assert isinstance(reply["result"], dict)
        return
    assert reply["error"]["code"] in CODES
    msg = reply["error"]["message"]
    assert isinstance(msg, str) and msg.endswith(".") and len(msg) < 600
    time.sleep(0.003)                                   # a command posted by mistake would show up by now
    assert len(rig.loop.commands()) == before, f"rejected {raw[:80]!r} reached the mailbox"
    assert rig.thread.is_alive()
