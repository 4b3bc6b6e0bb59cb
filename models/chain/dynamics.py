"""Dynamics of a serial MDH chain: A(q), C(q, qd), G(q), recursive Newton-Euler.

Notation of the thesis (docs/conventions.md): A(q) qdd + C(q, qd) qd + G(q) = tau.
C is built from the Christoffel symbols of A (Lagrange, Lammari 2012 eq. IV.2 with the
sign erratum of docs/errata.md; Liégeois & Aldon 1980 eq. 3-18 corrected), so Adot - 2C is
skew-symmetric. dA/dq_k is computed analytically from the body Jacobians.
"""
from __future__ import annotations

import numpy as np
from numba import carray, njit

from models.chain.kinematics import body_inertias, forward_kinematics, kinematics
from models.chain.model import PRISMATIC, data_views, model_views
from models.common.layout import at as _at
from models.friction import coulomb_sign


@njit(cache=True)
def inertia_matrix(mass, Iw, Jb, armature, A):
    """A(q) = sum_b m_b Jv_b^T Jv_b + Jw_b^T Iw_b Jw_b, plus the rotor inertia
    (armature) on the diagonal (Lammari 2012, eq. IV.10, Ia_j)."""
    n = A.shape[0]
    for i in range(n):
        for j in range(i, n):
            s = 0.0
            for b in range(j, n):       # bodies moved by both joints i <= j
                Jv = Jb[b]
                s += mass[b] * (Jv[0, i] * Jv[0, j] + Jv[1, i] * Jv[1, j] + Jv[2, i] * Jv[2, j])
                I = Iw[b]
                for r in range(3):
                    s += Jv[3 + r, i] * (I[r, 0] * Jv[3, j] + I[r, 1] * Jv[4, j] + I[r, 2] * Jv[5, j])
            A[i, j] = s
            A[j, i] = s
        A[i, i] += armature[i]


@njit(cache=True)
def inertia_derivatives(T, jtype, mass, pc, Iw, Jb, dA, work):
    """dA[k] = dA/dq_k, analytically, body by body (A_b = m Jv^T Jv + Jw^T Iw Jw).

    A joint k moves bodies b >= k rigidly: a revolute one turns every vector
    attached to them at rate z_k (Jacobian columns j >= k: d col = z_k x col;
    dIw = [z_k]x Iw - Iw [z_k]x), a prismatic one only translates points. For
    columns j < k only the CoG moves: d(z_j x (p - o_j)) = z_j x u with
    u = z_k x (p - o_k) (revolute k) or z_k (prismatic k). The rigid motion leaves
    A_ij unchanged when i, j >= k, so only pairs with min(i, j) < k are computed.
    """
    n = dA.shape[0]
    dJv = carray(_at(work, 0), (3, n))           # scratch from Data: no allocation
    IJ = carray(_at(work, 3 * n), (3, n))        # Iw Jw
    zIJ = carray(_at(work, 6 * n), (3, n))       # z_k x (Iw Jw)
    for k in range(n):
        for i in range(n):
            for j in range(n):
                dA[k, i, j] = 0.0
    for b in range(1, n):
        J = Jb[b]
        I = Iw[b]
        p = pc[b]
        m = mass[b]
        for j in range(b + 1):
            for r in range(3):
                IJ[r, j] = I[r, 0] * J[3, j] + I[r, 1] * J[4, j] + I[r, 2] * J[5, j]
        for k in range(1, b + 1):
            Tk = T[k + 1]
            z0, z1, z2 = Tk[0, 2], Tk[1, 2], Tk[2, 2]
            krev = jtype[k] != PRISMATIC
            if krev:
                r0, r1, r2 = p[0] - Tk[0, 3], p[1] - Tk[1, 3], p[2] - Tk[2, 3]
                u0, u1, u2 = z1 * r2 - z2 * r1, z2 * r0 - z0 * r2, z0 * r1 - z1 * r0
            else:
                u0, u1, u2 = z0, z1, z2
            for j in range(b + 1):
                if j < k:                            # only the CoG moves
                    if jtype[j] != PRISMATIC:
                        a0, a1, a2 = J[3, j], J[4, j], J[5, j]
                        dJv[0, j] = a1 * u2 - a2 * u1
                        dJv[1, j] = a2 * u0 - a0 * u2
                        dJv[2, j] = a0 * u1 - a1 * u0
                    else:
                        dJv[0, j], dJv[1, j], dJv[2, j] = 0.0, 0.0, 0.0
                elif krev:                           # the whole column turns
                    a0, a1, a2 = J[0, j], J[1, j], J[2, j]
                    dJv[0, j] = z1 * a2 - z2 * a1
                    dJv[1, j] = z2 * a0 - z0 * a2
                    dJv[2, j] = z0 * a1 - z1 * a0
                else:
                    dJv[0, j], dJv[1, j], dJv[2, j] = 0.0, 0.0, 0.0
                if krev:
                    a0, a1, a2 = IJ[0, j], IJ[1, j], IJ[2, j]
                    zIJ[0, j] = z1 * a2 - z2 * a1
                    zIJ[1, j] = z2 * a0 - z0 * a2
                    zIJ[2, j] = z0 * a1 - z1 * a0
            for i in range(k):
                for j in range(i, b + 1):
                    s = m * (dJv[0, i] * J[0, j] + dJv[1, i] * J[1, j] + dJv[2, i] * J[2, j]
                             + J[0, i] * dJv[0, j] + J[1, i] * dJv[1, j] + J[2, i] * dJv[2, j])
                    if krev:
                        # rotational part: Jw_i . (z x IJ_j) - IJ_i . (z x Jw_j) + IJ_i . dJw_j,
                        # where dJw_j = z x Jw_j for j >= k and 0 for j < k
                        s += J[3, i] * zIJ[0, j] + J[4, i] * zIJ[1, j] + J[5, i] * zIJ[2, j]
                        if j < k:
                            w0, w1, w2 = J[3, j], J[4, j], J[5, j]
                            s -= (IJ[0, i] * (z1 * w2 - z2 * w1) + IJ[1, i] * (z2 * w0 - z0 * w2)
                                  + IJ[2, i] * (z0 * w1 - z1 * w0))
                    dA[k, i, j] += s
                    if i != j:
                        dA[k, j, i] += s


@njit(cache=True)
def christoffel_coriolis(dA, qd, C):
    """C_ij = sum_k c_ijk qd_k, c_ijk = 1/2 (dA_ij/dq_k + dA_ik/dq_j - dA_jk/dq_i)
    (Liégeois & Aldon 1980, eq. 3-18 with its factor-2 erratum fixed, docs/errata.md)."""
    n = C.shape[0]
    for i in range(n):
        for j in range(n):
            s = 0.0
            for k in range(n):
                s += (dA[k, i, j] + dA[j, i, k] - dA[i, j, k]) * qd[k]
            C[i, j] = 0.5 * s


@njit(cache=True)
def gravity_vector(mass, Jb, g, G):
    """G(q) = dU/dq = -sum_b m_b Jv_b^T g."""
    n = G.shape[0]
    for j in range(n):
        s = 0.0
        for b in range(j, n):
            s -= mass[b] * (Jb[b, 0, j] * g[0] + Jb[b, 1, j] * g[1] + Jb[b, 2, j] * g[2])
        G[j] = s


@njit(cache=True)
def joint_friction(viscous, coulomb, qd, vs, tau_f):
    """Fv qd + Fs sign(qd) (Lammari 2012, eq. IV.10); its sign smoothed over ``vs`` > 0 rad/s
    (models.friction.coulomb_sign: a feed-forward's), exact for vs = 0 (a plant's)."""
    for j in range(qd.shape[0]):
        tau_f[j] = viscous[j] * qd[j] + coulomb[j] * coulomb_sign(qd[j], vs)


@njit(cache=True)
def update(mbuf, dbuf, q, qd):
    """Everything a control cycle needs in one pass: frames, tool Jacobian, body
    CoGs and Jacobians, chain CoG and its Jacobian, A, dA/dq, C, G, h = C qd + G,
    joint friction. G uses the gravity slot of Data (the Model's level-floor vector
    unless the caller set a tilted one). Allocation-free: every workspace lives in
    the Data buffer."""
    kinematics(mbuf, dbuf, q)
    mv = model_views(mbuf)
    jtype, mass, inertia, arm, fv, fs = mv.jtype, mv.mass, mv.inertia, mv.armature, mv.viscous, mv.coulomb
    n = q.shape[0]
    dv = data_views(dbuf, n)
    T, pc, Iw, Jb, A, dA, C, G, h, tau_f = dv.T, dv.pc, dv.Iw, dv.Jb, dv.A, dv.dA, dv.C, dv.G, dv.h, dv.tau_f
    work, g = dv.work, dv.gravity
    body_inertias(T, inertia, Iw)
    inertia_matrix(mass, Iw, Jb, arm, A)
    inertia_derivatives(T, jtype, mass, pc, Iw, Jb, dA, work)
    christoffel_coriolis(dA, qd, C)
    gravity_vector(mass, Jb, g, G)
    for i in range(n):
        s = G[i]
        for j in range(n):
            s += C[i, j] * qd[j]
        h[i] = s
    joint_friction(fv, fs, qd, 0.0, tau_f)


@njit(cache=True, inline="always")
def _cross_add(a, b, out, scale):
    """out += scale * (a x b) for 3-vectors."""
    out[0] += scale * (a[1] * b[2] - a[2] * b[1])
    out[1] += scale * (a[2] * b[0] - a[0] * b[2])
    out[2] += scale * (a[0] * b[1] - a[1] * b[0])


def rnea_work_size(n: int) -> int:
    """Size of the scratch array :func:`rnea` needs."""
    return 9 * n + 18


@njit(cache=True)
def rnea(mbuf, q, qd, qdd, g, T, work, tau):
    """Inverse dynamics by recursive Newton-Euler (Lammari 2012, eq. IV.7-IV.10), all
    vectors in base coordinates: forward recursion of w, wdot, vdot (vdot_0 = -g),
    body wrenches F = m a_G, N = I wdot + w x (I w), backward recursion of the
    joint wrenches, projection on the joint axes plus rotor inertia Ia qdd and
    friction Fv qd + Fs sign(qd). T (n+2, 4, 4) and work (rnea_work_size(n)) are
    preallocated scratch: nothing is allocated. g (3,): gravity in base axes."""
    mv = model_views(mbuf)
    mdh, jtype, mass, com_l, inertia, tool = mv.mdh, mv.jtype, mv.mass, mv.com, mv.inertia, mv.tool
    arm, fv, fs = mv.armature, mv.viscous, mv.coulomb
    n = q.shape[0]
    forward_kinematics(mdh, jtype, tool, q, T)
    F = work[:3 * n].reshape((n, 3))
    N = work[3 * n:6 * n].reshape((n, 3))
    S = work[6 * n:9 * n].reshape((n, 3))
    w = work[9 * n:9 * n + 3]
    wd = work[9 * n + 3:9 * n + 6]
    vd = work[9 * n + 6:9 * n + 9]
    t1 = work[9 * n + 9:9 * n + 12]
    t2 = work[9 * n + 12:9 * n + 15]
    t3 = work[9 * n + 15:9 * n + 18]
    for r in range(3):
        w[r] = 0.0
        wd[r] = 0.0
        vd[r] = -g[r]
    for j in range(n):                                    # forward recursion (IV.7)
        Tj = T[j + 1]
        z = Tj[:3, 2]
        for r in range(3):
            t1[r] = Tj[r, 3] - T[j, r, 3]                 # P = o_j - o_{j-1}
            t2[r] = 0.0
        _cross_add(w, t1, t2, 1.0)                        # w x P
        _cross_add(wd, t1, vd, 1.0)
        _cross_add(w, t2, vd, 1.0)
        if jtype[j] == PRISMATIC:
            for r in range(3):
                vd[r] += qdd[j] * z[r]
            _cross_add(w, z, vd, 2.0 * qd[j])
        else:
            for r in range(3):
                wd[r] += qdd[j] * z[r]
            _cross_add(w, z, wd, qd[j])
            for r in range(3):
                w[r] += qd[j] * z[r]
        s = S[j]
        for r in range(3):                                # S_j = R_j com_j
            s[r] = Tj[r, 0] * com_l[j, 0] + Tj[r, 1] * com_l[j, 1] + Tj[r, 2] * com_l[j, 2]
        for r in range(3):
            t1[r] = 0.0
            t3[r] = vd[r]
        _cross_add(w, s, t1, 1.0)                         # w x S
        _cross_add(wd, s, t3, 1.0)
        _cross_add(w, t1, t3, 1.0)                        # a_G
        # body inertia in base axes applied to w and wd: I = R I_j R^T
        for r in range(3):
            t1[r] = Tj[0, r] * w[0] + Tj[1, r] * w[1] + Tj[2, r] * w[2]      # R^T w
            t2[r] = Tj[0, r] * wd[0] + Tj[1, r] * wd[1] + Tj[2, r] * wd[2]   # R^T wd
        for r in range(3):
            F[j, r] = mass[j] * t3[r]                     # (IV.8)
        Iw0 = Iw1 = Iw2 = 0.0
        for k in range(3):
            a = inertia[j, k, 0] * t1[0] + inertia[j, k, 1] * t1[1] + inertia[j, k, 2] * t1[2]
            b = inertia[j, k, 0] * t2[0] + inertia[j, k, 1] * t2[1] + inertia[j, k, 2] * t2[2]
            for r in range(3):
                N[j, r] = (N[j, r] if k else 0.0) + Tj[r, k] * b
            Iw0 += Tj[0, k] * a
            Iw1 += Tj[1, k] * a
            Iw2 += Tj[2, k] * a
        t1[0], t1[1], t1[2] = Iw0, Iw1, Iw2
        _cross_add(w, t1, N[j], 1.0)
    f = t1
    m = t2
    for r in range(3):
        f[r] = 0.0
        m[r] = 0.0
    for j in range(n - 1, -1, -1):                        # backward recursion (IV.9)
        if j + 1 < n:
            for r in range(3):
                t3[r] = T[j + 2, r, 3] - T[j + 1, r, 3]
            _cross_add(t3, f, m, 1.0)
        for r in range(3):
            m[r] += N[j, r]
        _cross_add(S[j], F[j], m, 1.0)
        for r in range(3):
            f[r] += F[j, r]
        z = T[j + 1, :3, 2]
        if jtype[j] == PRISMATIC:
            t = f[0] * z[0] + f[1] * z[1] + f[2] * z[2]
        else:
            t = m[0] * z[0] + m[1] * z[1] + m[2] * z[2]
        tau[j] = t + fs[j] * np.sign(qd[j]) + fv[j] * qd[j] + arm[j] * qdd[j]   # (IV.10)
