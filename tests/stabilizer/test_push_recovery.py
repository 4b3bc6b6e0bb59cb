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
from stabilizer.push_recovery import (ANKLE, ARMED, GATE, H_PHASE, HIP, IDLE, NONE, PUSH, R_FOOT, R_GRADE, R_LIFTING, R_NEED,
                                      R_PHASE, R_ROOT, R_SHIFT, R_T, R_TARGET, R_TIP, RECOVERY, SETTLE, SHIFT, SPENT,
                                      SPIN, SPINNING, STEP, SWING, advance_step, hip_spin, load_shift, lowest_vertex,
                                      observe_lipm, plan_step, push_gate, push_response, roll_grade, roll_trunk,
                                      step_due, swing_pose, tilt_pose, tip_aim, tip_follow, tip_shift, touchdown,
                                      unloaded_sole)
from stabilizer.walls import compute_walls
from models.polygon import polygon_centroid
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


def test_capture_point_with_a_gyro_sees_the_sole_tip():
    """The left sole tipped (2 to 8 deg about a random horizontal axis through its origin) and turning at a
    random 1 rad/s the joints do not show, the apparent gravity level (the platform's tilt 0): with the
    pelvis estimate's gyro (eq. P2': Pinocchio's pelvis frame velocity and rotation carried by the sole's
    motion, plus the pelvis' angular velocity) the capture point is the world's, c_w + c_w_dot / sqrt(g0 /
    z_w) (Pinocchio's CoG and its velocity, c_w = R c, c_w_dot = w x c_w + R c_dot), within 1e-9 m: the
    stabilizer's tip_point; its capture_point (eq. P2, the strategies') misses the tip by centimetres, and
    without the gyro there is no tip_point (NaN)."""
    st = wb.WholeBodyStabilizer.from_yaml(CONFIG)
    rng = np.random.default_rng(11)
    ref = build_tree(ROBOT.description, "left_sole")
    data = ref.model.createData()
    p, fid = ref.perm, ref.frames["pelvis"]
    m_root, total = ROBOT.description.bodies[ref.root_body].mass, ROBOT.model.total_mass
    for _ in range(10):
        q = Q0 + rng.uniform(-0.1, 0.1, ROBOT.n)
        qd = rng.uniform(-2.0, 2.0, ROBOT.n)
        c_pin = pin.centerOfMass(ref.model, data, q[p], qd[p]).copy()
        v_pin = data.vcom[0].copy()
        pin.forwardKinematics(ref.model, data, q[p], qd[p])
        pin.updateFramePlacements(ref.model, data)
        c = ((total - m_root) * c_pin + m_root * data.oMf[ref.coms[ref.root_body]].translation) / total
        cd = (total - m_root) * v_pin / total
        vel = pin.getFrameVelocity(ref.model, data, fid, pin.LOCAL_WORLD_ALIGNED)
        phi = rng.uniform(0, 2 * math.pi)
        R = pin.exp3(np.radians(rng.uniform(2.0, 8.0)) * np.array([math.cos(phi), math.sin(phi), 0.0]))
        w = rng.uniform(-1.0, 1.0, 3)
        cw, pw = R @ c, R @ data.oMf[fid].translation
        cwd = np.cross(w, cw) + R @ cd
        want = cw[:2] + cwd[:2] / math.sqrt(G0 / cw[2])
        pelvis = (np.cross(w, pw) + R @ vel.linear, R @ data.oMf[fid].rotation, w + R @ vel.angular)
        st.reset(q)
        assert st.step(q, DOUBLE, (0.0, 0.0), qd_measured=qd, pelvis=pelvis) == wb.OK
        np.testing.assert_allclose(st.tip_point, want, rtol=0, atol=TOL)
        assert np.abs(st.capture_point - want).max() > 0.01            # eq. P2's, the strategies'
        assert st.step(q, DOUBLE, (0.0, 0.0), qd_measured=qd, pelvis=pelvis[:2]) == wb.OK
        assert np.isnan(st.tip_point).all()


def _up(alpha: float, beta: float) -> np.ndarray:
    ca, sa, cb, sb = math.cos(alpha), math.sin(alpha), math.cos(beta), math.sin(beta)
    return np.array([-ca * sb, sa, ca * cb])


GAINS = {"on": 1.0, "k_ankle": 10.0, "v_ankle": 0.5, "deadband": 0.02, "hip_margin": 0.02, "k_hip": 20.0,
         "v_hip": 1.0, "step_margin": 0.01, "engage_time": 0.2}
SQUARE = np.array([[-0.1, -0.1], [0.1, -0.1], [0.1, 0.1], [-0.1, 0.1]])     # counter-clockwise, centroid 0


def _respond(xi, c=(0.0, 0.0)):
    u = np.zeros(PUSH.size())
    for k, v in GAINS.items():
        u[PUSH.offset(k)] = v
    walls = np.zeros((4, 3))
    compute_walls(SQUARE, 4, 1.0, walls)
    v_cog, v_trunk = np.full(2, np.nan), np.full(2, np.nan)
    xi = np.array(xi, float)
    engaged = push_gate(u, np.zeros(GATE.size()), xi, np.array(c, float), False, 0.002)   # from rest: a step
    k, margin = push_response(u, engaged, xi, 0.0, 0.0, walls, 4, np.zeros(4), v_cog, v_trunk)
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


def _gate_run(offsets, gait=False, dt=0.002):
    """push_gate over a sequence of capture-point offsets xi - c along e1 (the CoG at the origin): engaged per cycle."""
    u = np.zeros(PUSH.size())
    for k, v in GAINS.items():
        u[PUSH.offset(k)] = v
    gate, c = np.zeros(GATE.size()), np.zeros(2)
    return np.array([push_gate(u, gate, np.array([x, 0.0]), c, gait, dt) for x in offsets])


def test_the_gate_ignores_a_slow_drift_and_engages_on_a_push():
    """eq. P4: an offset xi - c built up to 0.1 m (5 deadbands) along a 3 s quintic, a tilt's pace (its fast
    part at most tau x 1.875 x 0.1 / 3 = 12.5 mm) never engages; a push (0 to 0.1 m in 0.1 s, held 0.3 s, back
    to 0 in 0.5 s) engages during the push, at the ramp's closed-form instant t* = -tau ln(1 - deadband /
    (r tau)) within two cycles, holds while |xi - c| > deadband (its fast part long gone), releases the
    cycle it falls within it; the same push while a gait plays never engages."""
    dt, tau, db = 0.002, GAINS["engage_time"], GAINS["deadband"]
    s = np.arange(0.0, 3.0, dt) / 3.0
    slow = 0.1 * (10 * s**3 - 15 * s**4 + 6 * s**5)
    assert not _gate_run(slow).any()
    r = 1.0                                                       # m/s, the push's ramp
    push = np.concatenate([np.arange(1, 51) * r * dt, np.full(150, 0.1), np.linspace(0.1, 0.0, 250)])
    on = _gate_run(push)
    t_star = -tau * math.log(1.0 - db / (r * tau))
    assert abs(int(np.argmax(on)) * dt - t_star) <= 2 * dt, (int(np.argmax(on)) * dt, t_star)
    moving = push > db
    np.testing.assert_array_equal(on[int(np.argmax(on)):], moving[int(np.argmax(on)):])
    assert not _gate_run(push, gait=True).any()


def test_push_section_is_optional_and_validated():
    """Without ``push:`` the strategies are off; with it (the deployed YAML) its gains are read; a negative
    gain or a zero engage_time is one clear error."""
    bare = yaml.safe_load(CONFIG.read_text())
    assert config_from_dict(bare, str(CONFIG)).push.engage_time > 0.0
    d = copy.deepcopy(bare)
    del d["push"]
    assert config_from_dict(d, str(CONFIG)).push is None
    d["push"] = {"k_ankle": 10.0, "v_ankle": 0.5, "deadband": 0.02, "hip_margin": 0.02, "k_hip": 20.0,
                 "v_hip": 1.0, "step_margin": 0.0}
    assert config_from_dict(d, str(CONFIG)).push.k_ankle == 10.0
    bad = copy.deepcopy(d)
    bad["push"]["engage_time"] = 0.0
    with pytest.raises(Exception, match="push.engage_time"):
        config_from_dict(bad, str(CONFIG))
    for key in ("k_hip", "observer_rate", "step_time"):
        bad = copy.deepcopy(d)
        bad["push"][key] = -1.0
        with pytest.raises(Exception, match=f"push.{key}"):
            config_from_dict(bad, str(CONFIG))


def test_a_stabilizer_without_a_push_section_runs_with_the_strategies_off():
    """``push:`` is optional: without it the whole-body stabilizer runs (its gate never engages, whatever the
    CoG's velocity) instead of failing on the block's zero engage_time, and nothing is added: strategy NONE."""
    d = yaml.safe_load(CONFIG.read_text())
    del d["push"]
    cfg = config_from_dict(d, str(CONFIG))
    st = wb.WholeBodyStabilizer(TreeRobot.from_yaml(cfg.robot_path), cfg)
    st.robot.set_root("left_sole")
    st.reset(Q0.copy())
    qd = np.zeros(st.robot.n)
    qd[2] = qd[8] = 1.0                                   # both hips pitching: the CoG moving fast
    for _ in range(3):
        assert st.step(Q0.copy(), DOUBLE, (0.0, 0.0), qd_measured=qd) == wb.OK
        assert st.strategy[0] == NONE
    assert not push_gate(np.zeros(PUSH.size()), np.zeros(GATE.size()), np.array([1.0, 0.0]), np.zeros(2), False,
                         0.002)


def _lipm(c0: np.ndarray, v0: np.ndarray, p: np.ndarray, omega: float, t: float) -> tuple[np.ndarray, np.ndarray]:
    """The linear inverted pendulum over a fixed pressure centre p, in closed form (c_ddot = omega^2 (c - p))."""
    ch, sh = math.cosh(omega * t), math.sinh(omega * t)
    return p + (c0 - p) * ch + v0 / omega * sh, (c0 - p) * omega * sh + v0 * ch


@pytest.mark.parametrize("lam", [15.0, 30.0])
def test_lipm_observer_follows_the_analytic_pendulum_after_a_push(lam):
    """eq. P3 on the closed-form pendulum: at rest over its pressure centre, then a push (a velocity step of
    (0.3, -0.1) m/s the position alone shows) and the free fall over the same pressure centre: the observed
    capture point is the pendulum's c + c_dot / omega within 1 mm once 8 / lambda has passed (the error's double pole), 0.7 s of
    fall (the CoG 0.26 m out, the capture point 0.77 m), and its error never grows on the way."""
    omega, dt, p = math.sqrt(G0 / 0.8), 0.002, np.array([0.04, -0.01])
    v0 = np.array([0.3, -0.1])
    obs, xi = np.full((2, 2), np.nan), np.zeros(2)
    for k in range(250):                                    # 0.5 s at rest on the pressure centre
        observe_lipm(obs, p, p, omega, lam, dt, xi)
    np.testing.assert_allclose(xi, p, atol=1e-12)
    errors = []
    for k in range(1, 351):
        c, v = _lipm(p, v0, p, omega, k * dt)
        observe_lipm(obs, c, p, omega, lam, dt, xi)
        errors.append(np.abs(xi - (c + v / omega)).max())
    settled = int(8.0 / lam / dt)
    assert max(errors[settled:]) < 1e-3, max(errors[settled:])
    assert np.abs(c + v / omega - p).max() > 0.7           # the fall's capture point is far out by then
    assert max(errors[settled:]) < 0.05 * max(errors[:settled])


def _stepping_stabilizer() -> wb.WholeBodyStabilizer:
    d = yaml.safe_load(CONFIG.read_text())
    d["push"] = {**{k: v for k, v in GAINS.items() if k != "on"}, "step_time": 0.4, "step_height": 0.03,
                 "step_max": 0.2, "step_settle": 0.5}
    cfg = config_from_dict(d, str(CONFIG))
    return wb.WholeBodyStabilizer(TreeRobot.from_yaml(cfg.robot_path), cfg)


def test_a_recovery_step_swings_the_nearest_foot_to_the_capture_point():
    """The CoG carried forward at 1 m/s (and 0.1 m/s to the right) at the flexed posture: its capture point
    is beyond the polygon and nearest the right sole, which swings (single support on the left, the flag
    recovery_step): its sole rises the swing's 30 mm at mid-step and lands 0.4 s later moved along the ground
    by the capture point's offset from the polygon's centroid, clipped to step_max (within 2 mm), on two feet
    again; the left sole does not move. On the level platform the e1, e2 axes are the left sole's x, y."""
    st = _stepping_stabilizer()
    robot = st.robot
    q = Q0.copy()
    robot.set_root("left_sole")
    st.reset(q)
    eps, Jc = 1e-6, np.zeros((2, robot.n))           # the CoG's horizontal Jacobian, by central differences
    for j in range(robot.n):
        dq = np.zeros(robot.n)
        dq[j] = eps
        Jc[:, j] = (robot.com(q + dq) - robot.com(q - dq))[:2] / (2 * eps)
    qd = np.linalg.pinv(Jc) @ np.array([1.0, -0.1])
    right0, left0 = robot.frame(q, "right_sole").copy(), robot.frame(q, "left_sole").copy()
    assert st.step(q, DOUBLE, (0.0, 0.0), qd_measured=qd) == wb.OK
    assert st.strategy[0] == STEP and st.recovery_step[0] == 1.0       # the right foot
    nh = int(st.out[wb.O_NHULL])
    shift = st.capture_point - np.array(polygon_centroid(st.polygon[:nh].copy(), nh))
    shift *= min(1.0, 0.2 / np.linalg.norm(shift))
    target = st.recovery_step[1:].copy()
    flagged, heights = [], []
    for k in range(int(0.45 / st.config.period)):
        assert st.step(st.q_ref, DOUBLE, (0.0, 0.0)) == wb.OK
        flagged.append(st.flags[wb.F_RECOVERY] == 1.0)
        heights.append(robot.frame(st.q_ref, "right_sole")[2, 3] - right0[2, 3])
    assert flagged[0] and not flagged[-1] and int(st.out[wb.O_SUPPORT]) == DOUBLE
    assert max(heights) == pytest.approx(0.03, abs=0.002)
    moved = robot.frame(st.q_ref, "right_sole")[:3, 3] - right0[:3, 3]
    np.testing.assert_allclose(moved, [*shift, 0.0], atol=0.002)
    np.testing.assert_allclose(robot.frame(st.q_ref, "left_sole"), left0, atol=1e-9)
    foot = next(f for f in robot.description.feet if f.frame == "right_sole")
    centre = robot.frame(st.q_ref, "right_sole") @ np.array([*np.mean(np.array(foot.outline), axis=0), 0.0, 1.0])
    np.testing.assert_allclose(centre[:2], target, atol=0.002)          # where the event says it lands


@pytest.mark.parametrize("tip_step", [False, True])
def test_a_tipping_point_out_wants_a_step_with_tip_step(tip_step):
    """At rest on the level platform but the soles tipped 14 deg forward about the left sole's origin (the
    pelvis estimate's gyro carrying it, eq. P2'): the strategies' capture point stays over the soles, the
    tipping point lies beyond the toes; with ``tip_step`` (and no step_delay) a step is planned there, the
    swing sole's (the one nearest it) centre moved by the tipping point's offset from the centroid (clipped
    to step_max), without it none."""
    d = yaml.safe_load(CONFIG.read_text())
    d["push"] = {**{k: v for k, v in GAINS.items() if k != "on"}, "step_time": 0.4, "step_max": 0.2,
                 "tip_step": tip_step}
    cfg = config_from_dict(d, str(CONFIG))
    st = wb.WholeBodyStabilizer(TreeRobot.from_yaml(cfg.robot_path), cfg)
    q = Q0.copy()
    robot = st.robot
    robot.set_root("left_sole")
    R = pin.exp3(np.radians(14.0) * np.array([0.0, 1.0, 0.0]))
    st.reset(q)
    pelvis = (np.zeros(3), R @ robot.frame(q, "pelvis")[:3, :3], np.zeros(3))
    assert st.step(q, DOUBLE, (0.0, 0.0), qd_measured=np.zeros(robot.n), pelvis=pelvis) == wb.OK
    nh = int(st.out[wb.O_NHULL])
    front = st.polygon[:nh, 0].max()
    assert st.capture_point[0] < front and st.tip_point[0] > front + 0.02
    assert st.strategy[0] != STEP
    if not tip_step:
        assert np.isnan(st.recovery_step).all()
        return
    shift = st.tip_point - np.array(polygon_centroid(st.polygon[:nh].copy(), nh))
    shift *= min(1.0, 0.2 / np.linalg.norm(shift))
    sole = ("left_sole", "right_sole")[int(st.recovery_step[0])]         # the one nearest the tipping point
    foot = next(f for f in robot.description.feet if f.frame == sole)
    centre = robot.frame(q, sole) @ np.array([*np.mean(np.array(foot.outline), axis=0), 0.0, 1.0])
    np.testing.assert_allclose(st.recovery_step[1:], centre[:2] + shift, atol=1e-3)


@pytest.mark.parametrize("pushed", [False, True])
def test_the_trunk_spin_answers_a_push_not_a_tipping_point_reached_slowly(pushed):
    """eq. P11 is armed by the gate (eq. P4), with the shipped YAML: the soles tipped 14 deg forward about the
    left sole's origin put the tipping point beyond the toes (eq. P2'); with the CoG at rest (a tilt's slow
    approach: the gate shut) the spin stays armed for 0.1 s and the trunk gets no speed from it; with the CoG
    moving forward at 1 m/s (a push: the gate opens) it fires on the first cycle."""
    st = wb.WholeBodyStabilizer.from_yaml(CONFIG)
    robot, q = st.robot, Q0.copy()
    robot.set_root("left_sole")
    st.reset(q)
    qd = np.zeros(robot.n)
    if pushed:
        eps, Jc = 1e-6, np.zeros((2, robot.n))
        for j in range(robot.n):
            dq = np.zeros(robot.n)
            dq[j] = eps
            Jc[:, j] = (robot.com(q + dq) - robot.com(q - dq))[:2] / (2 * eps)
        qd = np.linalg.pinv(Jc) @ np.array([1.0, 0.0])
    R = pin.exp3(np.radians(14.0) * np.array([0.0, 1.0, 0.0]))
    pelvis = (np.zeros(3), R @ robot.frame(q, "pelvis")[:3, :3], np.zeros(3))
    spin = wb.STATE.views(st.state, n=robot.n).hip_spin
    for _ in range(1 if pushed else 50):
        assert st.step(q, DOUBLE, (0.0, 0.0), qd_measured=qd, pelvis=pelvis) == wb.OK
        nh = int(st.out[wb.O_NHULL])
        assert st.tip_point[0] > st.polygon[:nh, 0].max() + 0.02
        assert spin[H_PHASE] == (SPINNING if pushed else ARMED)


def _push_block(**values: float) -> np.ndarray:
    u = np.zeros(PUSH.size())
    base = {"on": 1.0, "k_ankle": 10.0, "step_time": 0.4, "step_max": 0.3, "step_settle": 1.0, "step_width": 0.16}
    for k, v in {**base, **values}.items():
        u[PUSH.offset(k)] = v
    return u


# two level soles 0.2 m apart, the left one the root (its axes: x forward, y left), their centres and the
# gravity axes (rows up, e1, e2) of a level floor; a push to the left tips the robot onto the left sole
CENTRES = np.array([[0.0, 0.0], [0.0, -0.2]])
RWS = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
T_LEFT, T_RIGHT = np.eye(4), np.eye(4)
T_RIGHT[1, 3] = -0.2


@pytest.mark.parametrize("left, right, unloaded", [
    (1000.0, 0.0, 1), (0.0, 1000.0, 0), (500.0, 500.0, -1), (1000.0, 40.0, -1), (20.0, 20.0, -1)])
def test_the_unloaded_sole_is_the_one_below_release_while_the_other_carries(left, right, unloaded):
    """A sole below release_load (30 N) while the other carries min_load (50 N): the robot tips on the
    other's edge; 40 N is within the hysteresis (still in contact), both light is no support at all."""
    loads = np.array([left / 4] * 4 + [right / 4] * 4)
    assert unloaded_sole(loads, 4, 50.0, 30.0) == unloaded


def test_a_sideways_push_swings_the_lifting_sole_without_crossing_the_other():
    """Tipped onto the left sole (the right one unloaded) with the capture point over the left sole (the
    rule of the forward step would swing the left, loaded sole): the right sole swings at once, flagged as
    the sideways step; the capture point's offset from the centroid (0.05, 0.25) would land it 5 cm left
    of the left sole's centre, across it: it lands step_width (0.16 m) to the right of it instead (eq. P6),
    the outlines 4 cm apart, and SWING, SETTLE, IDLE follow on the step's clock."""
    u, rec = _push_block(), np.zeros(RECOVERY.size())
    xi, cy, cz = np.array([0.05, 0.15]), 0.0, -0.1
    foot = load_shift(u, rec, 1, CENTRES, np.array([0.0, -0.1]), np.zeros(2), np.zeros(2))
    assert foot == 1 and rec[R_LIFTING] == 1.0
    assert plan_step(u, xi, cy, cz, CENTRES, RWS, T_LEFT, T_RIGHT, rec, foot) == 1
    np.testing.assert_allclose(rec[R_TARGET:R_TARGET + 2], [0.05, -0.16], atol=1e-12)
    np.testing.assert_allclose(rec[R_SHIFT:R_SHIFT + 3], [0.05, 0.04, 0.0], atol=1e-12)
    gap = (-0.06) - (rec[R_TARGET + 1] + 0.06)       # the left outline's right edge - the landed one's left edge
    assert gap == pytest.approx(0.04)
    phases = []
    for _ in range(int(1.5 / 0.01)):
        advance_step(u, rec, 0.01)
        phases.append(int(rec[R_PHASE]))
    assert phases[0] == SWING and SETTLE in phases and phases[-1] == IDLE and rec[R_LIFTING] == 0.0
    assert plan_step(u, xi, cy, cz, CENTRES, RWS, T_LEFT, T_RIGHT, np.zeros(RECOVERY.size()), -1) == 0   # nearest


def test_a_load_shift_drives_the_cog_over_the_unloaded_sole_then_swings_the_other():
    """With shift_time > 0 the unloaded right sole is not swung: SHIFT drives the CoG towards its centre at
    shift_speed (the trunk's velocity zeroed) until the left sole unloads in its turn, which then swings; a
    shift that does not unload it ends in SETTLE after shift_time, no step."""
    u, rec = _push_block(shift_time=0.3, shift_speed=0.2), np.zeros(RECOVERY.size())
    c, v_cog, v_trunk = np.array([0.0, -0.05]), np.zeros(2), np.array([1.0, 1.0])
    assert load_shift(u, rec, 1, CENTRES, c, v_cog, v_trunk) == -1
    assert rec[R_PHASE] == SHIFT and rec[R_FOOT] == 0.0
    np.testing.assert_allclose(v_cog, [0.0, -0.2])                 # k (0.15 m) = 1.5 m/s, clipped to 0.2
    np.testing.assert_allclose(v_trunk, [0.0, 0.0])
    advance_step(u, rec, 0.01)
    assert load_shift(u, rec, -1, CENTRES, c, v_cog, v_trunk) == -1 and rec[R_PHASE] == SHIFT
    assert load_shift(u, rec, 0, CENTRES, c, v_cog, v_trunk) == 0 and rec[R_LIFTING] == 1.0
    rec[:] = 0.0
    load_shift(u, rec, 1, CENTRES, c, v_cog, v_trunk)
    for _ in range(31):
        advance_step(u, rec, 0.01)
    assert rec[R_PHASE] == SETTLE


def test_a_step_is_due_only_once_the_need_has_lasted_step_delay():
    """eq. P7 on an exact clock (dt = 1/512 s, step_delay = 50 dt): a sole unloaded for 49 cycles (a small
    push's brief unloading) and loaded again never makes a step due, and the need starts again from zero;
    wanted on end, the step is due at the 50th cycle and not before; a step under way is always due, its
    need cleared."""
    dt = 1.0 / 512.0
    u, rec = _push_block(step_delay=50 * dt), np.zeros(RECOVERY.size())
    assert not any(step_due(u, rec, True, dt) for _ in range(49))
    assert not step_due(u, rec, False, dt) and rec[R_NEED] == 0.0
    due = [step_due(u, rec, True, dt) for _ in range(60)]
    assert due.index(True) == 49 and all(due[49:])
    rec[R_PHASE] = SWING
    assert step_due(u, rec, False, dt) and rec[R_NEED] == 0.0


def test_the_deployed_stabilizer_steps_only_after_step_delay():
    """The deployed YAML (push.step_time, push.step_delay): the CoG carried forward at 1 m/s (0.1 m/s to the
    right) at the flexed posture puts the capture point beyond the polygon every cycle; the recovery step
    (the right foot, the nearest) is planned at the cycle the need reaches step_delay, none before: one
    cycle of a capture point out (a velocity spike) is no step."""
    st = wb.WholeBodyStabilizer.from_yaml(CONFIG)
    delay, period = st.config.push.step_delay, st.config.period
    assert st.config.push.step_time > 0.0 and delay > 0.0
    robot = st.robot
    robot.set_root("left_sole")
    eps, Jc = 1e-6, np.zeros((2, robot.n))
    for j in range(robot.n):
        dq = np.zeros(robot.n)
        dq[j] = eps
        Jc[:, j] = (robot.com(Q0 + dq) - robot.com(Q0 - dq))[:2] / (2 * eps)
    qd = np.linalg.pinv(Jc) @ np.array([1.0, -0.1])
    st.reset(Q0)
    planned = []
    for _ in range(int(round(delay / period)) + 5):
        assert st.step(Q0, DOUBLE, (0.0, 0.0), qd_measured=qd) == wb.OK
        assert st.strategy[0] == STEP
        planned.append(st.recovery_step[0])
    first = next(k for k, f in enumerate(planned) if f == 1.0)
    assert np.isnan(planned[:first]).all()
    assert (first + 1) * period == pytest.approx(delay, abs=0.5 * period)


ROLL = {"step_delay": 0.1, "step_height": 0.03, "roll_start": -0.02, "roll_span": 0.02, "roll_delay": 0.03,
        "roll_time": 0.6, "roll_height": 0.1, "roll_width": 0.45, "roll_trunk": 0.3}


@pytest.mark.parametrize("beyond, grade", [(math.nan, 0.0), (-0.05, 0.0), (-0.02, 0.0), (-0.015, 0.25),
                                           (-0.01, 0.5), (0.0, 1.0), (0.04, 1.0)])
def test_the_sideways_step_is_graded_by_the_tipping_point(beyond, grade):
    """eq. P10 on the left-tipped soles of the sideways test: the tipping point ``beyond`` m outside the
    polygon while the right sole lifts grades the step linearly from roll_start (-2 cm, inside) over
    roll_span (2 cm), 0 without a gyro (NaN); each step parameter is then step_* + g (roll_* - step_*):
    the need it waits (0.1 s to 0.03 s, exact 1/512 s cycles), the least width of the landing from the
    left sole's centre (0.16 to 0.45 m; the soles stand 0.2 m apart), the swing's time (0.4 to 0.6 s)
    and height (0.03 to 0.1 m), and the trunk driven into the fall (to the left, away from the swinging
    right sole) at g 0.3 m/s."""
    dt = 1.0 / 512.0
    u, rec = _push_block(**ROLL), np.zeros(RECOVERY.size())
    due = []
    for _ in range(100):
        assert roll_grade(u, rec, beyond, True) == pytest.approx(grade)
        due.append(step_due(u, rec, True, dt))
    assert due.index(True) + 1 == math.ceil((0.1 + grade * (0.03 - 0.1)) * 512 - 1e-9)
    plan_step(u, np.array([0.0, -0.1]), 0.0, -0.1, CENTRES, RWS, T_LEFT, T_RIGHT, rec, 1)
    assert rec[R_TARGET + 1] == pytest.approx(-max(0.2, 0.16 + grade * (0.45 - 0.16)), abs=1e-12)   # eq. P6
    v = np.zeros(2)
    roll_trunk(u, rec, RWS, v)
    np.testing.assert_allclose(v, [0.0, 0.3 * grade], atol=1e-12)
    T, H, w, heights = 0.4 + grade * (0.6 - 0.4), np.zeros((4, 4)), np.zeros(3), []
    for k in range(round(T / dt) + 2):
        swing_pose(u, rec, np.array([0.0, 0.0, 1.0]), dt, H, w)
        heights.append(H[2, 3])
        advance_step(u, rec, dt)
        assert (rec[R_PHASE] == SWING) == ((k + 1) * dt < T)
    assert max(heights) == pytest.approx(0.03 + grade * 0.07, abs=1e-4)


def test_the_grade_keeps_its_largest_value_until_no_sole_lifts():
    """eq. P10's grade holds the largest since the sole unloaded (the tipping point passing its peak
    before the step is due does not weaken it), is kept through the step it was planned with and after
    it while the sole still lifts (it landed in the air), is 0 again once no sole lifts, and stays 0
    with roll_span 0 (the shipped behaviour before the gyro)."""
    u, rec = _push_block(**ROLL), np.zeros(RECOVERY.size())
    assert [roll_grade(u, rec, b, True) for b in (-0.03, -0.01, 0.0, -0.015)] == pytest.approx([0.0, 0.5, 1.0, 1.0])
    rec[R_PHASE] = SWING
    assert roll_grade(u, rec, -0.05, False) == 1.0
    while rec[R_PHASE] != IDLE:                       # the swing and its settling, on the step's clock
        advance_step(u, rec, 0.01)
    assert roll_grade(u, rec, -0.05, True) == 1.0     # landed in the air, the sole still lifting: the next too
    assert roll_grade(u, rec, 0.0, False) == 0.0 and rec[R_GRADE] == 0.0
    u[PUSH.offset("roll_span")] = 0.0
    assert roll_grade(u, rec, 0.05, True) == 0.0


# eq. P11 on exact clocks (1/512 s): the spin's times are whole cycles (out 0.375 s, hold 0.25 s, back 1.5 s)
SPIN_KEYS = {"hip_start": -0.005, "hip_span": 0.005, "hip_speed": 1.0, "hip_ramp": 0.125, "hip_reach": 0.25,
             "hip_hold": 0.25, "hip_back": 1.5}
# the tipping point's distance beyond the toes' edge after a forward push starts (docs/stabilizer.md, "The tipping
# point": the stepped HIL's xi_t less the edge's 0.170 m): 75 N s goes out and stays, 62.5 N s peaks 10 mm inside
TIP_T = [0.0, 0.04, 0.08, 0.12, 0.16, 0.20, 0.40, 2.0]
TIP_75 = [-0.148, -0.092, -0.019, 0.017, 0.023, 0.029, 0.063, 0.5]
TIP_625 = [-0.148, -0.100, -0.040, -0.010, -0.020, -0.030, -0.080, -0.1]


def _spin(beyond_at, u, cycles, tip=(0.3, -0.1), centroid=(0.0, -0.1), armed=True):
    """Run hip_spin for ``cycles`` of 1/512 s, the tipping point ``beyond_at(t)`` m out (placed at ``tip``, the
    polygon's centroid at ``centroid``): the speeds and the spin state after each cycle."""
    dt, spin = 1.0 / 512.0, np.zeros(SPIN.size())
    v, states = np.zeros(cycles), np.zeros((cycles, SPIN.size()))
    for k in range(cycles):
        v[k] = hip_spin(u, spin, beyond_at(k * dt), np.array(tip), centroid[0], centroid[1], armed, dt)
        states[k] = spin
    return v, states


def test_the_trunk_spins_at_a_75_like_tipping_point_and_not_at_a_62_5_like_one():
    """eq. P11: the spin fires the first cycle the tipping point is past hip_start (5 mm inside the toes: 75 N s
    passes it 95.6 ms after the push starts, on its measured path), never on 62.5 N s's (its peak 10 mm inside),
    without a gyro (NaN) or not armed (a sole lifting, a step, a gait); fired, the trunk's CoG goes along the
    tipping point's direction from the centroid (+e1 here), the grade 1 from 5 mm further, and comes back to 0."""
    dt, u = 1.0 / 512.0, _push_block(**SPIN_KEYS)
    v, st = _spin(lambda t: float(np.interp(t, TIP_T, TIP_75)), u, 1400)
    t_star = 0.08 + 0.04 * (0.019 - 0.005) / 0.036           # -0.005 m on the segment 0.08 -> 0.12 s
    fired = int(np.argmax(st[:, SPIN.offset("phase")] != ARMED))
    assert fired == math.floor(t_star / dt) + 1
    assert st[-1, SPIN.offset("grade")] == 1.0 and st[-1, SPIN.offset("phase")] == SPENT
    np.testing.assert_array_equal(st[fired, SPIN.offset("dir"):SPIN.offset("dir") + 2], [1.0, 0.0])
    assert np.sum(v) * dt == pytest.approx(0.0, abs=1e-12) and st[-1, SPIN.offset("x")] == 0.0
    for path, armed in ((TIP_625, True), ([math.nan] * len(TIP_T), True), (TIP_75, False)):
        v, st = _spin(lambda t: float(np.interp(t, TIP_T, path)), u, 1400, armed=armed)
        assert not v.any() and (st[:, SPIN.offset("phase")] == ARMED).all()


@pytest.mark.parametrize("beyond, grade", [(-0.0025, 0.5), (0.01, 1.0)])
def test_the_trunk_spin_is_bounded_and_comes_back(beyond, grade):
    """eq. P11's profile, the tipping point held ``beyond`` m out (grade 0.5, 1): the speed within g hip_speed,
    its change within quintic's 1.875 g hip_speed / hip_ramp per s (bounded jerk: no step in the speed the
    trunk_pitch drive would have to follow), g hip_reach out by the end of the out phase (0.375 s, whole
    cycles), held still hip_hold s, back to exactly 0 after hip_back s, then SPENT until the tipping point is
    back within hip_start, then ARMED (one answer per excursion)."""
    dt, u = 1.0 / 512.0, _push_block(**SPIN_KEYS)
    out, hold, back = 192, 128, 768
    v, st = _spin(lambda t: beyond, u, out + hold + back + 50)
    assert np.max(np.abs(v)) <= grade * 1.0 + 1e-12
    assert np.max(np.abs(np.diff(v))) / dt <= 1.875 * grade * 1.0 / 0.125 + 1e-9
    x = st[:, SPIN.offset("x")]
    assert x[out - 1] == pytest.approx(grade * 0.25, rel=1e-5) and (v[out:out + hold] == 0.0).all()
    assert (v[:out] >= 0.0).all() and (v[out + hold:] <= 0.0).all()
    assert x[out + hold + back - 1] == 0.0 and st[out + hold + back - 1, SPIN.offset("phase")] == SPENT
    assert not v[out + hold + back:].any()
    spin = st[-1].copy()
    hip_spin(u, spin, -0.01, np.array([0.3, -0.1]), 0.0, -0.1, True, dt)
    assert spin[SPIN.offset("phase")] == ARMED


def test_the_trunk_spin_keys_are_validated():
    """push.hip_*: the spin's speed, ramp and return time > 0, its span, reach and hold >= 0: one clear error."""
    bare = yaml.safe_load(CONFIG.read_text())
    for key in ("hip_speed", "hip_ramp", "hip_back", "hip_span", "hip_reach", "hip_hold"):
        bad = copy.deepcopy(bare)
        bad["push"][key] = 0.0 if key in ("hip_speed", "hip_ramp", "hip_back") else -0.01
        with pytest.raises(Exception, match=f"push.{key}"):
            config_from_dict(bad, str(CONFIG))
    push = config_from_dict(bare, str(CONFIG)).push                       # on as shipped, with the tip step
    assert push.hip_span > 0.0 and push.tip_step and push.tip_shift > 0.0
    del bare["push"]["hip_span"]
    assert config_from_dict(bare, str(CONFIG)).push.hip_span == 0.0       # off by default


# eq. P12 on exact clocks: dt = 1/512 s; the tipping point's e1 after a forward push (docs/stabilizer.md, "The
# tipping point": 62.5 N·s peaks at 0.160 m, 75 N·s passes the toes' edge, 0.170 m, 0.10 s after the push)
DT = 1.0 / 512.0
TOES = 0.17
TIP_TRACES = {"62.5": ([0.0, 0.04, 0.08, 0.12, 0.16, 0.4], [0.022, 0.067, 0.128, 0.160, 0.150, 0.090]),
              "75": ([0.0, 0.04, 0.08, 0.12, 0.16, 0.4], [0.022, 0.078, 0.151, 0.187, 0.193, 0.233])}
TIP = {"step_delay": 0.1, "tip_shift": 0.3, "tip_speed": 0.1, "tip_lead": 1.0, "tip_width": 0.12, "step_max": 0.45}


def _tip_run(trace: str, u: np.ndarray) -> tuple[np.ndarray, int | None]:
    """The trigger of eq. P7 with the tip's want (xi_t beyond the toes) and P12's shift, 0.4 s of a trace:
    the recovery state and the cycle the shift started (None: never)."""
    rec, started = np.zeros(RECOVERY.size()), None
    for k in range(int(0.4 / DT)):
        e1 = float(np.interp(k * DT, *TIP_TRACES[trace]))
        if step_due(u, rec, e1 - TOES > 0.0, DT) and started is None and tip_shift(u, rec, np.array([e1, -0.1]),
                                                                                     CENTRES):
            started = k
        advance_step(u, rec, DT)
    return rec, started


def test_the_tip_step_fires_at_75_and_not_at_62_5_newton_seconds():
    """eq. P7 + P12: the 75 N·s-like tipping point, out from the cycle it passes the toes, starts the load shift
    once the want has lasted step_delay (51.2 cycles: the 52nd out), the swing sole the one nearest it (a tie
    between two soles level with it: the right one); the 62.5 N·s-like one, peaking 10 mm inside, never
    starts it; with tip_shift 0 (the shipped keys) no shift starts, the step swings at once as before."""
    u = _push_block(**TIP)
    rec, started = _tip_run("62.5", u)
    assert started is None and rec[R_PHASE] == IDLE and rec[R_TIP] == 0.0
    rec, started = _tip_run("75", u)
    t, e1 = TIP_TRACES["75"]
    out = next(k for k in range(1000) if np.interp(k * DT, t, e1) > TOES)
    assert started == out + 51 and rec[R_TIP] == 1.0 and rec[R_FOOT] == 1.0
    rec, started = _tip_run("75", _push_block(**{**TIP, "tip_shift": 0.0}))
    assert started is None and rec[R_TIP] == 0.0


def test_the_tip_shift_drives_the_cog_over_the_stance_sole_then_swings():
    """P12's shift: the CoG driven towards the stance (left) sole's centre at tip_speed (P5's law), the trunk's
    velocity zeroed; the swing (right) sole lifts when it unloads, or at tip_shift (153.6 cycles: the 154th)
    whatever the loads; a shift losing its double support (load_shift not called) ends in SETTLE one cycle
    later, no step."""
    u, rec = _push_block(**TIP), np.zeros(RECOVERY.size())
    assert tip_shift(u, rec, np.array([0.2, -0.1]), CENTRES) and rec[R_PHASE] == SHIFT and rec[R_FOOT] == 1.0
    c, v_cog, v_trunk = np.array([0.05, -0.1]), np.zeros(2), np.array([1.0, 1.0])
    assert load_shift(u, rec, -1, CENTRES, c, v_cog, v_trunk) == -1
    np.testing.assert_allclose(v_cog, 0.1 * np.array([-0.05, 0.1]) / np.hypot(0.05, 0.1))
    np.testing.assert_allclose(v_trunk, [0.0, 0.0])
    assert load_shift(u, rec, 1, CENTRES, c, v_cog, v_trunk) == 1 and rec[R_LIFTING] == 1.0     # unloaded
    rec[:] = 0.0
    tip_shift(u, rec, np.array([0.2, -0.1]), CENTRES)
    swung = None
    for k in range(200):
        if load_shift(u, rec, -1, CENTRES, c, v_cog, v_trunk) == 1:
            swung = k
            break
        advance_step(u, rec, DT)
    assert swung == 154
    rec[:] = 0.0
    tip_shift(u, rec, np.array([0.2, -0.1]), CENTRES)
    for _ in range(155):
        advance_step(u, rec, DT)
    assert rec[R_PHASE] == SETTLE and rec[R_FOOT] == -1.0


def test_the_tip_step_lands_where_the_pendulum_carries_the_tipping_point():
    """P12's landing against its equation: the tipping point xi_t beyond the polygon by b, carried away from the
    centroid G for tip_lead times the swing's time T, xi_t + (exp(omega tip_lead T) - 1) b (xi_t - G) / |xi_t - G|;
    tip_lead 0 is xi_t itself, and the front sole lands exactly tip_width (not step_width) across from the stance
    sole's centre, an aim wider or narrower moved onto it (P6; a wider aim left the CoG on its inner edge), where a
    step without tip only keeps at least its width."""
    u, rec = _push_block(**TIP), np.zeros(RECOVERY.size())
    tip, b, omega, G = np.array([0.226, -0.05]), 0.056, 3.22, np.array([0.02, -0.1])
    aim = np.zeros(2)
    tip_aim(u, rec, tip, b, omega, G[0], G[1], aim)
    want = tip + (math.exp(omega * 0.4) - 1.0) * b * (tip - G) / np.linalg.norm(tip - G)
    np.testing.assert_allclose(aim, want, atol=1e-12)
    tip_aim(_push_block(**{**TIP, "tip_lead": 0.0}), rec, tip, b, omega, G[0], G[1], aim)
    np.testing.assert_array_equal(aim, tip)
    tip_aim(u, rec, tip, -0.01, omega, G[0], G[1], aim)           # inside the polygon: no lead
    np.testing.assert_array_equal(aim, tip)
    rec[R_TIP] = 1.0
    plan_step(u, np.array([0.3, -0.02]), 0.0, -0.1, CENTRES, RWS, T_LEFT, T_RIGHT, rec, 1)
    np.testing.assert_allclose(rec[R_TARGET:R_TARGET + 2], [0.3, -0.12], atol=1e-12)
    rec[R_TIP] = 1.0                                               # aimed 0.35 m across: lands 0.12 m across
    plan_step(u, np.array([0.3, -0.25]), 0.0, -0.1, CENTRES, RWS, T_LEFT, T_RIGHT, rec, 1)
    np.testing.assert_allclose(rec[R_TARGET:R_TARGET + 2], [0.3, -0.12], atol=1e-12)
    rec[R_TIP] = 0.0                                               # no tip: the wider aim kept
    plan_step(u, np.array([0.3, -0.25]), 0.0, -0.1, CENTRES, RWS, T_LEFT, T_RIGHT, rec, 1)
    np.testing.assert_allclose(rec[R_TARGET:R_TARGET + 2], [0.3, -0.35], atol=1e-12)


def test_a_tip_step_lands_on_touchdown_and_roots_at_the_landed_sole():
    """The swing ends the cycle its sole carries min_load past half its time (the stance sole tipped, the floor
    met early), not on a scuff before; the landed sole then roots the double support (it lies flat), where a
    step without tip roots at the sole that stayed down."""
    u, rec = _push_block(**TIP), np.zeros(RECOVERY.size())
    rec[R_TIP] = 1.0
    plan_step(u, np.array([0.3, -0.1]), 0.0, -0.1, CENTRES, RWS, T_LEFT, T_RIGHT, rec, 1)
    loaded = np.array([0.0] * 4 + [20.0] * 4)               # 80 N on the right (swing) sole's cells
    for _ in range(102):                                    # 0.199 s: before half the swing, a scuff
        touchdown(u, rec, loaded, 4, 50.0)
        advance_step(u, rec, DT)
    assert rec[R_PHASE] == SWING
    while rec[R_T] < 0.2:
        touchdown(u, rec, np.zeros(8), 4, 50.0)
        advance_step(u, rec, DT)
    touchdown(u, rec, loaded, 4, 50.0)
    advance_step(u, rec, DT)
    assert rec[R_PHASE] == SETTLE and rec[R_ROOT] == 2.0    # the right sole, landed, roots
    rec[R_TIP] = 0.0
    rec[R_PHASE], rec[R_T] = SWING, 0.0
    for _ in range(int(0.4 / DT) + 1):
        touchdown(u, rec, loaded, 4, 50.0)
        advance_step(u, rec, DT)
    assert rec[R_ROOT] == 1.0                               # no tip: the left sole, which stayed down


def test_the_rear_sole_follows_beside_the_front_one_once():
    """After a tip step's landing (SETTLE, tip 1) the rear sole, unloaded, swings to step_width across from the
    front sole's centre, its move from its own centre; not while it carries load, and no third step (tip 2)."""
    u, rec = _push_block(**TIP), np.zeros(RECOVERY.size())
    centres, aim = np.array([[0.0, 0.0], [0.37, -0.12]]), np.zeros(2)
    rec[R_TIP], rec[R_PHASE], rec[R_FOOT] = 1.0, SETTLE, 1.0
    assert tip_follow(u, rec, -1, centres, aim) == -1
    assert tip_follow(u, rec, 0, centres, aim) == 0 and rec[R_TIP] == 2.0
    np.testing.assert_allclose(aim, [0.37, 0.04])
    rec[R_PHASE] = SETTLE
    assert tip_follow(u, rec, 0, centres, aim) == -1


def test_a_sole_tipped_on_its_toes_is_laid_flat_about_its_toe_edge():
    """lowest_vertex and tilt_pose (P12's swing in the world's up, the rear sole laid flat): a sole tipped 8 deg
    toes down about its toe edge, turned by the least rotation from its normal onto the floor's about its lowest
    vertex, lies flat with the toe where it was and every outline vertex on the floor."""
    outline = np.array([[0.17, -0.04], [0.17, 0.04], [0.15, 0.06], [-0.07, 0.06], [-0.09, 0.04], [-0.09, -0.04],
                        [-0.07, -0.06], [0.15, -0.06]])
    R = pin.exp3(np.radians(8.0) * np.array([0.0, 1.0, 0.0]))        # toes down
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = np.array([0.17, 0.0, 0.0]) - R @ np.array([0.17, 0.0, 0.0])   # the toe edge on the floor
    up = np.array([0.0, 0.0, 1.0])
    pivot = np.array(lowest_vertex(outline, len(outline), T, up))
    assert pivot[0] == pytest.approx(0.17) and pivot[2] == pytest.approx(0.0, abs=1e-12)
    v = np.array([0.1, 0.0, 0.0])
    tilt_pose(T[:3, 2].copy(), up, pivot, T, v)
    np.testing.assert_allclose(T[:3, :3], np.eye(3), atol=1e-12)
    np.testing.assert_allclose(T[:3, 3], 0.0, atol=1e-12)
    np.testing.assert_allclose(v, R.T @ np.array([0.1, 0.0, 0.0]), atol=1e-12)
