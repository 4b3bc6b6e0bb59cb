"""Shapes a viewer or a simulator draws for a robot description, derived from the description alone.

- Links: one capsule (radius :data:`LINK_RADIUS`) from each body's origin to each of its tips: its
  child joints' origins (the fixed part of the tree transform, Khalil & Dombre's
  RotZ(γ) TransZ(b) RotX(α) TransX(a) RotZ(θ) TransZ(d) at q = 0) and its operational frames' origins
  (a chain's ``tool``, a trunk's frame), load cells excepted. A sole frame's tip is raised along its
  normal by :data:`SOLE_THICKNESS` + :data:`LINK_RADIUS`, so the capsule rests on the sole box's top.
  A tip within :data:`MIN_LENGTH` of the origin adds nothing; a body without a tip is a sphere at its CoG.
- Soles: a box :data:`SOLE_THICKNESS` thick over the bounding rectangle of the foot's outline (the
  robot YAML's ``feet.*.outline``, sole frame x, y), its bottom face on the sole frame's z = 0.
- Materials: one per sub-tree of the YAML's ``subtrees`` (a body outside them takes the base's),
  coloured from :data:`PALETTE` in that order.

Every pose is in its body's frame (docs/conventions.md).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.chain.model import mdh_matrix
from models.tree.config import Foot, TreeDescription, TreeJoint

LINK_RADIUS = 0.03       # m
SOLE_THICKNESS = 0.02    # m, the foot's contact box above the sole face
MIN_LENGTH = 1e-6        # m, a tip closer than this to its body's origin draws no capsule
PALETTE = ((0.55, 0.55, 0.6, 1.0), (0.2, 0.45, 0.85, 1.0), (0.85, 0.3, 0.2, 1.0), (0.3, 0.7, 0.35, 1.0),
           (0.85, 0.65, 0.15, 1.0), (0.6, 0.35, 0.75, 1.0))
"""rgba: the base's material first, then the sub-trees' (cycled past the end)."""


@dataclass(frozen=True)
class Capsule:
    """A capsule of ``radius`` from ``start`` to ``end`` (body frame, m); a sphere when they coincide."""
    name: str
    body: str
    start: np.ndarray
    end: np.ndarray
    radius: float


@dataclass(frozen=True)
class Box:
    """A box of half-sizes ``half`` (m) whose centre and axes are ``pose`` (4×4, body frame)."""
    name: str
    body: str
    pose: np.ndarray
    half: np.ndarray


def joint_origin(t: TreeJoint) -> np.ndarray:
    """Pose of joint j's frame in its parent body's frame at q = 0 (4x4): its placement P (identity
    when absent), then RotZ(γ) TransZ(b) RotX(α) TransX(a) RotZ(θ) TransZ(d)."""
    m = t.joint.mdh
    pre = mdh_matrix(0.0, 0.0, t.gamma, t.b)          # RotZ(γ) TransZ(b)
    if t.placement is not None:
        pre = np.array(t.placement) @ pre
    return pre @ mdh_matrix(m.alpha, m.a, m.theta, m.d)


def sole_box(desc: TreeDescription, foot: Foot) -> Box:
    """The contact box of ``foot`` (module docstring), on the body carrying its sole frame."""
    frame = next(f for f in desc.frames if f.name == foot.frame)
    outline = np.array(foot.outline)
    (x0, y0), (x1, y1) = outline.min(axis=0), outline.max(axis=0)
    centre = np.eye(4)
    centre[:3, 3] = 0.5 * (x0 + x1), 0.5 * (y0 + y1), 0.5 * SOLE_THICKNESS
    half = np.array([0.5 * (x1 - x0), 0.5 * (y1 - y0), 0.5 * SOLE_THICKNESS])
    return Box(foot.name, frame.body, np.array(frame.pose) @ centre, half)


def _tips(desc: TreeDescription, body: str) -> list[tuple[str, np.ndarray]]:
    tips = [(t.child, joint_origin(t)[:3, 3]) for t in desc.joints if t.parent == body]
    soles = {foot.frame for foot in desc.feet}
    cells = {s for foot in desc.feet for s in foot.sensors}
    for f in desc.frames:
        if f.body != body or f.name in cells:
            continue
        pose = np.array(f.pose)
        lift = SOLE_THICKNESS + LINK_RADIUS if f.name in soles else 0.0
        tips.append((f.name, pose[:3, 3] + lift * pose[:3, 2]))
    return [(name, p) for name, p in tips if np.linalg.norm(p) > MIN_LENGTH]


def link_capsules(desc: TreeDescription) -> list[Capsule]:
    """Every body's capsules (module docstring), in the description's body order."""
    out = []
    for body in desc.body_names:
        tips = _tips(desc, body)
        if not tips:
            com = np.array(desc.bodies[body].com, dtype=np.float64)
            out.append(Capsule(body, body, com, com, LINK_RADIUS))
        out += [Capsule(f"{body}_to_{name}", body, np.zeros(3), p, LINK_RADIUS) for name, p in tips]
    return out


def materials(desc: TreeDescription) -> dict[str, tuple[str, tuple[float, float, float, float]]]:
    """Body name -> (material name, rgba): its sub-tree's, or the base's (module docstring)."""
    out = {body: (desc.base, PALETTE[0]) for body in desc.body_names}
    for k, (name, bodies) in enumerate(desc.subtrees.items()):
        colour = PALETTE[1 + k % (len(PALETTE) - 1)]
        out.update({body: (name, colour) for body in bodies})
    return out


def rotation_from_z(d: np.ndarray) -> np.ndarray:
    """A rotation taking the z axis to the direction of ``d`` (a cylinder's axis; Rodrigues' formula)."""
    z = d / np.linalg.norm(d)
    c = z[2]
    if c < -1.0 + 1e-12:                      # opposite: half a turn about x
        return np.diag([1.0, -1.0, -1.0])
    v = np.array([-z[1], z[0], 0.0])          # z × d
    K = np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])
    return np.eye(3) + K + K @ K / (1.0 + c)
