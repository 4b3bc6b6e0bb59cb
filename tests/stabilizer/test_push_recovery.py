"""The push strategies (stabilizer.push_recovery, docs/stabilizer.md "Pushes"): the capture point the
whole-robot stabilizer computes from the measured joints against Pinocchio's CoG and CoG velocity
(centerOfMass with velocities) on the same description, upright and on a tilted platform; the
strategy chosen and the velocities added for capture points placed by hand around a square polygon."""
from __future__ import annotations

import copy
import math

import numpy as np
import pinocchio as pin
import pytest
import yaml

from models.common.support import DOUBLE
from models.gait.plan import GaitParams
from models.gait.wholebody import flexed_posture
from models.tree.reference import build_tree
from models.tree.robot import TreeRobot
from stabilizer import whole_body as wb
from stabilizer.push_recovery import ANKLE, HIP, NONE, PUSH, STEP, push_response
from stabilizer.walls import compute_walls
from stabilizer.whole_body_config import config_from_dict

from tests.paths import ROBOTS

CONFIG = ROBOTS / "bip2000_stabilizer.yaml"
ROBOT = TreeRobot.from_yaml(ROBOTS / "bip2000.yaml")
Q0 = flexed_posture(ROBOT, GaitParams(flex=0.06))
G0 = float(np.linalg.norm(ROBOT.description.gravity))
TOL = 1e-9          # m: the kernel's capture point against Pinocchio's


def _platform(alpha: float, beta: float) -> np.ndarray:
    """R = RotX(alpha) RotY(beta): the tilted sole's axes in the world."""
    ca, sa, cb, sb = math.cos(alpha), math.sin(alpha), math.cos(beta), math.sin(beta)
    return np.array([[1, 0, 0], [0, ca, -sa], [0, sa, ca]]) @ np.array([[cb, 0, sb], [0, 1, 0], [-sb, 0, cb]])


def reference_capture_point(q: np.ndarray, qd: np.ndarray, alpha: float, beta: float,
                            v_sole: np.ndarray | None = None):
    """xi = c + c_dot / sqrt(g0 / z_c) in the horizontal axes of apparent gravity, from Pinocchio rooted
    at the left sole (its centerOfMass leaves the fixed root body out: M c = M_moving c_pin + m_root
    c_root) and apparent up u = R^T z, R = RotX(alpha) RotY(beta), e1 = the sole's x made horizontal.
    ``v_sole``: the sole translating at that velocity (its axes): c_dot gains it; returns xi then with
    the pelvis estimate such a motion gives (its world velocity, Pinocchio's pelvis frame velocity plus
    v_sole, turned by R, and its world rotation R R_sole_pelvis)."""
    ref = build_tree(ROBOT.description, "left_sole")
    data = ref.model.createData()
    p = ref.perm
    c_pin = pin.centerOfMass(ref.model, data, q[p], qd[p]).copy()
    v_pin = data.vcom[0].copy()
    pin.computeJointJacobians(ref.model, data, q[p])
    pin.updateFramePlacements(ref.model, data)
    m_root = ROBOT.description.bodies[ref.root_body].mass
    total = ROBOT.model.total_mass
    c = ((total - m_root) * c_pin + m_root * data.oMf[ref.coms[ref.root_body]].translation) / total
    cd = (total - m_root) * v_pin / total
    R = _platform(alpha, beta)
    pelvis = None
    if v_sole is not None:
        cd = cd + v_sole
        pin.forwardKinematics(ref.model, data, q[p], qd[p])
        fid = ref.frames["pelvis"]
        vp = pin.getFrameVelocity(ref.model, data, fid, pin.LOCAL_WORLD_ALIGNED).linear
        pelvis = (R @ (vp + v_sole), R @ data.oMf[fid].rotation)
    u = R.T @ np.array([0.0, 0.0, 1.0])
    e1 = np.array([1.0, 0.0, 0.0]) - u[0] * u
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(u, e1)
    omega = math.sqrt(G0 / (u @ c))
    xi = np.array([e1 @ (c + cd / omega), e2 @ (c + cd / omega)])
    return xi if v_sole is None else (xi, pelvis)


@pytest.mark.parametrize("alpha, beta", [(0.0, 0.0), (0.05, -0.08)])
def test_capture_point_matches_pinocchio(alpha, beta):
    """At 20 postures near the flexed one with random joint velocities (up to 2 rad/s), the
    stabilizer's capture point equals Pinocchio's within 1e-9 m, from the joints alone and with a
    pelvis estimate whose soles translate."""
    st = wb.WholeBodyStabilizer.from_yaml(CONFIG)
    rng = np.random.default_rng(7)
    for _ in range(20):
        q = Q0 + rng.uniform(-0.1, 0.1, ROBOT.n)
        qd = rng.uniform(-2.0, 2.0, ROBOT.n)
        st.reset(q)
        assert st.step(q, DOUBLE, (alpha, beta), qd_measured=qd) == wb.OK
        np.testing.assert_allclose(st.capture_point, reference_capture_point(q, qd, alpha, beta), rtol=0, atol=TOL)
        assert st.omega == pytest.approx(math.sqrt(G0 / (ROBOT.com(q) @ _up(alpha, beta))), rel=1e-12)
        # the soles carried at 0.5 m/s the joints do not show (a push tipping them): the pelvis
        # estimate's velocity brings it into c_dot (push_recovery eq. P2)
        xi, pelvis = reference_capture_point(q, qd, alpha, beta, v_sole=rng.uniform(-0.5, 0.5, 3))
        assert st.step(q, DOUBLE, (alpha, beta), qd_measured=qd, pelvis=pelvis) == wb.OK
        np.testing.assert_allclose(st.capture_point, xi, rtol=0, atol=TOL)


def _up(alpha: float, beta: float) -> np.ndarray:
    ca, sa, cb, sb = math.cos(alpha), math.sin(alpha), math.cos(beta), math.sin(beta)
    return np.array([-ca * sb, sa, ca * cb])


GAINS = {"on": 1.0, "k_ankle": 10.0, "v_ankle": 0.5, "deadband": 0.02, "hip_margin": 0.02, "k_hip": 20.0,
         "v_hip": 1.0, "step_margin": 0.01}
SQUARE = np.array([[-0.1, -0.1], [0.1, -0.1], [0.1, 0.1], [-0.1, 0.1]])     # counter-clockwise, centroid 0


def _respond(xi, c=(0.0, 0.0)):
    u = np.zeros(PUSH.size())
    for k, v in GAINS.items():
        u[PUSH.offset(k)] = v
    walls = np.zeros((4, 3))
    compute_walls(SQUARE, 4, 1.0, walls)
    v_cog, v_trunk = np.full(2, np.nan), np.full(2, np.nan)
    k, margin = push_response(u, np.array(xi, float), np.array(c, float), 0.0, 0.0, walls, 4, np.zeros(4),
                              v_cog, v_trunk)
    return k, margin, v_cog, v_trunk


@pytest.mark.parametrize("xi, strategy, margin, v_cog, v_trunk", [
    ((0.01, 0.01), NONE, 0.09, (0.0, 0.0), (0.0, 0.0)),              # |xi - c| within the deadband
    ((0.03, 0.0), ANKLE, 0.07, (-0.3, 0.0), (0.0, 0.0)),             # -k_ankle e
    ((0.0, -0.07), ANKLE, 0.03, (0.0, 0.5), (0.0, 0.0)),             # bounded by v_ankle
    ((0.09, 0.0), HIP, 0.01, (-0.5, 0.0), (1.0, 0.0)),               # near the edge: the trunk along e
    ((0.0, 0.105), HIP, -0.005, (0.0, -0.5), (0.0, 1.0)),            # just outside, within step_margin
    ((-0.12, 0.0), STEP, -0.02, (0.5, 0.0), (-1.0, 0.0)),            # beyond step_margin: a step
])
def test_strategy_for_placed_capture_points(xi, strategy, margin, v_cog, v_trunk):
    k, m, vc, vt = _respond(xi)
    assert (k, m) == (strategy, pytest.approx(margin, abs=1e-12))
    np.testing.assert_allclose(vc, v_cog, atol=1e-12)
    np.testing.assert_allclose(vt, v_trunk, atol=1e-12)


@pytest.mark.parametrize("xi", [(0.03, 0.0), (0.09, 0.0), (-0.12, 0.0)])
def test_a_cog_at_rest_is_left_to_the_fields(xi):
    """The same capture points with the CoG on them (no velocity): nothing added, wherever it is."""
    k, _, vc, vt = _respond(xi, c=(xi[0] - 0.015, xi[1]))
    assert k == NONE
    assert not vc.any() and not vt.any()


def test_push_section_is_optional_and_validated():
    """Without ``push:`` (the deployed YAML) the strategies are off; with it its gains are read; a negative
    gain is one clear error."""
    bare = yaml.safe_load(CONFIG.read_text())
    assert config_from_dict(bare, str(CONFIG)).push is None
    d = copy.deepcopy(bare)
    d["push"] = {"k_ankle": 10.0, "v_ankle": 0.5, "deadband": 0.02, "hip_margin": 0.02, "k_hip": 20.0,
                 "v_hip": 1.0, "step_margin": 0.0}
    assert config_from_dict(d, str(CONFIG)).push.k_ankle == 10.0
    bad = copy.deepcopy(d)
    bad["push"]["k_hip"] = -1.0
    with pytest.raises(Exception, match="push.k_hip"):
        config_from_dict(bad, str(CONFIG))
