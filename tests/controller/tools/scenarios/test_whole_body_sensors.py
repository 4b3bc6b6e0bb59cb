"""BIP 2000's pelvis IMU and feet load cells feeding the whole-robot stabilizer in the HIL, end to end
(controller.tools.scenarios.whole_body: the biped plant on the tilting plate and the daemon of
deploy/bip2000_platform.yaml over the udp backend, stepped lock-step, operated through ZMQ).

* ``tilt.source: imu``: a 10° roll in the thesis' 7 s quintic, 1 s hold, back. With the posture held the
  robot falls; with the stabilizer fed by the pelvis IMU (no platform angle) it holds, and the tilt the
  loop takes from the IMU (telemetry ``tilt``) follows the plate's hinges.
* ``support.source: sensors``: on the left foot (the right one lifted 4 cm by the posture moves) the loop
  senses single support from the loads before the stabilizer starts, and the stabilizer, fed by them,
  holds a 5° roll in that support; on both feet it stands through the thesis' tilt (10° roll, 20° pitch,
  7 s quintics, 1 s hold, back) as on the command's support, though each sole's cells away from its centre
  of pressure read ~0 or pull (the polygon is the sole outlines of the feet in contact)."""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import pytest

from controller.tools.scenarios.whole_body import PlatformTilt, WholeBodyOptions, run_whole_body

pytest.importorskip("mujoco", reason="the HIL bench needs the sim extra: pip install 'bipd[sim]'")

pytestmark = pytest.mark.hil

ROLL = PlatformTilt(math.radians(10.0), 0.0, 7.0, 1.0)
THESIS = PlatformTilt(math.radians(10.0), math.radians(20.0), 7.0, 1.0)


@pytest.fixture(scope="module")
def runs():
    cases = {"imu": (ROLL, WholeBodyOptions(tilt_source="imu")),
             "held": (ROLL, WholeBodyOptions(stabilizer=False)),
             "sensors": (PlatformTilt(math.radians(5.0), 0.0, 3.0, 0.5),
                         WholeBodyOptions(support="left", support_source="sensors")),
             "thesis": (THESIS, WholeBodyOptions(support_source="sensors"))}
    with ThreadPoolExecutor(2) as pool:
        out = {k: pool.submit(run_whole_body, *case) for k, case in cases.items()}
        return {k: f.result() for k, f in out.items()}


def test_the_stabilizer_on_the_pelvis_imu_holds_a_tilt_the_held_posture_falls_at(runs):
    held, imu = runs["held"], runs["imu"]
    assert held.fell, held
    assert imu.aborted is None and not imu.fell, (imu.fall_reason, imu.aborted)
    assert imu.states == ["STABILIZING"] and imu.min_cog_margin_m > 0.0
    # measured: 0.77° at most (the observer's low-pass lags the turn; 0.18° at the hold), against
    # the hinges' 10°
    assert imu.max_tilt_error_deg < 1.5, imu.max_tilt_error_deg
    assert held.max_tilt_error_deg == 0.0                    # platform source: the hinges themselves


def test_the_feet_loads_show_single_support_and_the_stabilizer_holds_on_them(runs):
    r = runs["sensors"]
    assert r.aborted is None and not r.fell, (r.fall_reason, r.aborted)
    assert r.contacts[-1] == "left" and "left" in r.contacts[:3], r.contacts   # the lift, sensed
    assert set(r.supports) == {"left"}, r.supports
    assert "support_disagrees" not in r.stab_flags and "loads_implausible" not in r.stab_flags
    assert r.states == ["STABILIZING"] and r.min_cog_margin_m > 0.0


def test_on_the_feet_loads_the_stabilizer_stands_through_the_thesis_tilt(runs):
    r = runs["thesis"]
    assert r.aborted is None and not r.fell, (r.fall_reason, r.aborted)
    assert r.states == ["STABILIZING"] and set(r.supports) == {"double"}, (r.states, r.supports)
    assert "no_support" not in r.stab_flags, r.stab_flags
    # measured: 17.5 mm, the command's support's figure (docs/multi_cog.md, section 9); the loaded-cell
    # polygon collapsed and the robot fell, 0.46 m outside
    assert r.min_cog_margin_m > 0.01, r.min_cog_margin_m
