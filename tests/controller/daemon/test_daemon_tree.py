"""`bipd run --config deploy/bip2000.yaml --stepped`: the whole BIP 2000 (15 axes on 8
POWERLINK nodes, the inertia plant of the sim backend) boots in a real daemon process and
follows a move given by joint name over real ZMQ sockets; the client owns the clock (``step``),
so nothing depends on the host's speed."""
from __future__ import annotations

import json
import time

import pytest
import zmq

from controller.tools.client import CommandError


def test_fifteen_axes_boot_and_follow_a_move_by_name(stepped_bip2000_daemon):
    proc, client, _, _ = stepped_bip2000_daemon
    config = client.call("get_config")
    joints = config["joints"]
    assert len(joints) == 15 and config["robot"] == "bip2000"
    client.call("enable")
    client.call("step", seconds=0.5)
    status = client.call("status")
    assert status["state"] == "HOLD" and len(status["q"]) == 15
    start = status["q_ref"]
    knee = joints.index("l_knee")
    with pytest.raises(CommandError) as e:                       # nothing moves on a bad name
        client.call("move_joints", q={"l_kne": 0.5}, duration=1.0)
    assert e.value.code == "bad_args" and "l_kne" in e.value.message
    client.call("move_joints", q={"l_knee": 0.5}, duration=1.0)
    client.call("step", seconds=0.5)
    assert client.call("status")["state"] == "MOVING"
    client.call("step", seconds=1.0)
    status = client.call("status")
    assert status["state"] == "HOLD"
    assert abs(status["q_ref"][knee] - 0.5) < 1e-9
    assert abs(status["q"][knee] - 0.5) < 5e-3                   # the drives followed
    others = [j for j in range(15) if j != knee]
    assert max(abs(status["q_ref"][j] - start[j]) for j in others) < 1e-12
    assert max(abs(status["q"][j] - start[j]) for j in others) < 5e-3


def test_a_played_file_reports_its_support_phases(stepped_bip2000_daemon):
    """Hung from the gantry (deploy/bip2000.yaml): every phase change of the file's support column
    is a SUPPORT event with the pelvis as root, and the telemetry names the phase."""
    proc, client, tel_ep, folder = stepped_bip2000_daemon
    joints = client.call("get_config")["joints"]
    client.call("enable")
    client.call("step", seconds=0.5)
    q = client.call("status")["q_ref"]
    row = ",".join(f"{x:.9f}" for x in q)
    phases = ["double", "left", "double", "right", "double"]
    lines = [f"t,{','.join(joints)},support"] + [f"{0.1 * k:.1f},{row},{p}" for k, p in enumerate(phases)]
    (folder / "walk.csv").write_text("\n".join(lines) + "\n")
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(tel_ep)
    try:
        end = time.monotonic() + 60               # the subscription is live once a frame arrives
        while not sub.poll(100):
            assert time.monotonic() < end, "no telemetry frame within 60 s"
            client.call("step", cycles=20)
        client.call("run", trajectory="walk.csv")
        client.call("step", seconds=1.5)
        assert client.call("status")["state"] == "HOLD"
        events, named = [], set()
        while sub.poll(500):
            topic, data = sub.recv_multipart()
            msg = json.loads(data)
            if topic == b"event" and msg["kind"] == "SUPPORT":
                events.append((msg["support"], msg["root"]))
            elif topic == b"telemetry" and msg.get("support_name"):
                named.add(msg["support_name"])
    finally:
        sub.close(0)
    assert events == [(p, 0) for p in phases]             # root 0: the pelvis
    assert named == {"double", "left", "right"}
