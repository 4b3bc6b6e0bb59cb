"""Motions that would trip the drives are refused before they move: a trajectory file's acceleration
and the torque its inverse dynamics asks (controller.daemon.io.playback, controller.daemon.io.effort),
named by joint, row and limit."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from controller.daemon.codes import Error, State
from controller.daemon.config import load_daemon_config
from controller.daemon.io.protocol import ErrorReply, Request, validate
from controller.daemon.run import io_context
from controller.daemon.io.effort import TrajectoryTorques
from controller.daemon.io.playback import TrajectoryFileError, load_trajectory
from controller.daemon.loop.references.playback import playback_sample
from models.chain.robot import Robot

from tests.controller.conftest import ROBOT
from tests.controller.daemon.io.test_io_server import call_error, to_hold
from tests.paths import DEPLOY

HEADER = "t,ankle_lateral,ankle_sagittal,knee,hip"
STAND = (0.0, 0.25, -0.6, 0.3)
PERIOD = 0.002


def _write(path, t, knee):
    rows = [f"{tt:.6f},{STAND[0]},{STAND[1]},{k:.9f},{STAND[3]}" for tt, k in zip(t, knee)]
    path.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    return path


def _triangle(path):
    """The knee between -0.3 and -0.9 rad at 2.4 rad/s (its vmax is 2.5): a velocity reversal at each corner."""
    t = np.arange(9) * 0.25
    return _write(path, t, np.where(np.arange(9) % 2 == 0, -0.3, -0.9))


def _sine(path):
    """The knee swinging 0.05 rad at 40 rad/s: 2 rad/s and 80 rad/s² (within vmax and amax), knots every period."""
    t = np.arange(1001) * PERIOD
    return _write(path, t, -0.6 + 0.05 * np.sin(40.0 * t))


@pytest.fixture(scope="module")
def leg():
    robot = Robot.from_yaml(ROBOT)
    m = robot.model
    return robot, dict(joint_names=m.joint_names, qmin=m.qmin, qmax=m.qmax, vmax=m.vmax, period=PERIOD)


def test_a_triangle_wave_within_vmax_is_refused_at_its_corner(leg, tmp_path):
    robot, lim = leg
    path = _triangle(tmp_path / "tri.csv")
    load_trajectory(path, **lim)                                   # within position and speed
    amax = np.array([j.acceleration_limit for j in robot.description.joints])
    with pytest.raises(TrajectoryFileError) as e:
        load_trajectory(path, **lim, amax=amax)
    msg = str(e.value)
    assert "'knee'" in msg and "line 3 (t = 0.25 s)" in msg and "acceleration limit 125 rad/s²" in msg


def test_a_motion_within_speed_and_acceleration_but_beyond_the_torque_is_refused(leg, tmp_path):
    robot, lim = leg
    path = _sine(tmp_path / "sine.csv")
    amax = np.array([j.acceleration_limit for j in robot.description.joints])
    load_trajectory(path, **lim, amax=amax)
    with pytest.raises(TrajectoryFileError) as e:
        load_trajectory(path, **lim, amax=amax, torques=TrajectoryTorques(robot))
    assert "'ankle_sagittal'" in str(e.value) and "torque limit 250 N·m" in str(e.value)
    quiet = _write(tmp_path / "slow.csv", np.arange(1001) * PERIOD, -0.6 + 0.02 * np.sin(20.0 * np.arange(1001) * PERIOD))
    load_trajectory(quiet, **lim, amax=amax, torques=TrajectoryTorques(robot))     # the same swing, gently


def test_the_torques_are_the_models_inverse_dynamics_with_gravity(leg, tmp_path):
    """At sample k, τ = rnea(q, q̇, q̈) (A q̈ + C q̇ + G + joint friction) + the rotors and motor friction:
    at rest, exactly the gravity torque; in motion, rnea's on the joints whose motors stand still, and on
    the knee more, its rotor's J_pᵀ J_m J_p q̈ pushing with the acceleration."""
    robot, lim = leg
    qs = load_trajectory(_sine(tmp_path / "sine.csv"), **lim)
    tau, bad = TrajectoryTorques(robot)(qs, None, PERIOD)
    assert bad == -1
    np.testing.assert_allclose(tau[0], robot.gravity(qs[0]), rtol=1e-9, atol=1e-9)
    q, qd, qdd = np.zeros(4), np.zeros(4), np.zeros(4)
    playback_sample(qs, 400, len(qs) - 1, PERIOD, q, qd, qdd)
    rigid = robot.rnea(q, qd, qdd)
    assert abs(qdd[2]) > 10.0
    np.testing.assert_allclose(tau[400, [0, 1, 3]], rigid[[0, 1, 3]], rtol=1e-9, atol=1e-9)
    assert (tau[400, 2] - rigid[2]) * qdd[2] > 0.0


def test_the_server_refuses_the_file_before_the_loop_sees_it(rig_factory, leg, tmp_path):
    robot, _ = leg
    rig = rig_factory(server_kw={"trajectory_dir": tmp_path}, ctx_kw={"torques": TrajectoryTorques(robot)})
    to_hold(rig)
    for make, what in ((_triangle, "acceleration limit"), (_sine, "torque limit")):
        e = call_error(rig.client, "run", trajectory=str(make(tmp_path / f"{make.__name__}.csv")))
        assert e.code == "bad_file" and what in e.message
    assert all(c[1].name != "RUN_BUFFER" for c in rig.loop.commands())


# ------------------------------------------------------------------ the platform's hinges and the rig's actuators

def _req(cmd: str, **args) -> bytes:
    return json.dumps({"id": 1, "cmd": cmd, "args": args}).encode()


def _holding(config: str):
    """The I/O side's context of a shipped daemon config, in HOLD; and its robot."""
    cfg = load_daemon_config(DEPLOY / config)
    robot = cfg.robot()
    ctx = io_context(cfg, robot)
    ctx.state = State.HOLD
    return ctx, robot


@pytest.fixture(scope="module")
def bench():
    return _holding("bipd.yaml")[0]


@pytest.fixture(scope="module")
def on_rig():
    return _holding("bipd_rig.yaml")[0]


def test_the_drives_declare_the_hinges_and_actuators_limits(bench, on_rig):
    """1.5 x speed_limit 600 motor rad/s, peak torque 40 A x 0.1 N m/A on 2e-4 kg m² (1e-4 on the rig) through
    the hinges' ratio 50 and the rig's 10 mm screw (2π/0.01 rad/m)."""
    assert (bench.platform_vmax, bench.platform_amax) == pytest.approx((18.0, 400.0))
    assert (on_rig.rig_vmax, on_rig.rig_amax) == pytest.approx((900 * 0.01 / (2 * np.pi), 4e4 * 0.01 / (2 * np.pi)))


@pytest.mark.parametrize("alpha, seconds, what", [(0.1, 0.01, "18.8 rad/s, above the 18 rad/s its drives can follow (speed)"),
                                                  (0.1, 0.03, "642 rad/s², above the 400 rad/s² its drives can follow")])
def test_a_platform_tilt_too_fast_for_its_hinges_is_refused(bench, alpha, seconds, what):
    bench.platform = np.zeros(2)
    r = validate(_req("platform", alpha=alpha, beta=0.0, duration=seconds), bench)
    assert isinstance(r, ErrorReply) and r.code == Error.OUT_OF_RANGE
    assert "alpha hinge" in r.message and what in r.message
    assert isinstance(validate(_req("platform", alpha=alpha, beta=0.0, duration=7.0), bench), Request)


def test_an_unknown_platform_start_is_taken_at_the_worst(bench):
    """Without telemetry the hinge may stand at the far limit: the move is |alpha| + limit long."""
    bench.platform = None
    assert isinstance(validate(_req("platform", alpha=0.1, beta=0.0, duration=0.05), bench), ErrorReply)
    bench.platform = np.array([0.1, 0.0])
    assert isinstance(validate(_req("platform", alpha=0.1, beta=0.0, duration=0.05), bench), Request)


@pytest.mark.parametrize("spec, what", [("tilt:duration=0.01", "actuator speed"),
                                        ("sinusoid:frequency=1000", "actuator acceleration"),
                                        ("sinusoid:amplitude=0.001,frequency=40", "actuator acceleration")])
def test_a_rig_motion_too_fast_for_its_actuators_is_refused(on_rig, spec, what):
    r = validate(_req("rig_motion", motion=spec), on_rig)
    assert isinstance(r, ErrorReply) and r.code == Error.OUT_OF_RANGE and what in r.message and "leg " in r.message


@pytest.mark.parametrize("spec", ["tilt", "sinusoid", "heave", "step", "ship_deck:duration=20", "step:axis=y,accel=6"])
def test_the_shipped_rig_motions_still_pass(on_rig, spec):
    assert isinstance(validate(_req("rig_motion", motion=spec), on_rig), Request)


# ------------------------------------------------------------------ the whole-robot stabilizer's start posture

@pytest.fixture(scope="module")
def standing():
    from models.gait.plan import GaitParams
    from models.gait.wholebody import flexed_posture

    ctx, robot = _holding("bip2000_platform.yaml")
    return ctx, flexed_posture(robot, GaitParams())


def test_the_stabilizer_starts_from_the_stance_and_refuses_a_rolled_trunk(standing):
    """The trunk rolled −0.33 rad from the stance puts its CoG outside its box over the pelvis: the
    stabilizer would start against a saturated wall (and fault); from the stance it starts."""
    ctx, stance = standing
    ctx.q = stance.copy()
    assert isinstance(validate(_req("stabilizer", enable=True), ctx), Request)
    ctx.q[ctx.joint_names.index("trunk_roll")] = -0.33
    r = validate(_req("stabilizer", enable=True), ctx)
    assert isinstance(r, ErrorReply) and r.code == Error.OUT_OF_RANGE
    assert r.message.startswith("start posture: the trunk's CoG is") and "outside its box over the pelvis" in r.message
    assert r.message.endswith("move to the stance first.")
    assert isinstance(validate(_req("stabilizer", enable=False), ctx), Request)     # stopping is never refused
