"""The same MDH chain built independently in Pinocchio: the cross-check of the
tests and the reference of the benchmark. Needs the optional `pin` package
(``pip install bipd[test]``)."""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from models.chain.config import RobotDescription


def _rot(axis: str, angle: float) -> pin.SE3:
    return pin.SE3(pin.utils.rotate(axis, angle), np.zeros(3))


def _trans(x: float, y: float, z: float) -> pin.SE3:
    return pin.SE3(np.eye(3), np.array([x, y, z]))


def mdh_placement(alpha: float, a: float, theta: float, d: float) -> pin.SE3:
    """RotX(alpha) TransX(a) RotZ(theta) TransZ(d): thesis eq. 1, built from
    Pinocchio's own primitives (not from our eq. 4 closed form)."""
    return _rot("x", alpha) * _trans(a, 0, 0) * _rot("z", theta) * _trans(0, 0, d)


def build(desc: RobotDescription) -> tuple[pin.Model, int]:
    """Pinocchio model of the chain and the id of its tool frame."""
    model = pin.Model()
    model.gravity = pin.Motion(np.array(desc.gravity), np.zeros(3))
    parent = 0
    for j in desc.joints:
        jm = pin.JointModelPZ() if j.type == "prismatic" else pin.JointModelRZ()
        m = j.mdh
        jid = model.addJoint(parent, jm, mdh_placement(m.alpha, m.a, m.theta, m.d), j.name)
        model.appendBodyToJoint(jid, pin.Inertia(j.body.mass, np.array(j.body.com),
                                                 np.array(j.body.inertia)), pin.SE3.Identity())
        parent = jid
    t = desc.tool
    fid = model.addFrame(pin.Frame("tool", parent, mdh_placement(t.alpha, t.a, t.theta, t.d),
                                   pin.FrameType.OP_FRAME))
    model.armature = np.array([j.armature for j in desc.joints])
    return model, fid
