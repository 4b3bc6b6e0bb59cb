"""The tree engine's own invariants: a swap of rooting allocates nothing and keeps
the meaning of q, and a chain file through the tree engine gives what the chain
engine gives."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit
from numba.core.runtime import _nrt_python, rtsys

from models import GeometryError, Robot
from models.chain.dynamics import rnea
from models.tree.dynamics import set_root, update, update_cycle
from models.tree.robot import TreeRobot

from tests.models.chains import BIP_LEG
from tests.models.chains import random_states as chain_states
from tests.models.trees import bip2000, random_states

ROBOT = bip2000()


@njit
def _swap_cycles(kernel, mbuf, dbuf, q, qd, g, nroots, count):
    for k in range(count):
        set_root(mbuf, dbuf, k % nroots)
        kernel(mbuf, dbuf, q, qd, g)


@njit
def _allocating(count):
    s = 0.0
    for k in range(count):
        s += np.empty(3).shape[0]
    return s


def _allocations(fn, *args):
    """NRT allocations made by fn(*args, 1) and by fn(*args, 1001)."""
    fn(*args, 1)
    _nrt_python.memsys_enable_stats()
    try:
        counts = []
        for count in (1, 1001):
            before = rtsys.get_allocation_stats().alloc
            fn(*args, count)
            counts.append(rtsys.get_allocation_stats().alloc - before)
    finally:
        _nrt_python.memsys_disable_stats()
    return counts


def test_the_allocation_counter_counts():
    one, many = _allocations(_allocating)
    assert many - one == 1000


@pytest.mark.slow
@pytest.mark.parametrize("kernel", [update, update_cycle], ids=["update", "update_cycle"])
def test_swap_and_update_allocate_nothing(kernel):
    """A thousand swaps among the three rootings, each followed by an update (full
    or cycle): the only NRT allocations are the call's own argument boxing."""
    m = ROBOT.model
    q, qd, _, g = next(random_states(ROBOT, 1, seed=4))
    one, many = _allocations(_swap_cycles, kernel, m.buf, ROBOT.data.buf.copy(), q, qd, g, len(m.root_names))
    assert 0 < one == many


def _relative(d, a, b, qd):
    """Placement of frame b in frame a, and b's twist relative to a in a's axes."""
    Ta, Tb = d.Tf[a], d.Tf[b]
    va, wa = d.Jf[a][:3] @ qd, d.Jf[a][3:] @ qd
    vb, wb = d.Jf[b][:3] @ qd, d.Jf[b][3:] @ qd
    R = Ta[:3, :3].T
    v = R @ (vb - va - np.cross(wa, Tb[:3, 3] - Ta[:3, 3]))
    return np.linalg.inv(Ta) @ Tb, np.concatenate([v, R @ (wb - wa)])


@pytest.mark.slow
def test_q_keeps_its_meaning_whatever_the_root():
    """The same (q, qd) give the same placement and relative twist of any two
    frames, and the same CoG seen from the pelvis, whatever the rooting: only the
    base frame changes (a reversed joint's sign and placements must be right)."""
    robot = bip2000()
    m = robot.model
    nf = len(m.frame_names)
    pelvis = m.index("frame", "pelvis")
    for q, qd, _, _ in random_states(robot, 20, seed=6):
        seen = []
        for root in m.root_names:
            robot.set_root(root)
            d = robot.kinematics(q)
            rel = [_relative(d, a, b, qd) for a in range(nf) for b in range(nf)]
            com = np.linalg.inv(d.Tf[pelvis]) @ np.append(d.com, np.ones((len(m.group_names), 1)), axis=1).T
            seen.append((rel, com))
        for rel, com in seen[1:]:
            for (T, V), (T0, V0) in zip(rel, seen[0][0]):
                np.testing.assert_allclose(T, T0, atol=1e-12)
                np.testing.assert_allclose(V, V0, atol=1e-11)
            np.testing.assert_allclose(com, seen[0][1], atol=1e-12)


def test_swap_selects_the_precomputed_rooting():
    robot = bip2000()
    q = next(random_states(robot, 1, seed=7))[0]
    frames = {}
    for root in robot.model.root_names:
        robot.set_root(root)
        frames[root] = robot.frame(q, root)
        np.testing.assert_allclose(frames[root], np.eye(4), atol=1e-15)
    robot.set_root("left_sole")
    assert not np.allclose(robot.frame(q, "right_sole"), np.eye(4))
    with pytest.raises(GeometryError, match="unknown root 'l_knee'"):
        robot.set_root("l_knee")
    with pytest.raises(ValueError, match="rooting index out of range"):
        set_root(robot.model.buf, robot.data.buf, 3)


def test_cycle_update_is_the_full_update_without_c():
    """update_cycle gives the full update's poses, axes, CoGs and their Jacobians,
    A, G, friction, the root frames and their Jacobians, and h = C qd + G by
    Newton-Euler; it leaves C and the other frames as they were."""
    full, cyc = bip2000(), bip2000()
    m = full.model
    roots = [m.index("frame", name) for name in m.root_names]
    others = [f for f in range(len(m.frame_names)) if f not in roots]
    for root in m.root_names:
        full.set_root(root)
        cyc.set_root(root)
        for q, qd, _, g in random_states(full, 10, seed=11):
            d, c = full.update(q, qd, g), cyc.data
            c.C[:], c.Tf[:], c.Jf[:] = 7.0, 7.0, 7.0
            update_cycle(m.buf, c.buf, q, qd, g)
            for key in ("Tb", "S", "pc", "com", "Jcom", "A", "G", "tau_f"):
                np.testing.assert_allclose(getattr(c, key), getattr(d, key), rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(c.h, d.h, rtol=1e-10, atol=1e-10)
            np.testing.assert_allclose(c.Tf[roots], d.Tf[roots], rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(c.Jf[roots], d.Jf[roots], rtol=1e-12, atol=1e-12)
            assert np.all(c.C == 7.0) and np.all(c.Tf[others] == 7.0) and np.all(c.Jf[others] == 7.0)


@pytest.mark.slow
def test_chain_file_matches_the_chain_engine():
    """bip_leg.yaml through the tree engine (a tree without branches, massless
    base) gives the chain engine's tool frame, CoG, A, G and C qd + G."""
    chain = Robot.from_yaml(BIP_LEG)
    tree = TreeRobot.from_yaml(BIP_LEG)
    g = np.array(chain.description.gravity)
    for q, qd, qdd in chain_states(chain, 50, seed=8):
        d = tree.update(q, qd, g)
        np.testing.assert_allclose(d.Tf[0], chain.fk(q), atol=1e-12)
        np.testing.assert_allclose(d.Jf[0], chain.jacobian(q), atol=1e-12)
        np.testing.assert_allclose(d.com[0], chain.com(q), atol=1e-12)
        np.testing.assert_allclose(d.Jcom[0], chain.com_jacobian(q), atol=1e-12)
        np.testing.assert_allclose(d.A, chain.inertia(q), atol=1e-11)
        np.testing.assert_allclose(d.G, chain.gravity(q), atol=1e-10)
        np.testing.assert_allclose(d.h, chain.coriolis(q, qd) @ qd + chain.gravity(q), atol=1e-10)
        np.testing.assert_allclose(tree.rnea(q, qd, qdd, g), chain.rnea(q, qd, qdd), atol=1e-10)


def test_bip2000_geometry_at_zero():
    """Straight legs at q = 0, from the YAML's numbers by hand: soles 0.42 + 0.42
    + 0.08 m below the pelvis and 0.10 m either side (gamma = +-90 deg, a = 0.10),
    the trunk frame 0.10 + 0.30 m above it (b = 0.10), all axes aligned."""
    robot = bip2000()
    robot.set_root("pelvis")
    q = np.zeros(robot.n)
    for name, xyz in (("left_sole", (0.0, 0.10, -0.92)), ("right_sole", (0.0, -0.10, -0.92)),
                      ("trunk", (0.0, 0.0, 0.40)), ("left_fs_front_right", (0.14, 0.055, -0.92))):
        T = robot.frame(q, name)
        np.testing.assert_allclose(T[:3, 3], xyz, atol=1e-15)
        np.testing.assert_allclose(T[:3, :3], np.eye(3), atol=1e-15)


def test_kernels_refuse_mismatched_inputs():
    """The kernels' views trust sizes: a wrong buffer or vector is refused before
    anything is read or written."""
    m, d = ROBOT.model.buf, ROBOT.data.buf.copy()
    q, g = np.zeros(ROBOT.n), np.array([0.0, 0.0, -9.81])
    with pytest.raises(ValueError, match="qd must match q"):
        update(m, d, q, np.zeros(ROBOT.n - 1), g)
    with pytest.raises(ValueError, match="gravity must have 3"):
        update(m, d, q, q, np.zeros(2))
    with pytest.raises(ValueError, match="model buffer does not match"):
        update(m, d, np.zeros(ROBOT.n + 1), np.zeros(ROBOT.n + 1), g)
    with pytest.raises(ValueError, match="data buffer does not match"):
        update(m, d[:-1].copy(), q, q, g)


def test_a_given_gravity_runs_the_kernels_compiled_for_the_models_own():
    """A gravity the caller gives, writable or read-only, reaches the kernels as a copy of the array type
    of the model's own gravity: no second specialization to compile (the tree's update is one of the
    slowest cold compiles), and the caller's array is left as it was."""
    tree, chain = ROBOT, Robot.from_yaml(BIP_LEG)
    writable, read_only = np.array([0.5, -0.2, -9.7]), np.array([-0.3, 0.4, -9.7])
    read_only.flags.writeable = False
    zero_t, zero_c = np.zeros(tree.n), np.zeros(chain.n)
    tree.gravity(zero_t)
    chain.rnea(zero_c, zero_c, zero_c)
    before = len(update.signatures), len(rnea.signatures)
    for g in (writable, read_only):
        assert not np.allclose(tree.gravity(zero_t, g), tree.gravity(zero_t))      # the given g was used
        chain.rnea(zero_c, zero_c, zero_c, g)
    assert (len(update.signatures), len(rnea.signatures)) == before
    assert writable.flags.writeable and not read_only.flags.writeable
