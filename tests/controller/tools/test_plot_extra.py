"""Plots without matplotlib: `bipd scenario --plot`, `bipd plot` and `bipd demo --plot` say
which extra to install, with exit code 2, before anything runs; a plotting failure after
a scenario comes after its result is out."""
from __future__ import annotations

import json
import sys

import pytest

from controller import cli
from controller.tools.scenarios import cli as scenario_cli
from controller.tools.scenarios import runner
from controller.tools.scenarios.metrics import ScenarioResult


@pytest.fixture
def no_matplotlib(monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)        # import matplotlib -> ImportError


def test_scenario_plot_without_matplotlib_stops_before_running(no_matplotlib, monkeypatch, tmp_path, capsys):
    def never(*a, **k):
        raise AssertionError("the scenario ran")
    monkeypatch.setattr(scenario_cli, "run_scenario", never)
    assert scenario_cli.main(["squat", "--plot", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == ("bipd scenario: error: --plot needs matplotlib, which is not installed: "
                           "pip install 'bipd[plot]'")


def test_bipd_plot_and_demo_without_matplotlib(no_matplotlib, tmp_path, capsys):
    assert cli.main(["plot", str(tmp_path)]) == 2
    assert "bipd plot: error: needs matplotlib" in capsys.readouterr().err
    assert cli.main(["demo", "--plot", str(tmp_path / "d.png")]) == 2
    assert "pip install 'bipd[plot]'" in capsys.readouterr().err


def test_bipd_plot_of_a_folder_that_is_no_log_is_one_line(tmp_path, capsys):
    assert cli.main(["plot", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"bipd plot: error: {tmp_path} is not a cycle log: no file or cycles.mcap there (and no run-* folder holds one)"


class FakeSession:
    """A bench whose run succeeds and whose plotting breaks."""
    def __init__(self, options, say) -> None:
        self.options = options

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def run(self, scenario):
        return ScenarioResult(scenario="squat", params={}, stabilizer=False, lockstep=True, fell=False,
                              fall_reasons=[], min_cog_margin_m=0.05, min_cop_margin_m=0.04,
                              max_tracking_error_deg=0.01, max_tracking_error_joint="knee", max_foot_tilt_deg=0.1,
                              max_foot_lift_m=0.0, min_hip_height_m=0.6, overruns=0, missed_cycles=0,
                              tasks_us={}, sim_s=1.0, wall_s=1.0, speed_x_realtime=1.0, states=["HOLD"], faults=[])

    def plot(self, name, out):
        raise runner.PlotError(f"the plots in {out} could not be drawn (RuntimeError: boom); "
                               "the result above is complete")


def test_plot_failure_comes_after_the_json_result(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(runner, "Session", FakeSession)
    monkeypatch.setattr(scenario_cli, "run_scenario", runner.run_scenario)
    assert scenario_cli.main(["squat", "--json", "--plot", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    res = json.loads(out)
    assert res["scenario"] == "squat" and res["fell"] is False
    assert res["plots"] == [str(tmp_path / f"squat_{k}.png") for k in ("support", "tracking", "platform")]
    assert err.strip().startswith(f"bipd scenario: error: the plots in {tmp_path} could not be drawn")
