"""The pelvis estimate with and without the pelvis rate gyro in the loop (stabilizer.pelvis_state eq. 3-5,
controller.daemon.loop.estimation): BIP 2000 on the in-process MuJoCo biped plant standing on the floor
(deploy/bip2000.yaml, control.support: ground, its posture held), lock-step, shoved forward 50 N s on the
pelvis; the soles tip about their toes while the joints hold. The estimate's pelvis orientation against the
plant's (imu_orientation) over the 0.5 s after the push."""
from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
import yaml

from controller.daemon.codes import State
from controller.daemon.config import load_daemon_config
from controller.daemon.shm import Cmd

from tests.controller.daemon.loop_harness import Harness
from tests.paths import DEPLOY

pytest.importorskip("mujoco", reason="the biped plant needs the sim extra: pip install 'bipd[sim]'")

pytestmark = pytest.mark.hil

CONFIG = DEPLOY / "bip2000.yaml"
PUSH_N, PUSH_S, AFTER_S = 500.0, 0.1, 0.5


def _tilt_errors(tmp_path, gyro: bool) -> np.ndarray:
    """Per cycle from the push on, the angle (deg) between the estimate's pelvis rotation and the plant's."""
    doc = yaml.safe_load(CONFIG.read_text())
    doc["robot"] = str(CONFIG.parent / doc["robot"])
    doc["control"]["support"] = "ground"
    if not gyro:
        for node in doc["bus"]["nodes"]:
            for axis in node["axes"]:
                if axis.get("sensor") == "pelvis_gyro":
                    del axis["sensor"]
    tmp_path.mkdir()
    path = tmp_path / "bipd.yaml"
    path.write_text(yaml.safe_dump(doc))
    h = Harness(config=load_daemon_config(path, backend="sim", lockstep=True))
    try:
        plant, est = h.bus.network.plant, h.loop.est.pelvis
        assert h.command(Cmd.ENABLE)[0]
        h.run(300, until=lambda: h.state == State.HOLD)
        h.run(round(1.0 / h.loop.period), heartbeat_every=1)
        assert plant.control({"op": "push", "body": "pelvis", "force": [PUSH_N, 0.0, 0.0], "duration": PUSH_S})["ok"]
        out, R = [], np.zeros(9)
        for _ in range(round(AFTER_S / h.loop.period)):
            h.run(1, heartbeat_every=1)
            mujoco.mju_quat2Mat(R, plant.sensors["imu_orientation"])
            c = (np.trace(R.reshape(3, 3).T @ est.R) - 1.0) / 2.0
            out.append(math.degrees(math.acos(min(1.0, c))))
        assert plant.sensors["fallen"] == 0.0
        return np.array(out)
    finally:
        h.close()


def test_the_gyro_follows_the_pelvis_through_a_push(tmp_path):
    """Without the gyro the estimate's anchor is a flat sole and its orientation misses the tip (measured
    2.67 deg); with it the orientation stays within 0.2 deg of the plant's (measured 0.13 deg: what is left
    1.6 s after the start of the gravity correction's start-up, eq. 4)."""
    without, with_gyro = _tilt_errors(tmp_path / "a", False), _tilt_errors(tmp_path / "b", True)
    print(f"pelvis orientation error through a {PUSH_N * PUSH_S:g} N s push: {without.max():.3f} deg without the "
          f"gyro, {with_gyro.max():.3f} deg with it")
    assert without.max() > 1.0
    assert with_gyro.max() < 0.2
