"""Kernels of a kinematic tree (:mod:`models.tree.model`): frames, Jacobians, CoGs,
A(q) by composite rigid bodies, G(q), C(q, qd) in Christoffel form, C qd + G
and inverse dynamics by recursive Newton-Euler, for the rooting selected in
the Data.

All vectors are in the base frame of the rooting in use. A joint's motion axis
S_j = (v, w) is the spatial velocity (at the base origin) that a unit rate of
the joint gives the bodies it moves: w = sign z_j, v = o_j x w for a revolute joint, v = sign z_j,
w = 0 for a prismatic one (z_j, o_j of its axis frame). The velocity of a point p
carried by the joint is then v + w x p (Khalil & Dombre, geometric Jacobian;
Featherstone 2008, spatial algebra in one fixed frame). A quantity that couples
two joints (a Jacobian column, A_ij, C_ij) is non-zero only when one joint moves
the other's body: the kernels walk the chain of joints from a body to the root
(``bjoint``) instead of testing all n. Allocation-free: every workspace lives in
the Data buffer; ``@njit(cache=True)``; each public kernel unpacks its views once
and checks the buffer sizes on the way. The stages (poses, frames, CoGs, composite
inertias, CRBA, Newton-Euler, Christoffel C, the ground wrench) are compiled once
each with ``forceinline=True``: Numba types them once and LLVM inlines them into
every public kernel that calls them (as fast as Numba's ``inline="always"``, which
types them again in each caller: twice the cold compile for update_cycle, update,
kinematics and contact_share). The layouts, the small helpers and :func:`_update` (so that
:func:`update_cycle` is specialised at compile time) stay ``inline="always"``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from models.chain.model import PRISMATIC
from models.tree.model import DATA, HEADER, MODEL, data_layout, model_layout

_N, _NR, _ROOT = MODEL.offset("n"), MODEL.offset("nr"), DATA.offset("root")


@njit(cache=True, inline="always")
def _cross(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(cache=True, inline="always")
def _views(mbuf, dbuf, q):
    """Model and Data views, after refusing mismatched buffers (the views trust
    the sizes)."""
    if mbuf.shape[0] < HEADER or int(mbuf[_N]) != q.shape[0]:
        raise ValueError("tree model buffer does not match the joint vector")
    mv, msize = model_layout(mbuf)
    if msize != mbuf.shape[0]:
        raise ValueError("tree model buffer does not match the joint vector")
    dv, dsize = data_layout(mbuf, dbuf)
    if dsize != dbuf.shape[0]:
        raise ValueError("tree data buffer does not match the model")
    return mv, dv


@njit(cache=True)
def check(mbuf, dbuf, q):
    """Kernel views trust the buffer sizes: refuse mismatched buffers outright."""
    _views(mbuf, dbuf, q)


@njit(cache=True)
def check_inputs(q, qd, g):
    if qd.shape[0] != q.shape[0] or g.shape[0] != 3:
        raise ValueError("qd must match q and gravity must have 3 components")


@njit(cache=True)
def set_root(mbuf, dbuf, r):
    """Select rooting r (0 .. nr - 1) for the next update: no allocation, no
    recomputation; the results in the Data are those of the previous rooting
    until the next :func:`update` / :func:`kinematics`."""
    if r < 0 or r >= int(mbuf[_NR]):
        raise ValueError("rooting index out of range")
    dbuf[_ROOT] = r


@njit(cache=True, inline="always")
def _mul(A, B, out):
    """out = A . B for rigid 4x4 transforms (out must not alias A or B)."""
    for r in range(3):
        a0, a1, a2 = A[r, 0], A[r, 1], A[r, 2]
        out[r, 0] = a0 * B[0, 0] + a1 * B[1, 0] + a2 * B[2, 0]
        out[r, 1] = a0 * B[0, 1] + a1 * B[1, 1] + a2 * B[2, 1]
        out[r, 2] = a0 * B[0, 2] + a1 * B[1, 2] + a2 * B[2, 2]
        out[r, 3] = a0 * B[0, 3] + a1 * B[1, 3] + a2 * B[2, 3] + A[r, 3]
    out[3, 0], out[3, 1], out[3, 2], out[3, 3] = 0.0, 0.0, 0.0, 1.0


@njit(cache=True, inline="always")
def _joint_step(Tax, revolute, x, post, out):
    """out = Tax . Z(x) . post, Z(x) = RotZ(x) (revolute) or TransZ(x) (prismatic)."""
    c, s = (np.cos(x), np.sin(x)) if revolute else (1.0, 0.0)
    for r in range(3):
        a0, a1, a2, a3 = Tax[r, 0], Tax[r, 1], Tax[r, 2], Tax[r, 3]
        m0, m1 = a0 * c + a1 * s, a1 * c - a0 * s
        if not revolute:
            a3 += a2 * x
        out[r, 0] = m0 * post[0, 0] + m1 * post[1, 0] + a2 * post[2, 0]
        out[r, 1] = m0 * post[0, 1] + m1 * post[1, 1] + a2 * post[2, 1]
        out[r, 2] = m0 * post[0, 2] + m1 * post[1, 2] + a2 * post[2, 2]
        out[r, 3] = m0 * post[0, 3] + m1 * post[1, 3] + a2 * post[2, 3] + a3
    out[3, 0], out[3, 1], out[3, 2], out[3, 3] = 0.0, 0.0, 0.0, 1.0


@njit(cache=True, forceinline=True)
def _poses(q, r, jtype, com, order, pred, succ, sign, pre, post, rootb, rootT, Tb, Tax, S, pc):
    """Body poses Tb, axis frames Tax, motion axes S and body CoGs pc, root
    outwards (Khalil & Dombre, tree MDH)."""
    b0 = int(rootb[r])
    for i in range(4):
        for c in range(4):
            Tb[b0, i, c] = rootT[r, i, c]
    for k in range(q.shape[0]):
        j = int(order[r, k])
        p, s, sg = int(pred[r, j]), int(succ[r, j]), sign[r, j]
        _mul(Tb[p], pre[r, j], Tax[j])
        rev = jtype[j] != PRISMATIC
        _joint_step(Tax[j], rev, sg * q[j], post[r, j], Tb[s])
        z0, z1, z2 = sg * Tax[j, 0, 2], sg * Tax[j, 1, 2], sg * Tax[j, 2, 2]
        if rev:
            v0, v1, v2 = _cross(Tax[j, 0, 3], Tax[j, 1, 3], Tax[j, 2, 3], z0, z1, z2)
            S[j, 0], S[j, 1], S[j, 2], S[j, 3], S[j, 4], S[j, 5] = v0, v1, v2, z0, z1, z2
        else:
            S[j, 0], S[j, 1], S[j, 2], S[j, 3], S[j, 4], S[j, 5] = z0, z1, z2, 0.0, 0.0, 0.0
    for b in range(com.shape[0]):
        for i in range(3):
            pc[b, i] = Tb[b, i, 3] + Tb[b, i, 0] * com[b, 0] + Tb[b, i, 1] * com[b, 1] + Tb[b, i, 2] * com[b, 2]


@njit(cache=True)
def forward_kinematics(mbuf, dbuf, q):
    """Body poses Tb, axis frames Tax, motion axes S, body CoGs pc and frame poses
    Tf, root outwards (Khalil & Dombre, tree MDH)."""
    m, d = _views(mbuf, dbuf, q)
    jtype, com, fbody, fpose, order, pred = m.jtype, m.com, m.fbody, m.fpose, m.order, m.pred
    succ, sign, pre, post, rootb, rootT = m.succ, m.sign, m.pre, m.post, m.rootb, m.rootT
    root, Tb, Tax, Tf, S, pc = d.root, d.Tb, d.Tax, d.Tf, d.S, d.pc
    _poses(q, int(root[0]), jtype, com, order, pred, succ, sign, pre, post, rootb, rootT, Tb, Tax,
           S, pc)
    for f in range(fbody.shape[0]):
        _mul(Tb[int(fbody[f])], fpose[f], Tf[f])


@njit(cache=True)
def point_jacobian(S, support, p, J):
    """Geometric Jacobian (6 x n, rows [v; w]) of the point p (base coordinates)
    carried by a body whose support row is ``support``: column j = (v_j + w_j x p,
    w_j) for the joints that move the body, 0 for the others."""
    for j in range(J.shape[1]):
        if support[j] == 0.0:
            for i in range(6):
                J[i, j] = 0.0
            continue
        c0, c1, c2 = _cross(S[j, 3], S[j, 4], S[j, 5], p[0], p[1], p[2])
        J[0, j], J[1, j], J[2, j] = S[j, 0] + c0, S[j, 1] + c1, S[j, 2] + c2
        J[3, j], J[4, j], J[5, j] = S[j, 3], S[j, 4], S[j, 5]


@njit(cache=True, forceinline=True)
def _frame(f, r, fbody, fpose, pred, bjoint, S, Tb, Tf, Jf):
    """Pose Tf[f] of frame f and the Jacobian Jf[f] of its origin, walking the
    joints that move its body (the other columns are zero)."""
    b = int(fbody[f])
    _mul(Tb[b], fpose[f], Tf[f])
    J = Jf[f]
    for i in range(6):
        for j in range(S.shape[0]):
            J[i, j] = 0.0
    p0, p1, p2 = Tf[f, 0, 3], Tf[f, 1, 3], Tf[f, 2, 3]
    j = int(bjoint[r, b])
    while j >= 0:
        c0, c1, c2 = _cross(S[j, 3], S[j, 4], S[j, 5], p0, p1, p2)
        J[0, j], J[1, j], J[2, j] = S[j, 0] + c0, S[j, 1] + c1, S[j, 2] + c2
        J[3, j], J[4, j], J[5, j] = S[j, 3], S[j, 4], S[j, 5]
        j = int(bjoint[r, int(pred[r, j])])


@njit(cache=True, forceinline=True)
def _group_coms(r, gmass, order, pred, succ, rootb, S, pc, gc, cg, Jcom):
    """CoG of each group and its Jacobian. gc[b, 4 g: 4 g + 4] = (mass, first
    moment) of group g's bodies in the subtree of b (summed leaves inwards); column j of the
    CoG Jacobian is then (m v_j + w_j x h) / M over the subtree that joint j
    moves (the sum of m_b J(pc_b), Khalil & Dombre)."""
    n, ng = S.shape[0], gmass.shape[0]
    b0 = int(rootb[r])
    for b in range(gmass.shape[1]):
        p0, p1, p2 = pc[b, 0], pc[b, 1], pc[b, 2]
        for g in range(ng):
            m = gmass[g, b]
            gc[b, 4 * g], gc[b, 4 * g + 1], gc[b, 4 * g + 2], gc[b, 4 * g + 3] = m, m * p0, m * p1, m * p2
    for k in range(n - 1, -1, -1):
        j = int(order[r, k])
        p, s = int(pred[r, j]), int(succ[r, j])
        for u in range(4 * ng):
            gc[p, u] += gc[s, u]
    for g in range(ng):
        inv = 1.0 / gc[b0, 4 * g]
        for i in range(3):
            cg[g, i] = gc[b0, 4 * g + 1 + i] * inv
        for j in range(n):
            s = int(succ[r, j])
            m = gc[s, 4 * g]
            c0, c1, c2 = _cross(S[j, 3], S[j, 4], S[j, 5], gc[s, 4 * g + 1], gc[s, 4 * g + 2], gc[s, 4 * g + 3])
            Jcom[g, 0, j] = (m * S[j, 0] + c0) * inv
            Jcom[g, 1, j] = (m * S[j, 1] + c1) * inv
            Jcom[g, 2, j] = (m * S[j, 2] + c2) * inv


@njit(cache=True)
def kinematics(mbuf, dbuf, q):
    """Forward kinematics, the Jacobian of every operational frame's origin, the
    CoG of the robot and of each group with their Jacobians."""
    m, d = _views(mbuf, dbuf, q)
    jtype, com, fbody, fpose, gmass, order = m.jtype, m.com, m.fbody, m.fpose, m.gmass, m.order
    pred, succ, sign, pre, post, rootb = m.pred, m.succ, m.sign, m.pre, m.post, m.rootb
    rootT, bjoint = m.rootT, m.bjoint
    root, Tb, Tax, Tf, S, pc = d.root, d.Tb, d.Tax, d.Tf, d.S, d.pc
    Jf, cg, Jcom, gc = d.Jf, d.com, d.Jcom, d.gc
    r = int(root[0])
    _poses(q, r, jtype, com, order, pred, succ, sign, pre, post, rootb, rootT, Tb, Tax, S, pc)
    for f in range(fbody.shape[0]):
        _frame(f, r, fbody, fpose, pred, bjoint, S, Tb, Tf, Jf)
    _group_coms(r, gmass, order, pred, succ, rootb, S, pc, gc, cg, Jcom)


@njit(cache=True, forceinline=True)
def _body_inertias(mass, inertia, Tb, pc, bh, bI):
    """First moment m pc and inertia about the base origin of every body:
    I_O = R I R^T + m (|c|^2 1 - c c^T) (Huygens-Steiner)."""
    for b in range(mass.shape[0]):
        m = mass[b]
        R, I, c = Tb[b], inertia[b], pc[b]
        cc = c[0] * c[0] + c[1] * c[1] + c[2] * c[2]
        out = bI[b]
        for i in range(3):
            bh[b, i] = m * c[i]
        for i in range(3):
            t0 = R[i, 0] * I[0, 0] + R[i, 1] * I[1, 0] + R[i, 2] * I[2, 0]
            t1 = R[i, 0] * I[0, 1] + R[i, 1] * I[1, 1] + R[i, 2] * I[2, 1]
            t2 = R[i, 0] * I[0, 2] + R[i, 1] * I[1, 2] + R[i, 2] * I[2, 2]
            for k in range(i + 1):
                v = t0 * R[k, 0] + t1 * R[k, 1] + t2 * R[k, 2] + m * ((cc if i == k else 0.0) - c[i] * c[k])
                out[i, k] = v
                out[k, i] = v


@njit(cache=True, inline="always")
def _apply(m, hv, I, x, out):
    """out = (m v - h x w, I w + h x v): a spatial inertia (mass m, first moment h,
    inertia I about the origin) applied to the spatial motion x = (v, w)."""
    v0, v1, v2, w0, w1, w2 = x[0], x[1], x[2], x[3], x[4], x[5]
    a0, a1, a2 = _cross(hv[0], hv[1], hv[2], w0, w1, w2)
    b0, b1, b2 = _cross(hv[0], hv[1], hv[2], v0, v1, v2)
    out[0], out[1], out[2] = m * v0 - a0, m * v1 - a1, m * v2 - a2
    out[3] = I[0, 0] * w0 + I[0, 1] * w1 + I[0, 2] * w2 + b0
    out[4] = I[1, 0] * w0 + I[1, 1] * w1 + I[1, 2] * w2 + b1
    out[5] = I[2, 0] * w0 + I[2, 1] * w1 + I[2, 2] * w2 + b2


@njit(cache=True, inline="always")
def _dot6(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@njit(cache=True, forceinline=True)
def _composites(r, mass, inertia, order, pred, succ, Tb, pc, bh, bI, cm, ch, cI):
    """Body inertias about the base origin, then the composite (subtree) mass,
    first moment and inertia of every body, leaves inwards."""
    _body_inertias(mass, inertia, Tb, pc, bh, bI)
    for b in range(mass.shape[0]):
        cm[b] = mass[b]
        for i in range(3):
            ch[b, i] = bh[b, i]
            for k in range(3):
                cI[b, i, k] = bI[b, i, k]
    for k in range(order.shape[1] - 1, -1, -1):
        j = int(order[r, k])
        p, s = int(pred[r, j]), int(succ[r, j])
        cm[p] += cm[s]
        for i in range(3):
            ch[p, i] += ch[s, i]
            for c in range(3):
                cI[p, i, c] += cI[s, i, c]


@njit(cache=True, forceinline=True)
def _crba(r, arm, pred, succ, bjoint, S, cm, ch, cI, f, A):
    """A_ij = S_i . (Ic(succ j) S_j) for each joint i on the chain from j to the
    root, symmetric, zero elsewhere, plus the rotor inertia on the diagonal."""
    n = S.shape[0]
    for i in range(n):
        for j in range(n):
            A[i, j] = 0.0
    for j in range(n):
        s = int(succ[r, j])
        _apply(cm[s], ch[s], cI[s], S[j], f)
        i = j
        while i >= 0:
            a = _dot6(S[i], f)
            A[i, j] = a
            A[j, i] = a
            i = int(bjoint[r, int(pred[r, i])])
        A[j, j] += arm[j]


@njit(cache=True)
def composite_inertia(mbuf, dbuf, q):
    """A(q) by composite rigid bodies (Featherstone 2008, CRBA; Khalil & Dombre):
    each body's subtree inertia Ic, F_j = Ic(succ j) S_j, A_ij = S_i . F_j for the
    joints i that support succ(j), plus the rotor inertia (armature) on the
    diagonal, over the poses of the last :func:`forward_kinematics`. Leaves the
    composite mass, first moment and inertia of every subtree in cm, ch, cI."""
    m, d = _views(mbuf, dbuf, q)
    arm, mass, inertia, order, pred, succ = m.armature, m.mass, m.inertia, m.order, m.pred, m.succ
    bjoint = m.bjoint
    root, Tb, S, pc, bh, bI = d.root, d.Tb, d.S, d.pc, d.bh, d.bI
    cm, ch, cI, A, w6 = d.cm, d.ch, d.cI, d.A, d.w6
    r = int(root[0])
    _composites(r, mass, inertia, order, pred, succ, Tb, pc, bh, bI, cm, ch, cI)
    _crba(r, arm, pred, succ, bjoint, S, cm, ch, cI, w6, A)


@njit(cache=True, forceinline=True)
def _gravity(r, succ, S, cm, ch, g, G):
    """G_j = -g . (M s_v + s_w x h) of the subtree joint j moves."""
    for j in range(S.shape[0]):
        s = int(succ[r, j])
        c0, c1, c2 = _cross(S[j, 3], S[j, 4], S[j, 5], ch[s, 0], ch[s, 1], ch[s, 2])
        G[j] = -(g[0] * (cm[s] * S[j, 0] + c0) + g[1] * (cm[s] * S[j, 1] + c1)
                 + g[2] * (cm[s] * S[j, 2] + c2))


@njit(cache=True, forceinline=True)
def _velocities(r, order, pred, succ, rootb, S, qd, V):
    b0 = int(rootb[r])
    for u in range(6):
        V[b0, u] = 0.0
    for k in range(qd.shape[0]):
        j = int(order[r, k])
        p, s, x = int(pred[r, j]), int(succ[r, j]), qd[j]
        for u in range(6):
            V[s, u] = V[p, u] + S[j, u] * x


@njit(cache=True, forceinline=True)
def _rnea(r, mass, order, pred, succ, rootb, S, bh, bI, qd, qdd, kqdd, g, V, Ac, F, hv, tau):
    """Recursive Newton-Euler (Featherstone 2008, RNEA; Lammari 2012 eq. IV.7-IV.9):
    V_s = V_p + S qd, a_s = a_p + S qdd + V_s x S qd with a_root = (-g, 0), body
    force f = I a + V x* (I V), then tau_j = S_j . f(succ j) while summing the
    forces towards the root; the acceleration taken is ``kqdd`` qdd (1.0: the
    motion's, 0.0: none, h = C qd + G). A float, not a flag: Numba types a
    constant True/False as a literal and would compile one copy per value."""
    n = qd.shape[0]
    b0 = int(rootb[r])
    _velocities(r, order, pred, succ, rootb, S, qd, V)
    for i in range(3):
        Ac[b0, i] = -g[i]
        Ac[b0, 3 + i] = 0.0
    for k in range(n):
        j = int(order[r, k])
        p, s = int(pred[r, j]), int(succ[r, j])
        x, xd = qd[j], kqdd * qdd[j]
        # V_s x (S qd): (w x sv + v x sw, w x sw)
        a0, a1, a2 = _cross(V[s, 3], V[s, 4], V[s, 5], S[j, 0], S[j, 1], S[j, 2])
        b0_, b1_, b2_ = _cross(V[s, 0], V[s, 1], V[s, 2], S[j, 3], S[j, 4], S[j, 5])
        c0, c1, c2 = _cross(V[s, 3], V[s, 4], V[s, 5], S[j, 3], S[j, 4], S[j, 5])
        Ac[s, 0] = Ac[p, 0] + S[j, 0] * xd + (a0 + b0_) * x
        Ac[s, 1] = Ac[p, 1] + S[j, 1] * xd + (a1 + b1_) * x
        Ac[s, 2] = Ac[p, 2] + S[j, 2] * xd + (a2 + b2_) * x
        Ac[s, 3] = Ac[p, 3] + S[j, 3] * xd + c0 * x
        Ac[s, 4] = Ac[p, 4] + S[j, 4] * xd + c1 * x
        Ac[s, 5] = Ac[p, 5] + S[j, 5] * xd + c2 * x
    for k in range(n):
        s = int(succ[r, int(order[r, k])])
        _apply(mass[s], bh[s], bI[s], V[s], hv)
        _apply(mass[s], bh[s], bI[s], Ac[s], F[s])
        # V x* (I V) = (w x f, w x n + v x f)
        a0, a1, a2 = _cross(V[s, 3], V[s, 4], V[s, 5], hv[0], hv[1], hv[2])
        b0_, b1_, b2_ = _cross(V[s, 3], V[s, 4], V[s, 5], hv[3], hv[4], hv[5])
        c0, c1, c2 = _cross(V[s, 0], V[s, 1], V[s, 2], hv[0], hv[1], hv[2])
        F[s, 0] += a0
        F[s, 1] += a1
        F[s, 2] += a2
        F[s, 3] += b0_ + c0
        F[s, 4] += b1_ + c1
        F[s, 5] += b2_ + c2
    for u in range(6):
        F[b0, u] = 0.0
    for k in range(n - 1, -1, -1):
        j = int(order[r, k])
        p, s = int(pred[r, j]), int(succ[r, j])
        t = 0.0
        for u in range(6):
            t += S[j, u] * F[s, u]
            F[p, u] += F[s, u]
        tau[j] = t


@njit(cache=True)
def rnea(mbuf, dbuf, q, qd, qdd, g, tau):
    """Inverse dynamics tau = A qdd + C qd + G + Fv qd + Fs sign(qd) for gravity g
    (base frame): RNEA plus the rotor inertia Ia qdd and friction (Lammari 2012
    eq. IV.10). Rewrites the body poses and inertias in the Data."""
    check_inputs(q, qd, g)
    check_inputs(q, qdd, g)
    if tau.shape[0] != q.shape[0]:
        raise ValueError("tau must match q")
    m, d = _views(mbuf, dbuf, q)
    jtype, arm, fv, fs, mass, com = m.jtype, m.armature, m.viscous, m.coulomb, m.mass, m.com
    inertia, order, pred, succ, sign, pre = m.inertia, m.order, m.pred, m.succ, m.sign, m.pre
    post, rootb, rootT = m.post, m.rootb, m.rootT
    root, Tb, Tax, S, pc, bh = d.root, d.Tb, d.Tax, d.S, d.pc, d.bh
    bI, V, Ac, F, w6 = d.bI, d.V, d.Ac, d.F, d.w6
    r = int(root[0])
    _poses(q, r, jtype, com, order, pred, succ, sign, pre, post, rootb, rootT, Tb, Tax, S, pc)
    _body_inertias(mass, inertia, Tb, pc, bh, bI)
    _rnea(r, mass, order, pred, succ, rootb, S, bh, bI, qd, qdd, 1.0, g, V, Ac, F, w6, tau)
    for j in range(q.shape[0]):
        tau[j] += arm[j] * qdd[j] + fv[j] * qd[j] + fs[j] * np.sign(qd[j])


@njit(cache=True, inline="always")
def _coriolis_factor(m, hv, I, V, Bf, B22):
    """Non-zero blocks of B(I, V) = 1/2 (V x* I - I V x + (I V) xbar*) for one body
    (Echeandia & Wensing 2021), where (f xbar*) V = V x* f. With I = [[m 1, -[h]],
    [[h], I_O]], V = (v, w) and I V = (f, n), B = [[0, -[f]], [0, B22]],
    B22 = 1/2 (2 (v.h) 1 - h v^T - v h^T + [w] I_O - I_O [w] - [n]); Bf = f."""
    v0, v1, v2, w0, w1, w2 = V[0], V[1], V[2], V[3], V[4], V[5]
    h0, h1, h2 = hv[0], hv[1], hv[2]
    c0, c1, c2 = _cross(h0, h1, h2, w0, w1, w2)
    Bf[0], Bf[1], Bf[2] = m * v0 - c0, m * v1 - c1, m * v2 - c2
    d0, d1, d2 = _cross(h0, h1, h2, v0, v1, v2)
    n0 = I[0, 0] * w0 + I[0, 1] * w1 + I[0, 2] * w2 + d0
    n1 = I[1, 0] * w0 + I[1, 1] * w1 + I[1, 2] * w2 + d1
    n2 = I[2, 0] * w0 + I[2, 1] * w1 + I[2, 2] * w2 + d2
    vh = v0 * h0 + v1 * h1 + v2 * h2
    for i in range(3):
        for k in range(3):
            # ([w] I_O)_ik and (I_O [w])_ik
            wi = ((w1 * I[2, k] - w2 * I[1, k]) if i == 0 else
                  (w2 * I[0, k] - w0 * I[2, k]) if i == 1 else (w0 * I[1, k] - w1 * I[0, k]))
            iw = ((I[i, 1] * w2 - I[i, 2] * w1) if k == 0 else
                  (I[i, 2] * w0 - I[i, 0] * w2) if k == 1 else (I[i, 0] * w1 - I[i, 1] * w0))
            B22[i, k] = 0.5 * (wi - iw - hv[i] * V[k] - V[i] * hv[k]) + (vh if i == k else 0.0)
    B22[0, 1] += 0.5 * n2                               # -1/2 [n]
    B22[0, 2] -= 0.5 * n1
    B22[1, 0] -= 0.5 * n2
    B22[1, 2] += 0.5 * n0
    B22[2, 0] += 0.5 * n1
    B22[2, 1] -= 0.5 * n0


@njit(cache=True, forceinline=True)
def _coriolis(r, mass, order, pred, succ, bjoint, S, V, bh, bI, cm, ch, cI, Sd, Bf, B22, f6, C):
    """C(q, qd) in Christoffel form by the recursive algorithm of Echeandia &
    Wensing 2021: Sd_j = V_succ x S_j, composite factors Bc = [[0, -[Bf]], [0,
    B22]], then for each joint j and each joint i on its chain to the root
    C_ij = S_i . (Ic Sd_j + Bc S_j), C_ji = Sd_i . (Ic S_j) + S_i . (Bc^T S_j),
    with Bc S = (-Bf x w, B22 w) and Bc^T S = (0, Bf x v + B22^T w)."""
    n = S.shape[0]
    for b in range(mass.shape[0]):
        _coriolis_factor(mass[b], bh[b], bI[b], V[b], Bf[b], B22[b])
    for j in range(n):
        s = int(succ[r, j])
        a0, a1, a2 = _cross(V[s, 3], V[s, 4], V[s, 5], S[j, 0], S[j, 1], S[j, 2])
        b0_, b1_, b2_ = _cross(V[s, 0], V[s, 1], V[s, 2], S[j, 3], S[j, 4], S[j, 5])
        c0, c1, c2 = _cross(V[s, 3], V[s, 4], V[s, 5], S[j, 3], S[j, 4], S[j, 5])
        Sd[j, 0], Sd[j, 1], Sd[j, 2] = a0 + b0_, a1 + b1_, a2 + b2_
        Sd[j, 3], Sd[j, 4], Sd[j, 5] = c0, c1, c2
    for k in range(n - 1, -1, -1):
        j = int(order[r, k])
        p, s = int(pred[r, j]), int(succ[r, j])
        for u in range(3):
            Bf[p, u] += Bf[s, u]
            for c in range(3):
                B22[p, u, c] += B22[s, u, c]
    for i in range(n):
        for j in range(n):
            C[i, j] = 0.0
    f1, f2, f3 = f6[0], f6[1], f6[2]
    for j in range(n):
        s = int(succ[r, j])
        _apply(cm[s], ch[s], cI[s], Sd[j], f1)
        _apply(cm[s], ch[s], cI[s], S[j], f2)
        B, bf = B22[s], Bf[s]
        w0, w1, w2 = S[j, 3], S[j, 4], S[j, 5]
        a0, a1, a2 = _cross(bf[0], bf[1], bf[2], w0, w1, w2)
        f1[0] -= a0
        f1[1] -= a1
        f1[2] -= a2
        f1[3] += B[0, 0] * w0 + B[0, 1] * w1 + B[0, 2] * w2
        f1[4] += B[1, 0] * w0 + B[1, 1] * w1 + B[1, 2] * w2
        f1[5] += B[2, 0] * w0 + B[2, 1] * w1 + B[2, 2] * w2
        a0, a1, a2 = _cross(bf[0], bf[1], bf[2], S[j, 0], S[j, 1], S[j, 2])
        f3[3] = a0 + B[0, 0] * w0 + B[1, 0] * w1 + B[2, 0] * w2
        f3[4] = a1 + B[0, 1] * w0 + B[1, 1] * w1 + B[2, 1] * w2
        f3[5] = a2 + B[0, 2] * w0 + B[1, 2] * w1 + B[2, 2] * w2
        C[j, j] = _dot6(S[j], f1)
        i = int(bjoint[r, int(pred[r, j])])
        while i >= 0:
            C[i, j] = _dot6(S[i], f1)
            C[j, i] = _dot6(Sd[i], f2) + S[i, 3] * f3[3] + S[i, 4] * f3[4] + S[i, 5] * f3[5]
            i = int(bjoint[r, int(pred[r, i])])


@njit(cache=True, inline="always")
def _update(mbuf, dbuf, q, qd, g, with_c):
    check_inputs(q, qd, g)
    m, d = _views(mbuf, dbuf, q)
    jtype, arm, fv, fs, mass, com = m.jtype, m.armature, m.viscous, m.coulomb, m.mass, m.com
    inertia, fbody, fpose, gmass, order, pred = m.inertia, m.fbody, m.fpose, m.gmass, m.order, m.pred
    succ, sign, pre, post, rootb, rootT = m.succ, m.sign, m.pre, m.post, m.rootb, m.rootT
    bjoint, rootf = m.bjoint, m.rootf
    root, Tb, Tax, Tf, S, pc = d.root, d.Tb, d.Tax, d.Tf, d.S, d.pc
    Jf, cg, Jcom, bh, bI, cm = d.Jf, d.com, d.Jcom, d.bh, d.bI, d.cm
    ch, cI, A, G, h, tau_f = d.ch, d.cI, d.A, d.G, d.h, d.tau_f
    V, Ac, F, w6, Sd, Bf = d.V, d.Ac, d.F, d.w6, d.Sd, d.Bf
    B22, C, f6, gc = d.B22, d.C, d.f6, d.gc
    r = int(root[0])
    n = q.shape[0]
    _poses(q, r, jtype, com, order, pred, succ, sign, pre, post, rootb, rootT, Tb, Tax, S, pc)
    if with_c:
        for f in range(fbody.shape[0]):
            _frame(f, r, fbody, fpose, pred, bjoint, S, Tb, Tf, Jf)
    else:
        for k in range(rootf.shape[0]):
            if rootf[k] >= 0.0:
                _frame(int(rootf[k]), r, fbody, fpose, pred, bjoint, S, Tb, Tf, Jf)
    _group_coms(r, gmass, order, pred, succ, rootb, S, pc, gc, cg, Jcom)
    _composites(r, mass, inertia, order, pred, succ, Tb, pc, bh, bI, cm, ch, cI)
    _crba(r, arm, pred, succ, bjoint, S, cm, ch, cI, w6, A)
    _gravity(r, succ, S, cm, ch, g, G)
    if with_c:
        _velocities(r, order, pred, succ, rootb, S, qd, V)
        _coriolis(r, mass, order, pred, succ, bjoint, S, V, bh, bI, cm, ch, cI, Sd, Bf, B22, f6, C)
        for i in range(n):
            s = G[i]
            for j in range(n):
                s += C[i, j] * qd[j]
            h[i] = s
    else:
        _rnea(r, mass, order, pred, succ, rootb, S, bh, bI, qd, qd, 0.0, g, V, Ac, F, w6, h)
    for j in range(n):
        tau_f[j] = fv[j] * qd[j] + fs[j] * np.sign(qd[j])


@njit(cache=True)
def update(mbuf, dbuf, q, qd, g):
    """Everything the models give, for the rooting in use and gravity g (base
    frame, so a tilted floor is one argument): frames and their Jacobians, CoGs
    and their Jacobians, A, G, C in Christoffel form, h = C qd + G, friction.
    Allocation-free."""
    _update(mbuf, dbuf, q, qd, g, True)


@njit(cache=True)
def update_cycle(mbuf, dbuf, q, qd, g):
    """What a control cycle needs: :func:`update` without the full C matrix (h =
    C qd + G by Newton-Euler instead) and with the poses and Jacobians of the
    root frames only (the supports and the pelvis); C and the other frames in
    the Data are left as they were."""
    _update(mbuf, dbuf, q, qd, g, False)


@njit(cache=True, inline="always")
def zmp_share(W, px, py, ramp):
    """The other sole's share w of the ground wrench W (force, moment at the root sole's origin, in its
    axes: z out of the floor) and the ZMP's place between the soles (Kajita et al. 2010, the force
    distribution ratio α): the ZMP (x, y) = (−n_y, n_x) / f_z projected on the segment from the root
    sole's origin to the other's (px, py), clamped to [0, 1], blended with the plan's ``ramp`` r as
    w = r + 4 r (1 − r) (α − r): the plan's at the phase's ends (0 as the other foot touches down, 1
    as the root foot lifts off: the root switch does not step the torque), the ZMP's midway. r itself
    without a vertical load (f_z <= 0) or with coincident soles."""
    d2 = px * px + py * py
    if W[2] <= 0.0 or d2 == 0.0:
        return ramp
    alpha = ((-W[4] / W[2]) * px + (W[3] / W[2]) * py) / d2
    alpha = min(max(alpha, 0.0), 1.0)
    return ramp + 4.0 * ramp * (1.0 - ramp) * (alpha - ramp)


@njit(cache=True, forceinline=True)
def _ground_wrench(r, mass, order, pred, succ, rootb, S, bh, bI, qd, qdd, g, V, Ac, F, w6, scratch, W):
    """W: the whole ground wrench (force, moment at the root's origin, root axes) the motion (qd, qdd)
    takes in this rooting: the wrench the Newton-Euler pass sums at the root body plus the root
    body's own weight; ``scratch`` (n,) takes the pass' joint torques."""
    b0 = int(rootb[r])
    _rnea(r, mass, order, pred, succ, rootb, S, bh, bI, qd, qdd, 1.0, g, V, Ac, F, w6, scratch)
    _apply(mass[b0], bh[b0], bI[b0], Ac[b0], W)          # the root body's weight (it does not move)
    for u in range(6):
        W[u] += F[b0, u]


@njit(cache=True, inline="always")
def _other_wrench(W, p, w, n_p):
    """n_p: the other sole's share w of the ground wrench W at its origin p (root axes): force w f,
    moment w (n_O − p × w f) (Kajita et al. 2010), so that each sole's centre of pressure keeps the
    same offset from its own origin."""
    c0, c1, c2 = _cross(p[0, 3], p[1, 3], p[2, 3], w * W[0], w * W[1], w * W[2])
    n_p[0], n_p[1], n_p[2] = w * W[0], w * W[1], w * W[2]
    n_p[3], n_p[4], n_p[5] = w * (W[3] - c0), w * (W[4] - c1), w * (W[5] - c2)


@njit(cache=True)
def contact_share(mbuf, dbuf, qd, qdd, g, f, ramp, lo, hi, scratch, tau):
    """Subtracts from ``tau`` the joint torques that the other sole's share of the ground wrench
    saves, tau -= J_fᵀ W_f: the closed-chain inverse dynamics tau = A qdd + h - J_cᵀ f_c of a robot
    on two feet (Khalil & Dombre, closed loops; Featherstone 2008, ch. 8), the model rooted at one
    sole, f_c at operational frame f (the other sole). W is the whole ground wrench the motion
    (qd, qdd) takes in this rooting (:func:`_ground_wrench`). The other sole takes the share w of the
    force, :func:`zmp_share` (the plan's ``ramp`` blended with the ZMP of W) clamped to [lo, hi] (what
    the feet's load cells allow; 0, 1: nothing), and the same share of the moment the two
    soles' forces leave over (:func:`_other_wrench`), so that each sole's centre of pressure stays
    near its own origin while the ZMP runs
    from one sole to the other (docs/equations.md, double support). Over the poses and Jacobians of
    the last :func:`update_cycle` (frame f must be a root frame or :func:`update` must have run; the
    rooting a sole: its origin on the sole, z out of the floor); tau is left unchanged for ramp = lo = 0.
    ``scratch`` (n,) takes the pass' joint torques. Returns w. Allocation-free."""
    check_inputs(qd, qdd, g)
    if tau.shape[0] != qd.shape[0] or scratch.shape[0] != qd.shape[0]:
        raise ValueError("tau and scratch must match qd")
    m, d = _views(mbuf, dbuf, qd)
    fbody = m.fbody
    if f < 0 or f >= fbody.shape[0]:
        raise ValueError("contact frame index out of range")
    if ramp == 0.0 and lo <= 0.0:
        return 0.0
    r = int(d.root[0])
    W, n_p = d.f6[0], d.f6[1]
    _ground_wrench(r, m.mass, m.order, m.pred, m.succ, m.rootb, d.S, d.bh, d.bI, qd, qdd, g, d.V, d.Ac, d.F, d.w6,
                   scratch, W)
    p = d.Tf[f]
    w = min(max(zmp_share(W, p[0, 3], p[1, 3], ramp), lo), hi)
    _other_wrench(W, p, w, n_p)
    J = d.Jf[f]
    for j in range(tau.shape[0]):
        s = 0.0
        for i in range(6):
            s += J[i, j] * n_p[i]
        tau[j] -= s
    return w


@njit(cache=True)
def sole_cops(mbuf, dbuf, q, qd, qdd, g, f, ramp, min_force, scratch, cop):
    """The centre of pressure each sole takes in the split :func:`contact_share` makes of the ground
    wrench of the motion (q, qd, qdd) under gravity g (the plan's, for a gait: its posture, rates and
    the ground it assumed), the model rooted at one sole and frame f the other: the other sole's
    share w = :func:`zmp_share` (W, its origin, ``ramp``) of W (:func:`_ground_wrench`), its wrench
    :func:`_other_wrench`, the root sole's the rest. A sole's centre of pressure in its own axes, from
    its force f and moment n at its origin (z out of the sole),

        p = (−n_y / f_z, n_x / f_z)

    into ``cop`` (2, 2): row 0 the root sole's, row 1 frame f's; NaN for a sole whose f_z is below
    ``min_force``. Computes the poses at q into the Data (its rooting). Returns w. Allocation-free."""
    check_inputs(q, qd, g)
    check_inputs(q, qdd, g)
    if scratch.shape[0] != q.shape[0] or cop.shape[0] != 2 or cop.shape[1] != 2:
        raise ValueError("scratch must match q and cop be (2, 2)")
    m, d = _views(mbuf, dbuf, q)
    if f < 0 or f >= m.fbody.shape[0]:
        raise ValueError("contact frame index out of range")
    r = int(d.root[0])
    Tb, pc, bh, bI, Tf = d.Tb, d.pc, d.bh, d.bI, d.Tf
    _poses(q, r, m.jtype, m.com, m.order, m.pred, m.succ, m.sign, m.pre, m.post, m.rootb, m.rootT, Tb, d.Tax, d.S,
           pc)
    _body_inertias(m.mass, m.inertia, Tb, pc, bh, bI)
    _mul(Tb[int(m.fbody[f])], m.fpose[f], Tf[f])
    W, n_p = d.f6[0], d.f6[1]
    _ground_wrench(r, m.mass, m.order, m.pred, m.succ, m.rootb, d.S, bh, bI, qd, qdd, g, d.V, d.Ac, d.F, d.w6,
                   scratch, W)
    p = Tf[f]
    w = zmp_share(W, p[0, 3], p[1, 3], ramp)
    _other_wrench(W, p, w, n_p)
    # the root sole: W less the other's (its moment moved back to the root's origin)
    c0, c1, c2 = _cross(p[0, 3], p[1, 3], p[2, 3], n_p[0], n_p[1], n_p[2])
    fz = W[2] - n_p[2]
    ok = fz >= min_force
    cop[0, 0] = -(W[4] - n_p[4] - c1) / fz if ok else np.nan
    cop[0, 1] = (W[3] - n_p[3] - c0) / fz if ok else np.nan
    # the other sole, in its own axes (R its rotation in the root's)
    fz = p[0, 2] * n_p[0] + p[1, 2] * n_p[1] + p[2, 2] * n_p[2]
    nx = p[0, 0] * n_p[3] + p[1, 0] * n_p[4] + p[2, 0] * n_p[5]
    ny = p[0, 1] * n_p[3] + p[1, 1] * n_p[4] + p[2, 1] * n_p[5]
    ok = fz >= min_force
    cop[1, 0] = -ny / fz if ok else np.nan
    cop[1, 1] = nx / fz if ok else np.nan
    return w
