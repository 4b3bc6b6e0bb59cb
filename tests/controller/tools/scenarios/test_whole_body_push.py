"""A standing push the held posture does not survive and the whole-robot stabilizer does, by a recovery
step: BIP 2000 on both feet on the level platform in the HIL (drivers.sim.hil.plant_biped), 60 N·s forward
on the pelvis (600 N for 0.1 s), stepped lock-step (host-independent: two runs give the same figures to the
last digit). The held posture's largest forward push is 52.5 N·s (it falls on the rebound at 53.75:
docs/stabilizer.md "Pushes"); the stabilizer here runs the capture-point strategies with the soles'
pressure observer and recovery steps (``bipd scenario whole-body --push-strategies --push-observer 20
--push-step 0.4``): the robot tips forward, rebounds, and the right foot steps back under the rebound's
capture point. The stabilized run and the held run go concurrently."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from controller.tools.scenarios.whole_body import PelvisPush, WholeBodyOptions, push_strategies, run_whole_body

pytest.importorskip("mujoco", reason="the HIL bench needs the sim extra: pip install 'bipd[sim]'")

pytestmark = pytest.mark.hil

PUSH = PelvisPush(600.0, "forward", 0.1)
STEPPING = push_strategies(True, observer_rate=20.0, step_time=0.4)


@pytest.fixture(scope="module")
def runs():
    with ThreadPoolExecutor(2) as pool:
        out = {s: pool.submit(run_whole_body, PUSH, WholeBodyOptions(stabilizer=s, stabilizer_set=STEPPING if s else ()))
               for s in (True, False)}
        return {s: f.result() for s, f in out.items()}


def test_the_held_posture_falls(runs):
    held = runs[False]
    assert held.states[0] == "HOLD"
    assert held.fell, held.fall_reason


def test_the_stabilizer_steps_and_keeps_the_robot_standing(runs):
    r = runs[True]
    assert r.aborted is None and not r.fell, (r.fall_reason, r.aborted)
    assert r.states == ["STABILIZING"]
    assert [s["foot"] for s in r.recovery_steps] == ["right"]
    assert "recovery_step" in r.stab_flags
    assert r.max_stance_lift_m < 0.01               # the other sole stayed down
