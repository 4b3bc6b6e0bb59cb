"""The foot's tilt and the gravity it sees (Gastebois 2017, eq. 45-47).

World frame (M, x_g, y_g, z_g), x_g UP; the foot frame R0 is turned by the
roll/pitch pair (alpha, beta) of the ground: R_M->O0 of eq. 46. A robot YAML's
``gravity`` is the level-floor vector (R0 = world); on tilted ground the chain
feels g_base = R_M->O0^T g in R0 axes. The stabilizer (its ground module), the
controller's feed-forward and the simulated plant all take the rotation from here.
"""
from __future__ import annotations

import math

from numba import njit


@njit(cache=True, inline="always")
def _rows(alpha, beta):
    """The nine entries of R_M->O0 (eq. 46), row by row: Rz(alpha) then the beta
    pitch of eq. 45."""
    ca, sa = math.cos(alpha), math.sin(alpha)
    cb, sb = math.cos(beta), math.sin(beta)
    return (ca * cb, -sa, -ca * sb,
            sa * cb, ca, -sa * sb,
            sb, 0.0, cb)


@njit(cache=True)
def rotation_world_foot(alpha, beta, R):
    """R_M->O0 of thesis eq. 46: its columns are the axes of R0 in world coordinates."""
    r = _rows(alpha, beta)
    for i in range(3):
        for j in range(3):
            R[i, j] = r[3 * i + j]


@njit(cache=True)
def tilted_gravity(alpha, beta, g, out):
    """out = R_M->O0(alpha, beta)^T g: the level-floor gravity ``g`` in the axes of
    the tilted foot frame R0 (eq. 46). ``out`` must not alias ``g``."""
    r = _rows(alpha, beta)
    for j in range(3):
        out[j] = r[j] * g[0] + r[3 + j] * g[1] + r[6 + j] * g[2]


@njit(cache=True)
def sole_gravity(alpha, beta, g, out):
    """out = R^T g with R = RotX(alpha) RotY(beta): the level-floor gravity ``g`` in the axes of a
    sole (z up) standing on a platform rolled by alpha about the world's x (forward), then pitched
    by beta about the rolled y, as the whole-robot stabilizer tilts it (stabilizer.whole_body,
    apparent_up; docs/multi_cog.md). ``out`` must not alias ``g``."""
    ca, sa = math.cos(alpha), math.sin(alpha)
    cb, sb = math.cos(beta), math.sin(beta)
    # rows of R = RotX(alpha) RotY(beta)
    r = (cb, 0.0, sb,
         sa * sb, ca, -sa * cb,
         -ca * sb, sa, ca * cb)
    for j in range(3):
        out[j] = r[j] * g[0] + r[3 + j] * g[1] + r[6 + j] * g[2]
