"""The whole-robot stabilizer (docs/multi_cog.md): the convex hull, the task hierarchy's
null-space property, the closed chain of double support, the CoG pushed back inside,
the CoG Jacobian against the composite models' Theorem 3, no allocation, and a flag
for every status that is not OK."""
from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest
import yaml
from numba import njit

from models.composite.models import composite_setup, composite_update
from models.common.support import DOUBLE, LEFT, RIGHT
from models.gait.plan import GaitParams
from models.gait.wholebody import flexed_posture
from models.tree.robot import TreeRobot
from stabilizer import whole_body as wb
from models.polygon import convex_hull, polygon_centroid
from stabilizer.task_hierarchy import posture_level, solve_level, start_basis
from stabilizer.whole_body_config import config_from_dict

from tests.nrt import assert_allocation_free
from tests.paths import ROBOTS

CONFIG = ROBOTS / "bip2000_stabilizer.yaml"
BASE = yaml.safe_load(CONFIG.read_text())
ROBOT = TreeRobot.from_yaml(ROBOTS / "bip2000.yaml")
Q0 = flexed_posture(ROBOT, GaitParams(flex=0.06))       # both soles flat, knees bent


def make(**sections) -> wb.WholeBodyStabilizer:
    """The deployed configuration with top-level sections merged (dicts) or replaced."""
    d = copy.deepcopy(BASE)
    for key, value in sections.items():
        if isinstance(value, dict):
            d[key].update(value)
        else:
            d[key] = value
    return wb.WholeBodyStabilizer(ROBOT, config_from_dict(d, str(CONFIG)))


def state(st: wb.WholeBodyStabilizer) -> dict[str, np.ndarray]:
    return wb.STATE.views(st.state, n=st.n)._asdict()          # by name: the layout's fields


# ---------------------------------------------------------------- support polygon

def brute_force_hull(p: np.ndarray) -> set[tuple[float, float]]:
    """Vertices of the hull, O(m^3): p_i is one when some edge p_i -> p_j leaves every
    point on its left or on the segment [p_i, p_j] itself."""
    out = set()
    for i, j in itertools.permutations(range(len(p)), 2):
        e = p[j] - p[i]
        if not np.any(e):
            continue
        cross = e[0] * (p[:, 1] - p[i, 1]) - e[1] * (p[:, 0] - p[i, 0])
        t = ((p - p[i]) @ e) / (e @ e)
        on = np.abs(cross) <= 1e-12
        if np.all(cross >= -1e-12) and np.all(~on | ((t >= -1e-12) & (t <= 1.0 + 1e-12))):
            out.add(tuple(p[i]))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_hull_matches_brute_force(seed):
    """Random point sets (up to 16, with repeated and collinear points on a grid): the
    same vertex set as the brute force, counter-clockwise and strictly convex."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(3, wb.MAX_POINTS + 1))
    pts = rng.integers(-3, 4, (m, 2)).astype(float) * 0.05 if seed % 2 else rng.uniform(-0.3, 0.3, (m, 2))
    hull = np.zeros((2 * m + 1, 2))
    h = convex_hull(pts, m, np.zeros((m, 2)), hull)
    expected = brute_force_hull(pts)
    if len(expected) < 3:
        assert h < 3
        return
    assert set(map(tuple, hull[:h])) == expected and h == len(expected)
    e = np.roll(hull[:h], -1, axis=0) - hull[:h]
    turn = e[:, 0] * np.roll(e, -1, axis=0)[:, 1] - e[:, 1] * np.roll(e, -1, axis=0)[:, 0]
    assert np.all(turn > 0.0)


def test_hull_of_collinear_points_is_no_polygon():
    pts = np.array([[0.0, 0.0], [0.1, 0.1], [0.2, 0.2], [0.1, 0.1]])
    assert convex_hull(pts, 4, np.zeros((4, 2)), np.zeros((9, 2))) < 3


def test_polygon_centroid_of_a_triangle_and_a_rectangle():
    assert polygon_centroid(np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 3.0]]), 3) == pytest.approx((1.0, 1.0))
    rect = np.array([[-0.09, -0.06], [0.17, -0.06], [0.17, 0.06], [-0.09, 0.06]])
    assert polygon_centroid(rect, 4) == pytest.approx((0.04, 0.0))


def test_double_support_polygon_is_the_hull_of_both_soles():
    """At the flexed posture the double-support polygon is the hull of the two outlines
    (brute force on the 16 projected sole points); single support is one sole."""
    st = make()
    st.reset(Q0)
    assert st.step(Q0, DOUBLE) == wb.OK
    ROBOT.set_root("left_sole")
    soles = []
    for sole, foot in zip(("left_sole", "right_sole"), ROBOT.description.feet):
        T = ROBOT.frame(Q0, sole)
        ol = np.array(foot.outline)
        soles.append((T[:3, :3] @ np.c_[ol, np.zeros(len(ol))].T).T + T[:3, 3])
    pts = np.vstack(soles)[:, :2]
    assert {tuple(np.round(v, 9)) for v in st.polygon[:st.n_hull]} == \
        {tuple(np.round(v, 9)) for v in brute_force_hull(pts)}
    assert st.step(Q0, LEFT) == wb.OK
    assert st.n_hull == 8 and np.ptp(st.polygon[:8, 1]) == pytest.approx(0.12)


# ---------------------------------------------------------------- task hierarchy

def _hierarchy(Js, xds, W, qd0, locked=None):
    """qd after each level (the last entry: after the posture level)."""
    n = W.shape[0]
    Z, qd = np.zeros((n, n)), np.zeros(n)
    r = start_basis(W, np.zeros(n) if locked is None else locked, Z)
    out = []
    for J, xd in zip(Js, xds):
        status, r, _ = solve_level(J, J.shape[0], xd, Z, r, 1e-3, 0.05, 0.02, qd, np.zeros((6, n)),
                                   np.zeros((6, 6)), np.zeros(6), np.zeros(n), np.zeros((6, 6)))
        assert status == 0
        out.append(qd.copy())
    posture_level(W, qd0, Z, r, qd)
    out.append(qd.copy())
    return out


@pytest.mark.parametrize("seed", range(10))
def test_lower_levels_leave_higher_task_velocities_unchanged(seed):
    """Random weighted hierarchies (6, 2, 2, 3 rows over 15 joints, one level
    rank-deficient): every task's velocity after the lower levels (and the posture
    level) equals its velocity right after its own level, to 1e-9."""
    rng = np.random.default_rng(seed)
    n = 15
    Js = [rng.normal(size=(m, n)) for m in (6, 2, 2, 3)]
    Js[2][1] = Js[2][0] * 2.0                          # a singular task
    xds = [rng.normal(size=J.shape[0]) for J in Js]
    W = rng.uniform(0.5, 3.0, n)
    locked = (rng.uniform(size=n) < 0.15).astype(float)
    qds = _hierarchy(Js, xds, W, rng.normal(size=n) * 5.0, locked)
    for k, J in enumerate(Js):
        for later in qds[k + 1:]:
            np.testing.assert_allclose(J @ later, J @ qds[k], atol=1e-9)
    assert np.all(qds[-1][locked != 0.0] == 0.0)
    # the top level alone is the weighted damped least-squares solution (eq. 44 analogue)
    J, x = Js[0][:, locked == 0.0], xds[0]
    Wi = np.diag(1.0 / W[locked == 0.0])
    lam2 = 1e-6
    np.testing.assert_allclose(qds[0][locked == 0.0], Wi @ J.T @ np.linalg.solve(J @ Wi @ J.T + lam2 * np.eye(6), x),
                               atol=1e-9)


def _run(st, q, support, tilt=(0.0, 0.0), steps=1):
    for _ in range(steps):
        assert st.step(q, support, tilt) == wb.OK
        q = st.q_ref.copy()
    return q


def test_closed_chain_holds_under_every_task():
    """Double support: the other sole's velocity relative to the root sole, J_c qd_ref, is
    the closure correction feet_gain x (the chain's integration drift, < 1 um) to 1e-12,
    and exactly 0 (1e-12) without the correction, whatever the lower tasks ask: the CoG
    outside (tilted 8 deg), the trunk's CoG beyond its walls, a far posture target,
    joints locked at a limit."""
    cases = [dict(), dict(tasks={"feet_gain": 0.0}), dict(tasks={"posture_gain": 20.0}),
             dict(tasks={"limit_margin": 0.3})]
    q_trunk = Q0.copy()
    q_trunk[ROBOT.model.joint_names.index("trunk_pitch")] = 0.45      # trunk CoG beyond its box
    for kw, (q, tilt) in itertools.product(cases, ((Q0, (0.0, 0.0)), (Q0, (0.14, -0.1)), (q_trunk, (0.0, 0.1)))):
        st = make(**kw)
        st.reset(q)
        moved = 0.0
        for _ in range(300):
            assert st.step(q, DOUBLE, tilt) == wb.OK
            Jc = st.data.Jf[ROBOT.model.index("frame", "right_sole")]
            xd = state(st)["xd"][:6]                 # feet_gain x the integration's drift
            assert st.closure_error[0] < 1e-6 or st.config.feet_gain == 0.0
            np.testing.assert_allclose(Jc @ st.qd_ref, xd, rtol=0.0, atol=1e-12)
            moved = max(moved, np.abs(st.qd_ref).max())
            q = st.q_ref.copy()
        assert moved > 1e-3


def test_lower_tasks_do_not_change_the_cog_velocity():
    """From one state (single support, the CoG outside, the trunk bent), the CoG's
    horizontal velocity is the same with the posture task off and on: it acts in the
    CoG task's null space (the feet and trunk tasks in between change nothing either)."""
    q = Q0.copy()
    q[ROBOT.model.joint_names.index("trunk_pitch")] = 0.3
    a, b = make(tasks={"posture_gain": 0.0}), make(tasks={"posture_gain": 5.0})
    a.reset(Q0)
    q = _run(a, q, LEFT, steps=600)          # the fields engaged (their ramp is at 0.6)
    b.state[:], b.out[:] = a.state, a.out
    rows = []
    for st in (a, b):
        assert st.step(q, LEFT) == wb.OK and not st.flag_dict()["joint_speed_saturated"]
        rows.append((state(st)["Jt"][6:8] @ st.qd_ref, st.qd_ref.copy()))
    assert np.abs(rows[0][1] - rows[1][1]).max() > 1e-4        # the posture task did something
    np.testing.assert_allclose(rows[0][0], rows[1][0], atol=1e-9)
    np.testing.assert_allclose(rows[0][0], a.cog_velocity[1:], atol=1e-9)


def test_cog_outside_is_pushed_back_inside():
    """From the double-support posture in left single support the CoG is 4 cm beyond the
    sole's inner edge: its velocity points inwards and the margin grows monotonically over
    a kinematic integration until the CoG is well inside."""
    st = make()
    st.reset(Q0)
    q = Q0.copy()
    margins = []
    for k in range(2500):
        assert st.step(q, LEFT) == wb.OK
        margins.append(st.min_margin)
        if k == 0:
            assert st.flag_dict()["cog_outside"]
            w = st.walls[int(np.argmin(st.margins[:st.n_hull]))].copy()
        if k == 300:
            assert st.cog_velocity[1:] @ w[:2] > 0.0                 # towards the inner normal
        q = st.q_ref.copy()
    assert max(st.closure_error) < 1e-4          # the lifted right foot held its pose (second task)
    assert margins[0] == pytest.approx(-0.04, abs=2e-3)
    assert np.all(np.diff(margins) >= -1e-12)
    assert margins[-1] > 0.04 and not st.flag_dict()["cog_outside"]


def test_support_changes_hold_the_other_sole_where_it_is():
    """Double -> right -> double -> left -> double: the root moves to the stance sole, the
    other sole's pose is captured at each change and held (closure below 1 mm, and the
    double-support chain velocity is the closure correction to 1e-12)."""
    st = make()
    st.reset(Q0)
    q = Q0.copy()
    for support, cycles in ((DOUBLE, 200), (RIGHT, 400), (DOUBLE, 200), (LEFT, 400), (DOUBLE, 200)):
        for _ in range(cycles):
            assert st.step(q, support) == wb.OK
            assert max(st.closure_error) < 1e-3 and not st.flag_dict()["constraint_violated"]
            q = st.q_ref.copy()
        assert int(st.out[wb.O_SUPPORT]) == support
        if support == DOUBLE:
            Jc = st.data.Jf[ROBOT.model.index("frame", "right_sole")]
            np.testing.assert_allclose(Jc @ st.qd_ref, state(st)["xd"][:6], atol=1e-12)


# ---------------------------------------------------------------- Jacobians

@pytest.mark.parametrize("stance", [LEFT, RIGHT])
def test_cog_rows_equal_the_composite_theorem_3_jacobian(stance):
    """The stabilizer's CoG task rows (tree engine rooted at the stance sole) equal
    Rws (e1, e2 rows) times the composite models' CoG Jacobian (Theorems 1-3) at the same
    posture, and so does the trunk's CoG Jacobian for every group, to 1e-12."""
    st = make()
    rng = np.random.default_rng(3)
    q = Q0 + rng.uniform(-0.1, 0.1, ROBOT.n)
    st.reset(q)
    assert st.step(q, stance, (0.05, -0.08)) == wb.OK
    s = state(st)
    sole = ("left_sole", "right_sole")[stance]
    model, plan, data = composite_setup(ROBOT.description, sole)
    z = np.zeros(ROBOT.n)
    composite_update(model.buf, plan.buf, data.buf, s["q"] - st.qd_ref * st.config.period, z, z[:3])
    np.testing.assert_allclose(s["Jt"][6:8], s["Rws"][1:3] @ data.Jcom[0], atol=1e-12)
    np.testing.assert_allclose(st.data.Jcom, data.Jcom, atol=1e-12)


# ---------------------------------------------------------------- real time

@njit
def _cycles(mbuf, dbuf, p, s, inp, out, count):
    for _ in range(count):
        wb.step(mbuf, dbuf, p, s, inp, out)


@pytest.mark.slow
@pytest.mark.parametrize("loads", [[100.0] * 8, [100.0] * 4 + [0.0] * 4])
def test_cycle_is_allocation_free(loads):
    """NRT allocations of 1 and of 1001 cycles inside one njit call are equal (tests/nrt.py),
    in double and in single support with the sensors as contact source, a tilt and every
    task active."""
    st = make(support={"source": "sensors"})
    st.reset(Q0)
    st.in_q[:] = Q0
    st.in_tilt[:2] = (0.05, 0.08)
    st.in_loads[:] = loads
    assert_allocation_free(_cycles, st.mbuf, st.dbuf, st.params, st.state, st.inputs, st.out)
    assert wb.step(st.mbuf, st.dbuf, st.params, st.state, st.inputs, st.out) == wb.OK


# ---------------------------------------------------------------- statuses and flags

def test_not_reset_and_rejected_inputs_raise_flags():
    st = make()
    assert st.step(Q0, DOUBLE) == wb.NOT_RESET and st.flag_dict()["input_rejected"]
    st.reset(Q0)
    assert st.step(Q0, DOUBLE) == wb.OK
    q_ref = st.q_ref.copy()
    for q, support, tilt in ((np.full(ROBOT.n, np.nan), DOUBLE, (0.0, 0.0)), (Q0, 5, (0.0, 0.0)),
                             (Q0, 0.5, (0.0, 0.0)), (Q0, DOUBLE, (1.3, 0.0)), (Q0, DOUBLE, (0.0, np.inf))):
        assert st.step(q, support, tilt) == wb.REJECTED_INPUT
        assert st.flag_dict()["input_rejected"] and np.all(st.qd_ref == 0.0)
        np.testing.assert_array_equal(st.q_ref, q_ref)


def _area(st: wb.WholeBodyStabilizer) -> float:
    """Shoelace area (m^2) of the stabilizer's support polygon."""
    p = st.polygon[:st.n_hull]
    return 0.5 * float(np.sum(p[:, 0] * np.roll(p[:, 1], -1) - np.roll(p[:, 0], -1) * p[:, 1]))


def test_no_support_from_the_sensors_raises_a_flag():
    """Sensors as contact source: no load -> NO_SUPPORT; the left foot loaded on two cells
    only -> LEFT, its polygon the whole sole outline (as the phase source's: the cells
    measure the centre of pressure, not the contact area); lifted again -> NO_SUPPORT
    (a new support taken at once: a dwell of one cycle)."""
    st = make(support={"source": "sensors", "dwell_s": 0.002})
    ref = make()
    st.reset(Q0)
    ref.reset(Q0)
    assert st.step(Q0, DOUBLE, loads=np.zeros(8)) == wb.NO_SUPPORT
    assert st.flag_dict()["no_support"]
    assert st.step(Q0, DOUBLE, loads=[60.0, 60.0, 0.0, 0.0, 0, 0, 0, 0]) == wb.OK
    assert ref.step(Q0, LEFT) == wb.OK
    assert int(st.out[wb.O_SUPPORT]) == LEFT and not st.flag_dict()["no_support"]
    assert st.n_hull == ref.n_hull == 8                    # the outline's octagon
    np.testing.assert_allclose(st.polygon[:8], ref.polygon[:8], atol=1e-12)
    assert st.step(Q0, DOUBLE, loads=[10.0, 5.0, 0.0, 0.0, 0, 0, 0, 0]) == wb.NO_SUPPORT
    assert st.flag_dict()["no_support"]


def test_flickering_corners_keep_the_polygon_while_the_feet_are_in_debounced_contact():
    """Sensors as contact source, the deployed hysteresis and dwell (5 cycles): each cycle every
    cell jumps anywhere in [-40, 300] N (a corner away from the centre of pressure reads ~0 or
    pulls), a foot sits between release_load and min_load for a while, and dips to nothing for
    fewer cycles than the dwell. The support stays DOUBLE and the polygon is, every cycle, the
    phase source's on the same inputs (both sole outlines): no_support never rises. Then the
    right foot lifts for good: LEFT after the dwell, its outline; then the left too: NO_SUPPORT."""
    st, ref = make(support={"source": "sensors"}), make()
    dwell = int(st.params[wb.P_DWELL])
    assert dwell == 5
    st.reset(Q0)
    ref.reset(Q0)
    rng = np.random.default_rng(7)
    area = None
    for k in range(400):
        loads = rng.uniform(-40.0, 300.0, 8)
        for f in range(2):                      # each foot's total at least release_load (30 N)
            foot = loads[4 * f:4 * f + 4]
            if foot.sum() < 35.0:
                foot += (35.0 - foot.sum()) / 4.0
        if 100 <= k < 200:                      # the right foot between release_load and min_load
            loads[4:] = rng.uniform(-10.0, 30.0, 4)
            loads[4:] += (rng.uniform(31.0, 49.0) - loads[4:].sum()) / 4.0
        if k % 50 in range(10, 10 + (k // 50) % dwell):   # dips of 0..dwell-1 cycles
            loads[4 * (k // 50 % 2):4 * (k // 50 % 2) + 4] = 0.0
        assert st.step(Q0, DOUBLE, loads=loads) == wb.OK, k
        assert ref.step(Q0, DOUBLE) == wb.OK
        assert int(st.out[wb.O_SUPPORT]) == DOUBLE and not st.flag_dict()["no_support"], k
        assert st.n_hull == ref.n_hull
        np.testing.assert_allclose(st.polygon[:st.n_hull], ref.polygon[:ref.n_hull], atol=1e-12)
        area = area or _area(st)
        assert _area(st) == pytest.approx(area, rel=1e-9), k
    left_only = [100.0] * 4 + [0.0] * 4
    for _ in range(dwell - 1):
        assert st.step(Q0, DOUBLE, loads=left_only) == wb.OK and int(st.out[wb.O_SUPPORT]) == DOUBLE
    assert st.step(Q0, DOUBLE, loads=left_only) == wb.OK and int(st.out[wb.O_SUPPORT]) == LEFT
    assert ref.step(Q0, LEFT) == wb.OK
    np.testing.assert_allclose(_area(st), _area(ref), rtol=1e-9)
    assert _area(st) < 0.6 * area                       # one sole of the two
    for _ in range(dwell - 1):
        assert st.step(Q0, DOUBLE, loads=np.zeros(8)) == wb.OK
    assert st.step(Q0, DOUBLE, loads=np.zeros(8)) == wb.NO_SUPPORT and st.flag_dict()["no_support"]


def test_cog_outside_near_singular_limit_and_constraint_flags():
    st = make()
    st.reset(Q0)
    assert st.step(Q0, RIGHT) == wb.OK and st.flag_dict()["cog_outside"]
    assert st.flag_dict()["measured_cog_outside"]
    st = make()
    st.reset(Q0)
    assert st.step(Q0, DOUBLE) == wb.OK and not st.flag_dict()["near_singular"]
    st = make(tasks={"damping": {"min": 1e-4, "max": 0.05, "threshold": 0.3}})
    st.reset(Q0)                                # the closed chain's sigma (0.27) below the threshold
    assert st.step(Q0, DOUBLE) == wb.OK and st.flag_dict()["near_singular"]
    assert st.sigmas["feet"] < st.config.sigma_threshold
    st = make(tasks={"limit_margin": 0.3})     # ankles inside the margin of their limit -0.6
    st.reset(Q0)
    qmin, qmax = ROBOT.model.qmin, ROBOT.model.qmax
    room0 = np.minimum(Q0 - qmin, qmax - Q0)
    q, room = Q0.copy(), room0.copy()
    for _ in range(300):
        assert st.step(q, LEFT) == wb.OK
        q = st.q_ref.copy()
        room = np.minimum(room, np.minimum(q - qmin, qmax - q))
    assert st.flag_dict()["at_joint_limit"]
    inside = room0 < 0.3                        # no joint moved further into its margin
    assert inside.any() and np.all(room[inside] >= room0[inside] - 1e-12)
    st = make()
    st.reset(Q0)
    assert st.step(Q0, DOUBLE) == wb.OK and not st.flag_dict()["constraint_violated"]
    state(st)["q"][ROBOT.model.joint_names.index("r_knee")] += 0.05     # the chain opened
    assert st.step(Q0, DOUBLE) == wb.OK and st.flag_dict()["constraint_violated"]
    assert st.closure_error[0] > st.config.closure_tolerance[0]


def test_trunk_outside_flag_and_its_field_pushes_back():
    q = Q0.copy()
    q[ROBOT.model.joint_names.index("trunk_pitch")] = 0.45
    st = make()
    st.reset(q)
    margins, flags = [], []
    for _ in range(1500):
        assert st.step(q, DOUBLE) == wb.OK
        margins.append(st.trunk_margin)
        flags.append(st.flag_dict()["trunk_outside"])
        q = st.q_ref.copy()
    assert margins[0] < 0.0 and margins[-1] > 0.0
    assert flags == [m < 0.0 for m in margins] and flags[0] and not flags[-1]


def test_imu_tilt_equals_the_platform_tilt():
    """The specific force a pelvis IMU reads on a platform tilted (alpha, beta) gives the
    same apparent up, polygon and margins as the platform source (eq. 45-51 generalised),
    the pelvis turned (yaw, roll) with respect to the stance sole."""
    tilt = (0.07, -0.05)
    q = Q0.copy()
    for name, x in (("l_hip_yaw", 0.3), ("l_hip_roll", 0.2), ("l_ankle_lateral", -0.1)):
        q[ROBOT.model.joint_names.index(name)] = x
    a = make()
    a.reset(q)
    assert a.step(q, LEFT, tilt) == wb.OK
    ROBOT.set_root("left_sole")                # the stabilizer's root in left support
    R = ROBOT.frame(q, "pelvis")[:3, :3]
    assert abs(R[0, 1]) > 0.2 and abs(R[1, 2]) > 0.05           # not symmetric: R != R^T
    f = R.T @ a.up * 9.81
    b = make(tilt={"source": "imu"})
    b.reset(q)
    assert b.step(q, LEFT, f) == wb.OK
    np.testing.assert_allclose(b.up, a.up, atol=1e-12)
    np.testing.assert_allclose(b.margins, a.margins, atol=1e-12)
    ca, sa, cb, sb = np.cos(tilt[0]), np.sin(tilt[0]), np.cos(tilt[1]), np.sin(tilt[1])
    Rs = np.array([[1, 0, 0], [0, ca, -sa], [0, sa, ca]]) @ np.array([[cb, 0, sb], [0, 1, 0], [-sb, 0, cb]])
    np.testing.assert_allclose(a.up, Rs.T @ [0, 0, 1], atol=1e-12)


def test_horizontal_acceleration_is_a_tilt():
    """Equivalence principle (thesis §2.5.4): a level platform accelerating sideways by
    g0 tan(0.1) gives the apparent up of a platform rolled by 0.1 rad."""
    a = make()
    a.reset(Q0)
    assert a.step(Q0, DOUBLE, (0.1, 0.0)) == wb.OK
    b = make(tilt={"use_acceleration": True})
    b.reset(Q0)
    assert b.step(Q0, DOUBLE, (0.0, 0.0), (0.0, 9.81 * np.tan(0.1))) == wb.OK
    np.testing.assert_allclose(b.up, a.up, atol=1e-12)
    np.testing.assert_allclose(b.margins, a.margins, atol=1e-12)


def test_config_errors_name_the_key():
    d = copy.deepcopy(BASE)
    d["trunk"]["subtree"] = "tail"
    with pytest.raises(ValueError, match=r"trunk\.subtree.*'tail' is not a subtree"):
        wb.WholeBodyStabilizer(ROBOT, config_from_dict(d, str(CONFIG)))
    d = copy.deepcopy(BASE)
    d["tasks"]["joint_weights"] = [1.0, 2.0]
    with pytest.raises(ValueError, match=r"tasks\.joint_weights.*one number or 15"):
        wb.WholeBodyStabilizer(ROBOT, config_from_dict(d, str(CONFIG)))
    d = copy.deepcopy(BASE)
    d["support"]["source"] = "vision"
    with pytest.raises(ValueError, match=r"support\.source"):
        config_from_dict(d, str(CONFIG))
