"""Repulsive walls and attractor (thesis eq. 72-78 with the errata of
docs/errata.md), their regularisation, and the field equilibria."""
from __future__ import annotations

import numpy as np
import pytest

from stabilizer.fields import (
    COULOMB,
    EXPONENTIAL,
    INVERSE_POWER,
    SPRING_DAMPER,
    attractive_law,
    attractor_force,
    repulsive_law,
    wall_forces,
)
from stabilizer.ground import rotation_world_foot
from stabilizer.support_polygon import project_outline, rectangle_outline
from stabilizer.virtual_robot import admittance_velocity
from stabilizer.walls import compute_walls, signed_distances

from tests.stabilizer.helpers import FOOT

a, b, c, Z = (FOOT[k] for k in ("a", "b", "c", "Z"))
K_WALL, R_SAT = 0.5, 0.01
TILTS = [(0.0, 0.0), (0.1745, 0.349), (-0.2, 0.1)]


def rectangle_walls(alpha, beta):
    R = np.empty((3, 3))
    rotation_world_foot(alpha, beta, R)
    poly, walls = np.empty((4, 2)), np.empty((4, 3))
    project_outline(rectangle_outline(a, b, c), 4, R, Z, poly)
    compute_walls(poly, 4, -1.0, walls)
    return poly, walls


def field(walls, G, gains=(K_WALL,) * 4, law=COULOMB, shape=0.0, damping=0.0, target=None,
          att=(COULOMB, 0.5, 0.03, 0.0, 0.0)):
    """(per-force rows [walls..., attractor], total, K, C, saturated count) at G."""
    d = np.empty(4)
    signed_distances(walls, 4, G[1], G[2], d)
    F, K, C = np.zeros((5, 3)), np.zeros((3, 3)), np.zeros((3, 3))
    sat = wall_forces(walls, d, 4, law, np.array(gains, dtype=float), R_SAT, shape, damping, F, K, C)
    if target is not None:
        attractor_force(np.asarray(G, float), np.asarray(target, float), *att, F[4], K, C)
    return F, F.sum(axis=0), K, C, sat


@pytest.mark.parametrize("alpha,beta", TILTS)
def test_coulomb_walls_eq_76(alpha, beta):
    """F_Gi = k_i / Delta_i^2 n_i/|n_i|: F_G1 = (0, 0, -k1/D1^2), F_G2 = (0, 0, k2/D2^2),
    F_G3 = (0, k3 cb, k3 sa sb)/(D3^2 N) with a ZERO x component, F_G4 with the signs
    of n4 and Delta_4 (errata of eq. 75-76)."""
    _, walls = rectangle_walls(alpha, beta)
    G = np.array([0.9, 0.01, -0.02])
    gains = (0.4, 0.5, 0.6, 0.7)                    # walls P4, P2, P3, P1 (edge order AB, BC, CD, DA)
    F, *_ = field(walls, G, gains)
    ca, sa, cb, sb = np.cos(alpha), np.sin(alpha), np.cos(beta), np.sin(beta)
    y, z = G[1], G[2]
    N = np.sqrt(cb ** 2 + sa ** 2 * sb ** 2)
    d1, d2 = abs(z + cb * (Z - b)), abs(z + cb * (Z + c))
    d3 = abs(cb * y + sa * sb * z + a * ca * cb) / N
    d4 = abs(cb * y + sa * sb * z - a * ca * cb) / N
    np.testing.assert_allclose(F[3], [0, 0, -0.7 / d1 ** 2], rtol=1e-13)                       # F_G1
    np.testing.assert_allclose(F[1], [0, 0, 0.5 / d2 ** 2], rtol=1e-13)                        # F_G2
    np.testing.assert_allclose(F[2], [0, 0.6 * cb / (d3 ** 2 * N), 0.6 * sa * sb / (d3 ** 2 * N)],
                               rtol=1e-13, atol=1e-14)                                          # F_G3
    np.testing.assert_allclose(F[0], [0, -0.4 * cb / (d4 ** 2 * N), -0.4 * sa * sb / (d4 ** 2 * N)],
                               rtol=1e-13, atol=1e-14)                                          # F_G4


def test_saturation_and_a_cog_beyond_a_wall_is_pushed_back():
    """Walls saturate at d <= r: a CoG on or beyond a wall gets k/r^2 along the
    INNER normal (back inside), never a division by zero."""
    _, walls = rectangle_walls(0.0, 0.0)
    for y in (a - 0.5 * R_SAT, a - 1e-3, a, a + 0.05):   # wall P4 at y = +a, inner normal -y
        F, total, K, _, sat = field(walls, np.array([0.8, y, 0.0]))
        np.testing.assert_allclose(F[0], [0, -K_WALL / R_SAT ** 2, 0], rtol=1e-13)
        assert sat == 1 and total[1] < 0 and np.all(np.isfinite(total))
        assert K[1, 1] == pytest.approx(-repulsive_law(COULOMB, K_WALL, 0.0, a + y)[1])  # only the far wall


@pytest.mark.parametrize("law,shape", [(COULOMB, 0.0), (INVERSE_POWER, 3.0), (EXPONENTIAL, 0.03),
                                       (SPRING_DAMPER, 0.05)])
def test_laws_and_their_derivatives(law, shape):
    k = 0.7
    for x in (0.012, 0.03, 0.049, 0.1):
        f, fp = repulsive_law(law, k, shape, x)
        h = 1e-7
        num = (repulsive_law(law, k, shape, x + h)[0] - repulsive_law(law, k, shape, x - h)[0]) / (2 * h)
        assert fp == pytest.approx(num, rel=1e-6, abs=1e-6)
        assert f >= 0 and fp <= 0                  # repulsion weakens with the distance
        _, mp = attractive_law(law, k, shape, x)
        num = (attractive_law(law, k, shape, x + h)[0] - attractive_law(law, k, shape, x - h)[0]) / (2 * h)
        assert mp == pytest.approx(num, rel=1e-6, abs=1e-6)
    want = {COULOMB: k / 0.03 ** 2, INVERSE_POWER: k / 0.03 ** 3, EXPONENTIAL: k * np.exp(-1.0),
            SPRING_DAMPER: k * 0.02}[law]
    assert repulsive_law(law, k, shape, 0.03)[0] == pytest.approx(want, rel=1e-14)


def test_spring_damper_walls_add_damping_inside_their_range():
    _, walls = rectangle_walls(0.0, 0.0)
    F, _, K, C, _ = field(walls, np.array([0.8, a - 0.02, 0.0]), law=SPRING_DAMPER, shape=0.03, damping=5.0)
    np.testing.assert_allclose(F[0], [0, -K_WALL * 0.01, 0], rtol=1e-12)     # k (range - d)
    np.testing.assert_allclose(C, np.diag([0, 5.0, 0]), atol=1e-15)           # only wall P4 in range
    np.testing.assert_allclose(K, np.diag([0, K_WALL, 0]), atol=1e-15)


def test_attractor_eq_78_and_softening():
    """Gamma_G = k/Delta^2 u towards G+ (eq. 77-78) outside the softening radius
    r, k Delta / r^3 inside (a uniformly charged ball): continuous, zero at G+."""
    target = np.array([0.8, 0.0, 0.0])
    k, r = 0.5, 0.03
    F = np.zeros(3)
    for G, delta in ((target + [0, 0.1, 0], 0.1), (target + [0.02, 0.03, -0.04], np.sqrt(0.0029)),
                     (target + [0, r, 0], r), (target + [0, 0, 0.01], 0.01), (target, 0.0)):
        K, C = np.zeros((3, 3)), np.zeros((3, 3))
        attractor_force(G, target, COULOMB, k, r, 0.0, 0.0, F, K, C)
        mag = k / delta ** 2 if delta > r else k * delta / r ** 3
        np.testing.assert_allclose(np.linalg.norm(F), mag, rtol=1e-12)
        if delta > 0:
            np.testing.assert_allclose(F / np.linalg.norm(F), (target - G) / delta, rtol=1e-12)
        assert np.all(np.linalg.eigvalsh(K) >= -1e-12)        # the implicit step's K is PSD


def equilibrium(walls, start, target=None, steps=400):
    """Relax the CoG in the fields alone with the admittance's implicit step."""
    G = np.array(start, dtype=float)
    v, A = np.zeros(3), np.empty((3, 3))
    for _ in range(steps):
        _, total, K, C, _ = field(walls, G, target=target)
        status, _ = admittance_velocity(0.0, 100.0, 0.01, 10.0, v, total, K, C, A)
        assert status == 0
        G += 0.01 * v
    return G


@pytest.mark.parametrize("alpha,beta", TILTS)
def test_equal_gains_no_attraction_equilibrium_is_the_polygon_centre(alpha, beta):
    poly, walls = rectangle_walls(alpha, beta)
    centre = poly.mean(axis=0)
    for start in ([0.8, 0.04, 0.1], [0.8, -0.05, -0.12], [0.8, 0.0, 0.0]):
        G = equilibrium(walls, start)
        np.testing.assert_allclose(G[1:], centre, atol=1e-9)
        _, total, *_ = field(walls, G)
        assert np.linalg.norm(total) < 1e-6


def test_attractor_moves_the_equilibrium_towards_g_plus():
    poly, walls = rectangle_walls(0.1745, 0.349)
    centre = poly.mean(axis=0)
    target = np.array([0.8, 0.02, 0.06])
    G = equilibrium(walls, [0.8, 0.0, 0.0], target=target)
    _, total, *_ = field(walls, G, target=target)
    assert np.linalg.norm(total) < 1e-6
    assert np.linalg.norm(G[1:] - target[1:]) < 0.2 * np.linalg.norm(centre - target[1:])
    # on the way from the centre to G+ (the walls pull it back a little)
    toward = (G[1:] - centre) @ (target[1:] - centre) / np.linalg.norm(target[1:] - centre) ** 2
    assert 0.8 < toward < 1.0
