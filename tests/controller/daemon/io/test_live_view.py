"""The live view as a user meets it: a real daemon (simulated bus, stepped lock-step) with
``io.live_view`` enabled, a Foxglove WebSocket client (the Foxglove WebSocket protocol under either of
its names, ``foxglove.sdk.v1`` and ``foxglove.websocket.v1``, over the ``websockets`` package)
subscribed to its channels and tuning its parameters; a port already taken refuses the start."""
from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

import foxglove  # noqa: E402,F401  (the test extra installs it: this file must run in CI, not skip)
from websockets.sync.client import connect  # noqa: E402

from controller.tools.client import Client, CommandError  # noqa: E402
from models import Robot  # noqa: E402
from models.tree.config import load_tree  # noqa: E402
from models.tilt import rotation_world_foot  # noqa: E402

from controller.tools.ports import free_port  # noqa: E402
from tests.paths import DEPLOY, ROBOTS

BOOT_S = 300.0          # wall seconds before giving up on an event: an error, not a verdict


def _config(tmp_path: Path, live: dict | None) -> tuple[Path, str]:
    doc = yaml.safe_load((DEPLOY / "bipd.yaml").read_text())
    doc["robot"] = str(ROBOTS / "bip_leg.yaml")
    doc["stabilizer"] = str(ROBOTS / "bip_leg_stabilizer.yaml")
    cmd_ep = f"tcp://127.0.0.1:{free_port()}"
    doc["io"].update(command=cmd_ep, telemetry=f"tcp://127.0.0.1:{free_port()}")
    if live is None:
        doc["io"].pop("live_view", None)
    else:
        doc["io"]["live_view"] = live
    cfg = tmp_path / "bipd.yaml"
    cfg.write_text(yaml.safe_dump(doc))
    return cfg, cmd_ep


def _start(cfg: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "controller.cli", "run", "--config", str(cfg), "--stepped"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))


def _booted(proc: subprocess.Popen, cmd_ep: str) -> Client:
    client = Client(cmd_ep, timeout_s=2.0, retries=3)
    end = time.monotonic() + BOOT_S
    while True:
        try:
            if client.call("ping")["ready"]:
                return client
        except Exception:
            pass
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < end, f"the daemon did not boot within {BOOT_S:g} s"
        time.sleep(0.2)


def _stop(proc: subprocess.Popen, client: Client | None) -> None:
    if client is not None:
        client.close()
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _live_daemon(tmp_path: Path, **live):
    """A booted daemon with the live view on a free port (``live``: more io.live_view keys): (port, client)."""
    port = free_port()
    cfg, cmd_ep = _config(tmp_path, {"enabled": True, "port": port, **live})
    proc = _start(cfg)
    client = None
    try:
        client = _booted(proc, cmd_ep)
        yield port, client
    finally:
        _stop(proc, client)


@pytest.fixture(scope="module")
def live_daemon(tmp_path_factory):
    """One stepped daemon with the live view for the module's tests: the first moves it, the others
    read its description and parameters (a refused set changes nothing)."""
    yield from _live_daemon(tmp_path_factory.mktemp("live"))


def _subscribe(ws, topics: tuple[str, ...]) -> dict[int, str]:
    """Read the server's advertisements until every topic is seen; subscribe; {subscription id: topic}."""
    channels: dict[str, dict] = {}
    while not set(topics) <= set(channels):
        msg = ws.recv(timeout=BOOT_S)
        if isinstance(msg, str) and json.loads(msg).get("op") == "advertise":
            channels.update({c["topic"]: c for c in json.loads(msg)["channels"]})
    assert all(channels[t]["encoding"] == "json" for t in topics)
    assert channels["/scene"]["schemaName"] == "foxglove.SceneUpdate"
    if "/robot_description" in topics:
        assert channels["/robot_description"]["schemaName"] == "std_msgs/msg/String"
    subs = {i: t for i, t in enumerate(topics, 1)}
    ws.send(json.dumps({"op": "subscribe", "subscriptions": [
        {"id": i, "channelId": channels[t]["id"]} for i, t in subs.items()]}))
    return subs


TOPICS = ("/joint_state", "/scene", "/platform", "/tf")


def _nearest(times: dict[float, object], stamp: dict[str, int]) -> float:
    """The key of ``times`` (loop time, s) a Foxglove timestamp stands for."""
    t = stamp["sec"] + stamp["nsec"] * 1e-9
    best = min(times, key=lambda s: abs(s - t))
    assert abs(best - t) < 1e-6, f"no frame at t = {t}"
    return best


def test_live_view_streams_joint_state_and_scene_matching_status(live_daemon):
    port, client = live_daemon
    pin = pytest.importorskip("pinocchio")
    from models.chain.reference import build
    robot = Robot.from_yaml(ROBOTS / "bip_leg.yaml")
    ref, tool = build(robot.description)
    with connect(f"ws://127.0.0.1:{port}", subprotocols=["foxglove.sdk.v1"]) as ws:
        subs = _subscribe(ws, TOPICS)
        end = time.monotonic() + BOOT_S               # the server has taken every subscription
        while client.call("stats")["live_view"]["subscriptions"] < len(TOPICS):
            assert time.monotonic() < end, "the live view did not take the subscriptions"
            time.sleep(0.01)
        seen: dict[float, list[float]] = {}           # status t -> q, once per cycle

        def step() -> str:
            client.call("step", cycles=1)
            st = client.call("status")
            seen[st["t"]] = st["q"]
            return st["state"]

        client.call("enable")
        while step() != "HOLD":                       # the simulated drives reach Operation Enabled
            assert len(seen) < 5000, "the drives did not enable"
        client.call("platform", alpha=0.1, beta=-0.05, duration=0.04)   # a tilt the scene must follow
        for _ in range(60):
            step()
        got: dict[str, list[dict]] = {t: [] for t in TOPICS}
        latest = dict.fromkeys(TOPICS, -1.0)           # loop time of the last frame on each channel
        while min(latest.values()) < max(seen) - 1 / 30:   # every channel has its last frame of the steps
            msg = ws.recv(timeout=BOOT_S)
            if isinstance(msg, bytes) and msg[0] == 1:
                sub, ns = struct.unpack_from("<IQ", msg, 1)
                got[subs[sub]].append(json.loads(msg[13:]))
                latest[subs[sub]] = ns * 1e-9
    for js in got["/joint_state"]:
        assert js["name"] == list(robot.joint_names)
        assert js["t"] in seen, f"t = {js['t']} is no cycle of the status"
        assert js["position"] == seen[js["t"]]
    period = 0.002                                    # deploy/bipd.yaml loop.period_s
    gaps = np.diff([js["t"] for js in got["/joint_state"]])
    assert np.all((gaps >= 1 / 30 - 1e-9) & (gaps < 1 / 30 + period)), gaps   # ~30 Hz of loop time
    foot = robot.description.foot
    tilt = {p["t"]: (p["alpha"], p["beta"]) for p in got["/platform"]}
    np.testing.assert_allclose(tilt[max(tilt)], (0.1, -0.05), atol=5e-3)   # the platform reached its command
    R = np.zeros((3, 3))
    links = [(t.parent, t.child) for t in load_tree(ROBOTS / "bip_leg.yaml").joints]
    for tf in got["/tf"]:                             # each link in its parent at q, as Pinocchio places it
        x, *joints = tf["transforms"]
        q = np.array(seen[_nearest(seen, x["timestamp"])])
        data = ref.createData()
        pin.forwardKinematics(ref, data, q)
        assert [(j["parent_frame_id"], j["child_frame_id"]) for j in joints] == links
        for i, j in enumerate(joints, 1):
            np.testing.assert_allclose(_rotation(j["rotation"]), data.liMi[i].rotation, atol=1e-12)
            np.testing.assert_allclose([j["translation"][k] for k in "xyz"], data.liMi[i].translation, atol=1e-12)
        rotation_world_foot(*tilt[_nearest(tilt, x["timestamp"])], R)
        assert (x["parent_frame_id"], x["child_frame_id"]) == ("world", "base")
        np.testing.assert_allclose(_rotation(x["rotation"]), R, atol=1e-12)
        origin = R @ [foot["Delta"], 0.0, -foot["Z"]]              # thesis eq. 47
        np.testing.assert_allclose([x["translation"][k] for k in "xyz"], origin, atol=1e-12)
    for scene in got["/scene"]:
        t = _nearest(seen, scene["entities"][0]["timestamp"])
        q = np.array(seen[t])
        leg = next(e for e in scene["entities"] if e["id"] == "leg")
        points = np.array([[p["x"], p["y"], p["z"]] for p in leg["lines"][0]["points"]])
        data = ref.createData()                       # Pinocchio, independent of models.chain.kinematics
        pin.framesForwardKinematics(ref, data, q)
        expected = [np.zeros(3)] + [data.oMi[i].translation for i in range(1, robot.n + 1)] + [data.oMf[tool].translation]
        np.testing.assert_allclose(points, np.array(expected), atol=1e-12)
        cog = next(e for e in scene["entities"] if e["id"] == "cog")["spheres"][0]["pose"]["position"]
        np.testing.assert_allclose([cog["x"], cog["y"], cog["z"]], pin.centerOfMass(ref, data, q), atol=1e-9)
        support = next(e for e in scene["entities"] if e["id"] == "support")
        assert support["frame_id"] == "world"
        rotation_world_foot(*tilt[_nearest(tilt, support["timestamp"])], R)
        a, b, c = foot["a"], foot["b"], foot["c"]                   # the sole, thesis Figure 20
        sole = np.array([[a, b], [a, -c], [-a, -c], [-a, b]]) - [0.0, foot["Z"]]
        expected = np.column_stack([np.zeros(4), sole @ R[1:, 1:].T])   # eq. 50-51 on the ground
        points = [[p["x"], p["y"], p["z"]] for p in support["lines"][0]["points"]]
        np.testing.assert_allclose(points, expected, atol=1e-12)
    stats = client.call("stats")
    assert stats["live_view"]["port"] == port and stats["live_view"]["frames"] >= 4


@pytest.mark.slow
def test_live_view_port_in_use_refuses_to_start(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cfg, _ = _config(tmp_path, {"enabled": True, "port": port})
        proc = _start(cfg)
        try:
            out, _ = proc.communicate(timeout=BOOT_S)
        finally:
            _stop(proc, None)
    assert proc.returncode == 2, out
    errors = [line for line in out.splitlines() if "error" in line]
    assert len(errors) == 1 and "io.live_view" in errors[0] and str(port) in errors[0], out
    assert "Traceback" not in out and "loop process" not in out, out


@pytest.mark.slow
def test_live_view_is_off_by_default(tmp_path):
    cfg, cmd_ep = _config(tmp_path, None)
    port = 8765                         # the default port: nothing may listen there
    assert not _listening(port), "another program already listens on 8765; the check would mean nothing"
    proc = _start(cfg)
    client = None
    try:
        client = _booted(proc, cmd_ep)
        assert not _listening(port)
        assert client.call("stats")["live_view"] is None
    finally:
        _stop(proc, client)


def test_non_loopback_host_is_a_config_error(tmp_path):
    from controller.daemon.config import load_daemon_config
    from models import ConfigError
    cfg, _ = _config(tmp_path, {"enabled": True, "host": "0.0.0.0"})
    with pytest.raises(ConfigError, match=r"io\.live_view\.host.*loopback"):
        load_daemon_config(cfg)


def test_allow_parameters_must_be_a_boolean(tmp_path):
    from controller.daemon.config import load_daemon_config
    from models import ConfigError
    assert load_daemon_config(_config(tmp_path, {"enabled": True})[0]).io.live_view.allow_parameters is False
    cfg, _ = _config(tmp_path, {"enabled": True, "allow_parameters": "yes"})
    with pytest.raises(ConfigError, match=r"io\.live_view\.allow_parameters: expected true or false, got 'yes'"):
        load_daemon_config(cfg)


def _rotation(q: dict) -> np.ndarray:
    """The rotation matrix of a unit quaternion (independent of controller.daemon.io.scene)."""
    x, y, z, w = q["x"], q["y"], q["z"], q["w"]
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def test_quaternions_of_the_tilt_and_of_the_force_arrow():
    from controller.daemon.io.scene import arrow_rotation, quaternion
    from models.tilt import rotation_world_foot
    rng = np.random.default_rng(7)
    R = np.zeros((3, 3))
    for alpha, beta in [*rng.uniform(-1.2, 1.2, (20, 2)), (0.0, 0.0), (np.pi, 0.0), (0.0, np.pi)]:
        rotation_world_foot(alpha, beta, R)
        np.testing.assert_allclose(_rotation(quaternion(R)), R, atol=1e-12)
    for d in [*rng.normal(size=(20, 3)), (1.0, 0.0, 0.0), (-1.0, 0.0, 0.0), (0.0, 0.0, -1.0)]:
        d = np.asarray(d) / np.linalg.norm(d)
        np.testing.assert_allclose(_rotation(arrow_rotation(d)) @ [1.0, 0.0, 0.0], d, atol=1e-12)


def test_missing_sdk_names_the_extra(monkeypatch):
    from controller.daemon.io.live import LiveView, LiveViewError
    monkeypatch.setitem(sys.modules, "foxglove", None)          # import foxglove -> ImportError
    robot = Robot.from_yaml(ROBOTS / "bip_leg.yaml")
    with pytest.raises(LiveViewError, match=r"pip install 'bipd\[live\]'"):
        LiveView(robot, 0)


@pytest.mark.slow
def test_scene_draws_the_field_force_at_the_cog_and_reddens_the_polygon_beyond_a_wall():
    from controller.daemon.io.live import LiveView
    from controller.daemon.io.scene import FORCE_SCALE, INSIDE_COLOR, OUTSIDE_COLOR, Ground
    from controller.daemon.telemetry import RecordLayout
    robot = Robot.from_yaml(ROBOTS / "bip_leg.yaml")
    foot = robot.description.foot
    live = LiveView(robot, 0, ground=Ground.of(robot, None))
    try:
        s = RecordLayout(robot.n).slices
        rec = np.full(RecordLayout(robot.n).size, np.nan)
        rec[s["q"]] = [0.1, -0.2, 0.3, 0.1]
        rec[s["com"]] = com = robot.com(rec[s["q"]])
        rec[s["force"]] = force = np.array([0.0, 3.0, -4.0])
        rec[s["platform"]] = alpha, beta = 0.08, -0.03
        rec[s["margins"]][:4] = [0.02, 0.01, 0.03, 0.04]
        R = np.zeros((3, 3))
        rotation_world_foot(alpha, beta, R)
        support = next(e for e in live.scene.entities(rec, 10**9, live.scene.place(rec)) if e["id"] == "support")
        arrow = support["arrows"][0]
        p = arrow["pose"]["position"]
        np.testing.assert_allclose([p["x"], p["y"], p["z"]], R @ com + R @ [foot["Delta"], 0.0, -foot["Z"]], atol=1e-12)
        np.testing.assert_allclose(_rotation(arrow["pose"]["orientation"]) @ [1.0, 0.0, 0.0], force / 5.0, atol=1e-12)
        assert arrow["shaft_length"] + arrow["head_length"] == pytest.approx(FORCE_SCALE * 5.0)
        assert support["lines"][0]["color"] == INSIDE_COLOR
        rec[s["margins"]][2] = -0.001                                   # the CoG beyond one wall
        support = next(e for e in live.scene.entities(rec, 10**9, live.scene.place(rec)) if e["id"] == "support")
        assert support["lines"][0]["color"] == OUTSIDE_COLOR
    finally:
        live.close()


# ---------------------------------------------------------------- subprotocols, robot description, parameters

def _op(ws, op: str, **match) -> dict:
    """The next text message of operation ``op`` (and the given fields), skipping the others."""
    while True:
        msg = ws.recv(timeout=BOOT_S)
        if isinstance(msg, str):
            m = json.loads(msg)
            if m.get("op") == op and all(m.get(k) == v for k, v in match.items()):
                return m


def _get(ws, *names: str) -> dict:
    ws.send(json.dumps({"op": "getParameters", "parameterNames": list(names), "id": "get"}))
    return {p["name"]: p["value"] for p in _op(ws, "parameterValues", id="get")["parameters"]}


@pytest.mark.parametrize("protocol", ["foxglove.sdk.v1", "foxglove.websocket.v1"])
def test_both_protocol_names_get_the_robot_description(live_daemon, protocol):
    """A client of either name is served (the same serverInfo, channels and parameters); the URDF of
    the parameter and of /robot_description is the export with geometry, which Pinocchio reads."""
    pin = pytest.importorskip("pinocchio")
    from models.tree.config import load_tree
    from models.urdf import to_urdf
    port, _ = live_daemon
    expected = to_urdf(load_tree(ROBOTS / "bip_leg.yaml"))
    with connect(f"ws://127.0.0.1:{port}", subprotocols=[protocol]) as ws:
        assert ws.subprotocol == protocol
        assert "parameters" in _op(ws, "serverInfo")["capabilities"]
        subs = _subscribe(ws, ("/robot_description", "/scene"))
        while True:                                   # sent on subscription, with no cycle run
            msg = ws.recv(timeout=BOOT_S)
            if isinstance(msg, bytes) and msg[0] == 1 and subs[struct.unpack_from("<I", msg, 1)[0]] == "/robot_description":
                break
        urdf = _get(ws, "/robot_description")["/robot_description"]
    assert urdf == expected and json.loads(msg[13:]) == {"data": expected}
    model = pin.buildModelFromXML(urdf)
    visuals = pin.buildGeomFromUrdfString(model, urdf, pin.GeometryType.VISUAL)
    assert model.nq == 4 and visuals.ngeoms > 4


def test_other_protocol_names_are_refused(live_daemon):
    from websockets.exceptions import InvalidStatus
    port, _ = live_daemon
    for offer in (["foxglove.websocket.v2"], None):
        with pytest.raises(InvalidStatus, match="400"):
            connect(f"ws://127.0.0.1:{port}", subprotocols=offer)


@pytest.fixture
def tuning_daemon(tmp_path):
    yield from _live_daemon(tmp_path, allow_parameters=True)


def _settle(client: Client) -> None:
    """Let the stepped loop take what is in its mailbox (a few cycles)."""
    client.call("step", cycles=3)


def _set_reply_and_update(ws, client: Client, name: str, value: float) -> None:
    """Step the loop until the setParameters reply (id "set") and the subscribers' update of
    ``name`` to ``value`` have both come, in whichever order: the server may publish the update
    (the command accepted) before it answers the request."""
    replied = updated = False
    for _ in range(int(BOOT_S / 0.2)):
        _settle(client)                                   # the loop takes it at a cycle boundary
        try:
            msg = ws.recv(timeout=0.2)
        except TimeoutError:
            continue
        m = json.loads(msg) if isinstance(msg, str) else {}
        if m.get("op") == "parameterValues":
            replied |= m.get("id") == "set"
            updated |= m.get("id") is None and {"name": name, "value": value} in [
                {k: p.get(k) for k in ("name", "value")} for p in m["parameters"]]
        if replied and updated:
            return
    raise AssertionError(f"setParameters {name}={value}: reply {replied}, update {updated}")


def test_parameters_set_lands_and_a_bad_value_is_refused_with_set_gains_reason(tuning_daemon):
    port, client = tuning_daemon
    gains = yaml.safe_load((DEPLOY / "bipd.yaml").read_text())["control"]["gains"]
    with connect(f"ws://127.0.0.1:{port}", subprotocols=["foxglove.websocket.v1"]) as ws:
        before = _get(ws)
        assert before["gains.knee.kp"] == gains["kp"][2] and before["gains.hip.kd"] == gains["kd"][3]
        assert set(k for k in before if k.startswith("stabilizer.")) >= {"stabilizer.max_speed"}
        ws.send(json.dumps({"op": "subscribeParameterUpdates", "parameterNames": ["gains.knee.kp"]}))
        ws.send(json.dumps({"op": "setParameters", "id": "set",
                            "parameters": [{"name": "gains.knee.kp", "value": 1234.5}]}))
        _set_reply_and_update(ws, client, "gains.knee.kp", 1234.5)
        after = _get(ws, "gains.knee.kp", "gains.knee.ki")
        assert after == {"gains.knee.kp": 1234.5, "gains.knee.ki": gains["ki"][2]}
        client.call("set_gains", axis="hip", kp=10.0, ki=1.0, kd=2.0)   # another client: the same table
        _settle(client)
        assert _get(ws, "gains.hip.kp", "gains.hip.kd") == {"gains.hip.kp": 10.0, "gains.hip.kd": 2.0}
        with pytest.raises(CommandError) as zmq_refusal:
            client.call("set_gains", axis="knee", kp=-1.0, ki=1.0, kd=1.0)
        ws.send(json.dumps({"op": "setParameters", "parameters": [{"name": "gains.knee.kp", "value": -1.0}]}))
        status = _op(ws, "status")
        assert status["level"] == 2 and status["message"] == f"set_gains refused: {zmq_refusal.value.message}"
        ws.send(json.dumps({"op": "setParameters", "parameters": [{"name": "stabilizer.max_speed", "value": 9.0}]}))
        status = _op(ws, "status")
        assert "args.params.max_speed" in status["message"] and "2" in status["message"]
        ws.send(json.dumps({"op": "setParameters", "parameters": [{"name": "gains.nowhere.kp", "value": 1.0}]}))
        assert "not a parameter" in _op(ws, "status")["message"]
        _settle(client)
        assert _get(ws, "gains.knee.kp")["gains.knee.kp"] == 1234.5       # the refusals changed nothing


def test_parameters_are_read_only_by_default(live_daemon):
    port, client = live_daemon
    with connect(f"ws://127.0.0.1:{port}", subprotocols=["foxglove.sdk.v1"]) as ws:
        kp = _get(ws, "gains.knee.kp")["gains.knee.kp"]
        ws.send(json.dumps({"op": "setParameters", "parameters": [{"name": "gains.knee.kp", "value": kp + 1.0}]}))
        status = _op(ws, "status")
        assert status["level"] == 2 and "io.live_view.allow_parameters" in status["message"]
        _settle(client)
        assert _get(ws, "gains.knee.kp")["gains.knee.kp"] == kp
