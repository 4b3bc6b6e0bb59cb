"""Composite models (Gastebois 2017, ch. 3): the models of a robot made of serial
sub-robots, computed from each sub-robot's own chain model.

The robot is a base body (the BIP 2000's pelvis) carrying serial chains (the two
legs and the pelvis-trunk chain). Each chain's own model is written in the base
body's frame, joints traversed away from it (thesis eq. 92-93). In single support
the base of the whole robot moves to the stance sole: the stance chain is crossed
base-distal (thesis §3.4, eq. 94-96) and the other chains hang from the base body,
which is the stance chain's old base. With R = R_0->i, t = t_0->i the stance sole's
pose in the base body's frame, and z_m, o_m joint m's axis in that frame:

* base-distal Jacobian of the old base (Theorem 4, eq. 163, corrected in
  docs/composite_models.md): J_v,i0 = -R^T J_v,0i - (dR^T/dq) . t_0->i,
  J_w,i0 = -R^T J_w,0i;
* base-distal Jacobian of body k of the stance chain (Theorem 5, eq. 164,
  corrected): J_v,ik = J_v,i0 + R^T J_v,0k + (dR^T/dq) . t_0->k, J_w,ik = -R^T
  (columns k+1..i of J_w,0i), the other columns 0; k = 0 (the old base) included;
* body k of a hanging chain (Theorems 2-3, eq. 149, 162): stance columns
  J_v,i0 + (dR_i->0/dq) . t_0->k and J_w,i0, own columns R^T J_0k;
* CoG Jacobians (Theorem 1, eq. 118): the mass-weighted sum of the bodies';
* inertia (Theorems 6-8, eq. 165, 213-217, 227): A = [[A_bd + sum of alpha_c,
  beta_c], [beta_c^T, A_c]] with A_c each hanging chain's own inertia matrix
  (written in the base body's frame: a rotation of the base leaves it unchanged),
  A_bd the stance chain's base-distal inertia (its old base included), alpha_c /
  beta_c the coupling of chain c with the stance chain; two hanging chains couple
  only through the stance block (their cross block is 0);
* gravity (Theorems 12-13, eq. 245): G = -sum_k m_k J_v,k^T g, old base included;
* Coriolis (Theorems 9-11) in Christoffel form from the same Jacobians and their
  Hessian tensors contracted with qd: C = sum_k m_k J_v^T Jd_v + J_w^T (I_k Jd_w
  + 1/2 ([w_k] I_k - I_k [w_k] - [I_k w_k]) J_w).

(dR^T/dq) . x is the contracted product of thesis eq. 109-117: its column m is
dR^T/dq_m x = -R^T (z_m x x). All vectors of the results are in the stance sole's
frame; joint and body indices are those of the tree description. Allocation-free
kernels, ``@njit(cache=True)``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from models.common.errors import GeometryError
from models.chain.model import PRISMATIC
from models.common.layout import Field, Layout
from models.tree.model import MODEL as TREE_MODEL
from models.tree.model import TreeModel, model_layout, rooting
from models.tree.model import sizes as tree_sizes
from models.tree.config import TreeDescription
from models.tree.dynamics import _cross, _joint_step, _mul

# chain[c, u] the joints of chain c from the base body outwards (-1 past its length clen[c]); per
# joint: jchain its chain, jpos its place in it, parent the body on the base side, pre / post its
# transforms along the description's direction; per body: bchain, bpos (-1 for the base body); per
# stance option s: stchain (the stance chain) and stframe (the sole frame, the new base). The header:
# n joints, nb bodies, nch chains, L the longest chain, ns stance options.
PLAN = Layout("composite plan", [
    Field("n"), Field("nb"), Field("nch"), Field("L"), Field("ns"),
    Field("chain", ("nch", "L")), Field("clen", ("nch",)), Field("jchain", ("n",)), Field("jpos", ("n",)),
    Field("parent", ("n",)), Field("pre", ("n", 4, 4)), Field("post", ("n", 4, 4)), Field("bchain", ("nb",)),
    Field("bpos", ("nb",)), Field("stchain", ("ns",)), Field("stframe", ("ns",))],
    sizes=("n", "nb", "nch", "L", "ns"))
_N, _NB, _NCH, _L, _NS = (PLAN.offset(k) for k in PLAN.sizes)
# Own chain models (base body frame): T0 body poses, z0 / o0 joint axes, p0 body CoGs, J0 body CoG
# Jacobians (own columns), A0 each chain's own inertia (block diagonal), TS the stance sole's pose,
# JS its Jacobian, Jd0 the old base's base-distal Jacobian (Theorem 4). Composite results (stance
# sole frame): Tb, pc, Jb (body CoG Jacobians), IS body inertias about their CoG, zS / oS joint axes,
# Tf / Jf operational frames, com / Jcom per group, A, G, C; vel body CoG velocities, Jd a Jacobian
# rate and I3 a 3x3 scratch, tmp two 4x4 scratches. stance[0] is the stance option in use.
DATA = Layout("composite data", [
    Field("stance", (1,)), Field("T0", ("nb", 4, 4)), Field("z0", ("n", 3)), Field("o0", ("n", 3)),
    Field("p0", ("nb", 3)), Field("J0", ("nb", 6, "n")), Field("A0", ("n", "n")), Field("TS", (4, 4)),
    Field("JS", (6, "n")), Field("Jd0", (6, "n")), Field("Tb", ("nb", 4, 4)), Field("pc", ("nb", 3)),
    Field("Jb", ("nb", 6, "n")), Field("IS", ("nb", 3, 3)), Field("zS", ("n", 3)), Field("oS", ("n", 3)),
    Field("Tf", ("nf", 4, 4)), Field("Jf", ("nf", 6, "n")), Field("com", ("ng", 3)), Field("Jcom", ("ng", 3, "n")),
    Field("A", ("n", "n")), Field("G", ("n",)), Field("C", ("n", "n")), Field("vel", ("nb", 6)),
    Field("Jd", (6, "n")), Field("I3", (3, 3)), Field("tmp", (2, 4, 4))], sizes=("n", "nb", "nf", "ng"))
_STANCE = DATA.offset("stance")
_TREE_N, _TREE_NB, _TREE_NF, _TREE_NG = (TREE_MODEL.offset(k) for k in DATA.sizes)   # the tree model's header
_plan_views, _data_views = PLAN.kernel_views, DATA.kernel_views


@njit(cache=True, inline="always")
def plan_layout(buf):
    """Named views of a composite plan (:data:`PLAN`) and its size."""
    return _plan_views(buf, int(buf[_N]), int(buf[_NB]), int(buf[_NCH]), int(buf[_L]), int(buf[_NS]))


@njit(cache=True, inline="always")
def cdata_layout(mbuf, buf):
    """Named views of a composite data buffer (:data:`DATA`, the sizes from the tree model
    ``mbuf``) and its size."""
    return _data_views(buf, int(mbuf[_TREE_N]), int(mbuf[_TREE_NB]), int(mbuf[_TREE_NF]), int(mbuf[_TREE_NG]))


@njit(cache=True, inline="always")
def views(tbuf, pbuf, dbuf):
    """The tree model's, the plan's and the composite data's named views."""
    m, _ = model_layout(tbuf)
    p, _ = plan_layout(pbuf)
    d, _ = cdata_layout(tbuf, dbuf)
    return m, p, d


@njit(cache=True)
def check_buffers(tbuf, pbuf, dbuf, q, qd, g):
    """Kernel views trust the buffer sizes: refuse mismatched buffers and inputs outright."""
    if q.shape[0] != int(tbuf[_TREE_N]) or qd.shape[0] != q.shape[0] or g.shape[0] != 3:
        raise ValueError("q and qd must have one entry per joint and gravity 3 components")
    _, tsize = model_layout(tbuf)
    _, psize = plan_layout(pbuf)
    _, dsize = cdata_layout(tbuf, dbuf)
    if tsize != tbuf.shape[0] or psize != pbuf.shape[0] or int(pbuf[_N]) != q.shape[0] or dsize != dbuf.shape[0]:
        raise ValueError("composite buffers do not match the tree model")


@njit(cache=True, inline="always")
def _rdot_t(R, revolute, z0, z1, z2, x0, x1, x2):
    """Column of the contracted product (dR^T/dq_m) . x = -R^T (z_m x x) (thesis
    eq. 109-117 for R_i->0 = R_0->i^T; z_m in the base body's frame); 0 for a
    prismatic joint, which turns nothing."""
    if not revolute:
        return 0.0, 0.0, 0.0
    c0, c1, c2 = _cross(z0, z1, z2, x0, x1, x2)
    return (-(R[0, 0] * c0 + R[1, 0] * c1 + R[2, 0] * c2),
            -(R[0, 1] * c0 + R[1, 1] * c1 + R[2, 1] * c2),
            -(R[0, 2] * c0 + R[1, 2] * c1 + R[2, 2] * c2))


@njit(cache=True, inline="always")
def _rt(R, x0, x1, x2):
    """R^T x."""
    return (R[0, 0] * x0 + R[1, 0] * x1 + R[2, 0] * x2,
            R[0, 1] * x0 + R[1, 1] * x1 + R[2, 1] * x2,
            R[0, 2] * x0 + R[1, 2] * x1 + R[2, 2] * x2)


@njit(cache=True, inline="always")
def moves_own(jchain, jpos, bchain, bpos, m, b):
    """Whether joint m moves body b in their chain's own model (m before b)."""
    return int(jchain[m]) == int(bchain[b]) and jpos[m] <= bpos[b]


@njit(cache=True, inline="always")
def supports(jchain, jpos, bchain, bpos, cs, m, b):
    """Whether joint m moves body b in the composite rooted at the sole of chain
    cs: a stance joint moves every body on its far side (the base body, the other
    chains, the stance bodies nearer the base body); a hanging chain's joint the
    bodies after it in its own chain."""
    if int(jchain[m]) == cs:
        return int(bchain[b]) != cs or bpos[b] < jpos[m]
    return moves_own(jchain, jpos, bchain, bpos, m, b)


@njit(cache=True)
def chain_models(tbuf, pbuf, dbuf, q):
    """Each chain's own model in the base body's frame (thesis eq. 1-5, 92-93):
    :func:`chain_kinematics` and :func:`chain_inertias`."""
    chain_kinematics(tbuf, pbuf, dbuf, q)
    chain_inertias(tbuf, pbuf, dbuf)


@njit(cache=True)
def chain_kinematics(tbuf, pbuf, dbuf, q):
    """Each chain's body poses, joint axes, body CoGs and CoG Jacobians (own
    columns) in the base body's frame (thesis eq. 1-5, 92-93)."""
    mv, pv, dv = views(tbuf, pbuf, dbuf)
    jtype, mass, com, chain, clen, jchain, jpos = mv.jtype, mv.mass, mv.com, pv.chain, pv.clen, pv.jchain, pv.jpos
    parent, pre, post, bchain, bpos, T0, z0, o0 = pv.parent, pv.pre, pv.post, pv.bchain, pv.bpos, dv.T0, dv.z0, dv.o0
    p0, J0, tmp = dv.p0, dv.J0, dv.tmp
    n = q.shape[0]
    for i in range(4):
        for c in range(4):
            T0[0, i, c] = 1.0 if i == c else 0.0
    for ch in range(chain.shape[0]):
        for u in range(int(clen[ch])):
            j = int(chain[ch, u])
            _mul(T0[int(parent[j])], pre[j], tmp[0])
            for i in range(3):
                z0[j, i], o0[j, i] = tmp[0, i, 2], tmp[0, i, 3]
            _joint_step(tmp[0], jtype[j] != PRISMATIC, q[j], post[j], T0[j + 1])
    for b in range(mass.shape[0]):
        for i in range(3):
            p0[b, i] = T0[b, i, 3] + T0[b, i, 0] * com[b, 0] + T0[b, i, 1] * com[b, 1] + T0[b, i, 2] * com[b, 2]
        for m in range(n):
            moves = moves_own(jchain, jpos, bchain, bpos, m, b)
            if moves and jtype[m] != PRISMATIC:
                c0, c1, c2 = _cross(z0[m, 0], z0[m, 1], z0[m, 2],
                                    p0[b, 0] - o0[m, 0], p0[b, 1] - o0[m, 1], p0[b, 2] - o0[m, 2])
                J0[b, 0, m], J0[b, 1, m], J0[b, 2, m] = c0, c1, c2
                J0[b, 3, m], J0[b, 4, m], J0[b, 5, m] = z0[m, 0], z0[m, 1], z0[m, 2]
            elif moves:
                J0[b, 0, m], J0[b, 1, m], J0[b, 2, m] = z0[m, 0], z0[m, 1], z0[m, 2]
                J0[b, 3, m], J0[b, 4, m], J0[b, 5, m] = 0.0, 0.0, 0.0
            else:
                for i in range(6):
                    J0[b, i, m] = 0.0


@njit(cache=True)
def chain_inertias(tbuf, pbuf, dbuf):
    """Each chain's own inertia matrix A_c = sum_k J_0k^T diag(m_k, I_0k) J_0k
    (eq. 165), from :func:`chain_kinematics`, block diagonal in A0."""
    mv, pv, dv = views(tbuf, pbuf, dbuf)
    mass, inertia, chain, clen, bchain, T0, J0 = mv.mass, mv.inertia, pv.chain, pv.clen, pv.bchain, dv.T0, dv.J0
    A0, I3 = dv.A0, dv.I3
    n = A0.shape[0]
    for i in range(n):
        for k in range(n):
            A0[i, k] = 0.0
    for b in range(1, mass.shape[0]):
        _world_inertia(T0[b], inertia[b], I3)
        _add_jtmj(J0[b], mass[b], I3, chain, clen, int(bchain[b]), int(bchain[b]), A0)


@njit(cache=True)
def _world_inertia(T, I, out):
    """R I R^T: a body's inertia about its CoG in the frame T is written in."""
    for i in range(3):
        for k in range(3):
            s = 0.0
            for u in range(3):
                for w in range(3):
                    s += T[i, u] * I[u, w] * T[k, w]
            out[i, k] = s


@njit(cache=True)
def _add_jtmj(J, m, I, chain, clen, ca, cb, A):
    """A[a, b] += J_a^T diag(m 1, I) J_b for the columns a of chain ca and b of
    chain cb (one body's term of eq. 165); a chain with itself fills both halves."""
    for u in range(int(clen[ca])):
        a = int(chain[ca, u])
        i0 = I[0, 0] * J[3, a] + I[0, 1] * J[4, a] + I[0, 2] * J[5, a]
        i1 = I[1, 0] * J[3, a] + I[1, 1] * J[4, a] + I[1, 2] * J[5, a]
        i2 = I[2, 0] * J[3, a] + I[2, 1] * J[4, a] + I[2, 2] * J[5, a]
        for w in range(u if ca == cb else 0, int(clen[cb])):
            b = int(chain[cb, w])
            x = (m * (J[0, a] * J[0, b] + J[1, a] * J[1, b] + J[2, a] * J[2, b])
                 + i0 * J[3, b] + i1 * J[4, b] + i2 * J[5, b])
            A[a, b] += x
            if ca == cb and b != a:
                A[b, a] += x


@njit(cache=True)
def set_stance(pbuf, dbuf, s):
    """Select stance option s (0 .. ns - 1) for the next update."""
    if s < 0 or s >= int(pbuf[_NS]):
        raise ValueError("stance index out of range")
    dbuf[_STANCE] = s


@njit(cache=True)
def composite_kinematics(tbuf, pbuf, dbuf, q):
    """Base-distal change to the stance sole (Theorems 4-5, corrected) and the
    hanging chains (Theorems 2-3): body poses and CoG Jacobians, operational
    frames, CoGs and CoG Jacobians (Theorem 1) in the stance sole's frame."""
    mv, pv, dv = views(tbuf, pbuf, dbuf)
    jtype, mass, inertia, fbody, fpose, gmass = mv.jtype, mv.mass, mv.inertia, mv.fbody, mv.fpose, mv.gmass
    chain, clen, jchain, jpos, bchain, bpos = pv.chain, pv.clen, pv.jchain, pv.jpos, pv.bchain, pv.bpos
    stchain, stframe, stance, T0, z0, o0, p0 = pv.stchain, pv.stframe, dv.stance, dv.T0, dv.z0, dv.o0, dv.p0
    J0, TS, JS, Jd0, Tb, pc, Jb, IS, zS, oS = dv.J0, dv.TS, dv.JS, dv.Jd0, dv.Tb, dv.pc, dv.Jb, dv.IS, dv.zS, dv.oS
    Tf, Jf, cg, Jcom = dv.Tf, dv.Jf, dv.com, dv.Jcom
    n = q.shape[0]
    s = int(stance[0])
    cs, fr = int(stchain[s]), int(stframe[s])
    foot = int(chain[cs, int(clen[cs]) - 1]) + 1
    _mul(T0[foot], fpose[fr], TS)
    R = TS
    t0, t1, t2 = TS[0, 3], TS[1, 3], TS[2, 3]
    # the chain model's Jacobian of the sole origin, J_0i (own columns)
    for m in range(n):
        for i in range(6):
            JS[i, m] = 0.0
        if int(jchain[m]) == cs:
            if jtype[m] != PRISMATIC:
                c0, c1, c2 = _cross(z0[m, 0], z0[m, 1], z0[m, 2], t0 - o0[m, 0], t1 - o0[m, 1], t2 - o0[m, 2])
                JS[0, m], JS[1, m], JS[2, m] = c0, c1, c2
                JS[3, m], JS[4, m], JS[5, m] = z0[m, 0], z0[m, 1], z0[m, 2]
            else:
                JS[0, m], JS[1, m], JS[2, m] = z0[m, 0], z0[m, 1], z0[m, 2]
    # Theorem 4 (corrected): the old base seen from the new one
    for m in range(n):
        for i in range(6):
            Jd0[i, m] = 0.0
        if int(jchain[m]) != cs:
            continue
        a0, a1, a2 = _rt(R, JS[0, m], JS[1, m], JS[2, m])
        d0, d1, d2 = _rdot_t(R, jtype[m] != PRISMATIC, z0[m, 0], z0[m, 1], z0[m, 2], t0, t1, t2)
        w0, w1, w2 = _rt(R, JS[3, m], JS[4, m], JS[5, m])
        Jd0[0, m], Jd0[1, m], Jd0[2, m] = -a0 - d0, -a1 - d1, -a2 - d2
        Jd0[3, m], Jd0[4, m], Jd0[5, m] = -w0, -w1, -w2
    # joint axes in the sole frame: a stance joint is crossed the other way (-z)
    for m in range(n):
        sg = -1.0 if int(jchain[m]) == cs else 1.0
        a0, a1, a2 = _rt(R, z0[m, 0], z0[m, 1], z0[m, 2])
        zS[m, 0], zS[m, 1], zS[m, 2] = sg * a0, sg * a1, sg * a2
        oS[m, 0], oS[m, 1], oS[m, 2] = _rt(R, o0[m, 0] - t0, o0[m, 1] - t1, o0[m, 2] - t2)
    # body poses: T_i->k = T_0->i^-1 T_0->k (eq. 95)
    for b in range(mass.shape[0]):
        for i in range(3):
            for c in range(4):
                x = 0.0
                for k in range(3):
                    x += R[k, i] * (T0[b, k, c] - (TS[k, 3] if c == 3 else 0.0))
                Tb[b, i, c] = x
        for c in range(4):
            Tb[b, 3, c] = 1.0 if c == 3 else 0.0
        pc[b, 0], pc[b, 1], pc[b, 2] = _rt(R, p0[b, 0] - t0, p0[b, 1] - t1, p0[b, 2] - t2)
        _world_inertia(Tb[b], inertia[b], IS[b])
    # body CoG Jacobians. Stance columns: Theorem 5 (corrected; k = 0, the old base,
    # included) for a stance body, Theorem 3 for a hanging one, where J_v,0k has no
    # stance column and the same expression remains: J_v,i0 + R^T J_v,0k + dR_i->0/dq . t_0->k
    for b in range(mass.shape[0]):
        for m in range(n):
            if int(jchain[m]) == cs:
                if not supports(jchain, jpos, bchain, bpos, cs, m, b):
                    for i in range(6):
                        Jb[b, i, m] = 0.0
                    continue
                a0, a1, a2 = _rt(R, J0[b, 0, m], J0[b, 1, m], J0[b, 2, m])
                d0, d1, d2 = _rdot_t(R, jtype[m] != PRISMATIC, z0[m, 0], z0[m, 1], z0[m, 2],
                                     p0[b, 0], p0[b, 1], p0[b, 2])
                Jb[b, 0, m] = Jd0[0, m] + a0 + d0
                Jb[b, 1, m] = Jd0[1, m] + a1 + d1
                Jb[b, 2, m] = Jd0[2, m] + a2 + d2
                Jb[b, 3, m], Jb[b, 4, m], Jb[b, 5, m] = Jd0[3, m], Jd0[4, m], Jd0[5, m]
            elif moves_own(jchain, jpos, bchain, bpos, m, b):             # own columns R^T J_0k
                Jb[b, 0, m], Jb[b, 1, m], Jb[b, 2, m] = _rt(R, J0[b, 0, m], J0[b, 1, m], J0[b, 2, m])
                Jb[b, 3, m], Jb[b, 4, m], Jb[b, 5, m] = _rt(R, J0[b, 3, m], J0[b, 4, m], J0[b, 5, m])
            else:
                for i in range(6):
                    Jb[b, i, m] = 0.0
    # operational frames: a body's Jacobian carried from its CoG to the frame origin
    for f in range(fbody.shape[0]):
        b = int(fbody[f])
        _mul(Tb[b], fpose[f], Tf[f])
        r0, r1, r2 = Tf[f, 0, 3] - pc[b, 0], Tf[f, 1, 3] - pc[b, 1], Tf[f, 2, 3] - pc[b, 2]
        for m in range(n):
            c0, c1, c2 = _cross(Jb[b, 3, m], Jb[b, 4, m], Jb[b, 5, m], r0, r1, r2)
            Jf[f, 0, m], Jf[f, 1, m], Jf[f, 2, m] = Jb[b, 0, m] + c0, Jb[b, 1, m] + c1, Jb[b, 2, m] + c2
            for i in range(3, 6):
                Jf[f, i, m] = Jb[b, i, m]
    # Theorem 1: CoG and CoG Jacobian of each group
    for g in range(gmass.shape[0]):
        total = 0.0
        for i in range(3):
            cg[g, i] = 0.0
            for m in range(n):
                Jcom[g, i, m] = 0.0
        for b in range(mass.shape[0]):
            w = gmass[g, b]
            if w == 0.0:
                continue
            total += w
            for i in range(3):
                cg[g, i] += w * pc[b, i]
                for m in range(n):
                    Jcom[g, i, m] += w * Jb[b, i, m]
        for i in range(3):
            cg[g, i] /= total
            for m in range(n):
                Jcom[g, i, m] /= total


@njit(cache=True)
def composite_inertia(tbuf, pbuf, dbuf):
    """A(q) by Theorems 6-8 (eq. 165, 213-217, 227): the stance block is the
    stance chain's base-distal inertia (bodies 0..i, the old base included) plus
    alpha_c = sum_k J_k,stance^T M_k J_k,stance over each hanging chain c; the
    coupling block beta_c = sum_k J_k,stance^T M_k J_k,own; the hanging chain's
    own block is its own inertia matrix A_c (:func:`chain_models`); the block of
    two hanging chains is 0; the rotor inertias on the diagonal."""
    mv, pv, dv = views(tbuf, pbuf, dbuf)
    arm, mass, chain, clen, jchain, bchain = mv.armature, mv.mass, pv.chain, pv.clen, pv.jchain, pv.bchain
    stchain, stance, A0, Jb, IS, A = pv.stchain, dv.stance, dv.A0, dv.Jb, dv.IS, dv.A
    n = A.shape[0]
    cs = int(stchain[int(stance[0])])
    for i in range(n):
        for k in range(n):
            A[i, k] = A0[i, k] if int(jchain[i]) == int(jchain[k]) != cs else 0.0
    for b in range(mass.shape[0]):
        _add_jtmj(Jb[b], mass[b], IS[b], chain, clen, cs, cs, A)  # Theorem 8 / alpha_c
        c = int(bchain[b])
        if c != cs and b != 0:
            _add_jtmj(Jb[b], mass[b], IS[b], chain, clen, cs, c, A)   # beta_c
    for i in range(n):
        for k in range(n):
            if int(jchain[i]) == cs and int(jchain[k]) != cs:
                A[k, i] = A[i, k]
        A[i, i] += arm[i]


@njit(cache=True)
def composite_gravity(tbuf, dbuf, g):
    """G = -sum_k m_k J_v,k^T g over every body, the old base included (Theorems
    12-13, eq. 245; g in the stance sole's frame)."""
    mv, _ = model_layout(tbuf)
    dv, _ = cdata_layout(tbuf, dbuf)
    mass, Jcom, G = mv.mass, dv.Jcom, dv.G
    total = 0.0
    for b in range(mass.shape[0]):
        total += mass[b]
    for m in range(G.shape[0]):                # sum_k m_k J_v,k = M J_G (Theorem 1)
        G[m] = -total * (g[0] * Jcom[0, 0, m] + g[1] * Jcom[0, 1, m] + g[2] * Jcom[0, 2, m])


@njit(cache=True)
def composite_coriolis(tbuf, pbuf, dbuf, qd):
    """C(q, qd) in Christoffel form (c_ijk = 1/2 (dA_ij/dq_k + dA_ik/dq_j -
    dA_jk/dq_i), Theorems 9-11) from the composite Jacobians and their rates
    Jd_k = H_k . qd (the Hessian tensor contracted with qd): column m of body k
    moves with a body c at joint m (either one: they differ by a rotation about
    or a translation along z_m, which changes neither rate), zd_m = w_c x z_m,
    od_m = v_c + w_c x (o_m - p_c), so Jd_v,m = zd_m x (p_k - o_m) + z_m x
    (v_k - od_m), Jd_w,m = zd_m; then C = sum_k m_k J_v^T Jd_v + J_w^T (I_k Jd_w +
    1/2 ([w_k] I_k - I_k [w_k] - [I_k w_k]) J_w)."""
    mv, pv, dv = views(tbuf, pbuf, dbuf)
    jtype, mass, jchain, jpos, parent, bchain = mv.jtype, mv.mass, pv.jchain, pv.jpos, pv.parent, pv.bchain
    bpos, stchain, stance, pc, Jb, IS, zS, oS = pv.bpos, pv.stchain, dv.stance, dv.pc, dv.Jb, dv.IS, dv.zS, dv.oS
    C, vel, Jd = dv.C, dv.vel, dv.Jd
    n = qd.shape[0]
    cs = int(stchain[int(stance[0])])
    for b in range(mass.shape[0]):
        for i in range(6):
            x = 0.0
            for m in range(n):
                x += Jb[b, i, m] * qd[m]
            vel[b, i] = x
    for i in range(n):
        for k in range(n):
            C[i, k] = 0.0
    for b in range(mass.shape[0]):
        w0, w1, w2 = vel[b, 3], vel[b, 4], vel[b, 5]
        for m in range(n):
            if not supports(jchain, jpos, bchain, bpos, cs, m, b):
                for i in range(6):
                    Jd[i, m] = 0.0
                continue
            c = int(parent[m])          # either body at joint m: they differ by a motion about or along z_m
            zd0, zd1, zd2 = _cross(vel[c, 3], vel[c, 4], vel[c, 5], zS[m, 0], zS[m, 1], zS[m, 2])
            e0, e1, e2 = _cross(vel[c, 3], vel[c, 4], vel[c, 5],
                                oS[m, 0] - pc[c, 0], oS[m, 1] - pc[c, 1], oS[m, 2] - pc[c, 2])
            if jtype[m] != PRISMATIC:
                a0, a1, a2 = _cross(zd0, zd1, zd2, pc[b, 0] - oS[m, 0], pc[b, 1] - oS[m, 1], pc[b, 2] - oS[m, 2])
                d0, d1, d2 = _cross(zS[m, 0], zS[m, 1], zS[m, 2], vel[b, 0] - vel[c, 0] - e0,
                                    vel[b, 1] - vel[c, 1] - e1, vel[b, 2] - vel[c, 2] - e2)
                Jd[0, m], Jd[1, m], Jd[2, m] = a0 + d0, a1 + d1, a2 + d2
                Jd[3, m], Jd[4, m], Jd[5, m] = zd0, zd1, zd2
            else:
                Jd[0, m], Jd[1, m], Jd[2, m] = zd0, zd1, zd2
                Jd[3, m], Jd[4, m], Jd[5, m] = 0.0, 0.0, 0.0
        Ib = IS[b]
        mb = mass[b]
        l0 = Ib[0, 0] * w0 + Ib[0, 1] * w1 + Ib[0, 2] * w2
        l1 = Ib[1, 0] * w0 + Ib[1, 1] * w1 + Ib[1, 2] * w2
        l2 = Ib[2, 0] * w0 + Ib[2, 1] * w1 + Ib[2, 2] * w2
        for k in range(n):
            if not supports(jchain, jpos, bchain, bpos, cs, k, b):
                continue
            # y = I Jd_w + 1/2 ([w] I - I [w] - [I w]) J_w, column k
            x0, x1, x2 = Jb[b, 3, k], Jb[b, 4, k], Jb[b, 5, k]
            u0 = Ib[0, 0] * x0 + Ib[0, 1] * x1 + Ib[0, 2] * x2
            u1 = Ib[1, 0] * x0 + Ib[1, 1] * x1 + Ib[1, 2] * x2
            u2 = Ib[2, 0] * x0 + Ib[2, 1] * x1 + Ib[2, 2] * x2
            a0, a1, a2 = _cross(w0, w1, w2, u0, u1, u2)
            c0, c1, c2 = _cross(w0, w1, w2, x0, x1, x2)
            b0 = Ib[0, 0] * c0 + Ib[0, 1] * c1 + Ib[0, 2] * c2
            b1 = Ib[1, 0] * c0 + Ib[1, 1] * c1 + Ib[1, 2] * c2
            b2 = Ib[2, 0] * c0 + Ib[2, 1] * c1 + Ib[2, 2] * c2
            e0, e1, e2 = _cross(l0, l1, l2, x0, x1, x2)
            y0 = Ib[0, 0] * Jd[3, k] + Ib[0, 1] * Jd[4, k] + Ib[0, 2] * Jd[5, k] + 0.5 * (a0 - b0 - e0)
            y1 = Ib[1, 0] * Jd[3, k] + Ib[1, 1] * Jd[4, k] + Ib[1, 2] * Jd[5, k] + 0.5 * (a1 - b1 - e1)
            y2 = Ib[2, 0] * Jd[3, k] + Ib[2, 1] * Jd[4, k] + Ib[2, 2] * Jd[5, k] + 0.5 * (a2 - b2 - e2)
            for i in range(n):
                if not supports(jchain, jpos, bchain, bpos, cs, i, b):
                    continue
                C[i, k] += (mb * (Jb[b, 0, i] * Jd[0, k] + Jb[b, 1, i] * Jd[1, k] + Jb[b, 2, i] * Jd[2, k])
                            + Jb[b, 3, i] * y0 + Jb[b, 4, i] * y1 + Jb[b, 5, i] * y2)


@njit(cache=True)
def composite_update(tbuf, pbuf, dbuf, q, qd, g):
    """Every composite model for the stance option in use, gravity g in the
    stance sole's frame: chain models, frames and Jacobians, CoGs and their
    Jacobians, A, G and C (Christoffel). Allocation-free."""
    check_buffers(tbuf, pbuf, dbuf, q, qd, g)
    chain_models(tbuf, pbuf, dbuf, q)
    composite_kinematics(tbuf, pbuf, dbuf, q)
    composite_inertia(tbuf, pbuf, dbuf)
    composite_gravity(tbuf, dbuf, g)
    composite_coriolis(tbuf, pbuf, dbuf, qd)


class CompositePlan:
    """How a tree splits into serial chains hanging from its base body, and the
    single supports it may stand in (the roots that are frames on a chain's last
    body). Raises GeometryError for a tree the composite models do not cover."""

    def __init__(self, desc: TreeDescription, model: TreeModel) -> None:
        names, n = desc.body_names, desc.n
        parent = [names.index(j.parent) for j in desc.joints]
        children: dict[int, list[int]] = {b: [] for b in range(len(names))}
        for j, p in enumerate(parent):
            children[p].append(j)
        chains = []
        for j in children[0]:
            c = [j]
            while children[c[-1] + 1]:
                if len(children[c[-1] + 1]) > 1:
                    raise GeometryError(f"{desc.name}: joints: body {names[c[-1] + 1]!r} carries "
                                        "two joints; composite models need serial chains on the base body")
                c.append(children[c[-1] + 1][0])
            chains.append(c)
        frames = {f.name: f for f in desc.frames}
        stances = []
        for root in desc.roots:
            if root not in frames:
                continue
            body = names.index(frames[root].body)
            hit = [k for k, c in enumerate(chains) if c[-1] + 1 == body]
            if hit:
                stances.append((root, hit[0], model.frame_names.index(root)))
        if not stances:
            raise GeometryError(f"{desc.name}: roots: no root is a frame on the last body of a chain")
        self.chains, self.stance_names = chains, tuple(s[0] for s in stances)
        L = max(len(c) for c in chains)
        dims = {"n": n, "nb": len(names), "nch": len(chains), "L": L, "ns": len(stances)}
        self.buf = np.zeros(PLAN.size(**dims))
        for k, size in dims.items():
            self.buf[PLAN.offset(k)] = size
        v = PLAN.views(self.buf, **dims)._asdict()
        natural = rooting(desc, names[0])
        v["chain"][:] = -1.0
        v["bpos"][0], v["bchain"][0] = -1.0, -1.0
        for k, c in enumerate(chains):
            v["clen"][k] = len(c)
            for u, j in enumerate(c):
                v["chain"][k, u] = j
                v["jchain"][j], v["jpos"][j], v["parent"][j] = k, u, parent[j]
                v["bchain"][j + 1], v["bpos"][j + 1] = k, u
        v["pre"][:], v["post"][:] = natural["pre"], natural["post"]
        for s, (_, k, f) in enumerate(stances):
            v["stchain"][s], v["stframe"][s] = k, f
        self.buf.flags.writeable = False
        for name, arr in v.items():
            setattr(self, name, arr)


class CompositeData:
    """Preallocated workspace and results of one composite update."""

    def __init__(self, model: TreeModel) -> None:
        sizes = {k: v for k, v in tree_sizes(model.buf).items() if k in DATA.sizes}
        self.buf = np.zeros(DATA.size(**sizes))
        for name, arr in DATA.views(self.buf, **sizes)._asdict().items():
            setattr(self, name, arr)


def composite_setup(desc: TreeDescription,
                    stance: str | None = None) -> tuple[TreeModel, CompositePlan, CompositeData]:
    """Model, plan and data for :func:`composite_update` standing on ``stance``
    (a root that is a sole frame; the first such root if None), compiled and run
    once (setup only, allocates)."""
    model = TreeModel(desc)
    plan = CompositePlan(desc, model)
    stance = plan.stance_names[0] if stance is None else stance
    if stance not in plan.stance_names:
        raise GeometryError(f"{desc.name}: roots: {stance!r} is not a single support "
                            f"(supports: {list(plan.stance_names)})")
    data = CompositeData(model)
    set_stance(plan.buf, data.buf, plan.stance_names.index(stance))
    z = np.zeros(model.n)
    composite_update(model.buf, plan.buf, data.buf, z, z, np.array(model.gravity))
    return model, plan, data
