"""Numerical inverse geometric model: stacked frame tasks solved by Newton–Raphson or
damped least squares, allocation-free.

A problem is a stack of **tasks** on points of frames: position (3 rows), orientation
(3), pose (6) or the direction of one frame axis (2). Its residual is F(q) = f(q) − x
(Lammari 2012, eq. II.29), stacked and weighted; J = ∂F/∂q. Orientation: F = −log(R_t R_cᵀ)
(the rotation vector from the current frame to the target, base axes) with the rows J_ω
(its derivative at the target). Axis a onto t: the stereographic chart from −t,
F_b = 2 u_b·a/(1 + t·a) (u_1, u_2 ⊥ t), zero only at a = t, with its exact derivative
(the arm of Lammari 2012, §VI.5.5, points its Y5 along the normal of a plane).

* Newton–Raphson (square tasks): δq = −J⁻¹F (Lammari 2012, eq. II.31–II.33; eq. II.34
  is printed with the wrong sign, docs/errata.md).
* Damped least squares with joint weights W and a secondary task in the null space
  (Jacobian course, pseudo-inverse, redundant case and damped least squares):
  δq = z + W⁻¹Jᵀ(J W⁻¹ Jᵀ + λ²I)⁻¹(−F − J z), z = −k₀ W⁻¹ ∇w(q), where w is the
  course's distance to a rest posture q̄ scaled by the joint ranges
  (w = ½ Σ ((q_i − q̄_i)/(q_i^M − q_i^m))², q̄ the mid-range unless given). λ² = μ‖F‖² + λ₀²
  (Levenberg–Marquardt): the damping vanishes with the residual, so the iteration
  lands on the target, not beside it. A step that does not lower ‖F‖² is rejected: back
  to the last accepted q with ten times the damping (and a tenth of k₀), so the
  iteration cannot cycle. The secondary task settles with the primary one: k₀ of
  0.5–1 converges in tens of iterations, a small k₀ slowly.
* Joint limits: an active set. A joint at a limit whose step would push it out is
  frozen (its W⁻¹ entry set to 0) and the step recomputed; every step is clamped to
  the limits.

One flat float64 buffer holds the problem and its workspace (:data:`IK`, Model/Data
style). An engine plugs in with a kernel that fills, for every task k, the pose Tk[k]
(4×4, base → the task point, rotation of its frame) and the 6×n geometric Jacobian Jk[k]
of that point (:func:`task_frames`); :func:`solve` runs ``ik_start``, then
``task_frames; ik_step`` until the status is not CONTINUE. Engines:
:func:`chain_task_frames` (a serial chain: frames 0..n, n+1 = tool, :data:`COM_FRAME` = its
centre of gravity) and :func:`tree_task_frames` (a kinematic tree in its current rooting:
its operational frames, and the CoG of group g as frame −1 − g).

Statuses (the step never hides one): OK; NOT_CONVERGED (iterations exhausted while still
moving); UNREACHABLE (the iteration stalled on a least-squares minimum with a residual:
the target is out of reach from here); JOINT_LIMIT (stalled with joints frozen at their
limits); SINGULAR (Newton–Raphson met a singular J, or the target was reached at a
configuration where the task Jacobian has lost rank, a relative pivot of J Jᵀ (or Jᵀ J)
below ``singular_tol``: no motion is possible in some task direction there).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum

import numpy as np
from numba import njit

from models.common.errors import GeometryError, ModelError
from models.chain.kinematics import body_coms, center_of_mass, com_jacobians, forward_kinematics, point_jacobian
from models.linalg import cholesky_rtol, spd_solve
from models.chain.model import check_buffers, data_views, model_views
from models.common.layout import Field, Layout
from models.tree.model import data_layout as tree_data_layout
from models.tree.model import model_layout as tree_model_layout
from models.tree.dynamics import kinematics as tree_kinematics
from models.tree.dynamics import point_jacobian as tree_point_jacobian
from models.tree.robot import TreeRobot

# task kinds and the rows each stacks (declared once; everything else derives from it)
POSITION, ORIENTATION, POSE, AXIS = 0, 1, 2, 3
KIND_NAMES = ("position", "orientation", "pose", "axis")
KIND_ROWS = (3, 3, 6, 2)
COM_FRAME = -1

# one task = one row of the spec table
S_FRAME, S_KIND, S_AXIS, S_WEIGHT = 0, 1, 2, 3
S_POINT = 4          # point in frame coordinates (3)
SPEC_WIDTH = 7

# options (IkSolver's arguments)
NEWTON, DLS = 0, 1
OPTIONS = Layout("ik options", [Field(k) for k in (
    "method", "max_iter", "tol_pos", "tol_rot", "damping", "damping_min", "null_gain", "step_tol", "max_step",
    "singular_tol")])
O_METHOD, O_MAX_ITER, O_TOL_POS, O_TOL_ROT, O_DAMPING = (OPTIONS.offset(k) for k in OPTIONS.names[:5])
O_DAMPING_MIN, O_NULL_GAIN, O_STEP_TOL, O_MAX_STEP, O_SINGULAR_TOL = (OPTIONS.offset(k) for k in OPTIONS.names[5:])
N_OPTIONS = OPTIONS.size()

# results: iterations, residuals (m, rad), worst task, accepted cost ‖F‖², damping multiplier
INFO = Layout("ik info", [Field(k) for k in ("iter", "pos_res", "rot_res", "worst", "cost", "mult")])
I_ITER, I_POS_RES, I_ROT_RES, I_WORST, I_COST, I_MULT = (INFO.offset(k) for k in INFO.names)
N_INFO = INFO.size()

CONTINUE = -1


class IkStatus(IntEnum):
    OK = 0
    NOT_CONVERGED = 1
    UNREACHABLE = 2
    SINGULAR = 3
    JOINT_LIMIT = 4


OK, NOT_CONVERGED, UNREACHABLE, SINGULAR, JOINT_LIMIT = (int(s) for s in IkStatus)


# the problem and its workspace (module docstring): the header n joints, tasks, rows (stacked task
# rows, m); opts[N_OPTIONS], spec[K, SPEC_WIDTH], target[K,4,4], basis[K,2,3] (AXIS: u, v orthogonal
# to the target axis), winv[n] = W⁻¹, qrest[n], qmin[n], qmax[n], Tk[K,4,4], Jk[K,6,n], F[m], J[m,n],
# M[m,m], y[m], dq[n], z[n], free[n], and the last accepted iterate: q_acc[n], F_acc[m], J_acc[m,n];
# info[N_INFO] = iterations, residuals (m, rad), worst task, accepted cost ‖F‖², damping multiplier
IK = Layout("ik", [
    Field("n"), Field("tasks"), Field("rows"), Field("opts", (N_OPTIONS,)), Field("spec", ("tasks", SPEC_WIDTH)),
    Field("target", ("tasks", 4, 4)), Field("basis", ("tasks", 2, 3)), Field("winv", ("n",)),
    Field("qrest", ("n",)), Field("qmin", ("n",)), Field("qmax", ("n",)), Field("Tk", ("tasks", 4, 4)),
    Field("Jk", ("tasks", 6, "n")), Field("F", ("rows",)), Field("J", ("rows", "n")), Field("M", ("rows", "rows")),
    Field("y", ("rows",)), Field("dq", ("n",)), Field("z", ("n",)), Field("free", ("n",)), Field("q_acc", ("n",)),
    Field("F_acc", ("rows",)), Field("J_acc", ("rows", "n")), Field("info", (N_INFO,))],
    sizes=("n", "tasks", "rows"))
_N, _TASKS, _ROWS = IK.offset("n"), IK.offset("tasks"), IK.offset("rows")
_ik_views = IK.kernel_views


@njit(cache=True)
def ik_views(buf):
    """Named views of an IK buffer (:data:`IK`)."""
    return _ik_views(buf, int(buf[_N]), int(buf[_TASKS]), int(buf[_ROWS]))[0]


# ---------------------------------------------------------------- residual and Jacobian
@njit(cache=True)
def rotation_error(Rt, Rc, e):
    """e = log(Rt Rcᵀ) as a rotation vector (axis × angle, base axes: the rotation that
    takes the current frame onto the target); returns the angle in [0, π]."""
    r00 = Rt[0, 0] * Rc[0, 0] + Rt[0, 1] * Rc[0, 1] + Rt[0, 2] * Rc[0, 2]
    r01 = Rt[0, 0] * Rc[1, 0] + Rt[0, 1] * Rc[1, 1] + Rt[0, 2] * Rc[1, 2]
    r02 = Rt[0, 0] * Rc[2, 0] + Rt[0, 1] * Rc[2, 1] + Rt[0, 2] * Rc[2, 2]
    r10 = Rt[1, 0] * Rc[0, 0] + Rt[1, 1] * Rc[0, 1] + Rt[1, 2] * Rc[0, 2]
    r11 = Rt[1, 0] * Rc[1, 0] + Rt[1, 1] * Rc[1, 1] + Rt[1, 2] * Rc[1, 2]
    r12 = Rt[1, 0] * Rc[2, 0] + Rt[1, 1] * Rc[2, 1] + Rt[1, 2] * Rc[2, 2]
    r20 = Rt[2, 0] * Rc[0, 0] + Rt[2, 1] * Rc[0, 1] + Rt[2, 2] * Rc[0, 2]
    r21 = Rt[2, 0] * Rc[1, 0] + Rt[2, 1] * Rc[1, 1] + Rt[2, 2] * Rc[1, 2]
    r22 = Rt[2, 0] * Rc[2, 0] + Rt[2, 1] * Rc[2, 1] + Rt[2, 2] * Rc[2, 2]
    v0, v1, v2 = r21 - r12, r02 - r20, r10 - r01          # 2 sin(θ) axis
    c = 0.5 * (r00 + r11 + r22 - 1.0)
    s = 0.5 * math.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
    theta = math.atan2(s, c)
    if c > -0.9:                                         # axis from the skew part
        f = 0.5 if s < 1e-12 else 0.5 * theta / s
        e[0], e[1], e[2] = f * v0, f * v1, f * v2
        return theta
    # near π: axis from the symmetric part (R + Rᵀ)/2 − c I = (1 − c) a aᵀ
    d0, d1, d2 = r00 - c, r11 - c, r22 - c
    if d0 >= d1 and d0 >= d2:
        a0, a1, a2 = d0, 0.5 * (r01 + r10), 0.5 * (r02 + r20)
    elif d1 >= d2:
        a0, a1, a2 = 0.5 * (r01 + r10), d1, 0.5 * (r12 + r21)
    else:
        a0, a1, a2 = 0.5 * (r02 + r20), 0.5 * (r12 + r21), d2
    norm = math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
    if a0 * v0 + a1 * v1 + a2 * v2 < 0.0:
        norm = -norm
    e[0], e[1], e[2] = theta * a0 / norm, theta * a1 / norm, theta * a2 / norm
    return theta


@njit(cache=True)
def assemble(spec, target, basis, Tk, Jk, F, J, e, tol_pos, tol_rot):
    """Stack the weighted residuals F and their Jacobian J from the task poses Tk and
    Jacobians Jk; returns the largest position (m) and rotation (rad) errors and the
    task whose error, relative to its tolerance, is the largest. e: 3 scratch."""
    n = J.shape[1]
    r = 0
    pos_res = 0.0
    rot_res = 0.0
    worst = 0
    worst_ratio = -1.0
    for k in range(spec.shape[0]):
        kind = int(spec[k, S_KIND])
        w = spec[k, S_WEIGHT]
        T = Tk[k]
        perr = 0.0
        rerr = 0.0
        if kind == POSITION or kind == POSE:
            for i in range(3):
                d = T[i, 3] - target[k, i, 3]
                perr += d * d
                F[r + i] = w * d
                for j in range(n):
                    J[r + i, j] = w * Jk[k, i, j]
            perr = math.sqrt(perr)
            r += 3
        if kind == ORIENTATION or kind == POSE:
            rerr = rotation_error(target[k], T, e)
            for i in range(3):
                F[r + i] = -w * e[i]                      # F = −log(Rt Rcᵀ), ∂F/∂q ≈ J_ω
                for j in range(n):
                    J[r + i, j] = w * Jk[k, 3 + i, j]
            r += 3
        if kind == AXIS:
            ax = int(spec[k, S_AXIS])
            a0, a1, a2 = T[0, ax], T[1, ax], T[2, ax]
            t0, t1, t2 = target[k, 0, ax], target[k, 1, ax], target[k, 2, ax]
            c0, c1, c2 = a1 * t2 - a2 * t1, a2 * t0 - a0 * t2, a0 * t1 - a1 * t0
            dot = a0 * t0 + a1 * t1 + a2 * t2
            rerr = math.atan2(math.sqrt(c0 * c0 + c1 * c1 + c2 * c2), dot)
            # stereographic chart from −t: F_b = 2 u_b·a / (1 + t·a), zero only at a = t,
            # |F| = 2 tan(θ/2); ∂(u·a)/∂q = (a × u)ᵀ J_ω, ∂(t·a)/∂q = (a × t)ᵀ J_ω
            den = max(1.0 + dot, 1e-12)
            for b in range(2):
                u0, u1, u2 = basis[k, b, 0], basis[k, b, 1], basis[k, b, 2]
                g = u0 * a0 + u1 * a1 + u2 * a2
                F[r + b] = w * 2.0 * g / den
                f1 = w * 2.0 / den
                f2 = f1 * g / den
                x0 = f1 * (a1 * u2 - a2 * u1) - f2 * c0
                x1 = f1 * (a2 * u0 - a0 * u2) - f2 * c1
                x2 = f1 * (a0 * u1 - a1 * u0) - f2 * c2
                for j in range(n):
                    J[r + b, j] = x0 * Jk[k, 3, j] + x1 * Jk[k, 4, j] + x2 * Jk[k, 5, j]
            r += 2
        pos_res = max(pos_res, perr)
        rot_res = max(rot_res, rerr)
        ratio = max(perr / tol_pos, rerr / tol_rot)
        if ratio > worst_ratio:
            worst_ratio = ratio
            worst = k
    return pos_res, rot_res, worst


# ---------------------------------------------------------------- steps
@njit(cache=True)
def newton_step(J, F, M, y, dq, singular_tol):
    """δq = −J⁻¹F (Lammari 2012, eq. II.32) by Gaussian elimination with partial
    pivoting in M; False when a pivot is <= singular_tol · max|J| (J singular)."""
    n = dq.shape[0]
    scale = 0.0
    for i in range(n):
        y[i] = -F[i]
        for j in range(n):
            M[i, j] = J[i, j]
            scale = max(scale, abs(J[i, j]))
    for c in range(n):
        p = c
        for i in range(c + 1, n):
            if abs(M[i, c]) > abs(M[p, c]):
                p = i
        if not abs(M[p, c]) > singular_tol * scale:
            return False
        if p != c:
            for j in range(n):
                M[c, j], M[p, j] = M[p, j], M[c, j]
            y[c], y[p] = y[p], y[c]
        for i in range(c + 1, n):
            f = M[i, c] / M[c, c]
            for j in range(c, n):
                M[i, j] -= f * M[c, j]
            y[i] -= f * y[c]
    for i in range(n - 1, -1, -1):
        s = y[i]
        for j in range(i + 1, n):
            s -= M[i, j] * dq[j]
        dq[i] = s / M[i, i]
    return True


@njit(cache=True)
def gram(J, winv, lam2, M):
    """M = J W⁻¹ Jᵀ + λ² I (lower triangle)."""
    m, n = J.shape
    for a in range(m):
        for b in range(a + 1):
            s = 0.0
            for j in range(n):
                s += J[a, j] * winv[j] * J[b, j]
            M[a, b] = s + (lam2 if a == b else 0.0)


@njit(cache=True)
def rank_deficient(J, M, rtol):
    """rank J < min(m, n): a relative Cholesky pivot of J Jᵀ (m <= n) or of Jᵀ J
    (m > n, in M's leading n×n block) is <= rtol."""
    m, n = J.shape
    if m <= n:
        for a in range(m):
            for b in range(a + 1):
                s = 0.0
                for j in range(n):
                    s += J[a, j] * J[b, j]
                M[a, b] = s
        return cholesky_rtol(M, rtol) != 0
    G = M[:n, :n]
    for a in range(n):
        for b in range(a + 1):
            s = 0.0
            for i in range(m):
                s += J[i, a] * J[i, b]
            G[a, b] = s
    return cholesky_rtol(G, rtol) != 0


@njit(cache=True)
def dls_step(opts, mult, winv, qrest, qmin, qmax, J, F, M, y, dq, z, free, q):
    """Weighted damped least squares with the null-space task and the active set of
    joints at their limits (module docstring); λ² = mult·μ‖F‖² + λ₀² and the null-space
    gain k₀/mult (mult grows when a step is rejected). free[j] = 0 marks a frozen joint.
    False if J W⁻¹ Jᵀ + λ²I is not positive definite."""
    m, n = J.shape
    f2 = 0.0
    for i in range(m):
        f2 += F[i] * F[i]
    lam2 = mult * opts[O_DAMPING] * f2 + opts[O_DAMPING_MIN] * opts[O_DAMPING_MIN]
    k0 = opts[O_NULL_GAIN] / mult
    for j in range(n):
        free[j] = 1.0
    for _ in range(n + 1):
        for j in range(n):
            span = qmax[j] - qmin[j]
            z[j] = -k0 * winv[j] * free[j] * (q[j] - qrest[j]) / (span * span)
            dq[j] = winv[j] * free[j]                    # dq holds W⁻¹ of the free joints
        gram(J, dq, lam2, M)
        for i in range(m):
            s = -F[i]
            for j in range(n):
                s -= J[i, j] * z[j]
            y[i] = s
        if spd_solve(M, y) != 0:
            return False
        for j in range(n):
            s = 0.0
            for i in range(m):
                s += J[i, j] * y[i]
            dq[j] = z[j] + winv[j] * free[j] * s
        changed = False
        for j in range(n):
            if free[j] != 0.0 and ((q[j] >= qmax[j] and dq[j] > 0.0) or (q[j] <= qmin[j] and dq[j] < 0.0)):
                free[j] = 0.0
                changed = True
        if not changed:
            break
    return True


@njit(cache=True)
def ik_start(buf, q):
    """Reset the iteration and bring q inside the joint limits."""
    v = ik_views(buf)
    qmin, qmax, free, info = v.qmin, v.qmax, v.free, v.info
    info[I_ITER] = 0.0
    info[I_MULT] = 1.0
    for j in range(q.shape[0]):
        q[j] = min(max(q[j], qmin[j]), qmax[j])
        free[j] = 1.0


@njit(cache=True)
def ik_step(buf, q):
    """One iteration on the task poses and Jacobians an engine has just evaluated at q:
    returns CONTINUE (q updated) or a final status (q is then the last accepted iterate).
    Damped least squares accepts a step only if it lowers ‖F‖²; otherwise it goes back
    to the accepted iterate with ten times the damping (Levenberg–Marquardt)."""
    v = ik_views(buf)
    opts, spec, target, basis, Tk, Jk = v.opts, v.spec, v.target, v.basis, v.Tk, v.Jk
    winv, qrest, qmin, qmax, dq, z, free = v.winv, v.qrest, v.qmin, v.qmax, v.dq, v.z, v.free
    F, J, M, y, q_acc, F_acc, J_acc, info = v.F, v.J, v.M, v.y, v.q_acc, v.F_acc, v.J_acc, v.info
    m, n = J.shape
    newton = int(opts[O_METHOD]) == NEWTON
    pos_res, rot_res, worst = assemble(spec, target, basis, Tk, Jk, F, J, z, opts[O_TOL_POS], opts[O_TOL_ROT])
    cost = 0.0
    for i in range(m):
        cost += F[i] * F[i]
    if newton or info[I_ITER] == 0.0 or cost <= info[I_COST]:
        info[I_POS_RES], info[I_ROT_RES], info[I_WORST], info[I_COST] = pos_res, rot_res, worst, cost
        info[I_MULT] = max(1.0, 0.1 * info[I_MULT])
        for j in range(n):
            q_acc[j] = q[j]
        for i in range(m):
            F_acc[i] = F[i]
            for j in range(n):
                J_acc[i, j] = J[i, j]
        if pos_res <= opts[O_TOL_POS] and rot_res <= opts[O_TOL_ROT]:
            return SINGULAR if rank_deficient(J, M, opts[O_SINGULAR_TOL]) else OK
    else:                                                # rejected: back to the accepted iterate
        info[I_MULT] *= 10.0
        for j in range(n):
            q[j] = q_acc[j]
        for i in range(m):
            F[i] = F_acc[i]
            for j in range(n):
                J[i, j] = J_acc[i, j]
    if info[I_ITER] >= opts[O_MAX_ITER]:
        return NOT_CONVERGED
    if newton:
        if not newton_step(J, F, M, y, dq, opts[O_SINGULAR_TOL]):
            return SINGULAR
    elif not dls_step(opts, info[I_MULT], winv, qrest, qmin, qmax, J, F, M, y, dq, z, free, q):
        return SINGULAR
    big = 0.0
    for j in range(n):
        big = max(big, abs(dq[j]))
    scale = opts[O_MAX_STEP] / big if big > opts[O_MAX_STEP] else 1.0
    moved = 0.0
    blocked = False
    for j in range(n):
        qj = min(max(q[j] + scale * dq[j], qmin[j]), qmax[j])
        blocked = blocked or free[j] == 0.0 or (qj != q[j] + scale * dq[j])
        moved = max(moved, abs(qj - q[j]))
        dq[j] = qj
    if not moved > opts[O_STEP_TOL]:
        return JOINT_LIMIT if blocked else UNREACHABLE
    for j in range(n):
        q[j] = dq[j]
    info[I_ITER] += 1.0
    return CONTINUE


# ---------------------------------------------------------------- engines
CHAIN, TREE = 0, 1


@njit(cache=True)
def frame_point(Tf, spec, k, Tk):
    """Tk[k] = the frame pose Tf with its origin moved to task k's point."""
    for r in range(4):
        for c in range(3):
            Tk[k, r, c] = Tf[r, c]
    for r in range(3):
        Tk[k, r, 3] = (Tf[r, 3] + Tf[r, 0] * spec[k, S_POINT] + Tf[r, 1] * spec[k, S_POINT + 1]
                       + Tf[r, 2] * spec[k, S_POINT + 2])
    Tk[k, 3, 3] = 1.0


@njit(cache=True)
def com_point(com, Jcom, k, Tk, Jk):
    """Task k on a centre of gravity: its position (no rotation) and 3 × n Jacobian."""
    for r in range(4):
        for c in range(4):
            Tk[k, r, c] = 1.0 if r == c else 0.0
    for r in range(3):
        Tk[k, r, 3] = com[r]
        for j in range(Jk.shape[2]):
            Jk[k, r, j] = Jcom[r, j]
            Jk[k, 3 + r, j] = 0.0


@njit(cache=True)
def chain_task_frames(mbuf, dbuf, q, spec, Tk, Jk):
    """Task poses and point Jacobians of a serial MDH chain (thesis eq. 1-6; CoG:
    thesis eq. 37-41): frame f in 0..n+1 (n+1 = tool), or COM_FRAME."""
    check_buffers(mbuf, dbuf, q)
    m, d = model_views(mbuf), data_views(dbuf, q.shape[0])
    mdh, jtype, mass, com_l, tool = m.mdh, m.jtype, m.mass, m.com, m.tool
    T, pc, Jb, com, Jcom = d.T, d.pc, d.Jb, d.com, d.Jcom
    forward_kinematics(mdh, jtype, tool, q, T)
    com_done = False
    for k in range(spec.shape[0]):
        f = int(spec[k, S_FRAME])
        if f == COM_FRAME:
            if not com_done:
                body_coms(T, com_l, pc)
                com_jacobians(T, jtype, pc, Jb)
                center_of_mass(mass, pc, Jb, com, Jcom)
                com_done = True
            com_point(com, Jcom, k, Tk, Jk)
        else:
            frame_point(T[f], spec, k, Tk)
            point_jacobian(T, jtype, f, Tk[k, :3, 3], Jk[k])


@njit(cache=True)
def tree_task_frames(mbuf, dbuf, q, spec, Tk, Jk):
    """Task poses and point Jacobians of a kinematic tree in its current rooting
    (models.tree.dynamics.kinematics, Khalil & Dombre tree MDH): operational frame
    f >= 0, or the CoG of group g (0 = the robot) as frame −1 − g."""
    tree_kinematics(mbuf, dbuf, q)
    m, d = tree_model_layout(mbuf)[0], tree_data_layout(mbuf, dbuf)[0]
    fbody, support = m.fbody, m.support
    root, Tf, S, cg, Jcg = d.root, d.Tf, d.S, d.com, d.Jcom
    r = int(root[0])
    for k in range(spec.shape[0]):
        f = int(spec[k, S_FRAME])
        if f < 0:
            com_point(cg[-1 - f], Jcg[-1 - f], k, Tk, Jk)
        else:
            frame_point(Tf[f], spec, k, Tk)
            tree_point_jacobian(S, support[r, int(fbody[f])], Tk[k, :3, 3], Jk[k])


@njit(cache=True)
def task_frames(engine, mbuf, dbuf, q, spec, Tk, Jk):
    """The engine's task poses and Jacobians at q (CHAIN or TREE)."""
    if engine == TREE:
        tree_task_frames(mbuf, dbuf, q, spec, Tk, Jk)
    else:
        chain_task_frames(mbuf, dbuf, q, spec, Tk, Jk)


@njit(cache=True)
def solve(engine, mbuf, dbuf, buf, q):
    """Solve the IK problem in buf from the guess q (overwritten with the result) on the
    engine's model and data buffers; returns the status."""
    v = ik_views(buf)
    spec, Tk, Jk = v.spec, v.Tk, v.Jk
    ik_start(buf, q)
    while True:
        task_frames(engine, mbuf, dbuf, q, spec, Tk, Jk)
        status = ik_step(buf, q)
        if status != CONTINUE:
            return status


@njit(cache=True)
def residual(engine, mbuf, dbuf, buf, q):
    """Fill the IK buffer's F and J at q (no step): for inspection and tests."""
    v = ik_views(buf)
    task_frames(engine, mbuf, dbuf, q, v.spec, v.Tk, v.Jk)
    assemble(v.spec, v.target, v.basis, v.Tk, v.Jk, v.F, v.J, v.z, v.opts[O_TOL_POS], v.opts[O_TOL_ROT])


# ---------------------------------------------------------------- Python API
@dataclass(frozen=True)
class Task:
    """A target for one point of one frame. frame, for a chain: an int 0..n+1, a joint
    name (the frame that joint moves), "base", "tool" or "com"; for a tree: an
    operational frame (name or index), "com" or "com:<sub-tree>". target: a 4×4 pose
    (POSE, ORIENTATION, AXIS: its rotation; POSITION, POSE: its origin) or a 3-vector
    (POSITION; for AXIS the wanted direction of the frame's axis ``axis``)."""

    frame: int | str
    kind: str
    target: object
    point: tuple[float, float, float] = (0.0, 0.0, 0.0)
    axis: int = 2
    weight: float = 1.0


class IkError(ModelError):
    """An IK problem ended without reaching its target; names the task and its residual."""

    def __init__(self, status: IkStatus, message: str) -> None:
        self.status = status
        super().__init__(message)


@dataclass
class IkResult:
    status: IkStatus
    q: np.ndarray
    iterations: int
    position_residual: float       # m, largest over the tasks
    rotation_residual: float       # rad, largest over the tasks
    worst_task: str                # the task furthest from its tolerance

    @property
    def ok(self) -> bool:
        return self.status == IkStatus.OK

    def message(self) -> str:
        what = {IkStatus.OK: "reached",
                IkStatus.NOT_CONVERGED: f"not converged after {self.iterations} iterations",
                IkStatus.UNREACHABLE: "unreachable (the iteration stalled short of the target)",
                IkStatus.SINGULAR: "singular task Jacobian",
                IkStatus.JOINT_LIMIT: "stalled against joint limits"}[self.status]
        return (f"IK target of {self.worst_task}: {what}, residual {self.position_residual:.3g} m, "
                f"{self.rotation_residual:.3g} rad")

    def raise_for_status(self) -> "IkResult":
        """Return self if OK, else raise :class:`IkError` naming the task and residual."""
        if not self.ok:
            raise IkError(self.status, self.message())
        return self


class IkSolver:
    """IK of a :class:`~models.chain.robot.Robot` (serial chain) or a
    :class:`~models.tree.robot.TreeRobot` (in its current rooting) for a stack of tasks.

    ``solve(q0)`` returns an :class:`IkResult` (status, q, residuals, the worst task:
    never a silent best effort; ``.raise_for_status()`` raises :class:`IkError`).
    ``solve_into(q)`` is the allocation-free form (q in place, status returned);
    ``set_target`` changes a target in place. method "newton" needs as many task rows as
    joints; "dls" takes any stack. weights: W (joint weights, a heavy joint moves
    less); rest: q̄ of the null-space task (default mid-range), null_gain: k₀ (0 = none);
    damping: μ, damping_min: λ₀; tol_pos (m) and tol_rot (rad) per task; max_step
    (rad or m per iteration); step_tol: a smaller step is a stall; singular_tol: the
    relative pivot below which J is singular (module docstring)."""

    def __init__(self, robot, tasks: list[Task], method: str = "dls", weights=None, rest=None,
                 null_gain: float = 0.0, max_iter: int = 200, tol_pos: float = 1e-10,
                 tol_rot: float = 1e-10, damping: float = 0.1, damping_min: float = 1e-6,
                 step_tol: float = 1e-13, max_step: float = 0.5, singular_tol: float = 1e-9) -> None:
        if method not in ("newton", "dls"):
            raise GeometryError(f"IK method must be 'newton' or 'dls', got {method!r}")
        if not tasks:
            raise GeometryError("IK needs at least one task")
        self.robot = robot
        self.engine = TREE if isinstance(robot, TreeRobot) else CHAIN
        n = robot.n
        self.tasks = list(tasks)
        kinds = [self._kind(t) for t in self.tasks]
        rows = sum(KIND_ROWS[k] for k in kinds)
        if method == "newton" and rows != n:
            raise GeometryError(f"Newton-Raphson needs a square task: {rows} task rows for {n} joints")
        sizes = {"n": n, "tasks": len(self.tasks), "rows": rows}
        self.buf = np.zeros(IK.size(**sizes))
        for name, size in sizes.items():
            self.buf[IK.offset(name)] = size
        self._views = IK.views(self.buf, **sizes)
        self._opts, self._spec, self._target, self._basis = (
            self._views.opts, self._views.spec, self._views.target, self._views.basis)
        winv, qrest, qmin, qmax = self._views.winv, self._views.qrest, self._views.qmin, self._views.qmax
        options = {"method": NEWTON if method == "newton" else DLS, "max_iter": max_iter, "tol_pos": tol_pos,
                   "tol_rot": tol_rot, "damping": damping, "damping_min": damping_min, "null_gain": null_gain,
                   "step_tol": step_tol, "max_step": max_step, "singular_tol": singular_tol}
        for name in OPTIONS.names:
            self._opts[OPTIONS.offset(name)] = options[name]
        m = robot.model
        qmin[:], qmax[:] = m.qmin, m.qmax
        w = np.ones(n) if weights is None else robot._vec(weights, "weights")
        if np.any(w <= 0):
            raise GeometryError(f"IK joint weights must be positive, got {w.tolist()}")
        winv[:] = 1.0 / w
        qrest[:] = 0.5 * (m.qmin + m.qmax) if rest is None else robot._vec(rest, "rest")
        self._names = []
        for k, (t, kind) in enumerate(zip(self.tasks, kinds)):
            self._spec[k, S_FRAME] = self._frame(t.frame)
            self._spec[k, S_KIND] = kind
            if t.axis not in (0, 1, 2):
                raise GeometryError(f"IK task {k}: axis must be 0, 1 or 2, got {t.axis}")
            if not (math.isfinite(t.weight) and t.weight > 0.0):
                raise GeometryError(f"IK task {k}: weight must be positive, got {t.weight}")
            if self._spec[k, S_FRAME] == COM_FRAME and kind != POSITION:
                raise GeometryError(f"IK task {k}: the centre of gravity has a position only "
                                    f"({KIND_NAMES[kind]} asked)")
            self._spec[k, S_AXIS] = t.axis
            self._spec[k, S_WEIGHT] = t.weight
            self._spec[k, S_POINT:S_POINT + 3] = _vec3(t.point, f"IK task {k} point")
            self._names.append(f"{KIND_NAMES[kind]} of {t.frame}")
            self.set_target(k, t.target)
        self._q = np.zeros(n)

    @staticmethod
    def _kind(t: Task) -> int:
        if t.kind not in KIND_NAMES:
            raise GeometryError(f"IK task kind must be one of {KIND_NAMES}, got {t.kind!r}")
        return KIND_NAMES.index(t.kind)

    def _frame(self, frame) -> int:
        m = self.robot.model
        if self.engine == TREE:
            names = {name: f for f, name in enumerate(m.frame_names)}
            names.update({("com" if g == 0 else f"com:{name}"): -1 - g for g, name in enumerate(m.group_names)})
            count = len(m.frame_names)
        else:
            names = {"base": 0, "tool": m.n + 1, "com": COM_FRAME}
            names.update({name: i + 1 for i, name in enumerate(m.joint_names)})
            count = m.n + 2
        if isinstance(frame, str):
            if frame not in names:
                raise GeometryError(f"IK task frame {frame!r} is not one of {sorted(names)}")
            return names[frame]
        if not 0 <= int(frame) < count:
            raise GeometryError(f"IK task frame must be in 0..{count - 1}, got {frame}")
        return int(frame)

    def set_target(self, k: int, target) -> None:
        """Replace task k's target (a 4×4 pose or a 3-vector, as in :class:`Task`)."""
        kind = int(self._spec[k, S_KIND])
        t = np.asarray(target, dtype=float)
        T = np.eye(4)
        if t.shape == (4, 4):
            T[:] = t
            R = T[:3, :3]
            if not np.all(np.isfinite(T)) or np.abs(R @ R.T - np.eye(3)).max() > 1e-9:
                raise GeometryError(f"IK target of task {k}: the rotation is not orthonormal")
        elif t.shape == (3,) and kind in (POSITION, AXIS) and np.all(np.isfinite(t)):
            if kind == POSITION:
                T[:3, 3] = t
            else:
                norm = np.linalg.norm(t)
                if not norm > 0:
                    raise GeometryError(f"IK target of task {k}: the axis direction is zero")
                T[:3, int(self._spec[k, S_AXIS])] = t / norm
        else:
            raise GeometryError(f"IK target of task {k} ({KIND_NAMES[kind]}) must be a finite "
                                f"4x4 pose{' or 3-vector' if kind in (POSITION, AXIS) else ''}, "
                                f"got shape {t.shape}")
        self._target[k] = T
        if kind == AXIS:
            a = T[:3, int(self._spec[k, S_AXIS])]
            u = np.cross(a, np.eye(3)[np.argmin(np.abs(a))])
            u /= np.linalg.norm(u)
            self._basis[k] = (u, np.cross(a, u))

    def solve_into(self, q: np.ndarray) -> int:
        """Allocation-free: q (float64, n) is the guess and receives the solution."""
        return solve(self.engine, self.robot.model.buf, self.robot.data.buf, self.buf, q)

    def residual(self, q) -> tuple[np.ndarray, np.ndarray]:
        """(F(q), J(q)) of the stacked, weighted tasks (copies). J = ∂F/∂q, except the
        orientation rows: J_ω, the derivative at the target."""
        residual(self.engine, self.robot.model.buf, self.robot.data.buf, self.buf, self.robot._vec(q, "q"))
        return self._views.F.copy(), self._views.J.copy()

    def solve(self, q0) -> IkResult:
        self._q[:] = self.robot._vec(q0, "q0")
        status = IkStatus(self.solve_into(self._q))
        info = self._views.info
        return IkResult(status, self._q.copy(), int(info[I_ITER]), float(info[I_POS_RES]),
                        float(info[I_ROT_RES]), self._names[int(info[I_WORST])])


def _vec3(x, name: str) -> np.ndarray:
    v = np.asarray(x, dtype=float)
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise GeometryError(f"{name} must be 3 finite numbers, got {x!r}")
    return v
