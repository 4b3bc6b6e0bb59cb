"""Closed-form inverse geometric model of Lammari's 5-joint measuring arm
(Lammari 2012, §VI.5.5, eq. VI.1-VI.11, with the errata of docs/errata.md fixed).

The task is the probe tip P = O5 and the direction of Y5 (the unit normal n of the
touched plane). Every branch is returned: q1 on either side of the base axis, the two
half-angle roots of eq. VI.5 for q2, and the two signs of s5 for the wrist.
"""
from __future__ import annotations

import math

import numpy as np

from models.common.errors import GeometryError

HALF_PI = 0.5 * math.pi


def arm5_lengths(model) -> tuple[float, float, float]:
    """(r1, d3, r4) of a model with the arm's structure (Lammari 2012, tableau VI.2:
    alpha = 0, 90°, 0, 90°, −90°, only r1, d3, r4 non-zero, revolute, no tool offset);
    GeometryError if the chain is not that arm."""
    m = model.mdh
    ok = model.n == 5 and not model.jtype.any() and np.allclose(model.tool, np.eye(4), atol=1e-12)
    if ok:
        r1, d3, r4 = float(m[0, 3]), float(m[2, 1]), float(m[3, 3])
        shape = np.zeros((5, 4))
        shape[:, 0] = (0.0, HALF_PI, 0.0, HALF_PI, -HALF_PI)
        shape[0, 3], shape[2, 1], shape[3, 3] = r1, d3, r4
        ok = np.allclose(m, shape, atol=1e-12) and d3 > 0.0 and r4 > 0.0
    if not ok:
        raise GeometryError(f"{model.name}: not the 5-joint arm of Lammari 2012 (tableau VI.2 structure)")
    return r1, d3, r4


def half_angle_roots(a: float, b: float, c: float) -> tuple[float, float] | None:
    """Both roots q of a cos q + b sin q = c (Lammari 2012, eq. VI.5) by the half-angle
    substitution t = tan(q/2): t = (b ± √(a² + b² − c²))/(a + c) (the printed first
    root has −b: docs/errata.md). The root whose numerator cancels is taken in the
    equal form t = (c − a)/(b ∓ √…) (as the stable quadratic formula), and atan2 keeps
    a + c = 0 (t = ∞, q = π). None if a² + b² < c² (out of reach)."""
    disc = a * a + b * b - c * c
    if disc < 0.0:
        return None
    s = math.sqrt(disc)
    roots = []
    for sign in (1.0, -1.0):
        if sign * b >= 0.0:
            roots.append(_wrap(2.0 * math.atan2(b + sign * s, a + c)))
        else:
            roots.append(_wrap(2.0 * math.atan2(c - a, b - sign * s)))
    return roots[0], roots[1]


def wrist_cosine(e: float, n3: float, s23: float, c23: float) -> float:
    """c5 = E s23 + n3 c23 (Lammari 2012, from eq. VI.8 and VI.10; printed without
    the factor c23: docs/errata.md)."""
    return e * s23 + n3 * c23


def arm5_ik(model, p, normal) -> np.ndarray:
    """All solutions (k, 5), k <= 8, of T_5^0(q) with origin p and Y5 = normal (unit),
    angles wrapped to (−π, π], limits not applied. Rows in branch order: q1 = atan2(Py, Px)
    first (then atan2(−Py, −Px)); per q1, the + then the − root of eq. VI.5; per q2,
    s5 >= 0 then s5 < 0. A position out of reach gives no row for that q1. At the wrist
    singularity (s5 = 0) q4 is free and set to 0. GeometryError when p is on the base
    axis (q1 undetermined) or normal is not a unit vector."""
    r1, d3, r4 = arm5_lengths(model)
    px, py, pz = (float(v) for v in np.asarray(p, dtype=float))
    n1, n2, n3 = (float(v) for v in np.asarray(normal, dtype=float))
    if abs(n1 * n1 + n2 * n2 + n3 * n3 - 1.0) > 1e-9:
        raise GeometryError(f"{model.name}: the Y5 direction must be a unit vector, got norm "
                            f"{math.sqrt(n1 * n1 + n2 * n2 + n3 * n3):.9g}")
    if math.hypot(px, py) < 1e-12:
        raise GeometryError(f"{model.name}: the point is on the base axis z0, q1 is undetermined")
    rows = []
    base = math.atan2(py, px)                            # eq. VI.1-VI.2 by atan2 (docs/errata.md)
    for q1 in (base, _wrap(base + math.pi)):
        c1, s1 = math.cos(q1), math.sin(q1)
        a = px * c1 + py * s1
        b = pz - r1
        c = (a * a + b * b + d3 * d3 - r4 * r4) / (2.0 * d3)
        roots = half_angle_roots(a, b, c)
        if roots is None:
            continue
        for q2 in roots:
            s23 = (a - d3 * math.cos(q2)) / r4           # eq. VI.4
            c23 = (-b + d3 * math.sin(q2)) / r4
            q3 = _wrap(math.atan2(s23, c23) - q2)
            e = -n1 * c1 - n2 * s1                       # eq. VI.10
            s4s5 = n2 * c1 - n1 * s1                     # eq. VI.9
            c4s5 = e * c23 - n3 * s23                    # eq. VI.11
            c5 = wrist_cosine(e, n3, s23, c23)
            s5 = math.hypot(s4s5, c4s5)
            for sign in (1.0, -1.0):
                q4 = math.atan2(sign * s4s5, sign * c4s5)
                q5 = math.atan2(sign * s5, c5)
                rows.append((q1, q2, q3, q4, q5))
    return np.array(rows).reshape(-1, 5)


def _wrap(x: float) -> float:
    return math.atan2(math.sin(x), math.cos(x))
