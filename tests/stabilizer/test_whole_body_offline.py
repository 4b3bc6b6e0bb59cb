"""The whole-robot stabilizer's offline evaluation (`bipd stabilize-offline`) and its
cycle benchmark in `bipd bench models`."""
from __future__ import annotations

import itertools
import json
from types import SimpleNamespace

import numpy as np
import pytest

from controller.cli import main
from models.common.support import DOUBLE
from models.gait.plan import GaitParams
from models.gait.wholebody import flexed_posture
from stabilizer import bench
from stabilizer.offline import evaluate

from tests.stabilizer.helpers import SimulatedClock
from tests.stabilizer.test_whole_body import ROBOT


def independent_margin(q: np.ndarray, support: int, alpha: float, beta: float) -> float:
    """CoG margin by plain numpy: soles and CoG from the tree rooted at the left sole, the
    apparent up u = (RotX(alpha) RotY(beta))^T z, points projected on the plane normal
    to u, the hull by brute force, the signed distance to its nearest edge line."""
    ROBOT.set_root("left_sole")
    ca, sa, cb, sb = np.cos(alpha), np.sin(alpha), np.cos(beta), np.sin(beta)
    R = np.array([[1, 0, 0], [0, ca, -sa], [0, sa, ca]]) @ np.array([[cb, 0, sb], [0, 1, 0], [-sb, 0, cb]])
    u = R.T @ [0.0, 0.0, 1.0]
    e1 = np.array([1.0, 0.0, 0.0]) - u[0] * u
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(u, e1)
    pts = []
    for k, (sole, foot) in enumerate(zip(("left_sole", "right_sole"), ROBOT.description.feet)):
        if support != DOUBLE and support != k:
            continue
        T = ROBOT.frame(q, sole)
        for x, y in foot.outline:
            p = T[:3, :3] @ [x, y, 0.0] + T[:3, 3]
            pts.append((p @ e1, p @ e2))
    pts = np.array(pts)
    c = ROBOT.com(q)
    g = np.array([c @ e1, c @ e2])
    best = np.inf
    for i, j in itertools.permutations(range(len(pts)), 2):
        e = pts[j] - pts[i]
        cross = e[0] * (pts[:, 1] - pts[i, 1]) - e[1] * (pts[:, 0] - pts[i, 0])
        if np.linalg.norm(e) > 1e-9 and np.all(cross >= -1e-12):          # a hull edge, inside on its left
            best = min(best, (e[0] * (g[1] - pts[i, 1]) - e[1] * (g[0] - pts[i, 0])) / np.linalg.norm(e))
    return best


def test_offline_margins_against_an_independent_computation_and_the_stabilizer_helps():
    """The held margins are those of the numpy computation above; with the stabilizer the
    CoG stays inside (margin > 5 mm) up to 8 deg in both supports, where the held
    posture leaves the polygon."""
    rows = evaluate(amplitudes_deg=(4.0, 8.0), ramp_s=3.0, directions=(0, 90, 270), settle_s=3.0)
    q_double = flexed_posture(ROBOT, GaitParams(flex=0.06))
    for r in rows:
        if r.support == "double":
            a, b = np.radians(r.amplitude_deg) * np.array([np.cos(np.radians(r.direction_deg)),
                                                           np.sin(np.radians(r.direction_deg))])
            assert r.held_margin == pytest.approx(independent_margin(q_double, DOUBLE, a, b), abs=1e-9)
    assert len(rows) == 2 * 3 * 2
    assert min(r.held_margin for r in rows) < -0.01
    assert min(r.min_stabilized for r in rows) > 0.005
    assert all(r.stabilized_margin > r.held_margin for r in rows if r.held_margin < 0.03)


@pytest.mark.bench
def test_whole_body_benchmark_figures_are_the_statistics_of_the_timed_calls(monkeypatch):
    samples = 201
    ns = np.random.default_rng(2).integers(5_000, 50_000, 3 * samples)     # standing, walking, the feet room
    clock = SimulatedClock(ns)
    monkeypatch.setattr(bench, "time", SimpleNamespace(perf_counter_ns=clock))
    res = bench.run_whole_body_benchmark(samples=samples)
    assert next(clock.durations, None) is None
    us, walk, feet = ns[:samples] / 1e3, ns[samples:2 * samples] / 1e3, ns[2 * samples:] / 1e3
    assert res["step"]["median_us"] == pytest.approx(np.median(us), rel=1e-12)
    assert res["step"]["p99_us"] == pytest.approx(np.percentile(us, 99), rel=1e-12)
    assert res["ratio_step_vs_thesis"] == pytest.approx(np.median(us) / 273.0, rel=1e-12)
    assert res["walk_step"]["median_us"] == pytest.approx(np.median(walk), rel=1e-12)
    assert res["ratio_walk_vs_standing"] == pytest.approx(np.median(walk) / np.median(us), rel=1e-12)
    assert res["feet"]["median_us"] == pytest.approx(np.median(feet), rel=1e-12)
    assert res["ratio_feet_vs_walk"] == pytest.approx(np.median(feet) / np.median(walk), rel=1e-12)
    assert res["not_ok"] == 0 and res["not_ok_walk"] == 0


@pytest.mark.bench
def test_bench_models_on_the_tree_times_the_whole_body_stabilizer(capsys):
    robot = bench.WHOLE_BODY_CONFIG.parent / "bip2000.yaml"
    assert main(["bench", "models", "--robot", str(robot), "--json", "--samples", "40"]) == 0
    res = json.loads(capsys.readouterr().out)["whole_body_stabilizer"]
    assert res["samples"] == 40 and res["not_ok"] == 0 and res["robot"] == "bip2000"
    assert 0.0 < res["step"]["min_us"] <= res["step"]["median_us"] <= res["step"]["p99_us"]


@pytest.mark.parametrize("argv, message", [
    (["--amplitudes", "4,x"], "--amplitudes must be increasing degrees"),
    (["--amplitudes", "8,4"], "--amplitudes must be increasing degrees"),
    (["--ramp-s", "0"], "--ramp-s must be in"),
    (["--config", "/nonexistent/stab.yaml"], "/nonexistent/stab.yaml"),
])
def test_stabilize_offline_bad_input_is_one_sentence(argv, capsys, message):
    assert main(["stabilize-offline", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1
