"""Kinematics of the Stewart-Gough rig (Staicu 2008, eq. 1-18): forward kinematics
inverts inverse kinematics inside the workspace, the actuator Jacobian S matches finite
differences of the leg lengths, and a pose or lengths the rig cannot take is a status
(a WorkspaceError in Python), never a best effort."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.common.errors import WorkspaceError
from models.rig.stewart import (NO_CONVERGENCE, NON_FINITE, OK, OUT_OF_STROKE, SINGULAR,
                            forward_kinematics, inverse_kinematics, leg_lengths, platform_motion,
                            staicu_motion)
from models.rig.robot import StewartRig
from tests.paths import STEWART_RIG


RIG = StewartRig.from_yaml(STEWART_RIG)
DESC = RIG.model.desc
HOME = RIG.home
# the box of poses the hypothesis draws from, around the pose at t = 0: wider than the
# test motion (2-6 cm, 2-6 deg, doubled by 1 - cos) and inside the stroke everywhere (its
# corners and 5000 random poses reach at most 0.66 m of the 0.80 m stroke; a box of 15 cm /
# 8 deg has corners beyond it)
BOX = np.array([0.12, 0.12, 0.10, math.radians(6), math.radians(6), math.radians(8)])
FK_TOL = 1e-9          # m and rad: pose recovered by forward kinematics


poses = st.lists(st.floats(-1.0, 1.0), min_size=6, max_size=6).map(lambda u: HOME + BOX * np.array(u))


@settings(max_examples=200, deadline=None)
@given(poses)
def test_forward_kinematics_inverts_inverse_kinematics(x):
    q, _, _ = RIG.inverse_kinematics(x)
    assert np.all(q[:, 2] >= DESC.stroke[0]) and np.all(q[:, 2] <= DESC.stroke[1])
    x_fk = RIG.forward_kinematics(q[:, 2])
    assert np.max(np.abs(x_fk - x)) < FK_TOL


@settings(max_examples=50, deadline=None)
@given(poses, st.integers(0, 5))
def test_leg_rates_are_the_jacobian_and_match_finite_differences(x, k):
    """lambda' = S V (eq. 15-16) with V the platform twist for a unit rate of pose
    coordinate k, against central differences of the leg lengths (eq. 10)."""
    h = 1e-6
    xd = np.zeros(6)
    xd[k] = 1.0
    _, qd, _ = RIG.inverse_kinematics(x, xd)
    lam_p, lam_m, S = np.zeros(6), np.zeros(6), np.zeros((6, 6))
    leg_lengths(RIG.model.buf, x + h * xd, lam_p, S)
    leg_lengths(RIG.model.buf, x - h * xd, lam_m, S)
    fd = (lam_p - lam_m) / (2 * h)
    assert np.max(np.abs(qd[:, 2] - fd)) < 1e-7
    V = np.concatenate([RIG.data.vG, RIG.data.wp])
    assert np.max(np.abs(RIG.data.S @ V - qd[:, 2])) < 1e-12
    leg_lengths(RIG.model.buf, x, lam_p, S)        # the lean S of forward kinematics
    assert np.max(np.abs(S - RIG.data.S)) < 1e-12


def test_platform_angular_velocity_and_acceleration_match_the_rotation():
    """omega and eps of eq. 15, 17 against finite differences of R = Rx Ry Rz (eq. 7):
    R' R^T = [omega]x."""
    d = RIG.data
    h = 1e-5
    for t in np.linspace(0.0, DESC.motion.duration, 7):
        x, xd, xdd = staicu_motion(DESC, t)
        Rs, ws = [], []
        for s in (-h, 0.0, h):
            xs, xds, xdds = staicu_motion(DESC, t + s)
            platform_motion(xs, xds, xdds, d.Rp, d.vG, d.wp, d.aG, d.dwp)
            Rs.append(d.Rp.copy())
            ws.append(d.wp.copy())
        W = (Rs[2] - Rs[0]) / (2 * h) @ Rs[1].T
        assert np.max(np.abs(W + W.T)) < 1e-8
        assert np.max(np.abs(np.array([W[2, 1], W[0, 2], W[1, 0]]) - ws[1])) < 1e-8
        platform_motion(x, xd, xdd, d.Rp, d.vG, d.wp, d.aG, d.dwp)
        assert np.max(np.abs((ws[2] - ws[0]) / (2 * h) - d.dwp)) < 1e-7


def test_the_test_motion_starts_at_rest_height_with_zero_strokes():
    """At t = 0 (eq. 5-6) the platform is at height h, level, and with the rig's chosen
    h every actuator sits at zero displacement (deploy/rigs/stewart_staicu2008.yaml)."""
    x, _, _ = staicu_motion(DESC, 0.0)
    assert np.allclose(x, HOME)
    q, _, _ = RIG.inverse_kinematics(x)
    assert np.max(np.abs(q[:, 2])) < 1e-4
    assert np.max(np.abs(np.delete(q, 2, axis=1))) < 1e-12


def test_lengths_the_rig_cannot_take_are_refused():
    # legs A and D meet at one platform point 2.8 * sqrt(3) m from both their base
    # points: 2.2 m legs cannot reach it (triangle inequality), whatever the pose
    with pytest.raises(WorkspaceError, match="no platform pose above the base fits these lengths") as e:
        RIG.forward_kinematics(np.full(6, -0.8))
    assert e.value.status == NO_CONVERGENCE
    with pytest.raises(WorkspaceError, match="outside its stroke"):
        RIG.forward_kinematics(np.full(6, DESC.stroke[1] + 0.01))
    # the lengths of the pose at t = 0 also fit its mirror image under the base: refused
    with pytest.raises(WorkspaceError, match="above the base") as e:
        RIG.forward_kinematics(np.zeros(6), guess=[0.0, 0.0, -1.0, 0.0, 0.0, 0.0])
    assert e.value.status == NO_CONVERGENCE
    with pytest.raises(WorkspaceError, match="non-finite"):
        RIG.forward_kinematics([0.0, 0.0, math.nan, 0.0, 0.0, 0.0])


def test_lengths_of_a_singular_pose_are_a_singular_status():
    """All legs 2.8 m long: the only pose is the platform in the base plane (legs
    horizontal), where S loses rank."""
    x = HOME.copy()
    lam = np.full(6, DESC.l0 - DESC.l1 - DESC.l3)
    assert forward_kinematics(RIG.model.buf, RIG.data.buf, lam, x) == SINGULAR


def test_poses_out_of_the_stroke_are_refused():
    d = RIG.data
    zero = np.zeros(6)
    x = HOME + np.array([0.0, 0.0, 2.0, 0.0, 0.0, 0.0])
    assert inverse_kinematics(RIG.model.buf, d.buf, x, zero, zero) == OUT_OF_STROKE
    with pytest.raises(WorkspaceError, match="outside its stroke"):
        RIG.inverse_kinematics(x)
    x[0] = math.inf
    assert inverse_kinematics(RIG.model.buf, d.buf, x, zero, zero) == NON_FINITE


def test_the_whole_test_motion_is_inside_the_workspace():
    d = RIG.data
    for t in np.linspace(0.0, DESC.motion.duration, 61):
        x, xd, xdd = staicu_motion(DESC, t)
        assert inverse_kinematics(RIG.model.buf, d.buf, x, xd, xdd) == OK
