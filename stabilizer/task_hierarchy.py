"""Prioritised, weighted, damped least squares: the coherence of several virtual robots.

Tasks k = 1..K, each a Jacobian J_k (m_k x n) and a desired task velocity xd_k, are
solved in order of priority (Nakamura, Hanafusa & Yoshikawa 1987; Siciliano & Slotine
1991). The joint rates are built up level by level,

    qd_k = qd_{k-1} + Z_{k-1} y_k,    y_k = argmin |J_k Z_{k-1} y - (xd_k - J_k qd_{k-1})|^2 + lam_k^2 |y|^2,

where the columns of Z_{k-1} span the null space of J_1 .. J_{k-1} (and of the locked
joints), W-orthonormal: Z^T W Z = I, W the joint weights. Since J_i Z_{k-1} = 0 for
every i < k, level k changes no higher task's velocity, whatever its own rank, damping
or desired velocity: this is the coherence the stabilizer relies on (docs/multi_cog.md).
y_k is the damped least-squares solution (Jacobian course, damped least squares) of the
task restricted to Z_{k-1}: y = Jz^T (Jz Jz^T + lam^2 I)^-1 e, Jz = J_k Z_{k-1}; with
Z_0 = W^-1/2 it is the weighted damped pseudo-inverse of the bench stabilizer (thesis
eq. 44) at the first level.

The next basis is Z_k = Z_{k-1} Q_2, with Jz^T = [Q_1 Q_2] [R; 0] a Householder QR: the
m_k columns of Q_1 span Jz's row space, the rest its null space (all m_k are removed,
even a direction the task barely uses near a singularity, so the property above is
exact). Everything works in place on caller-provided arrays; ``@njit(cache=True)``.
"""
from __future__ import annotations

import math

from numba import njit

from models.linalg import spd_solve

from stabilizer.virtual_robot import damping_factor

JACOBI_SWEEPS = 8


@njit(cache=True)
def start_basis(W, locked, Z):
    """Z_0 = W^-1/2 restricted to the joints that are not locked (locked[i] != 0 keeps
    joint i still at every level). Returns its number of columns r."""
    n = W.shape[0]
    r = 0
    for i in range(n):
        for c in range(n):
            Z[i, c] = 0.0
    for i in range(n):
        if locked[i] == 0.0:
            Z[i, r] = 1.0 / math.sqrt(W[i])
            r += 1
    return r


@njit(cache=True)
def smallest_eigenvalue(A, m, work):
    """Smallest eigenvalue of the symmetric m x m matrix A[:m, :m] by cyclic Jacobi
    rotations (JACOBI_SWEEPS sweeps, ample for m <= 6); A is left untouched, work
    (>= m x m) is scratch."""
    for i in range(m):
        for j in range(m):
            work[i, j] = A[i, j]
    for _ in range(JACOBI_SWEEPS):
        off = 0.0
        for p in range(m):
            for q in range(p + 1, m):
                off += work[p, q] * work[p, q]
        if off <= 1e-30:
            break
        for p in range(m):
            for q in range(p + 1, m):
                apq = work[p, q]
                if apq == 0.0:
                    continue
                theta = (work[q, q] - work[p, p]) / (2.0 * apq)
                t = (1.0 if theta >= 0.0 else -1.0) / (abs(theta) + math.sqrt(theta * theta + 1.0))
                c = 1.0 / math.sqrt(t * t + 1.0)
                s = t * c
                for k in range(m):
                    akp, akq = work[k, p], work[k, q]
                    work[k, p] = c * akp - s * akq
                    work[k, q] = s * akp + c * akq
                for k in range(m):
                    apk, aqk = work[p, k], work[q, k]
                    work[p, k] = c * apk - s * aqk
                    work[q, k] = s * apk + c * aqk
    lo = work[0, 0]
    for i in range(1, m):
        lo = min(lo, work[i, i])
    return lo


@njit(cache=True)
def solve_level(J, m, xd, Z, r, lam_min, lam_max, threshold, qd, Jz, M, e, hv, work):
    """Add level (J[:m], xd[:m]) to qd within span Z[:, :r], then restrict Z to the null
    space of J Z (module docstring). Scratch: Jz (>= m x n), M and work (>= m x m), e
    (>= m), hv (>= n). Returns (status, new r, sigma): status is models.linalg's (0 ok),
    sigma the smallest singular value of J Z (the task's distance to a singularity)."""
    n = qd.shape[0]
    for a in range(m):
        s = xd[a]
        for j in range(n):
            s -= J[a, j] * qd[j]
        e[a] = s
        for c in range(r):
            acc = 0.0
            for i in range(n):
                acc += J[a, i] * Z[i, c]
            Jz[a, c] = acc
    for a in range(m):
        for b in range(a + 1):
            acc = 0.0
            for c in range(r):
                acc += Jz[a, c] * Jz[b, c]
            M[a, b] = M[b, a] = acc
    lo = smallest_eigenvalue(M, m, work)
    sigma = math.sqrt(lo) if lo > 0.0 else 0.0
    lam2 = damping_factor(sigma, lam_min, lam_max, threshold)
    if r == 0:
        return 0, 0, sigma
    for a in range(m):
        M[a, a] += lam2
    status = spd_solve(M[:m, :m], e[:m])
    if status != 0:
        return status, r, sigma
    for c in range(r):                                   # y = Jz^T w, qd += Z y
        y = 0.0
        for a in range(m):
            y += Jz[a, c] * e[a]
        if y != 0.0:
            for i in range(n):
                qd[i] += Z[i, c] * y
    return 0, restrict_basis(Jz, m, Z, r, hv), sigma


@njit(cache=True)
def restrict_basis(Jz, m, Z, r, hv):
    """Z[:, :r] <- Z Q_2 with Jz^T = Q R (Householder): the first min(m, r) directions
    of Q (Jz's row space) are removed and the rest shifted left. Jz is overwritten.
    Returns the new number of columns."""
    n = Z.shape[0]
    k_end = min(m, r)
    for k in range(k_end):
        norm2 = 0.0
        for c in range(k, r):
            norm2 += Jz[k, c] * Jz[k, c]
        if norm2 == 0.0:
            continue                                     # Q's column k is e_k already
        alpha = -math.sqrt(norm2) if Jz[k, k] >= 0.0 else math.sqrt(norm2)
        vn2 = 0.0
        for c in range(k, r):
            hv[c] = Jz[k, c]
        hv[k] -= alpha
        for c in range(k, r):
            vn2 += hv[c] * hv[c]
        if vn2 == 0.0:
            continue
        f = 2.0 / vn2
        for a in range(k, m):                            # rows of Jz = columns of Jz^T
            d = 0.0
            for c in range(k, r):
                d += Jz[a, c] * hv[c]
            d *= f
            for c in range(k, r):
                Jz[a, c] -= d * hv[c]
        for i in range(n):                               # Z <- Z H_k
            d = 0.0
            for c in range(k, r):
                d += Z[i, c] * hv[c]
            d *= f
            for c in range(k, r):
                Z[i, c] -= d * hv[c]
    for i in range(n):
        for c in range(k_end, r):
            Z[i, c - k_end] = Z[i, c]
        for c in range(r - k_end, r):
            Z[i, c] = 0.0
    return r - k_end


@njit(cache=True)
def posture_level(W, qd0, Z, r, qd):
    """Lowest level, a full joint-space target: qd += Z Z^T W (qd0 - qd), the W-closest
    point to qd0 that leaves every higher task's velocity unchanged."""
    n = qd.shape[0]
    for c in range(r):
        y = 0.0
        for i in range(n):
            y += Z[i, c] * W[i] * (qd0[i] - qd[i])
        if y != 0.0:
            for i in range(n):
                qd[i] += Z[i, c] * y
