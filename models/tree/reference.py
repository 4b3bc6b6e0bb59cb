"""A kinematic tree built independently in Pinocchio, rooted where asked: the
cross-check of the tests and the reference of the benchmark. The re-rooting is
derived here with Pinocchio's own SE3 algebra (a joint crossed against the
description's direction gets the inverse placements and a -z axis), not from
:mod:`models.tree.model`. Needs the optional `pin` package."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from models.chain.reference import _rot, _trans
from models.tree.config import TreeDescription


@dataclass
class PinTree:
    model: pin.Model
    perm: np.ndarray            # Pinocchio's q index k is our joint perm[k]
    frames: dict[str, int]      # operational frames by name
    coms: dict[str, int]        # a frame at each body's CoG, by body name
    root_body: str


def _se3(T) -> pin.SE3:
    T = np.asarray(T, dtype=float)
    return pin.SE3(T[:3, :3].copy(), T[:3, 3].copy())


def build_tree(desc: TreeDescription, root: str, floating: bool = False) -> PinTree:
    """Pinocchio model of ``desc`` with its universe at ``root`` (a body or a frame),
    or, ``floating``, with ``root`` carried by a free flyer (JointModelFreeFlyer)
    whose frame is the root's."""
    names = desc.body_names
    frames = {f.name: f for f in desc.frames}
    if root in frames:
        rb, base = frames[root].body, _se3(frames[root].pose).inverse()
    else:
        rb, base = root, pin.SE3.Identity()
    model = pin.Model()
    top = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "root") if floating else 0
    where = {rb: (top, base)}             # body -> (Pinocchio joint, body frame in it)
    perm = []

    def grow(b: str) -> None:             # depth first: Pinocchio wants each subtree's
        jid_b, Pb = where[b]              # velocity indices contiguous
        for j, t in enumerate(desc.joints):
            if b not in (t.parent, t.child) or (t.child if t.parent == b else t.parent) in where:
                continue
            other = t.child if t.parent == b else t.parent
            m = t.joint.mdh
            pre = _rot("z", t.gamma) * _trans(0, 0, t.b) * _rot("x", m.alpha) * _trans(m.a, 0, 0) * _rot("z", m.theta)
            if t.placement is not None:
                pre = _se3(t.placement) * pre
            post = _trans(0, 0, m.d)
            forward = t.parent == b
            axis = np.array([0.0, 0.0, 1.0 if forward else -1.0])
            jm = (pin.JointModelPrismaticUnaligned(axis) if t.joint.type == "prismatic"
                  else pin.JointModelRevoluteUnaligned(axis))
            jid = model.addJoint(jid_b, jm, Pb * (pre if forward else post.inverse()), t.joint.name)
            where[other] = (jid, post if forward else pre.inverse())
            perm.append(j)
            grow(other)

    grow(rb)
    coms = {}
    for name in names:
        jid, P = where[name]
        body = desc.bodies[name]
        if jid:
            model.appendBodyToJoint(jid, pin.Inertia(body.mass, np.array(body.com), np.array(body.inertia)), P)
        coms[name] = model.addFrame(pin.Frame(f"com:{name}", jid, P * _trans(*body.com), pin.FrameType.OP_FRAME))
    fids = {}
    for f in desc.frames:
        jid, P = where[f.body]
        fids[f.name] = model.addFrame(pin.Frame(f.name, jid, P * _se3(f.pose), pin.FrameType.OP_FRAME))
    perm = np.array(perm)
    model.armature = np.array([0.0] * (model.nv - len(perm)) + [desc.joints[j].joint.armature for j in perm])
    model.gravity = pin.Motion(np.array(desc.gravity), np.zeros(3))
    return PinTree(model, perm, fids, coms, rb)
