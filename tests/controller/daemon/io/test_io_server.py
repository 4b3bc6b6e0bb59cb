"""IoServer over real ZMQ sockets (127.0.0.1) against the fake loop of conftest.py."""
from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest
import zmq

from controller.daemon.codes import Error, State
from controller.tools.client import Client, ClientTimeout, CommandError
from controller.daemon.io.log import CycleLogWriter, read_log
from controller.daemon.io.server import IoServer
from controller.daemon.shm import Cmd, H
from controller.daemon.telemetry import RecordLayout

from tests.controller.conftest import LOCAL, FakeLoop, make_context, small_block


def until(condition, what: str, wait_s: float = 10.0) -> None:
    """Wait for ``condition`` (an error, not a verdict, after ``wait_s``)."""
    end = time.monotonic() + wait_s
    while not condition():
        assert time.monotonic() < end, f"{what} did not happen within {wait_s:g} s"
        time.sleep(0.002)


def withdrawn_up_to(rig, token: int) -> None:
    """Wait until the server has withdrawn mailbox tokens up to ``token``."""
    until(lambda: rig.block.header[H.MB_WITHDRAWN] >= token, f"the withdrawal of token {token}")


def call_error(client: Client, cmd: str, **args) -> CommandError:
    with pytest.raises(CommandError) as e:
        client.call(cmd, **args)
    return e.value


def to_hold(rig) -> None:
    rig.client.call("enable")
    rig.loop.wait_state(State.HOLD)


# ------------------------------------------------------------------ local commands

def test_ping_status_stats_get_config_from_shared_memory(rig):
    time.sleep(0.05)
    before = len(rig.loop.commands())
    assert rig.client.call("ping")["pong"] is True
    st = rig.client.call("status")
    assert st["state"] == "DISABLED" and st["ready"] is True and st["cycle"] > 0
    assert st["q"] == pytest.approx([0.0, 0.1, -0.3, 0.2]) and st["fault_name"] is None and st["fault_detail"] is None
    assert st["config"]["joints"] == ["ankle_lateral", "ankle_sagittal", "knee", "hip"]
    stats = rig.client.call("stats")
    wake = stats["profiler"]["wake_us"]
    assert 5.0 <= wake["min"] <= wake["p50"] <= wake["max"] <= 11.0
    assert stats["profiler"]["task_us"]["models"]["mean"] == 20.0
    assert stats["io"]["records"] > 0 and stats["io"]["ring_drops"] == 0
    cfg = rig.client.call("get_config")
    assert cfg["qmax"][2] == 0.0 and cfg["axes"][0] == "motor1" and cfg["allowed"]["enable"] == ["DISABLED"]
    assert cfg["command_endpoint"] == rig.server.command_endpoint
    assert len(rig.loop.commands()) == before          # none of them used the mailbox
    for cmd in ("ping", "status", "stats", "get_config"):
        assert call_error(rig.client, cmd, extra=1).code == "bad_args"


# ------------------------------------------------------------------ every mailbox command, good and bad

def test_state_commands_good_and_not_allowed(rig):
    c = rig.client
    assert call_error(c, "reset").code == "not_allowed"
    assert call_error(c, "stop").message == "stop is not allowed in state DISABLED (allowed in HOLD, MOVING, STABILIZING)."
    assert c.call("enable")["accepted"] is True
    assert rig.state == State.HOLD
    assert call_error(c, "enable", force=True).code == "bad_args"
    assert c.call("hold")["accepted"] and c.call("stop")["accepted"]
    assert c.call("disable")["state"] == "DISABLED"
    assert c.call("estop")["state"] == "ESTOP"
    assert call_error(c, "enable").message == "enable is not allowed in state ESTOP (allowed in DISABLED)."
    assert call_error(c, "estop").code == "not_allowed"
    assert c.call("reset")["state"] == "DISABLED"
    sent = [cmd for _, cmd, _ in rig.loop.commands()]
    assert sent == [Cmd.ENABLE, Cmd.HOLD, Cmd.STOP, Cmd.DISABLE, Cmd.ESTOP, Cmd.RESET]


def test_move_joints_good_and_bad(rig):
    c = rig.client
    assert call_error(c, "move_joints", q=[0, 0, -0.5, 0.3]).code == "not_allowed"     # DISABLED
    to_hold(rig)
    assert call_error(c, "move_joints", q=[0, 0, 3.1, 0]).message == "args.q[2] = 3.1 rad is above the knee limit 0 rad."
    assert call_error(c, "move_joints", q=[0, 0, -0.5]).code == "bad_args"
    assert call_error(c, "move_joints", q=[0, 0, -0.5, float("nan")]).code == "not_finite"
    assert call_error(c, "move_joints", q=[0, 0, -0.5, 0], duration=-1).code == "out_of_range"
    assert call_error(c, "move_joints", q=[0, 0.1, -0.3, 1.4], duration=0.1).code == "out_of_range"   # hip too fast
    assert [cmd for _, cmd, _ in rig.loop.commands()] == [Cmd.ENABLE]
    c.call("move_joints", q=[0, 0.1, -0.5, 0.3], duration=2.0)
    assert rig.loop.commands()[-1][1:] == (Cmd.MOVE_JOINTS, [0.0, 0.1, -0.5, 0.3, 2.0])
    assert rig.state == State.MOVING
    assert call_error(c, "move_joints", q=[0, 0, 0, 0]).code == "not_allowed"
    c.call("stop")
    c.call("move_joints", q=[0, 0, 0, 0])
    assert rig.loop.commands()[-1][2][-1] == -1.0      # minimum time


def test_run_squat_file_and_bad_file(rig_factory, tmp_path):
    rig = rig_factory(server_kw={"trajectory_dir": tmp_path})
    c = rig.client
    to_hold(rig)
    assert call_error(c, "run", trajectory=str(tmp_path / "absent.csv")).code == "bad_file"
    bad = tmp_path / "bad.csv"
    bad.write_text("t,ankle_lateral,ankle_sagittal,knee,hip\n0,0,0,0,0\n1,0,0,5,0\n")
    e = call_error(c, "run", trajectory=str(bad))
    assert e.code == "bad_file" and "bad.csv" in e.message and "knee" in e.message
    assert call_error(c, "run", trajectory=7).code == "bad_args"
    good = tmp_path / "walk.csv"
    good.write_text("t,ankle_lateral,ankle_sagittal,knee,hip\n0,0,0.1,-0.3,0.2\n1,0,0.2,-0.6,0.4\n")
    c.call("run", trajectory=str(good))
    assert rig.loop.commands()[-1][1] == Cmd.RUN_BUFFER
    n = int(rig.block.header[H.TRAJ_LEN])
    assert n == 501                                   # 1 s at 2 ms, both ends
    np.testing.assert_allclose(rig.block.traj[n - 1], [0, 0.2, -0.6, 0.4])
    c.call("stop")
    e = call_error(c, "run", trajectory="squat")        # knee -0.3 rad - 85 deg is beyond its -1.7 rad limit
    assert e.code == "out_of_range" and "knee" in e.message


def test_one_trajectory_file_in_flight(rig_factory, tmp_path):
    rig = rig_factory(server_kw={"reply_timeout": 0.3, "trajectory_dir": tmp_path}, loop_kw={"consume": False})
    rig.loop.set_state(State.HOLD)
    good = tmp_path / "walk.csv"
    good.write_text("t,ankle_lateral,ankle_sagittal,knee,hip\n0,0,0.1,-0.3,0.2\n1,0,0.2,-0.6,0.4\n")
    dealer = zmq.Context.instance().socket(zmq.DEALER)
    dealer.linger = 0
    dealer.connect(rig.server.command_endpoint)
    try:
        for i in range(2):
            dealer.send_multipart([b"", json.dumps({"id": i, "cmd": "run", "args": {"trajectory": str(good)}}).encode()])
        replies = {}
        assert dealer.poll(3000)
        reply = json.loads(dealer.recv_multipart()[-1])
        replies[reply["id"]] = reply["error"]
        withdrawn_up_to(rig, 1)
        rig.loop.consume = True                        # the loop reaches it only after it was withdrawn
        assert dealer.poll(3000)
        reply = json.loads(dealer.recv_multipart()[-1])
        replies[reply["id"]] = reply["error"]
    finally:
        dealer.close()
    assert replies[1]["code"] == "busy" and "already being handed" in replies[1]["message"]
    assert replies[0]["code"] == "timeout"             # the loop did not take it in time
    assert not rig.loop.commands()                     # and never applied it


def test_stabilizer_platform_set_gains(rig):
    c = rig.client
    assert c.call("set_gains", axis="motor2", kp=800, ki=5, kd=20)["accepted"]
    assert rig.loop.commands()[-1][1:] == (Cmd.SET_GAINS, [1.0, 800.0, 5.0, 20.0])
    assert call_error(c, "set_gains", axis="motor9", kp=1, ki=1, kd=1).code == "bad_args"
    assert call_error(c, "set_gains", axis="motor1", kp=1, ki=1).code == "bad_args"
    assert call_error(c, "stabilizer", enable=True).code == "not_allowed"
    to_hold(rig)
    assert call_error(c, "stabilizer", enable="yes").code == "bad_args"
    assert call_error(c, "stabilizer", enable=True, params={"max_speed": -1}).code == "out_of_range"
    c.call("stabilizer", enable=True, params={"max_speed": 0.2})
    assert rig.loop.commands()[-1][1:] == (Cmd.STABILIZER, [1.0, 5.0, 0.2])
    assert rig.state == State.STABILIZING
    assert call_error(c, "stabilizer", enable=True).code == "not_allowed"
    assert call_error(c, "platform", alpha=0.6, beta=0, duration=7).code == "out_of_range"
    assert call_error(c, "platform", alpha=0.1, beta=0, duration=float("inf")).code == "not_finite"
    c.call("platform", alpha=np.radians(10), beta=np.radians(20), duration=7.0)
    assert rig.loop.commands()[-1][1] == Cmd.PLATFORM
    c.call("stabilizer", enable=False)
    assert rig.state == State.HOLD


def test_unknown_command_and_malformed_json(rig):
    e = call_error(rig.client, "jump")
    assert e.code == "unknown_command" and "'jump'" in e.message
    sock = zmq.Context.instance().socket(zmq.REQ)
    sock.linger = 0
    sock.connect(rig.server.command_endpoint)
    try:
        sock.send(b'{"id": 3, "cmd": ')
        assert sock.poll(2000)
        reply = json.loads(sock.recv())
        assert reply["ok"] is False and reply["id"] is None and reply["error"]["code"] == "bad_json"
    finally:
        sock.close()


# ------------------------------------------------------------------ loop side: refusal, timeout, busy

def test_loop_refusal_is_reported(rig):
    rig.loop.refuse = Error.NOT_SUPPORTED
    e = call_error(rig.client, "enable")
    assert e.code == "not_supported" and e.message == "the control loop refused enable (not_supported) in state DISABLED."


def test_a_command_the_loop_takes_too_late_is_withdrawn_answered_timeout_and_never_applied(rig_factory):
    rig = rig_factory(server_kw={"reply_timeout": 0.1}, loop_kw={"consume": False})
    with Client(rig.server.command_endpoint, timeout_s=5.0, retries=1) as other:
        caller = threading.Thread(target=lambda: other.call("enable"), daemon=True)
        errors: list[CommandError] = []
        caller.run = lambda: errors.append(call_error(other, "enable"))
        caller.start()
        withdrawn_up_to(rig, 1)
        assert rig.client.call("ping")["pong"]           # the server answers meanwhile
        rig.loop.consume = True                          # the loop takes it, late
        caller.join(5)
    assert errors[0].code == "timeout" and "within 100 ms of its posting" in errors[0].message
    assert "never applied" in errors[0].message
    assert rig.state == State.DISABLED and not rig.loop.commands()
    assert rig.client.call("stats")["io"]["timeouts"] == 1


def test_a_command_the_loop_took_before_its_withdrawal_gets_the_loops_answer(rig_factory):
    """The loop took the command before it read the withdrawal (a race only the loop can settle):
    the reply is the loop's own, never ``timeout``, however late."""
    taken = threading.Event()
    rig = rig_factory(server_kw={"reply_timeout": 0.1}, loop_kw={"taken": taken})
    replies: list[dict] = []
    caller = threading.Thread(target=lambda: replies.append(rig.client.call("enable")), daemon=True)
    caller.start()
    assert taken.wait(5)
    withdrawn_up_to(rig, 1)                              # given up on, but already taken
    rig.loop.release.set()
    caller.join(5)
    assert replies == [{"accepted": True, "state": "HOLD"}]
    assert rig.state == State.HOLD and rig.client.call("stats")["io"]["timeouts"] == 0


def test_full_mailbox_is_busy(rig_factory):
    rig = rig_factory(server_kw={"reply_timeout": 0.3}, loop_kw={"consume": False})
    dealer = zmq.Context.instance().socket(zmq.DEALER)
    dealer.linger = 0
    dealer.connect(rig.server.command_endpoint)
    try:
        for i in range(12):
            dealer.send_multipart([b"", json.dumps({"id": i, "cmd": "enable"}).encode()])
        codes = {}
        for k in range(12):
            if k == 4:                                 # the busy ones are answered at once, then the loop
                withdrawn_up_to(rig, 8)                # takes the 8 others after their withdrawal
                rig.loop.consume = True
            assert dealer.poll(3000)
            reply = json.loads(dealer.recv_multipart()[-1])
            codes[reply["id"]] = reply["error"]["code"]
    finally:
        dealer.close()
    # 8 slots: 8 commands fit (heartbeats do not use the mailbox), the rest are refused at once
    assert sorted(codes.values()) == ["busy"] * 4 + ["timeout"] * 8
    assert all(codes[i] == "busy" for i in range(8, 12))


def test_only_valid_requests_feed_the_watchdog_and_never_through_the_mailbox(rig):
    """Each valid request counts one heartbeat in the header (whatever their rate); invalid UTF-8,
    invalid JSON, non-objects, unknown commands and bad arguments count none."""
    beats = lambda: int(rig.block.header[H.HEARTBEATS])          # noqa: E731
    before = beats()
    for _ in range(50):
        rig.client.call("ping")
    rig.client.call("status")
    assert beats() == before + 51
    assert rig.loop.commands() == []                     # no heartbeat went through the mailbox
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(rig.server.command_endpoint)
    garbage = [b"\xff\xfe\x00", b'{"id": 3, "cmd": ', b"[1, 2]", b'"ping"', b'{"id": 1, "cmd": "jump"}',
               b'{"id": 2, "cmd": "ping", "args": {"x": 1}}', b'{"id": 4, "cmd": "ping", "extra": 0}']
    try:
        for raw in garbage:
            sock.send_multipart([b"", raw])
        codes = []
        for _ in garbage:
            assert sock.poll(3000)
            codes.append(json.loads(sock.recv_multipart()[-1])["error"]["code"])
    finally:
        sock.close()
    assert codes == ["bad_json", "bad_json", "bad_request", "bad_request", "unknown_command", "bad_args",
                     "bad_request"]
    assert beats() == before + 51
    assert rig.client.call("stats")["io"]["heartbeats"] == 52          # this request counts too


def test_step_is_refused_by_a_daemon_that_is_not_stepped(rig):
    e = call_error(rig.client, "step", cycles=10)
    assert e.code == "not_supported" and "bipd run --stepped" in e.message
    assert int(rig.block.header[H.HORIZON]) == 0


def test_step_raises_the_horizon_and_answers_once_the_loop_reached_it(rig_factory):
    rig = rig_factory(ctx_kw={"stepped": True})
    reply = rig.client.call("step", cycles=25)
    assert int(rig.block.header[H.HORIZON]) == 25 and reply["cycle"] >= 25
    assert reply["state"] == "DISABLED" and reply["telemetry_t"] is not None
    reply = rig.client.call("step", seconds=0.1)              # 50 periods of 2 ms
    assert int(rig.block.header[H.HORIZON]) == 75 and reply["cycle"] >= 75
    for args, code in (({}, "bad_args"), ({"cycles": 1, "seconds": 1.0}, "bad_args"), ({"cycles": 0}, "bad_args"),
                       ({"cycles": 2.5}, "bad_args"), ({"seconds": 0.0009}, "out_of_range"),
                       ({"seconds": float("nan")}, "not_finite")):
        e = call_error(rig.client, "step", **args)
        assert e.code == code, (args, e)
    assert int(rig.block.header[H.HORIZON]) == 75
    assert rig.client.call("status")["horizon"] == 75


def test_loop_exited_refuses_motion(rig):
    rig.block.header[H.LOOP_EXIT] = 1
    rig.block.header[H.LOOP_EXIT_CODE] = 3
    e = call_error(rig.client, "enable")
    assert e.code == "not_allowed" and "exited (code 3)" in e.message
    assert rig.client.call("status")["loop_exited"] is True


# ------------------------------------------------------------------ clients, shutdown

def test_two_concurrent_clients(rig):
    to_hold(rig)
    errors: list[BaseException] = []

    def worker(name: str) -> None:
        try:
            with Client(rig.server.command_endpoint, timeout_s=2.0, retries=1) as c:
                for i in range(40):
                    if name == "gains":
                        assert c.call("set_gains", axis="motor1", kp=100 + i, ki=0, kd=1)["accepted"]
                    else:
                        assert c.call("status")["state"] == "HOLD"
                        assert call_error(c, "move_joints", q=[0, 0, 1, 0]).code == "out_of_range"
        except (AssertionError, CommandError, ClientTimeout) as e:     # reported by the test thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(n,)) for n in ("gains", "status")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert not errors, errors
    gains = [args[1] for _, cmd, args in rig.loop.commands() if cmd == Cmd.SET_GAINS]
    assert gains == [100.0 + i for i in range(40)]


def test_shutdown_stops_server_and_loop(rig):
    res = rig.client.call("shutdown")
    assert res == {"acknowledged": True}
    rig.thread.join(2)
    assert not rig.thread.is_alive() and rig.server.done
    assert rig.block.header[H.SHUTDOWN] == 1 and rig.loop.stop.is_set()
    assert rig.loop.commands()[-1][1] == Cmd.SHUTDOWN


def test_shutdown_is_answered_as_soon_as_the_loop_has_left(rig_factory):
    """A loop that sees the header's SHUTDOWN flag may leave before it reads the mailbox command:
    the reply must not wait for reply_timeout (the daemon stops serving ~50 ms after the loop has
    left, so a late answer would never be sent)."""
    rig = rig_factory(server_kw={"reply_timeout": 30.0}, loop_kw={"respond": False})
    rig.block.header[H.LOOP_EXIT] = 1
    t0 = time.monotonic()
    assert rig.client.call("shutdown") == {"acknowledged": True}
    assert time.monotonic() - t0 < 10.0                  # not the 30 s reply timeout
    rig.thread.join(10)                                  # the server marks itself done after replying
    assert not rig.thread.is_alive() and rig.server.done


# ------------------------------------------------------------------ telemetry PUB

def test_telemetry_events_and_stats_frames(rig_factory):
    rig = rig_factory(server_kw={"decimation": 5})
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.linger = 0
    sub.subscribe(b"")
    sub.connect(rig.server.telemetry_endpoint)
    try:
        time.sleep(0.2)                                 # slow joiner (zguide ch. 1)
        rig.client.call("enable")
        seen: dict[bytes, list[dict]] = {b"telemetry": [], b"event": [], b"stats": []}
        end = time.monotonic() + 5.0
        enabled = {"cycle": None, "kind": "TRANSITION", "from_state": "DISABLED", "reason": "COMMAND", "to_state": "HOLD"}

        def done() -> bool:
            moved = any({**e, "cycle": None} == enabled for e in seen[b"event"])
            return bool(seen[b"stats"]) and moved and len(seen[b"telemetry"]) > 5

        while time.monotonic() < end and not done():
            if sub.poll(100):
                topic, data = sub.recv_multipart()
                seen[topic].append(json.loads(data))
    finally:
        sub.close()
    tel = seen[b"telemetry"]
    assert len(tel) > 5 and set(np.diff([m["cycle"] for m in tel])) == {5.0}   # every 5th record
    assert len(tel[-1]["q"]) == 4 and tel[-1]["margins"][4] is None and tel[-1]["margins"][0] == 0.03
    assert {"t", "state_name", "qd", "q_ref", "tau", "com", "force", "wake_us", "task_us"} <= set(tel[-1])
    assert done(), seen[b"event"]
    assert seen[b"stats"][0]["profiler"]["wake_us"]["max"] <= 11.0


def test_slow_subscriber_drops_are_counted_and_loop_keeps_pace(rig_factory):
    zctx = zmq.Context()                                # small kernel buffers: the queue fills fast
    zctx.setsockopt(zmq.SNDBUF, 4096)
    zctx.setsockopt(zmq.RCVBUF, 4096)
    rig = rig_factory(server_kw={"decimation": 1, "sndhwm": 2}, context=zctx)
    sub = zctx.socket(zmq.SUB)
    sub.linger = 0
    sub.rcvhwm = 1
    sub.subscribe(b"")
    sub.connect(rig.server.telemetry_endpoint)          # and never reads
    try:
        c0 = int(rig.block.header[H.LOOP_CYCLE])
        t0 = time.monotonic()
        end = t0 + 10.0
        while rig.server.counters.pub_drops == 0 and time.monotonic() < end:
            time.sleep(0.05)
        drops = rig.client.call("stats")["io"]["pub_drops"]
        rate = (int(rig.block.header[H.LOOP_CYCLE]) - c0) / (time.monotonic() - t0)
    finally:
        sub.close()
    assert drops > 0
    assert rate > 100                                   # fake loop at ~1 ms: never held back by PUB
    assert rig.client.call("ping")["pong"]


def test_server_writes_cycle_log(leg_desc, tmp_path):
    block = small_block()
    rl = RecordLayout(4)
    log = CycleLogWriter(tmp_path / "log.mcap", rl, ("a", "b", "c", "d"), chunk_bytes=20_000)
    loop = FakeLoop(block)
    loop.thread.start()
    server = IoServer(block, make_context(leg_desc), LOCAL, log=log)
    try:
        server.serve(deadline=time.monotonic() + 0.4)
    finally:
        loop.stop.set()
        loop.thread.join(5)
        server.serve(deadline=time.monotonic() + 0.05)     # drain the last records
        server.close()
        block.close()
    back = read_log(tmp_path / "log.mcap")
    assert len(back.records) == server.counters.records > 50 and log.chunks > 1
    cycles = back.field("cycle")
    assert np.all(np.diff(cycles) == 1)
