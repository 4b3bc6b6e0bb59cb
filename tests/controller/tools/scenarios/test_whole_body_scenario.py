"""BIP 2000 on the tilting platform in the HIL, end to end (controller.tools.scenarios.whole_body): the
biped plant on the plate (drivers.sim.hil.plant_biped) and the daemon with the whole-robot stabilizer
(deploy/bip2000_platform.yaml) over the udp backend, stepped lock-step, operated through ZMQ.
Shortened: a 10° roll in a 3 s quintic, 0.5 s hold, back. The stabilized run and the posture-held
run go concurrently; each is compared with the other, not with a constant."""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import pytest

from controller.tools.scenarios.whole_body import PlatformTilt, WholeBodyOptions, run_whole_body

pytest.importorskip("mujoco", reason="the HIL bench needs the sim extra: pip install 'bipd[sim]'")

pytestmark = pytest.mark.hil

TILT = PlatformTilt(math.radians(10.0), 0.0, 3.0, 0.5)


@pytest.fixture(scope="module")
def runs():
    with ThreadPoolExecutor(2) as pool:
        out = {s: pool.submit(run_whole_body, TILT, WholeBodyOptions(stabilizer=s)) for s in (True, False)}
        return {s: f.result() for s, f in out.items()}


def test_the_stabilizer_holds_the_robot_on_the_tilted_platform(runs):
    r = runs[True]
    assert r.aborted is None and not r.fell, (r.fall_reason, r.aborted)
    assert r.states == ["STABILIZING"]
    assert r.min_cog_margin_m > 0.0


def test_the_held_posture_keeps_a_smaller_cog_margin(runs):
    held, stab = runs[False], runs[True]
    assert held.states[0] == "HOLD"
    assert held.min_cog_margin_m < stab.min_cog_margin_m
