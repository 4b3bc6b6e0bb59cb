"""The double-support feed-forward of the tree engine (models.tree.dynamics.contact_share):
tau = A qdd + h - J_cᵀ f_c with f_c the other sole's share of the whole ground wrench, split by
the ZMP between the soles (Kajita et al. 2010; docs/equations.md, double support), against
Pinocchio's RNEA with the stance sole fixed and that wrench applied as an external force, the
ground wrench summed from Pinocchio's own joint forces; its endpoints (ramp 0: the root sole alone;
ramp 1: the model rooted at the other sole, for a motion that keeps both soles still); on a robot
standing still each sole's centre of pressure at its own origin; allocation-free."""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from numba import njit

from models.tree import dynamics as td
from models.tree.reference import _se3, build_tree

from tests.nrt import assert_allocation_free
from tests.models.trees import bip2000, random_states

SOLES = ("left_sole", "right_sole")
_robot: list = []


def robot():
    if not _robot:
        _robot.append(bip2000())
    return _robot[0]


def ours(r, root: str, other: str, q, qd, qdd, g, ramp):
    """(A qdd + h - J_cᵀ f_c of the engine rooted at ``root``, the share at ``other``'s frame; w)."""
    m = r.model
    r.set_root(root)
    d = r.update(q, qd, g)
    tau = d.A @ qdd + d.h
    f = int(m.rootf[m.root_names.index(other)])
    w = td.contact_share(m.buf, r.data.buf, qd, qdd, g, f, ramp, 0.0, 1.0, np.zeros(r.n), tau)
    return tau, w


def zmp_split(W: pin.Force, p: np.ndarray, ramp: float) -> tuple[float, pin.Force]:
    """The other sole's share and wrench (at the root's origin) of the ground wrench W, the other
    sole's origin at p: the ZMP's ratio along the soles' segment (x = -n_y/f_z, y = n_x/f_z in the
    root sole's plane), blended with the ramp; force w f, moment about p w (n_O - p x w f)."""
    f, n = W.linear, W.angular
    w = ramp
    if f[2] > 0.0:
        zmp = np.array([-n[1], n[0]]) / f[2]
        alpha = float(np.clip(zmp @ p[:2] / (p[:2] @ p[:2]), 0.0, 1.0))
        w = ramp + 4.0 * ramp * (1.0 - ramp) * (alpha - ramp)
    at_p = w * (n - np.cross(p, w * f))
    return w, pin.Force(w * f, at_p + np.cross(p, w * f))


def pinocchio_split(r, root: str, other: str, q, qd, qdd, g, ramp):
    """Pinocchio, the stance sole ``root`` fixed: the ground wrench the motion takes (the forces the
    universe passes to its child joints plus the root body's weight, in the root frame at its
    origin), the other sole's share of it (:func:`zmp_split`) applied at its body as an external
    force, RNEA plus the rotor inertia; (tau, w)."""
    ref = build_tree(r.description, root)
    model, data, p = ref.model, ref.model.createData(), ref.perm
    model.gravity = pin.Motion(g, np.zeros(3))
    qp, vp, ap = q[p], qd[p], qdd[p]
    pin.rnea(model, data, qp, vp, ap)                     # data.f: each joint's force, in its frame
    pin.forwardKinematics(model, data, qp)                # data.oMi: the joints' placements
    pin.updateFramePlacements(model, data)
    W = pin.Force.Zero()
    for i in range(1, model.njoints):
        if model.parents[i] == 0:
            W += data.oMi[i].act(data.f[i])
    body = r.description.bodies[ref.root_body]
    frames = {f.name: f for f in r.description.frames}
    base = _se3(frames[root].pose).inverse()              # the root body's frame in the universe
    inertia = base.act(pin.Inertia(body.mass, np.array(body.com), np.array(body.inertia)))
    W += inertia * pin.Motion(-g, np.zeros(3))
    fid = ref.frames[other]
    w, Wc = zmp_split(W, data.oMf[fid].translation, ramp)
    jid = model.frames[fid].parentJoint
    fext = [pin.Force.Zero() for _ in range(model.njoints)]
    fext[jid] = data.oMi[jid].actInv(Wc)
    tau = pin.rnea(model, data, qp, vp, ap, fext) + model.armature * ap
    out = np.empty(r.n)
    out[p] = tau
    return out, w


@pytest.mark.parametrize("root", SOLES)
def test_split_feedforward_matches_pinocchio_with_the_contact_wrench(root):
    """Random states, tilted gravities (a ZMP anywhere, or no vertical load) and ramps in [0, 1],
    rooted at either sole: the torques and the share against Pinocchio's."""
    r = robot()
    other = SOLES[1 - SOLES.index(root)]
    rng = np.random.default_rng(3)
    for q, qd, qdd, g in random_states(r, 12, seed=11):
        ramp = rng.uniform()
        ref, w_ref = pinocchio_split(r, root, other, q, qd, qdd, g, ramp)
        tau, w = ours(r, root, other, q, qd, qdd, g, ramp)
        assert w == pytest.approx(w_ref, abs=1e-12)
        np.testing.assert_allclose(tau, ref, rtol=1e-9, atol=1e-9 * max(1.0, np.abs(ref).max()))


def still_soles_motion(r, root: str, other: str, q, rng):
    """(qd, qdd) that keep the other sole still in the root's frame: J qd = 0, J qdd + J̇ qd = 0
    (J̇ qd by central differences along qd)."""
    m = r.model
    r.set_root(root)
    f = m.index("frame", other)
    J = r.frame_jacobian(q, other)
    N = np.eye(r.n) - np.linalg.pinv(J) @ J
    qd = N @ rng.uniform(-1.0, 1.0, r.n)
    e = 1e-6
    ahead = r.kinematics(q + e * qd).Jf[f].copy()          # a view of the Data: copied
    Jd_qd = (ahead - r.kinematics(q - e * qd).Jf[f]) @ qd / (2 * e)
    qdd = N @ rng.uniform(-3.0, 3.0, r.n) - np.linalg.pinv(J) @ Jd_qd
    return qd, qdd


@pytest.mark.parametrize("root", SOLES)
def test_the_splits_endpoints_are_each_soles_single_support(root):
    """w = 0: the feed-forward rooted at ``root`` alone; w = 1: the one rooted at the other sole
    (its gravity in that sole's axes), when the motion keeps both soles still."""
    r = robot()
    m = r.model
    other = SOLES[1 - SOLES.index(root)]
    rng = np.random.default_rng(5)
    for q, _, _, g in random_states(r, 20, seed=12):
        qd, qdd = still_soles_motion(r, root, other, q, rng)
        r.set_root(root)
        d = r.update(q, qd, g)
        alone = d.A @ qdd + d.h
        R = d.Tf[m.index("frame", other)][:3, :3].copy()   # the other sole's axes in the root's
        np.testing.assert_array_equal(ours(r, root, other, q, qd, qdd, g, 0.0)[0], alone)
        r.set_root(other)
        d = r.update(q, qd, R.T @ g)
        there = d.A @ qdd + d.h
        np.testing.assert_allclose(ours(r, root, other, q, qd, qdd, g, 1.0)[0], there, rtol=1e-6,
                                   atol=1e-6 * np.abs(there).max())
        assert np.abs(there - alone).max() > 1.0            # the load moved: the endpoints differ


@njit
def _contact_cycles(mbuf, dbuf, qd, qdd, g, f, w, scratch, tau, count):
    for _ in range(count):
        td.contact_share(mbuf, dbuf, qd, qdd, g, f, w, 0.0, 1.0, scratch, tau)


def test_contact_share_allocates_nothing():
    r = robot()
    m = r.model
    r.set_root("left_sole")
    q, qd, qdd, g = next(random_states(r, 1, seed=2))
    r.update(q, qd, g)
    f = int(m.rootf[m.root_names.index("right_sole")])
    assert_allocation_free(_contact_cycles, m.buf, r.data.buf, qd, qdd, g, f, 0.4, np.zeros(r.n), np.zeros(r.n))


def test_contact_share_refuses_a_frame_out_of_range():
    r = robot()
    m = r.model
    q, qd, qdd, g = next(random_states(r, 1, seed=2))
    with pytest.raises(ValueError, match="contact frame"):
        td.contact_share(m.buf, r.data.buf, qd, qdd, g, len(m.frame_names), 0.5, 0.0, 1.0, np.zeros(r.n), np.zeros(r.n))
