"""Geometry of a serial MDH chain: frames, Jacobians, centre of gravity.

Numba kernels over preallocated arrays (docs/conventions.md). Joint j (0-based) moves
frame j+1; body b (0-based) is attached to frame b+1 and moved by joints 0..b.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from models.chain.model import PRISMATIC, check_buffers, data_views, model_views


@njit(cache=True, inline="always")
def cross_into(a0, a1, a2, b0, b1, b2, out, col):
    """out[:, col] (rows 0..2) = a x b."""
    out[0, col] = a1 * b2 - a2 * b1
    out[1, col] = a2 * b0 - a0 * b2
    out[2, col] = a0 * b1 - a1 * b0


@njit(cache=True)
def mdh_multiply(Tprev, alpha, a, theta, d, Tout):
    """Tout = Tprev . T(alpha, a, theta, d), with T of thesis eq. 4
    (RotX(alpha) TransX(a) RotZ(theta) TransZ(d), eq. 1-3)."""
    ca, sa = np.cos(alpha), np.sin(alpha)
    ct, st = np.cos(theta), np.sin(theta)
    # columns of the local transform (eq. 4)
    for r in range(3):
        x0, x1, x2 = Tprev[r, 0], Tprev[r, 1], Tprev[r, 2]
        c1 = x1 * ca + x2 * sa          # Tprev[r,:3] . (RotX(alpha) e_y)
        c2 = -x1 * sa + x2 * ca         # Tprev[r,:3] . (RotX(alpha) e_z)
        Tout[r, 0] = x0 * ct + c1 * st
        Tout[r, 1] = -x0 * st + c1 * ct
        Tout[r, 2] = c2
        Tout[r, 3] = Tprev[r, 3] + x0 * a + c2 * d
    Tout[3, 0] = 0.0
    Tout[3, 1] = 0.0
    Tout[3, 2] = 0.0
    Tout[3, 3] = 1.0


@njit(cache=True)
def forward_kinematics(mdh, jtype, tool, q, T):
    """Forward geometric model (thesis eq. 1-6): T[i] = base -> frame i for
    i = 0..n (T[0] = identity) and T[n+1] = base -> tool."""
    n = q.shape[0]
    for r in range(4):
        for c in range(4):
            T[0, r, c] = 1.0 if r == c else 0.0
    for i in range(n):
        alpha, a, theta, d = mdh[i, 0], mdh[i, 1], mdh[i, 2], mdh[i, 3]
        if jtype[i] == PRISMATIC:
            d = d + q[i]
        else:
            theta = theta + q[i]
        mdh_multiply(T[i], alpha, a, theta, d, T[i + 1])
    # tool: T[n+1] = T[n] . tool
    for r in range(3):
        for c in range(4):
            s = T[n, r, 3] if c == 3 else 0.0
            for k in range(3):
                s += T[n, r, k] * tool[k, c]
            T[n + 1, r, c] = s
    for c in range(4):
        T[n + 1, 3, c] = 1.0 if c == 3 else 0.0


@njit(cache=True)
def point_jacobian(T, jtype, frame, p, J):
    """Geometric Jacobian (6 x n, rows [v; w], base coordinates) of the point p
    (base coordinates) rigidly attached to frame ``frame`` (0..n+1; n+1 = tool):
    column j is [z_j x (p - o_j); z_j] for a revolute joint, [z_j; 0] for a
    prismatic one, zero for joints that do not move the frame."""
    n = J.shape[1]
    moved = min(frame, n)
    for j in range(n):
        if j >= moved:
            for r in range(6):
                J[r, j] = 0.0
            continue
        Tj = T[j + 1]
        z0, z1, z2 = Tj[0, 2], Tj[1, 2], Tj[2, 2]
        if jtype[j] == PRISMATIC:
            J[0, j], J[1, j], J[2, j] = z0, z1, z2
            J[3, j], J[4, j], J[5, j] = 0.0, 0.0, 0.0
        else:
            cross_into(z0, z1, z2, p[0] - Tj[0, 3], p[1] - Tj[1, 3], p[2] - Tj[2, 3], J, j)
            J[3, j], J[4, j], J[5, j] = z0, z1, z2


@njit(cache=True)
def body_coms(T, com, pc):
    """CoG of each body in base coordinates: pc[b] = o_{b+1} + R_{b+1} com[b]."""
    n = pc.shape[0]
    for b in range(n):
        Tb = T[b + 1]
        for r in range(3):
            pc[b, r] = Tb[r, 3] + Tb[r, 0] * com[b, 0] + Tb[r, 1] * com[b, 1] + Tb[r, 2] * com[b, 2]


@njit(cache=True)
def body_inertias(T, inertia, Iw):
    """Body inertia tensors about their CoG in base axes: Iw = R I R^T."""
    n = Iw.shape[0]
    for b in range(n):
        R = T[b + 1]
        for r in range(3):
            for c in range(3):
                s = 0.0
                for k in range(3):
                    rk = R[r, k]
                    for m in range(3):
                        s += rk * inertia[b, k, m] * R[c, m]
                Iw[b, r, c] = s


@njit(cache=True)
def com_jacobians(T, jtype, pc, Jb):
    """CoG Jacobian of every body (thesis eq. 9-11 for the leg): Jb[b] = J(pc[b])."""
    n = pc.shape[0]
    for b in range(n):
        point_jacobian(T, jtype, b + 1, pc[b], Jb[b])


@njit(cache=True)
def center_of_mass(mass, pc, Jb, com, Jcom):
    """CoG of the chain and its 3 x n Jacobian (thesis eq. 37-41 in general form)."""
    n = pc.shape[0]
    total = 0.0
    for b in range(n):
        total += mass[b]
    for r in range(3):
        s = 0.0
        for b in range(n):
            s += mass[b] * pc[b, r]
        com[r] = s / total
        for j in range(n):
            s = 0.0
            for b in range(j, n):
                s += mass[b] * Jb[b, r, j]
            Jcom[r, j] = s / total


@njit(cache=True)
def kinematics(mbuf, dbuf, q):
    """Frames, tool Jacobian, body CoGs and their Jacobians, chain CoG, in one call."""
    check_buffers(mbuf, dbuf, q)
    mv = model_views(mbuf)
    mdh, jtype, mass, com_l, tool = mv.mdh, mv.jtype, mv.mass, mv.com, mv.tool
    n = q.shape[0]
    dv = data_views(dbuf, n)
    T, pc, J, Jb, com, Jcom = dv.T, dv.pc, dv.J, dv.Jb, dv.com, dv.Jcom
    forward_kinematics(mdh, jtype, tool, q, T)
    body_coms(T, com_l, pc)
    com_jacobians(T, jtype, pc, Jb)
    point_jacobian(T, jtype, n + 1, T[n + 1, :3, 3], J)
    center_of_mass(mass, pc, Jb, com, Jcom)

