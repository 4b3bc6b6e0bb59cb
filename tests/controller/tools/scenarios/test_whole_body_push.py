"""A standing push the held posture does not survive and the whole-robot stabilizer does (its fields
keep the CoG's margin; the capture-point strategies are off as deployed: with them the run stands
the same, docs/stabilizer.md "Pushes"): BIP 2000 on both feet on the level
platform in the HIL (drivers.sim.hil.plant_biped), 53.75 N·s forward on the pelvis (537.5 N for 0.1 s),
stepped lock-step (host-independent). The held posture's largest forward push is 52.5 N·s (it falls
on the rebound at 53.75: docs/stabilizer.md "Pushes"); the stabilized run and the held run go concurrently."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from controller.tools.scenarios.whole_body import PelvisPush, WholeBodyOptions, run_whole_body

pytest.importorskip("mujoco", reason="the HIL bench needs the sim extra: pip install 'bipd[sim]'")

pytestmark = pytest.mark.hil

PUSH = PelvisPush(537.5, "forward", 0.1)


@pytest.fixture(scope="module")
def runs():
    with ThreadPoolExecutor(2) as pool:
        out = {s: pool.submit(run_whole_body, PUSH, WholeBodyOptions(stabilizer=s)) for s in (True, False)}
        return {s: f.result() for s, f in out.items()}


def test_the_held_posture_falls(runs):
    held = runs[False]
    assert held.states[0] == "HOLD"
    assert held.fell, held.fall_reason


def test_the_stabilizer_keeps_the_robot_standing(runs):
    r = runs[True]
    assert r.aborted is None and not r.fell, (r.fall_reason, r.aborted)
    assert r.states == ["STABILIZING"]
    assert r.min_cog_margin_m > 0.0
