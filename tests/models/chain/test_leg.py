"""BIP leg closed forms (thesis eq. 6-11, 36-44) equal the generic MDH engine,
and the virtual CoG robot's tool point is the leg's CoG."""
from __future__ import annotations

import numpy as np
import pytest

from models import GeometryError
from models.chain.leg import LegGeometry, leg_com, leg_fk, leg_jacobian, virtual_com_jacobian

from tests.models.chains import bip_leg, random_robot, random_states

LEG = bip_leg()
GEO = LegGeometry(LEG.model)
P = GEO.params


@pytest.mark.slow
def test_closed_forms_equal_generic_engine():
    T = np.empty((4, 4))
    J = np.empty((6, 4))
    com = np.empty(3)
    Jv = np.empty((3, 4))
    for q, _, _ in random_states(LEG, 100, seed=4):
        leg_fk(P[0], P[1], P[2], q, T)                                     # eq. 6
        np.testing.assert_allclose(T, LEG.fk(q), atol=1e-12)
        leg_jacobian(P[0], P[1], P[2], 4, q, J)                            # eq. 7
        np.testing.assert_allclose(J, LEG.jacobian(q), atol=1e-12)
        Jb = LEG.body_com_jacobians(q)
        for body, (lengths, ncols) in enumerate([((P[3], 0.0, 0.0), 2),   # eq. 9
                                                 ((P[0], P[4], 0.0), 3),  # eq. 10
                                                 ((P[0], P[1], P[5]), 4)], start=1):  # eq. 11
            leg_jacobian(*lengths, ncols, q, J)
            np.testing.assert_allclose(J, Jb[body], atol=1e-12)
        leg_com(P, q, com)                                                 # eq. 41
        np.testing.assert_allclose(com, LEG.com(q), atol=1e-12)
        virtual_com_jacobian(P, q, Jv, J)
        np.testing.assert_allclose(Jv, LEG.com_jacobian(q), atol=1e-12)
        l2g, l3g, l4g = GEO.virtual_lengths                                # eq. 44
        leg_fk(l2g, l3g, l4g, q, T)
        np.testing.assert_allclose(T[:3, 3], LEG.com(q), atol=1e-12)


def test_eq36_erratum_is_fixed():
    """The printed eq. 36 gives z(O0G4) = s2 l2 + s23 l3cdg; the right value is
    s2 l2 + s23 l3 + s234 l4cdg (eq. 41). The engine's body-4 CoG must match the
    corrected form and differ from the printed one."""
    q = np.array([0.1, 0.3, -0.8, 0.6])
    z4 = LEG.frame(q, 4)[2, 3] + LEG.frame(q, 4)[2, 0] * P[5]
    s2, s23, s234 = np.sin(q[1]), np.sin(q[1] + q[2]), np.sin(q[1:].sum())
    assert z4 == pytest.approx(s2 * P[0] + s23 * P[1] + s234 * P[5], abs=1e-12)
    assert abs(z4 - (s2 * P[0] + s23 * P[4])) > 1e-3


def test_virtual_lengths_follow_eq42():
    m1, m2, m3, m4 = LEG.model.mass
    l2, l3, l2c, l3c, l4c = P[0], P[1], P[3], P[4], P[5]
    M = m1 + m2 + m3 + m4
    assert GEO.virtual_lengths == pytest.approx(((m2 * l2c + m3 * l2 + m4 * l2) / M,
                                                 (m3 * l3c + m4 * l3) / M, m4 * l4c / M))


def test_non_leg_robot_is_refused():
    with pytest.raises(GeometryError, match="not the BIP leg"):
        LegGeometry(random_robot(1, 4).model)
