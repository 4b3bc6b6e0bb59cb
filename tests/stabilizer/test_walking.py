"""The whole-robot stabilizer tracking a gait (stabilizer.whole_body.set_gait, docs/walking.md): BIP 2000
standing on both soles leans forward by its ankles (a gait in double support, its soles fixed: the two legs
move alike). On the ground the gait was planned for, the stabilized reference is the gait; on a ground
pitched forward that the gait does not know, the CoG's walls hold the CoG further from the front edge than
the gait would."""
from __future__ import annotations

import numpy as np
import pytest

from models.common.support import DOUBLE
from stabilizer.whole_body import O_MIN_MARGIN, PARAMS, WholeBodyStabilizer, set_gait

from tests.paths import ROBOTS

DT, T, LEAN, FLEX = 0.002, 2.0, 0.08, 0.3


@pytest.fixture(scope="module")
def st():
    return WholeBodyStabilizer.from_yaml(ROBOTS / "bip2000_stabilizer.yaml")


def posture(st, lean):
    """Flexed legs (knee 2a, hip and ankle -a: the soles flat under an upright pelvis), ankles +lean."""
    q = np.zeros(st.n)
    names = st.robot.model.joint_names
    for side in "lr":
        q[names.index(f"{side}_knee")] = 2 * FLEX
        q[names.index(f"{side}_hip_pitch")] = -FLEX
        q[names.index(f"{side}_ankle_sagittal")] = -FLEX + lean
    return q


def walk(st, beta, walls=True):
    """The lean played under the stabilizer on a platform pitched by ``beta`` (rad); returns the largest
    |q_ref - q*| and the CoG's margin at the end."""
    kept = PARAMS.views(st.params, n=st.n).gains_cog.copy()
    if not walls:                       # the CoG's walls without force: only the attractor on the gait's CoG
        _set_cog_gains(st, 0.0)
    st.reset(posture(st, 0.0))
    n = int(T / DT)
    err = margin = 0.0
    try:
        for k in range(n):
            lean = LEAN * min(1.0, k / (0.8 * n))
            q_gait = posture(st, lean)
            qd_gait = (posture(st, LEAN * min(1.0, (k + 1) / (0.8 * n))) - q_gait) / DT
            set_gait(st.params, st.state, q_gait, qd_gait)
            assert st.step(st.q_ref.copy(), DOUBLE, (0.0, beta)) == 0
            err = max(err, float(np.abs(st.q_ref - q_gait).max()))
            margin = float(st.out[O_MIN_MARGIN])
    finally:
        _set_cog_gains(st, kept)
    return err, margin


def _set_cog_gains(st, gains):
    """The CoG walls' gains written into the params, which are read-only again before the next step (as the
    loop keeps them: a writable params array is another type to Numba, a second 13 s compile of step)."""
    st.params.flags.writeable = True
    PARAMS.views(st.params, n=st.n).gains_cog[:] = gains
    st.params.flags.writeable = False


def test_on_the_planned_ground_the_stabilized_reference_is_the_gait(st):
    err, _ = walk(st, 0.0)
    assert err < 2e-3                       # rad, over a 0.08 rad lean


def test_on_a_ground_pitched_forward_the_walls_keep_the_cog_further_from_the_edge(st):
    err, margin = walk(st, -0.1)
    _, margin_gait = walk(st, -0.1, walls=False)
    assert err > 0.02                        # the reference left the gait
    assert margin > margin_gait + 0.005      # m: the CoG held back from the front edge
