"""Ground, support polygon and virtual walls against the thesis' closed forms
(eq. 45-51, 69-71), at several tilts including alpha = beta = 0."""
from __future__ import annotations

import numpy as np
import pytest

from stabilizer.ground import (
    TILT_IMU,
    TILT_INVALID,
    TILT_OK,
    TILT_PLATFORM,
    apparent_tilt,
    foot_origin,
    rotation_world_foot,
    sole_apparent_tilt,
    tilt_from_up,
)
from stabilizer.support_polygon import project_outline, rectangle_outline
from stabilizer.walls import compute_walls, signed_distances

from tests.stabilizer.helpers import FOOT, Q0, make

a, b, c, Z, DELTA = (FOOT[k] for k in ("a", "b", "c", "Z", "Delta"))
TILTS = [(0.0, 0.0), (0.1745, 0.0), (0.0, 0.349), (0.1745, 0.349), (-0.3, 0.2), (0.25, -0.4)]


def rz(t):
    return np.array([[np.cos(t), -np.sin(t), 0], [np.sin(t), np.cos(t), 0], [0, 0, 1.0]])


@pytest.mark.parametrize("alpha,beta", TILTS)
def test_rotation_and_foot_origin(alpha, beta):
    """Eq. 45 (product of the four rotations) = eq. 46; O0 of eq. 47."""
    R = np.empty((3, 3))
    rotation_world_foot(alpha, beta, R)
    r_ab = np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0.0]])
    r_bo = np.array([[1, 0, 0], [0, 0, 1], [0, -1, 0.0]])
    np.testing.assert_allclose(R, rz(alpha) @ r_ab @ rz(beta) @ r_bo, atol=1e-15)
    o = np.empty(3)
    foot_origin(R, DELTA, Z, o)
    ca, sa, cb, sb = np.cos(alpha), np.sin(alpha), np.cos(beta), np.sin(beta)
    np.testing.assert_allclose(o, [ca * (cb * DELTA + sb * Z), sa * (cb * DELTA + sb * Z),
                                   sb * DELTA - cb * Z], atol=1e-15)


@pytest.mark.parametrize("alpha,beta", TILTS)
def test_polygon_vertices_eq_50_51(alpha, beta):
    R = np.empty((3, 3))
    rotation_world_foot(alpha, beta, R)
    poly = np.empty((4, 2))
    project_outline(rectangle_outline(a, b, c), 4, R, Z, poly)
    ca, sa, cb, sb = np.cos(alpha), np.sin(alpha), np.cos(beta), np.sin(beta)
    want = np.array([[ca * a + sa * sb * (Z - b), -cb * (Z - b)],      # A*
                     [ca * a + sa * sb * (Z + c), -cb * (Z + c)],      # B*
                     [-ca * a + sa * sb * (Z + c), -cb * (Z + c)],     # C*
                     [-ca * a + sa * sb * (Z - b), -cb * (Z - b)]])    # D*
    np.testing.assert_allclose(poly, want, atol=1e-15)
    # the projection drops exactly the vertical component of A' (eq. 48 -> 50)
    a_prime = R @ np.array([0.0, a, b - Z])
    np.testing.assert_allclose(poly[0], a_prime[1:], atol=1e-15)


@pytest.mark.parametrize("alpha,beta", TILTS)
def test_walls_eq_69_and_signed_distances_eq_71(alpha, beta):
    R = np.empty((3, 3))
    rotation_world_foot(alpha, beta, R)
    poly, walls = np.empty((4, 2)), np.empty((4, 3))
    project_outline(rectangle_outline(a, b, c), 4, R, Z, poly)
    compute_walls(poly, 4, -1.0, walls)              # A'B'C'D' is clockwise in (y0, z0)
    ca, sa, cb, sb = np.cos(alpha), np.sin(alpha), np.cos(beta), np.sin(beta)
    norm = np.sqrt(cb ** 2 + sa ** 2 * sb ** 2)
    # (n_y, n_z, c) of P4 (edge AB), P2 (BC), P3 (CD), P1 (DA), inner normals of eq. 74
    want = np.array([[-cb / norm, -sa * sb / norm, a * ca * cb / norm],     # -(P4) / |n4|
                     [0.0, 1.0, cb * (Z + c)],                              # P2
                     [cb / norm, sa * sb / norm, a * ca * cb / norm],       # P3 / |n3|
                     [0.0, -1.0, -cb * (Z - b)]])                           # -(P1)
    np.testing.assert_allclose(walls, want, atol=1e-15)
    rng = np.random.default_rng(0)
    d = np.empty(4)
    for _ in range(50):
        y, z = rng.uniform(-0.3, 0.3, 2)
        dmin = signed_distances(walls, 4, y, z, d)
        thesis = np.array([abs(cb * y + sa * sb * z - a * ca * cb) / norm,   # Delta_4
                           abs(z + cb * (Z + c)),                              # Delta_2
                           abs(cb * y + sa * sb * z + a * ca * cb) / norm,   # Delta_3
                           abs(z + cb * (Z - b))])                             # Delta_1
        np.testing.assert_allclose(np.abs(d), thesis, atol=1e-14)
        inside = np.all(d > 0)
        assert dmin == d.min()
        # signed: positive exactly when (y, z) is inside the parallelogram
        u = np.linalg.solve(np.column_stack([poly[1] - poly[0], poly[3] - poly[0]]), [y, z] - poly[0])
        assert inside == bool(np.all((u > 0) & (u < 1)))


def test_level_ground_polygon_is_the_sole_centred_on_m():
    """alpha = beta = 0: the polygon is the sole itself, centred on M since
    Z = (b - c)/2 (bip_leg.yaml), and the walls are its four sides."""
    st = make()
    st.reset(Q0)
    assert st.step(Q0, (0.0, 0.0, 0.0)) == 0
    np.testing.assert_allclose(st.polygon, [[a, b - Z], [a, -c - Z], [-a, -c - Z], [-a, b - Z]], atol=1e-15)
    np.testing.assert_allclose(st.polygon.mean(axis=0), 0.0, atol=1e-15)
    y, z = st.cog[1], st.cog[2]
    np.testing.assert_allclose(st.margins, [a - y, z + c + Z, a + y, b - Z - z], atol=1e-12)
    assert st.min_margin == st.margins.min()


@pytest.mark.parametrize("alpha,beta", TILTS)
def test_tilt_sources_agree(alpha, beta):
    """The IMU's specific force R^T x_g and the platform angles give the same
    (alpha, beta); a horizontal acceleration is the equivalent tilt (§2.5.4)."""
    R = np.empty((3, 3))
    rotation_world_foot(alpha, beta, R)
    out = np.empty(2)
    u = R.T @ np.array([9.81, 0.0, 0.0])
    assert apparent_tilt(TILT_IMU, False, 9.81, u, np.zeros(2), R, out) == TILT_OK
    np.testing.assert_allclose(out, [alpha, beta], atol=1e-14)
    # level platform + acceleration a = g0 (tan-equivalent) -> the same apparent up as the tilt
    acc = 9.81 * np.array([u[1], u[2]]) / u[0]
    assert apparent_tilt(TILT_PLATFORM, True, 9.81, np.zeros(3), acc, R, out) == TILT_OK
    assert tilt_from_up(u[0], u[1], u[2], R[0]) == TILT_OK
    np.testing.assert_allclose(out, R[0, :2], atol=1e-14)


def test_acceleration_is_an_equivalent_tilt_for_the_stabilizer():
    """Same outputs (polygon, margins, forces, q_ref) for a tilt and for the
    horizontal acceleration that makes the same apparent gravity."""
    alpha, beta = 0.1, 0.2
    R = np.empty((3, 3))
    rotation_world_foot(alpha, beta, R)
    u = R.T @ np.array([9.81, 0.0, 0.0])
    tilted, accel = make(), make(tilt={"use_acceleration": True})
    for st in (tilted, accel):
        st.reset(Q0)
    assert tilted.step(Q0, (alpha, beta, 0.0)) == 0
    assert accel.step(Q0, (0.0, 0.0, 0.0), 9.81 * u[1:] / u[0]) == 0
    for name in ("polygon", "margins", "forces", "q_ref", "cog"):
        np.testing.assert_allclose(getattr(accel, name), getattr(tilted, name), atol=1e-12, err_msg=name)


def rx(t):
    return np.array([[1.0, 0, 0], [0, np.cos(t), -np.sin(t)], [0, np.sin(t), np.cos(t)]])


def ry(t):
    return np.array([[np.cos(t), 0, np.sin(t)], [0, 1.0, 0], [-np.sin(t), 0, np.cos(t)]])


@pytest.mark.parametrize("alpha,beta", TILTS)
@pytest.mark.parametrize("acc", [(0.0, 0.0), (1.5, 0.0), (0.0, -2.0), (-0.8, 1.2)])
def test_a_soles_apparent_tilt_gives_the_apparent_gravity(alpha, beta, acc):
    """A robot on its soles (a tree): the tilt sole_apparent_tilt returns turns the level gravity into
    g − a in the soles' axes (models.tilt.sole_gravity, platform RotX(alpha) RotY(beta), world x forward,
    y left), its size kept g0 (§2.5.4); without use_acceleration it is the platform's."""
    from models.tilt import sole_gravity

    R, out, g = np.empty((3, 3)), np.empty(2), np.empty(3)
    assert sole_apparent_tilt(TILT_PLATFORM, True, 9.81, np.array([alpha, beta, 0.0]), np.array(acc), R, out) \
        == TILT_OK
    sole_gravity(out[0], out[1], np.array([0.0, 0.0, -9.81]), g)
    apparent = (rx(alpha) @ ry(beta)).T @ np.array([-acc[0], -acc[1], -9.81])
    np.testing.assert_allclose(g, 9.81 * apparent / np.linalg.norm(apparent), atol=1e-12)
    assert sole_apparent_tilt(TILT_PLATFORM, False, 9.81, np.array([alpha, beta, 0.0]), np.array(acc), R, out) \
        == TILT_OK
    assert tuple(out) == (alpha, beta)
    assert sole_apparent_tilt(TILT_IMU, False, 9.81, np.array([0.0, 0.0, 9.81]), np.zeros(2), R, out) == TILT_INVALID
    assert sole_apparent_tilt(TILT_PLATFORM, True, 9.81, np.zeros(3), np.array([np.nan, 0.0]), R, out) \
        == TILT_INVALID


def test_invalid_tilts():
    out = np.empty(2)
    assert tilt_from_up(0.0, 0.0, 0.0, out) == TILT_INVALID
    assert tilt_from_up(-9.81, 0.0, 0.0, out) == TILT_INVALID        # foot upside down
    assert tilt_from_up(np.nan, 0.0, 9.81, out) == TILT_INVALID
