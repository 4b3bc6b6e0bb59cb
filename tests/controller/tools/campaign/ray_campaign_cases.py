"""`bipd campaign` on a real local Ray cluster (2 CPUs) with a cheap fake trial
(tests/controller/tools/campaign/campaign_fakes.py): failed and hung trials, resumability, optuna, the
trial's config copy. One cluster serves every case (its start-up is most of their time): run_campaign
runs on a connection its caller holds and leaves it open.

Not collected by itself: ``tests/controller/tools/campaign/test_campaign.py`` runs this file in a pytest
process of its own, so the local clusters these cases start and stop, with their processes and
signal handlers, never share a process with the daemon tests' own children and exit codes.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from controller.tools.campaign.spec import load_spec
from controller.tools.campaign.store import Store

from tests.controller.tools.campaign.campaign_fakes import CRASH, FAIL, HANG, fake_trial  # noqa: F401
from tests.controller.tools.campaign.test_campaign import CONFIG, with_, write

# ---------------------------------------------------------------- on Ray (a local cluster, 2 CPUs)
import ray  # noqa: E402  (the test extra installs it: these tests run in CI, never skip)


RAY_OWN_CLEANUP = ("RAY_process_group_cleanup_enabled", "RAY_kill_child_processes_on_worker_exit",
                   "RAY_kill_child_processes_on_worker_exit_with_raylet_subreaper")


@pytest.fixture(scope="module", autouse=True)
def cluster():
    """One local cluster (2 CPUs) for the module, started without Ray's own cleanup of a killed worker's
    children (RAY_OWN_CLEANUP off): the hung trial's grandchild must die by the trial's guard alone."""
    saved = {name: os.environ.get(name) for name in RAY_OWN_CLEANUP}
    os.environ.update({name: "false" for name in RAY_OWN_CLEANUP})
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name)
        else:
            os.environ[name] = value


def run(path: Path, **kw) -> dict[str, dict]:
    from controller.tools.campaign.execute import run_campaign

    spec = load_spec(path)
    return run_campaign(spec, num_cpus=2, trial=fake_trial, say=lambda _m: None, **kw).read()


def calls(tmp_path: Path) -> set[str]:
    folder = tmp_path / "calls"
    return {p.name for p in folder.iterdir()} - {"hang.pid"} if folder.exists() else set()


def test_an_interrupted_campaign_reruns_only_the_rest(tmp_path):
    path = write(tmp_path, with_(parameters={"walls.gain": [0.5, 1.0, 1.5], "scenario.beta_deg": [10.0, 15.0]}))
    first = run(path)
    assert len(first) == 6 and len(calls(tmp_path)) == 6
    assert ray.is_initialized()                             # the caller's cluster is the caller's to close
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
    run(path)                                               # finished: nothing runs
    assert calls(tmp_path) == set()


def test_optuna_resumes_to_n_trials(tmp_path):
    doc = with_(parameters={"walls.gain": {"low": 0.1, "high": 3.0}}, search={"method": "optuna", "n": 4, "seed": 3})
    path = write(tmp_path, doc)
    assert len(run(path)) == 4
    doc["search"]["n"] = 6
    write(tmp_path, doc)
    done = run(path)
    assert len(done) == 6 and len(calls(tmp_path)) == 6     # 2 more, not 6 again


def test_failed_and_hung_trials_are_recorded_and_the_rest_finish(tmp_path):
    """Last in the module: the cluster's workers have started, so 8 s bounds the hung trial alone."""
    doc = with_(parameters={"walls.gain": [0.5, FAIL, CRASH, HANG, 2.0]}, timeout_s=8)
    done = run(write(tmp_path, doc))
    by_gain = {r["params"]["walls.gain"]: r for r in done.values()}
    assert {g: r["status"] for g, r in by_gain.items()} == {0.5: "ok", FAIL: "failed", CRASH: "failed",
                                                            HANG: "failed", 2.0: "ok"}
    assert by_gain[FAIL]["error"] == "RuntimeError: boom"
    assert "WorkerCrashedError" in by_gain[CRASH]["error"]
    assert by_gain[HANG]["error"] == "timed out after 8 wall s"
    assert by_gain[2.0]["metrics"] == {"min_cog_margin_m": -1.0, "max_tracking_error_deg": 2.0}
    pid = int((tmp_path / "calls" / "hang.pid").read_text())
    assert _gone(pid), "the hung trial's grandchild process outlived its cancelled worker"


def _gone(pid: int, bound_s: float = 30.0) -> bool:
    """Whether ``pid`` ends (a zombie awaiting its reaper counts as ended) within ``bound_s`` wall
    seconds: its killer is another process, so this waits for an event with a generous bound."""
    end = time.monotonic() + bound_s
    while time.monotonic() < end:
        try:
            if Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] == "Z":
                return True
        except (FileNotFoundError, IndexError):
            return True
        time.sleep(0.1)
    return False


def test_bench_config_carries_the_trial_values(tmp_path):
    """The scenario runner's daemon YAML names a stabilizer YAML copy holding the trial's values,
    which the stabilizer's own loader reads back (robot path made absolute)."""
    import yaml

    from controller.tools.scenarios.runner import write_config
    from stabilizer.config import load_config

    path, _ = write_config(CONFIG, True, tmp_path, stabilizer_set=(("walls.gain", 2.5), ("admittance.damping", 40.0)))
    stab = Path(yaml.safe_load(path.read_text())["stabilizer"])
    assert stab.parent == tmp_path
    cfg = yaml.safe_load(stab.read_text())
    assert (cfg["walls"]["gain"], cfg["admittance"]["damping"]) == (2.5, 40.0)
    load_config(stab)
