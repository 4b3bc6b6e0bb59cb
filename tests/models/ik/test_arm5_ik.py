"""Closed-form IGM of Lammari's 5-joint arm (models/ik/arm5.py, Lammari 2012 §VI.5.5).

* Annex A §I.2.1: from the points of Tableau 1 and the plane's unit normal, the branch
  (q1 = atan2(Py, Px), + root of eq. VI.5, s5 < 0) gives Tableau 2's joint angles within
  0.01° (largest difference measured 0.0041°, on q5: the table's angles carry the
  printed normal's 7e-5 error, see test_lammari_arm.py; the points are printed to 0.1 mm).
* Every branch at random targets is an exact solution of the forward model, and the
  configuration that made the target is among them.
* The printed half-angle root (−B + √…)/(A + C) and the printed c5 = E s23 + n3 miss the
  target; the corrected forms hit it (docs/errata.md).
* The numerical IK (models/ik/numerical.py) lands on the closed-form branch it starts near.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.ik.arm5 import arm5_ik, arm5_lengths, half_angle_roots, wrist_cosine
from models.common.errors import GeometryError
from models.ik.numerical import IkSolver, Task

from tests.models.chains import random_robot
from tests.models.ik.test_ik import ARM
from tests.models.ik.test_lammari_arm import P_PRIME, PLANE, Q_DEG

NORMAL = PLANE / np.linalg.norm(PLANE)
TABLE_BRANCH = 1            # q1 = atan2(Py, Px), + root, s5 < 0
TABLE_TOL_DEG = 0.01


def wrapped(a):
    return np.arctan2(np.sin(a), np.cos(a))


@pytest.mark.parametrize("row", range(9))
def test_lammari_table_2_from_table_1(row):
    sols = arm5_ik(ARM.model, P_PRIME[row], NORMAL)
    assert sols.shape == (8, 5)
    np.testing.assert_allclose(np.degrees(sols[TABLE_BRANCH]), Q_DEG[row], atol=TABLE_TOL_DEG, rtol=0)
    # and it is the only branch that close
    others = np.delete(np.degrees(sols), TABLE_BRANCH, axis=0)
    assert np.abs(others - Q_DEG[row]).max(axis=1).min() > 1.0


def configurations():
    lo, hi = ARM.model.qmin, ARM.model.qmax
    return st.lists(st.floats(0.0, 1.0), min_size=5, max_size=5).map(lambda u: lo + np.array(u) * (hi - lo))


@settings(max_examples=100, deadline=None)
@given(configurations())
def test_every_branch_solves_the_forward_model(q):
    T = ARM.fk(q)
    if math.hypot(T[0, 3], T[1, 3]) < 1e-6:
        return                                   # on the base axis: refused (test below)
    sols = arm5_ik(ARM.model, T[:3, 3], T[:3, 1])
    assert len(sols) >= 4                        # both roots for the q1 that made it, two wrists each
    assert sols[0, 0] == pytest.approx(math.atan2(T[1, 3], T[0, 3]), abs=1e-12)   # documented order
    for s in sols:
        Ts = ARM.fk(s)
        np.testing.assert_allclose(Ts[:3, 3], T[:3, 3], atol=1e-9)
        np.testing.assert_allclose(Ts[:3, 1], T[:3, 1], atol=1e-9)
    d = np.abs(wrapped(sols - q))
    if abs(math.sin(q[4])) > 1e-6:               # q4 is free at the wrist singularity
        assert d.max(axis=1).min() < 1e-7, "the generating configuration is not among the branches"


@pytest.mark.parametrize("a, b, c", [
    (1.0, 1.0, -1.0),                                         # a + c = 0: q = π and −π/2
    (0.42260065860778684, 0.5177842949807299, -0.4226006586077866),   # q = (−π, 0, −110°, ..) of the arm
    (-0.3, -0.2, 0.3), (0.5, -1e-17, 0.2), (2.0, 0.0, 1.0), (0.0, 1.0, 1.0)])
def test_half_angle_roots_solve_eq_vi_5_also_when_a_plus_c_vanishes(a, b, c):
    roots = half_angle_roots(a, b, c)
    for q in roots:
        assert a * math.cos(q) + b * math.sin(q) == pytest.approx(c, abs=1e-12)
    assert (half_angle_roots(1.0, 0.0, 1.5)) is None


def position_error(q1, q2, p):
    """|FK(q1, q2, q3(q2)) − p| with q3 from eq. VI.4, wrist at 0."""
    r1, d3, r4 = arm5_lengths(ARM.model)
    c1, s1 = math.cos(q1), math.sin(q1)
    a, b = p[0] * c1 + p[1] * s1, p[2] - r1
    q3 = math.atan2((a - d3 * math.cos(q2)) / r4, (-b + d3 * math.sin(q2)) / r4) - q2
    return np.linalg.norm(ARM.fk(np.array([q1, q2, q3, 0.0, 0.0]))[:3, 3] - p)


@pytest.mark.parametrize("row", range(9))
def test_printed_half_angle_root_misses_the_point(row):
    p = P_PRIME[row]
    r1, d3, r4 = arm5_lengths(ARM.model)
    q1 = math.atan2(p[1], p[0])
    a, b = p[0] * math.cos(q1) + p[1] * math.sin(q1), p[2] - r1
    c = (a * a + b * b + d3 * d3 - r4 * r4) / (2 * d3)
    s = math.sqrt(a * a + b * b - c * c)
    printed = 2 * math.atan((-b + s) / (a + c))                       # Lammari's α1 as printed
    assert position_error(q1, printed, p) > 0.05
    for q2 in half_angle_roots(a, b, c):
        assert position_error(q1, q2, p) < 1e-12


@pytest.mark.parametrize("row", range(9))
def test_printed_wrist_cosine_misses_the_normal(row):
    q = np.radians(Q_DEG[row])
    n1, n2, n3 = NORMAL
    c1, s1 = math.cos(q[0]), math.sin(q[0])
    s23, c23 = math.sin(q[1] + q[2]), math.cos(q[1] + q[2])
    e = -n1 * c1 - n2 * s1
    s4s5, c4s5 = n2 * c1 - n1 * s1, e * c23 - n3 * s23
    s5 = -math.hypot(s4s5, c4s5)                 # the table's branch
    q4 = math.atan2(-s4s5, -c4s5)
    for c5, hits in ((e * s23 + n3, False), (wrist_cosine(e, n3, s23, c23), True)):   # printed, corrected
        y5 = ARM.fk(np.array([q[0], q[1], q[2], q4, math.atan2(s5, c5)]))[:3, 1]
        assert (np.abs(y5 - NORMAL).max() < 1e-9) == hits


@pytest.mark.parametrize("method", ["newton", "dls"])
@pytest.mark.parametrize("row", range(9))
def test_numerical_ik_agrees_with_the_closed_form(method, row):
    sols = arm5_ik(ARM.model, P_PRIME[row], NORMAL)
    rng = np.random.default_rng(row)
    for s in sols[np.all((sols >= ARM.model.qmin) & (sols <= ARM.model.qmax), axis=1)]:
        r = IkSolver(ARM, [Task("tool", "position", P_PRIME[row]), Task("tool", "axis", NORMAL, axis=1)],
                     method=method).solve(s + rng.uniform(-0.05, 0.05, 5))
        assert r.ok, r.message()
        np.testing.assert_allclose(wrapped(r.q - s), 0.0, atol=1e-9)


def test_refusals_name_the_problem():
    with pytest.raises(GeometryError, match="not the 5-joint arm of Lammari 2012"):
        arm5_ik(random_robot(1, 5).model, [1.0, 0, 0], [0, 0, 1.0])
    with pytest.raises(GeometryError, match="on the base axis z0, q1 is undetermined"):
        arm5_ik(ARM.model, [0.0, 0.0, 1.5], [0, 0, 1.0])
    with pytest.raises(GeometryError, match="must be a unit vector, got norm 0.99947"):
        arm5_ik(ARM.model, P_PRIME[0], [0.09651, 0.24127, 0.96510])      # the printed normal


def test_out_of_reach_point_has_no_solution():
    assert arm5_ik(ARM.model, [3.0, 2.0, 1.0], NORMAL).shape == (0, 5)
