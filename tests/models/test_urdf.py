"""The exported URDF read back by Pinocchio's own URDF parser gives the models' FK, A and G
to 1e-9 at random states, for the bench leg (chain engine) and BIP 2000 rooted at the pelvis
(tree engine); limits, friction and the armature comment carry the YAML's values."""
from __future__ import annotations

import math
import re

import numpy as np
import pinocchio as pin
import pytest
import yaml

from models import Robot
from models.tree.config import load_tree
from models.urdf import frame_link, rpy, to_urdf

from tests.assertions import close_within
from tests.models.chains import BIP_LEG
from tests.models.trees import BIP2000, bip2000, random_states

TOL = 1e-9


close = close_within(TOL)


def from_urdf(path, gravity):
    """Pinocchio model of the exported URDF, armature read back from its comments, and the
    map from its q indices to ours (by joint name)."""
    desc = load_tree(path)
    xml = to_urdf(desc)
    model = pin.buildModelFromXML(xml)
    names = [t.joint.name for t in desc.joints]
    perm = np.array([names.index(model.names[j]) for j in range(1, model.njoints)])
    armature = {name: float(a) for name, a in re.findall(
        r'<joint name="([^"]+)" type="(?:revolute|prismatic)">(?:(?!</joint>).)*?<!-- armature: (\S+) kg m\^2 -->',
        xml, flags=re.S)}
    assert sorted(armature) == sorted(names)
    model.armature = np.array([armature[names[k]] for k in perm])
    model.gravity = pin.Motion(np.asarray(gravity, dtype=float), np.zeros(3))
    return desc, model, perm


def test_limits_and_friction_read_back(tmp_path):
    """BIP 2000 with a joint-side armature on every joint (its own file keeps the rotor
    inertias in the transmission, so its armature is 0)."""
    doc = yaml.safe_load(BIP2000.read_text())
    for k, j in enumerate(doc["joints"]):
        j["armature"] = 0.3 + 0.05 * k
    path = tmp_path / "bip2000_armature.yaml"
    path.write_text(yaml.safe_dump(doc))
    desc, model, perm = from_urdf(path, (0, 0, -9.81))
    joints = [desc.joints[k].joint for k in perm]
    close(model.lowerPositionLimit, [j.position_limits[0] for j in joints])
    close(model.upperPositionLimit, [j.position_limits[1] for j in joints])
    close(model.velocityLimit, [j.velocity_limit for j in joints])
    close(model.effortLimit, [j.torque_limit for j in joints])
    close(model.damping, [j.viscous for j in joints])
    close(model.friction, [j.coulomb for j in joints])
    close(model.armature, [j.armature for j in joints])
    assert max(j.armature for j in joints) > 0 and max(j.coulomb for j in joints) > 0


def test_bench_leg_matches_chain_engine():
    robot = Robot.from_yaml(BIP_LEG)
    desc, model, p = from_urdf(BIP_LEG, robot.model.gravity)
    data = model.createData()
    tool = model.getFrameId("tool")
    rng = np.random.default_rng(11)
    for _ in range(50):
        q = rng.uniform(robot.model.qmin, robot.model.qmax)
        qp = q[p]
        pin.framesForwardKinematics(model, data, qp)
        close(robot.fk(q), data.oMf[tool].homogeneous)
        for i in range(1, robot.n + 1):
            close(robot.frame(q, i), data.oMf[model.getFrameId(desc.body_names[i], pin.FrameType.BODY)].homogeneous)
        A = pin.crba(model, data, qp)
        close(robot.inertia(q)[np.ix_(p, p)], np.triu(A) + np.triu(A, 1).T)
        close(robot.gravity(q)[p], pin.computeGeneralizedGravity(model, data, qp))
        close(robot.com(q), pin.centerOfMass(model, data, qp))


def test_bip2000_matches_tree_engine_at_pelvis():
    robot = bip2000()
    robot.set_root("pelvis")
    desc, model, p = from_urdf(BIP2000, robot.description.gravity)
    data = model.createData()
    for q, qd, _, g in random_states(robot, 50, seed=7):
        qp = q[p]
        model.gravity = pin.Motion(g, np.zeros(3))
        pin.framesForwardKinematics(model, data, qp)
        for f in desc.frames:
            link = frame_link(desc, f) or f.body
            close(robot.frame(q, f.name), data.oMf[model.getFrameId(link, pin.FrameType.BODY)].homogeneous)
        d = robot.update(q, qd, g)
        A = pin.crba(model, data, qp)
        close(d.A[np.ix_(p, p)], np.triu(A) + np.triu(A, 1).T)
        close(d.G[p], pin.computeGeneralizedGravity(model, data, qp))
        close(d.h[p], pin.nonLinearEffects(model, data, qp, qd[p]))


@pytest.mark.parametrize("angles", [(0.3, -1.1, 2.5), (0.2, math.pi / 2, -0.7), (-2.0, -math.pi / 2, 1.0),
                                    (math.pi, 0.0, -math.pi / 2)])
def test_rpy_round_trip(angles):
    """rpy() inverts RotZ(yaw) RotY(pitch) RotX(roll), at gimbal lock too."""
    R = pin.rpy.rpyToMatrix(*angles)
    close(pin.rpy.rpyToMatrix(*rpy(R)), R)
