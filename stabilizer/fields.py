"""Virtual force fields acting on the CoG (thesis §2.5.9-2.5.10, eq. 72-78).

Repulsive walls: wall i pushes G along its inner normal n_i with a magnitude
f(d_i) of its SIGNED distance d_i (eq. 72-76, with the errata of docs/errata.md:
F_G4 uses Delta_4, F_G3 has a zero x component, F_G4's signs follow n4).
Attractor: G is pulled towards G+ with a magnitude m(Delta), Delta = |G G+|
(eq. 77-78).

Laws (integer codes, so that Numba can switch on them) and their shape
parameter p:

=============  ==========================  ====================================
code           repulsive f(d)              attractive m(Delta)
=============  ==========================  ====================================
COULOMB        k / d^2  (eq. 72)           k / Delta^2  (eq. 78)
INVERSE_POWER  k / d^p                     k / Delta^p
EXPONENTIAL    k exp(-d / p)               k exp(-Delta / p)
SPRING_DAMPER  k max(0, p - d) (range p)   k Delta
=============  ==========================  ====================================

SPRING_DAMPER also adds a viscous term of coefficient c: along n_i n_i^T inside
the wall's range, isotropic for the attractor. It is not a force computed from a
finite difference: it enters the admittance's damping matrix (virtual_robot).

Regularisation, so that nothing divides by zero:

* walls: SATURATION at the distance r > 0: f(d) is held at f(r) for every
  d <= r, including a CoG beyond the wall (d < 0), which is therefore still
  pushed back inside with the largest force;
* attractor: a SOFTENING radius r > 0 (the field of a uniformly charged ball):
  for Delta <= r, m = m(r) Delta / r, a linear spring vanishing at G+, so the
  attractor has a true equilibrium instead of an infinite force there.

Each evaluation also accumulates the *stabilising stiffness* K (3 x 3, positive
semi-definite, = minus the stable part of dF/dG) and the viscous matrix C, which
the admittance integrates implicitly (see virtual_robot.admittance_velocity).
"""
from __future__ import annotations

import math

from numba import njit

COULOMB = 0
INVERSE_POWER = 1
EXPONENTIAL = 2
SPRING_DAMPER = 3
LAW_NAMES = ("coulomb", "inverse_power", "exponential", "spring_damper")


@njit(cache=True)
def repulsive_law(law, k, p, d):
    """(f(d), f'(d)) of a wall law for d > 0 (see the module table)."""
    if law == COULOMB:
        f = k / (d * d)
        return f, -2.0 * f / d
    if law == INVERSE_POWER:
        f = k / d ** p
        return f, -p * f / d
    if law == EXPONENTIAL:
        f = k * math.exp(-d / p)
        return f, -f / p
    if d < p:                                   # SPRING_DAMPER
        return k * (p - d), -k
    return 0.0, 0.0


@njit(cache=True)
def attractive_law(law, k, p, x):
    """(m(x), m'(x)) of an attractor law for x > 0 (see the module table)."""
    if law == COULOMB:
        m = k / (x * x)
        return m, -2.0 * m / x
    if law == INVERSE_POWER:
        m = k / x ** p
        return m, -p * m / x
    if law == EXPONENTIAL:
        m = k * math.exp(-x / p)
        return m, -m / p
    return k * x, k                             # SPRING_DAMPER


@njit(cache=True)
def wall_forces(walls, d, nv, law, gains, r, p, c, F, K, C):
    """Force of every wall on G, eq. 72-76: F[i] = f(max(d_i, r)) (0, n_iy, n_iz).

    Adds -f'(d_i) n_i n_i^T to K (zero in the saturated zone) and, for the
    spring-damper law, c n_i n_i^T to C for the walls within range.
    Returns the number of saturated walls (d_i <= r)."""
    saturated = 0
    for i in range(nv):
        di = d[i]
        if di <= r:
            f, _ = repulsive_law(law, gains[i], p, r)
            stiff = 0.0
            saturated += 1
        else:
            f, fp = repulsive_law(law, gains[i], p, di)
            stiff = -fp
        ny, nz = walls[i, 0], walls[i, 1]
        F[i, 0] = 0.0                            # erratum of eq. 76: no x component
        F[i, 1] = f * ny
        F[i, 2] = f * nz
        visc = c if (law == SPRING_DAMPER and di < p) else 0.0
        K[1, 1] += stiff * ny * ny
        K[1, 2] += stiff * ny * nz
        K[2, 1] += stiff * ny * nz
        K[2, 2] += stiff * nz * nz
        C[1, 1] += visc * ny * ny
        C[1, 2] += visc * ny * nz
        C[2, 1] += visc * ny * nz
        C[2, 2] += visc * nz * nz
    return saturated


@njit(cache=True)
def attractor_force(G, target, law, k, r, p, c, F, K, C):
    """Attraction of G towards G+ = target, eq. 77-78: F = m(Delta) u with
    u = (G+ - G) / Delta, softened inside the radius r (module docstring).

    Adds the stable part of -dF/dG to K: (m / Delta)(I - u u^T) across the line
    G G+, plus m' u u^T along it when m' > 0 (the spring; Coulomb's m' < 0 would
    destabilise an implicit step and is left explicit); inside r, (m(r) / r) I.
    Adds c I to C for the spring-damper law."""
    dx = target[0] - G[0]
    dy = target[1] - G[1]
    dz = target[2] - G[2]
    delta = math.sqrt(dx * dx + dy * dy + dz * dz)
    if delta <= r:
        mr, _ = attractive_law(law, k, p, r)
        s = mr / r
        F[0], F[1], F[2] = s * dx, s * dy, s * dz
        for a in range(3):
            K[a, a] += s
    else:
        m, mp = attractive_law(law, k, p, delta)
        inv = 1.0 / delta
        ux, uy, uz = dx * inv, dy * inv, dz * inv
        F[0], F[1], F[2] = m * ux, m * uy, m * uz
        across = m * inv
        along = (max(0.0, mp)) - across
        K[0, 0] += across + along * ux * ux
        K[1, 1] += across + along * uy * uy
        K[2, 2] += across + along * uz * uz
        K[0, 1] += along * ux * uy
        K[1, 0] += along * ux * uy
        K[0, 2] += along * ux * uz
        K[2, 0] += along * ux * uz
        K[1, 2] += along * uy * uz
        K[2, 1] += along * uy * uz
    if law == SPRING_DAMPER:
        for a in range(3):
            C[a, a] += c
