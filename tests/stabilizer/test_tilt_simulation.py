"""Quasi-static closed loop with the models alone (thesis §2.5.12): the floor
goes from (alpha, beta) = (0, 0) to (10, 20) deg by a quintic in 7 s and back
in 7 s, then rests 3 s; every 2 ms the measured posture is the previous q_ref
(perfect tracking)."""
from __future__ import annotations

import numpy as np
import pytest

from stabilizer.stabilizer import F_FORCE_SAT, F_LIMIT, F_OUTSIDE, F_REJECTED

from tests.stabilizer.helpers import ATTRACTOR, Q0, make, tilt_scenario

DT = 0.002
MIN_MARGIN_BOUND = 0.05     # m; the lateral half-width a cos(alpha) is 0.059 m at 10 deg


def simulate(st):
    q = Q0.copy()
    st.reset(q)
    margins, measured = [], []
    flags = np.zeros_like(st.flags)
    for k in range(int(17.0 / DT)):
        assert st.step(q, (*tilt_scenario(k * DT), 0.0)) == 0
        q = st.q_ref.copy()
        margins.append(st.min_margin)
        measured.append(st.measured_margin)
        flags = np.maximum(flags, st.flags)
    return q, np.array(margins), np.array(measured), flags


@pytest.fixture(scope="module")
def runs():
    """(final posture, margins, measured margins, flags, stabilizer) without and
    with the attractive field (G+ = the initial CoG, height tracked)."""
    out = {}
    for name, sections in (("repulsive only", {}),
                           ("with attraction", {"attractor": ATTRACTOR,
                                                "virtual_robot": {"vertical_task_weight": 1.0}})):
        st = make(**sections)
        out[name] = (*simulate(st), st)
    return out


def test_cog_stays_inside_the_polygon(runs):
    for name, (_, margins, measured, flags, _) in runs.items():
        print(f"\n{name}: min CoG margin {margins.min() * 1e3:.2f} mm (virtual), "
              f"{measured.min() * 1e3:.2f} mm (measured)")
        assert margins.min() > MIN_MARGIN_BOUND
        assert measured.min() > MIN_MARGIN_BOUND
        assert not flags[[F_REJECTED, F_FORCE_SAT, F_LIMIT, F_OUTSIDE]].any()


def test_posture_drifts_without_attraction_and_returns_with_it(runs):
    """Thesis §2.5.12: with the repulsive fields alone the final posture is not the
    initial one (the CoG ends at the field equilibrium, the polygon's centre);
    with an attractor at the initial CoG it comes back."""
    q_rep, _, _, _, st_rep = runs["repulsive only"]
    q_att, _, _, _, st_att = runs["with attraction"]
    drift_rep = np.abs(q_rep - Q0).max()
    drift_att = np.abs(q_att - Q0).max()
    print(f"\nposture drift |q_final - q_initial|max: {np.degrees(drift_rep):.2f} deg without attraction, "
          f"{np.degrees(drift_att):.3f} deg with")
    assert drift_rep > np.radians(1.0)
    assert drift_att < np.radians(0.15)
    np.testing.assert_allclose(st_rep.cog[1:], st_rep.polygon.mean(axis=0), atol=1e-4)
    assert np.linalg.norm(st_att.cog - st_att.target) < 2e-3


def test_the_disturbance_is_real_a_rigid_leg_would_fall():
    """At (10, 20) deg the initial posture's CoG, held rigid, is far outside."""
    st = make(walls={"gain": 0.0})                # no field: the virtual robot stays put
    st.reset(Q0)
    assert st.step(Q0, (np.radians(10.0), np.radians(20.0), 0.0)) == 0
    print(f"\nrigid leg at (10, 20) deg: margin {st.min_margin * 1e3:.0f} mm")
    assert st.min_margin < -0.05
