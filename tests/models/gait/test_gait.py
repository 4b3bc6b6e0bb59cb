"""The offline walking gait: the preview control against the LIPM's analytic solution, the
swing curve, the generated 360 m/h gait against its checks (multi-body ZMP inside the
support polygon, limits, pelvis speed), refusals, the CSV through the playback parser and
the CLI."""
from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from controller.cli import main
from controller.tools.gait import check_file, make_gait, write_gait
from models.gait.checks import check_gait, margin, zmp_multibody
from models.polygon import hull
from models.common.support import DOUBLE, LEFT, RIGHT
from models.gait.plan import GaitParams, bell, quintic
from models.gait.preview import PreviewController
from models.gait.plan import make_plan
from models.gait.reach import LEGS, SAGITTAL, LegDemand, leg_demand, reach, two_link
from models.gait.sweep import SPEEDS_M_H, STEPS
from models.gait.wholebody import GaitError, GaitInfeasible, flexed_posture, generate, sole_centre
from models.tree.robot import TreeRobot
from tests.paths import ROBOTS

ROBOT = ROBOTS / "bip2000.yaml"
COARSE = GaitParams(speed=0.1, steps=2, period=0.01)


@pytest.fixture(scope="module")
def robot():
    return TreeRobot.from_yaml(ROBOT)


@pytest.fixture(scope="module")
def coarse(robot):
    return make_gait(robot, COARSE, lambda msg: None)


def test_preview_tracks_a_zmp_step_like_the_lipm():
    """A ZMP step of 0.1 m at t_s, previewed: the CoG follows the bounded solution of
    c̈ = ω²(c − p) (the LIPM, Kajita et al. 2003), c = p0 + Δ/2 e^{ω(t − t_s)} before the step
    and p1 − Δ/2 e^{−ω(t − t_s)} after, and converges to the new ZMP at rest."""
    z_c, g, T = 0.9, 9.81, 0.005
    pc = PreviewController(T, z_c, g)
    t = np.arange(1200) * T
    ref = np.where(t >= 2.0, 0.1, 0.0)
    states, zmp = pc.run(ref)
    w = math.sqrt(g / z_c)
    exact = np.where(t < 2.0, 0.05 * np.exp(w * (t - 2.0)), 0.1 - 0.05 * np.exp(-w * (t - 2.0)))
    assert np.abs(states[:, 0] - exact).max() < 2e-3
    assert abs(states[-1, 0] - 0.1) < 1e-6 and abs(states[-1, 1]) < 1e-5
    assert np.abs(zmp - ref)[t > 3.0].max() < 1e-5


def test_swing_curves_start_and_stop_at_rest():
    """quintic and bell leave their end values as O(h³): zero velocity and acceleration at
    lift-off and touch-down (a curve with an acceleration there grows as h², 1/h times more)."""
    h = 1e-3
    for f in (quintic, bell):
        for s, inward in ((0.0, h), (1.0, -h)):
            change = abs(f(np.array([s + inward]))[0] - f(np.array([s]))[0])
            assert change / h ** 3 < 100.0, (f.__name__, s, change)
    assert quintic(np.array([0.0, 1.0])).tolist() == [0.0, 1.0]
    assert bell(np.array([0.0, 0.5, 1.0])).tolist() == [0.0, 1.0, 0.0]


def test_swing_sole_at_rest_at_lift_off_and_touch_down(robot, coarse):
    """The swing sole of the generated gait (forward kinematics of the IK's angles) moves
    less than 1 % of its peak speed over the first and last sample of each single support."""
    gait, _, _ = coarse
    robot.set_root("left_sole")
    sole = np.array([robot.frame(q, "right_sole")[:3, 3] for q in gait.q])
    left = np.nonzero(gait.support == LEFT)[0]           # the right foot swings
    speed = np.linalg.norm(np.diff(sole[left[0] - 1:left[-1] + 2], axis=0), axis=1) / COARSE.period
    assert speed.max() > 0.3
    assert speed[0] < 0.01 * speed.max() and speed[-1] < 0.01 * speed.max()


def test_soles_land_and_lift_softly_sink_above_the_stance_sole(robot, coarse):
    """Soft landing and lift-off (forward kinematics of the IK's angles, rooted at the left sole): the
    right sole leaves the floor at the first single support's start and meets it at its end ``sink``
    above the left sole, at rest (less than 1 % of its peak speed); it was raised there over the shift's
    last t_sink, and is lowered onto the left sole's plane over the next double support's first t_sink.
    Without the sink (a sole aimed at z = 0) the stance sole, sunk into the floor, met the floor ~37 ms
    early, still descending."""
    gait, _, _ = coarse
    robot.set_root("left_sole")
    z = np.array([robot.frame(q, "right_sole")[2, 3] for q in gait.q])
    left = np.nonzero(gait.support == LEFT)[0]
    a, b = left[0] - 1, left[-1]                         # the shift's last sample (lift-off), the touch-down
    n = round(COARSE.t_sink / COARSE.period)
    assert COARSE.sink == 6e-5 and n >= 3
    assert z[a] == pytest.approx(COARSE.sink, abs=2e-7) and z[b] == pytest.approx(COARSE.sink, abs=2e-7)
    assert abs(z[a - n]) < 2e-7                          # on the floor before the shift's last t_sink
    assert abs(z[b + n]) < 2e-7                          # and back on it t_sink into the double support
    assert np.all(np.diff(z[a - n:a + 1]) >= -1e-9) and np.all(np.diff(z[b:b + n + 1]) <= 1e-9)
    speed = np.abs(np.diff(z[a:b + 1])) / COARSE.period
    assert speed[0] < 0.01 * speed.max() and speed[-1] < 0.01 * speed.max()


def test_the_gait_ends_at_rest(coarse):
    """The CoG is brought to rest over the final hold (the preview servo alone left the joints moving at
    ~0.034 rad/s at the last sample, a step the playback's end stops in one period)."""
    gait, _, _ = coarse
    rate = np.abs(np.diff(gait.q[-3:], axis=0)).max(axis=1) / COARSE.period
    peak = np.abs(np.diff(gait.q, axis=0)).max() / COARSE.period
    assert peak > 1.0 and rate.max() < 1e-3, rate
    cog = gait.cog_ref[-1]
    assert cog == pytest.approx(gait.plan.zmp_ref[-1], abs=1e-9)      # over the held ZMP


def test_multibody_zmp_of_a_spinning_and_a_sliding_body(robot):
    """Robot frozen but for the trunk: spun about the world y axis through its own CoG at
    constant angular acceleration α, the ZMP moves back by I_yy α / (M g) (the rate of
    change of angular momentum); slid forward at constant acceleration a, by z_b m a / (M g)
    (z_b its CoG height: the moment of its inertial force about the floor)."""
    m = robot.model
    robot.set_root("left_sole")
    Tb0 = robot.kinematics(np.zeros(robot.n)).Tb.copy()
    b = m.index("body", "trunk")
    R0, c0 = Tb0[b, :3, :3], Tb0[b, :3, :3] @ m.com[b] + Tb0[b, :3, 3]
    I_w = R0 @ m.inertia[b] @ R0.T
    assert np.allclose(I_w[:, 1], (0.0, I_w[1, 1], 0.0))          # y is a principal axis
    period, alpha, accel, g, M = 0.002, 0.8, 0.3, 9.81, m.total_mass
    t = np.arange(200) * period
    cog0 = np.einsum("b,bi->i", m.mass, np.einsum("bij,bj->bi", Tb0[:, :3, :3], m.com) + Tb0[:, :3, 3]) / M
    for spin, slide in ((alpha, 0.0), (0.0, accel)):
        Tb = np.repeat(Tb0[None], len(t), axis=0)
        for k, tk in enumerate(t):
            th = spin * tk * tk / 2.0
            Ry = np.array([[math.cos(th), 0, math.sin(th)], [0, 1, 0], [-math.sin(th), 0, math.cos(th)]])
            Tb[k, b, :3, :3] = Ry @ R0
            Tb[k, b, :3, 3] = c0 + (slide * tk * tk / 2.0, 0, 0) - Ry @ R0 @ m.com[b]
        zmp = zmp_multibody(robot, Tb, period)[2:-2]
        cx = cog0[0] + m.mass[b] * slide * t[2:-2] ** 2 / 2.0 / M
        expect = cx - (I_w[1, 1] * spin + c0[2] * m.mass[b] * slide) / (M * g)
        assert np.abs(zmp[:, 0] - expect).max() < 1e-6 * abs(expect - cx).max() + 1e-9
        assert np.abs(zmp[:, 1] - cog0[1]).max() < 1e-9


def test_support_polygon_margin():
    """The hull of two offset squares and signed distances to it."""
    square = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], dtype=float)
    poly = hull(np.vstack([square, square + (2.0, 0.0)]))
    assert len(poly) == 4
    assert margin(poly, np.array([1.5, 0.5])) == pytest.approx(0.5)
    assert margin(poly, np.array([1.5, -0.25])) == pytest.approx(-0.25)


def test_the_360_m_h_gait_passes_its_checks(robot, coarse):
    gait, report, _ = coarse
    assert report.ok, report.problems
    assert report.margin.min() > 0.02                       # ZMP 2 cm inside the polygon at least
    assert abs(report.pelvis_speed - 0.1) <= 0.002
    assert report.speed_ratio.max() <= 1.0
    # the multi-body ZMP follows the LIPM's where the legs are still (an independent model)
    w = gait.plan.walk_start
    assert np.abs(report.zmp[w + 2:-2] - gait.zmp_lipm[w + 2:-2]).max() < 0.06
    # supports: double, then left stance (right swings), double, right stance, double
    phases = [int(p) for i, p in enumerate(gait.support) if i == 0 or p != gait.support[i - 1]]
    assert phases == [DOUBLE, LEFT, DOUBLE, RIGHT, DOUBLE]
    # the soles: flat on the floor in stance, the swing sole lands where the plan put it
    robot.set_root("left_sole")
    T = robot.frame(gait.q[-1], "right_sole")
    x_left, x_right = gait.plan.footprints[-1][1], gait.plan.footprints[-2][1]
    assert T[0, 3] == pytest.approx(x_right - x_left, abs=1e-7)
    assert T[2, 3] == pytest.approx(0.0, abs=1e-7) and np.allclose(T[:3, :3], np.eye(3), atol=1e-7)


def test_the_check_catches_a_zmp_outside_the_feet(robot, coarse):
    """The same joint angles, played four times faster, throw the ZMP out of the feet."""
    gait, _, _ = coarse
    report = check_gait(robot, gait.t / 4.0, gait.q, gait.support, 0.4, gait.plan.speed_start, 0.2)
    assert any("ZMP leaves the support polygon" in p for p in report.problems)
    assert any("velocity limit" in p for p in report.problems)


def test_too_fast_is_refused(robot):
    with pytest.raises(GaitInfeasible, match=r"speed 5000 m/h with 2 steps: step length [\d.]+ m: the (left|right) "
                                             r"ankle [\d.]+ m (ahead of|behind) its hip .* beyond the legs' reach"):
        generate(robot, GaitParams(speed=5000 / 3600, steps=2, period=0.01))


def test_the_two_link_legs_match_the_tree_at_the_flexed_posture(robot):
    """Before the walk the plan holds the CoG and the soles still: the two-link estimate of
    each leg (hip pitch, knee, ankle) equals the flexed posture of the whole-body IK, an
    independent computation on the tree's forward kinematics."""
    params = GaitParams(speed=0.1, steps=2, period=0.01)
    q_flex = flexed_posture(robot, params)
    robot.set_root("left_sole")
    cog_start = robot.com(q_flex)[:2] + (0.0, params.foot_spacing / 2.0)
    plan = make_plan(params, cog_start, sole_centre(robot), 0.2)
    cog = np.tile(cog_start, (len(plan.t), 1))
    demand = leg_demand(robot, plan, cog, q_flex, params.foot_spacing)
    for leg, prefix in LEGS.items():
        idx = [robot.model.joint_names.index(prefix + name) for name in SAGITTAL]
        assert np.abs(demand.q[leg][plan.walk_start] - q_flex[idx]).max() < 1e-3, prefix
        assert q_flex[idx[1]] > 0.3                          # a bent knee: not a trivial match


def test_reach_is_where_a_joint_meets_its_limit():
    """reach(h) puts the knee on its stretched stop (a high hip), or the ankle (forward) or
    the hip pitch (backward) on its limit (a low hip): the two-link inverse there, and out of
    reach or past a limit 1 mm farther."""
    demand = LegDemand({}, {}, {}, 0.42, 0.42)
    lo, hi = np.array([-1.5, 0.0, -0.6]), np.array([0.5, 1.7, 0.5])
    for h, forward, joint, value in ((0.80, True, 1, 0.0), (0.80, False, 1, 0.0),
                                     (0.70, True, 2, hi[2]), (0.72, False, 0, hi[0])):
        d = reach(demand, h, forward, lo, hi) * (1.0 if forward else -1.0)
        at, past = two_link(np.array([d, d + math.copysign(1e-3, d)]), np.full(2, h), 0.42, 0.42)
        assert at[joint] == pytest.approx(value, abs=2e-3), (h, forward, at)
        assert (at >= lo - 2e-3).all() and (at <= hi + 2e-3).all(), (h, forward, at)
        assert np.isnan(past).any() or (past < lo).any() or (past > hi).any(), (h, forward, past)


# The feasible range the README states: at 180-360 m/h from 2 steps on (180 m/h from 1), at 540 m/h
# from 4 steps on, at 720 m/h from 10 steps on (the swing's 3.5 cm bell: never with the 4 cm one).
def feasible(steps: int, speed_m_h: float) -> bool:
    return (speed_m_h <= 180 or (speed_m_h <= 360 and steps >= 2) or (speed_m_h <= 540 and steps >= 4)
            or steps >= 10)


REFUSAL = (r"^step length [\d.]+ m: (the (left|right) ankle [\d.]+ m (ahead of|behind) its hip at t = [\d.]+ s, "
           r"(beyond the legs' reach of [\d.]+ m|where the legs cannot put it) at this CoG height|the (left|right) leg needs \w+ at -?[\d.]+ rad|"
           r"the legs would move \w+ at about [\d.]+ rad/s, above \d+% of its velocity limit)")


@pytest.mark.slow
@pytest.mark.parametrize("speed_m_h", SPEEDS_M_H)
@pytest.mark.parametrize("steps", STEPS)
def test_sweep_cell_is_a_checked_file_or_a_refusal(robot, tmp_path, steps, speed_m_h):
    """Every cell of the sweep is either a file that passes its checks, re-read through the
    playback parser, or refused before solving with the limit named: never an IK stall nor a
    failed check. Which cells are which is the README's feasible range."""
    params = GaitParams(speed=speed_m_h / 3600.0, steps=steps, period=0.01)
    try:
        gait, report, seconds = make_gait(robot, params, lambda msg: None)
    except GaitInfeasible as e:
        assert not feasible(steps, speed_m_h), str(e)
        assert re.match(REFUSAL, e.reason), e.reason
        return
    assert feasible(steps, speed_m_h)
    path = tmp_path / "walk.csv"
    write_gait(path, robot, gait, report, seconds)
    again = check_file(path, robot)
    assert again.ok, again.problems
    assert abs(again.pelvis_speed * 3600.0 - speed_m_h) <= 0.02 * speed_m_h
    assert len(gait.plan.footprints) == steps + 2


def test_one_step_at_360_m_h_is_refused_for_the_legs_reach(robot):
    """One step moves the CoG half a step: 360 m/h over the walking phase needs a 0.51 m
    step, the swing ankle beyond the stretched leg's reach ahead of the hip (the IK used to
    stall there); 180 m/h walks (the sweep)."""
    with pytest.raises(GaitInfeasible, match=r"speed 360 m/h with 1 steps: step length 0\.5\d+ m: the right ankle "
                                             r"[\d.]+ m ahead of its hip .* beyond the legs' reach"):
        generate(robot, GaitParams(speed=0.1, steps=1, period=0.01))


def test_ik_failure_names_sample_and_task(robot, monkeypatch):
    """A step height the legs cannot lift to is refused before solving; with that refusal
    off, the IK fails, named by sample, phase and task."""
    params = GaitParams(speed=0.1, steps=2, period=0.01, step_height=0.6)
    with pytest.raises(GaitInfeasible, match=r"step length [\d.]+ m: the (left|right) (ankle|leg)"):
        generate(robot, params)
    monkeypatch.setattr("models.gait.wholebody.infeasibility", lambda *args: None)
    with pytest.raises(GaitError, match=r"sample \d+ \(t = [\d.]+ s, left support\): IK target of .*"):
        generate(robot, params)


def test_csv_round_trips_through_the_playback_parser(robot, coarse, tmp_path):
    gait, report, seconds = coarse
    path = tmp_path / "walk.csv"
    write_gait(path, robot, gait, report, seconds)
    from controller.daemon.io.playback import load_trajectory
    m = robot.model
    q, support = load_trajectory(path, m.joint_names, m.qmin, m.qmax, m.vmax, COARSE.period, with_support=True)
    assert np.abs(q - gait.q).max() < 1e-8
    assert np.array_equal(support, gait.support)
    again = check_file(path, robot)
    assert again.ok and again.margin.min() == pytest.approx(report.margin.min(), abs=1e-6)
    meta = json.loads((tmp_path / "walk.csv.json").read_text())
    assert meta["params"]["speed"] == 0.1 and meta["check"]["problems"] == []


@pytest.mark.slow
def test_cli_writes_and_checks_a_gait(tmp_path, capsys):
    out = tmp_path / "walk.csv"
    assert main(["gait", "--speed", "360", "--steps", "2", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "2 steps of" in text and "pelvis 360." in text and "ZMP margin min" in text
    header = next(line for line in out.read_text().splitlines() if not line.startswith("#"))
    assert header.split(",")[0] == "t" and header.split(",")[-1] == "support"
    assert main(["gait", "--check", str(out)]) == 0
    for argv in (["--speed", "3000"], ["--speed", "360", "--steps", "1"]):    # refused before solving: exit 2
        assert main(["gait", *argv, "--out", str(tmp_path / "fast.csv")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert re.match(rf"bipd gait: error: --speed {argv[1]} \(--steps {argv[-1] if len(argv) > 2 else 2}\): "
                        r"step length [\d.]+ m: the \w+ ankle [\d.]+ m .* beyond the legs' reach of [\d.]+ m at this "
                        r"CoG height", err[-1]), err
        assert not any("Traceback" in line for line in err)
        assert not (tmp_path / "fast.csv").exists()


@pytest.mark.slow
def test_cli_refuses_bad_input_without_traceback(tmp_path, capsys, coarse, robot):
    gait, report, seconds = coarse
    path = tmp_path / "walk.csv"
    write_gait(path, robot, gait, report, seconds)
    meta = json.loads((tmp_path / "walk.csv.json").read_text())
    meta["params"]["speed"] = 500 / 3600
    (tmp_path / "walk.csv.json").write_text(json.dumps(meta))
    assert main(["gait", "--check", str(path)]) == 1              # a check that fails
    assert "the pelvis walks at 360.0 m/h, not 500.0 m/h" in capsys.readouterr().err
    leg = str(ROBOT.parent / "bip_leg.yaml")
    for argv, problem in (
            (["gait", "--check", str(tmp_path / "none.csv")], "none.csv.json: cannot read the gait's parameters"),
            (["gait", "--speed", "360", "--out", str(path), "--robot", leg],
             "bip_leg.yaml: roots: the gait needs a robot rooted at left_sole and right_sole"),
            (["gait", "--speed", "360", "--period", "0.01", "--out", str(tmp_path / "no" / "w.csv")],
             "the folder"),                                      # refused before the gait is computed
            (["gait", "--speed", "0", "--out", str(path)], "--speed must be in (0, 3600] m/h, got 0")):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert problem in err and "Traceback" not in err, err
