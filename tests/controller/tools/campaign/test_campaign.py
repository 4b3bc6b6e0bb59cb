"""`bipd campaign`: spec errors, resumability, failed and hung trials, optuna, the report.

The Ray tests start a real local cluster with 2 CPUs and run a cheap fake trial
(tests/controller/tools/campaign/campaign_fakes.py) instead of a HIL scenario.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.tools.campaign.cli import main as campaign_main
from controller.tools.campaign.spec import SpecError, load_spec
from controller.tools.campaign.report import ranked, table
from controller.tools.campaign.store import Store

from tests.controller.tools.campaign.campaign_fakes import CRASH, FAIL, HANG, fake_trial
from tests.paths import DEPLOY, ROOT

CONFIG = DEPLOY / "bipd.yaml"
GOOD = {"scenario": {"name": "tilt", "alpha_deg": 5.0, "duration_s": 2.0},
        "parameters": {"walls.gain": [0.5, 1.0], "scenario.beta_deg": [10.0, 15.0]},
        "search": {"method": "grid"},
        "objectives": {"min_cog_margin_m": "maximize", "max_tracking_error_deg": "minimize"},
        "config": str(CONFIG), "timeout_s": 30, "results": "out"}


def write(tmp_path: Path, doc: dict) -> Path:
    import yaml

    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def with_(**changes) -> dict:
    doc = json.loads(json.dumps(GOOD))
    for key, value in changes.items():
        *parents, leaf = key.split("__")
        d = doc
        for p in parents:
            d = d[p]
        if value is None:
            del d[leaf]
        else:
            d[leaf] = value
    return doc


def test_good_spec_loads(tmp_path):
    spec = load_spec(write(tmp_path, GOOD))
    assert spec.fixed == {"alpha_deg": 5.0, "duration_s": 2.0, "hold_s": 1.0}    # beta varied, hold default
    assert spec.results == (tmp_path / "out").resolve()


@pytest.mark.parametrize("doc, where", [
    (with_(scenario__name="wobble"), "scenario.name: must be one of tilt, push"),
    (with_(scenario__gamma_deg=3.0), "scenario.gamma_deg: not a field of tilt"),
    (with_(parameters={"walls.gian": [1.0]}), "parameters.walls.gian: not a key of the stabilizer YAML"),
    (with_(parameters={"attractor.gain": [1.0]}), "parameters.attractor.gain: not a key of the stabilizer YAML"),
    (with_(parameters={"scenario.force_n": [1.0]}), "parameters.scenario.force_n: not a field of tilt"),
    (with_(parameters={"walls.gain": {"low": 1.0, "high": 2.0}}), "parameters.walls.gain: a grid needs a list"),
    (with_(parameters={"walls.gain": {"low": 2.0, "high": 1.0}}), "parameters.walls.gain: a range needs low < high"),
    (with_(parameters={"walls.gain": []}), "parameters.walls.gain: an empty list"),
    (with_(parameters={"walls.gain": [0.5, -1.0]}), "parameters.walls.gain: the value -1.0 is refused"),
    (with_(parameters={"admittance.damping": ["stiff"]}), "parameters.admittance.damping: the value 'stiff' is refused"),
    (with_(search={"method": "random"}), "search.n: the number of trials"),
    (with_(search={"method": "random", "n": 10 ** 12}), "search.n: the number of trials, an integer from 1 to 10,000"),
    (with_(search={"method": "random", "n": 1e12}), "search.n: the number of trials, an integer from 1 to 10,000"),
    (with_(parameters={"walls.gain": [1.0] * 1000, "scenario.beta_deg": [10.0] * 1000}),
     "parameters: the grid has 1,000,000 combinations; a campaign runs at most 10,000 trials"),
    (with_(search={"method": "anneal"}), "search.method: must be one of grid, random, optuna"),
    (with_(objectives={"happiness": "maximize"}), "objectives.happiness: not a metric"),
    (with_(objectives={"min_cog_margin_m": "max"}), "objectives.min_cog_margin_m: must be minimize or maximize"),
    (with_(objectives={"largest_tilt_deg": "maximize"}), "objectives.largest_tilt_deg: needs a largest_tilt"),
    (with_(results=None), "results: the results folder"),
    (with_(timeout_s=-1), "timeout_s: wall seconds"),
    (with_(config="missing.yaml"), "config: no such daemon YAML"),
])
def test_spec_errors_name_file_and_key(tmp_path, capsys, doc, where):
    path = write(tmp_path, doc)
    with pytest.raises(SpecError) as e:
        load_spec(path)
    assert str(e.value).startswith(f"{path}: {where}")
    assert campaign_main([str(path)]) == 2                       # the CLI: one line, before anything runs
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [f"bipd campaign: error: {e.value}"]


def test_report_ranks_and_marks_the_front():
    spec = load_spec(DEPLOY / "campaigns" / "tilt_fields.yaml")
    recs = [{"key": k, "params": {}, "status": "ok", "metrics": {"min_cog_margin_m": m, "max_tracking_error_deg": e}}
            for k, m, e in (("a", 0.05, 0.02), ("b", 0.06, 0.03), ("c", 0.04, 0.03), ("d", 0.06, 0.01))]
    recs.append({"key": "f", "params": {}, "status": "failed", "error": "boom"})
    recs.append({"key": "x", "params": {}, "status": "ok", "metrics": {         # best figures, but it fell
        "min_cog_margin_m": 0.07, "max_tracking_error_deg": 0.0, "fell": True, "aborted": "the robot fell at t = 3 s"}})
    rows = ranked(spec, recs)
    assert [r["key"] for r in rows][:4] == ["d", "b", "a", "c"]       # margin maximized, then error minimized
    assert {r["key"] for r in rows[4:]} == {"f", "x"}                 # failed and fallen: last
    assert [r["key"] for r in rows if r["pareto"]] == ["d"]           # d dominates a, b and c
    assert {line.split("  ")[-1].strip() for line in table(spec, rows).splitlines()[-2:]} == {
        "failed: boom", "the robot fell at t = 3 s"}


def test_pareto_plot_names_its_axes_with_units_and_directions(tmp_path, monkeypatch):
    """tilt_fields.yaml maximizes the CoG margin (y axis, ↑ better) and minimizes the tracking error
    (x axis, ↓ better); the front is d alone."""
    import matplotlib.pyplot as plt
    from controller.tools.campaign.report import pareto_plot
    spec = load_spec(DEPLOY / "campaigns" / "tilt_fields.yaml")
    assert list(spec.objectives.items())[:2] == [("min_cog_margin_m", "maximize"),
                                                 ("max_tracking_error_deg", "minimize")]
    recs = [{"key": k, "params": {}, "status": "ok", "metrics": {"min_cog_margin_m": m, "max_tracking_error_deg": e}}
            for k, m, e in (("a", 0.05, 0.02), ("b", 0.06, 0.03), ("d", 0.06, 0.01))]
    kept = []
    monkeypatch.setattr(plt, "close", kept.append)
    path = pareto_plot(spec, ranked(spec, recs), tmp_path)
    assert path.read_bytes()[:4] == b"\x89PNG"
    ax = kept[0].axes[0]
    assert ax.get_ylabel() == "lowest CoG margin (m)  ↑ better"
    assert ax.get_xlabel() == "largest tracking error (deg)  ↓ better"
    front = next(ln for ln in ax.get_lines() if ln.get_label() == "Pareto front")
    assert front.get_xydata().tolist() == [[0.01, 0.06]]


# ---------------------------------------------------------------- on Ray, in a process of its own
@pytest.mark.slow
def test_campaigns_on_a_local_ray_cluster_in_their_own_process():
    """The Ray cases (ray_campaign_cases.py) run in a separate pytest, so the local clusters they
    start never share a process with the daemon tests' children and exit codes."""
    import subprocess
    import sys

    root = ROOT
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "tests/controller/tools/campaign/ray_campaign_cases.py"], cwd=root, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert " passed" in r.stdout and "skipped" not in r.stdout, r.stdout[-2000:]
