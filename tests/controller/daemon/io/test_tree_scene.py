"""The 3-D scene of a tree robot (BIP 2000): a stepped daemon's live view and its cycle log carry
``/tf`` (world -> pelvis from the pelvis estimate, each joint's parent link -> child link, the
exported URDF's names) and ``/scene``, which compose to the body frames and the CoG Pinocchio
computes (:mod:`models.tree.reference`) placed at the estimated pelvis pose; the support polygon is
the hull of the contact soles' outlines and each loaded sole's arrow is its load to scale."""
from __future__ import annotations

import json
import struct

import numpy as np
import pytest
import yaml

import foxglove  # noqa: F401  (the test extra installs it: this file must run in CI, not skip)
from websockets.sync.client import connect

from controller.daemon.io.log import JOINT_STATES, SCENE, TF
from controller.daemon.io.scene import SOLE_FORCE_SCALE, TreeScene
from controller.daemon.telemetry import RecordLayout
from models.tree.robot import TreeRobot
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


SOLES = ("left_sole", "right_sole")                     # models.common.support's order


def _reference(q: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Every body's frame (and the soles') in the pelvis' and the CoG (every body's, the pelvis'
    included, which Pinocchio's centerOfMass leaves out: it is the universe's), by Pinocchio rooted
    at the pelvis."""
    ref = build_tree(DESC, DESC.base)
    data = ref.model.createData()
    qp = np.asarray(q)[ref.perm]
    pin.framesForwardKinematics(ref.model, data, qp)
    poses = {sole: data.oMf[ref.frames[sole]].homogeneous.copy() for sole in SOLES}
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


def _pelvis(pos, rpy) -> np.ndarray:
    """world -> pelvis of the estimate's (position, R = Rx Ry Rz (rpy)), by Pinocchio's exp3."""
    T = np.eye(4)
    T[:3, :3] = pin.exp3(np.array([rpy[0], 0, 0])) @ pin.exp3(np.array([0, rpy[1], 0])) @ pin.exp3(np.array([0, 0, rpy[2]]))
    T[:3, 3] = pos
    return T


def _xyz(p: dict) -> np.ndarray:
    return np.array([p[k] for k in "xyz"])


def _check_world(q, world: np.ndarray, scene: dict, loads=None, contact=None) -> None:
    """The ``support`` entity against Pinocchio's soles placed by ``world`` (world -> pelvis): the
    polygon is convex, counter-clockwise, its vertices outline corners of the soles in ``contact``
    (default: either) and every such corner inside it; one arrow per loaded sole (``loads``,
    default: any) from its origin along its normal, ``SOLE_FORCE_SCALE`` m per N; the CoG's mark
    under the CoG."""
    want, cog = _reference(q)
    feet = {f.frame: f for f in DESC.feet}
    soles = [world @ want[sole] for sole in SOLES]
    corners = [np.array([T[:3, :3] @ [x, y, 0.0] + T[:3, 3] for x, y in feet[sole].outline])
               for sole, T in zip(SOLES, soles)]
    support = next(e for e in scene["entities"] if e["id"] == "support")
    assert support["frame_id"] == "world"
    inside = {0: [0], 1: [1], 2: [0, 1]}[contact] if contact is not None else [0, 1]
    pts = np.vstack([corners[k] for k in inside])
    poly = np.array([_xyz(p) for line in support["lines"] for p in line["points"]])
    assert len(poly) >= 3 or contact is None, "no polygon under a sole in contact"
    for v in poly:                                      # each vertex a corner of a contact sole
        assert np.min(np.linalg.norm(pts[:, :2] - v[:2], axis=1)) < 1e-9, v
        np.testing.assert_allclose(v[2], pts[:, 2].mean() if contact is not None else v[2], atol=1e-9)
    if contact is not None:
        for a, b in zip(poly, np.roll(poly, -1, axis=0)):   # every corner on the inner side of every edge
            cross = (b[0] - a[0]) * (pts[:, 1] - a[1]) - (b[1] - a[1]) * (pts[:, 0] - a[0])
            assert cross.min() > -1e-12
    arrows = support["arrows"]
    loaded = [k for k in range(2) if loads is None or loads[k] > 0.0]
    if loads is not None:
        assert len(arrows) == len(loaded)
    for a in arrows:
        start = _xyz(a["pose"]["position"])
        k = int(np.argmin([np.linalg.norm(T[:3, 3] - start) for T in soles]))
        np.testing.assert_allclose(start, soles[k][:3, 3], atol=1e-9)
        np.testing.assert_allclose(_rotation(a["pose"]["orientation"])[:, 0], soles[k][:3, 2], atol=1e-9)
        if loads is not None:
            assert a["shaft_length"] + a["head_length"] == pytest.approx(SOLE_FORCE_SCALE * loads[k], abs=1e-12)
    if len(poly):
        mark = _xyz(support["spheres"][0]["pose"]["position"])
        np.testing.assert_allclose(mark[:2], (world[:3, :3] @ cog + world[:3, 3])[:2], atol=1e-9)
        np.testing.assert_allclose(mark[2], poly[0, 2], atol=1e-12)


@pytest.mark.parametrize("contact, loads", [(2, (410.0, 620.0)), (0, (1030.0, 0.0)), (1, (0.0, 990.0))])
def test_tree_scene_places_the_robot_and_its_support_in_the_world(contact, loads):
    """A record with a pelvis estimate, loads and a contact phase: /tf's world -> pelvis composed with
    the links gives Pinocchio's body frames at the estimated pelvis pose (1e-9); the polygon, the
    arrows and the CoG's mark as :func:`_check_world`."""
    scene = TreeScene(TreeRobot(DESC))
    layout = RecordLayout(len(POSTURE))
    s = layout.slices
    rec = np.full(layout.size, np.nan)
    rec[s["q"]] = POSTURE
    pos, rpy = np.array([0.31, -0.12, 0.93]), np.array([0.05, -0.08, 0.7])
    rec[s["pelvis_pos"]], rec[s["pelvis_rpy"]] = pos, rpy
    rec[s["feet_load"]], rec[s["contact"]], rec[s["support"]] = loads, contact, -1
    assert scene.place(rec)
    world = _pose_of(scene.base_transform(0))
    np.testing.assert_allclose(world, _pelvis(pos, rpy), atol=1e-12)
    assert scene.frames(rec[s["q"]])
    links = [(parent, child, rel.copy()) for parent, child, rel in scene.link_poses()]
    want, _ = _reference(rec[s["q"]])
    got = _composed(links)
    for name in DESC.body_names:
        np.testing.assert_allclose(world @ got[name], _pelvis(pos, rpy) @ want[name], atol=1e-9, err_msg=name)
    msg = {"entities": scene.entities(rec, 0, True)}
    _check(rec[s["q"]], links, msg)
    _check_world(rec[s["q"]], world, msg, loads, contact)
    rec[s["pelvis_rpy"]] = np.nan                       # no estimate: no world -> pelvis, nothing in the world
    assert not scene.place(rec)
    assert all(e["id"] != "support" for e in scene.entities(rec, 0, False))


@pytest.mark.slow
def test_bip2000_live_view_and_log_pose_the_tree_as_pinocchio(tmp_path):
    """BIP 2000 on the floor, stepped (lock-step), moved to a posture: every live and logged /tf,
    composed from the world, gives each body's frame, and /scene its segments, CoG, support polygon
    and load arrows, as Pinocchio at the frame's q placed at its world -> pelvis, which the log's
    /pelvis holds; the logged arrows and polygon follow the log's feet_load and contact."""
    doc = yaml.safe_load((DEPLOY / "bip2000.yaml").read_text())
    doc["robot"] = str(ROBOTS / "bip2000.yaml")
    doc["control"]["support"] = "ground"            # standing: the feet loaded, the pelvis estimated
    port = free_port()
    doc["io"]["live_view"] = {"enabled": True, "port": port}
    live: dict[str, dict[int, dict]] = {t: {} for t in TOPICS}
    # a step of 300 cycles of the MuJoCo plant may outlast the default 2 s reply timeout on a loaded host
    with booted(tmp_path, doc, clock="--stepped", timeout_s=60.0) as (proc, client, _):
        with connect(f"ws://127.0.0.1:{port}", subprotocols=["foxglove.sdk.v1"]) as ws:
            subs = _subscribe(ws, TOPICS)
            while client.call("stats")["live_view"]["subscriptions"] < len(TOPICS):
                client.call("step", cycles=1)
            client.call("enable")
            for _ in range(5000):
                client.call("step", cycles=1)
                if client.call("status")["state"] == "HOLD":
                    break
            client.call("move_joints", q=[0.4 * v for v in POSTURE], duration=1.0)   # from the flexed stance
            client.call("step", cycles=300)
            end = client.call("status")["t"]
            while min((max(v, default=0) for v in live.values())) < round((end - 1 / 30) * 1e9):
                msg = ws.recv(timeout=BOOT_S)
                if isinstance(msg, bytes) and msg[0] == 1:
                    sub, ns = struct.unpack_from("<IQ", msg, 1)
                    live[subs[sub]][ns] = json.loads(msg[13:])
        client.call("shutdown")
        proc.communicate(timeout=60)
    first = np.array(live["/joint_state"][min(live["/joint_state"])]["position"])
    moved, placed = 0.0, 0
    for ns, tf in live["/tf"].items():
        q = np.array(live["/joint_state"][ns]["position"])
        links = [(j["parent_frame_id"], j["child_frame_id"], _pose_of(j)) for j in tf["transforms"]]
        world = [T for parent, _, T in links if parent == "world"]
        _check(q, [link for link in links if link[0] != "world"], live["/scene"][ns])
        if world:
            _check_world(q, world[0], live["/scene"][ns])
            placed += 1
        moved = max(moved, np.abs(q - first).max())
    assert moved > 0.05, "the frames checked are all at the start posture"
    assert placed > 10, "the live view never placed the pelvis in the world"

    topics = _decoded(next((tmp_path / "log").glob("run-*/cycles.mcap")))
    states = {m.log_time: msg for _, _, m, msg in topics[JOINT_STATES]}
    scenes = {m.log_time: msg for _, _, m, msg in topics[SCENE]}
    pelvis = {m.log_time: msg for _, _, m, msg in topics["/pelvis"]}
    loop = {m.log_time: msg for _, _, m, msg in topics["/loop"]}
    assert len(topics[TF]) == len(scenes) > 10
    placed = 0
    for _, _, message, msg in topics[TF]:
        q = np.array(states[message.log_time].position)
        links = [(c.header.frame_id, c.child_frame_id, _pose(c.transform)) for c in msg.transforms]
        _check(q, [link for link in links if link[0] != "world"], scenes[message.log_time])
        world = [T for parent, _, T in links if parent == "world"]
        if world:
            est, cycle = pelvis[message.log_time], loop[message.log_time]
            np.testing.assert_allclose(world[0], _pelvis(est["position"], est["rpy"]), atol=1e-9)
            contact = cycle["contact"] if cycle["contact"] in (0, 1, 2) else None
            _check_world(q, world[0], scenes[message.log_time], cycle["feet_load"], contact)
            placed += 1
    assert placed > 10, "the log never placed the pelvis in the world"


def _pose_of(j: dict) -> np.ndarray:
    """The 4x4 pose of a ``foxglove.FrameTransform``."""
    T = np.eye(4)
    T[:3, :3] = _rotation(j["rotation"])
    T[:3, 3] = [j["translation"][k] for k in "xyz"]
    return T
