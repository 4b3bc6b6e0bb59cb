"""A serial chain of a kinematic tree as an MDH chain description, for the generator.

The composite models (Gastebois 2017 ch. 3, eq. 92-93; docs/composite_models.md) use
each chain hanging from the tree's base body as its own robot, fixed at the base body
and traversed away from it. A tree joint is T = RotZ(gamma) TransZ(b) RotX(alpha)
TransX(a) RotZ(theta + q) TransZ(d) (Khalil & Dombre, tree structures); a serial MDH
row lacks the first two factors. They are moved out of the row:

* the first joint's RotZ(gamma) TransZ(b) is the chain's base frame in the base
  body's frame (:func:`chain_base`): A(q) does not depend on where a fixed base is,
  and gravity is carried into that frame at run time (g_c = RotZ(gamma)^T g);
* a later joint's RotZ(gamma) TransZ(b) commutes with the previous row's
  RotZ(theta + q) TransZ(d), so it joins them (theta += gamma, d += b), and the
  previous body, now described in that turned frame, has its CoG and inertia
  rewritten there: c' = RotZ(gamma)^T c - b z, I' = RotZ(gamma)^T I RotZ(gamma).

Rotor inertias are left out (armature 0): the composite adds them once, on the whole
robot's diagonal.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from models.chain.config import MDH, Body, RobotDescription
from models.common.errors import ConfigError
from models.tree.config import TreeDescription


def _rot_z(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def chain_joints(tree: TreeDescription, first: str) -> list[int]:
    """Indices of the serial chain that starts at joint ``first`` on the base body."""
    names = [j.joint.name for j in tree.joints]
    if first not in names or tree.joints[names.index(first)].parent != tree.base:
        raise ConfigError(tree.source, "joints", f"{first!r} is not a joint on the base body {tree.base!r}")
    out = [names.index(first)]
    while True:
        nxt = [k for k, j in enumerate(tree.joints) if j.parent == tree.joints[out[-1]].child]
        if not nxt:
            return out
        if len(nxt) > 1:
            raise ConfigError(tree.source, "joints", f"body {tree.joints[out[-1]].child!r} carries "
                              f"two joints; the chain from {first!r} is not serial")
        out.append(nxt[0])


def chain_base(tree: TreeDescription, first: str) -> np.ndarray:
    """Rotation of the chain's base frame in the base body's frame: RotZ(gamma) of
    its first joint."""
    return _rot_z(tree.joints[chain_joints(tree, first)[0]].gamma)


def chain_description(tree: TreeDescription, first: str) -> RobotDescription:
    """The chain from joint ``first`` (on the base body) as a serial MDH robot fixed
    at the base body (module docstring), gravity in its base frame."""
    idx = chain_joints(tree, first)
    joints = []
    for u, k in enumerate(idx):
        tj = tree.joints[k]
        m, body = tj.joint.mdh, tj.joint.body
        if u + 1 < len(idx):
            nxt = tree.joints[idx[u + 1]]
            R = _rot_z(nxt.gamma)
            m = MDH(m.alpha, m.a, m.theta + nxt.gamma, m.d + nxt.b)
            com = R.T @ np.array(body.com) - np.array([0.0, 0.0, nxt.b])
            inertia = R.T @ np.array(body.inertia) @ R
            body = Body(body.mass, tuple(float(x) for x in com),
                        tuple(tuple(float(x) for x in row) for row in inertia))
        joints.append(dataclasses.replace(tj.joint, mdh=m, body=body, armature=0.0))
    g = chain_base(tree, first).T @ np.array(tree.gravity)
    return RobotDescription(f"{tree.name}_{first}", tree.source, tuple(float(x) for x in g), tuple(joints),
                            MDH(0.0, 0.0, 0.0, 0.0))


def base_chains(tree: TreeDescription) -> list[str]:
    """First joints of the chains on the base body, in the description's order (the
    order of :class:`models.composite.models.CompositePlan`)."""
    return [j.joint.name for j in tree.joints if j.parent == tree.base]


def composite_source(shown: str, tree: TreeDescription, stem: str) -> str:
    """The module coupling a tree's generated chain modules (``{stem}_{first joint}``)
    compositely: models.composite.generated's steps with direct calls of each chain's
    kernels (which Numba compiles once and caches)."""
    firsts = base_chains(tree)
    mods = [f"{stem}_{f}" for f in firsts]
    rebuild = f"python -m models.codegen {shown} --composite --out models/generated/{stem}_composite.py"
    calls = "    c = np.int64(0)          # a typed int, not a literal: one compile for every chain\n" + (
        "    c += 1\n".join(f"    if chain_inputs(tbuf, pbuf, dbuf, c, base, q, g, qc, gc):\n"
                            f"        {m}.inertia(qc, Ac)\n"
                            f"        {m}.gravity(qc, gc, Gc)\n"
                            f"        chain_results(tbuf, pbuf, dbuf, c, Ac, Gc)\n" for m in mods))
    return (f'"""Generated chain models of {tree.name} coupled compositely, GENERATED: do not edit.\n\n'
            f"Rebuild with ``{rebuild}``; each chain module with\n"
            f"``python -m models.codegen {shown} --chain FIRST_JOINT --out models/generated/{stem}_FIRST_JOINT.py``\n"
            "(tests/models/test_generated.py fails when a file is stale).\n"
            '"""\n'
            "import numpy as np\n"
            "from numba import njit\n\n"
            "from models.composite.generated import chain_inputs, chain_results, generated_begin, generated_end\n"
            f"from . import {', '.join(mods)}\n\n"
            f"SOURCE = {shown!r}\n"
            f"CHAINS = {tuple(firsts)!r}\n\n\n"
            "@njit(cache=True)\n"
            "def update(tbuf, pbuf, dbuf, base, qc, Ac, Gc, gc, q, qd, g):\n"
            '    """The composite models with A_c and G_c of each hanging chain from its\n'
            '    generated kernels (models.composite.generated); allocation-free."""\n'
            "    generated_begin(tbuf, pbuf, dbuf, q, qd, g)\n"
            f"{calls}"
            "    generated_end(tbuf, pbuf, dbuf, qd, g)\n")
