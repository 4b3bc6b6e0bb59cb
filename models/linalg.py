"""Small dense SPD linear algebra for the cycle: allocation-free Numba kernels.

Status convention: 0 ok, k > 0 the matrix is not (numerically) symmetric positive
definite, the k-th pivot (1-based) being <= PIVOT_RTOL times its diagonal entry
(NaN fails too). Only the lower triangle of the input is read.
"""
from __future__ import annotations

import math

from numba import njit

PIVOT_RTOL = 1e-13


@njit(cache=True)
def spd_inverse4(a, out):
    """Inverse of a 4×4 SPD matrix by the Schur complement of 2×2 blocks (thesis
    §2.4.3.2, eq. 33-35): A = [[B, C^T], [C, D]], S = D - C B^-1 C^T,
    A^-1 = [[B^-1 + (C B^-1)^T S^-1 (C B^-1), -(S^-1 C B^-1)^T], [-S^-1 C B^-1, S^-1]].
    Relative error ~ eps·κ(A)·κ(B) (explicit 2×2 inverses), fine for inertia
    matrices; :func:`spd_solve` stays at eps·κ(A). The four pivots are those of
    :func:`cholesky`, so both return the same status.
    out is written only on success; it must not alias a."""
    b11 = a[0, 0]
    b21 = a[1, 0]
    b22 = a[1, 1]
    if not b11 > 0.0:
        return 1
    det_b = b11 * b22 - b21 * b21
    if not det_b / b11 > PIVOT_RTOL * b22:
        return 2
    i11 = b22 / det_b          # B^-1 (symmetric)
    i21 = -b21 / det_b
    i22 = b11 / det_b
    c11 = a[2, 0]
    c12 = a[2, 1]
    c21 = a[3, 0]
    c22 = a[3, 1]
    e11 = c11 * i11 + c12 * i21   # E = C B^-1
    e12 = c11 * i21 + c12 * i22
    e21 = c21 * i11 + c22 * i21
    e22 = c21 * i21 + c22 * i22
    s11 = a[2, 2] - (e11 * c11 + e12 * c12)   # S = D - E C^T (eq. 34)
    s21 = a[3, 2] - (e21 * c11 + e22 * c12)
    s22 = a[3, 3] - (e21 * c21 + e22 * c22)
    if not s11 > PIVOT_RTOL * a[2, 2]:
        return 3
    det_s = s11 * s22 - s21 * s21
    if not det_s / s11 > PIVOT_RTOL * a[3, 3]:
        return 4
    t11 = s22 / det_s          # S^-1
    t21 = -s21 / det_s
    t22 = s11 / det_s
    f11 = t11 * e11 + t21 * e21   # F = S^-1 E
    f12 = t11 * e12 + t21 * e22
    f21 = t21 * e11 + t22 * e21
    f22 = t21 * e12 + t22 * e22
    out[0, 0] = i11 + e11 * f11 + e21 * f21   # B^-1 + E^T F
    out[1, 0] = out[0, 1] = i21 + e12 * f11 + e22 * f21
    out[1, 1] = i22 + e12 * f12 + e22 * f22
    out[2, 0] = out[0, 2] = -f11
    out[2, 1] = out[1, 2] = -f12
    out[3, 0] = out[0, 3] = -f21
    out[3, 1] = out[1, 3] = -f22
    out[2, 2] = t11
    out[3, 2] = out[2, 3] = t21
    out[3, 3] = t22
    return 0


@njit(cache=True)
def cholesky(a):
    """In-place Cholesky factorisation A = L L^T of an n×n SPD matrix: the lower
    triangle becomes L, the strict upper triangle is zeroed. On failure a is
    partially overwritten."""
    return cholesky_rtol(a, PIVOT_RTOL)


@njit(cache=True)
def cholesky_rtol(a, rtol):
    """:func:`cholesky` failing when a pivot is <= rtol times its diagonal entry
    (rtol = sin² of the angle between a row of a Gram matrix J Jᵀ and the span of
    the rows before it: a rank test)."""
    n = a.shape[0]
    for j in range(n):
        d = a[j, j]
        for k in range(j):
            d -= a[j, k] * a[j, k]
        if not d > rtol * a[j, j]:
            return j + 1
        ljj = math.sqrt(d)
        a[j, j] = ljj
        for i in range(j + 1, n):
            s = a[i, j]
            for k in range(j):
                s -= a[i, k] * a[j, k]
            a[i, j] = s / ljj
        for i in range(j):
            a[i, j] = 0.0
    return 0


@njit(cache=True)
def cholesky_solve(l, b):
    """Solve L L^T x = b in place (b becomes x), L from :func:`cholesky`."""
    n = l.shape[0]
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= l[i, k] * b[k]
        b[i] = s / l[i, i]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for k in range(i + 1, n):
            s -= l[k, i] * b[k]
        b[i] = s / l[i, i]


@njit(cache=True)
def spd_solve(a, b):
    """Solve A x = b for SPD A: a is overwritten by its Cholesky factor, b by x.
    Returns the :func:`cholesky` status; b is untouched on failure."""
    status = cholesky(a)
    if status == 0:
        cholesky_solve(a, b)
    return status
