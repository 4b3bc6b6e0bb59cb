"""Structural properties of the dynamics (hypothesis): A symmetric positive
definite; C is the Christoffel form of A (checked against finite differences of
A, independent of our analytic dA/dq); Adot - 2C skew-symmetric with Adot by
finite differences along qd."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.models.chains import bip_leg, random_robot

LEG = bip_leg()
CHAIN = random_robot(5, 7, prismatic=(1, 4))
H = 1e-6


def states(robot):
    n = robot.n
    lo, hi = robot.model.qmin, robot.model.qmax
    unit = st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n).map(np.array)
    vel = st.lists(st.floats(-3.0, 3.0), min_size=n, max_size=n).map(np.array)
    return st.tuples(unit.map(lambda u: lo + u * (hi - lo)), vel)


def fd_inertia_derivatives(robot, q):
    n = robot.n
    dA = np.empty((n, n, n))
    for k in range(n):
        e = np.zeros(n)
        e[k] = H
        dA[k] = (robot.inertia(q + e) - robot.inertia(q - e)) / (2 * H)
    return dA


def check_state(robot, q, qd):
    A = robot.inertia(q)
    np.testing.assert_allclose(A, A.T, atol=1e-12)
    assert np.linalg.eigvalsh(A)[0] > 0.0, "A(q) must be positive definite"

    C = robot.coriolis(q, qd)
    dA = fd_inertia_derivatives(robot, q)
    christoffel = 0.5 * (np.einsum("kij,k->ij", dA, qd) + np.einsum("jik,k->ij", dA, qd)
                         - np.einsum("ijk,k->ij", dA, qd))
    np.testing.assert_allclose(C, christoffel, atol=1e-6 * max(1.0, np.abs(C).max()))

    Adot = (robot.inertia(q + H * qd) - robot.inertia(q - H * qd)) / (2 * H)
    N = Adot - 2.0 * C
    np.testing.assert_allclose(N, -N.T, atol=1e-6 * max(1.0, np.abs(Adot).max()))


@settings(max_examples=60, deadline=None)
@given(states(LEG))
def test_leg_dynamics_structure(state):
    check_state(LEG, *state)


@settings(max_examples=60, deadline=None)
@given(states(CHAIN))
def test_mixed_chain_dynamics_structure(state):
    check_state(CHAIN, *state)
