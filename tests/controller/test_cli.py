"""The `bipd` command line: the demo's figures and the exit codes of bad input."""
from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from controller.cli import DEFAULT_ROBOT, main
from controller.daemon.trajectories import quintic, quintic_scalar


def test_quintic_law_endpoints_and_midpoint():
    assert quintic_scalar(0.0) == (0.0, 0.0, 0.0)
    r, dr, ddr = quintic_scalar(1.0)
    assert (r, dr, ddr) == (1.0, 0.0, 0.0)
    assert quintic_scalar(0.5)[0] == 0.5
    out = np.zeros((3, 2))
    quintic(np.zeros(2), np.array([1.0, -2.0]), 7.0, 3.5, out)
    np.testing.assert_allclose(out[0], [0.5, -1.0])
    np.testing.assert_allclose(out[1], [1.875 / 7.0, -3.75 / 7.0])   # 30/16 per unit time


def test_demo_squat_summary(capsys):
    assert main(["demo", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["cycles"] == 7001                     # 14 s at 2 ms, both ends
    assert res["within_torque_limits"] is True
    # knee carries the most torque at the bottom of the squat, the lateral ankle none
    torques = res["peak_joint_torque_Nm"]
    assert torques["knee"] > torques["ankle_sagittal"] > 10.0
    assert torques["ankle_lateral"] < 1e-6
    assert set(res["peak_motor_torque_Nm"]) == {"motor1", "motor2", "motor3", "motor4"}


def test_check_robot_reports_bad_file_with_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ngravity: [0, 0, -9.81]\njoints: []\n")
    assert main(["check-robot", str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "joints" in err and "Traceback" not in err


def test_check_robot_ok(capsys):
    assert main(["check-robot", str(DEFAULT_ROBOT)]) == 0
    assert "4 joints" in capsys.readouterr().out


def test_check_robot_tree(capsys):
    assert main(["check-robot", str(DEFAULT_ROBOT.parent / "bip2000.yaml")]) == 0
    out = capsys.readouterr().out
    assert "tree of 15 joints" in out and "105.00 kg" in out and "'left_sole'" in out


def test_check_robot_bad_tree_with_exit_2(tmp_path, capsys):
    doc = yaml.safe_load((DEFAULT_ROBOT.parent / "bip2000.yaml").read_text())
    doc["joints"][0]["parent"] = "l_foot"
    bad = tmp_path / "tree.yaml"
    bad.write_text(yaml.safe_dump(doc))
    assert main(["check-robot", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: joints[0].parent: cycle" in err and "Traceback" not in err


@pytest.mark.bench
def test_bench_models_json_has_reference_figures(capsys):
    assert main(["bench", "models", "--json", "--samples", "400", "--no-first-call"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["update"]["median_us"] > 0
    assert res["pinocchio"]["median_us"] > 0          # the reference is measured in the same run
    assert res["ratio_vs_pinocchio"]["median"] == res["update"]["median_us"] / res["pinocchio"]["median_us"]
    assert res["stabilizer"]["cycle"]["median_us"] > 0
    assert res["stabilizer"]["thesis_bnr_stabilizer_avg_us"] == 273.0
    rig = res["stewart"]                               # the Stewart-Gough rig's IK + inverse dynamics
    assert rig["samples"] == 400 and rig["bus_cycle_us"] == 400.0
    assert 0 < rig["python_call"]["median_us"] <= rig["python_call"]["p99_us"]
    assert 0 < rig["kernel_in_numba_loop"]["median_us"]


@pytest.mark.bench
def test_bench_models_on_a_tree_times_each_root_and_the_swap(capsys):
    """A tree YAML switches to the whole-robot bench: every root and the swap case,
    each path against the Pinocchio path doing the same work, one JSON object on
    stdout and nothing else there."""
    robot = DEFAULT_ROBOT.parent / "bip2000.yaml"
    assert main(["bench", "models", "--robot", str(robot), "--json", "--samples", "40"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert list(res["cases"]) == ["pelvis", "left_sole", "right_sole", "swap", "swap_soles", "floating"]
    assert res["cases"]["floating"]["n"] == res["cases"]["pelvis"]["n"] + 6
    assert res["cases"]["swap"]["roots"] == ["pelvis", "left_sole", "right_sole"]
    assert res["cases"]["swap_soles"]["roots"] == ["left_sole", "right_sole"]
    soles = ["composite", "generated_composite"]
    for case, c in res["cases"].items():
        f = c["paths"]
        on_sole = case in ("left_sole", "right_sole", "swap_soles")   # the composite models stand on a sole
        assert set(f) == {"recursive", "recursive_cycle", "pinocchio", "pinocchio_coriolis"} | (
            set(soles) if on_sole else set())
        assert c["not_applicable"] == ([] if on_sole else soles)
        assert c["ratios"]["recursive"]["reference"] == "pinocchio_coriolis"
        assert c["ratios"]["recursive_cycle"]["median"] == f["recursive_cycle"]["median_us"] / f["pinocchio"]["median_us"]
    assert res["thesis_bnr_fgm_dyn_avg_us"] == 161.6 and "stabilizer" not in res


def test_bench_models_refuses_bad_input_with_exit_2(tmp_path, capsys):
    """No samples, or a tree YAML with a cycle: one sentence naming the problem, no
    traceback, nothing timed."""
    assert main(["bench", "models", "--samples", "0"]) == 2
    assert "--samples must be at least 1 (got 0)" in capsys.readouterr().err
    doc = yaml.safe_load((DEFAULT_ROBOT.parent / "bip2000.yaml").read_text())
    doc["joints"][0]["parent"] = "l_foot"
    bad = tmp_path / "tree.yaml"
    bad.write_text(yaml.safe_dump(doc))
    assert main(["bench", "models", "--robot", str(bad), "--json"]) == 2
    out = capsys.readouterr()
    assert f"{bad}: joints[0].parent: cycle" in out.err and "Traceback" not in out.err and out.out == ""


def test_run_refuses_a_stepped_loop_without_lockstep(tmp_path, capsys):
    """loop.stepped without lock-step is a config error naming the key; no daemon starts."""
    import yaml

    from controller.cli import DEFAULT_CONFIG
    doc = yaml.safe_load(DEFAULT_CONFIG.read_text())
    for key in ("robot", "stabilizer"):
        doc[key] = str((DEFAULT_CONFIG.parent / doc[key]).resolve())
    doc["loop"].update(lockstep=False, stepped=True)
    cfg = tmp_path / "bipd.yaml"
    cfg.write_text(yaml.safe_dump(doc))
    assert main(["run", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert f"{cfg}" in err and "loop.stepped" in err and "Traceback" not in err
