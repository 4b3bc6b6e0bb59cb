"""Lammari 2012, chapter VI: the 5-DOF measuring arm as a robot YAML
(deploy/robots/lammari_arm5.yaml) reproduces that work's own numbers.

* Forward geometry, annex A §I.2.1: the joint angles of
  Tableau 2 (degrees, the work's MGI results) put the probe tip O5
  on the points P'1..P'9 of Tableau 1 (m), every row, within 1e-4 m.
  No row needed excluding (largest error 1.2e-5 m, i.e. the 4-decimal rounding).
* Orientation: the MGI imposes Y5 = n, the plane normal (§VI.5.5). The
  printed n (0.09651, 0.24127, 0.96510) is NOT a unit vector (norm
  0.99947: the plane coefficients (0.10, 0.25, 1) of the plane divided by 1.03616
  instead of sqrt(1.0725) = 1.035616, a digit slip). The Tableau 2 angles give the
  true unit normal (0.096561, 0.241402, 0.965609) to within 7e-5 per component
  (the printed n is 5e-4 off), so we test against the unit normal at 1e-4.
* The symbolic MGD T_5^0 (§VI.5.4) equals our fk at random q.
* The YAML holds Tableaux VI.1-VI.6 verbatim (SI units) except the two inertia
  rows the header documents (body 1: I_XX = I_YY = 0; body 3: principal moments
  violating the triangle inequality); the tests show those table rows are not
  realisable and that the body-1 fix cannot change the dynamics.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from models import Robot, description_from_dict
from tests.paths import ROBOTS

ARM = ROBOTS / "lammari_arm5.yaml"

# Tableau 1 (annex A §I.2.1): points P'i, robot frame, m
P_PRIME = np.array([
    [0.3983, 1.5183, 1.2725],
    [0.4733, 1.6482, 1.2350],
    [0.5483, 1.7781, 1.1975],
    [0.7215, 1.6781, 1.1775],
    [0.6465, 1.5482, 1.2150],
    [0.5715, 1.4183, 1.2525],
    [0.7447, 1.3183, 1.2325],
    [0.8197, 1.4482, 1.1950],
    [0.8947, 1.5781, 1.1575],
])
# Tableau 2 (annex A §I.2.1): MGI joint angles q1..q5, degrees
Q_DEG = np.array([
    [7.5300622e+001, 8.6454360e+001, -1.5858521e+000, 1.8695438e+000, -9.9825592e+001],
    [7.3977965e+001, 7.7956864e+001, 6.2499197e+000, 1.5198251e+000, -9.9203436e+001],
    [7.2862224e+001, 6.9265693e+001, 1.5141096e+001, 1.2278874e+000, -9.9429901e+001],
    [6.6734614e+001, 7.1136464e+001, 1.2087946e+001, -3.8460870e-001, -9.8293011e+001],
    [6.7335344e+001, 7.9947839e+001, 3.2438710e+000, -2.2678370e-001, -9.8263511e+001],
    [6.8052965e+001, 8.8660045e+001, -4.6144154e+000, -3.8341430e-002, -9.9118641e+001],
    [6.0537795e+001, 8.9391589e+001, -6.1158172e+000, -2.0068593e+000, -9.8215790e+001],
    [6.0489319e+001, 8.0581360e+001, 1.7760261e+000, -2.0150777e+000, -9.7296751e+001],
    [6.0448860e+001, 7.1717099e+001, 1.0621187e+001, -2.0255005e+000, -9.7276259e+001],
])

# plane 0.10x + 0.25y + z = 0.40 (§VI.5.5) and its printed normal
PLANE = np.array([0.10, 0.25, 1.0])
N_PRINTED = np.array([0.09651, 0.24127, 0.96510])

# Tableau VI.2 (§VI.5.1): alpha (deg), d (mm), r (mm), qmin, qmax (deg)
TAB_VI2 = [(0, 0, 409.82, -180, 180), (90, 0, 0, -90, 90), (0, 1000, 0, -110, 110),
           (90, 0, 1513.9, -350, 350), (-90, 0, 0, -105, 105)]
TAB_VI3_KV = [1.75, 1.75, 1.75, 1.0, 1.0]                       # Tableau VI.3, rad/s
TAB_VI4_MASS = [20.0, 17.4, 4.8, 0.82, 0.34]                     # Tableau VI.4, kg
TAB_VI5_COG = [(0, 0, -0.15), (0.068, -0.006, -0.2275), (0, -0.07, -0.014),
               (0, 0, -0.019), (0, 0, 0)]                        # Tableau VI.5, m
# Tableau VI.6: I_XX, I_YY, I_ZZ, I_XY, I_XZ, I_YZ (kg m^2; printed unit "m^2")
TAB_VI6 = [(0, 0, 0.35, 0, 0, 0), (1.031, 1.505, 0.620, 0.00709, 0.269, -0.023),
           (0.090, 0.013, 0.109, 0, 0, -0.0047), (0.00209, 0.00209, 0.0013, 0, 0, 0),
           (0.0003, 0.0003, 0.00004, 0, 0, 0)]
# documented adjustments (YAML header): (body index, entry, value)
ADJUSTED = {(0, 0): 0.175, (0, 1): 0.175, (2, 0): 0.0965}


@pytest.fixture(scope="module")
def arm() -> Robot:
    return Robot.from_yaml(ARM)


def tensor(row) -> np.ndarray:
    xx, yy, zz, xy, xz, yz = row
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]], dtype=float)


@pytest.mark.parametrize("k", range(9), ids=[f"P'{k + 1}" for k in range(9)])
def test_forward_geometry_table(arm, k):
    """Tableau 2 row k -> Tableau 1 row k within 1e-4 m; probe axis Y5 = unit normal."""
    T = arm.fk(np.radians(Q_DEG[k]))
    np.testing.assert_allclose(T[:3, 3], P_PRIME[k], rtol=0, atol=1e-4)
    n_unit = PLANE / np.linalg.norm(PLANE)
    np.testing.assert_allclose(T[:3, 1], n_unit, rtol=0, atol=1e-4)
    np.testing.assert_allclose(T[:3, 3], arm.frame(np.radians(Q_DEG[k]), 5)[:3, 3], atol=1e-15)


def test_printed_normal_is_not_unit():
    """The printed n has norm 0.99947 (1.03616 used for sqrt(1.0725)); the Tableau 2
    angles follow the unit normal, not the printed one."""
    assert np.linalg.norm(N_PRINTED) == pytest.approx(0.99947, abs=1e-5)
    np.testing.assert_allclose(N_PRINTED, PLANE / 1.03616, atol=1e-5)
    assert math.sqrt(1.0725) == pytest.approx(1.035616, abs=1e-6)
    arm_ = Robot.from_yaml(ARM)
    y5 = np.array([arm_.fk(np.radians(q))[:3, 1] for q in Q_DEG])
    assert np.abs(y5 - PLANE / np.linalg.norm(PLANE)).max() < 1e-4
    assert np.abs(y5 - N_PRINTED).max() > 4e-4


def mgd(q: np.ndarray, r1=0.40982, d3=1.0, r4=1.5139) -> np.ndarray:
    """T_5^0 as printed in Lammari 2012, §VI.5.4."""
    C1, S1 = np.cos(q[0]), np.sin(q[0])
    C2, S2 = np.cos(q[1]), np.sin(q[1])
    C23, S23 = np.cos(q[1] + q[2]), np.sin(q[1] + q[2])
    C4, S4 = np.cos(q[3]), np.sin(q[3])
    C5, S5 = np.cos(q[4]), np.sin(q[4])
    u = C4 * C5 * C23 - S5 * S23
    v = -C4 * S5 * C23 - C5 * S23
    w = r4 * S23 + d3 * C2
    return np.array([
        [C1 * u + S1 * S4 * C5, C1 * v - S1 * S4 * S5, -C1 * S4 * C23 + S1 * C4, C1 * w],
        [S1 * u - C1 * S4 * C5, S1 * v + C1 * S4 * S5, -S1 * S4 * C23 - C1 * C4, S1 * w],
        [C4 * C5 * S23 + S5 * C23, -C4 * S5 * S23 + C5 * C23, -S4 * S23, -r4 * C23 + d3 * S2 + r1],
        [0.0, 0.0, 0.0, 1.0]])


def test_symbolic_mgd(arm):
    rng = np.random.default_rng(1)
    lo, hi = arm.model.qmin, arm.model.qmax
    for _ in range(100):
        q = rng.uniform(lo, hi)
        np.testing.assert_allclose(arm.fk(q), mgd(q), rtol=0, atol=1e-12)


def test_yaml_holds_the_tables():
    """Tableaux VI.1-VI.6 in SI units; only the documented inertia entries differ."""
    doc = yaml.safe_load(ARM.read_text())
    assert doc["gravity"] == [0.0, 0.0, -9.81]
    assert doc["tool"] == {"alpha": 0.0, "a": 0.0, "theta": 0.0, "d": 0.0}
    assert len(doc["joints"]) == 5
    for i, j in enumerate(doc["joints"]):
        alpha, d_mm, r_mm, qmin, qmax = TAB_VI2[i]
        assert j["type"] == "revolute"                       # sigma = 0 (Tableau VI.1)
        assert j["mdh"] == {"alpha_deg": alpha, "a": d_mm / 1000, "theta": 0.0, "d": r_mm / 1000}
        assert j["limits"]["position_deg"] == [qmin, qmax]
        assert j["limits"]["velocity"] == TAB_VI3_KV[i]
        b = j["body"]
        assert b["mass"] == TAB_VI4_MASS[i]
        assert b["com"] == list(TAB_VI5_COG[i])
        expect = tensor(TAB_VI6[i])
        for (body, e), value in ADJUSTED.items():
            if body == i:
                expect[e, e] = value
        np.testing.assert_array_equal(np.array(b["inertia"]), expect)


def triangle_gap(I: np.ndarray) -> float:
    p = np.linalg.eigvalsh(I)
    return p[0] + p[1] - p[2]


def test_adjusted_table_rows_are_not_rigid_bodies():
    """Tableau VI.6 rows 1 and 3 violate the triangle inequality; the others pass;
    the adjusted row 3 is the smallest 3-decimal I_XX that passes."""
    gaps = [triangle_gap(tensor(r)) for r in TAB_VI6]
    assert gaps[0] == pytest.approx(-0.35)
    assert gaps[2] == pytest.approx(-0.006459, abs=1e-6)
    assert all(g > 0 for i, g in enumerate(gaps) if i not in (0, 2))
    row3 = tensor(TAB_VI6[2])
    row3[0, 0] = 0.0965
    assert triangle_gap(row3) > 0
    row3[0, 0] = 0.0964
    assert triangle_gap(row3) < 0


def test_body1_adjustment_leaves_dynamics_unchanged(arm):
    """Body 1 turns about the fixed z0 with its CoG on it: its I_XX, I_YY never enter
    A, C or G, so the value chosen for the table's zeros is immaterial."""
    doc = yaml.safe_load(ARM.read_text())
    doc["joints"][0]["body"]["inertia"] = [[0.6, 0.0, 0.0], [0.0, 0.4, 0.0], [0.0, 0.0, 0.35]]
    other = Robot(description_from_dict(doc))
    rng = np.random.default_rng(2)
    for _ in range(20):
        q, qd = rng.uniform(arm.model.qmin, arm.model.qmax), rng.uniform(-1.75, 1.75, 5)
        np.testing.assert_allclose(other.inertia(q), arm.inertia(q), rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(other.coriolis(q, qd), arm.coriolis(q, qd), rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(other.gravity(q), arm.gravity(q), rtol=1e-13, atol=1e-12)


def test_gravity_points_down(arm):
    """z0 is up (YAML header): the holding torque is the gradient of the potential
    energy V = M·9.81·z_com, M the total mass of Tableau VI.4."""
    rng = np.random.default_rng(3)
    masses = np.array(TAB_VI4_MASS)
    for _ in range(10):
        q = rng.uniform(arm.model.qmin, arm.model.qmax)
        h = 1e-6
        V = lambda x: 9.81 * masses.sum() * arm.com(x)[2]  # noqa: E731
        dV = np.array([(V(q + h * e) - V(q - h * e)) / (2 * h) for e in np.eye(5)])
        np.testing.assert_allclose(arm.gravity(q), dV, atol=1e-6)
