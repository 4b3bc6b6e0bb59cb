"""Actuator forces of the Stewart-Gough rig (Staicu 2008, eq. 19-20) against an
independent computation: Newton-Euler with Lagrange multipliers.

The reference is built here from the rig's description alone: a Pinocchio model of the
six legs as serial chains (universal joint = two revolutes, the actuator a prismatic
joint, the spherical joint three revolutes), the platform carried by leg A; Pinocchio's
RNEA gives the joint forces tau(q, qd, qdd) of the open tree, and the five loop closures
(leg j's last frame = the platform's frame at P_j) are enforced by multipliers:
tau = B f + Phi^T mu, 36 equations for the 6 forces and 30 multipliers. Only the joint
trajectory q(t) is taken from our inverse kinematics; its rates and accelerations are
checked against finite differences of q(t) first, so the reference does not reuse our
velocity or acceleration recursions."""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest

from models.rig.stewart import (OK, SINGULAR, StewartData, StewartModel, inverse_kinematics,
                            staicu_motion)
from models.rig.config import LEG_NAMES, load_stewart
from models.rig.dynamics import inverse_dynamics

from tests.models.tree.test_tree_engine import _allocations
from tests.paths import STEWART_RIG

DESC = load_stewart(STEWART_RIG)
MODEL = StewartModel(DESC)
THETA1 = np.array([[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])

# largest |f - f_ref| over the motion, relative to the largest |f_ref| (measured: 2e-15)
FORCE_TOL = 1e-12
# finite-difference step (s) and tolerances (relative to the largest value) of q' and
# q'' (measured: 5e-9 and 2e-7, rounding in the second difference)
FD_H = 1e-4
FD_TOL_QD = 1e-6
FD_TOL_QDD = 1e-5


def _pinocchio_rig(desc):
    """The open tree (six legs, platform on leg A) and the constraint frame pairs."""
    model = pin.Model()
    model.gravity.linear = np.array([0.0, 0.0, -desc.gravity])
    inert = [np.diag(b.inertia) for b in desc.bodies]
    inert[1] = THETA1 @ inert[1] @ THETA1.T          # the cylinder's x (Staicu's frame 2) along the leg
    masses = [b.mass for b in desc.bodies]
    tips, lasts, plats = [], [], []
    home = np.array([0.0, 0.0, desc.h])
    for j, leg in enumerate(LEG_NAMES):
        a1, a2 = desc.alpha1[j], desc.alpha1[j] + desc.alpha2[j]
        B = desc.l0 * np.array([math.cos(a1), math.sin(a1), 0.0])
        p = desc.l4 * np.array([math.cos(a2), math.sin(a2), 0.0])
        n0 = (home + p - B) / np.linalg.norm(home + p - B)
        xb = np.cross([0.0, 0.0, 1.0], n0)
        xb /= np.linalg.norm(xb)
        Rb = np.column_stack([xb, np.cross(n0, xb), n0])
        chain = [(pin.JointModelRX(), pin.SE3(Rb, B), 0, np.zeros(3)),
                 (pin.JointModelRY(), pin.SE3.Identity(), 1, np.array([0.0, 0.0, desc.l2 / 2])),
                 (pin.JointModelPZ(), pin.SE3(np.eye(3), np.array([0.0, 0.0, desc.l1])), 2,
                  np.array([0.0, 0.0, desc.l3 / 2])),
                 (pin.JointModelRX(), pin.SE3(np.eye(3), np.array([0.0, 0.0, desc.l3])), 3, np.zeros(3)),
                 (pin.JointModelRY(), pin.SE3.Identity(), 4, np.zeros(3)),
                 (pin.JointModelRZ(), pin.SE3.Identity(), None, None)]
        parent = 0
        for k, (jm, place, body, lever) in enumerate(chain):
            parent = model.addJoint(parent, jm, place, f"{leg}{k + 1}")
            if body is not None:
                model.appendBodyToJoint(parent, pin.Inertia(masses[body], lever, inert[body]), pin.SE3.Identity())
        # the last frame is the leg's frame at t = 0 carried by the platform: Rp Rb
        lasts.append(parent)
        tips.append(model.addFrame(pin.Frame(f"tip{leg}", parent, pin.SE3.Identity(), pin.FrameType.OP_FRAME)))
        plats.append((Rb, p))
    jA = lasts[0]
    RbA, pA = plats[0]
    # platform body on leg A's last joint: G is at -p_A from P_A, in that frame's axes
    model.appendBodyToJoint(jA, pin.Inertia(masses[5], RbA.T @ (-pA), RbA.T @ inert[5] @ RbA), pin.SE3.Identity())
    pfr = [model.addFrame(pin.Frame(f"plat{leg}", jA, pin.SE3(RbA.T @ Rb, RbA.T @ (p - pA)), pin.FrameType.OP_FRAME))
           for leg, (Rb, p) in zip(LEG_NAMES, plats)]
    return model, tips, pfr


PIN, TIPS, PLATS = _pinocchio_rig(DESC)


def _reference_forces(q, qd, qdd):
    """f from tau = B f + Phi^T mu (Newton-Euler with Lagrange multipliers)."""
    data = PIN.createData()
    pin.forwardKinematics(PIN, data, q)
    pin.updateFramePlacements(PIN, data)
    closure = max(np.linalg.norm(pin.log6(data.oMf[TIPS[j]].actInv(data.oMf[PLATS[j]])).vector)
                  for j in range(6))
    tau = pin.rnea(PIN, data, q, qd, qdd)
    pin.computeJointJacobians(PIN, data, q)
    rows = []
    for j in range(1, 6):
        Jt = pin.getFrameJacobian(PIN, data, TIPS[j], pin.LOCAL)
        Jp = pin.getFrameJacobian(PIN, data, PLATS[j], pin.LOCAL)
        rows.append(Jt - Jp)
    Phi = np.vstack(rows)
    B = np.zeros((36, 6))
    for j in range(6):
        B[6 * j + 2, j] = 1.0
    sol = np.linalg.solve(np.hstack([B, Phi.T]), tau)
    return sol[:6], closure, Phi


def _state(t, data=None):
    data = data or StewartData()
    x, xd, xdd = staicu_motion(DESC, t)
    assert inverse_dynamics(MODEL.buf, data.buf, x, xd, xdd) == OK
    return data.q.ravel().copy(), data.qd.ravel().copy(), data.qdd.ravel().copy(), data.force.copy()


TIMES = np.linspace(0.0, DESC.motion.duration, 13)


@pytest.mark.parametrize("t", TIMES)
def test_joint_rates_and_accelerations_match_finite_differences(t):
    """Eq. 15 and 17: q' and q'' of every leg joint against central differences of the
    positions q(t) given by eq. 8-10 alone."""
    q, qd, qdd, _ = _state(t)
    qp, qm = _state(t + FD_H)[0], _state(t - FD_H)[0]
    qd_fd = (qp - qm) / (2 * FD_H)
    qdd_fd = (qp - 2 * q + qm) / FD_H ** 2
    assert np.max(np.abs(qd - qd_fd)) < FD_TOL_QD * max(1.0, np.max(np.abs(qd)))
    assert np.max(np.abs(qdd - qdd_fd)) < FD_TOL_QDD * max(1.0, np.max(np.abs(qdd)))


@pytest.mark.parametrize("t", TIMES)
def test_forces_match_newton_euler_with_lagrange_multipliers(t):
    q, qd, qdd, f = _state(t)
    f_ref, closure, Phi = _reference_forces(q, qd, qdd)
    assert closure < 1e-12                       # our joint angles close every loop (eq. 10)
    assert np.max(np.abs(Phi @ qd)) < 1e-10      # and our rates respect the closures (eq. 15)
    assert np.max(np.abs(f - f_ref)) < FORCE_TOL * np.max(np.abs(f_ref))


def test_forces_match_the_reference_off_the_test_motion():
    """Random poses, velocities and accelerations (not only the paper's motion)."""
    rng = np.random.default_rng(7)
    data = StewartData()
    for _ in range(20):
        x = np.array([0, 0, DESC.h, 0, 0, 0]) + rng.uniform(-1, 1, 6) * [0.2, 0.2, 0.15, 0.1, 0.1, 0.1]
        xd, xdd = rng.normal(size=6), rng.normal(size=6) * 3
        assert inverse_dynamics(MODEL.buf, data.buf, x, xd, xdd) == OK
        f_ref, closure, _ = _reference_forces(data.q.ravel(), data.qd.ravel(), data.qdd.ravel())
        assert closure < 1e-12
        assert np.max(np.abs(data.force - f_ref)) < FORCE_TOL * np.max(np.abs(f_ref))


def test_inverse_dynamics_allocates_nothing():
    from numba import njit

    @njit
    def run(mbuf, dbuf, x, xd, xdd, count):
        s = 0
        for _ in range(count):
            s += inverse_dynamics(mbuf, dbuf, x, xd, xdd)
        return s

    x, xd, xdd = staicu_motion(DESC, 0.4)
    one, many = _allocations(run, MODEL.buf, StewartData().buf, x, xd, xdd)
    assert many == one


def test_a_singular_platform_is_a_status_not_forces():
    """The platform in the base plane: every leg horizontal, so no actuator force has a
    vertical component and none can carry the weight. S loses rank: SINGULAR, never
    numbers."""
    data = StewartData()
    x = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    zero = np.zeros(6)
    assert inverse_kinematics(MODEL.buf, data.buf, x, zero, zero) == OK
    assert inverse_dynamics(MODEL.buf, data.buf, x, zero, zero) == SINGULAR
