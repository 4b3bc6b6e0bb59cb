"""Client (lazy pirate), `bipd ctl` exit codes and CURVE, over real sockets on 127.0.0.1."""
from __future__ import annotations

import json
import re
import socket
import threading
import time

import numpy as np
import pytest
import zmq

from controller.daemon.codes import State
from controller.tools.ports import free_port
from controller.tools.client import Client, ClientTimeout, CommandError
from controller.tools.ctl import main as ctl
from controller.daemon.endpoints import ClientCurve, CurveConfigError, ServerCurve, is_loopback
from controller.daemon.io.server import Endpoints, IoServer

from tests.controller.conftest import FakeLoop, make_context, small_block


def test_client_times_out_without_server():
    t0 = time.monotonic()
    with Client(f"tcp://127.0.0.1:{free_port()}", timeout_s=0.1, retries=2) as c, \
            pytest.raises(ClientTimeout, match="after 2 attempts"):
        c.call("ping")
    assert 0.19 < time.monotonic() - t0 < 10.0     # both attempts waited; gave up (the bound only says "not hung")


def test_lazy_pirate_reaches_a_server_that_starts_late(leg_desc):
    port = free_port()
    block = small_block()
    loop = FakeLoop(block)
    loop.thread.start()
    stop = threading.Event()
    started: list[IoServer] = []

    def late_server() -> None:
        time.sleep(0.5)                                 # first attempts go unanswered
        server = IoServer(block, make_context(leg_desc), Endpoints(f"tcp://127.0.0.1:{port}", "tcp://127.0.0.1:*"))
        started.append(server)
        server.serve(stop)

    thread = threading.Thread(target=late_server)
    thread.start()
    try:
        with Client(f"tcp://127.0.0.1:{port}", timeout_s=0.2, retries=10) as c:
            t0 = time.monotonic()
            assert c.call("ping")["pong"] is True
            assert time.monotonic() - t0 > 0.4
            assert c.call("status")["state"] == "DISABLED"
    finally:
        stop.set()
        thread.join(5)
        loop.stop.set()
        loop.thread.join(5)
        for s in started:
            s.close()
        block.close()


def test_command_error_carries_code_and_message(rig):
    with pytest.raises(CommandError) as e:
        rig.client.call("move_joints", q=[0, 0, 0, 0])
    assert e.value.code == "not_allowed" and "DISABLED" in e.value.message


# ------------------------------------------------------------------ bipd ctl

def test_ctl_exit_codes(rig, capsys):
    ep = ["--endpoint", rig.server.command_endpoint]
    assert ctl(["ping", *ep, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pong"] is True
    assert ctl(["enable", *ep]) == 0
    assert "accepted: True" in capsys.readouterr().out
    assert ctl(["move_joints", "q=[0,0.1,-0.3,0.2]", "duration=2", *ep]) == 0
    assert rig.loop.commands()[-1][2] == [0.0, 0.1, -0.3, 0.2, 2.0]
    capsys.readouterr()
    assert ctl(["move_joints", "q=[0,0,3.1,0]", *ep]) == 1
    err = capsys.readouterr().err
    assert "out_of_range" in err and "knee" in err
    assert ctl(["run", "trajectory=squat", *ep]) == 1           # MOVING: not allowed
    assert "not_allowed" in capsys.readouterr().err
    assert ctl(["ping", "oops", *ep]) == 2
    assert ctl(["ping", "a=1", "a=2", *ep]) == 2
    assert ctl([]) == 2
    assert ctl(["ping", "--timeout", "0", *ep]) == 2
    assert ctl(["ping", "--endpoint", "nowhere"]) == 2
    capsys.readouterr()
    assert ctl(["ping", "--endpoint", f"tcp://127.0.0.1:{free_port()}", "--timeout", "0.1", "--retries", "1"]) == 3
    assert "no reply" in capsys.readouterr().err


# ------------------------------------------------------------------ CURVE

def test_binding_beyond_loopback_needs_curve(leg_desc):
    assert is_loopback("tcp://127.0.0.1:5555") and is_loopback("tcp://localhost:1") and is_loopback("ipc:///tmp/x")
    assert not is_loopback("tcp://0.0.0.0:5555") and not is_loopback("tcp://192.168.1.4:5555")
    assert is_loopback("tcp://[::1]:5555") and is_loopback("tcp://[0:0:0:0:0:0:0:1]:*")
    for beyond in ("tcp://[::]:5555", "tcp://*:5555", "tcp://[fe80::1]:5555", "tcp://127.example.com:5555",
                   "tcp://[::ffff:192.168.1.4]:5555", "tcp://eth0:5555"):
        assert not is_loopback(beyond), beyond
    block = small_block()
    try:
        with pytest.raises(CurveConfigError, match=r"binding tcp://0\.0\.0\.0:5555 beyond loopback requires CURVE"):
            IoServer(block, make_context(leg_desc), Endpoints("tcp://0.0.0.0:5555", "tcp://127.0.0.1:*"))
    finally:
        block.close()


def test_ipv6_loopback_serves_without_curve(leg_desc):
    """``tcp://[::1]:*`` binds without CURVE and a client reaches it over IPv6."""
    block = small_block()
    server = IoServer(block, make_context(leg_desc), Endpoints("tcp://[::1]:*", "tcp://[::1]:*"))
    stop = threading.Event()
    thread = threading.Thread(target=server.serve, args=(stop,), daemon=True)
    thread.start()
    try:
        assert server.command_endpoint.startswith("tcp://[::1]:")
        with Client(server.command_endpoint, timeout_s=5.0, retries=1) as c:
            assert c.call("ping")["pong"] is True
    finally:
        stop.set()
        thread.join(5.0)
        server.close()
        block.close()


def test_curve_admits_only_known_clients(leg_desc):
    srv_pub, srv_sec = zmq.curve_keypair()
    cli_pub, cli_sec = zmq.curve_keypair()
    other_pub, other_sec = zmq.curve_keypair()
    block = small_block()
    loop = FakeLoop(block)
    loop.thread.start()
    server = IoServer(block, make_context(leg_desc), Endpoints("tcp://127.0.0.1:*", "tcp://127.0.0.1:*"),
                      curve=ServerCurve(srv_pub, srv_sec, (cli_pub,)))
    stop = threading.Event()
    thread = threading.Thread(target=server.serve, args=(stop,))
    thread.start()
    try:
        with Client(server.command_endpoint, timeout_s=2.0, retries=1,
                    curve=ClientCurve(srv_pub, cli_pub, cli_sec)) as c:
            assert c.call("ping")["pong"] is True
        with Client(server.command_endpoint, timeout_s=0.3, retries=1,
                    curve=ClientCurve(srv_pub, other_pub, other_sec)) as c, pytest.raises(ClientTimeout):
            c.call("ping")
        with Client(server.command_endpoint, timeout_s=0.3, retries=1) as c, pytest.raises(ClientTimeout):
            c.call("ping")                              # plain text against a CURVE server
    finally:
        stop.set()
        thread.join(5)
        loop.stop.set()
        loop.thread.join(5)
        server.close()
        block.close()


def test_curve_keys_from_certificate_files(tmp_path):
    server_pub_file, server_sec_file = zmq.auth.create_certificates(tmp_path, "server")
    client_pub_file, _ = zmq.auth.create_certificates(tmp_path, "client")
    curve = ServerCurve.from_files(server_sec_file, [client_pub_file])
    assert len(curve.secret) == 40 and curve.clients == (zmq.auth.load_certificate(client_pub_file)[0],)
    with pytest.raises(CurveConfigError, match="no secret key"):
        ServerCurve.from_files(server_pub_file, [])
    with pytest.raises(CurveConfigError, match="cannot load"):
        ServerCurve.from_files(tmp_path / "missing.key_secret", [])


CURVE_GREETING = b"\xff" + bytes(8) + b"\x7f" + bytes([3, 0]) + b"CURVE".ljust(20, b"\0") + b"\x01" + bytes(31)


def test_a_client_whose_handshake_fails_times_out():
    """A plain client meets a CURVE server (a ZMTP 3.0 greeting naming CURVE): the client finds
    the mechanisms differ and ZMQ closes that session for good, so a REQ send would wait forever
    for a peer; it is a timed-out attempt instead."""
    listener = socket.create_server(("127.0.0.1", 0))
    refused = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.sendall(CURVE_GREETING)
            while conn.recv(256):                        # the client's greeting, then its close
                pass
        refused.set()

    threading.Thread(target=serve, daemon=True).start()
    outcome: list[BaseException] = []

    def call() -> None:
        with Client(f"tcp://127.0.0.1:{listener.getsockname()[1]}", timeout_s=0.2, retries=2) as c:
            if refused.wait(30.0):
                try:
                    c.call("ping")
                except ClientTimeout as e:
                    outcome.append(e)

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(60.0)                                         # a bound on a hang, not a timing verdict
    listener.close()
    assert refused.is_set(), "the client did not drop the mismatched connection"
    assert not t.is_alive(), "the client's send waited for a peer that never comes"
    assert len(outcome) == 1 and "after 2 attempts" in str(outcome[0])


def test_ctl_options_anywhere_duplicate_keys_refused_status_in_degrees(rig, capsys):
    ep = rig.server.command_endpoint
    assert ctl(["enable", "--endpoint", ep]) == 0
    rig.loop.wait_state(State.HOLD)
    assert ctl(["move_joints", "--endpoint", ep, 'q={"knee": -0.4}', "--timeout", "2", "duration=2"]) == 0
    assert rig.loop.commands()[-1][2][2] == -0.4
    capsys.readouterr()
    assert ctl(["move_joints", 'q={"knee": -0.4, "knee": -0.3}', "--endpoint", ep]) == 2
    assert 'the key "knee" appears twice' in capsys.readouterr().err
    rig.loop.q = np.array([-1e-25, 0.1, -0.4, 0.2])
    time.sleep(0.05)
    assert ctl(["status", "--endpoint", ep]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^knee +-22\.92° +-22\.92° +0\.00°/s$", out, re.M), out
    assert re.search(r"^ankle_lateral +0\.00° ", out, re.M) and "e-25" not in out
    assert ctl(["status", "--json", "--endpoint", ep]) == 0
    assert json.loads(capsys.readouterr().out)["q"][2] == -0.4            # SI with --json


def test_subscribe_streams_telemetry_frames(rig):
    with rig.client.subscribe(("telemetry",)) as sub:
        topic, frame = sub.recv(timeout_s=5.0)
    assert topic == "telemetry" and frame["q"] == [0.0, 0.1, -0.3, 0.2] and frame["state_name"] == "DISABLED"
