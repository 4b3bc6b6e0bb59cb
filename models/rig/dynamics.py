"""Inverse dynamics of the Stewart-Gough platform by virtual work (Staicu 2008, eq. 19-20).

Each body k of a leg carries the wrench of its inertia and weight about its centre of
mass, F_k = m_k (a_k - g), M_k = J_k eps_k + omega_k x J_k omega_k (eq. 20, J_k in frame 0).
Accumulated from the platform end of the leg towards the base (eq. 20: F_k = F_k0 +
F_k+1, M_k = M_k0 + M_k+1 + r x F_k+1), their projections on the joint axes are the
leg's generalised forces Q_j (the prismatic joint: the force along n; a revolute: the
moment about its axis). The virtual work of every body for a virtual platform twist V,
equal to the actuators' f . S V, gives (eq. 19, for the six unit virtual actuator rates
at once)

    S^T f = W_platform + sum_j J_j^-T Q_j,

where J_j maps leg j's joint rates to the twist of its platform point (eq. 15) and
J_j^-T Q_j is carried from P_j to G. Nothing is allocated; every buffer is the Data's.
"""
from __future__ import annotations

from numba import njit

from models.rig.stewart import (G_SINGULAR_TOL, OK, SINGULAR, _cross, _dot, _solve3, data_views, inverse_kinematics,
                      model_views, solve6)


@njit(cache=True, inline="always")
def _inertia_times(R, I, v, out):
    """out = R I R^T v (a body inertia I given in the body's axes R, applied in frame 0)."""
    b0 = R[0, 0] * v[0] + R[1, 0] * v[1] + R[2, 0] * v[2]
    b1 = R[0, 1] * v[0] + R[1, 1] * v[1] + R[2, 1] * v[2]
    b2 = R[0, 2] * v[0] + R[1, 2] * v[1] + R[2, 2] * v[2]
    i0 = I[0, 0] * b0 + I[0, 1] * b1 + I[0, 2] * b2
    i1 = I[1, 0] * b0 + I[1, 1] * b1 + I[1, 2] * b2
    i2 = I[2, 0] * b0 + I[2, 1] * b1 + I[2, 2] * b2
    for r in range(3):
        out[r] = R[r, 0] * i0 + R[r, 1] * i1 + R[r, 2] * i2


@njit(cache=True)
def body_wrench(m, I, R, w, dw, a, g, F, M, t):
    """Inertia-and-weight wrench of one body about its centre of mass (Staicu 2008,
    eq. 20): F = m (a - g), M = J eps + omega x J omega; ``t`` is a [2, 3] scratch."""
    for i in range(3):
        F[i] = m * (a[i] - g[i])
    _inertia_times(R, I, dw, M)
    _inertia_times(R, I, w, t[0])
    _cross(w, t[0], t[1])
    for i in range(3):
        M[i] += t[1][i]


@njit(cache=True)
def inverse_dynamics(mbuf, dbuf, x, xd, xdd):
    """Actuator forces f_32 (N, positive extending the leg) for a platform motion:
    inverse kinematics (eq. 1-18), then virtual work (eq. 19-20); the forces land in the
    Data's ``force``. Returns a status (OK, or that of inverse kinematics, or SINGULAR
    where S cannot be inverted)."""
    status = inverse_kinematics(mbuf, dbuf, x, xd, xdd)
    if status != OK:
        return status
    mv = model_views(mbuf)
    base, geo, mass, inertia, gravity = mv.base, mv.geo, mv.mass, mv.inertia, mv.gravity
    dv = data_views(dbuf)
    R, w, dw, c, ac, axes, P, S, Rp, wp = dv.R, dv.w, dv.dw, dv.c, dv.ac, dv.axes, dv.P, dv.S, dv.Rp, dv.wp
    aG, dwp, force, wrench, lu, rhs, tmp = dv.aG, dv.dwp, dv.force, dv.wrench, dv.lu, dv.rhs, dv.tmp
    F, M, Facc, Macc, rel, yv, yw, r = tmp[0], tmp[1], tmp[2], tmp[3], tmp[4], tmp[5], tmp[6], tmp[7]
    ed1, ed2, rho = tmp[8], tmp[9], tmp[10]
    scratch = tmp[11:13]
    # the platform's own wrench about G
    body_wrench(mass[5], inertia[5], Rp, wp, dwp, aG, gravity, F, M, scratch)
    for i in range(3):
        wrench[i] = F[i]
        wrench[3 + i] = M[i]
    for j in range(6):
        n, e1, e2, e4, e5, e6 = axes[j, 2], axes[j, 0], axes[j, 1], axes[j, 3], axes[j, 4], axes[j, 5]
        # bodies 5 and 4 sit at P: accumulate force and moment about P (eq. 20)
        for i in range(3):
            Facc[i] = 0.0
            Macc[i] = 0.0
        for k in (4, 3):
            body_wrench(mass[k], inertia[k], R[j, k], w[j, k], dw[j, k], ac[j, k], gravity, F, M, scratch)
            for i in range(3):
                Facc[i] += F[i]
                Macc[i] += M[i]
            if k == 4:
                r[1] = _dot(e5, Macc)           # Q5
        r[0] = _dot(e4, Macc)                   # Q4
        r[2] = 0.0                              # Q6: no body between the last joint and the platform
        # J_j^-T Q, rotational block: e4 . yw = Q4, e5 . yw = Q5, e6 . yw = Q6
        _solve3(e4, e5, e6, r, yw, True)
        # moments about B: bodies 4-5 (at P), then the rod, the cylinder, the cross
        for i in range(3):
            rel[i] = P[j, i] - base[j, i]
        _cross(rel, Facc, F)
        for i in range(3):
            Macc[i] += F[i]
        for k in (2, 1, 0):
            body_wrench(mass[k], inertia[k], R[j, k], w[j, k], dw[j, k], ac[j, k], gravity, F, M, scratch)
            for i in range(3):
                Facc[i] += F[i]
                rel[i] = c[j, k, i] - base[j, i]
            _cross(rel, F, yv)
            for i in range(3):
                Macc[i] += M[i] + yv[i]
            if k == 2:
                r[2] = _dot(n, Facc)            # Q3, the prismatic joint: bodies 3-5
            elif k == 1:
                r[1] = _dot(e2, Macc)           # Q2: bodies 2-5
        r[0] = _dot(e1, Macc)                   # Q1: bodies 1-5
        # J_j^-T Q, translational block: (e_k x d) . yv = Q_k - e_k . yw (k = 1, 2), n . yv = Q3
        r[0] -= _dot(e1, yw)
        r[1] -= _dot(e2, yw)
        for i in range(3):
            rel[i] = P[j, i] - base[j, i]
        _cross(e1, rel, ed1)
        _cross(e2, rel, ed2)
        _solve3(ed1, ed2, n, r, yv, True)
        # carry the equivalent wrench from P_j to G
        for i in range(3):
            rho[i] = P[j, i] - x[i]
        _cross(rho, yv, F)
        for i in range(3):
            wrench[i] += yv[i]
            wrench[3 + i] += yw[i] + F[i]
    for a in range(6):
        rhs[a] = wrench[a]
        for b in range(6):
            lu[a, b] = S[a, b]
    if solve6(lu, rhs, True) < geo[G_SINGULAR_TOL]:
        return SINGULAR
    for a in range(6):
        force[a] = rhs[a]
    return OK
