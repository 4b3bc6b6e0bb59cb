"""``bipd scenario results``: the README table from a results document, and its rewrite."""
from __future__ import annotations

import pytest

from controller.tools.scenarios.results import BEGIN, END, markdown, update_readme
from controller.tools.scenarios.scenarios import TILT_DIRECTIONS_DEG
from controller.tools.scenarios.runner import ScenarioError
from tests.paths import ROOT


def _results(speeds: list[float]) -> dict:
    tilts = [{"axis": axis, "stabilizer": stab, "held_deg": held, "fell_deg": fell}
             for axis, held, fell in (("pitch", 25.0, None), ("roll", 21.9, 23.4), ("combined", 25.0, None))
             for stab in (True,)]
    tilts += [{"axis": axis, "stabilizer": False, "held_deg": 9.0, "fell_deg": 10.9}
              for axis in ("pitch", "roll", "combined")]
    thesis = {"fell": False, "min_cog_margin_m": 0.0587, "max_tracking_error_deg": 0.21,
              "speed_x_realtime": speeds[0], "speeds_x_realtime": speeds}
    return {"date": "2026-11-26", "machine": "x86_64", "runs_per_search": 5, "tilts": tilts,
            "pushes": [{"direction": "forward", "impulse_Ns": 4.7, "held_N": 15.0, "fell_N": 30.0,
                        "duration_s": 0.3}, {"direction": "left", "error": "the HIL did not start"}],
            "squat": {"fell": False, "fall_reasons": [], "max_tracking_error_deg": 0.036,
                      "max_tracking_error_joint": "knee"},
            "thesis_tilt": thesis, "directions": _directions()}


def _directions() -> list[dict]:
    out = [{"alpha_deg": a, "beta_deg": b, "fell": False, "aborted": None, "min_cog_margin_m": 0.04 + 0.001 * k,
            "speed_x_realtime": 2.0 + k} for k, (a, b) in enumerate(TILT_DIRECTIONS_DEG)]
    out[5].update(fell=True, min_cog_margin_m=-0.0123)
    out[6].update(aborted="the controller went to FAULT (BUS_FAULT) at t = 3.00 s", min_cog_margin_m=None)
    return out


def test_the_speed_row_gives_the_median_and_range_against_the_target():
    table = markdown(_results([3.6, 2.9, 3.4]))
    assert "| 3.4× (meets, median of 3 runs: 2.9–3.6) |" in table
    assert "| 2.9× (misses, median of 3 runs: 2.8–3.6) |" in markdown(_results([2.8, 3.6, 2.9]))


def test_the_table_reports_brackets_limits_and_unmeasured_pushes():
    table = markdown(_results([3.2]))
    assert "| largest tilt held, pitch β | ≥ 25.0 ° (limit) | 9.0 ° (falls at 10.9) |" in table
    assert "| largest tilt held, roll α | 21.9 ° (falls at 23.4) |" in table
    assert "4.7 N s (15.0 N (falls at 30.0) for 0.3 s)" in table
    assert "| not measured: the HIL did not start |" in table
    assert "no / 58.7 mm / 0.210°" in table and "| 3.2× (meets) |" in table


def test_update_readme_rewrites_only_the_marked_block(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{BEGIN}\nold table\n{END}\noutro\n")
    update_readme(readme, "new table\n")
    assert readme.read_text() == f"intro\n{BEGIN}\nnew table\n{END}\noutro\n"
    readme.write_text("no markers\n")
    with pytest.raises(ScenarioError, match="no <!-- scenario-results -->"):
        update_readme(readme, "new table\n")


def test_eight_tilt_directions_each_held_or_fell_with_the_speed_they_ran_at():
    table = markdown(_results([3.2]))
    rows = [r for r in table.splitlines() if r.startswith("| thesis-magnitude tilt")]
    assert len(rows) == 8
    assert rows[0] == "| thesis-magnitude tilt (α, β) = (+20°, +0°), 7 s: held / min CoG margin | held / 40.0 mm | — |"
    assert rows[3].startswith("| thesis-magnitude tilt (α, β) = (+0°, -20°)") and "held / 43.0 mm" in rows[3]
    assert rows[5].startswith("| thesis-magnitude tilt (α, β) = (+10°, -20°)") and "| fell / -12.3 mm |" in rows[5]
    assert "| ended early: the controller went to FAULT (BUS_FAULT) at t = 3.00 s / n/a |" in rows[6]
    assert {(r.split("= (")[1].split(")")[0]) for r in rows} == {f"{a:+g}°, {b:+g}°" for a, b in TILT_DIRECTIONS_DEG}
    assert "stepped lock-step at 5.5× real time (median)" in table      # speeds 2..9: median 5.5
    assert "verdicts and figures do not depend on that speed" in table


@pytest.mark.parametrize("argv, page", [
    (["results", "--part", "walk"], "bip2000.md"), (["results", "--part", "leg"], "leg.md"),
    (["results", "--part", "whole-body"], "bip2000.md"), (["rig-results"], "leg.md"),
    (["rig-results", "--config", "deploy/bip2000.yaml"], "bip2000.md")])
def test_a_write_folder_without_the_page_is_refused_before_any_run(argv, page, tmp_path, monkeypatch, capsys):
    """--write into a folder without the results page: exit 2 naming the page, and nothing collected
    (a results run is minutes to hours of simulation)."""
    from controller.tools.scenarios import cli, results, rig, whole_body_results

    def never(*_a, **_k):
        raise AssertionError("a run started before --write was checked")

    for module, name in ((results, "collect"), (results, "collect_walks"), (results, "collect_ground"),
                         (whole_body_results, "collect"), (rig, "collect"), (rig, "collect_tree")):
        monkeypatch.setattr(module, name, never)
    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit) as exit_:
        cli.main([*argv, "--write", str(tmp_path)])
    assert exit_.value.code == 2
    assert f"{tmp_path / page}: no such results page to rewrite" in capsys.readouterr().err
