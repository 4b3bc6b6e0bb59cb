"""Joint torques along a resampled trajectory, as the loop's feed-forward will ask them of the drives.

At every sample k, with q̇ and q̈ the loop's central differences of the samples
(:func:`controller.daemon.loop.references.playback.playback_sample`), the torque the loop's safety
check compares with τmax (:mod:`controller.daemon.loop.safety`, joint side):
τ = A(q) q̈ + C(q, q̇) q̇ + G(q) (the models' Newton-Euler, Lammari 2012 eq. IV.7-IV.10) − J_cᵀ f_c
(a tree on the ground in double support: the planned share of the ground wrench on the sole that
does not root the model, models.tree.dynamics.contact_share) + the rotors J_pᵀ J_m J_p q̈ and the
motor and joint friction at q̇ (:func:`controller.daemon.loop.axes.drive_feedforward`, with the exact sign of
q̇: a bound of the loop's smoothed one, models.friction). Under level
gravity (a file does not know the platform's tilt) and without J_pᵀ J_m J̇_p q̇ (second order in
q̇). The rooting is the loop's: the chain's base; a tree hung by the pelvis, the pelvis; a tree on
the ground, the stance sole of each sample's support phase (double support keeps the last one; a
file starting in double support starts on the foot its first step does not lift). One Numba loop
over the samples, run off the command thread on a Data of its own.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from controller.daemon.loop.axes import drive_feedforward, feedforward
from controller.daemon.loop.references.playback import first_stance, playback_sample, right_shares
from models.chain.dynamics import update as chain_update
from models.chain.robot import Robot
from models.common.support import LEFT, RIGHT, SOLES
from models.transmission import transmission_jacobian
from models.tree.dynamics import contact_share, update_cycle
from models.tree.dynamics import set_root as tree_set_root
from models.tree.robot import TreeRobot

@njit(cache=True)
def _drive_terms(P, q, qd, qdd, Jp, zero, fv, fs, scratch, tau):
    """τ += the rotors, motor and joint friction through the transmission at q (loop.axes)."""
    if transmission_jacobian(P, q, Jp) != 0:
        return False
    drive_feedforward(P, Jp, zero, fv, fs, 0.0, qdd, qd, scratch, tau)     # the exact sign: a bound
    return True


@njit(cache=True)
def chain_torques(mbuf, dbuf, A, h, G, P, fv, fs, traj, period, out):
    """τ at every sample of ``traj`` (module docstring) into ``out`` (A, h, G: views of the Data
    ``dbuf``); the first sample whose transmission fails, or -1."""
    n_s, n = traj.shape
    q, qd, qdd = np.zeros(n), np.zeros(n), np.zeros(n)
    Jp, zero, scratch = np.zeros((n, n)), np.zeros(n), np.zeros(n)
    for k in range(n_s):
        playback_sample(traj, k, n_s - 1, period, q, qd, qdd)
        chain_update(mbuf, dbuf, q, qd)
        feedforward(A, h, G, qdd, True, out[k])
        if not _drive_terms(P, q, qd, qdd, Jp, zero, fv, fs, scratch, out[k]):
            return k
    return -1


@njit(cache=True)
def tree_torques(mbuf, dbuf, A, h, G, P, fv, fs, g, roots, soles, frames, shares, traj, period, out):
    """As :func:`chain_torques` for a tree rooted at ``roots[k]``; on the ground (``soles``: the left and
    right soles' rootings, -1 hung; ``frames`` their frames) the other sole carries its share of the
    ground wrench (``shares[k]``: the right sole's)."""
    n_s, n = traj.shape
    q, qd, qdd = np.zeros(n), np.zeros(n), np.zeros(n)
    Jp, zero, scratch = np.zeros((n, n)), np.zeros(n), np.zeros(n)
    for k in range(n_s):
        playback_sample(traj, k, n_s - 1, period, q, qd, qdd)
        tree_set_root(mbuf, dbuf, roots[k])
        update_cycle(mbuf, dbuf, q, qd, g)
        feedforward(A, h, G, qdd, True, out[k])
        if soles[0] >= 0:
            if roots[k] == soles[0]:
                contact_share(mbuf, dbuf, qd, qdd, g, frames[1], shares[k], 0.0, 1.0, scratch, out[k])
            elif roots[k] == soles[1]:
                contact_share(mbuf, dbuf, qd, qdd, g, frames[0], 1.0 - shares[k], 0.0, 1.0, scratch, out[k])
        if not _drive_terms(P, q, qd, qdd, Jp, zero, fv, fs, scratch, out[k]):
            return k
    return -1


class TrajectoryTorques:
    """``torques(traj, support, period)``: τ (samples, n) along a resampled trajectory (module
    docstring), on a copy of ``robot``'s models; ``ground``: a tree stands on its soles
    (``control.support: ground``), else it hangs by its base."""

    def __init__(self, robot: Robot | TreeRobot, ground: bool = False) -> None:
        self.robot = type(robot)(robot.description)          # a Data of its own (a worker thread's)
        self.tree = isinstance(robot, TreeRobot)
        self.ground = ground and self.tree
        self.taumax = self.robot.model.taumax.copy()
        tr = self.robot.description.transmission
        self.P = tr.params
        m = self.robot.model                      # compile (or load) the kernel now, at the daemon's boot,
        q = np.clip(np.zeros(len(m.qmin)), m.qmin, m.qmax)    # not at the first file a client sends
        self(np.stack([q, q]), None, 0.002)

    def _rootings(self, support: np.ndarray | None, n_s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(root per sample, sole rootings, sole frames, right share per sample) as the loop plays them."""
        m = self.robot.model
        shares = np.full(n_s, 0.5)
        if not self.ground:
            return (np.full(n_s, m.root_names.index(self.robot.description.base), np.int64),
                    np.full(2, -1, np.int64), np.full(2, -1, np.int64), shares)
        soles = np.array([m.root_names.index(SOLES[LEFT]), m.root_names.index(SOLES[RIGHT])], np.int64)
        frames = np.array([int(m.rootf[r]) for r in soles], np.int64)
        phase = np.full(n_s, -1.0) if support is None else support.astype(np.float64)
        planned = np.full(n_s, np.nan)
        right_shares(phase, n_s, planned)
        stance = first_stance(phase, n_s)
        root, share = soles[stance if stance >= 0 else LEFT], 0.5
        roots = np.empty(n_s, np.int64)
        for k in range(n_s):
            if phase[k] in (LEFT, RIGHT):
                root = soles[int(phase[k])]
            if planned[k] == planned[k]:
                share = planned[k]
            roots[k], shares[k] = root, share
        return roots, soles, frames, shares

    def __call__(self, traj: np.ndarray, support: np.ndarray | None, period: float) -> tuple[np.ndarray, int]:
        """(τ per sample, the first sample whose transmission fails or -1)."""
        m, d = self.robot.model, self.robot.data
        out = np.zeros(traj.shape)
        traj = np.ascontiguousarray(traj, dtype=np.float64)
        if not self.tree:
            bad = chain_torques(m.buf, d.buf, d.A, d.h, d.G, self.P, m.viscous, m.coulomb, traj, period, out)
            return out, bad
        roots, soles, frames, shares = self._rootings(support, len(traj))
        bad = tree_torques(m.buf, d.buf, d.A, d.h, d.G, self.P, m.viscous, m.coulomb, m.gravity, roots, soles,
                           frames, shares, traj, period, out)
        return out, bad
