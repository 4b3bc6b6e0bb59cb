"""The feet's kernels (stabilizer.feet) on BIP 2000's feet: the compliance law's sign against the tree's
forward kinematics (the sole turned relative to the pelvis), its rate and offset limits, the slope of a
known up vector in the terrain's and the platform's conventions (models.tilt.sole_gravity), edge
landings, and the config's named errors."""
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


def run(p, geometry, loads, q_ref, cycles, lo=None, hi=None):
    n = q_ref.size
    buf = new_state()
    lo = np.full(n, -1.0) if lo is None else lo
    hi = np.full(n, 1.0) if hi is None else hi
    q_cmd, qd_cmd, trace = np.zeros(n), np.zeros(n), []
    for _ in range(cycles):
        observe(p, buf, loads, geometry.cells, -1.0, NO_IMU, I3, Z3, PERIOD)
        comply(p, buf, geometry.centre, geometry.ankles, geometry.axes, q_ref, np.zeros(n), lo, hi, True, PERIOD,
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
    steps = np.abs(np.diff(trace, axis=0))
    assert steps.max() <= cfg.max_rate * PERIOD + 1e-12
    assert np.abs(trace).max() <= cfg.max_offset + 1e-12
    assert abs(abs(trace[-1, geometry.ankles[0, 0]]) - cfg.max_offset) < 1e-12      # saturated
    assert trace[:, j].max() <= hi[j] + 1e-12
    # unloaded: the offsets go back to zero (release_tau, same rate limit)
    st = views(buf)
    q_cmd, qd_cmd = np.zeros(n), np.zeros(n)
    for _ in range(1000):
        observe(p, buf, np.zeros(2 * CELLS), geometry.cells, -1.0, NO_IMU, I3, Z3, PERIOD)
        comply(p, buf, geometry.centre, geometry.ankles, geometry.axes, np.zeros(n), np.zeros(n), np.full(n, -1.0),
               hi, True, PERIOD, q_cmd, qd_cmd)
    assert np.abs(st.offset).max() < 1e-4 and np.abs(q_cmd).max() < 1e-4     # 10 release_tau


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
        observe(p, buf, loads, geometry.cells, 0.0, 9.81 * up, I3, Z3, PERIOD)
    st = views(buf)
    assert np.allclose(st.slope, [pitch, roll], atol=1e-12)
    g = np.zeros(3)
    sole_gravity(st.tilt[0], st.tilt[1], np.array([0.0, 0.0, -9.81]), g)
    assert np.allclose(-g / 9.81, up, atol=1e-12)
    # a stance foot on its heel (front cells under flat_fraction) does not update the slope
    heel = loads_at(geometry, 0, (-0.059, 0.0), 500.0)
    for _ in range(100):
        observe(p, buf, heel, geometry.cells, 0.0, np.array([0.0, 0.0, 9.81]), I3, Z3, PERIOD)
    assert np.allclose(st.slope, [pitch, roll], atol=1e-12) and st.flat[0] == 0.0


def test_an_edge_landing_is_reported_once_with_its_unloaded_cells(geometry):
    cfg = FeetConfig()
    p = cfg.params(PERIOD)
    buf = new_state()
    st = views(buf)
    on_edge = loads_at(geometry, 1, (0.14, 0.0), 400.0)      # the right foot on its front cells only
    reported = []
    for k in range(cfg.edge_cycles + 20):
        observe(p, buf, on_edge, geometry.cells, -1.0, NO_IMU, I3, Z3, PERIOD)
        reported.append(st.new_edge.copy())
    reported = np.array(reported)
    front = [k for k in range(CELLS) if geometry.cells[1, k, 0] > geometry.centre[1, 0]]
    rear_mask = sum(1 << k for k in range(CELLS) if k not in front)
    assert np.flatnonzero(reported[:, 1]).tolist() == [cfg.edge_cycles - 1]
    assert reported[cfg.edge_cycles - 1, 1] == rear_mask and st.edge[1] == rear_mask and not reported[:, 0].any()
    # lifted, then landing flat: nothing
    observe(p, buf, np.zeros(2 * CELLS), geometry.cells, -1.0, NO_IMU, I3, Z3, PERIOD)
    assert st.edge[1] == 0.0
    flat = loads_at(geometry, 1, geometry.centre[1], 400.0)
    for _ in range(200):
        observe(p, buf, flat, geometry.cells, -1.0, NO_IMU, I3, Z3, PERIOD)
        assert st.new_edge[1] == 0.0


@pytest.mark.parametrize("doc, key", [
    ({"compliance": {"enabled": "yes"}}, "feet.compliance.enabled"),
    ({"compliance": {"max_offset_deg": 45}}, "feet.compliance.max_offset"),
    ({"compliance": {"damping": -1}}, "feet.compliance.damping"),
    ({"slope": {"flat_fraction": 0.3}}, "feet.slope.flat_fraction"),
    ({"edge": {"cycles": 0}}, "feet.edge.cycles"),
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
