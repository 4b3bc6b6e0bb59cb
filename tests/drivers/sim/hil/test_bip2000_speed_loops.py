"""deploy/bip2000.yaml: every drive's speed loop is stable on the motor it drives.

The drive kernel (drivers.sim.drive.step_axes) runs its speed loop once a bus cycle dt on the measured
motor speed: under its P gain alone a speed error decays as (1 − kp_speed · torque_constant · dt / J)
per cycle, J the motor's inertia (rotor + the load reflected through the transmission). The pole
must lie inside the unit circle for the smallest J the motor meets: the robot hung by the pelvis
(legs free), the other motors free, J = J_m + 1 / (M_m⁻¹)_ii with M_m = J_p⁻ᵀ A J_p⁻¹."""
from __future__ import annotations

import numpy as np
import pytest

from drivers.config import parse_bus_config
from drivers.sim.hil.plant_biped import flexed_posture
from models.transmission import ROTOR, transmission_jacobian
from models.tree.config import load_tree
from models.tree.robot import TreeRobot
from models.common.validation import read_yaml
from tests.paths import DEPLOY, ROBOTS



def smallest_motor_inertias(desc, postures) -> np.ndarray:
    """Per motor, the least inertia it drives over ``postures`` (model rooted at the pelvis)."""
    robot = TreeRobot(desc)
    P = desc.transmission.params
    rotor = P[ROTOR:ROTOR + desc.n]
    least = np.full(desc.n, np.inf)
    for q in postures:
        Jp = np.zeros((desc.n, desc.n))
        assert transmission_jacobian(P, q, Jp) == 0
        Jinv = np.linalg.inv(Jp)
        reflected = 1.0 / np.diag(np.linalg.inv(Jinv.T @ robot.inertia(q) @ Jinv))
        least = np.minimum(least, rotor + reflected)
    return least


def test_every_bip2000_speed_loop_pole_is_inside_the_unit_circle():
    config = read_yaml(DEPLOY / "bip2000.yaml")
    bus = parse_bus_config(config["bus"])
    desc = load_tree(DEPLOY / config["robot"])
    names = [t.joint.name for t in desc.joints]
    model = TreeRobot(desc).model
    rng = np.random.default_rng(7)                # straight, flexed, deeply flexed, and around the stance
    postures = [np.zeros(desc.n), flexed_posture(desc), flexed_posture(desc, 1.2)]
    postures += [np.clip(flexed_posture(desc) + rng.uniform(-0.3, 0.3, desc.n), model.qmin, model.qmax)
                 for _ in range(5)]
    inertia = smallest_motor_inertias(desc, postures)
    poles = {}
    for axis in bus.axes:
        j = names.index(axis.name)
        d = axis.drive
        poles[axis.name] = 1.0 - d.kp_speed * d.torque_constant * bus.cycle_time_s / inertia[j]
    assert all(abs(p) < 1.0 for p in poles.values()), {k: round(v, 2) for k, v in poles.items()}


@pytest.mark.parametrize("joint", ["l_hip_yaw", "r_hip_yaw"])
def test_the_hip_yaw_motor_drives_little_more_than_its_rotor(joint):
    """The reason its drive has its own gains: the leg about the yaw axis reflects < 20 % of the rotor."""
    desc = load_tree(ROBOTS / "bip2000.yaml")
    j = [t.joint.name for t in desc.joints].index(joint)
    inertia = smallest_motor_inertias(desc, [np.zeros(desc.n), flexed_posture(desc)])
    rotor = desc.transmission.params[ROTOR + j]
    assert rotor < inertia[j] < 1.2 * rotor
