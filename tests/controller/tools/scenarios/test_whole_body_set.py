"""``bipd scenario whole-body --set KEY=VALUE``: a stabilizer YAML key set in the run's copy (the way the
sideways-push laws of docs/stabilizer.md were measured), checked before any process starts."""
from __future__ import annotations

import pytest

from controller.tools.scenarios import whole_body
from controller.tools.scenarios.cli import main
from controller.tools.scenarios.runner import write_config
from stabilizer.whole_body_config import load_config


class Started(Exception):
    """A run would start here."""


@pytest.fixture
def no_bench(monkeypatch):
    """run_whole_body replaced: the options a run would get, and no process."""
    seen = []

    def run(scenario, o, *_a, **_k):
        seen.append(o)
        raise Started
    monkeypatch.setattr(whole_body, "run_whole_body", run)
    return seen


@pytest.mark.parametrize("item, problem", [
    ("push.step_width", "--set 'push.step_width': expected KEY=VALUE"),
    ("=0.2", "--set '=0.2': expected KEY=VALUE"),
    ("push..step_width=0.2", "--set 'push..step_width=0.2': expected KEY=VALUE"),
    ("push.step_width=[0.2", "the value is not a YAML scalar"),
    ("push.step_widht=0.2", "push.step_widht: unknown key"),
    ("push.step_width=-0.2", "push.step_width: must be in [0.0, inf], got -0.2"),
])
def test_a_bad_key_or_value_is_refused_before_anything_starts(item, problem, no_bench, capsys):
    with pytest.raises(SystemExit) as e:
        main(["whole-body", "--push", "100", "--set", item])
    err = capsys.readouterr().err
    assert e.value.code == 2 and problem in err and "Traceback" not in err, err
    assert no_bench == []


def test_the_keys_reach_the_runs_stabilizer_yaml_after_the_push_flags(no_bench, tmp_path):
    """--push-step 0.4 sets push.step_time; a later --set of the same key wins, and the copy the daemon
    reads validates with both values (a number and a word)."""
    with pytest.raises(Started):
        main(["whole-body", "--push", "100", "--push-step", "0.4", "--set", "push.step_time=0.3",
              "--set", "push.step_width=0.2", "--set", "support.source=sensors"])
    (o,) = no_bench
    daemon, _ = write_config(o.config, True, tmp_path, stabilizer_set=o.stabilizer_set)
    cfg = load_config(tmp_path / "stabilizer.yaml")
    assert (cfg.push.step_time, cfg.push.step_width, cfg.support_source) == (0.3, 0.2, "sensors")
    assert daemon.read_text().count(str(tmp_path / "stabilizer.yaml")) == 1
