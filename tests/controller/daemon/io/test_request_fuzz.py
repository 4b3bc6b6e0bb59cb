"""Every command of the registry, every argument, extreme values of each JSON type: each request is
answered ``ok`` or refused with a coded one-sentence error, and no validator raises instead of
refusing (protocol.validate keeps what one raised on the ErrorReply). ``rig_motion`` is fuzzed
again inside its spec string, every key of every kind. Then the same requests go through the real
server (fake loop, real ZMQ), which must answer each and serve on, and a validator that raises is
answered ``bad_args`` and logged with its request. Run with ``-s`` to see the counts."""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
import zmq

from controller.daemon import commands
from controller.daemon.codes import DRIVE_FAULT_KINDS, GLITCH_KINDS, Error, State
from controller.daemon.commands import BY_NAME, COMMANDS
from controller.daemon.io.protocol import ErrorReply, Request, validate
from controller.daemon.rig.spec import COMMAND_KINDS, PARAMS
from models.rig.stewart import StewartModel

from tests.controller.conftest import make_context
from tests.paths import ROBOTS, STEWART_RIG

CODES = {e for e in Error if e != Error.OK}
Q = np.zeros(4)                              # a posture the squat fits

SCALARS = [0, -1, 1, 0.5, 1e308, -1e308, 1e-308, 5e-324, -0.0, 2 ** 63, -2 ** 63, 10 ** 400,
           "NaN", "Infinity", "-inf", "", "x" * 5000, "squat", "motor1", None, True, False]
"""Extreme values of each JSON type (10 ** 400: an integer no float holds)."""
VALUES = SCALARS + [[], *([v] * 4 for v in (1e308, None, "NaN", True)),
                    [[[[[]]]]], [0.0] * 1000, {}, {"a": {"b": [None]}}, {"max_speed": 1e308}, {"knee": "NaN"}]
"""... and lists and objects: empty, nested, long, of extremes, with keys a few arguments take."""

BASES: dict[str, list[dict]] = {
    "step": [{"cycles": 1}, {"seconds": 0.01}],
    "move_joints": [{"q": [0.0, 0.1, -0.3, 0.2]}, {"q": {"knee": -0.35}, "duration": 2.0}],
    "run": [{"trajectory": "squat"}],
    "stabilizer": [{"enable": True, "params": {"max_speed": 0.1}}, {"enable": True, "support": "double"}],
    "platform": [{"alpha": 0.1, "beta": 0.1, "duration": 2.0}],
    "set_gains": [{"axis": "motor1", "kp": 1.0, "ki": 0.0, "kd": 0.0}],
    "inject_fault": [{"fault": "drop_pres", "node": 2, "count": 1}, {"fault": "delay_pres", "node": 2, "delay_s": 0.001},
                     {"fault": "drive_fault", "axis": "knee", "kind": DRIVE_FAULT_KINDS[0]},
                     {"fault": "encoder_glitch", "axis": "knee", "kind": GLITCH_KINDS[0], "value": 0.1}],
    "rig_motion": [{"motion": "heave:amplitude=0.01,frequency=2,cycles=2"}],
}
"""Valid arguments of each command that takes some, one argument replaced at a time."""

SPEC_VALUES = ["-1", "0", "0.5", "1", "3e5", "1e12", "1e300", "1e-300", "-1e308", "1e308", ".nan", ".inf", "-.inf",
               "nan", "", "x" * 100, "[1, 2]", "{a: 1}", "null", "true", "&a 1", "*a", "18446744073709551616", "0x10",
               "y", "roll", "a.csv"]
"""Extreme ``k=v`` values: YAML numbers, strings, collections, aliases (each read by the strict reader)."""
SPECS_WHOLE = ["", ":", "sinusoid:", "sinusoid:,,,", "sinusoid:=1", "sinusoid:axis==x", "x" * 400, "earthquake",
               "earthquake:file=", ".csv", "earthquake:file=a.csv,file=b.csv", "tilt:points=[[0.1,0,1],[0,0,1]]"]


def _contexts() -> dict[str, object]:
    from models.chain.config import load_description
    desc = load_description(ROBOTS / "bip_leg.yaml")
    leg = make_context(desc, rig=StewartModel.from_yaml(STEWART_RIG), stepped=True)
    return {"leg": leg, "whole_body": replace(leg, whole_body=True)}


def _cases() -> list[tuple[str, str, dict]]:
    """(command, argument fuzzed, args) for every command, argument, base and value."""
    cases = []
    for c in COMMANDS:
        for base in BASES.get(c.name, [{}]):
            for arg in [a.name for a in c.args] + ["wobble"]:
                cases += [(c.name, arg, {**base, arg: v}) for v in VALUES]
    for kind in (*COMMAND_KINDS, "earthquake"):
        for key in [*PARAMS[kind], "wobble"]:
            cases += [("rig_motion", f"motion {kind}:{key}", {"motion": f"{kind}:{key}={v}"}) for v in SPEC_VALUES]
    cases += [("rig_motion", "motion (whole)", {"motion": m}) for m in SPECS_WHOLE]
    return cases


CASES = _cases()


def _request(i: int, cmd: str, args: dict) -> bytes:
    return json.dumps({"id": i, "cmd": cmd, "args": args}).encode()


def _checked(r, what: str) -> None:
    assert isinstance(r, (Request, ErrorReply)), what
    if isinstance(r, ErrorReply):
        assert r.exception is None, f"{what}: the validator raised {r.exception!r}"
        assert r.code in CODES and r.message.endswith(".") and "\n" not in r.message, (what, r.message)
        assert len(r.message) < 1000, (what, r.message)


def test_every_command_with_arguments_has_valid_bases_to_fuzz_from():
    """A new command's arguments are fuzzed only from valid arguments: one refused would hide the
    deeper checks."""
    ctx = _contexts()["whole_body"]
    ctx.state, ctx.q = State.HOLD, Q
    assert {c.name for c in COMMANDS if c.args} == set(BASES)
    for cmd, bases in BASES.items():
        for base in bases:
            assert isinstance(validate(_request(0, cmd, base), ctx), Request), (cmd, base)


def test_every_argument_of_every_command_with_extreme_values():
    counts: Counter = Counter()
    outcomes: Counter = Counter()
    for name, ctx in _contexts().items():
        ctx.state, ctx.q = State.HOLD, Q
        for i, (cmd, arg, args) in enumerate(CASES):
            r = validate(_request(i, cmd, args), ctx)
            _checked(r, f"{name}: {cmd} {json.dumps(args)[:200]}")
            counts[cmd, arg] += 1
            outcomes[r.code.name.lower() if isinstance(r, ErrorReply) else "ok"] += 1
    for c in COMMANDS:                                   # every argument of every command was fuzzed
        assert all(counts[c.name, a.name] for a in c.args) and counts[c.name, "wobble"], c.name
    print(f"\nfuzzed {sum(counts.values())} requests: {dict(outcomes)}")
    for (cmd, arg), n in sorted(counts.items()):
        print(f"  {cmd:13s} {arg:32s} {n:5d}")


@pytest.fixture
def fuzz_server(rig_factory, tmp_path):
    rig = rig_factory(server_kw={"trajectory_dir": tmp_path, "reply_timeout": 0.5},
                      ctx_kw={"rig": StewartModel.from_yaml(STEWART_RIG), "stepped": True})
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(rig.server.command_endpoint)
    yield rig, sock
    sock.close()


def _call(sock, raw: bytes) -> dict:
    sock.send_multipart([b"", raw])
    assert sock.poll(10_000), f"no reply to {raw[:120]!r}"
    return json.loads(sock.recv_multipart()[-1])


def test_the_server_answers_every_fuzzed_request_and_serves_on(fuzz_server):
    """The real server, the fake loop: each request answered, none a validator's exception, the
    server alive at the end (and ``shutdown`` last, acknowledged)."""
    rig, sock = fuzz_server
    codes: Counter = Counter()
    for i, (cmd, _, args) in enumerate(CASES):
        if cmd == "shutdown":
            continue
        if i % 50 == 0 and rig.state in (State.DISABLED, State.ESTOP, State.FAULT):   # back to HOLD now and then
            for step in ("reset", "enable"):
                _call(sock, _request(-1, step, {}))
        reply = _call(sock, _request(i, cmd, args))
        assert reply["id"] == i
        codes["ok" if reply["ok"] else reply["error"]["code"]] += 1
    print(f"\nthrough the server: {dict(codes)}")
    assert rig.server.counters.internal_errors == 0 and "internal" not in codes
    assert _call(sock, _request("last", "ping", {}))["result"]["pong"] is True
    assert _call(sock, _request("end", "shutdown", {}))["ok"] is True


@pytest.mark.parametrize("raised", [ValueError("seed must be non-negative"), IndexError("index 1 is out of bounds"),
                                    MemoryError(), ZeroDivisionError("float division by zero"), KeyError("trajectory")])
def test_a_validator_that_raises_is_answered_bad_args_and_logged(fuzz_server, monkeypatch, capsys, raised):
    """Whatever a validator raises instead of refusing refuses the request (``bad_args``), is
    logged with the request, and the server serves on."""
    def boom(args, ctx):
        raise raised

    monkeypatch.setitem(commands.BY_NAME, "set_gains", replace(BY_NAME["set_gains"], validate=boom))
    rig, sock = fuzz_server
    raw = _request(5, "set_gains", {"axis": "motor1", "kp": 1, "ki": 0, "kd": 0})
    reply = _call(sock, raw)
    assert reply == {"id": 5, "ok": False, "error": {"code": "bad_args", "message":
                     f"args of set_gains could not be checked ({type(raised).__name__}): the request was refused "
                     "and nothing was posted."}}
    assert _call(sock, _request(6, "ping", {}))["ok"] is True
    assert rig.server.counters.internal_errors == 1
    err = capsys.readouterr().err
    assert f"a request raised {type(raised).__name__}; request: {raw.decode()!r}" in err and "Traceback" in err
    assert not rig.loop.commands()


def test_a_failure_while_handling_a_valid_request_is_answered_internal(fuzz_server, monkeypatch, capsys):
    rig, sock = fuzz_server

    def broken(cmd, pending, loop_error):
        raise RuntimeError("the summary is broken. really")

    monkeypatch.setattr(rig.server.answers, "answer", broken)
    reply = _call(sock, _request(8, "status", {}))
    assert reply["error"] == {"code": "internal", "message": "status failed inside the I/O process (RuntimeError: "
                                                             "the summary is broken; really); it was logged."}
    assert "a request raised RuntimeError" in capsys.readouterr().err
    monkeypatch.undo()
    assert _call(sock, _request(9, "ping", {}))["ok"] is True
