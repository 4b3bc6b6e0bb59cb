"""Support polygon: the foot outline projected on the plane orthogonal to gravity
through M (thesis §2.5.6, eq. 48-51).

The foot outline is a convex polygon in the sole plane, given by its vertices
(y0, z0) in R0 axes (the sole lies at x0 = -Delta). The thesis' rectangle of
Figure 20 is the default: A' = (a, b), B' = (a, -c), C' = (-a, -c), D' = (-a, b)
(toe at z0 = +b, heel at z0 = -c, half-width a). A sole point is
(0, y0, z0 - Z) in foot axes centred on M, so its world position is
R_M->O0 (0, y0, z0 - Z) (eq. 48-49) and its projection keeps the (y_g, z_g)
components (eq. 50-51):

    y* = ca y0 - sa sb (z0 - Z),    z* = cb (z0 - Z).

This map is linear with determinant ca cb > 0 for |alpha|, |beta| < 90 deg, so a
convex outline stays convex and keeps its orientation under any admissible tilt.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from models.common.errors import ConfigError

MAX_VERTICES = 32


def rectangle_outline(a: float, b: float, c: float) -> np.ndarray:
    """The thesis' foot (Figure 20) as vertices A', B', C', D' in (y0, z0)."""
    return np.array([[a, b], [a, -c], [-a, -c], [-a, b]], dtype=np.float64)


def outline_orientation(vertices: np.ndarray, where: str, key: str) -> float:
    """+1 for a counter-clockwise outline in the (y, z) plane, -1 for clockwise.

    Raises :class:`ConfigError` unless the outline is a strictly convex simple
    polygon of 3..MAX_VERTICES finite vertices."""
    v = np.asarray(vertices, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] != 2 or not 3 <= v.shape[0] <= MAX_VERTICES:
        raise ConfigError(where, key, f"expected 3 to {MAX_VERTICES} vertices [y, z], got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ConfigError(where, key, "vertices must be finite")
    e = np.roll(v, -1, axis=0) - v
    lengths = np.hypot(e[:, 0], e[:, 1])
    scale = float(lengths.max())
    if lengths.min() <= 1e-9 * scale:
        raise ConfigError(where, key, f"vertex {int(lengths.argmin())} repeats the next one")
    turn = e[:, 0] * np.roll(e, -1, axis=0)[:, 1] - e[:, 1] * np.roll(e, -1, axis=0)[:, 0]
    tol = 1e-9 * scale * scale
    if not (np.all(turn > tol) or np.all(turn < -tol)):
        raise ConfigError(where, key, "the foot outline must be strictly convex (every turn the same way)")
    winding = float(np.arctan2(turn, (e * np.roll(e, -1, axis=0)).sum(axis=1)).sum())
    if abs(abs(winding) - 2.0 * np.pi) > 1e-6:
        raise ConfigError(where, key, "the foot outline crosses itself")
    return 1.0 if turn[0] > 0.0 else -1.0


@njit(cache=True)
def project_outline(outline, nv, R, Z, poly):
    """Vertices of the support polygon in world (y_g, z_g), eq. 50-51 generalised
    to any outline: poly[i] = projection of R_M->O0 (0, y0_i, z0_i - Z)."""
    for i in range(nv):
        y0 = outline[i, 0]
        z0 = outline[i, 1] - Z
        poly[i, 0] = R[1, 1] * y0 + R[1, 2] * z0
        poly[i, 1] = R[2, 1] * y0 + R[2, 2] * z0
