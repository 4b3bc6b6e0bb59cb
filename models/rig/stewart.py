"""Stewart-Gough 3-3 platform (Staicu 2008): geometry, inverse and forward kinematics.

Each leg j is a serial chain from its base joint B_j to its platform joint P_j: a
universal joint (angles phi1 about e1, phi2 about e2, both through B_j), a prismatic
actuator of displacement lambda along the leg axis n (leg length L = l1 + lambda + l3),
and a spherical joint at P_j taken as three revolutes phi4, phi5, phi6 about e4, e5, e6.
Leg joint vector q_j = (phi1, phi2, lambda, phi4, phi5, phi6), as Staicu's
(phi10, phi21, lambda32, phi43, phi54, phi65).

The platform pose is x = (x, y, z, alpha1, alpha2, alpha3) with the orientation
R = Rx(alpha1) Ry(alpha2) Rz(alpha3) (Staicu 2008, eq. 7: a = a3 a2 a1 maps frame 0 to
the platform, R = a^T). Its twist V = (v_G, omega) and the actuator rates obey
lambda_dot = S V (the rows of S are (n_j, rho_j x n_j), rho_j = G P_j).

Kernels take a flat model buffer and a flat data buffer (as :mod:`models.chain.model`), return
a status code, never raise and never allocate. A status other than ``OK`` leaves the
outputs undefined: callers must not use them.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from numba import njit

from models.common.layout import Field, Layout
from models.rig.config import StewartDescription, load_stewart

OK = 0
OUT_OF_STROKE = 1
SINGULAR = 2
NO_CONVERGENCE = 3
NON_FINITE = 4
STATUS_NAMES = {OK: "ok", OUT_OF_STROKE: "actuator displacement outside its stroke",
                SINGULAR: "singular configuration (the actuators cannot hold the platform there)",
                NO_CONVERGENCE: "no platform pose above the base fits these lengths (Newton's method "
                                "did not converge to one)",
                NON_FINITE: "non-finite input"}

NEWTON_TOL = 1e-11      # m: largest leg-length residual accepted by forward kinematics
NEWTON_ITERS = 30

# Staicu 2008, eq. 4: theta1; a32 = theta1 turns the cylinder's frame 2 (x along the
# leg) into the rod's frame 3 (z along the leg).
THETA1 = np.array([[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])


# base[6,3] B_j in frame 0, plat[6,3] P_j in the platform frame, Rb[6,3,3] universal joint's fixed
# frame (x = e1, z = leg at t = 0), Roff[6,3,3] spherical joint's last frame in the platform frame,
# geo the rig's scalars (:data:`GEOMETRY`), mass[6], inertia[6,3,3] about
# each centre of mass in the body's frame with z along the leg for bodies 1-5, gravity[3]
# geo: leg lengths l1, l3, the cylinder's and the rod's centres of mass c2, c3 along the leg, the
# actuator stroke lambda_min .. lambda_max, singular_tol (forward kinematics and dynamics), and the
# platform radius l4 (the scale of the Jacobian's angular columns)
GEOMETRY = Layout("stewart geometry", [
    Field("l1"), Field("l3"), Field("c2"), Field("c3"), Field("lambda_min"), Field("lambda_max"),
    Field("singular_tol"), Field("l4")])
G_L1, G_L3, G_C2, G_C3 = (GEOMETRY.offset(k) for k in ("l1", "l3", "c2", "c3"))
G_LAMBDA_MIN, G_LAMBDA_MAX = GEOMETRY.offset("lambda_min"), GEOMETRY.offset("lambda_max")
G_SINGULAR_TOL, G_L4 = GEOMETRY.offset("singular_tol"), GEOMETRY.offset("l4")
MODEL = Layout("stewart model", [
    Field("base", (6, 3)), Field("plat", (6, 3)), Field("Rb", (6, 3, 3)), Field("Roff", (6, 3, 3)),
    Field("geo", (GEOMETRY.size(),)), Field("mass", (6,)), Field("inertia", (6, 3, 3)), Field("gravity", (3,))])
# q, qd, qdd [6 legs, 6 joints]; R[6,5,3,3] body orientations (1 cross, 2 cylinder, 3 rod, 4 cross,
# 5 piece); w, dw [6,5,3] their angular velocities and accelerations; c, ac [6,5,3] their centres of
# mass and accelerations; axes[6,6,3] joint axes (e1, e2, n, e4, e5, e6); P[6,3] platform joints;
# S[6,6] actuator Jacobian; Rp[3,3], vG, wp, aG, dwp [3] the platform's motion; force[6] actuator
# forces; wrench[6], lu[6,6], rhs[6], tmp[16,3] scratch
DATA = Layout("stewart data", [
    Field("q", (6, 6)), Field("qd", (6, 6)), Field("qdd", (6, 6)), Field("R", (6, 5, 3, 3)), Field("w", (6, 5, 3)),
    Field("dw", (6, 5, 3)), Field("c", (6, 5, 3)), Field("ac", (6, 5, 3)), Field("axes", (6, 6, 3)),
    Field("P", (6, 3)), Field("S", (6, 6)), Field("Rp", (3, 3)), Field("vG", (3,)), Field("wp", (3,)),
    Field("aG", (3,)), Field("dwp", (3,)), Field("force", (6,)), Field("wrench", (6,)), Field("lu", (6, 6)),
    Field("rhs", (6,)), Field("tmp", (16, 3))])
MODEL_SIZE, DATA_SIZE = MODEL.size(), DATA.size()
_model_views, _data_views = MODEL.kernel_views, DATA.kernel_views


@njit(cache=True)
def model_views(buf):
    """Named views of a model buffer (:data:`MODEL`)."""
    return _model_views(buf)[0]


@njit(cache=True)
def data_views(buf):
    """Named views of a data buffer (:data:`DATA`)."""
    return _data_views(buf)[0]


# --- small allocation-free vector helpers -------------------------------------------------

@njit(cache=True, inline="always")
def _cross(a, b, out):
    x = a[1] * b[2] - a[2] * b[1]
    y = a[2] * b[0] - a[0] * b[2]
    z = a[0] * b[1] - a[1] * b[0]
    out[0] = x; out[1] = y; out[2] = z


@njit(cache=True, inline="always")
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True, inline="always")
def _det3(c0, c1, c2):
    return (c0[0] * (c1[1] * c2[2] - c1[2] * c2[1]) - c1[0] * (c0[1] * c2[2] - c0[2] * c2[1])
            + c2[0] * (c0[1] * c1[2] - c0[2] * c1[1]))


@njit(cache=True)
def _solve3(c0, c1, c2, r, x, transpose):
    """x solves [c0 c1 c2] x = r (columns), or its transpose (rows) when ``transpose``
    (Cramer's rule). Returns the determinant; the caller judges singularity."""
    det = _det3(c0, c1, c2)
    if det == 0.0:
        return 0.0
    if transpose:
        t0 = (c1[1] * c2[2] - c1[2] * c2[1], c1[2] * c2[0] - c1[0] * c2[2], c1[0] * c2[1] - c1[1] * c2[0])
        t1 = (c2[1] * c0[2] - c2[2] * c0[1], c2[2] * c0[0] - c2[0] * c0[2], c2[0] * c0[1] - c2[1] * c0[0])
        t2 = (c0[1] * c1[2] - c0[2] * c1[1], c0[2] * c1[0] - c0[0] * c1[2], c0[0] * c1[1] - c0[1] * c1[0])
        for i in range(3):
            x[i] = (r[0] * t0[i] + r[1] * t1[i] + r[2] * t2[i]) / det
    else:
        x0 = _det3(r, c1, c2) / det
        x1 = _det3(c0, r, c2) / det
        x2 = _det3(c0, c1, r) / det
        x[0] = x0; x[1] = x1; x[2] = x2
    return det


@njit(cache=True)
def solve6(A, b, transpose):
    """Solve A x = b (or A^T x = b) in place by Gaussian elimination with partial
    pivoting: A is overwritten, b becomes x. Returns min|pivot| / max|pivot| (0: singular)."""
    n = 6
    if transpose:
        for i in range(n):
            for j in range(i + 1, n):
                t = A[i, j]; A[i, j] = A[j, i]; A[j, i] = t
    pmin = np.inf
    pmax = 0.0
    for k in range(n):
        p = k
        for i in range(k + 1, n):
            if abs(A[i, k]) > abs(A[p, k]):
                p = i
        if p != k:
            for j in range(n):
                t = A[k, j]; A[k, j] = A[p, j]; A[p, j] = t
            t = b[k]; b[k] = b[p]; b[p] = t
        piv = abs(A[k, k])
        pmin = min(pmin, piv)
        pmax = max(pmax, piv)
        if piv == 0.0:
            return 0.0
        for i in range(k + 1, n):
            f = A[i, k] / A[k, k]
            for j in range(k, n):
                A[i, j] -= f * A[k, j]
            b[i] -= f * b[k]
    for k in range(n - 1, -1, -1):
        s = b[k]
        for j in range(k + 1, n):
            s -= A[k, j] * b[j]
        b[k] = s / A[k, k]
    return pmin / pmax


@njit(cache=True, inline="always")
def _rot(R, axis, angle, out):
    """out = R Rot_axis(angle) (axis 0, 1, 2 = x, y, z); out may not alias R."""
    c = math.cos(angle)
    s = math.sin(angle)
    i = (axis + 1) % 3
    j = (axis + 2) % 3
    for r in range(3):
        out[r, axis] = R[r, axis]
        out[r, i] = c * R[r, i] + s * R[r, j]
        out[r, j] = -s * R[r, i] + c * R[r, j]


# --- platform motion (eq. 5-7) ------------------------------------------------------------

@njit(cache=True)
def platform_motion(x, xd, xdd, Rp, vG, wp, aG, dwp):
    """Platform orientation R = Rx(a1) Ry(a2) Rz(a3) (eq. 7), twist and its derivative
    from the pose x = (x, y, z, a1, a2, a3) and its first two time derivatives. The
    angular velocity is sum(a_i' e_i) with e1 = x, e2 = Rx(a1) y, e3 = Rx(a1) Ry(a2) z
    (eq. 15, 17: a1^T u1, a1^T a2^T u2, a1^T a2^T a3^T u3); the angular acceleration adds
    a1' a2' e1 x e2 + a3' (a1' e1 + a2' e2) x e3 (eq. 17)."""
    c1 = math.cos(x[3]); s1 = math.sin(x[3])
    c2 = math.cos(x[4]); s2 = math.sin(x[4])
    c3 = math.cos(x[5]); s3 = math.sin(x[5])
    Rp[0, 0] = c2 * c3; Rp[0, 1] = -c2 * s3; Rp[0, 2] = s2
    Rp[1, 0] = c1 * s3 + s1 * s2 * c3; Rp[1, 1] = c1 * c3 - s1 * s2 * s3; Rp[1, 2] = -s1 * c2
    Rp[2, 0] = s1 * s3 - c1 * s2 * c3; Rp[2, 1] = s1 * c3 + c1 * s2 * s3; Rp[2, 2] = c1 * c2
    e2 = (0.0, c1, s1)
    e3 = (s2, -s1 * c2, c1 * c2)
    d1, d2, d3 = xd[3], xd[4], xd[5]
    for i in range(3):
        vG[i] = xd[i]
        aG[i] = xdd[i]
    wp[0] = d1 + d3 * e3[0]
    wp[1] = d2 * e2[1] + d3 * e3[1]
    wp[2] = d2 * e2[2] + d3 * e3[2]
    # e1 x e2 = (0, -s1, c1); (d1 e1 + d2 e2) x e3
    u = (d1, d2 * e2[1], d2 * e2[2])
    ux3 = (u[1] * e3[2] - u[2] * e3[1], u[2] * e3[0] - u[0] * e3[2], u[0] * e3[1] - u[1] * e3[0])
    dwp[0] = xdd[3] + xdd[5] * e3[0] + d3 * ux3[0]
    dwp[1] = xdd[4] * e2[1] + xdd[5] * e3[1] - d1 * d2 * s1 + d3 * ux3[1]
    dwp[2] = xdd[4] * e2[2] + xdd[5] * e3[2] + d1 * d2 * c1 + d3 * ux3[2]


# --- inverse kinematics (eq. 8-18) --------------------------------------------------------

@njit(cache=True)
def leg_lengths(mbuf, x, lam, S):
    """Actuator displacements lambda_j = |P_j - B_j| - l1 - l3 (eq. 10) and the actuator
    Jacobian S (lambda' = S V, eq. 15-16) at pose x, without the legs' joint angles."""
    mv = model_views(mbuf)
    base, plat, geo = mv.base, mv.plat, mv.geo
    c1 = math.cos(x[3]); s1 = math.sin(x[3])
    c2 = math.cos(x[4]); s2 = math.sin(x[4])
    c3 = math.cos(x[5]); s3 = math.sin(x[5])
    r00 = c2 * c3; r01 = -c2 * s3; r02 = s2
    r10 = c1 * s3 + s1 * s2 * c3; r11 = c1 * c3 - s1 * s2 * s3; r12 = -s1 * c2
    r20 = s1 * s3 - c1 * s2 * c3; r21 = s1 * c3 + c1 * s2 * s3; r22 = c1 * c2
    for j in range(6):
        px, py, pz = plat[j, 0], plat[j, 1], plat[j, 2]
        rx = r00 * px + r01 * py + r02 * pz
        ry = r10 * px + r11 * py + r12 * pz
        rz = r20 * px + r21 * py + r22 * pz
        dx = x[0] + rx - base[j, 0]
        dy = x[1] + ry - base[j, 1]
        dz = x[2] + rz - base[j, 2]
        L = math.sqrt(dx * dx + dy * dy + dz * dz)
        lam[j] = L - geo[G_L1] - geo[G_L3]
        nx, ny, nz = dx / L, dy / L, dz / L
        S[j, 0] = nx; S[j, 1] = ny; S[j, 2] = nz
        S[j, 3] = ry * nz - rz * ny
        S[j, 4] = rz * nx - rx * nz
        S[j, 5] = rx * ny - ry * nx


@njit(cache=True)
def inverse_kinematics(mbuf, dbuf, x, xd, xdd):
    """Platform pose, velocity and acceleration -> every leg's joint positions, rates
    and accelerations, the bodies' orientations, angular velocities and accelerations,
    centres of mass and their accelerations, and S. Returns a status.

    Positions: eq. 8-10 (each leg's chain closes on the platform point P_j and its last
    frame is the platform's). Rates: eq. 15, per leg
    (phi1' e1 + phi2' e2) x (P - B) + lambda' n = v_P and
    phi4' e4 + phi5' e5 + phi6' e6 = omega - phi1' e1 - phi2' e2, with v_P = v_G + omega x rho;
    body velocities by the recursion of eq. 12-14. Accelerations: eq. 17, the same two
    systems with the velocity-product (Coriolis, centripetal) terms on the right-hand
    side; body accelerations by the recursion of eq. 18."""
    mv = model_views(mbuf)
    base, plat, Rb, Roff, geo, mass = mv.base, mv.plat, mv.Rb, mv.Roff, mv.geo, mv.mass
    dv = data_views(dbuf)
    q, qd, qdd, R, w, dw, c, ac, axes, P = dv.q, dv.qd, dv.qdd, dv.R, dv.w, dv.dw, dv.c, dv.ac, dv.axes, dv.P
    S, Rp, vG, wp, aG, dwp, tmp = dv.S, dv.Rp, dv.vG, dv.wp, dv.aG, dv.dwp, dv.tmp
    for i in range(6):
        if not (math.isfinite(x[i]) and math.isfinite(xd[i]) and math.isfinite(xdd[i])):
            return NON_FINITE
    l1, l3, c2, c3 = geo[G_L1], geo[G_L3], geo[G_C2], geo[G_C3]
    lam_min, lam_max, tol = geo[G_LAMBDA_MIN], geo[G_LAMBDA_MAX], geo[G_SINGULAR_TOL]
    platform_motion(x, xd, xdd, Rp, vG, wp, aG, dwp)
    rho, d, vP, aP, t, u, sol, r, k1, k2 = (tmp[0], tmp[1], tmp[2], tmp[3], tmp[4], tmp[5],
                                           tmp[6], tmp[7], tmp[8], tmp[9])
    R6 = tmp[10:13]
    for j in range(6):
        # position of the platform joint and the leg vector (eq. 10)
        for i in range(3):
            rho[i] = Rp[i, 0] * plat[j, 0] + Rp[i, 1] * plat[j, 1] + Rp[i, 2] * plat[j, 2]
            P[j, i] = x[i] + rho[i]
            d[i] = P[j, i] - base[j, i]
        L = math.sqrt(_dot(d, d))
        lam = L - l1 - l3
        if lam < lam_min or lam > lam_max:
            return OUT_OF_STROKE
        n = axes[j, 2]
        for i in range(3):
            n[i] = d[i] / L
        _cross(rho, n, t)
        for i in range(3):
            S[j, i] = n[i]
            S[j, 3 + i] = t[i]
        # the platform point's velocity and acceleration
        _cross(wp, rho, t)
        _cross(wp, t, u)
        _cross(dwp, rho, k1)
        for i in range(3):
            vP[i] = vG[i] + t[i]
            aP[i] = aG[i] + k1[i] + u[i]
        # universal joint: R2 = Rb Rx(phi1) Ry(phi2), R2 z = n (eq. 3, 8)
        dl0 = Rb[j, 0, 0] * n[0] + Rb[j, 1, 0] * n[1] + Rb[j, 2, 0] * n[2]
        dl1 = Rb[j, 0, 1] * n[0] + Rb[j, 1, 1] * n[1] + Rb[j, 2, 1] * n[2]
        dl2 = Rb[j, 0, 2] * n[0] + Rb[j, 1, 2] * n[1] + Rb[j, 2, 2] * n[2]
        cphi2 = math.sqrt(dl1 * dl1 + dl2 * dl2)
        if cphi2 < tol:
            return SINGULAR
        phi1 = math.atan2(-dl1, dl2)
        phi2 = math.atan2(dl0, cphi2)
        _rot(Rb[j], 0, phi1, R[j, 0])
        _rot(R[j, 0], 1, phi2, R[j, 1])
        R[j, 2, :, :] = R[j, 1]
        # spherical joint: R2^T R6 = Rx(phi4) Ry(phi5) Rz(phi6), R6 = Rp Roff (eq. 8-9)
        for a in range(3):
            for b in range(3):
                R6[a, b] = Rp[a, 0] * Roff[j, 0, b] + Rp[a, 1] * Roff[j, 1, b] + Rp[a, 2] * Roff[j, 2, b]
        R2 = R[j, 1]
        m00 = R2[0, 0] * R6[0, 0] + R2[1, 0] * R6[1, 0] + R2[2, 0] * R6[2, 0]
        m01 = R2[0, 0] * R6[0, 1] + R2[1, 0] * R6[1, 1] + R2[2, 0] * R6[2, 1]
        m02 = R2[0, 0] * R6[0, 2] + R2[1, 0] * R6[1, 2] + R2[2, 0] * R6[2, 2]
        m12 = R2[0, 1] * R6[0, 2] + R2[1, 1] * R6[1, 2] + R2[2, 1] * R6[2, 2]
        m22 = R2[0, 2] * R6[0, 2] + R2[1, 2] * R6[1, 2] + R2[2, 2] * R6[2, 2]
        cphi5 = math.sqrt(m00 * m00 + m01 * m01)
        if cphi5 < tol:
            return SINGULAR
        phi4 = math.atan2(-m12, m22)
        phi5 = math.atan2(m02, cphi5)
        phi6 = math.atan2(-m01, m00)
        _rot(R2, 0, phi4, R[j, 3])
        _rot(R[j, 3], 1, phi5, R[j, 4])
        q[j, 0] = phi1; q[j, 1] = phi2; q[j, 2] = lam
        q[j, 3] = phi4; q[j, 4] = phi5; q[j, 5] = phi6
        e1, e2, e4, e5, e6 = axes[j, 0], axes[j, 1], axes[j, 3], axes[j, 4], axes[j, 5]
        for i in range(3):
            e1[i] = R[j, 0, i, 0]
            e2[i] = R[j, 0, i, 1]
            e4[i] = R2[i, 0]
            e5[i] = R[j, 3, i, 1]
            e6[i] = R[j, 4, i, 2]
        # rates (eq. 15): the translational system, then the rotational one
        _cross(e1, d, t)
        _cross(e2, d, u)
        det = _solve3(t, u, n, vP, sol, False)
        if abs(det) < tol * L * L:
            return SINGULAR
        qd[j, 0] = sol[0]; qd[j, 1] = sol[1]; qd[j, 2] = sol[2]
        w1, w2, w4, w5 = w[j, 0], w[j, 1], w[j, 3], w[j, 4]
        for i in range(3):
            w1[i] = sol[0] * e1[i]
            w2[i] = w1[i] + sol[1] * e2[i]
            w[j, 2, i] = w2[i]
            r[i] = wp[i] - w2[i]
        det = _solve3(e4, e5, e6, r, sol, False)
        if abs(det) < tol:
            return SINGULAR
        qd[j, 3] = sol[0]; qd[j, 4] = sol[1]; qd[j, 5] = sol[2]
        for i in range(3):
            w4[i] = w2[i] + sol[0] * e4[i]
            w5[i] = w4[i] + sol[1] * e5[i]
        # accelerations (eq. 17): translational system with the velocity-product terms
        # b2 = w1 x phi2' e2 (eq. 18), w2 x (w2 x d) and 2 lambda' w2 x n on the right
        for i in range(3):
            k1[i] = qd[j, 1] * e2[i]
        _cross(w1, k1, k2)                      # b2: the cylinder's angular acceleration bias
        _cross(k2, d, r)
        _cross(w2, d, k1)
        _cross(w2, k1, sol)
        for i in range(3):
            r[i] = aP[i] - r[i] - sol[i]
        _cross(w2, n, k1)
        lamd = qd[j, 2]
        for i in range(3):
            r[i] -= 2.0 * lamd * k1[i]
        _solve3(t, u, n, r, sol, False)
        qdd[j, 0] = sol[0]; qdd[j, 1] = sol[1]; qdd[j, 2] = sol[2]
        dw1, dw2, dw4, dw5 = dw[j, 0], dw[j, 1], dw[j, 3], dw[j, 4]
        for i in range(3):
            dw1[i] = sol[0] * e1[i]
            dw2[i] = dw1[i] + sol[1] * e2[i] + k2[i]
            dw[j, 2, i] = dw2[i]
        # rotational system: eps6 = eps_platform, biases w2 x phi4' e4, w4 x phi5' e5, w5 x phi6' e6
        for i in range(3):
            k1[i] = qd[j, 3] * e4[i]
        _cross(w2, k1, t)                       # bias of body 4
        for i in range(3):
            k1[i] = qd[j, 4] * e5[i]
        _cross(w4, k1, u)                       # bias of body 5
        for i in range(3):
            k1[i] = qd[j, 5] * e6[i]
        _cross(w5, k1, k2)                      # bias of the platform in this chain
        for i in range(3):
            r[i] = dwp[i] - dw2[i] - t[i] - u[i] - k2[i]
        _solve3(e4, e5, e6, r, sol, False)
        qdd[j, 3] = sol[0]; qdd[j, 4] = sol[1]; qdd[j, 5] = sol[2]
        for i in range(3):
            dw4[i] = dw2[i] + sol[0] * e4[i] + t[i]
            dw5[i] = dw4[i] + sol[1] * e5[i] + u[i]
        # centres of mass and their accelerations (eq. 18)
        lamdd = qdd[j, 2]
        s3 = l1 + lam + c3
        _cross(w2, n, k1)
        _cross(w2, k1, k2)
        _cross(dw2, n, t)
        for i in range(3):
            tang = t[i] + k2[i]                 # (eps2 x + w2 x w2 x) n
            c[j, 0, i] = base[j, i]
            c[j, 1, i] = base[j, i] + c2 * n[i]
            c[j, 2, i] = base[j, i] + s3 * n[i]
            c[j, 3, i] = P[j, i]
            c[j, 4, i] = P[j, i]
            ac[j, 0, i] = 0.0
            ac[j, 1, i] = c2 * tang
            ac[j, 2, i] = lamdd * n[i] + 2.0 * lamd * k1[i] + s3 * tang
            ac[j, 3, i] = aP[i]
            ac[j, 4, i] = aP[i]
    return OK


@njit(cache=True)
def forward_kinematics(mbuf, dbuf, lam_target, x):
    """Six actuator displacements -> platform pose by Newton's method on eq. 10
    (lambda(x) = lambda_target, Jacobian S E with E the Euler-rate map of eq. 15); ``x``
    holds the initial guess and receives the pose. Returns a status: OUT_OF_STROKE for a
    target outside the stroke, SINGULAR where the Jacobian loses rank (the angular columns
    scaled by the platform radius), NO_CONVERGENCE when no pose fits the lengths within
    NEWTON_TOL in NEWTON_ITERS steps (outside the workspace) or the pose found is the
    mirror image under the base (z <= 0)."""
    mv = model_views(mbuf)
    base, geo = mv.base, mv.geo
    # the leg lengths of each Newton step live in the Data's wrench slot (scratch here)
    dv = data_views(dbuf)
    S, lam, lu, rhs = dv.S, dv.wrench, dv.lu, dv.rhs
    for j in range(6):
        if not (math.isfinite(lam_target[j]) and math.isfinite(x[j])):
            return NON_FINITE
        if lam_target[j] < geo[G_LAMBDA_MIN] or lam_target[j] > geo[G_LAMBDA_MAX]:
            return OUT_OF_STROKE
    tol, scale = geo[G_SINGULAR_TOL], geo[G_L4]
    for _ in range(NEWTON_ITERS):
        leg_lengths(mbuf, x, lam, S)
        err = 0.0
        for j in range(6):
            rhs[j] = lam[j] - lam_target[j]
            err = max(err, abs(rhs[j]))
        c1 = math.cos(x[3]); s1 = math.sin(x[3])
        c2 = math.cos(x[4]); s2 = math.sin(x[4])
        for j in range(6):
            lu[j, 0] = S[j, 0]; lu[j, 1] = S[j, 1]; lu[j, 2] = S[j, 2]
            lu[j, 3] = S[j, 3] / scale
            lu[j, 4] = (S[j, 4] * c1 + S[j, 5] * s1) / scale
            lu[j, 5] = (S[j, 3] * s2 - S[j, 4] * s1 * c2 + S[j, 5] * c1 * c2) / scale
        ratio = solve6(lu, rhs, False)
        if ratio < tol:
            return SINGULAR
        if err < NEWTON_TOL:
            return OK if x[2] > 0.0 else NO_CONVERGENCE    # the mirror pose under the base
        for i in range(3):
            x[i] -= rhs[i]
            x[3 + i] -= rhs[3 + i] / scale
        for i in range(6):
            if not math.isfinite(x[i]):
                return NO_CONVERGENCE
    return NO_CONVERGENCE


class StewartModel:
    """Immutable parameters of a Stewart-Gough rig in one flat buffer (:data:`MODEL`).

    Frames: base points B_j = l0 (cos a1, sin a1, 0), platform points l4 (cos(a1 + a2),
    sin(a1 + a2), 0) in the platform frame (eq. 1-2). Each leg's universal joint has its
    first axis e1 horizontal and across the leg at t = 0 and the leg along z there; the
    spherical joint's last frame is the leg's frame at t = 0 (all passive angles zero)."""

    def __init__(self, desc: StewartDescription) -> None:
        self.desc = desc
        self.name = desc.name
        self.buf = np.zeros(MODEL_SIZE)
        v = MODEL.views(self.buf)._asdict()
        home = np.array([0.0, 0.0, desc.h])
        for j in range(6):
            a1 = desc.alpha1[j]
            a2 = a1 + desc.alpha2[j]
            v["base"][j] = desc.l0 * np.array([math.cos(a1), math.sin(a1), 0.0])
            v["plat"][j] = desc.l4 * np.array([math.cos(a2), math.sin(a2), 0.0])
            n0 = home + v["plat"][j] - v["base"][j]
            n0 /= np.linalg.norm(n0)
            xb = np.cross([0.0, 0.0, 1.0], n0)
            xb /= np.linalg.norm(xb)
            v["Rb"][j] = np.column_stack([xb, np.cross(n0, xb), n0])
            v["Roff"][j] = v["Rb"][j]
        geometry = {"l1": desc.l1, "l3": desc.l3, "c2": desc.l2 / 2, "c3": desc.l3 / 2,
                    "lambda_min": desc.stroke[0], "lambda_max": desc.stroke[1],
                    "singular_tol": desc.singular_tol, "l4": desc.l4}
        for name in GEOMETRY.names:
            v["geo"][GEOMETRY.offset(name)] = geometry[name]
        for k, body in enumerate(desc.bodies):
            v["mass"][k] = body.mass
            v["inertia"][k] = np.diag(body.inertia)
        v["inertia"][1] = THETA1 @ v["inertia"][1] @ THETA1.T
        v["gravity"][:] = (0.0, 0.0, -desc.gravity)
        self.buf.flags.writeable = False
        for name, arr in MODEL.views(self.buf)._asdict().items():
            setattr(self, name, arr)

    @classmethod
    def from_yaml(cls, path: str | Path) -> "StewartModel":
        return cls(load_stewart(path))


class StewartData:
    """Preallocated workspace and results of one kinematic/dynamic evaluation."""

    def __init__(self) -> None:
        self.buf = np.zeros(DATA_SIZE)
        for name, arr in DATA.views(self.buf)._asdict().items():
            setattr(self, name, arr)


def staicu_motion(desc: StewartDescription, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pose, velocity and acceleration of Staicu 2008's test motion at time t (eq. 5-6)."""
    m = desc.motion
    k = 2.0 * math.pi / m.duration
    s, c = math.sin(k * t), math.cos(k * t)
    amp = np.array([*m.position, *m.angles])
    x = amp * (1.0 - c)
    xd = amp * k * s
    xdd = amp * k * k * c
    x[0], xd[0], xdd[0] = amp[0] * s, amp[0] * k * c, -amp[0] * k * k * s
    x[2] += desc.h
    return x, xd, xdd
