"""The 3-D scene of a tree robot (BIP 2000): a stepped daemon's live view and its cycle log carry
``/tf`` (each joint's parent link -> child link, the exported URDF's names) and ``/scene``, which
compose to the body frames and the CoG Pinocchio computes (:mod:`models.tree.reference`)."""
from __future__ import annotations

import json
import struct

import numpy as np
import pytest
import yaml

import foxglove  # noqa: F401  (the test extra installs it: this file must run in CI, not skip)
from websockets.sync.client import connect

from controller.daemon.io.log import JOINT_STATES, SCENE, TF
from controller.tools.ports import free_port
from models.tree.config import load_tree
from tests.controller.daemon.io.test_live_view import BOOT_S, _rotation, _subscribe
from tests.controller.daemon.io.test_log_ros2 import _decoded, _pose
from tests.controller.daemon_process import booted
from tests.paths import DEPLOY, ROBOTS

pin = pytest.importorskip("pinocchio")
from models.tree.reference import build_tree  # noqa: E402

DESC = load_tree(ROBOTS / "bip2000.yaml")
POSTURE = [0.1, 0.15, -0.3, 0.5, -0.2, 0.1, -0.1, -0.15, -0.25, 0.45, -0.2, -0.1, 0.2, 0.1, -0.15]   # rad
TOPICS = ("/joint_state", "/tf", "/scene")


def _reference(q: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Every body's frame in the pelvis' and the CoG (every body's, the pelvis' included, which
    Pinocchio's centerOfMass leaves out: it is the universe's), by Pinocchio rooted at the pelvis."""
    ref = build_tree(DESC, DESC.base)
    data = ref.model.createData()
    qp = np.asarray(q)[ref.perm]
    pin.framesForwardKinematics(ref.model, data, qp)
    poses = {}
    for name, fid in ref.coms.items():                  # the CoG frame, back along the body's CoG
        T = data.oMf[fid].homogeneous.copy()
        T[:3, 3] -= T[:3, :3] @ np.array(DESC.bodies[name].com)
        poses[name] = T
    masses = np.array([DESC.bodies[name].mass for name in ref.coms])
    cogs = np.array([data.oMf[fid].translation for fid in ref.coms.values()])
    return poses, masses @ cogs / masses.sum()


def _composed(links: list[tuple[str, str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Each child's pose in the root of the transforms (the parents come first)."""
    poses = {DESC.base: np.eye(4)}
    for parent, child, T in links:
        poses[child] = poses[parent] @ T
    return poses


def _check(q, links, scene: dict) -> None:
    want, cog = _reference(q)
    got = _composed(links)
    assert [(p, c) for p, c, _ in links] == [(t.parent, t.child) for t in DESC.joints]
    for name in DESC.body_names:
        np.testing.assert_allclose(got[name], want[name], atol=1e-9, err_msg=name)
    leg = next(e for e in scene["entities"] if e["id"] == "leg")
    assert leg["frame_id"] == DESC.base
    ends = np.array([[p[k] for k in "xyz"] for p in leg["lines"][0]["points"]]).reshape(-1, 2, 3)
    expected = [[want[t.parent][:3, 3], want[t.child][:3, 3]] for t in DESC.joints]
    np.testing.assert_allclose(ends, expected, atol=1e-9)
    sphere = next(e for e in scene["entities"] if e["id"] == "cog")["spheres"][0]["pose"]["position"]
    np.testing.assert_allclose([sphere[k] for k in "xyz"], cog, atol=1e-9)
    assert all(e["id"] != "support" for e in scene["entities"])     # a tree has no foot section


@pytest.mark.slow
def test_bip2000_live_view_and_log_pose_the_tree_as_pinocchio(tmp_path):
    """BIP 2000, stepped (lock-step), moved to a posture: every live and logged /tf, composed from the
    pelvis, gives each body's frame, and /scene its segments and CoG, as Pinocchio at the frame's q."""
    doc = yaml.safe_load((DEPLOY / "bip2000.yaml").read_text())
    doc["robot"] = str(ROBOTS / "bip2000.yaml")
    port = free_port()
    doc["io"]["live_view"] = {"enabled": True, "port": port}
    live: dict[str, dict[int, dict]] = {t: {} for t in TOPICS}
    with booted(tmp_path, doc, clock="--stepped") as (proc, client, _):
        with connect(f"ws://127.0.0.1:{port}", subprotocols=["foxglove.sdk.v1"]) as ws:
            subs = _subscribe(ws, TOPICS)
            while client.call("stats")["live_view"]["subscriptions"] < len(TOPICS):
                client.call("step", cycles=1)
            client.call("enable")
            for _ in range(5000):
                client.call("step", cycles=1)
                if client.call("status")["state"] == "HOLD":
                    break
            client.call("move_joints", q=POSTURE, duration=0.3)
            client.call("step", cycles=200)
            end = client.call("status")["t"]
            while min((max(v, default=0) for v in live.values())) < round((end - 1 / 30) * 1e9):
                msg = ws.recv(timeout=BOOT_S)
                if isinstance(msg, bytes) and msg[0] == 1:
                    sub, ns = struct.unpack_from("<IQ", msg, 1)
                    live[subs[sub]][ns] = json.loads(msg[13:])
        client.call("shutdown")
        proc.communicate(timeout=60)
    first = np.array(live["/joint_state"][min(live["/joint_state"])]["position"])
    moved = 0.0
    for ns, tf in live["/tf"].items():
        q = np.array(live["/joint_state"][ns]["position"])
        links = [(j["parent_frame_id"], j["child_frame_id"], _pose_of(j)) for j in tf["transforms"]]
        _check(q, links, live["/scene"][ns])
        moved = max(moved, np.abs(q - first).max())
    assert moved > 0.1, "the frames checked are all at the start posture"

    topics = _decoded(next((tmp_path / "log").glob("run-*/cycles.mcap")))
    states = {m.log_time: msg for _, _, m, msg in topics[JOINT_STATES]}
    scenes = {m.log_time: msg for _, _, m, msg in topics[SCENE]}
    assert len(topics[TF]) == len(scenes) > 10
    for _, _, message, msg in topics[TF]:
        q = np.array(states[message.log_time].position)
        _check(q, [(c.header.frame_id, c.child_frame_id, _pose(c.transform)) for c in msg.transforms],
               scenes[message.log_time])


def _pose_of(j: dict) -> np.ndarray:
    """The 4x4 pose of a ``foxglove.FrameTransform``."""
    T = np.eye(4)
    T[:3, :3] = _rotation(j["rotation"])
    T[:3, 3] = [j["translation"][k] for k in "xyz"]
    return T
