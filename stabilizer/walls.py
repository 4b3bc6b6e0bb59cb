"""Virtual walls: vertical planes through the support polygon's edges (thesis
§2.5.7-2.5.8, eq. 52-71).

Wall i contains the edge V_i -> V_{i+1} and the vertical x_g (eq. 57, 60, 63,
66), so its normal has no x_g component: wall i is stored as (n_y, n_z, c) with
(n_y, n_z) the unit INNER normal and c = -n . V_i, the plane being
n_y y + n_z z + c = 0 (eq. 69 normalised). The distance of G to the wall (eq. 70-71)
is kept SIGNED:

    d_i = n_y y_G + n_z z_G + c,    > 0 inside, < 0 beyond the wall,

so that a CoG beyond a wall is still pushed back inside (eq. 71 takes |.|, which
would push it further out).

For the thesis' rectangle with vertices A', B', C', D' the edges AB, BC, CD, DA
are the walls P4, P2, P3, P1 of eq. 69 with the inner normals n4, n2, n3, n1 of
eq. 74.
"""
from __future__ import annotations

import math

from numba import njit


@njit(cache=True)
def compute_walls(poly, nv, orientation, walls):
    """walls[i] = (n_y, n_z, c) of the wall on edge i (V_i -> V_{i+1}); the inner
    normal is the edge turned by +90 deg for a counter-clockwise polygon
    (orientation = +1), by -90 deg for a clockwise one (-1)."""
    for i in range(nv):
        j = i + 1 if i + 1 < nv else 0
        ey = poly[j, 0] - poly[i, 0]
        ez = poly[j, 1] - poly[i, 1]
        inv = orientation / math.sqrt(ey * ey + ez * ez)
        ny = -ez * inv
        nz = ey * inv
        walls[i, 0] = ny
        walls[i, 1] = nz
        walls[i, 2] = -(ny * poly[i, 0] + nz * poly[i, 1])


@njit(cache=True)
def signed_distances(walls, nv, gy, gz, d):
    """Signed distances (eq. 70-71 without |.|) of the point (gy, gz) to every
    wall; returns the smallest (the stability margin, < 0 outside)."""
    dmin = math.inf
    for i in range(nv):
        di = walls[i, 0] * gy + walls[i, 1] * gz + walls[i, 2]
        d[i] = di
        dmin = min(dmin, di)
    return dmin
