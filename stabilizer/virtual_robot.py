"""The virtual CoG robot (thesis §2.5.3-2.5.4, §2.5.11, Figure 27).

The leg's CoG G is the end-effector of a virtual robot with the leg's joints and
the lengths l_iG of eq. 42 (models.chain.leg). It does not resist the virtual forces:

1. admittance: G moves with the velocity v of a virtual damper D (optionally a
   virtual mass M) pushed by the total field force F, integrated by a linearly
   implicit Euler step so that the stiff Coulomb walls cannot make it ring
   (:func:`admittance_velocity`);
2. joint rates: a weighted, damped least-squares inverse of the CoG Jacobian in
   world axes J_w = R_M->O0 J_G (eq. 44, 46), i.e. the minimiser of
   |S^1/2 (J_w qd - v)|^2 + lambda^2 |qd - qd0|_W^2 (:func:`resolve_rates`).
   W is the thesis' torque-balancing weight (§2.5.12), S weights the task rows
   (the vertical row is 0 when, as in the thesis, the height is left to the
   pseudo-inverse), lambda grows near singularities (:func:`damping_factor`) and
   qd0 is the null-space posture term: since I - J# J_w = lambda^2 H^-1 W for
   this inverse, pulling qd towards qd0 in the W-metric is exactly adding the
   projected posture rate. H = J_w^T S J_w + lambda^2 W is a 4 x 4 SPD matrix
   inverted by the Schur complement (models.linalg.spd_inverse4, thesis eq. 33-35);
3. limits: joints that would leave [qmin + margin, qmax - margin] are locked
   and the rest re-solved (:func:`lock_joint_limits`), then the rates are scaled
   uniformly into the velocity limits (:func:`scale_to_velocity_limits`) and
   integrated; the joint positions are the physical robot's references.
"""
from __future__ import annotations

import math

from numba import njit

from models.linalg import spd_inverse4, spd_solve


@njit(cache=True)
def admittance_velocity(mass, damping, dt, vmax, v, F, K, C, A):
    """Velocity of G after one step of M dv/dt + (D + C) v = F(G), linearly
    implicit in the stabilising stiffness K >= 0 of the fields:

        (M/dt + D + C + dt K) v+ = M/dt v + F

    v is updated in place (world axes), then clipped to |v| <= vmax. A is 3 x 3
    scratch. Returns (status, clipped): status is models.linalg's (0 ok)."""
    mdt = mass / dt
    for a in range(3):
        for b in range(3):
            A[a, b] = C[a, b] + dt * K[a, b]
        A[a, a] += mdt + damping
    for a in range(3):
        v[a] = mdt * v[a] + F[a]
    status = spd_solve(A, v)
    if status != 0:
        return status, False
    speed = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    if speed > vmax:
        s = vmax / speed
        for a in range(3):
            v[a] *= s
        return 0, True
    return 0, False


@njit(cache=True)
def smallest_task_singular_value(Jw, S, W, A):
    """Smallest singular value of S^1/2 J_w W^-1/2 over the active task rows
    (the vertical row is inactive when S[0] == 0): square root of the smallest
    eigenvalue of S^1/2 J_w W^-1 J_w^T S^1/2, in closed form (2 x 2, or the
    trigonometric solution of the 3 x 3 characteristic cubic). A: 3 x 3 scratch."""
    n = Jw.shape[1]
    for a in range(3):
        for b in range(a, 3):
            s = 0.0
            for j in range(n):
                s += Jw[a, j] * Jw[b, j] / W[j]
            A[a, b] = A[b, a] = s * math.sqrt(S[a] * S[b])
    if S[0] == 0.0:
        m = 0.5 * (A[1, 1] + A[2, 2])
        h = 0.5 * (A[1, 1] - A[2, 2])
        lam = m - math.sqrt(h * h + A[1, 2] * A[1, 2])
    else:
        p1 = A[0, 1] * A[0, 1] + A[0, 2] * A[0, 2] + A[1, 2] * A[1, 2]
        q = (A[0, 0] + A[1, 1] + A[2, 2]) / 3.0
        d0, d1, d2 = A[0, 0] - q, A[1, 1] - q, A[2, 2] - q
        p = math.sqrt((d0 * d0 + d1 * d1 + d2 * d2 + 2.0 * p1) / 6.0)
        if p <= 1e-300:
            lam = q
        else:
            det = (d0 * (d1 * d2 - A[1, 2] * A[1, 2]) - A[0, 1] * (A[0, 1] * d2 - A[1, 2] * A[0, 2])
                   + A[0, 2] * (A[0, 1] * A[1, 2] - d1 * A[0, 2]))
            r = 0.5 * det / (p * p * p)
            r = min(1.0, max(-1.0, r))
            lam = q + 2.0 * p * math.cos(math.acos(r) / 3.0 + 2.0 * math.pi / 3.0)
    return math.sqrt(lam) if lam > 0.0 else 0.0


@njit(cache=True)
def damping_factor(sigma, lam_min, lam_max, threshold):
    """lambda^2 of the damped least squares: lam_min^2 everywhere, plus
    lam_max^2 (1 - (sigma/threshold)^2) when the smallest singular value sigma
    falls below the threshold (Chiaverini's variable damping, Jacobian course, damped least squares)."""
    lam2 = lam_min * lam_min
    if sigma < threshold:
        x = sigma / threshold
        lam2 += lam_max * lam_max * (1.0 - x * x)
    return lam2


@njit(cache=True)
def resolve_rates(Jw, S, W, lam2, v, qd0, locked, H, Hinv, qd):
    """qd = argmin |S^1/2 (J_w qd - v)|^2 + lam2 |qd - qd0|_W^2 with the locked
    joints (locked[i] != 0) held still: H = J_w^T S J_w + lam2 W, qd = H^-1 (J_w^T S v + lam2 W qd0),
    locked rows/columns of H replaced by the identity. Returns spd_inverse4's
    status (qd untouched on failure)."""
    n = Jw.shape[1]
    for i in range(n):
        for j in range(i + 1):
            if locked[i] != 0.0 or locked[j] != 0.0:
                h = 1.0 if i == j else 0.0
            else:
                h = S[0] * Jw[0, i] * Jw[0, j] + S[1] * Jw[1, i] * Jw[1, j] + S[2] * Jw[2, i] * Jw[2, j]
                if i == j:
                    h += lam2 * W[i]
            H[i, j] = H[j, i] = h
    status = spd_inverse4(H, Hinv)
    if status != 0:
        return status
    for i in range(n):
        acc = 0.0
        for j in range(n):
            if locked[j] == 0.0:
                bj = (S[0] * Jw[0, j] * v[0] + S[1] * Jw[1, j] * v[1] + S[2] * Jw[2, j] * v[2]
                      + lam2 * W[j] * qd0[j])
                acc += Hinv[i, j] * bj
        qd[i] = 0.0 if locked[i] != 0.0 else acc
    return 0


@njit(cache=True)
def lock_joint_limits(Jw, S, W, lam2, v, qd0, q, qmin, qmax, margin, dt, locked, H, Hinv, qd):
    """Lock every joint whose rate would carry it beyond [qmin + margin,
    qmax - margin] (or further beyond, if it already is) and re-solve with the
    others, until no new joint needs locking. ``locked`` (1.0 = locked) must come
    in cleared and
    ``qd`` hold the unconstrained solution. Returns (status, number locked)."""
    n = q.shape[0]
    nlocked = 0
    for _ in range(n):
        new = False
        for i in range(n):
            if locked[i] != 0.0:
                continue
            nxt = q[i] + qd[i] * dt
            if (qd[i] < 0.0 and nxt < qmin[i] + margin) or (qd[i] > 0.0 and nxt > qmax[i] - margin):
                locked[i] = 1.0
                nlocked += 1
                new = True
        if not new:
            break
        status = resolve_rates(Jw, S, W, lam2, v, qd0, locked, H, Hinv, qd)
        if status != 0:
            return status, nlocked
    return 0, nlocked


@njit(cache=True)
def scale_to_velocity_limits(qd, vmax):
    """Scale qd uniformly (its direction, hence the CoG's, is kept) so that
    |qd_i| <= vmax_i. Returns True when it had to."""
    s = 1.0
    for i in range(qd.shape[0]):
        a = abs(qd[i])
        if a * s > vmax[i]:
            s = vmax[i] / a
    if s < 1.0:
        for i in range(qd.shape[0]):
            qd[i] *= s
        return True
    return False


@njit(cache=True)
def integrate(q, qd, dt, qmin, qmax):
    """q += qd dt, clamped into the joint limits (a joint already beyond a limit,
    e.g. started there, is held rather than snapped back); qd is set to the rate
    actually applied. Returns True if it clamped."""
    clamped = False
    for i in range(q.shape[0]):
        lo = min(qmin[i], q[i])
        hi = max(qmax[i], q[i])
        x = q[i] + qd[i] * dt
        if x < lo or x > hi:
            x = lo if x < lo else hi
            qd[i] = (x - q[i]) / dt
            clamped = True
        q[i] = x
    return clamped


@njit(cache=True)
def advance(q, qd, dt, qmin, qmax, q_ref):
    """One step of the virtual robot: q_ref = q + qd dt within the joint limits
    (:func:`integrate`, qd set to the rate applied), then q = q_ref. Returns True if it clamped."""
    for i in range(q.shape[0]):
        q_ref[i] = q[i]
    clamped = integrate(q_ref, qd, dt, qmin, qmax)
    for i in range(q.shape[0]):
        q[i] = q_ref[i]
    return clamped
