"""Numerical inverse geometry on the 15-joint tree of BIP 2000 (models/ik/numerical.py with the tree
engine of models/tree/dynamics.py): the stacked tasks a gait generator asks for, rooted
at the stance sole — the swing sole and the pelvis, or the swing sole, the pelvis'
orientation and the CoG — reached from 0.1 rad away at random postures (FK ∘ IK =
identity), by damped least squares and, for a square stack (6 + 6 + 3 = 15 rows), by
Newton–Raphson; straight knees are reported singular; the task
Jacobian is the derivative of the residual; the solver allocates nothing."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.ik.numerical import IkSolver, IkStatus, Task
from models.tree.robot import TreeRobot

from tests.nrt import assert_allocation_free
from tests.models.ik.loops import solve_loop
from tests.models.trees import BIP2000

BIP = TreeRobot.from_yaml(BIP2000)


def postures(margin):
    lo, hi = BIP.model.qmin + margin, BIP.model.qmax - margin
    unit = st.lists(st.floats(0.0, 1.0), min_size=BIP.n, max_size=BIP.n).map(np.array)
    return st.tuples(unit.map(lambda u: lo + u * (hi - lo)),
                     st.lists(st.floats(-0.1, 0.1), min_size=BIP.n, max_size=BIP.n).map(np.array))


def swing_tasks(q):
    return [Task("right_sole", "pose", BIP.frame(q, "right_sole")), Task("pelvis", "pose", BIP.frame(q, "pelvis"))]


def cog_tasks(q):
    return [Task("right_sole", "pose", BIP.frame(q, "right_sole")),
            Task("pelvis", "orientation", BIP.frame(q, "pelvis")), Task("com", "position", BIP.com(q))]


def square_tasks(q):
    return swing_tasks(q) + [Task("trunk", "orientation", BIP.frame(q, "trunk"))]


def check(tasks, method, q, dq):
    BIP.set_root("left_sole")
    q0 = np.clip(q + dq, BIP.model.qmin, BIP.model.qmax)
    problem = tasks(q)
    r = IkSolver(BIP, problem, method=method).solve(q0)
    assert r.ok, r.message()
    for t in problem:
        if t.frame == "com":
            np.testing.assert_allclose(BIP.com(r.q), t.target, atol=1e-9)
        elif t.kind == "pose":
            np.testing.assert_allclose(BIP.frame(r.q, t.frame), t.target, atol=1e-9)
        else:
            np.testing.assert_allclose(BIP.frame(r.q, t.frame)[:3, :3], t.target[:3, :3], atol=1e-9)
    assert np.all(r.q >= BIP.model.qmin) and np.all(r.q <= BIP.model.qmax)


# postures at least 0.2 rad inside the limits: the knee's limit 0 is the straight knee,
# a singularity (test_straight_knees_are_reported_singular)
@pytest.mark.parametrize("tasks", [swing_tasks, cog_tasks])
def test_stance_rooted_tasks_by_dls(tasks):
    @settings(max_examples=25, deadline=None)
    @given(postures(0.2))
    def run(state):
        check(tasks, "dls", *state)
    run()


def test_square_stack_by_newton():
    """Swing sole pose, pelvis pose, trunk orientation: 15 rows for 15 joints."""
    @settings(max_examples=25, deadline=None)
    @given(postures(0.2))
    def run(state):
        check(square_tasks, "newton", *state)
    run()


def test_straight_knees_are_reported_singular():
    q = np.zeros(BIP.n)
    BIP.set_root("left_sole")
    q0 = q.copy()
    q0[[3, 9]] = 0.1
    r = IkSolver(BIP, swing_tasks(q)).solve(q0)
    assert r.status == IkStatus.SINGULAR, r.message()
    assert r.position_residual <= 1e-10 and r.rotation_residual <= 1e-10


def test_tree_task_jacobian_is_the_derivative_of_the_residual():
    BIP.set_root("right_sole")
    rng = np.random.default_rng(2)
    q = rng.uniform(BIP.model.qmin, BIP.model.qmax) * 0.5
    q2 = q + 0.2
    solver = IkSolver(BIP, [Task("left_sole", "position", BIP.frame(q2, "left_sole")[:3, 3], point=(0.1, -0.03, 0.02)),
                            Task("trunk", "axis", BIP.frame(q2, "trunk")[:3, 2]),
                            Task("com:left_leg", "position", BIP.com(q2, "left_leg"), weight=3.0)])
    F, J = solver.residual(q)
    h = 1e-6
    fd = np.array([(solver.residual(q + h * e)[0] - solver.residual(q - h * e)[0]) / (2 * h)
                   for e in np.eye(BIP.n)]).T
    np.testing.assert_allclose(J, fd, atol=1e-7)


def test_tree_frame_names_are_checked():
    from models.common.errors import GeometryError
    with pytest.raises(GeometryError, match="frame 'tool' is not one of"):
        IkSolver(BIP, [Task("tool", "position", np.zeros(3))])


@pytest.mark.slow
def test_tree_solver_is_allocation_free():
    BIP.set_root("left_sole")
    q = np.linspace(-0.2, 0.2, BIP.n) + 0.3 * (np.arange(BIP.n) % 6 == 3)
    solver = IkSolver(BIP, cog_tasks(q))
    q0 = q + 0.05
    assert solver.solve_into(q0.copy()) == IkStatus.OK
    assert_allocation_free(solve_loop, solver.engine, BIP.model.buf, BIP.data.buf, solver.buf, q0, np.zeros(BIP.n))
