"""Closed forms of the BIP 4-DOF leg (thesis §2.3.2 and §2.5.3) and its virtual
CoG robot.

The leg is the MDH chain of thesis Figure 8 (q1 about z0, alpha2 = pi/2,
a3 = l2, a4 = l3, tool offset l4 along x4) with each body's CoG on its segment
axis (Figure 9, Figure 17). Its CoG is then the tool point of a *virtual robot*
with the same joints and lengths l_iG (eq. 42-44): commanding the CoG is a
position-control problem on that virtual robot.

Parameters are packed in one flat array (see :class:`LegGeometry`) so the
kernels stay cheap to call.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from models.common.errors import GeometryError
from models.chain.model import REVOLUTE, Model

# indices in the packed parameter array
L2, L3, L4, L2C, L3C, L4C, L2G, L3G, L4G, MASS = range(10)


@njit(cache=True)
def leg_fk(l2, l3, l4, q, T):
    """T_0->4' of thesis eq. 6 for segment lengths (l2, l3, l4); with the
    virtual lengths (l2G, l3G, l4G) it is T_0->T of eq. 44."""
    c1, s1 = np.cos(q[0]), np.sin(q[0])
    c2, s2 = np.cos(q[1]), np.sin(q[1])
    c23, s23 = np.cos(q[1] + q[2]), np.sin(q[1] + q[2])
    c234, s234 = np.cos(q[1] + q[2] + q[3]), np.sin(q[1] + q[2] + q[3])
    r = c2 * l2 + c23 * l3 + c234 * l4
    T[0, 0], T[0, 1], T[0, 2], T[0, 3] = c1 * c234, -c1 * s234, s1, c1 * r
    T[1, 0], T[1, 1], T[1, 2], T[1, 3] = s1 * c234, -s1 * s234, -c1, s1 * r
    T[2, 0], T[2, 1], T[2, 2], T[2, 3] = s234, c234, 0.0, s2 * l2 + s23 * l3 + s234 * l4
    T[3, 0], T[3, 1], T[3, 2], T[3, 3] = 0.0, 0.0, 0.0, 1.0


@njit(cache=True)
def leg_jacobian(l2, l3, l4, ncols, q, J):
    """Natural Jacobian (6 x 4, rows [v; w]) of the point at lengths (l2, l3, l4)
    along the chain, moved by the first ``ncols`` joints: eq. 7 with ncols = 4,
    and the CoG Jacobians eq. 9 (l2cdg, 0, 0; 2), eq. 10 (l2, l3cdg, 0; 3),
    eq. 11 (l2, l3, l4cdg; 4)."""
    c1, s1 = np.cos(q[0]), np.sin(q[0])
    c2, s2 = np.cos(q[1]), np.sin(q[1])
    c23, s23 = np.cos(q[1] + q[2]), np.sin(q[1] + q[2])
    c234, s234 = np.cos(q[1] + q[2] + q[3]), np.sin(q[1] + q[2] + q[3])
    r = c2 * l2 + c23 * l3 + c234 * l4          # horizontal reach
    s = s2 * l2 + s23 * l3 + s234 * l4          # along z0
    r3, s3 = c23 * l3 + c234 * l4, s23 * l3 + s234 * l4
    r4, s4 = c234 * l4, s234 * l4
    J[0, 0], J[1, 0], J[2, 0] = -s1 * r, c1 * r, 0.0
    J[3, 0], J[4, 0], J[5, 0] = 0.0, 0.0, 1.0
    J[0, 1], J[1, 1], J[2, 1] = -c1 * s, -s1 * s, r
    J[0, 2], J[1, 2], J[2, 2] = -c1 * s3, -s1 * s3, r3
    J[0, 3], J[1, 3], J[2, 3] = -c1 * s4, -s1 * s4, r4
    for j in range(1, 4):
        J[3, j], J[4, j], J[5, j] = s1, -c1, 0.0
    for j in range(ncols, 4):
        for k in range(6):
            J[k, j] = 0.0


@njit(cache=True)
def leg_com(p, q, out):
    """CoG of the leg, thesis eq. 41 (erratum of eq. 36 fixed: z of O0G4 is
    s2 l2 + s23 l3 + s234 l4cdg)."""
    c1, s1 = np.cos(q[0]), np.sin(q[0])
    c2, s2 = np.cos(q[1]), np.sin(q[1])
    c23, s23 = np.cos(q[1] + q[2]), np.sin(q[1] + q[2])
    c234, s234 = np.cos(q[1] + q[2] + q[3]), np.sin(q[1] + q[2] + q[3])
    r = c2 * p[L2G] + c23 * p[L3G] + c234 * p[L4G]
    out[0] = c1 * r
    out[1] = s1 * r
    out[2] = s2 * p[L2G] + s23 * p[L3G] + s234 * p[L4G]


@njit(cache=True)
def virtual_com_jacobian(p, q, Jv, work6x4):
    """3 x 4 Jacobian of the leg's CoG: the linear rows of the virtual robot's
    natural Jacobian (eq. 7 with lengths l_iG of eq. 42)."""
    leg_jacobian(p[L2G], p[L3G], p[L4G], 4, q, work6x4)
    for r in range(3):
        for c in range(4):
            Jv[r, c] = work6x4[r, c]


class LegGeometry:
    """Lengths of the leg and of its virtual CoG robot, read off a generic Model.

    ``params`` packs (l2, l3, l4, l2cdg, l3cdg, l4cdg, l2G, l3G, l4G, total mass).
    Eq. 42 is used with the cardan cross's mass m1 kept in the total (its CoG is
    the cardan centre O0 by symmetry, so it adds mass but no moment); with m1 = 0
    it is the thesis' formula exactly.
    """

    def __init__(self, model: Model) -> None:
        self._check_structure(model)
        l2, l3 = model.mdh[2, 1], model.mdh[3, 1]
        l4 = model.tool[0, 3]
        l2c, l3c, l4c = model.com[1, 0], model.com[2, 0], model.com[3, 0]
        m1, m2, m3, m4 = model.mass
        total = m1 + m2 + m3 + m4
        self.params = np.array([
            l2, l3, l4, l2c, l3c, l4c,
            (m2 * l2c + (m3 + m4) * l2) / total,      # eq. 42, l2G
            (m3 * l3c + m4 * l3) / total,             # eq. 42, l3G
            m4 * l4c / total,                         # eq. 42, l4G
            total])
        self.params.flags.writeable = False

    @property
    def virtual_lengths(self) -> tuple[float, float, float]:
        """(l2G, l3G, l4G) of eq. 42."""
        return float(self.params[L2G]), float(self.params[L3G]), float(self.params[L4G])

    @staticmethod
    def _check_structure(model: Model) -> None:
        def fail(what: str) -> None:
            raise GeometryError(f"robot {model.name!r} is not the BIP leg of thesis Figure 8: {what}")

        if model.n != 4:
            fail(f"it has {model.n} joints, not 4")
        if np.any(model.jtype != REVOLUTE):
            fail("every joint must be revolute")
        want_alpha = np.array([0.0, np.pi / 2, 0.0, 0.0])
        if not np.allclose(model.mdh[:, 0], want_alpha, atol=1e-12):
            fail(f"alpha must be {want_alpha.tolist()}, got {model.mdh[:, 0].tolist()}")
        if not (np.allclose(model.mdh[:2, 1], 0.0) and np.allclose(model.mdh[:, 2:], 0.0)):
            fail("a1 = a2 = 0 and every theta and d must be 0")
        tool = model.tool
        if not (np.allclose(tool[:3, :3], np.eye(3)) and np.allclose(tool[1:3, 3], 0.0)):
            fail("the tool frame must be a pure translation l4 along x4")
        if not np.allclose(model.com[0], 0.0):
            fail("the cardan cross's CoG must be at the cardan centre")
        if not np.allclose(model.com[1:, 1:], 0.0):
            fail("the CoGs of bodies 2-4 must lie on their segment axes x_i (Figure 9)")
