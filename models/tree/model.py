"""Model / Data of a kinematic tree that can be rooted at several places.

As in :mod:`models.chain.model`, :class:`TreeModel` packs every parameter in ONE flat
float64 buffer and :class:`TreeData` every workspace and result in another; the
kernels of :mod:`models.tree.dynamics` read named views without allocating.
Each layout is declared once, as a field list (:data:`MODEL`, :data:`DATA`); the
views, sizes and names are derived from it (:mod:`models.common.layout`).

Bodies: 0 is the description's base, j + 1 the body joint j carries. A rooting
(Khalil & Dombre, tree structures) fixes one body and a base frame on it; the
joints are then traversed away from that body. Joint j of rooting r links the
body ``pred[r, j]`` (root side) to ``succ[r, j]``:

    T(succ) = T(pred) . pre[r, j] . Z(sign[r, j] q_j) . post[r, j]

with Z a rotation about (revolute) or a translation along (prismatic) z. Along
the description's direction pre = P RotZ(gamma) TransZ(b) RotX(alpha) TransX(a)
RotZ(theta) (P the joint's fixed placement, the identity without one), post =
TransZ(d), sign = +1; a joint crossed the other way swaps its sides: pre = post^-1, post = pre^-1, sign = -1 (the same physical angle q_j
moves the bodies the other way round). Every rooting is precomputed at load, so
switching rooting is one integer in the Data.
"""
from __future__ import annotations

from collections import deque

import numpy as np
from numba import njit

from models.chain.model import PRISMATIC, REVOLUTE
from models.common.layout import Field, Layout
from models.tree.config import TreeDescription

# Joint j: jtype, armature, viscous, coulomb, qmin, qmax, vmax, taumax; body b: mass, com (own
# frame), inertia (about the CoG, own axes); frame f: fbody, fpose (in its body's frame); group g:
# gmass[g, b] (the body's mass if it belongs to the group, else 0; group 0 is the whole robot);
# gravity (default); rooting r: order (joints, root outwards), pred, succ, sign, pre, post, rootb
# (fixed body), rootT (its pose in the base frame), support[r, b, j] (1 if joint j moves body b),
# bjoint[r, b] (the joint that carries body b, -1 for the fixed body: the joints moving b are
# bjoint[b], bjoint[pred[bjoint[b]]], ... up to the root), rootf (the root frame, -1 for a body).
MODEL = Layout("tree model", [
    Field("n"), Field("nb"), Field("nf"), Field("ng"), Field("nr"),
    Field("jtype", ("n",)), Field("armature", ("n",)), Field("viscous", ("n",)), Field("coulomb", ("n",)),
    Field("qmin", ("n",)), Field("qmax", ("n",)), Field("vmax", ("n",)), Field("taumax", ("n",)),
    Field("mass", ("nb",)), Field("com", ("nb", 3)), Field("inertia", ("nb", 3, 3)),
    Field("fbody", ("nf",)), Field("fpose", ("nf", 4, 4)), Field("gmass", ("ng", "nb")), Field("gravity", (3,)),
    Field("order", ("nr", "n")), Field("pred", ("nr", "n")), Field("succ", ("nr", "n")), Field("sign", ("nr", "n")),
    Field("pre", ("nr", "n", 4, 4)), Field("post", ("nr", "n", 4, 4)), Field("rootb", ("nr",)),
    Field("rootT", ("nr", 4, 4)), Field("support", ("nr", "nb", "n")), Field("bjoint", ("nr", "nb")),
    Field("rootf", ("nr",))], sizes=("n", "nb", "nf", "ng", "nr"))
HEADER = MODEL.offset("jtype")   # the sizes n, nb, nf, ng, nr
_N, _NB, _NF, _NG, _NR = (MODEL.offset(k) for k in MODEL.sizes)
# root (the rooting in use), Tb body poses, Tax joint-axis frames (T(pred) . pre), Tf operational
# frames, S joint motion axes in the base frame at its origin (rows v, w), pc body CoGs, Jf frame
# Jacobians, com / Jcom per group, bh / bI body first moments m pc and inertias about the base
# origin, cm / ch / cI the same for composite bodies, A, G, h = C qd + G, tau_f friction torque,
# V / Ac / F spatial velocity, acceleration and force per body, tmp a 4x4 and w6 a 6-vector
# scratch, Sd the rates of the motion axes, Bf / B22 the non-zero blocks of the composite Coriolis
# factors, C the Coriolis matrix, f6 three 6-vector scratches, gc the mass and first moment of
# each group's part of every subtree.
DATA = Layout("tree data", [
    Field("root", (1,)), Field("Tb", ("nb", 4, 4)), Field("Tax", ("n", 4, 4)), Field("Tf", ("nf", 4, 4)),
    Field("S", ("n", 6)), Field("pc", ("nb", 3)), Field("Jf", ("nf", 6, "n")), Field("com", ("ng", 3)),
    Field("Jcom", ("ng", 3, "n")), Field("bh", ("nb", 3)), Field("bI", ("nb", 3, 3)), Field("cm", ("nb",)),
    Field("ch", ("nb", 3)), Field("cI", ("nb", 3, 3)), Field("A", ("n", "n")), Field("G", ("n",)),
    Field("h", ("n",)), Field("tau_f", ("n",)), Field("V", ("nb", 6)), Field("Ac", ("nb", 6)),
    Field("F", ("nb", 6)), Field("tmp", (4, 4)), Field("w6", (6,)), Field("Sd", ("n", 6)),
    Field("Bf", ("nb", 3)), Field("B22", ("nb", 3, 3)), Field("C", ("n", "n")), Field("f6", (3, 6)),
    Field("gc", ("nb", "4 * ng"))], sizes=("n", "nb", "nf", "ng"))
_model_views, _data_views = MODEL.kernel_views, DATA.kernel_views


@njit(cache=True, inline="always")
def model_layout(buf):
    """Named views of a model buffer (:data:`MODEL`) and its size."""
    return _model_views(buf, int(buf[_N]), int(buf[_NB]), int(buf[_NF]), int(buf[_NG]), int(buf[_NR]))


@njit(cache=True, inline="always")
def data_layout(mbuf, buf):
    """Named views of a data buffer (:data:`DATA`) and its size."""
    return _data_views(buf, int(mbuf[_N]), int(mbuf[_NB]), int(mbuf[_NF]), int(mbuf[_NG]))


def sizes(mbuf: np.ndarray) -> dict[str, int]:
    """The sizes a model buffer's header holds (n, nb, nf, ng, nr)."""
    return {k: int(mbuf[MODEL.offset(k)]) for k in MODEL.sizes}


def rotation(axis: int, angle: float) -> np.ndarray:
    """4x4 rotation by ``angle`` about the x (0), y (1) or z (2) axis."""
    c, s = np.cos(angle), np.sin(angle)
    i, k = (axis + 1) % 3, (axis + 2) % 3
    T = np.eye(4)
    T[i, i], T[i, k], T[k, i], T[k, k] = c, -s, s, c
    return T


def translation(axis: int, x: float) -> np.ndarray:
    """4x4 translation by ``x`` along the x (0), y (1) or z (2) axis."""
    T = np.eye(4)
    T[axis, 3] = x
    return T


def _inverse(T: np.ndarray) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3] = T[:3, :3].T
    out[:3, 3] = -T[:3, :3].T @ T[:3, 3]
    return out


def rooting(desc: TreeDescription, root: str) -> dict:
    """Traversal of the tree from ``root`` (a body or a frame): the order of the
    joints, pred, succ, sign, pre, post per joint, the fixed body and its pose in
    the base frame, the root frame, and the support and carrying joint of every
    body (setup only, allocates)."""
    n, names = desc.n, desc.body_names
    frames = {f.name: f for f in desc.frames}
    if root in frames:
        rb, rootT = names.index(frames[root].body), _inverse(np.array(frames[root].pose))
        rootf = float(list(frames).index(root))
    else:
        rb, rootT, rootf = names.index(root), np.eye(4), -1.0
    parent = [names.index(j.parent) for j in desc.joints]
    links: dict[int, list[int]] = {b: [] for b in range(len(names))}
    for j, p in enumerate(parent):
        links[p].append(j)
        links[j + 1].append(j)
    out = {"order": [], "pred": np.zeros(n), "succ": np.zeros(n), "sign": np.zeros(n),
           "pre": np.zeros((n, 4, 4)), "post": np.zeros((n, 4, 4)), "rootb": rb, "rootT": rootT, "rootf": rootf,
           "support": np.zeros((len(names), n)), "bjoint": np.full(len(names), -1.0)}
    todo, seen = deque([rb]), {rb}
    while todo:
        b = todo.popleft()
        for j in links[b]:
            t = desc.joints[j]
            m = t.joint.mdh
            pre = (rotation(2, t.gamma) @ translation(2, t.b) @ rotation(0, m.alpha) @ translation(0, m.a)
                   @ rotation(2, m.theta))
            if t.placement is not None:
                pre = np.array(t.placement) @ pre
            post = translation(2, m.d)
            forward = parent[j] == b
            s = j + 1 if forward else parent[j]
            if s in seen:
                continue
            seen.add(s)
            todo.append(s)
            out["order"].append(j)
            out["pred"][j], out["succ"][j] = b, s
            out["sign"][j] = 1.0 if forward else -1.0
            out["pre"][j] = pre if forward else _inverse(post)
            out["post"][j] = post if forward else _inverse(pre)
            out["support"][s] = out["support"][b]
            out["support"][s, j] = 1.0
            out["bjoint"][s] = j
    return out


class TreeModel:
    """Immutable parameters of a kinematic tree and of each of its rootings."""

    def __init__(self, desc: TreeDescription) -> None:
        n, bodies = desc.n, desc.body_names
        self.n, self.nb, self.name = n, len(bodies), desc.name
        self.joint_names = tuple(j.joint.name for j in desc.joints)
        self.body_names = bodies
        self.frame_names = tuple(f.name for f in desc.frames)
        self.group_names = ("robot",) + tuple(desc.subtrees)
        self.root_names = desc.roots
        dims = (n, len(bodies), len(self.frame_names), len(self.group_names), len(desc.roots))
        size = dict(zip(MODEL.sizes, dims))
        self.buf = np.zeros(MODEL.size(**size))
        for k, d in size.items():
            self.buf[MODEL.offset(k)] = d
        v = MODEL.views(self.buf, **size)._asdict()
        for j, t in enumerate(desc.joints):
            jt = t.joint
            v["jtype"][j] = PRISMATIC if jt.type == "prismatic" else REVOLUTE
            v["armature"][j], v["viscous"][j], v["coulomb"][j] = jt.armature, jt.viscous, jt.coulomb
            v["qmin"][j], v["qmax"][j] = jt.position_limits
            v["vmax"][j], v["taumax"][j] = jt.velocity_limit, jt.torque_limit
        for b, name in enumerate(bodies):
            body = desc.bodies[name]
            v["mass"][b], v["com"][b], v["inertia"][b] = body.mass, body.com, body.inertia
        for f, fr in enumerate(desc.frames):
            v["fbody"][f], v["fpose"][f] = bodies.index(fr.body), fr.pose
        v["gmass"][0] = v["mass"]
        for g, members in enumerate(desc.subtrees.values(), start=1):
            for name in members:
                b = bodies.index(name)
                v["gmass"][g, b] = v["mass"][b]
        v["gravity"][:] = desc.gravity
        for r, name in enumerate(desc.roots):
            t = rooting(desc, name)
            for key in ("order", "pred", "succ", "sign", "pre", "post", "rootb", "rootT", "support", "bjoint", "rootf"):
                v[key][r] = t[key]
        self.total_mass = float(v["mass"].sum())
        self.buf.flags.writeable = False
        for name, arr in v.items():
            setattr(self, name, arr)

    def index(self, kind: str, name: str) -> int:
        """Index of a joint, body, frame, group or root by name."""
        names = getattr(self, f"{kind}_names")
        if name not in names:
            raise KeyError(f"unknown {kind} {name!r} (known: {list(names)})")
        return names.index(name)

    def __repr__(self) -> str:
        return f"TreeModel({self.name!r}, n={self.n}, roots={list(self.root_names)})"


class TreeData:
    """Preallocated workspace and results of one tree update for a given TreeModel."""

    def __init__(self, model: TreeModel) -> None:
        size = {k: v for k, v in sizes(model.buf).items() if k in DATA.sizes}
        self.buf = np.zeros(DATA.size(**size))
        for name, arr in DATA.views(self.buf, **size)._asdict().items():
            setattr(self, name, arr)
