"""The MJCF generator: MuJoCo's leg equals the robot YAML."""
from __future__ import annotations

import mujoco
import numpy as np
import pytest

from drivers.sim.hil.mjcf import LEG_MOTORS, PLATFORM_DEFAULTS, TENDON_JOINTS, MjcfError, build_mjcf
from models import Robot
from tests.paths import ROBOTS



def _model(robot, **kw) -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_string(build_mjcf(robot, robot.description.foot, **kw))


def test_masses_cogs_and_inertias_equal_the_yaml(robot):
    m = _model(robot)
    for i, name in enumerate(robot.joint_names):
        b = m.body(name).id
        assert m.body_mass[b] == pytest.approx(robot.model.mass[i], rel=1e-14)
        np.testing.assert_allclose(m.body_ipos[b], robot.model.com[i], atol=1e-14)
        inertia = robot.model.inertia[i]
        np.testing.assert_allclose(np.sort(m.body_inertia[b]), np.linalg.eigvalsh(inertia), rtol=1e-10)
        R = np.empty(9)
        mujoco.mju_quat2Mat(R, m.body_iquat[b])
        R = R.reshape(3, 3)
        np.testing.assert_allclose(R @ np.diag(m.body_inertia[b]) @ R.T, inertia, atol=1e-12)
        lo, hi = m.jnt_range[m.joint(name).id]
        assert (lo, hi) == (robot.model.qmin[i], robot.model.qmax[i])
        assert m.jnt_limited[m.joint(name).id]


def test_foot_platform_and_motors(robot):
    """Figure 20 foot box, platform hinges with ratio² rotor inertia, tendon motors (eq. 30-32)."""
    foot = robot.description.foot
    ratio = PLATFORM_DEFAULTS["ratio"]
    m = _model(robot, platform={"motor_inertia": (3e-4, 5e-4)})
    np.testing.assert_allclose(m.geom_size[m.geom("foot").id], [foot["Delta"] / 2, foot["a"],
                                                                (foot["b"] + foot["c"]) / 2])
    assert m.body_mass[m.body("foot").id] == PLATFORM_DEFAULTS["foot_mass"]
    np.testing.assert_allclose(m.dof_armature[[m.joint("platform_alpha").id, m.joint("platform_beta").id]],
                               [ratio ** 2 * 3e-4, ratio ** 2 * 5e-4])
    tr = robot.transmission
    np.testing.assert_allclose(m.tendon_armature, tr.motors.rotor_inertia)
    np.testing.assert_allclose(m.tendon_damping, tr.motors.viscous)
    np.testing.assert_allclose(m.tendon_frictionloss, tr.motors.coulomb)
    assert [m.actuator(i).name for i in range(m.nu)] == [*LEG_MOTORS, "platform_alpha", "platform_beta"]
    np.testing.assert_allclose(m.opt.gravity, [0, 0, -9.81])


def test_bad_parameters_are_named(robot):
    foot = robot.description.foot
    with pytest.raises(MjcfError, match="platform.pitch is not a known key"):
        build_mjcf(robot, foot, {"pitch": 1.0})
    with pytest.raises(MjcfError, match="platform.foot_mass must be finite and > 0"):
        build_mjcf(robot, foot, {"foot_mass": 0.0})
    with pytest.raises(MjcfError, match="needs a 4-joint robot with foot"):
        build_mjcf(robot, None)


def _clamped(robot):
    m = mujoco.MjModel.from_xml_string(build_mjcf(robot, robot.description.foot, clamped=True))
    return m, mujoco.MjData(m)


def _set_tendons(m, jp) -> None:
    """Tendon coefficients = rows of J_p (the plant does this before every step)."""
    for i, joints in enumerate(TENDON_JOINTS):
        for k, j in enumerate(joints):
            m.wrap_prm[m.tendon_adr[i] + k] = jp[i, j]


def _random_states(robot, n: int):
    rng = np.random.default_rng(6)
    lo, hi = robot.model.qmin, robot.model.qmax
    for _ in range(n):
        yield (lo + (hi - lo) * rng.uniform(0.02, 0.98, robot.n), rng.normal(0, 1.5, robot.n),
               rng.normal(0, 5.0, robot.n))


def test_clamped_inverse_dynamics_equals_models_rnea(robot):
    """mj_inverse of the welded leg, motors removed, equals models' Newton-Euler (Lammari 2012, eq. IV.7-IV.10)
    at 40 random states: an independent cross-check of the MDH frames, gravity and inertias."""
    m, d = _clamped(robot)
    m.tendon_armature[:] = 0.0
    m.tendon_damping[:] = 0.0
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS
    for q, qd, qdd in _random_states(robot, 40):
        d.qpos[:], d.qvel[:], d.qacc[:] = q, qd, qdd
        mujoco.mj_inverse(m, d)
        expected = robot.rnea(q, qd, qdd)
        np.testing.assert_allclose(d.qfrc_inverse, expected, rtol=1e-8, atol=1e-8 * np.abs(expected).max())


def test_clamped_inverse_dynamics_with_the_motors(robot):
    """With the tendons at J_p(q): + J_pᵀ J_m J_p q̈ (reflected rotor inertia) + J_pᵀ F_v J_p q̇."""
    m, d = _clamped(robot)
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS
    tr = robot.transmission
    for q, qd, qdd in _random_states(robot, 30):
        jp = tr.jacobian(q)
        _set_tendons(m, jp)
        d.qpos[:], d.qvel[:], d.qacc[:] = q, qd, qdd
        mujoco.mj_inverse(m, d)
        expected = (robot.rnea(q, qd, qdd) + tr.rotor_inertia(q) @ qdd
                    + jp.T @ (np.asarray(tr.motors.viscous) * (jp @ qd)))
        np.testing.assert_allclose(d.qfrc_inverse, expected, rtol=1e-8, atol=1e-8 * np.abs(expected).max())


def test_clamped_model_of_an_arm_without_foot():
    """Any MDH chain (Lammari 2012's 5-joint arm, gravity along -z0) clamps; no transmission, no foot."""
    arm = Robot.from_yaml(ROBOTS / "lammari_arm5.yaml")
    m = mujoco.MjModel.from_xml_string(build_mjcf(arm, None, clamped=True))
    d = mujoco.MjData(m)
    for q, qd, qdd in _random_states(arm, 5):
        d.qpos[:], d.qvel[:], d.qacc[:] = q, qd, qdd
        mujoco.mj_inverse(m, d)
        expected = arm.rnea(q, qd, qdd)
        np.testing.assert_allclose(d.qfrc_inverse, expected, rtol=1e-8, atol=1e-8 * np.abs(expected).max())


def test_fixed_base_mjcf_of_bip2000_matches_the_tree_engine():
    """The fixed-base model every MJCF starts from (spec_from_description: what `bipd export mjcf`
    writes for a robot without feet): MuJoCo's mass matrix (armature included) and gravity torques
    of its MJCF text equal the tree engine's at the pelvis, to its 6 written digits."""
    from models.tree.config import load_tree
    from models.tree.robot import TreeRobot
    from drivers.sim.hil.mjcf import spec_from_description

    desc = load_tree(ROBOTS / "bip2000.yaml")
    robot = TreeRobot(desc)
    robot.set_root("pelvis")
    m = mujoco.MjModel.from_xml_string(spec_from_description(desc).to_xml())
    d = mujoco.MjData(m)
    adr = np.array([m.jnt_qposadr[m.joint(t.joint.name).id] for t in desc.joints])
    rng = np.random.default_rng(3)
    for _ in range(10):
        q = rng.uniform(robot.model.qmin, robot.model.qmax)
        d.qpos[adr] = q
        d.qvel[:] = 0.0
        mujoco.mj_forward(m, d)
        M = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, M)
        ours = robot.update(q, np.zeros(robot.n))
        np.testing.assert_allclose(M[np.ix_(adr, adr)], ours.A, atol=2e-5 * np.abs(ours.A).max())
        np.testing.assert_allclose(d.qfrc_bias[adr], ours.G, atol=2e-5 * np.abs(ours.G).max())


def test_export_mjcf_of_a_line_mass_is_one_line_naming_the_body(capsys):
    """Liégeois & Aldon's link 1 has no inertia about its own axis: MuJoCo cannot hold it."""
    from controller.cli import main

    path = ROBOTS / "liegeois_aldon_6dof.yaml"
    assert main(["export", "mjcf", str(path)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1
    assert out.err.startswith(f"bipd: error: {path}: joints[0].body.inertia: MuJoCo needs every principal moment")
