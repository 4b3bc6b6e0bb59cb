"""Convex polygons in the plane: the hull of a point set and its centroid (Numba,
allocation-free), shared by the gait's ZMP check, the whole-robot stabilizer's support polygon
and the biped plant's ground truth.

The hull is Andrew's monotone chain (Andrew 1979).
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def convex_hull(pts, m, work, hull, area_tol=0.0):
    """Counter-clockwise convex hull of the 2-D points pts[:m] (Andrew's monotone
    chain), without allocating: ``work`` (>= m x 2) receives the points sorted by
    (y, z), ``hull`` (>= 2 m x 2) the hull vertices. Collinear and repeated points
    are dropped, and so is a vertex whose turn spans less than ``area_tol`` (twice the
    triangle's area, in the points' units squared; default: 1e-12 of the set's extent squared). Returns the number of hull vertices h; h < 3 means the points span no
    polygon (fewer than 3, or all on one line)."""
    for i in range(m):                                  # insertion sort by (y, z)
        y, z = pts[i, 0], pts[i, 1]
        k = i
        while k > 0 and (work[k - 1, 0] > y or (work[k - 1, 0] == y and work[k - 1, 1] > z)):
            work[k, 0], work[k, 1] = work[k - 1, 0], work[k - 1, 1]
            k -= 1
        work[k, 0], work[k, 1] = y, z
    scale = 0.0
    for i in range(m):
        scale = max(scale, abs(work[i, 0] - work[0, 0]), abs(work[i, 1] - work[0, 1]))
    tol = max(1e-12 * scale * scale, area_tol)
    h = 0
    for sweep in range(2):                             # lower chain, then upper chain
        start = h
        for t in range(m):
            i = t if sweep == 0 else m - 1 - t
            y, z = work[i, 0], work[i, 1]
            while h >= start + 2 and ((hull[h - 1, 0] - hull[h - 2, 0]) * (z - hull[h - 2, 1])
                                      - (hull[h - 1, 1] - hull[h - 2, 1]) * (y - hull[h - 2, 0])) <= tol:
                h -= 1
            hull[h, 0], hull[h, 1] = y, z
            h += 1
        h -= 1                                         # each chain's last point starts the other
    return h


@njit(cache=True)
def polygon_centroid(poly, h):
    """Area centroid (y, z) of the convex polygon poly[:h] (h >= 3, counter-clockwise)."""
    a = cy = cz = 0.0
    for i in range(h):
        j = i + 1 if i + 1 < h else 0
        c = poly[i, 0] * poly[j, 1] - poly[j, 0] * poly[i, 1]
        a += c
        cy += (poly[i, 0] + poly[j, 0]) * c
        cz += (poly[i, 1] + poly[j, 1]) * c
    return cy / (3.0 * a), cz / (3.0 * a)


def hull(points: np.ndarray) -> np.ndarray:
    """Counter-clockwise convex hull (h, 2) of 2-D points (allocating; tools and checks)."""
    pts = np.ascontiguousarray(points, dtype=np.float64)
    m = pts.shape[0]
    out = np.empty((2 * m + 1, 2))
    h = convex_hull(pts, m, np.empty((m, 2)), out)
    return out[:h].copy()
