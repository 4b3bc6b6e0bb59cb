"""Cross-check of the tree engine against Pinocchio (the `pin` wheel), rooted at
each of the description's roots, at 100 random states and tilted gravities:
operational frames and their Jacobians, the CoG of the robot and of each
sub-tree with their Jacobians, A (crba), C qd + G (nonLinearEffects), G
(computeGeneralizedGravity), RNEA, C(q, qd) against the Christoffel symbols of
dA/dq from Pinocchio's RNEA derivatives (and its computeCoriolisMatrix). Pinocchio is built from the same description
re-rooted by :mod:`models.tree.reference` with its own SE3 algebra. Friction,
which Pinocchio's RNEA does not model, is removed from ours by its explicit
formula (Lammari 2012 eq. IV.10). The random tree also runs with fixed placements before
some joints' KK parameters (imported URDFs), crossed both ways."""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from models.tree.reference import build_tree

from tests.assertions import close_within
from tests.models.trees import bip2000, random_placed_tree, random_states, random_tree

RTOL = 1e-9
ROBOTS = {"bip2000": bip2000, "random_tree": random_tree, "random_placed": random_placed_tree}
CASES = [("bip2000", r) for r in ("pelvis", "left_sole", "right_sole")] + \
        [("random_tree", r) for r in ("b0", "leaf", "inner", "j4")] + \
        [("random_placed", r) for r in ("b0", "leaf", "inner")]
_cache: dict = {}


close = close_within(RTOL)


@pytest.fixture(params=CASES, ids=[f"{a}-{b}" for a, b in CASES])
def rooted(request):
    name, root = request.param
    if name not in _cache:
        _cache[name] = ROBOTS[name]()
    robot = _cache[name]
    robot.set_root(root)
    ref = build_tree(robot.description, root)
    return robot, ref, ref.model.createData()


def test_root_is_fixed_at_its_frame(rooted):
    """The body the model is rooted at does not move, and its root frame is the base."""
    robot, ref, _ = rooted
    m = robot.model
    r = m.index("root", robot.root)
    b = int(m.rootb[r])
    for q, qd, _, _ in random_states(robot, 5, seed=9):
        d = robot.update(q, qd)
        close(d.Tb[b], m.rootT[r])
        assert np.all(robot.point_jacobian(q, m.body_names[b], [0.1, 0.2, 0.3]) == 0.0)
        if robot.root in m.frame_names:
            close(d.Tf[m.index("frame", robot.root)], np.eye(4))
    assert m.body_names[b] == ref.root_body


@pytest.mark.slow
def test_kinematics_match_pinocchio(rooted):
    """Every body's pose, every operational frame and its Jacobian, and the point
    Jacobian of a body's CoG."""
    robot, ref, data = rooted
    m, p = robot.model, ref.perm
    for q, _, _, _ in random_states(robot, 100, seed=1):
        d = robot.kinematics(q)
        qp = q[p]
        pin.computeJointJacobians(ref.model, data, qp)
        pin.updateFramePlacements(ref.model, data)
        for b, name in enumerate(m.body_names):               # every body: its frame at its CoG
            at_com = d.Tb[b].copy()
            at_com[:3, 3] += at_com[:3, :3] @ m.com[b]
            close(at_com, data.oMf[ref.coms[name]].homogeneous)
        for name, fid in ref.frames.items():
            f = m.index("frame", name)
            close(d.Tf[f], data.oMf[fid].homogeneous)
            close(d.Jf[f][:, p], pin.getFrameJacobian(ref.model, data, fid, pin.LOCAL_WORLD_ALIGNED))
        body = m.body_names[int(abs(q[0]) * 1e6) % m.nb]   # a body chosen pseudo-randomly
        close(robot.point_jacobian(q, body, robot.description.bodies[body].com)[:, p],
              pin.getFrameJacobian(ref.model, data, ref.coms[body], pin.LOCAL_WORLD_ALIGNED))


def test_com_matches_pinocchio(rooted):
    """Whole robot: Pinocchio's centerOfMass leaves out the fixed root body, so
    M c = M_moving c_pin + m_root c_root. Sub-trees: sum of m_b times the
    position and Jacobian of a Pinocchio frame at each body's CoG."""
    robot, ref, data = rooted
    m, p = robot.model, ref.perm
    root = ref.root_body
    m_root = robot.description.bodies[root].mass
    for q, _, _, _ in random_states(robot, 100, seed=2):
        d = robot.kinematics(q)
        qp = q[p]
        c_pin = pin.centerOfMass(ref.model, data, qp)
        J_pin = pin.jacobianCenterOfMass(ref.model, data, qp)
        pin.computeJointJacobians(ref.model, data, qp)
        pin.updateFramePlacements(ref.model, data)
        moving = m.total_mass - m_root
        c_root = data.oMf[ref.coms[root]].translation
        close(d.com[0], (moving * c_pin + m_root * c_root) / m.total_mass)
        close(d.Jcom[0][:, p], moving * J_pin / m.total_mass)
        for g, group in enumerate(m.group_names[1:], start=1):
            members = [b for b in m.body_names if m.gmass[g, m.index("body", b)] > 0]
            mass = sum(robot.description.bodies[b].mass for b in members)
            c = sum(robot.description.bodies[b].mass * data.oMf[ref.coms[b]].translation for b in members)
            J = sum(robot.description.bodies[b].mass
                    * pin.getFrameJacobian(ref.model, data, ref.coms[b], pin.LOCAL_WORLD_ALIGNED)[:3]
                    for b in members)
            close(d.com[g], c / mass)
            close(d.Jcom[g][:, p], J / mass)


def test_dynamics_match_pinocchio(rooted):
    robot, ref, data = rooted
    m, p = robot.model, ref.perm
    for q, qd, qdd, g in random_states(robot, 100, seed=3):
        ref.model.gravity = pin.Motion(g, np.zeros(3))
        qp, qdp, qddp = q[p], qd[p], qdd[p]
        d = robot.update(q, qd, g)
        A = pin.crba(ref.model, data, qp)
        close(d.A[np.ix_(p, p)], np.triu(A) + np.triu(A, 1).T)
        close(d.h[p], pin.nonLinearEffects(ref.model, data, qp, qdp))
        close(d.G[p], pin.computeGeneralizedGravity(ref.model, data, qp))
        friction = m.viscous * qd + m.coulomb * np.sign(qd)
        close((robot.rnea(q, qd, qdd, g) - friction)[p], pin.rnea(ref.model, data, qp, qdp, qddp))


def _christoffel(ref, data, q, qd):
    """C_ij = sum_k c_ijk qd_k, c_ijk = 1/2 (dA_ij/dq_k + dA_ik/dq_j - dA_jk/dq_i),
    with dA_ij/dq_k = d(A e_j)_i/dq_k from Pinocchio's RNEA derivatives at zero
    velocity and gravity."""
    n = q.shape[0]
    gravity = ref.model.gravity
    ref.model.gravity = pin.Motion(np.zeros(6))
    dA = np.zeros((n, n, n))                                  # dA[k, i, j] = dA_ij/dq_k
    for j in range(n):
        pin.computeRNEADerivatives(ref.model, data, q, np.zeros(n), np.eye(n)[j])
        dA[:, :, j] = data.dtau_dq.T
    ref.model.gravity = gravity
    return 0.5 * (np.einsum("kij,k->ij", dA, qd) + np.einsum("jik,k->ij", dA, qd)
                  - np.einsum("ijk,k->ij", dA, qd))


def test_coriolis_is_christoffel(rooted):
    robot, ref, data = rooted
    p = ref.perm
    for q, qd, _, g in random_states(robot, 100, seed=4):
        C = robot.update(q, qd, g).C[np.ix_(p, p)]
        close(C, _christoffel(ref, data, q[p], qd[p]))
        close(C, pin.computeCoriolisMatrix(ref.model, data, q[p], qd[p]))
