"""The sign of a velocity in a Coulomb friction term: exact, or smoothed for a feed-forward.

A model of the plant takes F_c sign(q̇) (Lammari 2012, eq. IV.10). A feed-forward evaluated at a
reference velocity that hovers about zero (a gait's joint at rest between two motions, sampled and
differenced) would flip the whole ±F_c every cycle while the joint stands still, where the real
friction is anything in [−F_c, F_c]: it takes the continuously differentiable form
F_c tanh(q̇ / v_s) instead (Makkar et al. 2005), which is the sign once |q̇| ≫ v_s and 0 at rest.
"""
from __future__ import annotations

import math

from numba import njit


@njit(cache=True, inline="always")
def coulomb_sign(v: float, vs: float) -> float:
    """sign(v) for ``vs`` <= 0, else tanh(v / vs) (module docstring)."""
    if vs <= 0.0:
        return 1.0 if v > 0.0 else (-1.0 if v < 0.0 else 0.0)
    return math.tanh(v / vs)
