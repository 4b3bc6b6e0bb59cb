"""The composite models of Gastebois 2017 ch. 3 (models/composite/models.py) against the
recursive tree engine (itself checked against Pinocchio in test_tree_pinocchio.py),
standing on either sole at random states under tilted gravity; and the printed
forms of Theorems 4, 5, 8 and 13 (docs/composite_models.md) shown to disagree
with the same engine where the corrected ones agree."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from models import GeometryError
from models.composite.models import composite_setup, composite_update, set_stance
from models.tree.config import tree_from_dict
from models.tree.robot import TreeRobot

from tests.assertions import close_within
from tests.models.tree.test_tree_engine import _allocations
from tests.models.trees import bip2000, random_states, random_tree_dict

TOL = 1e-9
STANCES = ("left_sole", "right_sole")
ROBOT = bip2000()


close = close_within(TOL)


@pytest.fixture(params=STANCES)
def standing(request):
    """Composite model, plan and data standing on a sole, and the tree engine
    rooted at the same sole."""
    ROBOT.set_root(request.param)
    return composite_setup(ROBOT.description, request.param)


def _states(count, seed):
    return random_states(ROBOT, count, seed=seed)


def test_composite_equals_tree_engine(standing):
    """Body poses, every operational frame (both soles, pelvis, trunk, force
    sensors) and its Jacobian, the CoG and CoG Jacobian of the robot and of each
    sub-tree, A, G and C (Christoffel) equal the recursive engine's to 1e-9."""
    m, p, d = standing
    for q, qd, _, g in _states(25, seed=11):
        composite_update(m.buf, p.buf, d.buf, q, qd, g)
        t = ROBOT.update(q, qd, g)
        for ours, ref in ((d.Tb, t.Tb), (d.Tf, t.Tf), (d.Jf, t.Jf), (d.com, t.com), (d.Jcom, t.Jcom),
                          (d.A, t.A), (d.G, t.G), (d.C, t.C)):
            close(ours, ref)


def test_body_cog_jacobians_equal_tree_engine(standing):
    """Every body's CoG Jacobian (stance bodies by Theorem 5, the old base by
    Theorem 5 with k = 0, hanging bodies by Theorem 3) against the tree engine's
    point Jacobian at that body's CoG."""
    m, p, d = standing
    for q, qd, _, g in _states(5, seed=12):
        composite_update(m.buf, p.buf, d.buf, q, qd, g)
        for b, name in enumerate(m.body_names):
            close(d.Jb[b], ROBOT.point_jacobian(q, name, m.com[b]))


def test_composite_update_allocates_nothing(standing):
    m, p, d = standing
    q, qd, _, g = next(_states(1, seed=4))

    @njit
    def cycles(mb, pb, db, q, qd, g, count):
        for _ in range(count):
            composite_update(mb, pb, db, q, qd, g)

    one, many = _allocations(cycles, m.buf, p.buf, d.buf, q, qd, g)
    assert one == many


def test_dynamics_match_pinocchio(standing):
    """Directly against Pinocchio rooted at the same sole: A (crba), C qd + G
    (nonLinearEffects), G (computeGeneralizedGravity)."""
    pin = pytest.importorskip("pinocchio")
    from models.tree.reference import build_tree

    m, p, d = standing
    ref = build_tree(ROBOT.description, ROBOT.root)
    data, perm = ref.model.createData(), ref.perm
    for q, qd, _, g in _states(10, seed=19):
        ref.model.gravity = pin.Motion(g, np.zeros(3))
        composite_update(m.buf, p.buf, d.buf, q, qd, g)
        A = pin.crba(ref.model, data, q[perm])
        close(d.A[np.ix_(perm, perm)], np.triu(A) + np.triu(A, 1).T)
        close((d.C @ qd + d.G)[perm], pin.nonLinearEffects(ref.model, data, q[perm], qd[perm]))
        close(d.G[perm], pin.computeGeneralizedGravity(ref.model, data, q[perm]))


def test_switching_stance_in_one_data():
    """One plan and data, the support changed by set_stance between updates, as a
    walk would: each update is the tree engine's on that sole."""
    m, p, d = composite_setup(ROBOT.description, "left_sole")
    for k, (q, qd, _, g) in enumerate(_states(6, seed=20)):
        stance = STANCES[k % 2]
        set_stance(p.buf, d.buf, p.stance_names.index(stance))
        ROBOT.set_root(stance)
        composite_update(m.buf, p.buf, d.buf, q, qd, g)
        t = ROBOT.update(q, qd, g)
        for ours, ref in ((d.Tf, t.Tf), (d.Jcom, t.Jcom), (d.A, t.A), (d.C, t.C), (d.G, t.G)):
            close(ours, ref)
    with pytest.raises(ValueError, match="stance index out of range"):
        set_stance(p.buf, d.buf, len(p.stance_names))


def _random_chains(seed):
    """The random tree's joints (gamma, b, alpha, a, theta, d all non-zero, two
    prismatic joints, full inertias, a tilted gravity) re-parented as three serial
    chains on the base: j0-j2, j3-j6 (prismatic first joint), j7-j9 (prismatic
    middle joint), standing on a frame at the end of either of the first two."""
    d = random_tree_dict(seed)
    parents = ("b0", "j0", "j1", "b0", "j3", "j4", "j5", "b0", "j7", "j8")
    for joint, parent in zip(d["joints"], parents):
        joint["parent"] = parent
    d["frames"] = {"leaf": d["frames"]["leaf"] | {"body": "j6"},
                   "other_leaf": d["frames"]["other_leaf"] | {"body": "j2"},
                   "inner": d["frames"]["inner"] | {"body": "j8"}}
    d["roots"] = ["b0", "leaf", "other_leaf"]
    d["subtrees"] = {"first": "j0", "second": "j3", "twig": "j8"}
    return TreeRobot(tree_from_dict(d, "<random chains>"))


@pytest.mark.parametrize("stance", ["leaf", "other_leaf"])
def test_random_chains_equal_tree_engine(stance):
    """Any base carrying serial chains, prismatic joints included: frames, CoG
    Jacobians, A, G and C equal the tree engine's."""
    robot = _random_chains(7)
    robot.set_root(stance)
    m, p, d = composite_setup(robot.description, stance)
    for q, qd, _, g in random_states(robot, 10, seed=21):
        composite_update(m.buf, p.buf, d.buf, q, qd, g)
        t = robot.update(q, qd, g)
        for ours, ref in ((d.Tb, t.Tb), (d.Tf, t.Tf), (d.Jf, t.Jf), (d.com, t.com), (d.Jcom, t.Jcom),
                          (d.A, t.A), (d.G, t.G), (d.C, t.C)):
            close(ours, ref)


def test_branch_coupling_blocks(standing):
    """The blocks of Theorem 6 with two hanging chains (swing leg, trunk): their
    cross block is exactly 0, and each one's own block is its own chain's inertia
    matrix A_c (plus rotor inertia), whatever the stance leg's joints."""
    m, p, d = standing
    cs = int(p.stchain[int(d.stance[0])])
    chains = [[int(j) for j in p.chain[c, : int(p.clen[c])]] for c in range(len(p.clen))]
    stance = chains[cs]
    swing, trunk = [c for k, c in enumerate(chains) if k != cs]
    for q, qd, _, g in _states(5, seed=22):
        composite_update(m.buf, p.buf, d.buf, q, qd, g)
        first = d.A.copy()
        assert np.all(first[np.ix_(swing, trunk)] == 0.0)
        for c in (swing, trunk):
            close(first[np.ix_(c, c)], d.A0[np.ix_(c, c)] + np.diag(m.armature[c]))
        q2 = q.copy()
        q2[stance] = np.random.default_rng(len(stance)).uniform(m.qmin[stance], m.qmax[stance])
        composite_update(m.buf, p.buf, d.buf, q2, qd, g)
        for c in (swing, trunk):
            close(d.A[np.ix_(c, c)], first[np.ix_(c, c)])


# ------------------------------------------------------------- printed forms
def _stance_parts(p, d):
    """R = R_0->i, the stance chain's joints and its bodies, the old base (body 0)
    first and the stance foot last."""
    cs = int(p.stchain[int(d.stance[0])])
    joints = [int(j) for j in p.chain[cs, : int(p.clen[cs])]]
    return d.TS[:3, :3].copy(), joints, [0] + [j + 1 for j in joints]


def test_printed_theorem_4_angular_part_disagrees(standing):
    """Eq. 163 prints J_w,i0 = +R_i->0 J_w,0i; the old base (pelvis frame) turns
    the other way: -R_i->0 J_w,0i (ours) is the tree engine's."""
    m, p, d = standing
    pelvis = m.frame_names.index("pelvis")
    for q, qd, _, g in _states(5, seed=13):
        composite_update(m.buf, p.buf, d.buf, q, qd, g)
        R, joints, _ = _stance_parts(p, d)
        ref = ROBOT.frame_jacobian(q, "pelvis")[3:]
        printed = R.T @ d.JS[3:]
        close(d.Jd0[3:], ref)
        close(d.Jf[pelvis], ROBOT.frame_jacobian(q, "pelvis"))
        assert np.abs(printed[:, joints] - ref[:, joints]).max() > 0.5


def test_printed_theorem_5_angular_part_disagrees(standing):
    """Eq. 164 prints J_w,ik = R_i->0 J_w,0k (columns 1..k); the tree engine
    gives -R_i->0 (columns k+1..i of J_w,0i), as ours, for every stance body."""
    m, p, d = standing
    for q, qd, _, g in _states(5, seed=14):
        composite_update(m.buf, p.buf, d.buf, q, qd, g)
        R, joints, bodies = _stance_parts(p, d)
        for b in bodies[1:]:              # the stance foot too: it does not move
            ref = ROBOT.point_jacobian(q, m.body_names[b], m.com[b])[3:]
            printed = R.T @ d.J0[b, 3:]
            close(d.Jb[b, 3:], ref)
            assert np.abs(printed - ref).max() > 0.5


def _printed_stance_inertia(m, d, R, joints, bodies):
    """Theorem 8 as printed: sum over k = 1..i (no old base) with the printed
    angular Jacobians R_i->0 J_w,0k (the linear parts are right)."""
    n = m.n
    A = np.zeros((n, n))
    for b in bodies[1:]:
        Rb = d.Tb[b, :3, :3]
        I = Rb @ m.inertia[b] @ Rb.T
        Jv, Jw = d.Jb[b, :3], R.T @ d.J0[b, 3:]
        A += m.mass[b] * Jv.T @ Jv + Jw.T @ I @ Jw
    return A[np.ix_(joints, joints)]


def _bodies_term(m, d, bodies, joints):
    """sum over ``bodies`` of J^T diag(m, I) J on the stance columns (corrected Jacobians)."""
    A = np.zeros((len(joints), len(joints)))
    for b in bodies:
        Rb = d.Tb[b, :3, :3]
        I = Rb @ m.inertia[b] @ Rb.T
        J = d.Jb[b][:, joints]
        A += m.mass[b] * J[:3].T @ J[:3] + J[3:].T @ I @ J[3:]
    return A


def test_printed_theorem_8_disagrees(standing):
    """The stance block of A is the base-distal inertia of bodies 0..i (old base
    included, corrected Jacobians) plus alpha of the hanging chains: it equals the
    tree engine's. The printed Theorem 8 (k = 1..i, printed angular parts) does
    not, nor does the corrected sum without the old base."""
    m, p, d = standing
    for q, qd, _, g in _states(5, seed=15):
        composite_update(m.buf, p.buf, d.buf, q, qd, g)
        t = ROBOT.update(q, qd, g)
        R, joints, bodies = _stance_parts(p, d)
        others = [b for b in range(1, m.nb) if b not in bodies]
        alpha = _bodies_term(m, d, others, joints)
        block = np.ix_(joints, joints)
        ref = t.A[block] - np.diag(m.armature[joints])
        close(_bodies_term(m, d, bodies, joints) + alpha, ref)
        printed = _printed_stance_inertia(m, d, R, joints, bodies) + alpha
        no_old_base = _bodies_term(m, d, bodies[1:], joints) + alpha
        assert np.abs(printed - ref).max() > 0.1
        assert np.abs(no_old_base - ref).max() > 0.1


def test_corrected_eq_350(standing):
    """Angular part of the base-distal inertia from the chain model alone:
    eq. 350 prints A_w,i0 = A_w,0i; the corrected form (docs/composite_models.md)
    A_w,0i + J_w,0i^T (sum_k=0..i I_0k) J_w,0i - delta - delta^T,
    delta = sum_k=1..i J_w,0k^T I_0k J_w,0i, equals sum_k J_w,ik^T I_ik J_w,ik with
    the tree engine's angular Jacobians; the printed one does not."""
    m, p, d = standing
    for q, qd, _, g in _states(5, seed=17):
        composite_update(m.buf, p.buf, d.buf, q, qd, g)
        t = ROBOT.update(q, qd, g)
        _, joints, bodies = _stance_parts(p, d)
        Jwi = d.JS[3:]
        I0 = {b: d.T0[b, :3, :3] @ m.inertia[b] @ d.T0[b, :3, :3].T for b in bodies}
        A_w0i = sum(d.J0[b, 3:].T @ I0[b] @ d.J0[b, 3:] for b in bodies[1:])
        delta = sum(d.J0[b, 3:].T @ I0[b] @ Jwi for b in bodies[1:])
        corrected = A_w0i + Jwi.T @ sum(I0.values()) @ Jwi - delta - delta.T
        ref = np.zeros((m.n, m.n))
        for b in bodies:
            Jw = ROBOT.point_jacobian(q, m.body_names[b], m.com[b])[3:]
            Rb = t.Tb[b, :3, :3]
            ref += Jw.T @ Rb @ m.inertia[b] @ Rb.T @ Jw
        close(corrected, ref)
        assert np.abs(A_w0i - ref)[np.ix_(joints, joints)].max() > 0.1


def test_printed_theorem_13_omits_the_old_base(standing):
    """Theorem 13 (eq. 448) from the stance chain's own model: G_i0 = G_0i(g_0)
    - sum_k (dR_i->0/dq . t_0->k + J_v,i0)^T m_k g_i with g_0 = R_0->i g_i. Summed
    over k = 0..i (old base included) and with the hanging chains' G* of Theorem
    12 it is the tree engine's stance gravity; the printed k = 1..i misses the 20 kg
    pelvis's weight through its lever."""
    m, p, d = standing
    for q, qd, _, g in _states(5, seed=16):
        composite_update(m.buf, p.buf, d.buf, q, qd, g)
        t = ROBOT.update(q, qd, g)
        R, joints, bodies = _stance_parts(p, d)
        g0 = R @ g
        G0i = -sum(d.J0[b, :3].T @ (m.mass[b] * g0) for b in bodies[1:])

        def lever(b):            # (dR_i->0/dq . t_0->k + J_v,i0)^T m_k g_i on the stance columns
            col = np.array([-R.T @ np.cross(d.z0[j], d.p0[b]) for j in joints]).T + d.Jd0[:3, joints]
            return col.T @ (m.mass[b] * g)

        g_star = -sum(d.Jb[b, :3][:, joints].T @ (m.mass[b] * g) for b in range(1, m.nb) if b not in bodies)
        corrected = G0i[joints] - sum(lever(b) for b in bodies) + g_star
        printed = G0i[joints] - sum(lever(b) for b in bodies[1:]) + g_star
        close(corrected, t.G[joints])
        close(d.G, t.G)
        assert np.abs(printed - t.G[joints]).max() > 1.0


def _christoffel(A_of_q, q, qd, h=1e-6):
    """C(q, qd) from the Christoffel symbols of central differences of A(q)."""
    n = q.shape[0]
    dA = np.empty((n, n, n))
    for k in range(n):
        e = np.zeros(n)
        e[k] = h
        dA[:, :, k] = (A_of_q(q + e) - A_of_q(q - e)) / (2 * h)
    c = 0.5 * (dA + dA.transpose(0, 2, 1) - dA.transpose(2, 0, 1))     # c[i, j, k]
    return np.einsum("ijk,k->ij", c, qd)


def test_printed_theorem_11_disagrees(standing):
    """C is the Christoffel matrix of A (c_ijk = 1/2 (dA_ij/dq_k + dA_ik/dq_j -
    dA_jk/dq_i), by differences of our A); the same symbols of the A that the
    printed Theorems 5/8 build (printed angular Jacobians, no old base), which
    Theorem 11 differentiates, give another C."""
    m, p, d = standing
    g = np.array(m.gravity)

    def A_ours(q):
        composite_update(m.buf, p.buf, d.buf, q, q * 0.0, g)
        return d.A.copy()

    def A_printed(q):
        composite_update(m.buf, p.buf, d.buf, q, q * 0.0, g)
        R, joints, bodies = _stance_parts(p, d)
        A = np.diag(m.armature).astype(float)
        for b in range(1, m.nb):
            Rb = d.Tb[b, :3, :3]
            Jv = d.Jb[b, :3]
            Jw = R.T @ d.J0[b, 3:] if b in bodies else d.Jb[b, 3:]
            A += m.mass[b] * Jv.T @ Jv + Jw.T @ Rb @ m.inertia[b] @ Rb.T @ Jw
        return A

    for q, qd, _, g_ in _states(3, seed=18):
        composite_update(m.buf, p.buf, d.buf, q, qd, g_)
        C = d.C.copy()
        ref = _christoffel(A_ours, q, qd)
        np.testing.assert_allclose(C, ref, atol=1e-6 * np.abs(ref).max())
        printed = _christoffel(A_printed, q, qd)
        assert np.abs(printed - C).max() > 1.0          # N m s: at least 1.98 over 80 random states


# ------------------------------------------------------------------ refusals
def test_stance_must_be_a_sole():
    with pytest.raises(GeometryError, match="roots: 'pelvis' is not a single support"):
        composite_setup(ROBOT.description, "pelvis")


def test_branching_chain_is_refused():
    desc = tree_from_dict(random_tree_dict(5), "<random tree>")
    with pytest.raises(GeometryError, match="carries two joints"):
        composite_setup(desc, "leaf")
