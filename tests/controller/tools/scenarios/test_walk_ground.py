"""``bipd scenario walk`` on ground it was not told about: the push delivers the asked impulse, the
arguments' errors name the argument, the single-support time comes from the gait file, and the
results table says what ran."""
from __future__ import annotations

import mujoco
import numpy as np
import pytest

from controller.tools.scenarios.cli import main
from controller.tools.scenarios.results import GROUNDS, _outcome, ground_markdown
from controller.tools.scenarios.walk import (PUSH_BODY, PUSH_S, PUSH_SIDES, mid_single_support,
                                             parse_push)
from controller.tools.scenarios.whole_body import PUSH_DIRECTIONS
from drivers.sim.hil.plant_biped import BipedPlant
from models.tree.config import load_tree

from tests.paths import ROBOTS


@pytest.mark.hil
@pytest.mark.parametrize("spec", ["12@0:forward", "7.5@0:left", "4@0:back"])
def test_the_push_delivers_the_asked_impulse_to_the_robot(spec):
    """BIP 2000 floating in MuJoCo without gravity, motors off: the whole robot's momentum change
    (subtree mass × subtree CoM velocity of the pelvis) after the push is its impulse, within 1 %."""
    push = parse_push(spec)
    plant = BipedPlant(load_tree(ROBOTS / "bip2000.yaml"))
    m, d = plant.mj_model, plant.mj_data
    m.opt.gravity[:] = 0.0
    d.qpos[2] += 1.0                                          # well above the floor
    d.qvel[:] = 0.0
    mujoco.mj_forward(m, d)
    pelvis = m.body(PUSH_BODY).id
    plant.control({"op": "push", "body": PUSH_BODY, "duration": PUSH_S,
                   "force": [push.force_N * c for c in PUSH_DIRECTIONS[PUSH_SIDES[push.direction]]]})
    for _ in range(100):                                      # 0.2 s: the push and as long again
        plant.step(2.0e-3, np.zeros(plant.n_motors))
    mujoco.mj_subtreeVel(m, d)
    momentum = m.body_subtreemass[pelvis] * d.subtree_linvel[pelvis]
    expected = push.impulse_Ns * np.array(PUSH_DIRECTIONS[PUSH_SIDES[push.direction]])
    assert np.allclose(momentum, expected, rtol=0.0, atol=0.01 * push.impulse_Ns)


@pytest.mark.parametrize("argv, problem", [
    (["--floor-pitch", "45"], "--floor-pitch 45.0: floor pitch 45 deg: must be within"),
    (["--floor-roll", "nan"], "--floor-roll nan"),
    (["--floor-step", "2cm@1"], "--floor-step 2cm@1: '2cm@1': expected HEIGHT@X"),
    (["--floor-step", "0.01@9"], "--floor-step 0.01@9: step distance 9 m"),
    (["--push", "10"], "--push '10': expected NS@T[:DIRECTION]"),
    (["--push", "10@5:up"], "unknown direction 'up'"),
    (["--push", "0@5"], "the impulse must be > 0 N s"),
    (["--hung", "--floor-pitch", "2"], "(--hung) never reaches the floor"),
    (["--hung", "--push", "5@1"], "--push: the pelvis hung from the gantry"),
    (["--stabilizer", "wbc"], "--stabilizer wbc: no such stabilized walk"),
    (["--stabilizer", "wbc", "--no-stabilizer"], "not allowed with argument"),
])
def test_ground_argument_errors_exit_2_in_one_line_naming_the_argument(argv, problem, capsys):
    with pytest.raises(SystemExit) as e:
        main(["walk", *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and problem in err[-1], err


def test_push_parses_impulse_time_and_direction():
    p = parse_push(" 10 @ 5.2 : left ")
    assert (p.impulse_Ns, p.at_s, p.direction, p.force_N) == (10.0, 5.2, "left", pytest.approx(100.0))
    assert parse_push("3@1").direction == "forward"


def test_mid_single_support_is_read_from_the_support_column(tmp_path):
    gait = tmp_path / "g.csv"
    rows = [f"{0.1 * k:.1f},0,{s}" for k, s in enumerate(["double"] * 3 + ["left"] * 4 + ["double", "right"])]
    gait.write_text("# comment\nt,q,support\n" + "\n".join(rows) + "\n")
    assert mid_single_support(gait) == pytest.approx(0.5 * (0.3 + 0.7))
    gait.write_text("t,q,support\n0,0,double\n0.1,0,double\n")
    with pytest.raises(Exception, match="no single-support phase"):
        mid_single_support(gait)


def test_the_table_says_no_stabilized_walk_ran():
    """A run without a stabilized walk leaves the 'with' column n/a with its reason, never a copy of
    the open-loop figures."""
    walk = {"fell": False, "fell_at_s": None, "completed": True, "aborted": None, "distance_m": 0.41,
            "following_error_max_deg": 1.0, "min_zmp_margin_m": 0.0367}
    res = {"steps": 2, "speed_m_h": 360.0, "date": "d", "machine": "m", "step_x_m": 0.175, "push_at_s": 5.2,
           "grounds": {label: [walk] for label, _ in GROUNDS},
           "walk_pushes": [{"direction": d, "held_Ns": 10.0, "fell_Ns": 15.0} for d in ("forward", "left")],
           "standing_pushes": [{"direction": "forward", "stabilizer": s, "impulse_Ns": 50.0, "fell_N": 562.5}
                               for s in (True, False)]}
    table = ground_markdown(res)
    rows = [r for r in table.splitlines() if r.startswith("| ") and "---" not in r][1:]
    assert len(rows) == len(GROUNDS) + 3
    for row in rows[:-1]:
        assert row.endswith("| n/a: no stabilized walk in this run |")
    assert "completed, 0.41 m; FE 1.00°; ZMP 36.7 mm |" in rows[0]        # no slope known: none said
    assert rows[-1].endswith("| 50.0 N s (falls at 56.2) | 50.0 N s (falls at 56.2) |")
    res["grounds"]["flat"] = [dict(walk, estimated_slope_deg={"pitch": 2.046, "roll": -0.037})]
    assert "completed, 0.41 m; FE 1.00°; ZMP 36.7 mm; slope est. +2.05° / -0.04° |" in ground_markdown(res)


def test_a_failed_run_costs_its_own_cell_not_the_table():
    """One run raising (a HIL that would not start, say) is said and shown in its cell, named; the
    other rows keep their figures."""
    from concurrent.futures import Future
    said: list[str] = []
    bad: Future = Future()
    bad.set_exception(RuntimeError("the HIL server did not answer"))
    good: Future = Future()
    good.set_result({"direction": "forward", "held_Ns": 10.0, "fell_Ns": 15.0})
    failed = _outcome(bad, "flat", said.append)
    assert failed == {"error": "RuntimeError: the HIL server did not answer"}
    push_failed = _outcome(bad, "push", said.append, direction="left", stabilizer="whole-body")
    assert push_failed == {"direction": "left", "stabilizer": "whole-body", "error": failed["error"]}
    standing_failed = dict(push_failed, direction="forward", stabilizer=True)
    assert said[0] == "flat: the run failed: RuntimeError: the HIL server did not answer"
    walk = {"fell": False, "fell_at_s": None, "completed": True, "aborted": None, "distance_m": 0.41,
            "following_error_max_deg": 1.0, "min_zmp_margin_m": 0.0367}
    res = {"steps": 2, "speed_m_h": 360.0, "date": "d", "machine": "m", "step_x_m": 0.175, "push_at_s": 5.2,
           "grounds": {label: [walk, failed] for label, _ in GROUNDS},
           "walk_pushes": [_outcome(good, "push", said.append), push_failed],
           "standing_pushes": [standing_failed, {"direction": "forward", "stabilizer": False, "impulse_Ns": 50.0,
                                        "fell_N": 562.5}]}
    rows = [r for r in ground_markdown(res).splitlines() if r.startswith("| ") and "---" not in r][1:]
    assert "completed, 0.41 m; FE 1.00°" in rows[0] and rows[0].endswith(
        "| run failed (RuntimeError: the HIL server did not answer) |")
    assert "10.0 N s (falls at 15.0)" in rows[len(GROUNDS)]
    assert rows[len(GROUNDS) + 1].endswith("| n/a: no stabilized walk in this run |")   # left: only its failed run
    assert "run failed (RuntimeError" in rows[len(GROUNDS) + 1]
    assert rows[-1].endswith("| 50.0 N s (falls at 56.2) | run failed (RuntimeError: the HIL server did not answer) |")
