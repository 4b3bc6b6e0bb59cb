"""The loop on the whole BIP 2000 (deploy/bip2000.yaml: a kinematic tree, 15 axes) in lock-step
on the simulated bus with the inertia plant: the models' feed-forward against an independent
TreeRobot, the support phase of a played file rooting the model (events, telemetry, no
allocation), and the configuration's refusals."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from controller.daemon.codes import Error, Event, State
from controller.daemon.config import load_daemon_config
from controller.daemon.loop.axes import feedforward
from controller.daemon.shm import H, Cmd, read_record
from controller.daemon.telemetry import RecordLayout
from models import ConfigError
from models.common.support import DOUBLE, LEFT, RIGHT
from models.tree.robot import TreeRobot

from tests.numpy_allocs import CountingHandler
from tests.controller.daemon.loop_harness import Harness
from tests.paths import DEPLOY, ROBOTS

CONFIG = DEPLOY / "bip2000.yaml"


def config_file(tmp_path: Path, **control) -> Path:
    """deploy/bip2000.yaml with some control keys changed, written to tmp_path."""
    doc = yaml.safe_load(CONFIG.read_text())
    doc["robot"] = str(ROBOTS / "bip2000.yaml")
    doc["control"].update(control)
    path = tmp_path / "bip2000.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def hung():
    h = Harness(config=load_daemon_config(CONFIG, backend="sim", lockstep=True))
    yield h
    h.close()


@pytest.fixture
def ground(tmp_path):
    h = Harness(config=load_daemon_config(config_file(tmp_path, support="ground"), backend="sim", lockstep=True))
    yield h
    h.close()


def enabled(h: Harness) -> None:
    assert h.command(Cmd.ENABLE)[0]
    h.run(500, until=lambda: h.state == State.HOLD)
    assert h.state == State.HOLD


@pytest.mark.slow
@pytest.mark.parametrize("root", ["pelvis", "left_sole", "right_sole"])
def test_feedforward_is_the_tree_models(hung, root):
    """G and A q̈ + h of the loop's cycle (Newton-Euler h) against TreeRobot.update (Christoffel C)."""
    loop, ref = hung.loop, TreeRobot.from_yaml(ROBOTS / "bip2000.yaml")
    r = loop.models.roots.index(root)
    loop._set_root(r)
    ref.set_root(root)
    m, rng = ref.model, np.random.default_rng(7)
    out = np.zeros(loop.n)
    for _ in range(5):
        q, qd, qdd = rng.uniform(m.qmin, m.qmax), rng.uniform(-1, 1, loop.n), rng.uniform(-3, 3, loop.n)
        loop.q[:], loop.qd[:] = q, qd
        loop._cycle_compute()
        d = ref.update(q, qd)
        np.testing.assert_allclose(loop.models.G, d.G, rtol=1e-9, atol=1e-9)
        feedforward(loop.models.A, loop.models.h, loop.models.G, qdd, True, out)
        np.testing.assert_allclose(out, d.A @ qdd + d.h, rtol=1e-9, atol=1e-9)


def test_a_tree_loop_refuses_what_it_has_not(hung):
    """No squat (the thesis squat names the bench leg's joints), no platform axes: not_supported."""
    enabled(hung)
    assert hung.command(Cmd.RUN_SQUAT) == (False, Error.NOT_SUPPORTED)
    assert hung.command(Cmd.PLATFORM, 0.1, 0.1, 1.0) == (False, Error.NOT_SUPPORTED)
    assert hung.state == State.HOLD


def play(h: Harness, phases: list[tuple[int, int]]) -> tuple[list[tuple[float, float]], list[float]]:
    """Play a constant posture with the support column ``phases`` ([(phase, samples), ...]);
    returns the SUPPORT events (phase, root) and the telemetry's support per cycle of the file."""
    support = np.concatenate([np.full(k, float(p)) for p, k in phases])
    n = support.size
    h.block.traj[:n] = h.loop.q_ref
    h.block.support[:n] = support
    h.block.header[H.TRAJ_LEN] = n
    h.events()
    assert h.command(Cmd.RUN_BUFFER) == (True, 0)
    layout, rec, seen = RecordLayout(h.loop.n), np.zeros(RecordLayout(h.loop.n).size), []

    def record() -> bool:
        assert read_record(h.block, int(h.block.header[H.RING_COUNT]) - 1, rec)
        if h.loop.gen is h.loop.playback:
            seen.append(rec[layout.slices["support"]][0])
        return h.state == State.HOLD
    h.run(n + 2000, heartbeat_every=50, until=record)
    assert h.state == State.HOLD
    events = [(a, b) for _, kind, a, b in h.events() if kind == Event.SUPPORT]
    return events, seen


WALK = [(DOUBLE, 100), (LEFT, 150), (DOUBLE, 50), (RIGHT, 150), (DOUBLE, 50), (LEFT, 100), (DOUBLE, 100)]


WALK_RIGHT_FIRST = [(DOUBLE, 100), (RIGHT, 150), (DOUBLE, 50), (LEFT, 150), (DOUBLE, 100)]


@pytest.mark.slow
def test_on_the_ground_the_stance_sole_roots_the_model(ground):
    enabled(ground)
    roots = ground.loop.models.roots
    left, right = roots.index("left_sole"), roots.index("right_sole")
    events, seen = play(ground, WALK)
    # double support keeps the last stance foot; the first double support is on the foot the first
    # single support stands on (left: the first step lifts the right foot)
    assert events == [(DOUBLE, left), (LEFT, left), (DOUBLE, left), (RIGHT, right), (DOUBLE, right),
                      (LEFT, left), (DOUBLE, left)]
    assert [p for k, p in enumerate(seen) if k == 0 or p != seen[k - 1]] == [p for p, _ in WALK]
    assert int(ground.loop.models.robot.data.root[0]) == left
    events, _ = play(ground, WALK_RIGHT_FIRST)             # from the left sole: starts on the right one
    assert events == [(DOUBLE, right), (RIGHT, right), (DOUBLE, right), (LEFT, left), (DOUBLE, left)]


@pytest.mark.slow
def test_hung_from_the_gantry_the_pelvis_stays_the_root(hung):
    enabled(hung)
    pelvis = hung.loop.models.roots.index("pelvis")
    events, seen = play(hung, WALK)
    assert events == [(p, pelvis) for p, _ in WALK]
    assert [p for k, p in enumerate(seen) if k == 0 or p != seen[k - 1]] == [p for p, _ in WALK]
    assert int(hung.loop.models.robot.data.root[0]) == pelvis


@pytest.mark.slow
def test_a_thousand_support_swaps_allocate_nothing(ground):
    enabled(ground)
    n = 1200
    h = ground
    h.block.traj[:n] = h.loop.q_ref
    h.block.support[:n] = np.arange(n) % 2                 # left, right, left, ...: a swap every cycle
    h.block.header[H.TRAJ_LEN] = n
    assert h.command(Cmd.RUN_BUFFER) == (True, 0)
    h.run(2000, heartbeat_every=50, until=lambda: h.loop.gen is h.loop.playback)
    h.run(10, heartbeat_every=1)
    h.events()
    roots = h.loop.models.roots
    sole = {LEFT: roots.index("left_sole"), RIGHT: roots.index("right_sole")}
    with CountingHandler() as counter:
        h.run(1010, heartbeat_every=1)              # one sample per cycle, up to a repeated one
    swaps = h.events()                              # the events ring holds 1024
    assert counter.count == 0 and len(swaps) >= 1000 and h.loop.gen is h.loop.playback
    assert all(kind == Event.SUPPORT and b == sole[int(a)] for _, kind, a, b in swaps)
    assert all(swaps[k][2] != swaps[k - 1][2] for k in range(1, len(swaps)))


def test_bip2000_config_loads():
    cfg = load_daemon_config(CONFIG)
    assert cfg.robot().n == 15 and len(cfg.control.joint_axes) == 15 and len(cfg.bus.axes) == 15
    assert cfg.control.joint_axes == cfg.robot().model.joint_names and cfg.control.platform_axes == ()
    assert len(cfg.bus.nodes) == 8 and cfg.control.support == "hung" and cfg.bus.plant == "biped"


@pytest.mark.parametrize("change, key, fragment", [
    ({"control": {"support": "floating"}}, "control.support", "expected one of ('hung', 'ground')"),
    ({"control": {"joint_axes": ["l_hip_yaw"] * 15}}, "control.joint_axes", "'l_hip_yaw' is listed twice"),
    ({"control": {"leg_axes": ["a"]}}, "control.leg_axes", "leg_axes was renamed: call the key joint_axes"),
    ({"control": {"platform_axes": ["x", "y"]}}, "control", "axis 'x' is not on the bus"),
    ({"bus": {"plant": "leg"}}, "bus.plant", "set bus.plant: biped"),
    ({"bus": {"plant": "mujocoo"}}, "bus.plant", "unknown plant 'mujocoo'"),
    ({"stabilizer": "robots/bip_leg_stabilizer.yaml"}, "stabilizer", "is a kinematic tree"),
])
def test_bad_variants_are_refused_naming_the_key(tmp_path, change, key, fragment):
    doc = yaml.safe_load(CONFIG.read_text())
    doc["robot"] = str(ROBOTS / "bip2000.yaml")
    for section, value in change.items():
        if isinstance(value, dict):
            doc[section].update(value)
        else:
            doc[section] = str(DEPLOY / value)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError) as e:
        load_daemon_config(path)
    assert e.value.key == key and fragment in str(e.value), str(e.value)
    assert str(e.value).startswith(f"{path}: {key}: ")


def test_joint_axes_must_name_every_joint(tmp_path):
    with pytest.raises(ConfigError, match="control.joint_axes: expected a list of 15 axis names"):
        load_daemon_config(config_file(tmp_path, joint_axes=["l_hip_yaw"]))


@pytest.mark.parametrize("roots, support, fragment", [
    ("[left_sole, right_sole]", "hung", "hung roots the model at the base 'pelvis'"),
    ("[pelvis]", "ground", "ground roots the model at the stance sole"),
])
def test_the_support_needs_its_roots(tmp_path, roots, support, fragment):
    text = (ROBOTS / "bip2000.yaml").read_text()
    assert text.count("roots: [pelvis, left_sole, right_sole]") == 1
    robot = tmp_path / "robot.yaml"
    robot.write_text(text.replace("roots: [pelvis, left_sole, right_sole]", f"roots: {roots}"))
    path = config_file(tmp_path, support=support)
    doc = yaml.safe_load(path.read_text())
    doc["robot"] = str(robot)
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError) as e:
        load_daemon_config(path)
    assert e.value.key == "control.support" and fragment in str(e.value), str(e.value)


@pytest.fixture
def planned_ground(tmp_path):
    """On the ground, the double support's split by the plan's ramp alone (``load_split: planned``): the
    feet never leave the floor in a constant posture, so the cells would contradict the plan."""
    h = Harness(config=load_daemon_config(config_file(tmp_path, support="ground", load_split="planned"),
                                          backend="sim", lockstep=True))
    yield h
    h.close()


@pytest.mark.slow
def test_on_the_ground_the_feedforward_hands_the_load_over_without_a_jump(planned_ground):
    """A constant posture played with WALK's support column: the two single supports'
    feed-forwards differ by the robot's weight moved from one leg to the other; in double support
    the feed-forward moves it over in steps (the ZMP split of docs/equations.md: the posture's ZMP stays
    midway, so the blend w = r + 4 r (1 − r)(α − r) moves faster than the ramp r near its ends), none a
    fifth of that weight, and neither the root switches nor the file's start (the robot stood on both
    feet) add a step of their own; the cycles allocate nothing."""
    ground = planned_ground
    enabled(ground)
    h, loop = ground, ground.loop
    support = np.concatenate([np.full(k, float(p)) for p, k in WALK])
    n = support.size
    h.block.traj[:n] = loop.q_ref
    h.block.support[:n] = support
    h.block.header[H.TRAJ_LEN] = n
    tau, phase, root = [], [], []

    def record() -> bool:
        tau.append(loop.tau_ff.copy())
        phase.append(float(loop.playback.phase))
        root.append(loop.model_root)
        return loop.state == State.HOLD
    h.run(1, heartbeat_every=1, until=record)               # standing on both feet before the file
    assert h.command(Cmd.RUN_BUFFER) == (True, 0)           # its first samples: the same
    h.run(n + 2100, heartbeat_every=50, until=record)
    tau, phase, root = np.array(tau), np.array(phase), np.array(root)
    soles = loop.models.roots.index("left_sole"), loop.models.roots.index("right_sole")
    assert set(root[phase == LEFT]) | set(root[phase == RIGHT]) <= set(soles)
    switches = np.flatnonzero(np.diff(root)) + 1
    assert len(switches) == 2                               # left -> right -> left
    on = {p: tau[np.flatnonzero(phase == p)[len(np.flatnonzero(phase == p)) // 2]] for p in (LEFT, RIGHT)}
    moved = np.abs(on[LEFT] - on[RIGHT]).max()
    assert moved > 50.0                                     # N·m: the weight changed legs
    step = np.abs(np.diff(tau, axis=0)).max(axis=1)
    ramp = moved / WALK[2][1]                               # the double support's share per cycle
    assert step.max() < 0.2 * moved                         # 17.1 N·m of 109, measured
    assert step[switches - 1].max() < 0.15 * ramp           # 0.25 N·m: the blend's last step, no switch's
    h.block.header[H.TRAJ_LEN] = n                          # again, counting the allocations
    assert h.command(Cmd.RUN_BUFFER) == (True, 0)
    h.run(2000, heartbeat_every=50, until=lambda: loop.gen is loop.playback)
    with CountingHandler() as counter:
        h.run(n - 20, heartbeat_every=1)
    assert counter.count == 0 and loop.gen is loop.playback


@pytest.mark.slow
def test_a_file_without_phases_keeps_the_split_it_finds(ground):
    """No support column (-1): the robot stood on both feet and the feed-forward keeps that split,
    at the file's start too."""
    enabled(ground)
    h, loop = ground, ground.loop
    n = 300
    h.block.traj[:n] = loop.q_ref
    h.block.support[:n] = -1.0
    h.block.header[H.TRAJ_LEN] = n
    before = loop.tau_ff.copy()
    assert h.command(Cmd.RUN_BUFFER) == (True, 0)
    h.run(n + 2100, heartbeat_every=50, until=lambda: loop.state == State.HOLD)
    assert loop.right_share == 0.5
    np.testing.assert_allclose(loop.tau_ff, before, atol=0.05)
