"""Shared fixtures of the HIL tests: the BIP leg robot and a MuJoCo plant holding its posture."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from models import Robot
from tests.paths import ROBOTS

if importlib.util.find_spec("mujoco") is None:          # the ``sim`` extra is not installed
    collect_ignore_glob = ["test_*.py"]

LEG_YAML = ROBOTS / "bip_leg.yaml"
BUS_CYCLE = 4.0e-4


@pytest.fixture(scope="session")
def robot() -> Robot:
    return Robot.from_yaml(LEG_YAML)


def run(plant, seconds: float, torque, stop_when_fallen: bool = False) -> None:
    """Step ``plant`` by bus cycles; ``torque(plant, out)`` fills the six motor torques (internal order)."""
    tau = np.zeros(6)
    for _ in range(round(seconds / BUS_CYCLE)):
        torque(plant, tau)
        plant.step(BUS_CYCLE, tau)
        if stop_when_fallen and plant.sensors["fallen"] == 1.0:
            return


def holder(robot: Robot, q_ref, platform_ref=(0.0, 0.0), *, gravity: bool = False, kp: float = 2.0,
           kd: float = 0.05):
    """Motor-side PD to the motor angles of ``q_ref`` (joint stiffness J_pᵀ kp J_p), optionally plus the
    level-floor gravity torques J_p⁻ᵀ G(q) (thesis eq. 30-32), and a PD holding the platform at
    ``platform_ref`` (rad)."""
    tr = robot.transmission
    qm_ref = tr.to_motor(np.asarray(q_ref, dtype=float))

    def torque(plant, out):
        ratio = plant.ratio
        pos, vel = plant.motor_position, plant.motor_velocity
        out[:4] = kp * (qm_ref - pos[:4]) - kd * vel[:4]
        if gravity:
            q = plant.sensors["joint_position"]
            out[:4] += tr.torque_to_motor(q, robot.gravity(q))
        out[4:] = 5.0 * (ratio * np.asarray(platform_ref) - pos[4:]) - 0.5 * vel[4:]
    return torque
