"""Numerical inverse geometry (models/ik/numerical.py): FK ∘ IK = identity at random reachable
targets (targets made by FK of random q within the limits, guesses 0.1 rad away) for the
bench leg's tool, Lammari's arm (probe tip + Y5 direction, Lammari 2012 §VI.5.5) and a
random 6R chain, by Newton–Raphson and by damped least squares; every status that is not
OK (unreachable, joint limit, singular, not converged) is reported with its task and
residual; joint weights, the null-space task and the CoG task do what they say; the
solver allocates nothing."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models import Robot, description_from_dict
from models.common.errors import GeometryError
from models.ik.numerical import IkError, IkSolver, IkStatus, Task, rotation_error

from tests.nrt import assert_allocation_free
from tests.models.ik.loops import solve_loop
from tests.models.chains import bip_leg, random_robot
from tests.paths import ROBOTS

LEG = bip_leg()
ARM = Robot.from_yaml(ROBOTS / "lammari_arm5.yaml")
R6 = random_robot(3, 6)
TOL = 1e-10


def arm_tasks(T):
    return [Task("tool", "position", T[:3, 3]), Task("tool", "axis", T[:3, 1], axis=1)]


def pose_task(T):
    return [Task("tool", "pose", T)]


def position_task(T):
    return [Task("tool", "position", T[:3, 3])]


def task_value(robot, kind, q):
    """Task function in the test's own terms: tool position, + Y5 (arm), + R (pose)."""
    T = robot.fk(q)
    extra = {"position": [], "axis": [T[:3, 1]], "pose": [T[:3, :3].ravel()]}[kind]
    return np.concatenate([T[:3, 3], *extra])


def conditioning(robot, kind, q, rank):
    """σ_rank/σ_1 of the task function's Jacobian by central differences."""
    h = 1e-6
    cols = [(task_value(robot, kind, q + h * e) - task_value(robot, kind, q - h * e)) / (2 * h)
            for e in np.eye(robot.n)]
    s = np.linalg.svd(np.array(cols).T, compute_uv=False)
    return s[rank - 1] / s[0]


CASES = {  # name: (robot, tasks, kind for the independent check, task rank)
    "leg": (LEG, position_task, "position", 3),
    "arm": (ARM, arm_tasks, "axis", 5),
    "6R": (R6, pose_task, "pose", 6),
}


def configurations(robot, margin=0.0):
    """(q within the limits less a margin, a guess offset of up to 0.1 rad)."""
    n = robot.n
    unit = st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n).map(np.array)
    lo, hi = robot.model.qmin + margin, robot.model.qmax - margin
    return st.tuples(unit.map(lambda u: lo + u * (hi - lo)),
                     st.lists(st.floats(-0.1, 0.1), min_size=n, max_size=n).map(np.array))


def check_roundtrip(case, method, q, dq):
    robot, tasks, kind, rank = CASES[case]
    T = robot.fk(q)
    q0 = np.clip(q + dq, robot.model.qmin, robot.model.qmax)
    r = IkSolver(robot, tasks(T), method=method).solve(q0)
    if r.status in (IkStatus.OK, IkStatus.SINGULAR) and r.position_residual <= TOL:
        T2 = robot.fk(r.q)
        assert np.abs(T2[:3, 3] - T[:3, 3]).max() < 1e-9
        if kind == "axis":
            assert np.abs(T2[:3, 1] - T[:3, 1]).max() < 1e-9
        if kind == "pose":
            assert np.abs(T2 - T).max() < 1e-9
        assert np.all(r.q >= robot.model.qmin) and np.all(r.q <= robot.model.qmax)
        if r.status == IkStatus.SINGULAR:      # reached, and the pose really is singular
            assert conditioning(robot, kind, r.q, rank) < 1e-3
        return
    # a failure from 0.1 rad away is only excusable near a singularity, or, reported as JOINT_LIMIT, for a
    # target on a corner of the joint box: fewer joints strictly inside their limits than the task's rank
    # (the clamped steps stall there; e.g. the leg with three of its four joints on a limit)
    inside = (q > robot.model.qmin + 1e-9) & (q < robot.model.qmax - 1e-9)
    if r.status == IkStatus.JOINT_LIMIT and inside.sum() < rank:
        return
    assert conditioning(robot, kind, q, rank) < 1e-2, r.message()


@pytest.mark.parametrize("case", ["leg", "arm", "6R"])
def test_fk_of_ik_is_identity_dls(case):
    @settings(max_examples=40, deadline=None)
    @given(configurations(CASES[case][0]))
    def run(state):
        check_roundtrip(case, "dls", *state)
    run()


@pytest.mark.parametrize("case", ["arm", "6R"])
def test_fk_of_ik_is_identity_newton(case):
    """Newton–Raphson has no active set (Lammari 2012, §II.6.2): targets 0.2 rad inside
    the limits, so that its full steps from 0.1 rad away do not cross them."""
    @settings(max_examples=40, deadline=None)
    @given(configurations(CASES[case][0], margin=0.2))
    def run(state):
        check_roundtrip(case, "newton", *state)
    run()


def test_far_guesses_are_reached_or_refused_never_silently():
    """From the mid-range posture (global, not local): each answer is OK with FK on the
    target, or a failure status whose residual is above the tolerance. Most are
    reached; the rest stall against a joint limit (q1 cannot pass ±180°) and say so."""
    rng = np.random.default_rng(7)
    for robot, tasks in ((ARM, arm_tasks), (R6, pose_task)):
        mid = 0.5 * (robot.model.qmin + robot.model.qmax) + 0.05
        reached = 0
        for _ in range(20):
            T = robot.fk(rng.uniform(robot.model.qmin, robot.model.qmax))
            r = IkSolver(robot, tasks(T), max_iter=300).solve(mid)
            reached += r.ok
            if r.ok:
                assert np.abs(robot.fk(r.q)[:3, 3] - T[:3, 3]).max() < 1e-9
            else:
                assert r.status != IkStatus.SINGULAR
                assert max(r.position_residual, r.rotation_residual) > TOL
        assert reached >= 12, f"{robot}: {reached}/20 reached from mid-range"


# ---------------------------------------------------------------- statuses
def test_out_of_reach_target_is_refused_with_its_residual():
    """A point 3.65 m from the shoulder of an arm of reach d3 + r4 = 2.51 m."""
    far = np.array([3.0, 2.0, 1.0])
    solver = IkSolver(ARM, [Task("tool", "position", far), Task("tool", "axis", [0, 0, 1.0], axis=1)])
    r = solver.solve(np.zeros(5) + 0.1)
    assert r.status == IkStatus.UNREACHABLE
    shoulder = np.array([0.0, 0.0, ARM.model.mdh[0, 3]])
    gap = np.linalg.norm(far - shoulder) - (ARM.model.mdh[2, 1] + ARM.model.mdh[3, 3])
    assert r.position_residual == pytest.approx(gap, rel=1e-6)   # the arm stretched towards it
    with pytest.raises(IkError, match=r"position of tool: unreachable .* residual 1\.1\d m") as e:
        r.raise_for_status()
    assert e.value.status == IkStatus.UNREACHABLE


def test_leg_stretched_towards_an_unreachable_point_stalls_at_once():
    """At q = 0 the leg stands straight along x: a point further up that line is a
    least-squares minimum at once (Jᵀ F = 0)."""
    r = IkSolver(LEG, [Task("tool", "position", [2.0, 0.0, 0.0])]).solve(np.zeros(4))
    assert r.status == IkStatus.UNREACHABLE
    assert r.position_residual == pytest.approx(2.0 - LEG.fk(np.zeros(4))[0, 3], rel=1e-12)


def planar_2r(limit: float) -> Robot:
    joints = [{"name": f"j{i}", "type": "revolute", "mdh": {"alpha": 0.0, "a": a, "theta": 0.0, "d": 0.0},
               "limits": {"position": [-limit, limit], "velocity": 1.0, "torque": 1.0},
               "body": {"mass": 1.0, "com": [0.1, 0.0, 0.0], "inertia": np.diag([0.01, 0.02, 0.02]).tolist()}}
              for i, a in enumerate((0.0, 0.5))]
    return Robot(description_from_dict({"name": "planar2r", "gravity": [0, -9.81, 0], "joints": joints,
                                        "tool": {"alpha": 0.0, "a": 0.4, "theta": 0.0, "d": 0.0}}))


def test_target_beyond_a_joint_limit_reports_joint_limit():
    """Planar 2R, |q| <= 0.5: the point of q = (0.8, −0.2) has its other elbow solution
    (0.62, 0.2), also outside. The solver pins joint 0 at its limit, lets joint 1
    minimise the distance (active set), says JOINT_LIMIT and stays inside."""
    robot = planar_2r(0.5)
    p = robot.fk(np.array([0.8, -0.2]))[:3, 3]
    r = IkSolver(robot, [Task("tool", "position", p)]).solve(np.array([0.1, -0.1]))
    assert r.status == IkStatus.JOINT_LIMIT
    assert r.q[0] == pytest.approx(0.5, abs=1e-12)
    assert np.all(np.abs(r.q) <= 0.5)
    scan = min(np.linalg.norm(robot.fk(np.array([0.5, q2]))[:3, 3] - p) for q2 in np.linspace(-0.5, 0.5, 20001))
    assert r.position_residual == pytest.approx(scan, abs=1e-6) and scan > 0.01
    wide = IkSolver(planar_2r(2.0), [Task("tool", "position", p)]).solve(np.zeros(2))
    assert wide.ok                                           # the same target without the limit


def test_redundant_leg_goes_around_a_limit_quickly():
    """The leg's tool point of knee = +0.5 (beyond its limit 0) is reachable with the
    knee inside: the frozen knee leaves the others to converge in a few steps."""
    p = LEG.fk(np.array([0.1, 0.3, 0.5, 0.2]))[:3, 3]
    for q0 in ([0.1, 0.3, -0.5, 0.2], [0.0, 0.0, -0.2, 0.0], [0.2, 0.5, -1.0, 0.5]):
        r = IkSolver(LEG, [Task("tool", "position", p)]).solve(np.array(q0))
        assert r.ok and r.iterations <= 15, r.message()


def test_newton_reports_a_singular_jacobian():
    """Lammari's arm at s5 = 0: q4 moves neither the tip nor Y5 (its column of J is
    zero), so δq = −J⁻¹F does not exist."""
    q = np.array([0.3, 0.5, 0.4, 0.2, 0.0])
    target = ARM.fk(q + np.array([0.0, 0.05, 0.0, 0.0, 0.2]))
    r = IkSolver(ARM, arm_tasks(target), method="newton").solve(q)
    assert r.status == IkStatus.SINGULAR and r.iterations == 0
    assert r.position_residual > 0.01
    # damped least squares goes through it
    assert IkSolver(ARM, arm_tasks(target)).solve(q).ok


def test_target_reached_at_a_singular_pose_is_reported():
    q = np.array([0.3, 0.5, 0.4, 0.2, 0.0])
    r = IkSolver(ARM, arm_tasks(ARM.fk(q))).solve(q + 0.05)
    assert r.status == IkStatus.SINGULAR
    assert r.position_residual <= TOL and r.rotation_residual <= TOL
    assert abs(math.sin(r.q[4])) < 1e-8


def test_iteration_budget_exhausted_is_not_converged():
    T = R6.fk(np.full(6, 0.7))
    r = IkSolver(R6, pose_task(T), max_iter=2).solve(np.zeros(6))
    assert r.status == IkStatus.NOT_CONVERGED and r.iterations == 2
    with pytest.raises(IkError, match="pose of tool: not converged after 2 iterations"):
        r.raise_for_status()


# ---------------------------------------------------------------- the DLS options
def test_joint_weights_hold_a_heavy_joint():
    """The leg is redundant for a tool position (4 joints, 3 rows): a weight of 1e6 on
    the hip leaves it where it was, the other joints do the work."""
    q = np.array([0.1, 0.2, -0.8, 0.6])
    p = LEG.fk(np.array([0.15, 0.35, -1.0, 0.6]))[:3, 3]
    q0 = q.copy()
    free = IkSolver(LEG, [Task("tool", "position", p)]).solve(q0)
    held = IkSolver(LEG, [Task("tool", "position", p)], weights=[1, 1, 1, 1e6]).solve(q0)
    assert free.ok and held.ok
    assert abs(held.q[3] - q0[3]) < 1e-4 < abs(free.q[3] - q0[3])


def range_cost(robot, q):
    mid, span = 0.5 * (robot.model.qmin + robot.model.qmax), robot.model.qmax - robot.model.qmin
    return 0.5 * np.sum(((q - mid) / span) ** 2)


def test_null_space_task_moves_towards_the_rest_posture_without_leaving_the_target():
    rng = np.random.default_rng(3)
    for _ in range(10):
        q = rng.uniform(LEG.model.qmin, LEG.model.qmax)
        p = LEG.fk(q)[:3, 3]
        q0 = np.clip(q + rng.normal(0, 0.2, 4), LEG.model.qmin, LEG.model.qmax)
        plain = IkSolver(LEG, position_task(LEG.fk(q))).solve(q0)
        rest = IkSolver(LEG, position_task(LEG.fk(q)), null_gain=1.0).solve(q0)
        assert plain.ok and rest.ok
        assert np.abs(LEG.fk(rest.q)[:3, 3] - p).max() < 1e-9
        assert range_cost(LEG, rest.q) < range_cost(LEG, plain.q) - 1e-4


def test_stacked_tool_and_com_tasks():
    """Tool position and CoG position together (6 rows, 6 joints) from FK targets."""
    rng = np.random.default_rng(11)
    for _ in range(5):
        q = rng.uniform(-1.0, 1.0, 6)
        T, com = R6.fk(q), R6.com(q)
        r = IkSolver(R6, [Task("tool", "position", T[:3, 3]), Task("com", "position", com)]).solve(
            q + rng.normal(0, 0.1, 6))
        assert r.ok, r.message()
        np.testing.assert_allclose(R6.com(r.q), com, atol=1e-9)
        np.testing.assert_allclose(R6.fk(r.q)[:3, 3], T[:3, 3], atol=1e-9)


def test_point_of_a_frame_and_frame_names():
    """A point offset in frame 'knee' (frame 3 of the leg) is a task like any other."""
    q = np.array([0.05, 0.3, -0.9, 0.4])
    point = np.array([0.1, 0.02, -0.01])
    T3 = LEG.frame(q, 3)
    target = T3[:3, :3] @ point + T3[:3, 3]
    r = IkSolver(LEG, [Task("knee", "position", target, point=tuple(point))]).solve(q + 0.05)
    assert r.ok
    T3b = LEG.frame(r.q, 3)
    np.testing.assert_allclose(T3b[:3, :3] @ point + T3b[:3, 3], target, atol=1e-9)


# ---------------------------------------------------------------- the task Jacobian
def test_task_jacobian_is_the_derivative_of_the_residual():
    """J = ∂F/∂q by central differences for position, axis and CoG rows (exact) and for
    orientation rows near their target (J_ω: exact at the target), weights included."""
    rng = np.random.default_rng(5)
    q = rng.uniform(-1, 1, 6)
    T = R6.fk(q + 0.3)
    Tnear = R6.fk(q + 1e-4)
    tasks = [Task("tool", "position", T[:3, 3], weight=2.0), Task(4, "axis", T[:3, 0], axis=0, weight=0.5),
             Task("com", "position", R6.com(q + 0.2)), Task(3, "axis", R6.frame(q - 0.4, 3)[:3, 2]),
             Task("tool", "orientation", Tnear, weight=3.0)]
    solver = IkSolver(R6, tasks)
    F, J = solver.residual(q)
    assert F.shape == (3 + 2 + 3 + 2 + 3,) and J.shape == (13, 6)
    h = 1e-6
    fd = np.array([(solver.residual(q + h * e)[0] - solver.residual(q - h * e)[0]) / (2 * h)
                   for e in np.eye(6)]).T
    np.testing.assert_allclose(J[:10], fd[:10], atol=1e-7)
    np.testing.assert_allclose(J[10:], fd[10:], atol=1e-3)


# ---------------------------------------------------------------- orientation error
def rodrigues(e):
    th = np.linalg.norm(e)
    if th == 0:
        return np.eye(3)
    k = e / th
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(th) * K + (1 - math.cos(th)) * K @ K


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=3, max_size=3), st.floats(0.0, math.pi),
       st.lists(st.floats(-3, 3), min_size=3, max_size=3))
def test_rotation_error_is_the_rotation_vector_from_current_to_target(axis, angle, base):
    axis = np.array(axis)
    if np.linalg.norm(axis) < 1e-3:
        axis = np.array([0.0, 0.0, 1.0])
    e_true = angle * axis / np.linalg.norm(axis)
    Rc = rodrigues(np.array(base))
    Rt = rodrigues(e_true) @ Rc
    e = np.zeros(3)
    theta = rotation_error(Rt, Rc, e)
    assert theta == pytest.approx(angle, abs=1e-7)
    np.testing.assert_allclose(rodrigues(e) @ Rc, Rt, atol=1e-7)    # e takes Rc onto Rt


# ---------------------------------------------------------------- input errors
@pytest.mark.parametrize("kwargs, message", [
    ({"tasks": [Task("elbow", "position", np.zeros(3))]}, "frame 'elbow' is not one of"),
    ({"tasks": [Task("tool", "twist", np.zeros(3))]}, "kind must be one of"),
    ({"tasks": [Task("tool", "pose", np.zeros(3))]}, "must be a finite 4x4 pose, got shape"),
    ({"tasks": [Task("tool", "orientation", np.diag([1.0, 1, 2, 1]))]}, "rotation is not orthonormal"),
    ({"tasks": [Task("tool", "position", np.zeros(3))], "method": "newton"},
     "Newton-Raphson needs a square task: 3 task rows for 4 joints"),
    ({"tasks": [Task("tool", "position", np.zeros(3))], "weights": [1, 1, 0, 1]}, "weights must be positive"),
    ({"tasks": [Task("com", "axis", np.ones(3))]}, r"the centre of gravity has a position only \(axis asked\)"),
    ({"tasks": [Task("tool", "position", np.zeros(3), weight=-1.0)]}, "task 0: weight must be positive"),
])
def test_bad_problems_are_refused_in_one_sentence(kwargs, message):
    with pytest.raises(GeometryError, match=message):
        IkSolver(LEG, **kwargs)


# ---------------------------------------------------------------- real time
@pytest.mark.slow
def test_solver_is_allocation_free():
    T = R6.fk(np.full(6, 0.4))
    solver = IkSolver(R6, [Task("tool", "pose", T), Task("com", "position", R6.com(np.full(6, 0.4)))],
                      null_gain=0.5)
    q0, q = np.full(6, 0.3), np.zeros(6)
    assert solver.solve_into(q0.copy()) == IkStatus.OK
    assert_allocation_free(solve_loop, solver.engine, R6.model.buf, R6.data.buf, solver.buf, q0, q)
