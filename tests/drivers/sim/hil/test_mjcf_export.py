"""`bipd export mjcf`: BIP 2000 stands in MuJoCo for 2 s on its position actuators from the keyframe
``stance`` (pelvis height within a few mm, upright, both soles flat on the floor carrying its
weight); it weighs 105 kg on a free pelvis; its motors act through the transmission (tendon
coefficients J_p at the stance, the rotor inertia as armature: the joint-space mass matrix is
the tree engine's A + J_pᵀ J_m J_p); the capsules of models.geometry are there; a chain is fixed."""
from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from controller.cli import main
from drivers.sim.hil.mjcf_export import STANCE
from drivers.sim.hil.plant_biped import flexed_posture
from models.geometry import link_capsules
from models.transmission import transmission_jacobian
from models.tree.config import load_tree
from models.tree.robot import TreeRobot

from tests.paths import ROBOTS

BIP2000 = ROBOTS / "bip2000.yaml"
STAND_S = 2.0


def export(capsys, path, *options):
    assert main(["export", "mjcf", str(path), *options]) == 0
    return mujoco.MjModel.from_xml_string(capsys.readouterr().out)


def test_bip2000_stands_on_position_actuators(capsys):
    m = export(capsys, BIP2000, "--actuators", "position")
    desc = load_tree(BIP2000)
    assert m.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE and m.body(m.jnt_bodyid[0]).name == "pelvis"
    assert mujoco.mj_getTotalmass(m) == pytest.approx(105.0, abs=1e-3)
    assert m.nu == desc.n and all(m.actuator_trntype[i] == mujoco.mjtTrn.mjTRN_JOINT for i in range(m.nu))
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, m.key(STANCE).id)
    mujoco.mj_forward(m, d)
    soles = [m.body(f.frame).id for f in desc.feet]
    height0 = d.qpos[2]
    np.testing.assert_allclose(d.xpos[soles, 2], 0.0, atol=1e-5)
    load = np.zeros(2)
    for _ in range(round(STAND_S / m.opt.timestep)):
        mujoco.mj_step(m, d)
    for k, foot in enumerate(desc.feet):        # normal force of every sole/floor contact (contact frame x)
        sensor = m.sensor(foot.name)
        data = d.sensordata[sensor.adr[0]:sensor.adr[0] + sensor.dim[0]].reshape(-1, 13)
        load[k] = data[data[:, 0] > 0, 1].sum()
    tilt = math.degrees(math.acos(min(1.0, d.xmat[m.body("pelvis").id, 8])))
    assert abs(d.qpos[2] - height0) < 5e-3, f"pelvis moved {1e3 * (d.qpos[2] - height0):.2f} mm"
    assert tilt < 2.0
    np.testing.assert_allclose(d.xpos[soles, 2], 0.0, atol=1e-3)          # flat on the floor, not lifted
    np.testing.assert_allclose(np.array([d.xmat[s, 8] for s in soles]), 1.0, atol=1e-4)
    assert load.min() > 0.3 * load.sum()
    assert load.sum() == pytest.approx(105.0 * 9.81, rel=0.02)


def test_motors_act_through_the_transmission(capsys):
    """Tendon armature = the rotor inertias, a gear block's coefficient = its ratio; MuJoCo's
    joint-space mass matrix at the stance = A + J_pᵀ J_m J_p from the tree engine (6 written digits)."""
    m = export(capsys, BIP2000)
    desc = load_tree(BIP2000)
    tr = desc.transmission
    names = [t.joint.name for t in desc.joints]
    assert [m.actuator(i).name for i in range(m.nu)] == names
    assert all(m.actuator_trntype[i] == mujoco.mjtTrn.mjTRN_TENDON for i in range(m.nu))
    np.testing.assert_allclose(m.tendon_armature, tr.motors.rotor_inertia, rtol=1e-5)
    hip_yaw = m.tendon("l_hip_yaw")
    assert m.wrap_prm[m.tendon_adr[hip_yaw.id]] == pytest.approx(100.0)
    q0 = flexed_posture(desc)
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, m.key(STANCE).id)
    mujoco.mj_forward(m, d)
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    dof = np.array([m.jnt_dofadr[m.joint(n).id] for n in names])
    robot = TreeRobot(desc)
    robot.set_root("pelvis")
    jp = np.empty((desc.n, desc.n))
    assert transmission_jacobian(tr.params, q0, jp) == 0
    expected = robot.update(q0, np.zeros(desc.n)).A + jp.T @ np.diag(tr.motors.rotor_inertia) @ jp
    np.testing.assert_allclose(M[np.ix_(dof, dof)], expected, atol=2e-5 * np.abs(expected).max())


def test_geometry_and_fixed_chain(capsys):
    """The bench leg (no feet: fixed at its base) carries a capsule or sphere per shape of models.geometry."""
    m = export(capsys, ROBOTS / "bip_leg.yaml")
    desc = load_tree(ROBOTS / "bip_leg.yaml")
    shapes = {c.name for c in link_capsules(desc)}
    assert shapes and shapes == {m.geom(i).name for i in range(m.ngeom)}
    assert mujoco.mjtJoint.mjJNT_FREE not in set(m.jnt_type)
    caps = m.geom("knee_to_hip")
    assert m.geom_type[caps.id] == mujoco.mjtGeom.mjGEOM_CAPSULE
