"""Walk figures (controller.tools.scenarios.walk_metrics), plots and README rows on synthetic series
whose answers are worked out by hand here."""
from __future__ import annotations

import math

import numpy as np
import pytest

from controller.tools.scenarios import plots
from controller.tools.scenarios.results import BEGIN, END, WALK_MARKERS, update_readme, walk_markdown
from controller.tools.scenarios.walk_metrics import (
    evaluate_walk,
    following_errors_deg,
    joint_errors_deg,
    support_margins,
    travel,
)

JOINTS = ["l_hip_pitch", "l_knee", "r_knee"]
AXES = ["l_hip_pitch", "l_knee", "r_knee"]
# a 0.2 m x 0.1 m rectangle, counter-clockwise, in 8 vertex slots (NaN-padded as the HIL sends it)
SQUARE = np.array([0.0, 0.0, 0.2, 0.0, 0.2, 0.1, 0.0, 0.1] + [np.nan] * 8)


def test_support_margin_is_the_signed_distance_to_the_nearest_edge():
    zmp = np.array([[0.1, 0.05], [0.19, 0.05], [0.23, 0.05], [0.1, -0.01], [np.nan, np.nan], [0.1, 0.05]])
    polygons = np.tile(SQUARE, (6, 1))
    counts = np.array([4, 4, 4, 4, 4, 0])              # the last: in the air
    m = support_margins(zmp, polygons, counts)
    np.testing.assert_allclose(m[:4], [0.05, 0.01, -0.03, -0.01], atol=1e-12)
    assert np.isnan(m[4]) and np.isnan(m[5])


def test_support_margin_on_a_hexagon_of_two_feet():
    """Double support: the hull of two 0.2 x 0.1 soles 0.2 m apart laterally, the left one 0.1 m ahead:
    a point midway between the feet lies inside; its distance to the slanted edge is worked out."""
    hexagon = np.array([0.0, -0.2, 0.2, -0.2, 0.3, 0.0, 0.3, 0.1, 0.1, 0.1, 0.0, -0.1])
    polygons = np.concatenate([hexagon, [np.nan] * 4])[None, :]
    p = np.array([[0.2, -0.05]])
    # edge (0.2, -0.2) -> (0.3, 0.0): inward normal (-2, 1)/sqrt(5); distance ((0.2-0.2)*-2 + (-0.05+0.2)*1)/sqrt(5)
    slanted = 0.15 / math.sqrt(5.0)
    # edge (0.1, 0.1) -> (0.0, -0.1): inward normal (2, -1)/sqrt(5): ((0.2-0.1)*2 + (-0.05-0.1)*-1)/sqrt(5)
    assert support_margins(p, polygons, np.array([6]))[0] == pytest.approx(min(slanted, 0.35 / math.sqrt(5.0), 0.15))


def test_travel_stops_at_the_fall():
    t = np.arange(6) * 0.5
    pelvis = np.column_stack([0.1 * np.arange(6), np.zeros(6), np.full(6, 0.9)])
    truth = {"t": t, "pelvis_position": pelvis, "fallen": np.array([0, 0, 0, 1, 1, 1.0])}
    assert travel(truth) == (True, 1.5, pytest.approx(0.3))
    truth["fallen"] = np.zeros(6)
    assert travel(truth) == (False, None, pytest.approx(0.5))
    assert travel({"t": np.empty(0), "pelvis_position": np.empty((0, 3)), "fallen": np.empty(0)}) == (False, None, None)


def test_joint_errors_count_only_powered_frames():
    q_ref = np.zeros((4, 3))
    q = np.radians([[0.1, 0.5, -0.2], [-0.3, 1.0, 0.1], [9.0, 9.0, 9.0], [0.0, -1.2, 0.0]])
    tel = {"q": q, "q_ref": q_ref, "state": np.array(["HOLD", "MOVING", "DISABLED", "MOVING"], dtype=object)}
    assert joint_errors_deg(tel, JOINTS) == pytest.approx({"l_hip_pitch": 0.3, "l_knee": 1.2, "r_knee": 0.2})
    tel["state"][:] = "DISABLED"
    assert joint_errors_deg(tel, JOINTS) == {j: None for j in JOINTS}


def test_following_errors_are_degrees_of_motor_turn():
    rad = np.array([[0.001, 0.004, 0.0], [0.002, -0.005, math.radians(0.25)]])
    assert following_errors_deg(rad, AXES) == pytest.approx(
        {"l_hip_pitch": math.degrees(0.002), "l_knee": math.degrees(0.005), "r_knee": 0.25})
    assert following_errors_deg(np.empty((0, 3)), AXES) == {a: None for a in AXES}


def _walk_series(knee_deg: float, following_deg: float, fall_at: int | None = None):
    """Telemetry (10 frames) with the knee off its reference by ``knee_deg`` at one frame, truth (10
    frames, 0.1 s apart) with one drive peak of ``following_deg`` and the ZMP leaving the square for
    two frames (and 5 mm from its edge for one); the pelvis walks 0.05 m per frame."""
    n = 10
    q_ref = np.zeros((n, 3))
    q = np.zeros((n, 3))
    q[4, 1] = math.radians(knee_deg)
    q[6, 0] = math.radians(2.0 * knee_deg)              # larger, but not a knee
    tel = {"t": np.arange(n) * 0.1, "q": q, "q_ref": q_ref,
           "state": np.array(["HOLD"] + ["MOVING"] * (n - 2) + ["HOLD"], dtype=object)}
    following = np.zeros((n, 3))
    following[5, 2] = math.radians(following_deg)
    zmp = np.tile([0.1, 0.05], (n, 1))
    zmp[7:9, 0] = 0.22                                   # 20 mm outside, two frames
    zmp[3, 0] = 0.195                                    # 5 mm inside: not outside
    zmp[4, 0] = 0.2 + 1e-9                               # on the edge within rounding: not outside
    pelvis = np.column_stack([0.05 * np.arange(n), np.zeros(n), np.ones(n)])
    truth = {"t": np.arange(n) * 0.1, "pelvis_position": pelvis,
             "zmp": zmp, "support_polygon": np.tile(SQUARE, (n, 1)), "support_count": np.full(n, 4.0),
             "fallen": np.zeros(n), "following_error": following}
    if fall_at is not None:
        truth["fallen"][fall_at:] = 1.0
    return tel, truth


@pytest.mark.parametrize("knee,following,knee_pass,following_pass", [
    (1.2, 0.29, True, True), (1.4, 0.29, False, True), (1.2, 0.31, True, False)])
def test_evaluate_walk_checks_the_thesis_bounds(knee, following, knee_pass, following_pass):
    tel, truth = _walk_series(knee, following)
    stats = {"overruns": 0, "missed_cycles": 0}
    r = evaluate_walk("walk.csv", "hung", 2, tel, truth, [], JOINTS, AXES, stats, 10.0, 4.0, None)
    assert r.knee_error_deg == pytest.approx(knee) and r.knee_pass is knee_pass
    assert r.following_error_max_deg == pytest.approx(following) and r.following_pass is following_pass
    assert r.following_error_axis == "r_knee"
    assert r.joint_error_deg["l_hip_pitch"] == pytest.approx(2.0 * knee)
    assert r.min_zmp_margin_m == pytest.approx(-0.02) and r.zmp_outside_s == pytest.approx(0.2)
    assert r.completed and not r.fell and r.distance_m == pytest.approx(0.45) and r.speed_x_realtime == 2.5
    assert r.states == ["HOLD", "MOVING", "HOLD"]


def test_evaluate_walk_reports_the_fall_and_how_far():
    tel, truth = _walk_series(0.5, 0.1, fall_at=6)
    r = evaluate_walk("walk.csv", "ground", 10, tel, truth, [{"kind": "FAULT", "reason": "DRIVE_FAULT"}], JOINTS,
                      AXES, {"overruns": 0, "missed_cycles": 0}, 1.0, 1.0, "the robot fell at t = 0.60 s")
    assert r.fell and r.fell_at_s == pytest.approx(0.6) and r.distance_m == pytest.approx(0.3)
    assert not r.completed and r.faults == ["DRIVE_FAULT"]
    table = walk_markdown({"date": "2026-11-26", "machine": "x86_64", "speed_m_h": 360.0, "walks": [r.to_dict()]})
    assert ("| ground, 10 steps | fell at t = 0.60 s / 0.30 m | 0.500° (pass) | 0.100° (pass) (r_knee) | -20.0 mm "
            "| 1.0× |") in table


def test_walk_table_marks_a_failed_bound():
    tel, truth = _walk_series(1.4, 0.31)
    r = evaluate_walk("walk.csv", "hung", 2, tel, truth, [], JOINTS, AXES, {"overruns": 0, "missed_cycles": 0},
                      13.8, 6.9, None)
    table = walk_markdown({"date": "2026-11-26", "machine": "x86_64", "speed_m_h": 360.0, "walks": [r.to_dict()]})
    assert "| hung, 2 steps | no / 0.45 m | 1.400° (FAIL) | 0.310° (FAIL) (r_knee) | -20.0 mm | 2.0× |" in table
    assert "knee tracking error (thesis ≤ 1.3°)" in table and "(thesis ≤ 0.3°)" in table


@pytest.fixture
def figures(monkeypatch):
    """The figures the plot functions save (still written as PNG files)."""
    pytest.importorskip("matplotlib")
    saved = []
    real = plots._save

    def keep(plt, fig, path):
        saved.append(fig)
        fig.canvas.draw()
        return real(plt, fig, path)

    monkeypatch.setattr(plots, "_save", keep)
    return saved


def test_zmp_plot_marks_exactly_the_frames_outside_the_polygon(tmp_path, figures):
    _, truth = _walk_series(0.5, 0.1)
    margins = support_margins(truth["zmp"], truth["support_polygon"], truth["support_count"])
    path = plots.plot_zmp_path(truth, margins, "synthetic walk", tmp_path / "zmp.png")
    assert (tmp_path / "zmp.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    lines = {ln.get_label(): ln for ln in figures[0].axes[0].get_lines()}
    outside = lines["ZMP outside the polygon"].get_xydata()
    np.testing.assert_allclose(outside, [[0.22, 0.05], [0.22, 0.05]])
    assert path == str(tmp_path / "zmp.png")
    polygon = [ln for ln in figures[0].axes[0].get_lines() if ln.get_label().startswith("_")]
    assert len(polygon) == 1                              # the same polygon throughout: drawn once
    np.testing.assert_allclose(polygon[0].get_xydata(), [[0, 0], [0.2, 0], [0.2, 0.1], [0, 0.1], [0, 0]])


def test_zmp_plot_of_a_hung_walk_says_na_instead_of_an_empty_frame(tmp_path, figures):
    _, truth = _walk_series(0.5, 0.1)
    truth["zmp"][:] = np.nan                              # hung from the gantry: no contact, no ZMP
    margins = np.full(truth["t"].size, np.nan)
    plots.plot_zmp_path(truth, margins, "hung walk", tmp_path / "zmp.png", hung=True)
    for ax in figures[0].axes[:2]:
        assert [t.get_text() for t in ax.texts] == [plots.NO_ZMP] and plots.NO_ZMP.startswith("n/a — hung")
    plots.plot_zmp_path(*_walk_series(0.5, 0.1)[1:], np.zeros(10), "walk", tmp_path / "zmp2.png", hung=False)
    assert not figures[1].axes[0].texts                   # a ZMP: no n/a


def test_walk_tracking_plot_draws_each_joint_error_and_each_drive(tmp_path, figures):
    tel, truth = _walk_series(1.2, 0.29)
    plots.plot_walk_tracking(tel, truth, JOINTS, AXES, 1.3, 0.3, "synthetic", tmp_path / "tracking.png")
    top, bottom = figures[0].axes[:2]
    knee = next(ln for ln in top.get_lines() if ln.get_label() == "l_knee")
    assert knee.get_ydata().max() == pytest.approx(1.2) and knee.get_linewidth() > 1.0
    drive = next(ln for ln in bottom.get_lines() if ln.get_label() == "r_knee")
    assert drive.get_ydata().max() == pytest.approx(0.29)
    assert (tmp_path / "tracking.png").stat().st_size > 10_000


def test_the_walk_table_has_its_own_readme_block(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"{BEGIN}\nleg table\n{END}\ntext\n{WALK_MARKERS[0]}\nold walks\n{WALK_MARKERS[1]}\n")
    update_readme(readme, "new walks\n", WALK_MARKERS)
    assert readme.read_text() == f"{BEGIN}\nleg table\n{END}\ntext\n{WALK_MARKERS[0]}\nnew walks\n{WALK_MARKERS[1]}\n"


def test_the_walks_slope_is_the_last_known_and_its_edges_are_timed():
    from controller.tools.scenarios.walk_metrics import edge_landings, estimated_slope

    g = np.radians([[np.nan, np.nan], [4.0, -1.0], [3.5, 0.5], [np.nan, np.nan]])
    assert estimated_slope({"ground_slope": g}) == {"pitch": 3.5, "roll": 0.5}
    assert estimated_slope({"ground_slope": np.full((3, 2), np.nan)}) is None
    events = [{"cycle": 1500, "kind": "EDGE", "foot": "right", "cells": [2, 3]}, {"cycle": 9, "kind": "CONTACT"}]
    assert edge_landings(events, 0.002) == [{"t": 3.0, "foot": "right", "cells": [2, 3]}]


def _two_swings():
    """The plan: double support, the right foot swings 1.0 -> 2.0 s, the left 2.3 -> 3.3 s (SUPPORT events
    at 2 ms cycles); the HIL's contact flags every 0.1 s: the right foot lets go at 1.1 s (a flicker at
    1.2 s) and meets the ground at 1.8 s (0.2 s before the plan), the left lets go at 2.4 s and never lands."""
    events = [{"cycle": c, "kind": "SUPPORT", "support": s}
              for c, s in ((0, "double"), (500, "left"), (1000, "double"), (1150, "right"), (1650, "double"))]
    t = np.round(np.arange(41) * 0.1, 10)
    contact = np.ones((t.size, 2))
    contact[(t >= 1.1) & (t < 1.8), 1] = 0.0
    contact[t == 1.2, 1] = 1.0                            # the flicker of a load being shed: not a landing
    contact[t >= 2.4, 0] = 0.0
    lift = np.zeros((t.size, 2))
    lift[(t >= 1.1) & (t < 1.8), 1] = 0.01
    truth = {"t": t, "contact": contact, "foot_lift": lift, "foot_load": 500.0 * contact,
             "following_error": np.radians(np.column_stack([np.full(t.size, 0.2), np.where(t == 1.8, 30.0, 0.1)]))}
    return events, truth


def test_landings_time_each_swing_foot_against_the_plans_touch_down():
    from controller.tools.scenarios.walk_metrics import landings

    events, truth = _two_swings()
    assert landings(events, 0.002, truth) == [
        {"foot": "right", "plan_s": 2.0, "contact_s": 1.8, "early_s": 0.2},
        {"foot": "left", "plan_s": 3.3, "contact_s": None, "early_s": None}]
    ended = events[:4]                                    # the run ended (a fault) in the left's swing, which
    truth["contact"][truth["t"] >= 3.0, 0] = 1.0          # had met the ground at 3.0 s
    assert landings(ended, 0.002, truth)[1] == {"foot": "left", "plan_s": None, "contact_s": 3.0, "early_s": None}


def test_feet_plot_draws_lift_load_and_the_largest_following_error(tmp_path, figures):
    from controller.tools.scenarios.walk_metrics import plan_phases

    events, truth = _two_swings()
    plots.plot_walk_feet(truth, plan_phases(events, 0.002), 114.6, ["l_knee", "r_knee"], "synthetic",
                         tmp_path / "feet.png")
    lift, load, drive = figures[0].axes[:3]
    right = next(ln for ln in lift.get_lines() if ln.get_label() == "right sole")
    assert right.get_ydata().max() == pytest.approx(10.0)
    worst = next(ln for ln in drive.get_lines() if ln.get_label() == "largest over the drives")
    assert worst.get_ydata().max() == pytest.approx(30.0) and drive.texts[0].get_text() == "r_knee 30.0°"
    dashed = [ln.get_xdata()[0] for ln in lift.get_lines() if ln.get_linestyle() == "--"]
    assert dashed == pytest.approx([2.0, 3.3])            # the two touch-downs, not the first double support
    assert (tmp_path / "feet.png").stat().st_size > 10_000
