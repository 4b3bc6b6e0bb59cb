"""Model / Data of a kinematic tree that can be rooted at several places.

As in :mod:`models.chain.model`, :class:`TreeModel` packs every parameter in ONE flat
float64 buffer and :class:`TreeData` every workspace and result in another; the
kernels of :mod:`models.tree.dynamics` unpack named views without allocating.
Each layout is declared once, in :func:`model_layout` / :func:`data_layout`; the
buffer sizes are derived from it.

Bodies: 0 is the description's base, j + 1 the body joint j carries. A rooting
(Khalil & Dombre, tree structures) fixes one body and a base frame on it; the
joints are then traversed away from that body. Joint j of rooting r links the
body ``pred[r, j]`` (root side) to ``succ[r, j]``:

    T(succ) = T(pred) . pre[r, j] . Z(sign[r, j] q_j) . post[r, j]

with Z a rotation about (revolute) or a translation along (prismatic) z. Along
the description's direction pre = RotZ(gamma) TransZ(b) RotX(alpha) TransX(a)
RotZ(theta), post = TransZ(d), sign = +1; a joint crossed the other way swaps
its sides: pre = post^-1, post = pre^-1, sign = -1 (the same physical angle q_j
moves the bodies the other way round). Every rooting is precomputed at load, so
switching rooting is one integer in the Data.
"""
from __future__ import annotations

from collections import deque

import numpy as np
from numba import carray, njit

from models.chain.model import PRISMATIC, REVOLUTE, _at, python_views
from models.tree.config import TreeDescription

HEADER = 5   # n joints, nb bodies, nf frames, ng CoG groups, nr rootings


@njit(cache=True, inline="always")
def model_layout(buf):
    """Views of a model buffer and its size. Joint j: jtype, armature, viscous,
    coulomb, qmin, qmax, vmax, taumax; body b: mass, com (own frame), inertia
    (about the CoG, own axes); frame f: fbody, fpose (in its body's frame); group
    g: gmass[g, b] (the body's mass if it belongs to the group, else 0; group 0
    is the whole robot); gravity (default); rooting r: order (joints, root
    outwards), pred, succ, sign, pre, post, rootb (fixed body), rootT (its pose
    in the base frame), support[r, b, j] (1 if joint j moves body b), bjoint[r, b]
    (the joint that carries body b, -1 for the fixed body: the joints moving b are
    bjoint[b], bjoint[pred[bjoint[b]]], ... up to the root)."""
    n, nb, nf, ng, nr = int(buf[0]), int(buf[1]), int(buf[2]), int(buf[3]), int(buf[4])
    o = HEADER
    jtype = carray(_at(buf, o), (n,)); o += n
    armature = carray(_at(buf, o), (n,)); o += n
    viscous = carray(_at(buf, o), (n,)); o += n
    coulomb = carray(_at(buf, o), (n,)); o += n
    qmin = carray(_at(buf, o), (n,)); o += n
    qmax = carray(_at(buf, o), (n,)); o += n
    vmax = carray(_at(buf, o), (n,)); o += n
    taumax = carray(_at(buf, o), (n,)); o += n
    mass = carray(_at(buf, o), (nb,)); o += nb
    com = carray(_at(buf, o), (nb, 3)); o += 3 * nb
    inertia = carray(_at(buf, o), (nb, 3, 3)); o += 9 * nb
    fbody = carray(_at(buf, o), (nf,)); o += nf
    fpose = carray(_at(buf, o), (nf, 4, 4)); o += 16 * nf
    gmass = carray(_at(buf, o), (ng, nb)); o += ng * nb
    gravity = carray(_at(buf, o), (3,)); o += 3
    order = carray(_at(buf, o), (nr, n)); o += nr * n
    pred = carray(_at(buf, o), (nr, n)); o += nr * n
    succ = carray(_at(buf, o), (nr, n)); o += nr * n
    sign = carray(_at(buf, o), (nr, n)); o += nr * n
    pre = carray(_at(buf, o), (nr, n, 4, 4)); o += 16 * nr * n
    post = carray(_at(buf, o), (nr, n, 4, 4)); o += 16 * nr * n
    rootb = carray(_at(buf, o), (nr,)); o += nr
    rootT = carray(_at(buf, o), (nr, 4, 4)); o += 16 * nr
    support = carray(_at(buf, o), (nr, nb, n)); o += nr * nb * n
    bjoint = carray(_at(buf, o), (nr, nb)); o += nr * nb
    rootf = carray(_at(buf, o), (nr,)); o += nr
    return (jtype, armature, viscous, coulomb, qmin, qmax, vmax, taumax, mass, com, inertia,
            fbody, fpose, gmass, gravity, order, pred, succ, sign, pre, post, rootb, rootT,
            support, bjoint, rootf), o


@njit(cache=True, inline="always")
def data_layout(mbuf, buf):
    """Views of a data buffer and its size: root (the rooting in use), Tb body
    poses, Tax joint-axis frames (T(pred) . pre), Tf operational frames, S joint
    motion axes in the base frame at its origin (rows v, w), pc body CoGs, Jf
    frame Jacobians, com / Jcom per group, bh / bI body first moments m pc and
    inertias about the base origin, cm / ch / cI the same for composite bodies,
    A, G, h = C qd + G, tau_f friction torque, V / Ac / F spatial velocity,
    acceleration and force per body, tmp a 4x4 and w6 a 6-vector scratch, Sd the
    rates of the motion axes, Bf / B22 the non-zero blocks of the composite
    Coriolis factors, C the Coriolis matrix, f6 three 6-vector scratches, gc the
    mass and first moment of each group's part of every subtree."""
    n, nb, nf, ng = int(mbuf[0]), int(mbuf[1]), int(mbuf[2]), int(mbuf[3])
    o = 0
    root = carray(_at(buf, o), (1,)); o += 1
    Tb = carray(_at(buf, o), (nb, 4, 4)); o += 16 * nb
    Tax = carray(_at(buf, o), (n, 4, 4)); o += 16 * n
    Tf = carray(_at(buf, o), (nf, 4, 4)); o += 16 * nf
    S = carray(_at(buf, o), (n, 6)); o += 6 * n
    pc = carray(_at(buf, o), (nb, 3)); o += 3 * nb
    Jf = carray(_at(buf, o), (nf, 6, n)); o += 6 * nf * n
    com = carray(_at(buf, o), (ng, 3)); o += 3 * ng
    Jcom = carray(_at(buf, o), (ng, 3, n)); o += 3 * ng * n
    bh = carray(_at(buf, o), (nb, 3)); o += 3 * nb
    bI = carray(_at(buf, o), (nb, 3, 3)); o += 9 * nb
    cm = carray(_at(buf, o), (nb,)); o += nb
    ch = carray(_at(buf, o), (nb, 3)); o += 3 * nb
    cI = carray(_at(buf, o), (nb, 3, 3)); o += 9 * nb
    A = carray(_at(buf, o), (n, n)); o += n * n
    G = carray(_at(buf, o), (n,)); o += n
    h = carray(_at(buf, o), (n,)); o += n
    tau_f = carray(_at(buf, o), (n,)); o += n
    V = carray(_at(buf, o), (nb, 6)); o += 6 * nb
    Ac = carray(_at(buf, o), (nb, 6)); o += 6 * nb
    F = carray(_at(buf, o), (nb, 6)); o += 6 * nb
    tmp = carray(_at(buf, o), (4, 4)); o += 16
    w6 = carray(_at(buf, o), (6,)); o += 6
    Sd = carray(_at(buf, o), (n, 6)); o += 6 * n
    Bf = carray(_at(buf, o), (nb, 3)); o += 3 * nb
    B22 = carray(_at(buf, o), (nb, 3, 3)); o += 9 * nb
    C = carray(_at(buf, o), (n, n)); o += n * n
    f6 = carray(_at(buf, o), (3, 6)); o += 18
    gc = carray(_at(buf, o), (nb, 4 * ng)); o += 4 * nb * ng
    return (root, Tb, Tax, Tf, S, pc, Jf, com, Jcom, bh, bI, cm, ch, cI, A, G, h, tau_f,
            V, Ac, F, tmp, w6, Sd, Bf, B22, C, f6, gc), o


_MODEL_FIELDS = ("jtype", "armature", "viscous", "coulomb", "qmin", "qmax", "vmax", "taumax",
                 "mass", "com", "inertia", "fbody", "fpose", "gmass", "gravity", "order", "pred",
                 "succ", "sign", "pre", "post", "rootb", "rootT", "support", "bjoint", "rootf")
_DATA_FIELDS = ("root", "Tb", "Tax", "Tf", "S", "pc", "Jf", "com", "Jcom", "bh", "bI", "cm",
                "ch", "cI", "A", "G", "h", "tau_f", "V", "Ac", "F", "tmp", "w6", "Sd", "Bf",
                "B22", "C", "f6", "gc")


def _rot(axis: int, angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    i, k = (axis + 1) % 3, (axis + 2) % 3
    T = np.eye(4)
    T[i, i], T[i, k], T[k, i], T[k, k] = c, -s, s, c
    return T


def _trans(axis: int, x: float) -> np.ndarray:
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
            pre = _rot(2, t.gamma) @ _trans(2, t.b) @ _rot(0, m.alpha) @ _trans(0, m.a) @ _rot(2, m.theta)
            post = _trans(2, m.d)
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
        header = np.array(dims, dtype=np.float64)
        self.buf = np.zeros(model_layout(header)[1])
        self.buf[:HEADER] = dims
        v = dict(zip(_MODEL_FIELDS, python_views(self.buf, model_layout(self.buf)[0])))
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
        self.buf = np.zeros(data_layout(model.buf, np.zeros(1))[1])
        for name, arr in zip(_DATA_FIELDS, python_views(self.buf, data_layout(model.buf, self.buf)[0])):
            setattr(self, name, arr)
