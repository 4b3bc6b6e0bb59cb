"""BIP 2000 on the Stewart–Gough rig in the HIL, end to end: the biped plant on the rig's plate
(drivers.sim.hil.plant_biped with ``rig``) and the daemon with the whole-robot stabilizer driving the
rig's six CSP axes (deploy/bip2000_rig.yaml) over the udp backend, stepped lock-step, operated
through ZMQ (controller.tools.scenarios.whole_body with the rig scenario's RigMotion). A gentle ground
motion: 20 mm lateral (the rig's y: the robot's left) at 0.5 Hz, two cycles."""
from __future__ import annotations

import numpy as np
import pytest

from controller.daemon.rig.spec import motion_from_spec
from controller.tools.scenarios.rig import RigMotion
from controller.tools.scenarios.whole_body import WholeBodyOptions, run_whole_body
from tests.paths import DEPLOY

pytest.importorskip("mujoco", reason="the HIL bench needs the sim extra: pip install 'bipd[sim]'")

pytestmark = pytest.mark.hil

CONFIG = DEPLOY / "bip2000_rig.yaml"
MOTION = RigMotion("sinusoid:axis=y,amplitude=0.02,frequency=0.5,cycles=2")


def commanded_travel(spec: str) -> np.ndarray:
    """The (x, y, z) range of the motion's commanded plate position, sampled every millisecond."""
    motion, x, v, a = motion_from_spec(spec), np.zeros(6), np.zeros(6), np.zeros(6)
    poses = []
    for t in np.arange(0.0, motion.duration + 1e-9, 1e-3):
        motion.at(t, x, v, a)
        poses.append(x[:3].copy())
    return np.ptp(poses, axis=0)


def test_bip2000_stands_through_a_gentle_rig_motion_and_the_plate_follows_it():
    r = run_whole_body(MOTION, WholeBodyOptions(config=CONFIG, stabilizer=True))
    assert r.aborted is None and not r.fell, (r.fall_reason, r.aborted)
    assert r.states == ["STABILIZING"]
    assert r.min_cog_margin_m > 0.0
    # the plant's plate (MuJoCo truth, not the loop's reference) covers the commanded travel (36.4 mm
    # along y: the sinusoid's envelope) within 0.5 mm, and only along y
    np.testing.assert_allclose(r.plate_travel_m, commanded_travel(MOTION.motion), atol=5e-4)
