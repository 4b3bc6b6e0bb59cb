"""`bipd bench loop --period`: the period reaches both the loop and the bus of the daemon it
starts (one bus cycle per control cycle at 0.0004 s), and a period the loop cannot run is refused
before anything starts. No daemon runs here: the start is intercepted."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from controller.tools import bench
from controller.cli import main
from tests.paths import DEPLOY



class Started(Exception):
    """The daemon would start now (with this configuration)."""


@pytest.mark.parametrize("config, period, moves", [("bip2000.yaml", 0.0004, True), ("bipd.yaml", None, False)])
def test_the_period_reaches_loop_and_bus(monkeypatch, config, period, moves):
    seen = {}

    def popen(argv, **_kw):
        seen.update(yaml.safe_load(Path(argv[argv.index("--config") + 1]).read_text()))
        raise Started

    monkeypatch.setattr(bench.subprocess, "Popen", popen)
    with pytest.raises(Started):
        bench.run(DEPLOY / config, seconds=1.0, period=period)
    expected = period or 0.002
    assert seen["loop"]["period_s"] == expected and seen["bus"]["control_period_s"] == expected
    assert seen["bus"]["cycle_time_s"] == 0.0004 and seen["bus"]["backend"] == "sim"
    assert ("stabilizer" not in seen) == moves                     # BIP 2000: the joint-moves workload


def test_a_period_the_loop_cannot_run_is_refused(monkeypatch, capsys):
    monkeypatch.setattr(bench.subprocess, "Popen", lambda *_a, **_k: pytest.fail("a daemon would start"))
    assert main(["bench", "loop", "--config", str(DEPLOY / "bip2000.yaml"), "--period", "0.0001"]) == 2
    err = capsys.readouterr().err
    assert err == "bipd bench loop: error: --period must be in [0.0002, 0.1] s (got 0.0001)\n"


def test_a_stabilizer_config_keeps_its_period(monkeypatch, capsys):
    """The bench leg's stabilizer YAML runs at the loop's 2 ms only: another period is refused, named."""
    monkeypatch.setattr(bench.subprocess, "Popen", lambda *_a, **_k: pytest.fail("a daemon would start"))
    config = DEPLOY / "bipd.yaml"
    assert main(["bench", "loop", "--config", str(config), "--period", "0.0004"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"bipd: error: {config}: stabilizer: --period 0.0004 s: the stabilizer YAML") and "\n" == err[-1]
