"""Virtual CoG robot: admittance, weighted damped pseudo-inverse (with the 4x4
Schur inverse), singularity measure, joint and velocity limits (thesis §2.5.4,
§2.5.11-2.5.12; Jacobian course for the DLS)."""
from __future__ import annotations

import numpy as np
import pytest

from models.chain.leg import LegGeometry, virtual_com_jacobian
from stabilizer.virtual_robot import (
    admittance_velocity,
    damping_factor,
    integrate,
    lock_joint_limits,
    resolve_rates,
    scale_to_velocity_limits,
    smallest_task_singular_value,
)

from tests.stabilizer.helpers import Q0, ROBOT, make

P = LegGeometry(ROBOT.model).params


def cog_jacobian(q):
    J, work = np.empty((3, 4)), np.empty((6, 4))
    virtual_com_jacobian(P, np.asarray(q, float), J, work)
    return J


def solve(J, S, W, lam2, v, qd0, locked=None):
    H, Hinv, qd = np.empty((4, 4)), np.empty((4, 4)), np.empty(4)
    locked = np.zeros(4) if locked is None else locked
    assert resolve_rates(J, np.asarray(S, float), np.asarray(W, float), lam2, np.asarray(v, float),
                         np.asarray(qd0, float), locked, H, Hinv, qd) == 0
    return qd


@pytest.mark.parametrize("S", [(1.0, 1.0, 1.0), (0.0, 1.0, 1.0)])
def test_weighted_damped_pseudo_inverse_with_null_space_term(S):
    """qd = J#_W v + (I - J#_W J) qd0 with J#_W = W^-1 J^T (J W^-1 J^T + lambda^2 I)^-1
    on the active rows (the push-through identity of the 4x4 form)."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        q = rng.uniform(ROBOT.model.qmin, ROBOT.model.qmax)
        J = cog_jacobian(q)
        W = rng.uniform(0.5, 3.0, 4)
        v, qd0 = rng.normal(size=3) * 0.1, rng.normal(size=4) * 0.1
        lam2 = 10.0 ** rng.uniform(-6, -2)
        rows = [i for i in range(3) if S[i] > 0]
        Ja, Wi = J[rows], np.diag(1 / W)
        pinv = Wi @ Ja.T @ np.linalg.inv(Ja @ Wi @ Ja.T + lam2 * np.eye(len(rows)))
        want = pinv @ v[rows] + (np.eye(4) - pinv @ Ja) @ qd0
        np.testing.assert_allclose(solve(J, S, W, lam2, v, qd0), want, rtol=1e-7, atol=1e-10)


def test_smallest_singular_value_and_variable_damping():
    rng = np.random.default_rng(4)
    A = np.empty((3, 3))
    for _ in range(50):
        J = cog_jacobian(rng.uniform(ROBOT.model.qmin, ROBOT.model.qmax))
        W = rng.uniform(0.5, 3.0, 4)
        for S, rows in (((1.0, 1.0, 1.0), [0, 1, 2]), ((0.0, 1.0, 1.0), [1, 2])):
            want = np.linalg.svd(J[rows] / np.sqrt(W), compute_uv=False).min()
            got = smallest_task_singular_value(J, np.array(S), W, A)
            assert got == pytest.approx(want, rel=1e-7, abs=1e-9)
    # fully stretched leg: the CoG cannot move vertically
    assert smallest_task_singular_value(cog_jacobian(np.zeros(4)), np.ones(3), np.ones(4), A) < 1e-7
    assert damping_factor(0.2, 1e-3, 0.05, 0.05) == pytest.approx(1e-6)
    assert damping_factor(0.0, 1e-3, 0.05, 0.05) == pytest.approx(1e-6 + 0.05 ** 2)
    assert damping_factor(0.025, 1e-3, 0.05, 0.05) == pytest.approx(1e-6 + 0.75 * 0.05 ** 2)


def test_joint_at_its_limit_is_locked_and_the_others_do_the_task():
    qmin, qmax = ROBOT.model.qmin.copy(), ROBOT.model.qmax.copy()
    q = Q0.copy()
    q[1] = qmax[1] - 0.01                        # ankle inside the 0.02 rad margin
    J = cog_jacobian(q)
    S, W = np.array([0.0, 1.0, 1.0]), np.ones(4)
    v = np.zeros(3)
    v[2] = -0.1 if J[2, 1] < 0 else 0.1          # a task the ankle alone would do by increasing q2
    H, Hinv, qd, locked = np.empty((4, 4)), np.empty((4, 4)), np.empty(4), np.zeros(4)
    assert resolve_rates(J, S, W, 1e-6, v, np.zeros(4), locked, H, Hinv, qd) == 0
    assert qd[1] > 0
    status, nlocked = lock_joint_limits(J, S, W, 1e-6, v, np.zeros(4), q, qmin, qmax, 0.02, 0.002,
                                        locked, H, Hinv, qd)
    assert status == 0 and nlocked == 1 and locked[1] == 1.0 and qd[1] == 0.0
    np.testing.assert_allclose((J @ qd)[1:], v[1:], rtol=1e-3)   # knee and hip take over


def test_velocity_scaling_keeps_the_direction_and_integration_clamps():
    qd = np.array([1.0, -4.0, 2.0, 0.5])
    vmax = np.array([2.0, 2.0, 2.5, 2.5])
    assert scale_to_velocity_limits(qd, vmax)
    np.testing.assert_allclose(qd, np.array([1.0, -4.0, 2.0, 0.5]) / 2.0)
    assert not scale_to_velocity_limits(qd, vmax)
    q = np.array([0.0, 0.59, -0.1, 0.0])
    qd = np.array([0.0, 10.0, 0.0, 0.0])
    assert integrate(q, qd, 0.002, ROBOT.model.qmin, ROBOT.model.qmax)
    assert q[1] == ROBOT.model.qmax[1] and qd[1] == pytest.approx(0.01 / 0.002)   # the rate applied


def test_admittance():
    """M dv/dt + (D + C) v = F, linearly implicit in K: (M/dt + D + C + dt K) v+ = M/dt v + F."""
    F = np.array([0.0, 3.0, -4.0])
    K, C, A = np.diag([0.0, 200.0, 50.0]), np.diag([0.0, 0.0, 10.0]), np.empty((3, 3))
    v = np.zeros(3)
    assert admittance_velocity(0.0, 100.0, 0.002, 1.0, v, F, K, C, A) == (0, False)
    np.testing.assert_allclose(v, np.linalg.solve(100 * np.eye(3) + C + 0.002 * K, F))
    v = np.zeros(3)                               # with a virtual mass: first-order lag to F / D
    for _ in range(2000):
        admittance_velocity(2.0, 100.0, 0.002, 1.0, v, F, np.zeros((3, 3)), np.zeros((3, 3)), A)
    np.testing.assert_allclose(v, F / 100.0, rtol=1e-9)
    v = np.zeros(3)
    assert admittance_velocity(0.0, 1.0, 0.002, 0.3, v, F, np.zeros((3, 3)), np.zeros((3, 3)), A) == (0, True)
    assert np.linalg.norm(v) == pytest.approx(0.3)


def test_joint_weights_shift_the_motion_to_the_light_joints():
    """The thesis' torque-balancing weights (§2.5.12): a heavy ankle weight makes
    the knee and hip do more of the same CoG motion."""
    moves = []
    for w in ([1.0, 1.0, 1.0, 1.0], [1.0, 20.0, 1.0, 1.0]):
        st = make(virtual_robot={"joint_weights": w})
        q = Q0.copy()
        st.reset(q)
        for _ in range(200):
            assert st.step(q, (0.0, 0.2, 0.0)) == 0
            q = st.q_ref.copy()
        moves.append(np.abs(q - Q0))
    assert moves[1][1] < 0.5 * moves[0][1]
    assert moves[1][2] > moves[0][2]


def test_null_space_posture_term_moves_the_posture_not_the_cog():
    """With the height free (vertical task weight 0) the leg has a 2-D null space;
    the posture term pulls the joints towards the target posture inside it while
    the walls keep the CoG where it was."""
    target = Q0 + np.array([0.0, 0.08, -0.16, 0.08])
    finals, cogs = [], []
    for gain in (0.0, 2.0):
        st = make(virtual_robot={"posture": {"gain": gain, "target": target.tolist()}})
        q = Q0.copy()
        st.reset(q)
        for _ in range(1500):
            assert st.step(q, (0.0, 0.0, 0.0)) == 0
            q = st.q_ref.copy()
        finals.append(np.linalg.norm(q - target))
        cogs.append(st.cog[1:].copy())
    assert finals[1] < 0.3 * finals[0]
    np.testing.assert_allclose(cogs[1], cogs[0], atol=2e-3)
