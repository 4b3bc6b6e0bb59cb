"""`bipd campaign`: spec errors, resumability, failed and hung trials, optuna, the report.

The Ray tests start a real local cluster with 2 CPUs and run a cheap fake trial
(tests/controller/campaign_fakes.py) instead of a HIL scenario.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.campaign.cli import main as campaign_main
from controller.campaign.spec import SpecError, load_spec
from controller.campaign.report import ranked, table
from controller.campaign.store import Store

from .campaign_fakes import CRASH, FAIL, HANG, fake_trial

CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "bipd.yaml"
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
    spec = load_spec(Path(__file__).resolve().parents[2] / "deploy" / "campaigns" / "tilt_fields.yaml")
    recs = [{"key": k, "params": {}, "status": "ok", "metrics": {"min_cog_margin_m": m, "max_tracking_error_deg": e}}
            for k, m, e in (("a", 0.05, 0.02), ("b", 0.06, 0.03), ("c", 0.04, 0.03), ("d", 0.06, 0.01))]
    recs.append({"key": "f", "params": {}, "status": "failed", "error": "boom"})
    recs.append({"key": "x", "params": {}, "status": "ok", "metrics": {         # best figures, but it fell
        "min_cog_margin_m": 0.07, "max_tracking_error_deg": 0.0, "fell": True, "aborted": "the leg fell at t = 3 s"}})
    rows = ranked(spec, recs)
    assert [r["key"] for r in rows][:4] == ["d", "b", "a", "c"]       # margin maximized, then error minimized
    assert {r["key"] for r in rows[4:]} == {"f", "x"}                 # failed and fallen: last
    assert [r["key"] for r in rows if r["pareto"]] == ["d"]           # d dominates a, b and c
    assert {line.split("  ")[-1].strip() for line in table(spec, rows).splitlines()[-2:]} == {
        "failed: boom", "the leg fell at t = 3 s"}


# ---------------------------------------------------------------- on Ray (a local cluster, 2 CPUs)
import ray  # noqa: E402  (the test extra installs it: these tests run in CI, never skip)


def run(path: Path, **kw) -> dict[str, dict]:
    from controller.campaign.execute import run_campaign

    spec = load_spec(path)
    return run_campaign(spec, num_cpus=2, trial=fake_trial, say=lambda _m: None, **kw).read()


def calls(tmp_path: Path) -> set[str]:
    folder = tmp_path / "calls"
    return {p.name for p in folder.iterdir()} - {"hang.pid"} if folder.exists() else set()


def test_failed_and_hung_trials_are_recorded_and_the_rest_finish(tmp_path):
    doc = with_(parameters={"walls.gain": [0.5, FAIL, CRASH, HANG, 2.0]}, timeout_s=20)
    done = run(write(tmp_path, doc))
    by_gain = {r["params"]["walls.gain"]: r for r in done.values()}
    assert {g: r["status"] for g, r in by_gain.items()} == {0.5: "ok", FAIL: "failed", CRASH: "failed",
                                                            HANG: "failed", 2.0: "ok"}
    assert by_gain[FAIL]["error"] == "RuntimeError: boom"
    assert "WorkerCrashedError" in by_gain[CRASH]["error"]
    assert by_gain[HANG]["error"] == "timed out after 20 wall s"
    assert by_gain[2.0]["metrics"] == {"min_cog_margin_m": -1.0, "max_tracking_error_deg": 2.0}
    pid = int((tmp_path / "calls" / "hang.pid").read_text())
    assert not _alive(pid), "the hung trial's grandchild process outlived its cancelled worker"


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie awaiting its reaper counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def test_an_interrupted_campaign_reruns_only_the_rest(tmp_path):
    path = write(tmp_path, with_(parameters={"walls.gain": [0.5, 1.0, 1.5], "scenario.beta_deg": [10.0, 15.0]}))
    first = run(path)
    assert len(first) == 6 and len(calls(tmp_path)) == 6
    store = Store(load_spec(path).results)
    lines = store.path.read_text().splitlines()
    kept = lines[:2]                                        # interrupted after 2 trials, mid-write of the 3rd
    store.path.write_text("\n".join(kept) + "\n" + lines[2][:25])
    for p in (tmp_path / "calls").iterdir():
        p.unlink()
    second = run(path)
    assert calls(tmp_path) == set(first) - {json.loads(x)["key"] for x in kept}    # only the 4 unfinished ran
    assert set(second) == set(first) and all(r["status"] == "ok" for r in second.values())
    for p in (tmp_path / "calls").iterdir():
        p.unlink()
    run(path)                                               # finished: nothing runs (no cluster either)
    assert calls(tmp_path) == set()


def test_optuna_resumes_to_n_trials(tmp_path):
    doc = with_(parameters={"walls.gain": {"low": 0.1, "high": 3.0}}, search={"method": "optuna", "n": 4, "seed": 3})
    path = write(tmp_path, doc)
    assert len(run(path)) == 4
    doc["search"]["n"] = 6
    write(tmp_path, doc)
    done = run(path)
    assert len(done) == 6 and len(calls(tmp_path)) == 6     # 2 more, not 6 again


def test_bench_config_carries_the_trial_values(tmp_path):
    """The scenario runner's daemon YAML names a stabilizer YAML copy holding the trial's values,
    which the stabilizer's own loader reads back (robot path made absolute)."""
    import yaml

    from controller.scenarios.runner import write_config
    from stabilizer.config import load_config

    path, _ = write_config(CONFIG, True, tmp_path, stabilizer_set=(("walls.gain", 2.5), ("admittance.damping", 40.0)))
    stab = Path(yaml.safe_load(path.read_text())["stabilizer"])
    assert stab.parent == tmp_path
    cfg = yaml.safe_load(stab.read_text())
    assert (cfg["walls"]["gain"], cfg["admittance"]["damping"]) == (2.5, 40.0)
    load_config(stab)
