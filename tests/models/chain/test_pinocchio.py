"""Cross-check of the generic MDH engine against Pinocchio (the `pin` wheel) at
100+ random states: FK, tool and frame Jacobians, A (crba), C qd + G
(nonLinearEffects), RNEA, the CoG and its Jacobian. Rotor inertia is Pinocchio's
``armature``; friction, which Pinocchio's RNEA does not model, is removed from
ours by its explicit formula (Lammari 2012, eq. IV.10)."""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from tests.assertions import close_within
from tests.models.chains import bip_leg, random_robot, random_states
from models.chain.dynamics import update
from models.chain.reference import build
from models.tilt import tilted_gravity

ROBOTS = {
    "bip_leg": bip_leg,
    "random7_mixed": lambda: random_robot(7, 7, prismatic=(2, 5)),
    "random6_revolute": lambda: random_robot(11, 6),
}

RTOL = 1e-9


close = close_within(RTOL)


@pytest.fixture(scope="module", params=sorted(ROBOTS))
def pair(request):
    robot = ROBOTS[request.param]()
    model, fid = build(robot.description)
    return robot, model, model.createData(), fid


def test_kinematics_match_pinocchio(pair):
    robot, model, data, fid = pair
    for q, _, _ in random_states(robot, 100, seed=1):
        pin.forwardKinematics(model, data, q)
        pin.updateFramePlacements(model, data)
        close(robot.fk(q), data.oMf[fid].homogeneous)
        for i in range(robot.n + 1):
            close(robot.frame(q, i), data.oMi[i].homogeneous)
        close(robot.jacobian(q), pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED))
        k = 1 + (int(q[0] * 1e6) % robot.n)   # a frame chosen pseudo-randomly
        pin.computeJointJacobians(model, data, q)
        close(robot.frame_jacobian(q, k), pin.getJointJacobian(model, data, k, pin.LOCAL_WORLD_ALIGNED))


def test_com_matches_pinocchio(pair):
    robot, model, data, _ = pair
    for q, _, _ in random_states(robot, 100, seed=2):
        close(robot.com(q), pin.centerOfMass(model, data, q))
        close(robot.com_jacobian(q), pin.jacobianCenterOfMass(model, data, q))


@pytest.mark.slow
def test_dynamics_match_pinocchio(pair):
    robot, model, data, _ = pair
    m = robot.model
    for q, qd, qdd in random_states(robot, 100, seed=3):
        A = pin.crba(model, data, q)
        A = np.triu(A) + np.triu(A, 1).T
        close(robot.inertia(q), A)
        close(robot.coriolis(q, qd) @ qd + robot.gravity(q), pin.nonLinearEffects(model, data, q, qd))
        close(robot.gravity(q), pin.computeGeneralizedGravity(model, data, q))
        friction = m.viscous * qd + m.coulomb * np.sign(qd)
        close(robot.rnea(q, qd, qdd) - friction, pin.rnea(model, data, q, qd, qdd))


@pytest.mark.slow
def test_tilted_gravity_matches_pinocchio(pair):
    """G and RNEA under the gravity of a tilted floor, R_M->O0(alpha, beta)^T g
    (thesis eq. 46), against Pinocchio with ``model.gravity`` set to the same vector
    built from its own rotations (Rz(alpha) Ry(-beta)); the Data slot the control
    loop sets gives the same G through ``update``, and the level default is kept."""
    robot, model, data, _ = pair
    m, d = robot.model, robot.data
    g_level = np.array(robot.description.gravity)
    rng = np.random.default_rng(4)
    g = np.zeros(3)
    for q, qd, qdd in random_states(robot, 100, seed=4):
        alpha, beta = rng.uniform(-0.6, 0.6, 2)
        R = pin.utils.rotate("z", alpha) @ pin.utils.rotate("y", -beta)
        tilted_gravity(alpha, beta, g_level, g)
        close(g, R.T @ g_level)
        model.gravity = pin.Motion(R.T @ g_level, np.zeros(3))
        close(robot.gravity(q, g), pin.computeGeneralizedGravity(model, data, q))
        friction = m.viscous * qd + m.coulomb * np.sign(qd)
        close(robot.rnea(q, qd, qdd, g) - friction, pin.rnea(model, data, q, qd, qdd))
        d.gravity[:] = g
        update(m.buf, d.buf, q, qd)
        close(d.G, pin.computeGeneralizedGravity(model, data, q))
        close(d.h, pin.nonLinearEffects(model, data, q, qd))
    model.gravity = pin.Motion(g_level, np.zeros(3))
    close(robot.gravity(q), pin.computeGeneralizedGravity(model, data, q))
    close(d.gravity, g_level)
