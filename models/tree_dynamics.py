"""Kernels of a kinematic tree (:mod:`models.tree`): frames, Jacobians, CoGs,
A(q) by composite rigid bodies, G(q), C(q, qd) in Christoffel form, C qd + G
and inverse dynamics by recursive Newton-Euler, for the rooting selected in
the Data.

All vectors are in the base frame of the rooting in use. A joint's motion axis
S_j = (v, w) is the spatial velocity (at the base origin) that a unit rate of
the joint gives the bodies it moves: w = sign z_j, v = o_j x w for a revolute joint, v = sign z_j,
w = 0 for a prismatic one (z_j, o_j of its axis frame). The velocity of a point p
carried by the joint is then v + w x p (Khalil & Dombre, geometric Jacobian;
Featherstone 2008, spatial algebra in one fixed frame). Allocation-free: every
workspace lives in the Data buffer; ``@njit(cache=True)``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .model import PRISMATIC
from .tree import data_layout, model_layout


@njit(cache=True, inline="always")
def _cross(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(cache=True)
def _mul(A, B, out):
    """out = A . B for rigid 4x4 transforms (out must not alias A or B)."""
    for r in range(3):
        for c in range(4):
            s = A[r, 3] if c == 3 else 0.0
            for k in range(3):
                s += A[r, k] * B[k, c]
            out[r, c] = s
    for c in range(4):
        out[3, c] = 1.0 if c == 3 else 0.0


@njit(cache=True)
def _mul_joint(A, revolute, x, out):
    """out = A . RotZ(x) (revolute) or A . TransZ(x) (prismatic)."""
    for r in range(4):
        for c in range(4):
            out[r, c] = A[r, c]
    if revolute:
        cx, sx = np.cos(x), np.sin(x)
        for r in range(3):
            a0, a1 = A[r, 0], A[r, 1]
            out[r, 0] = a0 * cx + a1 * sx
            out[r, 1] = -a0 * sx + a1 * cx
    else:
        for r in range(3):
            out[r, 3] = A[r, 3] + A[r, 2] * x


@njit(cache=True)
def check(mbuf, dbuf, q):
    """Kernel views trust the buffer sizes: refuse mismatched buffers outright."""
    if mbuf.shape[0] < 5 or int(mbuf[0]) != q.shape[0] or model_layout(mbuf)[1] != mbuf.shape[0]:
        raise ValueError("tree model buffer does not match the joint vector")
    if data_layout(mbuf, dbuf)[1] != dbuf.shape[0]:
        raise ValueError("tree data buffer does not match the model")


@njit(cache=True)
def check_inputs(q, qd, g):
    if qd.shape[0] != q.shape[0] or g.shape[0] != 3:
        raise ValueError("qd must match q and gravity must have 3 components")


@njit(cache=True)
def set_root(mbuf, dbuf, r):
    """Select rooting r (0 .. nr - 1) for the next update: no allocation, no
    recomputation; the results in the Data are those of the previous rooting
    until the next :func:`update` / :func:`kinematics`."""
    if r < 0 or r >= int(mbuf[4]):
        raise ValueError("rooting index out of range")
    dbuf[0] = r


@njit(cache=True)
def forward_kinematics(mbuf, dbuf, q):
    """Body poses Tb, axis frames Tax, motion axes S, body CoGs pc and frame poses
    Tf, root outwards (Khalil & Dombre, tree MDH)."""
    (jtype, arm, fv, fs, qmin, qmax, vmax, tmax, mass, com, inertia, fbody, fpose, gmass, grav,
     order, pred, succ, sign, pre, post, rootb, rootT, support) = model_layout(mbuf)[0]
    (root, Tb, Tax, Tf, S, pc, Jf, cg, Jcom, bh, bI, cm, ch, cI, A, G, h, tau_f,
     V, Ac, F, tmp, w6, Sd, Bc, C, f6) = data_layout(mbuf, dbuf)[0]
    r = int(root[0])
    b0 = int(rootb[r])
    for i in range(4):
        for c in range(4):
            Tb[b0, i, c] = rootT[r, i, c]
    for k in range(q.shape[0]):
        j = int(order[r, k])
        p, s, sg = int(pred[r, j]), int(succ[r, j]), sign[r, j]
        _mul(Tb[p], pre[r, j], Tax[j])
        rev = jtype[j] != PRISMATIC
        _mul_joint(Tax[j], rev, sg * q[j], tmp)
        _mul(tmp, post[r, j], Tb[s])
        z0, z1, z2 = sg * Tax[j, 0, 2], sg * Tax[j, 1, 2], sg * Tax[j, 2, 2]
        if rev:
            v0, v1, v2 = _cross(Tax[j, 0, 3], Tax[j, 1, 3], Tax[j, 2, 3], z0, z1, z2)
            S[j, 0], S[j, 1], S[j, 2], S[j, 3], S[j, 4], S[j, 5] = v0, v1, v2, z0, z1, z2
        else:
            S[j, 0], S[j, 1], S[j, 2], S[j, 3], S[j, 4], S[j, 5] = z0, z1, z2, 0.0, 0.0, 0.0
    for b in range(mass.shape[0]):
        for i in range(3):
            pc[b, i] = Tb[b, i, 3] + Tb[b, i, 0] * com[b, 0] + Tb[b, i, 1] * com[b, 1] + Tb[b, i, 2] * com[b, 2]
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


@njit(cache=True)
def kinematics(mbuf, dbuf, q):
    """Forward kinematics, the Jacobian of every operational frame's origin, the
    CoG of the robot and of each group with their Jacobians (sum of m_b J(pc_b)
    over the group's bodies, divided by its mass)."""
    check(mbuf, dbuf, q)
    forward_kinematics(mbuf, dbuf, q)
    (jtype, arm, fv, fs, qmin, qmax, vmax, tmax, mass, com, inertia, fbody, fpose, gmass, grav,
     order, pred, succ, sign, pre, post, rootb, rootT, support) = model_layout(mbuf)[0]
    (root, Tb, Tax, Tf, S, pc, Jf, cg, Jcom, bh, bI, cm, ch, cI, A, G, h, tau_f,
     V, Ac, F, tmp, w6, Sd, Bc, C, f6) = data_layout(mbuf, dbuf)[0]
    r = int(root[0])
    n = q.shape[0]
    for f in range(fbody.shape[0]):
        point_jacobian(S, support[r, int(fbody[f])], Tf[f, :3, 3], Jf[f])
    for g in range(gmass.shape[0]):
        total = 0.0
        for i in range(3):
            cg[g, i] = 0.0
            for j in range(n):
                Jcom[g, i, j] = 0.0
        for b in range(mass.shape[0]):
            m = gmass[g, b]
            if m == 0.0:
                continue
            total += m
            for i in range(3):
                cg[g, i] += m * pc[b, i]
            for j in range(n):
                if support[r, b, j] != 0.0:
                    c0, c1, c2 = _cross(S[j, 3], S[j, 4], S[j, 5], pc[b, 0], pc[b, 1], pc[b, 2])
                    Jcom[g, 0, j] += m * (S[j, 0] + c0)
                    Jcom[g, 1, j] += m * (S[j, 1] + c1)
                    Jcom[g, 2, j] += m * (S[j, 2] + c2)
        for i in range(3):
            cg[g, i] /= total
            for j in range(n):
                Jcom[g, i, j] /= total


@njit(cache=True)
def _body_inertias(mass, inertia, Tb, pc, bh, bI):
    """First moment m pc and inertia about the base origin of every body:
    I_O = R I R^T + m (|c|^2 1 - c c^T) (Huygens-Steiner)."""
    for b in range(mass.shape[0]):
        m = mass[b]
        R = Tb[b]
        c = pc[b]
        cc = c[0] * c[0] + c[1] * c[1] + c[2] * c[2]
        for i in range(3):
            bh[b, i] = m * c[i]
            for k in range(3):
                s = 0.0
                for u in range(3):
                    for w in range(3):
                        s += R[i, u] * inertia[b, u, w] * R[k, w]
                bI[b, i, k] = s + m * ((cc if i == k else 0.0) - c[i] * c[k])


@njit(cache=True, inline="always")
def _apply(m, hv, I, v, w, out):
    """out = (m v - h x w, I w + h x v): a spatial inertia (mass m, first moment h,
    inertia I about the origin) applied to the spatial motion (v, w)."""
    a0, a1, a2 = _cross(hv[0], hv[1], hv[2], w[0], w[1], w[2])
    b0, b1, b2 = _cross(hv[0], hv[1], hv[2], v[0], v[1], v[2])
    out[0], out[1], out[2] = m * v[0] - a0, m * v[1] - a1, m * v[2] - a2
    for i in range(3):
        out[3 + i] = I[i, 0] * w[0] + I[i, 1] * w[1] + I[i, 2] * w[2]
    out[3] += b0
    out[4] += b1
    out[5] += b2


@njit(cache=True)
def composite_inertia(mbuf, dbuf, q):
    """A(q) by composite rigid bodies (Featherstone 2008, CRBA; Khalil & Dombre):
    each body's subtree inertia Ic, F_j = Ic(succ j) S_j, A_ij = S_i . F_j for the
    joints i that support succ(j), plus the rotor inertia (armature) on the
    diagonal. Leaves the composite mass, first moment and inertia of every
    subtree in cm, ch, cI (G in :func:`update` reads them)."""
    (jtype, arm, fv, fs, qmin, qmax, vmax, tmax, mass, com, inertia, fbody, fpose, gmass, grav,
     order, pred, succ, sign, pre, post, rootb, rootT, support) = model_layout(mbuf)[0]
    (root, Tb, Tax, Tf, S, pc, Jf, cg, Jcom, bh, bI, cm, ch, cI, A, G, h, tau_f,
     V, Ac, F, tmp, w6, Sd, Bc, C, f6) = data_layout(mbuf, dbuf)[0]
    r = int(root[0])
    n = q.shape[0]
    _body_inertias(mass, inertia, Tb, pc, bh, bI)
    for b in range(mass.shape[0]):
        cm[b] = mass[b]
        for i in range(3):
            ch[b, i] = bh[b, i]
            for k in range(3):
                cI[b, i, k] = bI[b, i, k]
    for k in range(n - 1, -1, -1):
        j = int(order[r, k])
        p, s = int(pred[r, j]), int(succ[r, j])
        cm[p] += cm[s]
        for i in range(3):
            ch[p, i] += ch[s, i]
            for c in range(3):
                cI[p, i, c] += cI[s, i, c]
    f = w6
    for j in range(n):
        s = int(succ[r, j])
        _apply(cm[s], ch[s], cI[s], S[j, :3], S[j, 3:], f)
        for i in range(n):
            if support[r, s, i] != 0.0:
                a = 0.0
                for u in range(6):
                    a += S[i, u] * f[u]
                A[i, j] = a
                A[j, i] = a
            elif support[r, int(succ[r, i]), j] == 0.0:
                A[i, j] = 0.0
        A[j, j] += arm[j]


@njit(cache=True)
def rnea_pass(mbuf, dbuf, qd, qdd, with_qdd, g, tau):
    """Recursive Newton-Euler (Featherstone 2008, RNEA; Lammari 2012 eq. IV.7-IV.9)
    over the body poses of the last :func:`forward_kinematics`: V_s = V_p + S qd,
    a_s = a_p + S qdd + V_s x S qd with a_root = (-g, 0), body force
    f = I a + V x* (I V), then tau_j = S_j . f(succ j) while summing the forces
    towards the root; qdd is taken as 0 unless ``with_qdd``. No friction, no
    rotor inertia."""
    (jtype, arm, fv, fs, qmin, qmax, vmax, tmax, mass, com, inertia, fbody, fpose, gmass, grav,
     order, pred, succ, sign, pre, post, rootb, rootT, support) = model_layout(mbuf)[0]
    (root, Tb, Tax, Tf, S, pc, Jf, cg, Jcom, bh, bI, cm, ch, cI, A, G, h, tau_f,
     V, Ac, F, tmp, w6, Sd, Bc, C, f6) = data_layout(mbuf, dbuf)[0]
    r = int(root[0])
    n = qd.shape[0]
    b0 = int(rootb[r])
    for i in range(3):
        V[b0, i] = 0.0
        V[b0, 3 + i] = 0.0
        Ac[b0, i] = -g[i]
        Ac[b0, 3 + i] = 0.0
    for k in range(n):
        j = int(order[r, k])
        p, s = int(pred[r, j]), int(succ[r, j])
        x, xd = qd[j], qdd[j] if with_qdd else 0.0
        for u in range(6):
            V[s, u] = V[p, u] + S[j, u] * x
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
    hv = w6
    for k in range(n):
        s = int(succ[r, int(order[r, k])])
        _apply(mass[s], bh[s], bI[s], V[s, :3], V[s, 3:], hv)
        _apply(mass[s], bh[s], bI[s], Ac[s, :3], Ac[s, 3:], F[s])
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
    eq. IV.10). Rewrites the Data's kinematics."""
    check(mbuf, dbuf, q)
    check_inputs(q, qd, g)
    check_inputs(q, qdd, g)
    if tau.shape[0] != q.shape[0]:
        raise ValueError("tau must match q")
    forward_kinematics(mbuf, dbuf, q)
    (jtype, arm, fv, fs, qmin, qmax, vmax, tmax, mass, com, inertia, fbody, fpose, gmass, grav,
     order, pred, succ, sign, pre, post, rootb, rootT, support) = model_layout(mbuf)[0]
    (root, Tb, Tax, Tf, S, pc, Jf, cg, Jcom, bh, bI, cm, ch, cI, A, G, h, tau_f,
     V, Ac, F, tmp, w6, Sd, Bc, C, f6) = data_layout(mbuf, dbuf)[0]
    _body_inertias(mass, inertia, Tb, pc, bh, bI)
    rnea_pass(mbuf, dbuf, qd, qdd, True, g, tau)
    for j in range(q.shape[0]):
        tau[j] += arm[j] * qdd[j] + fv[j] * qd[j] + fs[j] * np.sign(qd[j])


@njit(cache=True)
def _coriolis_factor(m, hv, I, V, B):
    """B(I, V) = 1/2 (V x* I - I V x + (I V) xbar*) for one body (Echeandia &
    Wensing 2021), where (f xbar*) V = V x* f. With I = [[m 1, -[h]], [[h], I_O]],
    V = (v, w) and I V = (f, n), the blocks reduce to [[0, -[f]], [0, B22]],
    B22 = 1/2 (2 (v.h) 1 - h v^T - v h^T + [w] I_O - I_O [w] - [n])."""
    v0, v1, v2, w0, w1, w2 = V[0], V[1], V[2], V[3], V[4], V[5]
    h0, h1, h2 = hv[0], hv[1], hv[2]
    c0, c1, c2 = _cross(h0, h1, h2, w0, w1, w2)
    f0, f1, f2 = m * v0 - c0, m * v1 - c1, m * v2 - c2
    d0, d1, d2 = _cross(h0, h1, h2, v0, v1, v2)
    n0 = I[0, 0] * w0 + I[0, 1] * w1 + I[0, 2] * w2 + d0
    n1 = I[1, 0] * w0 + I[1, 1] * w1 + I[1, 2] * w2 + d1
    n2 = I[2, 0] * w0 + I[2, 1] * w1 + I[2, 2] * w2 + d2
    for u in range(6):
        for c in range(6):
            B[u, c] = 0.0
    B[0, 4], B[0, 5] = f2, -f1                        # -[f]
    B[1, 3], B[1, 5] = -f2, f0
    B[2, 3], B[2, 4] = f1, -f0
    vh = v0 * h0 + v1 * h1 + v2 * h2
    for i in range(3):
        for k in range(3):
            # ([w] I_O)_ik and (I_O [w])_ik
            wi = ((w1 * I[2, k] - w2 * I[1, k]) if i == 0 else
                  (w2 * I[0, k] - w0 * I[2, k]) if i == 1 else (w0 * I[1, k] - w1 * I[0, k]))
            iw = ((I[i, 1] * w2 - I[i, 2] * w1) if k == 0 else
                  (I[i, 2] * w0 - I[i, 0] * w2) if k == 1 else (I[i, 0] * w1 - I[i, 1] * w0))
            B[3 + i, 3 + k] = 0.5 * (wi - iw - hv[i] * V[k] - V[i] * hv[k]) + (vh if i == k else 0.0)
    B[3, 4] += 0.5 * n2                               # -1/2 [n]
    B[3, 5] -= 0.5 * n1
    B[4, 3] -= 0.5 * n2
    B[4, 5] += 0.5 * n0
    B[5, 3] += 0.5 * n1
    B[5, 4] -= 0.5 * n0


@njit(cache=True)
def coriolis_matrix(mbuf, dbuf, qd):
    """C(q, qd) in Christoffel form (c_ijk = 1/2 (dA_ij/dq_k + dA_ik/dq_j -
    dA_jk/dq_i), so Adot - 2C is skew) by the recursive algorithm of Echeandia &
    Wensing 2021 over the velocities V of :func:`rnea_pass` and the
    composite inertias of :func:`composite_inertia`: Sd_j = V_succ x S_j, composite
    factors Bc, then for each joint j and each joint i supporting it
    C_ij = S_i . (Ic Sd_j + Bc S_j), C_ji = Sd_i . (Ic S_j) + S_i . (Bc^T S_j)."""
    (jtype, arm, fv, fs, qmin, qmax, vmax, tmax, mass, com, inertia, fbody, fpose, gmass, grav,
     order, pred, succ, sign, pre, post, rootb, rootT, support) = model_layout(mbuf)[0]
    (root, Tb, Tax, Tf, S, pc, Jf, cg, Jcom, bh, bI, cm, ch, cI, A, G, h, tau_f,
     V, Ac, F, tmp, w6, Sd, Bc, C, f6) = data_layout(mbuf, dbuf)[0]
    r = int(root[0])
    n = qd.shape[0]
    b0 = int(rootb[r])
    for u in range(6):
        for c in range(6):
            Bc[b0, u, c] = 0.0
    for j in range(n):
        s = int(succ[r, j])
        a0, a1, a2 = _cross(V[s, 3], V[s, 4], V[s, 5], S[j, 0], S[j, 1], S[j, 2])
        b0_, b1_, b2_ = _cross(V[s, 0], V[s, 1], V[s, 2], S[j, 3], S[j, 4], S[j, 5])
        c0, c1, c2 = _cross(V[s, 3], V[s, 4], V[s, 5], S[j, 3], S[j, 4], S[j, 5])
        Sd[j, 0], Sd[j, 1], Sd[j, 2] = a0 + b0_, a1 + b1_, a2 + b2_
        Sd[j, 3], Sd[j, 4], Sd[j, 5] = c0, c1, c2
        _coriolis_factor(mass[s], bh[s], bI[s], V[s], Bc[s])
    for k in range(n - 1, -1, -1):
        j = int(order[r, k])
        p, s = int(pred[r, j]), int(succ[r, j])
        for u in range(6):
            for c in range(6):
                Bc[p, u, c] += Bc[s, u, c]
    f1, f2, f3 = f6[0], f6[1], f6[2]
    for j in range(n):
        s = int(succ[r, j])
        _apply(cm[s], ch[s], cI[s], Sd[j, :3], Sd[j, 3:], f1)
        _apply(cm[s], ch[s], cI[s], S[j, :3], S[j, 3:], f2)
        for u in range(6):
            a = 0.0
            b = 0.0
            for c in range(6):
                a += Bc[s, u, c] * S[j, c]
                b += Bc[s, c, u] * S[j, c]
            f1[u] += a
            f3[u] = b
        for i in range(n):
            if support[r, s, i] != 0.0:
                a = 0.0
                for u in range(6):
                    a += S[i, u] * f1[u]
                C[i, j] = a
                if i != j:
                    a = 0.0
                    for u in range(6):
                        a += Sd[i, u] * f2[u] + S[i, u] * f3[u]
                    C[j, i] = a
            elif support[r, int(succ[r, i]), j] == 0.0:
                C[i, j] = 0.0


@njit(cache=True)
def update(mbuf, dbuf, q, qd, g):
    """Everything a control cycle needs, for the rooting in use and gravity g
    (base frame, so a tilted floor is one argument): frames and their Jacobians,
    CoGs and their Jacobians, A, G, h = C qd + G (by Newton-Euler), C in
    Christoffel form, friction. Allocation-free."""
    check_inputs(q, qd, g)
    kinematics(mbuf, dbuf, q)
    composite_inertia(mbuf, dbuf, q)
    (jtype, arm, fv, fs, qmin, qmax, vmax, tmax, mass, com, inertia, fbody, fpose, gmass, grav,
     order, pred, succ, sign, pre, post, rootb, rootT, support) = model_layout(mbuf)[0]
    (root, Tb, Tax, Tf, S, pc, Jf, cg, Jcom, bh, bI, cm, ch, cI, A, G, h, tau_f,
     V, Ac, F, tmp, w6, Sd, Bc, C, f6) = data_layout(mbuf, dbuf)[0]
    r = int(root[0])
    n = q.shape[0]
    for j in range(n):                        # G_j = -g . (M s_v + s_w x h) of the subtree
        s = int(succ[r, j])
        c0, c1, c2 = _cross(S[j, 3], S[j, 4], S[j, 5], ch[s, 0], ch[s, 1], ch[s, 2])
        G[j] = -(g[0] * (cm[s] * S[j, 0] + c0) + g[1] * (cm[s] * S[j, 1] + c1)
                 + g[2] * (cm[s] * S[j, 2] + c2))
    rnea_pass(mbuf, dbuf, qd, qd, False, g, h)
    coriolis_matrix(mbuf, dbuf, qd)
    for j in range(n):
        tau_f[j] = fv[j] * qd[j] + fs[j] * np.sign(qd[j])
