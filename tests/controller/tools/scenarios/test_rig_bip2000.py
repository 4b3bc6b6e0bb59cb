"""`bipd scenario rig` on BIP 2000 (deploy/bip2000_rig.yaml): the command picks the whole-robot bench
by the config's robot (a tree), refuses a bad motion before any process starts, and runs a short gentle
motion end to end through the CLI (HIL biped on the rig's plate + daemon, stepped lock-step, --json,
--plot); a hard lateral step fells the robot, the result saying when and why. Also the pieces the
searches and the report are built from: the plate's tracking against the command (metrics.plate_tracking),
the bisection (search.bisect) on a fake outcome, and BIP 2000's rig table."""
from __future__ import annotations

import json
import math
import re
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from controller.daemon.rig.spec import motion_from_spec
from controller.tools.scenarios import runner, whole_body
from controller.tools.scenarios.cli import main
from controller.tools.scenarios.metrics import plate_tracking
from controller.tools.scenarios.rig import (RIG_CONFIG, TREE_AXES, TREE_FREQUENCIES, TREE_RIG_CONFIG, checked_motion,
                                     markdown_tree)
from controller.tools.scenarios.runner import PlotError, ScenarioError, plot_errors
from controller.tools.scenarios.search import bisect
from tests.paths import ROOT

GENTLE = "sinusoid:axis=x,amplitude=0.01,frequency=1,cycles=2"        # 0.4 m/s² peak, fore-aft
HARD = "step:axis=y,accel=4"                                          # lateral, twice what lifts a sole
KEYS = {"scenario", "params", "stabilizer", "support", "fell", "fall_reason", "fell_at_s", "min_cog_margin_m",
        "max_stance_lift_m", "min_pelvis_height_m", "plate_travel_m", "plate_tracking_error_m", "plate_lag_s",
        "plate_error_at_lag_m", "max_tracking_error_deg", "max_tracking_error_joint", "max_rig_following_error_mm",
        "max_tilt_error_deg", "contacts", "supports",
        "states", "stab_flags", "recovery_steps", "aborted", "sim_s", "wall_s", "plots"}


@pytest.mark.parametrize("config", [TREE_RIG_CONFIG, RIG_CONFIG], ids=["bip2000", "leg"])
@pytest.mark.parametrize("motion, message", [
    ("wobble", "--motion 'wobble': expected one of tilt, sinusoid"),
    ("sinusoid:axis=y,amplitude=1,frequency=0.2", r"leg [A-F] would need a displacement of .* beyond its stroke"),
    ("step:axis=q,accel=1", "axis must be one of x, y, z"),
])
def test_a_bad_motion_is_refused_before_anything_starts(config, motion, message, monkeypatch, capsys):
    def no_bench(*_a, **_k):
        raise AssertionError("a process was started for a bad motion")
    monkeypatch.setattr(runner, "Processes", no_bench)
    monkeypatch.setattr(whole_body, "Processes", no_bench)
    with pytest.raises(SystemExit) as exc:
        main(["rig", "--config", str(config), "--motion", motion])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len(re.findall(message, err)) == 1, err


def test_the_stroke_check_before_a_run_takes_the_robots_tilt_convention():
    """37.5° of α: about the rig's y for the leg (stroke up to 38.4°), a roll about its x for BIP 2000 (up to
    36.6°, docs/conventions.md "Platform tilt")."""
    spec = "tilt:alpha_deg=37.5,beta_deg=0,duration=2"
    assert checked_motion(spec, RIG_CONFIG) == spec
    with pytest.raises(ScenarioError, match="beyond its stroke"):
        checked_motion(spec, TREE_RIG_CONFIG)


def test_options_the_whole_robot_bench_lacks_are_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["rig", "--config", str(TREE_RIG_CONFIG), "--motion", GENTLE, "--realtime"])
    assert exc.value.code == 2
    assert "--realtime: not available for a whole robot on the rig" in capsys.readouterr().err


def _cli(*args: str) -> tuple[int, dict]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "controller.cli", "scenario", "rig", "--config", str(TREE_RIG_CONFIG),
                        *args, "--json"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert p.stdout.strip(), p.stderr[-3000:]
    return p.returncode, json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.hil
def test_a_gentle_motion_runs_end_to_end_through_the_cli(tmp_path):
    pytest.importorskip("mujoco", reason="the HIL bench needs the sim extra: pip install 'bipd[sim]'")
    pytest.importorskip("matplotlib")
    code, r = _cli("--motion", GENTLE, "--plot", str(tmp_path))
    assert code == 0 and set(r) == KEYS, (code, sorted(set(r) ^ KEYS))
    assert not r["fell"] and r["fall_reason"] is None and r["fell_at_s"] is None and r["aborted"] is None
    assert r["states"] == ["STABILIZING"] and r["stabilizer"] and r["support"] == "double" and r["recovery_steps"] == []
    assert r["min_cog_margin_m"] > 0.05
    # the plate's truth covers the commanded fore-aft travel (the motion's own samples), and only along x
    motion, tau = motion_from_spec(GENTLE), np.linspace(0.0, 1.0, 2001)
    travel = np.ptp(motion.sample_many(tau * motion.duration)[0][:, :3], axis=0)
    np.testing.assert_allclose(r["plate_travel_m"], travel, atol=5e-4)
    # it follows the command within 0.5 mm once the bus's and drives' delay is taken out
    assert 0.0 <= r["plate_lag_s"] <= 0.05 and r["plate_error_at_lag_m"] < 5e-4
    assert r["plate_error_at_lag_m"] <= r["plate_tracking_error_m"]
    assert 0.0 <= r["max_tracking_error_deg"] < 1.0 and r["max_tracking_error_joint"]
    assert set(r["max_rig_following_error_mm"]) == set("ABCDEF")
    assert [Path(p).name for p in r["plots"]] == ["rig_support.png", "rig_tracking.png", "rig_platform.png"]
    assert all(Path(p).stat().st_size > 10_000 for p in r["plots"])


@pytest.mark.hil
def test_a_hard_lateral_step_fells_it_and_says_when_and_why():
    pytest.importorskip("mujoco", reason="the HIL bench needs the sim extra: pip install 'bipd[sim]'")
    code, r = _cli("--motion", HARD)
    assert code == 1 and r["fell"]
    assert "sole lifted" in r["fall_reason"] or "fallen" in r["fall_reason"]
    assert r["fell_at_s"] is not None and f"t = {r['fell_at_s']:.2f} s" in r["fall_reason"]
    assert r["sim_s"] < motion_from_spec(HARD).duration          # the run stopped at the fall


def test_plate_tracking_finds_the_delay_of_a_delayed_plate():
    t = np.arange(0.0, 3.0, 0.01)
    delay, home = 0.016, np.array([0.3, -0.2, 1.1])

    def commanded(tt):
        return np.stack([np.zeros_like(tt), 0.02 * np.sin(2 * math.pi * np.clip(tt, 0.0, None)), 0.0 * tt], axis=1)
    plate = home + commanded(t - delay)
    err, lag, at_lag = plate_tracking(t, plate, commanded)
    assert lag == pytest.approx(delay) and at_lag < 1e-12
    # the same-time error is the sine's largest change over the delay: 2 A sin(pi f d)
    assert err == pytest.approx(2 * 0.02 * math.sin(math.pi * delay), rel=1e-3)
    assert plate_tracking(t, plate, None) == (None, None, None)
    assert plate_tracking(t, plate, lambda tt: None) == (None, None, None)


def _fake(threshold: float, calls: list, abort_above: float | None = None):
    """A fake run: falls above ``threshold``, or faults (aborted, not fallen) above ``abort_above``."""
    def run(amplitude, _options, _say):
        calls.append(amplitude)
        aborted = abort_above is not None and amplitude > abort_above
        return SimpleNamespace(fell=amplitude > threshold and not aborted, min_cog_margin_m=0.0,
                               aborted="FAULT" if aborted else None)
    return run


@pytest.mark.parametrize("threshold", [0.3, 1.7, 3.99])
def test_bisection_brackets_the_threshold_in_the_given_runs(threshold):
    calls = []
    out = bisect(lambda a: a, 4.0, 5, None, lambda _m: None, run=_fake(threshold, calls))
    assert len(calls) == 5 and calls[0] == 4.0
    assert out["held"] <= threshold < out["fell"] and out["fell"] - out["held"] == pytest.approx(4.0 / 2 ** 4)
    assert [t["fell"] for t in out["trials"]] == [a > threshold for a in calls]


def test_bisection_stops_when_the_first_run_holds_and_counts_a_fault_as_lost():
    calls = []
    out = bisect(lambda a: a, 4.0, 5, None, lambda _m: None, run=_fake(10.0, calls))
    assert calls == [4.0] and out["held"] == 4.0 and out["fell"] is None
    calls = []
    out = bisect(lambda a: a, 4.0, 3, None, lambda _m: None, run=_fake(10.0, calls, abort_above=1.0))
    assert calls == [4.0, 2.0, 1.0] and out["held"] == 1.0 and out["fell"] == 2.0


def test_the_bip2000_rig_table_has_a_row_per_axis_and_search():
    def search(held, fell, limit=4.0):
        return {"held": held, "fell": fell, "limit": limit}
    cfg = {"config": "whole-robot stabilizer", "steps": {a: search(1.5, 1.75) for a, _ in TREE_AXES},
           "sines": {a: [search(0.01, 0.0125, 0.4)] * len(TREE_FREQUENCIES) for a, _ in TREE_AXES},
           "quake": dict(search(1.0, 1.25), file="quake.csv")}
    held = dict(cfg, config="without (posture held)", steps={a: search(0.0, 0.25) for a, _ in TREE_AXES})
    acc = dict(cfg, config="whole-robot stabilizer + support acceleration", quake=dict(search(0.5, 0.75), file="q"))
    table = markdown_tree({"date": "2026-11-26", "runs_per_search": 5, "wall_s": 600.0, "configs": [cfg, held, acc]})
    assert table.splitlines()[0] == ("| BIP 2000, both feet | whole-robot stabilizer | without (posture held) | "
                                     "whole-robot stabilizer + support acceleration |")
    rows = [r for r in table.splitlines() if r.startswith("| largest")]
    assert len(rows) == len(TREE_AXES) * (1 + len(TREE_FREQUENCIES)) + 1
    assert "| largest acceleration step survived, lateral (y of the rig) | 1.50 m/s² (falls at 1.75) | " \
           "< 0.25 m/s² (falls there) | 1.50 m/s² (falls at 1.75) |" in rows
    # the earthquake's peak is along the rig's y, BIP 2000's lateral
    assert rows[-1] == ("| largest peak lateral (y of the rig) acceleration survived, synthetic earthquake (quake.csv, "
                        "all axes scaled alike) | 1.00 m/s² (falls at 1.25) | 1.00 m/s² (falls at 1.25) | "
                        "0.50 m/s² (falls at 0.75) |")
    # the sinusoid cells give the peak acceleration A ω² of the amplitude held
    assert f"10.0 mm, {0.01 * (2 * math.pi) ** 2:.2f} m/s² (falls at 12.5)" in table


def test_a_plotting_failure_is_a_plot_error_naming_the_folder(tmp_path):
    with pytest.raises(PlotError, match=f"the plots in {tmp_path} could not be drawn \\(RuntimeError: boom\\)"):
        with plot_errors(tmp_path):
            raise RuntimeError("boom")


@pytest.mark.hil
def test_bip2000s_columns_reach_the_daemons_stabilizer(monkeypatch):
    """rig-results on BIP 2000: every search of each column runs its bench with the stabilizer as the
    column says and, in the third, ``tilt.use_acceleration`` set in the stabilizer YAML the daemon
    loads (runner.write_config, as the leg's column); the earthquake's runs read the scaled copies."""
    from controller.daemon.config import load_daemon_config
    from controller.tools.scenarios import rig
    from stabilizer.whole_body import P_USE_ACC

    seen = []

    def fake(scenario, options, _say):
        seen.append((options, scenario.motion))
        return SimpleNamespace(fell=True, aborted=None, min_cog_margin_m=0.0)
    monkeypatch.setattr(rig, "run_whole_body", fake)
    res = rig.collect_tree(whole_body.WholeBodyOptions(config=TREE_RIG_CONFIG), runs=1)
    assert [c["config"] for c in res["configs"]] == [label for label, _, _ in rig.TREE_CONFIGS]
    per_column = len(seen) // len(rig.TREE_CONFIGS)
    assert per_column == len(TREE_AXES) * (1 + len(TREE_FREQUENCIES)) + 1
    for k, (_, stab, acc) in enumerate(rig.TREE_CONFIGS):
        column = seen[k * per_column:(k + 1) * per_column]
        assert all(o.stabilizer == stab and o.support == "double" for o, _ in column)
        assert {o.stabilizer_set for o, _ in column} == ({(("tilt.use_acceleration", acc),)} if stab else {()})
        options, quake = column[-1]
        assert quake.endswith(".csv") and options.trajectory_dir == Path(quake).parent
        # the daemon YAML the bench would start from (caught where its processes would start)
        loaded = []

        def no_bench(config, *_a, **_k):
            loaded.append(load_daemon_config(config).stabilizer().params[P_USE_ACC])
            raise ScenarioError("caught")
        monkeypatch.setattr(whole_body, "Processes", no_bench)
        with pytest.raises(ScenarioError, match="caught"):
            whole_body.run_whole_body(rig.RigMotion(GENTLE), replace(options, trajectory_dir=None))   # folder gone
        assert loaded == [float(stab and acc)]