"""The MuJoCo leg standing free on the Stewart–Gough rig (drivers.sim.hil.plant_mujoco_rig): ten motors
in bus order, the rig's through its screws, and the plate's hinge-equivalent tilt (Gastebois 2017,
eq. 46) when the actuators reach the rig's inverse kinematics (Staicu 2008, eq. 8-10) of a tilt."""
from __future__ import annotations

import math

import numpy as np
import pytest

from drivers.config import BusConfigError
from drivers.sim.hil.mjcf import PLATFORM
from drivers.sim.hil.plant_mujoco_rig import MujocoRigPlant
from models.rig.stewart import StewartModel, leg_lengths
from models.rig.tilt import hinge_to_euler

from tests.drivers.sim.hil.conftest import BUS_CYCLE

RIG_AXES = tuple(f"rig_{c}" for c in "ABCDEF")
BUS = ("rig_D", "ankle_1", "rig_A", "ankle_2", "rig_F", "knee", "rig_B", "hip", "rig_E", "rig_C")   # any order
STANCE = (0.0, 0.25, -0.5, 0.25)
GEAR = 2 * math.pi / 0.02            # drivers.sim.hil.stewart_mjcf's default screw


def _lengths(stewart: StewartModel, alpha: float, beta: float, heave: float = 0.0) -> np.ndarray:
    pose = np.array([0.0, 0.0, stewart.desc.h + heave, 0.0, 0.0, 0.0])
    hinge_to_euler(alpha, beta, pose[3:])
    lam = np.zeros(6)
    leg_lengths(stewart.buf, pose, lam, np.zeros((6, 6)))
    return lam


def _stand_while_the_rig_moves(robot, plant, target: np.ndarray) -> None:
    """2 s: the rig's motors to ``target`` by a 1 s quintic, the leg held at its start posture."""
    rig_bus = [BUS.index(a) for a in RIG_AXES]
    leg_bus = [BUS.index(a) for a in ("ankle_1", "ankle_2", "knee", "hip")]
    leg0 = plant.motor_position[leg_bus].copy()
    start = plant.motor_position[rig_bus].copy()
    tau, tr = np.zeros(10), robot.transmission
    for k in range(round(2.0 / BUS_CYCLE)):
        r = min(1.0, k * BUS_CYCLE / 1.0)
        ref = start + (target - start) * (10 * r ** 3 - 15 * r ** 4 + 6 * r ** 5)
        tau[rig_bus] = 5.0 * (ref - plant.motor_position[rig_bus]) - 0.05 * plant.motor_velocity[rig_bus]
        q = plant.sensors["joint_position"]
        tau[leg_bus] = 2.0 * (leg0 - plant.motor_position[leg_bus]) - 0.05 * plant.motor_velocity[leg_bus] \
            + tr.torque_to_motor(q, robot.gravity(q))          # as the hinge plant's holder (tests/drivers/sim/hil/conftest.py)
        plant.step(BUS_CYCLE, tau)


def test_the_leg_stands_on_the_plate_as_the_rig_tilts(robot, stewart):
    plant = MujocoRigPlant(robot, stewart, BUS, RIG_AXES, q0=STANCE)
    rig_bus = [BUS.index(a) for a in RIG_AXES]
    assert plant.n_motors == 10
    assert np.allclose(plant.motor_position[rig_bus], GEAR * _lengths(stewart, 0.0, 0.0), atol=1e-9)
    _stand_while_the_rig_moves(robot, plant, GEAR * _lengths(stewart, 0.05, 0.1))   # the posture-held leg stands it
    assert np.allclose(plant.sensors["platform"], (0.05, 0.1), atol=3e-3)
    assert float(plant.sensors["fallen"]) == 0.0
    weight = robot.model.mass.sum() * 9.81
    assert 0.5 * weight < plant.sensors["sole"][0] < 1.5 * weight       # the foot carries the leg


def test_the_foot_lift_is_measured_from_the_moving_plate(robot, stewart):
    """A heave of the plate carries the standing foot: its lift (highest sole corner above the
    plate) stays near zero while the hip rises with the plate."""
    plant = MujocoRigPlant(robot, stewart, BUS, RIG_AXES, q0=STANCE)
    plate = plant.mj_data.xpos[plant.mj_model.body(PLATFORM).id]
    hip0, plate0 = float(plant.sensors["hip_height"]), float(plate[2])
    _stand_while_the_rig_moves(robot, plant, GEAR * _lengths(stewart, 0.0, 0.0, heave=0.03))
    rise = float(plate[2]) - plate0                   # the test's holder lets the plate sag a little
    assert rise > 0.02 and float(plant.sensors["hip_height"]) - hip0 == pytest.approx(rise, abs=2e-3)
    assert abs(float(plant.sensors["foot_lift"])) < 2e-3 and float(plant.sensors["fallen"]) == 0.0


def test_the_axes_must_be_the_leg_and_the_rig(robot, stewart):
    with pytest.raises(BusConfigError, match="do not match the leg on the rig's motors"):
        MujocoRigPlant(robot, stewart, BUS[:-1] + ("platform_alpha",), RIG_AXES)
