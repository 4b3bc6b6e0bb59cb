"""The feet's kernels (stabilizer.feet) on BIP 2000's feet: the compliance law's sign against the tree's
forward kinematics (the sole turned relative to the pelvis), its rate and offset limits, the slope of a
known up vector in the terrain's and the platform's conventions (models.tilt.sole_gravity), the
compliance toward a moving target and its gate, edge stances against a heel-to-toe roll, and the
config's named errors."""
from __future__ import annotations

import math

import numpy as np
import pytest

from models.common.errors import ConfigError
from models.common.validation import Section
from models.tilt import sole_gravity
from models.tree.robot import TreeRobot
from stabilizer.feet import CELLS, comply, new_state, observe, views
from stabilizer.feet_config import FeetConfig, feet_geometry, parse_feet

from tests.paths import DEPLOY

PERIOD = 0.002
NO_IMU, I3, Z3 = np.zeros(3), np.eye(3), np.zeros(3)      # no specific force; the pelvis on the sole, still
NO_PLAN, BOTH = np.zeros(2), np.ones(2)                   # no foot on the plan's ground; both feet (planned, gated)
ROBOT = DEPLOY / "robots" / "bip2000.yaml"


@pytest.fixture(scope="module")
def robot():
    return TreeRobot.from_yaml(ROBOT)


@pytest.fixture(scope="module")
def geometry(robot):
    return feet_geometry(robot)


def loads_at(geometry, f, cop, load):
    """Cell loads of foot f (the other foot unloaded) whose centre of pressure is ``cop`` (bilinear split)."""
    c = geometry.cells[f]
    x0, x1, y0, y1 = c[:, 0].min(), c[:, 0].max(), c[:, 1].min(), c[:, 1].max()
    u, w = (cop[0] - x0) / (x1 - x0), (cop[1] - y0) / (y1 - y0)
    out = np.zeros(2 * CELLS)
    for k in range(CELLS):
        out[CELLS * f + k] = load * (u if c[k, 0] > x0 else 1 - u) * (w if c[k, 1] > y0 else 1 - w)
    return out


def run(p, geometry, loads, q_ref, cycles, lo=None, hi=None, target=None, gate=BOTH):
    n = q_ref.size
    target = geometry.centre if target is None else target
    buf = new_state()
    lo = np.full(n, -1.0) if lo is None else lo
    hi = np.full(n, 1.0) if hi is None else hi
    q_cmd, qd_cmd, trace = np.zeros(n), np.zeros(n), []
    for _ in range(cycles):
        observe(p, buf, loads, geometry.cells, NO_PLAN, -1.0, NO_IMU, I3, Z3, PERIOD)
        comply(p, buf, target, gate, 0.0, geometry.ankles, geometry.axes, q_ref, np.zeros(n), lo, hi, True, PERIOD,
               q_cmd, qd_cmd)
        trace.append(q_cmd.copy())
    return np.array(trace), buf


@pytest.mark.parametrize("foot", [0, 1])
@pytest.mark.parametrize("cop, turn", [((-0.03, 0.0), "toe_up"), ((0.11, 0.0), "toe_down"),
                                       ((0.04, 0.03), "left_down"), ((0.04, -0.03), "left_up")])
def test_the_ankles_lean_the_leg_over_the_pressure(robot, geometry, foot, cop, turn):
    """A loaded foot's pressure off its centre turns its sole relative to the pelvis (the tree's forward
    kinematics, rooted at the pelvis): pressure at the heel raises the toe (the leg leans forward over
    the foot standing flat), at the toe lowers it, on the left edge lowers the left edge."""
    p = FeetConfig(compliance=True).params(PERIOD)
    q0 = np.zeros(robot.n)
    trace, _ = run(p, geometry, loads_at(geometry, foot, cop, 600.0), q0, 50)
    robot.set_root("pelvis")
    sole = robot.description.feet[foot].frame
    R0, R1 = robot.frame(q0, sole)[:3, :3], robot.frame(trace[-1], sole)[:3, :3]
    dR = R0.T @ R1                                   # the turn, in the sole's axes
    toe, left = dR[2, 0], dR[2, 1]                   # the sole's x and y axes' rise
    expected = {"toe_up": (toe > 1e-4), "toe_down": (toe < -1e-4), "left_up": (left > 1e-4),
                "left_down": (left < -1e-4)}[turn]
    assert expected, (turn, toe, left)
    changed = np.flatnonzero(trace[-1] != q0)
    assert set(changed) <= set(geometry.ankles[foot])        # the ankles of that foot only


def test_rate_offset_and_joint_limits_hold_and_an_unloaded_foot_lets_go(geometry):
    cfg = FeetConfig(compliance=True, max_rate=0.05, max_offset=math.radians(3.0))
    p = cfg.params(PERIOD)
    n = 15
    hi = np.full(n, 1.0)
    j = geometry.ankles[0, 1]
    hi[j] = 0.01                                       # the lateral ankle's soft limit, 0.01 rad away
    trace, buf = run(p, geometry, loads_at(geometry, 0, (-0.05, 0.05), 1000.0), np.zeros(n), 1000, hi=hi)
    steps = np.diff(trace, axis=0)
    assert np.abs(steps).max() <= cfg.max_rate * PERIOD + 1e-12
    ramp = np.diff(steps[:100], axis=0)                   # the rate ramps up (before any limit binds)
    assert np.abs(ramp).max() <= cfg.max_accel * PERIOD ** 2 + 1e-12 and np.abs(steps[99]).max() > np.abs(steps[0]).max()
    assert np.abs(trace).max() <= cfg.max_offset + 1e-12
    assert abs(abs(trace[-1, geometry.ankles[0, 0]]) - cfg.max_offset) < 1e-12      # saturated
    assert trace[:, j].max() <= hi[j] + 1e-12
    # unloaded: the offsets go back to zero (release_tau, same rate limit)
    st = views(buf)
    q_cmd, qd_cmd, release = np.zeros(n), np.zeros(n), []
    for _ in range(1000):
        observe(p, buf, np.zeros(2 * CELLS), geometry.cells, NO_PLAN, -1.0, NO_IMU, I3, Z3, PERIOD)
        comply(p, buf, geometry.centre, BOTH, 0.0, geometry.ankles, geometry.axes, np.zeros(n), np.zeros(n),
               np.full(n, -1.0), hi, True, PERIOD, q_cmd, qd_cmd)
        release.append(q_cmd[geometry.ankles[0, 0]])
    assert np.abs(st.offset).max() < 1e-4 and np.abs(q_cmd).max() < 1e-4     # 10 release_tau
    first = abs(release[0] - trace[-1, geometry.ankles[0, 0]])     # from rest at the saturation: the rate ramps
    assert first <= cfg.max_accel * PERIOD ** 2 + 1e-12 < cfg.max_rate * PERIOD


@pytest.mark.parametrize("pitch_deg, roll_deg", [(4.0, 0.0), (-3.0, 2.0), (0.0, -2.0)])
def test_the_slope_of_a_flat_stance_sole(geometry, pitch_deg, roll_deg):
    """The world's up in the axes of a sole lying on the floor R = RotY(-pitch) RotX(roll) gives back
    (pitch, roll); its (alpha, beta) reproduce that up through models.tilt.sole_gravity."""
    pitch, roll = math.radians(pitch_deg), math.radians(roll_deg)
    cp, sp, cr, sr = math.cos(pitch), math.sin(pitch), math.cos(roll), math.sin(roll)
    R = np.array([[cp, 0, -sp], [0, 1, 0], [sp, 0, cp]]) @ np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    up = R.T @ np.array([0.0, 0.0, 1.0])
    p = FeetConfig().params(PERIOD)
    buf = new_state()
    loads = loads_at(geometry, 0, geometry.centre[0], 500.0) + loads_at(geometry, 1, geometry.centre[1], 500.0)
    for _ in range(10):
        observe(p, buf, loads, geometry.cells, NO_PLAN, 0.0, 9.81 * up, I3, Z3, PERIOD)
    st = views(buf)
    assert np.allclose(st.slope, [pitch, roll], atol=1e-12)
    g = np.zeros(3)
    sole_gravity(st.tilt[0], st.tilt[1], np.array([0.0, 0.0, -9.81]), g)
    assert np.allclose(-g / 9.81, up, atol=1e-12)
    # a stance foot on its heel (front cells under flat_fraction) does not update the slope
    heel = loads_at(geometry, 0, (-0.059, 0.0), 500.0)
    for _ in range(100):
        observe(p, buf, heel, geometry.cells, NO_PLAN, 0.0, np.array([0.0, 0.0, 9.81]), I3, Z3, PERIOD)
    assert np.allclose(st.slope, [pitch, roll], atol=1e-12) and st.flat[0] == 0.0


def edges(p, geometry, frames, planned=BOTH):
    """The masks reported per cycle (cycle, foot) for the cell loads of each of ``frames``."""
    buf = new_state()
    st, out = views(buf), []
    for loads in frames:
        observe(p, buf, loads, geometry.cells, planned, -1.0, NO_IMU, I3, Z3, PERIOD)
        out.append(st.new_edge.copy())
    return np.array(out), st


def test_a_foot_on_an_edge_is_reported_once_with_its_unloaded_cells(geometry):
    """The right foot on its front cells only, carrying half the load, for longer than edge.hold_s: one
    report, the rear cells' mask, after hold_s; lifted, then standing flat: nothing more."""
    cfg = FeetConfig()
    p = cfg.params(PERIOD)
    n = round(cfg.edge_hold / PERIOD)
    left = loads_at(geometry, 0, geometry.centre[0], 400.0)
    on_edge = left + loads_at(geometry, 1, (0.14, 0.0), 400.0)
    front = [k for k in range(CELLS) if geometry.cells[1, k, 0] > geometry.centre[1, 0]]
    rear_mask = sum(1 << k for k in range(CELLS) if k not in front)
    lifted = [left] * 5
    flat = [left + loads_at(geometry, 1, geometry.centre[1], 400.0)] * 200
    reported, st = edges(p, geometry, [on_edge] * (n + 50) + lifted + flat)
    assert np.flatnonzero(reported[:, 1]).tolist() == [n - 1] and not reported[:, 0].any()
    assert reported[n - 1, 1] == rear_mask and st.edge[1] == 0.0


def test_a_heel_to_toe_roll_a_light_foot_and_a_foot_off_the_plan_report_nothing(geometry):
    """The gait's own stance: the heel alone (a heel-first landing), then flat, then the toes alone, each
    shorter than hold_s though together longer; a foot on its toes carrying less than edge.share of the
    load; a foot on its toes the plan does not have on the ground (power-on, no file): no report."""
    cfg = FeetConfig()
    p = cfg.params(PERIOD)
    n = round(cfg.edge_hold / PERIOD)
    left = loads_at(geometry, 0, geometry.centre[0], 400.0)
    heel, toe = loads_at(geometry, 1, (-0.06, 0.0), 400.0), loads_at(geometry, 1, (0.14, 0.0), 400.0)
    roll = [left + heel] * (n - 5) + [left + toe] * (n - 5)
    assert not edges(p, geometry, roll)[0].any()
    light = [loads_at(geometry, 0, geometry.centre[0], 900.0) + loads_at(geometry, 1, (0.14, 0.0), 300.0)] * 2 * n
    assert not edges(p, geometry, light)[0].any()
    assert not edges(p, geometry, [left + toe] * 2 * n, planned=NO_PLAN)[0].any()
    assert edges(p, geometry, [left + toe] * 2 * n)[0][:, 1].any()          # the same stance, planned: reported


def test_the_compliance_follows_its_target_and_its_gate(geometry):
    """A foot whose pressure sits where its target is (the gait's heel) does not move, whatever the cells'
    centre; off its target it leans the leg; gated off while loaded (alone), it holds that offset."""
    p = FeetConfig(compliance=True).params(PERIOD)
    heel = loads_at(geometry, 0, (-0.03, 0.0), 600.0)
    target = np.array([[-0.03, 0.0], [np.nan, np.nan]])
    trace, _ = run(p, geometry, heel, np.zeros(15), 200, target=target)
    assert np.abs(trace).max() < 1e-12
    trace, buf = run(p, geometry, heel, np.zeros(15), 200, target=geometry.centre)
    assert abs(trace[-1, geometry.ankles[0, 0]]) > 1e-3
    n = 15
    q_cmd, qd_cmd = np.zeros(n), np.zeros(n)
    for _ in range(250):                           # the rate ramps down (max_accel) within 0.1 s
        observe(p, buf, heel, geometry.cells, NO_PLAN, -1.0, NO_IMU, I3, Z3, PERIOD)
        comply(p, buf, geometry.centre, NO_PLAN, 0.0, geometry.ankles, geometry.axes, np.zeros(n), np.zeros(n),
               np.full(n, -1.0), np.full(n, 1.0), True, PERIOD, q_cmd, qd_cmd)
    held = views(buf).offset.copy()
    assert np.abs(held).max() > 1e-3
    for _ in range(1000):
        observe(p, buf, heel, geometry.cells, NO_PLAN, -1.0, NO_IMU, I3, Z3, PERIOD)
        comply(p, buf, geometry.centre, NO_PLAN, 0.0, geometry.ankles, geometry.axes, np.zeros(n), np.zeros(n),
               np.full(n, -1.0), np.full(n, 1.0), True, PERIOD, q_cmd, qd_cmd)
    assert np.array_equal(views(buf).offset, held)


@pytest.mark.parametrize("doc, key", [
    ({"compliance": {"enabled": "yes"}}, "feet.compliance.enabled"),
    ({"compliance": {"max_offset_deg": 45}}, "feet.compliance.max_offset"),
    ({"compliance": {"damping": -1}}, "feet.compliance.damping"),
    ({"flatten": {"enabled": 1}}, "feet.flatten.enabled"),
    ({"flatten": {"damping": 0}}, "feet.flatten.damping"),
    ({"flatten": {"max_rate": -0.1}}, "feet.flatten.max_rate"),
    ({"flatten": {"band": 0.1}}, "feet.flatten.band"),
    ({"slope": {"flat_fraction": 0.3}}, "feet.slope.flat_fraction"),
    ({"edge": {"share": 1.5}}, "feet.edge.share"),
    ({"edge": {"hold_s": 0}}, "feet.edge.hold_s"),
    ({"edge": {"speed": 1}}, "feet.edge.speed")])
def test_bad_feet_config_names_the_key(doc, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        parse_feet(Section("bipd.yaml", "feet", doc))


def test_double_support_moves_the_common_mode_only(geometry):
    """Both feet loaded, one pressed at its heel and the other at its toe by the same moment: their sum is
    zero, so no ankle moves (the difference is the closed chain's internal force); the same pressure on
    both moves both sagittal ankles alike, and never a roll axis."""
    p = FeetConfig(compliance=True).params(PERIOD)
    c = geometry.centre
    opposite = loads_at(geometry, 0, (c[0, 0] - 0.05, 0.02), 500.0) + loads_at(geometry, 1, (c[1, 0] + 0.05, 0.02), 500.0)
    trace, _ = run(p, geometry, opposite, np.zeros(15), 200)
    assert np.abs(trace[-1]).max() < 1e-12
    same = loads_at(geometry, 0, (c[0, 0] - 0.05, 0.02), 500.0) + loads_at(geometry, 1, (c[1, 0] - 0.05, 0.02), 500.0)
    trace, _ = run(p, geometry, same, np.zeros(15), 200)
    sag, roll = geometry.ankles[:, 0], geometry.ankles[:, 1]
    assert np.all(np.abs(trace[-1, sag]) > 1e-3) and np.abs(trace[-1, roll]).max() == 0.0


def flatten(p, geometry, robot, frames, cycles, n=15):
    """The sole-flattening law (a gait plays, both feet gated) over ``cycles``: ``frames(dR)`` gives the
    cells' loads from the right sole's turn dR relative to the pelvis (the tree's forward kinematics);
    the turns per cycle and the offsets' trace."""
    buf = new_state()
    robot.set_root("pelvis")
    sole = robot.description.feet[1].frame
    q0, q_cmd, qd_cmd = np.zeros(n), np.zeros(n), np.zeros(n)
    R0 = robot.frame(q0, sole)[:3, :3]
    turns, trace = [], []
    for _ in range(cycles):
        dR = R0.T @ robot.frame(q_cmd, sole)[:3, :3]
        turns.append(dR)
        observe(p, buf, frames(dR), geometry.cells, BOTH, -1.0, NO_IMU, I3, Z3, PERIOD)
        comply(p, buf, np.full((2, 2), np.nan), BOTH, 1.0, geometry.ankles, geometry.axes, q0, np.zeros(n),
               np.full(n, -1.0), np.full(n, 1.0), True, PERIOD, q_cmd, qd_cmd)
        trace.append(q_cmd.copy())
    return np.array(turns), np.array(trace)


@pytest.mark.parametrize("edge", ["heel", "toes", "right", "left"])
def test_a_sole_on_an_edge_in_double_support_turns_flat(robot, geometry, edge):
    """The right sole lands tilted 2 deg on one edge of its cells (its cells there carry its load, the
    others none), the left flat: after edge.hold_s the right ankles turn the sole about that edge until
    its other cells come down (the sole flat to 0.3 deg, measured by the tree's forward kinematics), then
    hold; the left foot and every other joint stay put."""
    cfg = FeetConfig(flatten=True)
    p = cfg.params(PERIOD)
    c = geometry.cells[1]
    x0, x1, y0, y1 = c[:, 0].min(), c[:, 0].max(), c[:, 1].min(), c[:, 1].max()
    cx, cy = geometry.centre[1]
    # the loaded edge's pressure, and the lifted side's rise under a turn dR (the sole's x or y axis)
    cop, rise = {"heel": ((x0, cy), lambda dR: dR[2, 0]), "toes": ((x1, cy), lambda dR: -dR[2, 0]),
                 "right": ((cx, y0), lambda dR: dR[2, 1]), "left": ((cx, y1), lambda dR: -dR[2, 1])}[edge]
    tilt = math.radians(2.0)
    left = loads_at(geometry, 0, geometry.centre[0], 500.0)

    def frames(dR):
        on_edge = tilt + rise(dR) > 0.0
        return left + loads_at(geometry, 1, cop if on_edge else geometry.centre[1], 500.0)

    turns, trace = flatten(p, geometry, robot, frames, 1000)
    final = tilt + np.array([rise(dR) for dR in turns])
    held = round(cfg.edge_hold / PERIOD)
    assert np.abs(trace[:held - 1]).max() == 0.0             # an edge is an edge after hold_s only
    assert final[-1] <= 0.0 and final.min() > -math.radians(0.3), np.degrees(final[[-1]])
    assert np.abs(np.diff(trace[-100:], axis=0)).max() == 0.0    # flat: it holds
    changed = np.flatnonzero(np.abs(trace).max(axis=0) > 0.0)
    assert set(changed) <= set(geometry.ankles[1])
    # alone on the ground the same sole holds (yielding there tips the robot about that edge)
    left = np.zeros(2 * CELLS)
    assert np.abs(flatten(p, geometry, robot, frames, 300)[1]).max() == 0.0


@pytest.mark.parametrize("support", ["double", "single"])
def test_a_flat_sole_rolling_heel_to_toe_gets_no_correction(robot, geometry, support):
    """The gait's own stance: the right sole flat, its pressure rolling from its rear cells' line to its
    front cells' line over 0.6 s (each edge's cells under edge.fraction for less than edge.hold_s), then
    lifting, the left foot down or lifted: every offset stays exactly zero."""
    p = FeetConfig(flatten=True).params(PERIOD)
    c = geometry.cells[1]
    x0, x1, cy = c[:, 0].min(), c[:, 0].max(), geometry.centre[1, 1]
    left = loads_at(geometry, 0, geometry.centre[0], 500.0 if support == "double" else 0.0)
    k = iter(range(10 ** 6))
    cycles = round(0.6 / PERIOD)

    def frames(dR):
        i = next(k)
        return left + loads_at(geometry, 1, (x0 + (x1 - x0) * i / cycles, cy), 500.0 if i <= cycles else 0.0)

    _, trace = flatten(p, geometry, robot, frames, cycles + 50)
    assert np.abs(trace).max() == 0.0
