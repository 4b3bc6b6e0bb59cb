"""BIP 2000 standing on the leg bench's two-axis tilting plate (drivers.sim.hil.plant_biped with ``platform``):
the plate's axes are RotX(alpha) RotY(beta), the convention of the whole-robot stabilizer and of the
loop's feed-forward gravity (models.tilt.sole_gravity); its two motors are bus axes at ratio × hinge;
the feet stand on the tilted plate (their lift measured from it)."""
from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from drivers.config import BusConfigError
from drivers.sim.hil.mjcf import PLATFORM, PLATFORM_JOINTS
from drivers.sim.hil.plant_biped import BipedPlant, flexed_posture
from models.tilt import sole_gravity
from models.tree.config import load_tree

from tests.drivers.sim.hil.conftest import BUS_CYCLE
from tests.paths import ROBOTS

G = 9.81


def _rot(alpha: float, beta: float) -> np.ndarray:
    ca, sa, cb, sb = math.cos(alpha), math.sin(alpha), math.cos(beta), math.sin(beta)
    rx = np.array([[1, 0, 0], [0, ca, -sa], [0, sa, ca]])
    ry = np.array([[cb, 0, sb], [0, 1, 0], [-sb, 0, cb]])
    return rx @ ry


@pytest.fixture(scope="module")
def desc():
    return load_tree(ROBOTS / "bip2000.yaml")


@pytest.fixture(scope="module")
def plant(desc):
    return BipedPlant(desc, platform={})


def test_the_plate_turns_as_the_stabilizer_and_the_feed_forward_assume(plant):
    m, d = plant.mj_model, plant.mj_data
    alpha, beta = 0.15, -0.25
    for j, x in zip(PLATFORM_JOINTS, (alpha, beta)):
        d.qpos[m.jnt_qposadr[m.joint(j).id]] = x
    mujoco.mj_kinematics(m, d)
    R = d.xmat[m.body(PLATFORM).id].reshape(3, 3)
    np.testing.assert_allclose(R, _rot(alpha, beta), atol=1e-12)
    for level in ([0.0, 0.0, -G], [1.0, -2.0, 3.0]):           # any level vector into the plate's axes
        g = np.empty(3)
        sole_gravity(alpha, beta, np.array(level), g)
        np.testing.assert_allclose(g, R.T @ level, atol=1e-12)
    plant.reset()


def test_standing_on_the_plate_tilted_by_its_motors(plant, desc):
    """Joints held in the flexed posture, the alpha motor brought to ratio × 0.05 rad in 1 s: the
    plate is at 0.05 rad, the motors read ratio × the hinges, both soles stay on the plate."""
    n, ratio, tr = desc.n, plant.ratio, desc.transmission
    q_ref = flexed_posture(desc)
    target = np.zeros(2)

    def torque(out):
        q = plant.sensors["joint_position"]
        qd = tr.velocity_to_joint(q, plant.motor_velocity[:n])
        out[:n] = tr.torque_to_motor(q, 3000.0 * (q_ref - q) - 150.0 * qd)
        out[n:] = 30.0 * (ratio * target - plant.motor_position[n:]) - 1.0 * plant.motor_velocity[n:]

    tau = np.zeros(plant.n_motors)
    steps = round(1.5 / BUS_CYCLE)
    for k in range(steps):
        s = min(1.0, k * BUS_CYCLE)
        target[0] = 0.05 * s * s * (3.0 - 2.0 * s)
        torque(tau)
        plant.step(BUS_CYCLE, tau)
    s = plant.sensors
    assert s["platform"][0] == pytest.approx(0.05, abs=3e-3) and abs(s["platform"][1]) < 5e-3
    np.testing.assert_allclose(plant.motor_position[n:], ratio * s["platform"], rtol=1e-9)
    np.testing.assert_array_equal(s["contact"], [1.0, 1.0])
    np.testing.assert_allclose(s["foot_lift"], 0.0, atol=2e-3)
    assert s["fallen"] == 0.0
    plant.reset()


def test_the_platform_axes_must_be_on_the_bus(desc):
    names = [t.joint.name for t in desc.joints]
    with pytest.raises(BusConfigError, match=r"then the platform.*missing \['platform_beta'\]"):
        BipedPlant(desc, platform={}, axes=names + ["platform_alpha"])
