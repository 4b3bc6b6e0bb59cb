"""A standing push the held posture does not survive and the whole-robot stabilizer does: BIP 2000 on both
feet on the level platform in the HIL (drivers.sim.hil.plant_biped), 62.5 N·s forward on the pelvis (625 N
for 0.1 s; 1.19 times the held posture's largest), stepped lock-step (host-independent: two runs give the same figures to the last digit). The held
posture's largest forward push is 52.5 N·s (it falls on the rebound at 53.75: docs/stabilizer.md "Pushes").
The stabilizer runs the deployed YAML: the capture-point strategies with the soles' pressure observer and
their gate (without the observer the strategies fall from 55 N·s), and recovery steps of 0.4 s taken only
for a need that lasts ``step_delay`` (docs/stabilizer.md, "The step's trigger"); the stepping runs set the
same swing explicitly. At 60 N·s forward the robot tips forward and rebounds, and the gated strategies
capture the rebound with both soles down: no step is planned (engaged on the deadband alone, the strategies
stepped the right foot back under the rebound's capture point, ending 63 mm outside the first polygon).
Sideways, 62.5 N·s left (the held posture falls at 52.5; the strategies and the observer without the
sideways step fall at 62.5, the right sole lifting 10.2 mm): the sole the push lifts swings and the robot
stands (docs/stabilizer.md "The sideways step"), its step ungraded by the gyro (eq. P10). 75 N·s left and right
with the shipped YAML (the gyro's tipping point grading the sideways step in full: docs/stabilizer.md "The
sideways step graded by the gyro") stand; with roll_span 0 (the step ungraded) 75 N·s left falls at 2.94 s,
and before the daemon's models followed the stabilizer's stance sole 75 N·s right faulted (|τ| beyond the
hard limit on l_ankle_lateral at 2.12 s). 75 N·s forward with the shipped YAML stands on the trunk spun into
the fall and the forward step the gyro's tipping point fires, then the rear foot's step up beside it
(docs/stabilizer.md, "75 N·s forward: the trunk spin and the forward step together"); without them it falls at
2.71 s. The runs go concurrently."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from controller.tools.scenarios.whole_body import PelvisPush, WholeBodyOptions, push_strategies, run_whole_body

pytest.importorskip("mujoco", reason="the HIL bench needs the sim extra: pip install 'bipd[sim]'")

pytestmark = pytest.mark.hil

PUSH, STEPPED_PUSH = PelvisPush(625.0, "forward", 0.1), PelvisPush(600.0, "forward", 0.1)
SIDE_PUSH = PelvisPush(625.0, "left", 0.1)
RUNS = {"held": (PUSH, WholeBodyOptions(stabilizer=False)),
        "observer": (PUSH, WholeBodyOptions(stabilizer_set=push_strategies(True, observer_rate=20.0))),
        "stepping": (STEPPED_PUSH, WholeBodyOptions(stabilizer_set=push_strategies(True, observer_rate=20.0,
                                                                                  step_time=0.4))),
        "sideways": (SIDE_PUSH, WholeBodyOptions(stabilizer_set=push_strategies(True, observer_rate=20.0,
                                                                               step_time=0.4)))}


@pytest.fixture(scope="module")
def runs():
    with ThreadPoolExecutor(len(RUNS)) as pool:
        out = {k: pool.submit(run_whole_body, push, o) for k, (push, o) in RUNS.items()}
        return {k: f.result() for k, f in out.items()}


def test_the_held_posture_falls(runs):
    held = runs["held"]
    assert held.states[0] == "HOLD"
    assert held.fell, held.fall_reason


def test_the_stabilizer_keeps_the_robot_standing(runs):
    r = runs["observer"]
    assert r.aborted is None and not r.fell, (r.fall_reason, r.aborted)
    assert r.states == ["STABILIZING"]
    assert r.min_cog_margin_m > 0.0


def test_with_recovery_steps_allowed_the_gated_strategies_need_none(runs):
    r = runs["stepping"]
    assert r.aborted is None and not r.fell, (r.fall_reason, r.aborted)
    assert r.recovery_steps == [] and "recovery_step" not in r.stab_flags
    assert "ankle_strategy" in r.stab_flags         # the gate opened on the push
    assert r.max_stance_lift_m < 0.01               # both soles stayed down
    assert r.min_cog_margin_m > 0.0


def test_a_sideways_push_is_answered_by_the_lifting_sole_stepping(runs):
    r = runs["sideways"]
    assert r.aborted is None and not r.fell, (r.fall_reason, r.aborted)
    assert [s["foot"] for s in r.recovery_steps] == ["right"]      # the sole the push lifted, not the loaded one
    assert r.max_stance_lift_m < 0.01               # the left sole stayed down
    assert abs(r.recovery_steps[0]["target"][1]) < 0.21   # today's width (0.2 m): the grade stays 0 (eq. P10)


@pytest.fixture(scope="module")
def graded():
    pushes = {side: PelvisPush(750.0, side, 0.1) for side in ("left", "right", "forward")}
    with ThreadPoolExecutor(len(pushes)) as pool:
        out = {k: pool.submit(run_whole_body, push, WholeBodyOptions()) for k, push in pushes.items()}
        return {k: f.result() for k, f in out.items()}


@pytest.mark.parametrize("side, swing, stance_e2", [("left", "right", 0.0), ("right", "left", -0.2)])
def test_a_75_Ns_sideways_push_stands_on_the_step_the_gyro_grades_in_full(graded, side, swing, stance_e2):
    """The lifting sole swings graded in full: it lands roll_width (0.45 m) from the stance sole's centre
    (e2 of the double support's root, the left sole), no drive faults, both soles' fall tests pass."""
    r = graded[side]
    assert r.aborted is None and not r.fell, (r.fall_reason, r.aborted)
    assert r.recovery_steps and {s["foot"] for s in r.recovery_steps} == {swing}
    assert abs(r.recovery_steps[0]["target"][1] - stance_e2) == pytest.approx(0.45, abs=0.005)


def test_a_75_Ns_forward_push_stands_on_the_spin_and_two_forward_steps(graded):
    """1.5x the held posture's 50 N·s (the results' table): the trunk spun into the fall (the hip strategy,
    eq. P11), then the right sole steps ahead (eq. P12: landing 0.2-0.3 m in front of the left one, tip_width
    0.08 m across) and the left one up beside it; no drive faults, both soles' fall tests pass."""
    r = graded["forward"]
    assert r.aborted is None and not r.fell, (r.fall_reason, r.aborted)
    assert r.states == ["STABILIZING"]
    assert "hip_strategy" in r.stab_flags
    assert [s["foot"] for s in r.recovery_steps] == ["right", "left"]
    front = r.recovery_steps[0]["target"]
    assert 0.2 < front[0] < 0.3 and front[1] == pytest.approx(-0.08, abs=0.005)
