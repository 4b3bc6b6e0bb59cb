"""The floating base (:mod:`models.tree.floating`) against Pinocchio's free flyer
(JointModelFreeFlyer carrying the same bodies, built by
:func:`models.tree.reference.build_tree`) at 100 random states and gravities, and
against the composite-robot decomposition of Gastebois 2017 (Theorems 2, 3, 7,
12: the carried tree's blocks are the fixed-base tree's). Our base rates map to
Pinocchio's velocity by v = T(q) qd (velocity_map); its acceleration is T qdd +
Tdot qd (velocity_map_rate)."""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from models.tree.floating import (BASE_JOINTS, NB, FloatingRobot, _rx, _ry, _rz, euler_rates, euler_xyz,
                                  velocity_map, velocity_map_rate)
from models.tree.reference import build_tree
from models.tree.robot import TreeRobot

from tests.assertions import close_within
from tests.models.trees import BIP2000, random_tree

RTOL = 1e-9
close = close_within(RTOL)
WORST: dict[str, float] = {}


@pytest.fixture(scope="module", autouse=True)
def worst_errors():
    """Prints the worst absolute error per quantity against Pinocchio (run with -s:
    the figures of docs/models.md)."""
    yield
    print("worst |ours - Pinocchio|:", {k: f"{v:.1e}" for k, v in WORST.items()})


def _robots():
    return {"bip2000": FloatingRobot.from_yaml(BIP2000), "random_tree": FloatingRobot(random_tree().description)}


@pytest.fixture(scope="module", params=["bip2000", "random_tree"])
def floating(request):
    robot = _robots()[request.param]
    ref = build_tree(robot.fixed, robot.fixed.base, floating=True)
    return robot, ref, ref.model.createData()


def _rotation(a) -> np.ndarray:
    return _rx(a[0]) @ _ry(a[1]) @ _rz(a[2])


def floating_states(robot: FloatingRobot, count: int, seed: int):
    """(q, qd, qdd, g): a base anywhere within 2 m, tilted up to 80 deg either
    way on roll and pitch, any yaw; joints within their limits."""
    rng = np.random.default_rng(seed)
    lo, hi = robot.model.qmin[NB:], robot.model.qmax[NB:]
    for _ in range(count):
        base = np.concatenate([rng.uniform(-2, 2, 3), rng.uniform(-1.4, 1.4, 2), rng.uniform(-np.pi, np.pi, 1)])
        g = rng.normal(size=3)
        yield (np.concatenate([base, rng.uniform(lo, hi)]), rng.uniform(-2, 2, robot.n),
               rng.uniform(-5, 5, robot.n), 9.81 * g / np.linalg.norm(g))


def _to_pinocchio(ref, q):
    """Pinocchio's q (position, quaternion x y z w, joints in its order) and the
    map M (nv, n) from our rates to its velocity."""
    n = q.shape[0]
    qp = np.concatenate([q[:3], pin.Quaternion(_rotation(q[3:6])).coeffs(), q[NB:][ref.perm]])
    M = np.zeros((n, n))
    M[:NB, :NB] = velocity_map(q)
    M[np.arange(NB, n), NB + ref.perm] = 1.0
    return qp, M


def _check(what, ours, theirs):
    err = float(np.abs(ours - theirs).max())
    WORST[what] = max(WORST.get(what, 0.0), err)
    close(ours, theirs, what)


def test_virtual_robot_places_the_base():
    """T_base = Trans(x, y, z) Rx(roll) Ry(pitch) Rz(yaw), the world fixed, and the
    six virtual joints passive and massless."""
    robot = _robots()["bip2000"]
    m = robot.model
    b = m.index("body", robot.fixed.base)
    assert m.joint_names[:NB] == BASE_JOINTS and np.all(m.taumax[:NB] == 0.0)
    assert np.all(m.mass[:b] == 0.0) and m.total_mass == pytest.approx(105.0)
    for q, _, _, _ in floating_states(robot, 20, seed=1):
        T = robot.kinematics(q).Tb[b]
        close(T[:3, :3], _rotation(q[3:6]))
        close(T[:3, 3], q[:3])
        close(robot.data.Tb[0], np.eye(4))


def test_euler_angles_and_rates():
    """euler_xyz inverts the base rotation and euler_rates inverts w = E rates."""
    rng = np.random.default_rng(4)
    out, rates = np.zeros(3), np.zeros(3)
    for _ in range(100):
        a = np.concatenate([rng.uniform(-3, 3, 1), rng.uniform(-1.5, 1.5, 1), rng.uniform(-3, 3, 1)])
        euler_xyz(_rotation(a), out)
        close(out, a)
        w = rng.normal(size=3)
        euler_rates(a, w, rates)
        q = np.concatenate([np.zeros(3), a])
        close(_rotation(a) @ (velocity_map(q)[3:, 3:] @ rates), w)


def test_kinematics_match_free_flyer(floating):
    """Every operational frame and its Jacobian, the CoG and its Jacobian."""
    robot, ref, data = floating
    m = robot.model
    for q, _, _, _ in floating_states(robot, 100, seed=2):
        d = robot.kinematics(q)
        qp, M = _to_pinocchio(ref, q)
        pin.computeJointJacobians(ref.model, data, qp)
        pin.updateFramePlacements(ref.model, data)
        for name, fid in ref.frames.items():
            f = m.index("frame", name)
            _check("frame pose", d.Tf[f], data.oMf[fid].homogeneous)
            _check("frame Jacobian", d.Jf[f], pin.getFrameJacobian(ref.model, data, fid, pin.LOCAL_WORLD_ALIGNED) @ M)
        _check("CoG", d.com[0], pin.centerOfMass(ref.model, data, qp))
        _check("CoG Jacobian", d.Jcom[0], pin.jacobianCenterOfMass(ref.model, data, qp) @ M)


def test_dynamics_match_free_flyer(floating):
    """A (crba), G, C qd + G (nonLinearEffects) and RNEA, less friction (which
    Pinocchio does not model) by its formula (Lammari 2012 eq. IV.10)."""
    robot, ref, data = floating
    m = robot.model
    for q, qd, qdd, g in floating_states(robot, 100, seed=3):
        ref.model.gravity = pin.Motion(g, np.zeros(3))
        qp, M = _to_pinocchio(ref, q)
        v, a = M @ qd, M @ qdd
        a[:NB] += velocity_map_rate(q, qd)
        d = robot.update(q, qd, g)
        A = pin.crba(ref.model, data, qp)
        A = np.triu(A) + np.triu(A, 1).T
        _check("A", d.A, M.T @ A @ M)
        _check("G", d.G, M.T @ pin.computeGeneralizedGravity(ref.model, data, qp))
        bias = np.zeros(robot.n)
        bias[:NB] = velocity_map_rate(q, qd)
        _check("C qd + G", d.h, M.T @ (pin.nonLinearEffects(ref.model, data, qp, v) + A @ bias))
        friction = m.viscous * qd + m.coulomb * np.sign(qd)
        _check("RNEA", robot.rnea(q, qd, qdd, g) - friction, M.T @ pin.rnea(ref.model, data, qp, v, a))


def test_composite_blocks_are_the_fixed_trees(floating):
    """Gastebois 2017, Theorems 2, 3, 7 and 12 with the virtual robot as carrier:
    each frame is T_base T_frame (fixed base), the CoG p + R c, the carried block
    of A is the fixed-base A, the carried rows of G the fixed-base G under the
    gravity seen from the base, R' g."""
    robot, ref, _ = floating
    fixed = TreeRobot(robot.fixed)
    for q, qd, _, g in floating_states(robot, 30, seed=5):
        R = _rotation(q[3:6])
        d = robot.update(q, qd, g)
        f = fixed.update(q[NB:], qd[NB:], R.T @ g)
        Tbase = np.eye(4)
        Tbase[:3, :3], Tbase[:3, 3] = R, q[:3]
        close(d.Tf, Tbase @ f.Tf)
        close(d.com[0], q[:3] + R @ f.com[0])
        close(d.A[NB:, NB:], f.A)
        close(d.G[NB:], f.G)
