"""Robustness: a CoG outside the polygon is brought back, a fully stretched leg
gives bounded joint rates, non-finite inputs are rejected with q_ref held."""
from __future__ import annotations

import numpy as np
import pytest

from stabilizer.stabilizer import (
    F_JOINT_SPEED_SAT,
    F_OUTSIDE,
    F_REJECTED,
    F_SINGULAR,
    NOT_RESET,
    OK,
    REJECTED_INPUT,
    StabilizerInputError,
)

from tests.stabilizer.helpers import ATTRACTOR, Q0, ROBOT, make

DT = 0.002


@pytest.mark.parametrize("q_start", [[0.0, 0.55, -0.3, 0.0],      # CoG ~ 12 cm beyond the toe wall
                                     [0.25, 0.25, -0.5, 0.25],    # ~ 12 cm beyond a side wall
                                     [-0.2, -0.3, -0.3, 0.3]])    # beyond the heel and a side
def test_cog_started_outside_is_brought_back(q_start):
    st = make()
    q = np.array(q_start)
    st.reset(q)
    assert st.step(q, (0.0, 0.0, 0.0)) == OK
    first = st.min_margin
    assert first < -0.02 and st.flags[F_OUTSIDE] == 1.0
    margins = []
    for _ in range(int(3.0 / DT)):
        assert st.step(q, (0.0, 0.0, 0.0)) == OK
        q = st.q_ref.copy()
        margins.append(st.min_margin)
    margins = np.array(margins)
    inside_at = int(np.argmax(margins > 0)) * DT
    print(f"\nstart margin {first * 1e3:.0f} mm, inside after {inside_at:.2f} s, "
          f"final {margins[-1] * 1e3:.1f} mm")
    assert margins[-1] > 0.05 and inside_at < 1.5
    assert np.all(np.diff(margins[: int(inside_at / DT)]) > -1e-9)   # pushed back, never further out


def test_fully_stretched_leg_gives_bounded_joint_rates():
    """q = 0 is singular for the vertical task (the CoG cannot rise): with the
    height tracked and G+ unreachable above, the damped inverse keeps the rates
    within the DLS bound |v| / (2 lambda) and the joint limits."""
    st = make(attractor={**ATTRACTOR, "target": [1.2, 0.0, 0.0]},
              virtual_robot={"vertical_task_weight": 1.0})
    q = np.zeros(4)
    st.reset(q)
    peak = 0.0
    for k in range(200):
        assert st.step(q, (0.0, 0.0, 0.0)) == OK
        if k == 0:
            assert st.flags[F_SINGULAR] == 1.0 and st.sigma_min < 1e-6
            assert np.linalg.norm(st.qd_ref) <= np.linalg.norm(st.cog_velocity) / (2 * st.damping) + 1e-12
        peak = max(peak, np.abs(st.qd_ref).max())
        q = st.q_ref.copy()
    assert np.all(np.isfinite(q))
    assert peak <= ROBOT.model.vmax.max()
    print(f"\nstretched leg: peak joint rate {peak:.3f} rad/s, lambda {st.damping:.3f}")


def test_stretched_leg_rates_scale_with_damping_not_with_one_over_sigma():
    """Near q = 0 the undamped pseudo-inverse would blow up as 1/sigma; the damped
    one stays bounded as the leg approaches the singularity."""
    rates = []
    for eps in (1e-2, 1e-4, 1e-6):
        st = make(attractor={**ATTRACTOR, "target": [1.2, 0.0, 0.0]},
                  virtual_robot={"vertical_task_weight": 1.0})
        q = np.array([0.0, eps, -eps, 0.0])
        st.reset(q)
        assert st.step(q, (0.0, 0.0, 0.0)) == OK
        assert st.flags[F_JOINT_SPEED_SAT] == 0.0
        rates.append(np.abs(st.qd_ref).max())
    assert max(rates) < 2.0 and rates[2] < 2 * rates[0] + 1e-9


@pytest.mark.parametrize("q,tilt,acc", [([np.nan, 0, 0, 0], (0.0, 0.0, 0.0), (0.0, 0.0)),
                                        ([0, 0.25, -0.5, np.inf], (0.0, 0.0, 0.0), (0.0, 0.0)),
                                        (None, (np.nan, 0.0, 0.0), (0.0, 0.0)),
                                        (None, (0.0, -np.inf, 0.0), (0.0, 0.0)),
                                        (None, (2.0, 0.0, 0.0), (0.0, 0.0))])   # beyond any ground
def test_non_finite_inputs_are_rejected_and_q_ref_held(q, tilt, acc):
    st = make()
    st.reset(Q0)
    assert st.step(Q0, (0.1, 0.1, 0.0)) == OK
    held, state = st.q_ref.copy(), st.state.copy()
    assert st.step(Q0 if q is None else q, tilt, acc) == REJECTED_INPUT
    assert st.flags[F_REJECTED] == 1.0
    np.testing.assert_array_equal(st.q_ref, held)
    np.testing.assert_array_equal(st.qd_ref, 0.0)
    np.testing.assert_array_equal(st.state, state)
    assert st.step(Q0, (0.1, 0.1, 0.0)) == OK and st.flags[F_REJECTED] == 0.0


def test_rejections_of_the_other_tilt_sources():
    st = make(tilt={"source": "imu"})
    st.reset(Q0)
    assert st.step(Q0, (0.0, 0.0, 0.0)) == REJECTED_INPUT        # no gravity measured
    assert st.step(Q0, (9.81, np.nan, 0.0)) == REJECTED_INPUT
    assert st.step(Q0, (9.81, 0.0, 0.0)) == OK
    st = make(tilt={"use_acceleration": True})
    st.reset(Q0)
    assert st.step(Q0, (0.0, 0.0, 0.0), (np.nan, 0.0)) == REJECTED_INPUT
    assert st.step(Q0, (0.0, 0.0, 0.0), (1.0, 0.0)) == OK


def test_reset_is_required_bumpless_and_validated():
    st = make()
    assert st.step(Q0, (0.0, 0.0, 0.0)) == NOT_RESET
    with pytest.raises(StabilizerInputError, match="4 finite joint angles"):
        st.reset([0.0, np.nan, 0.0, 0.0])
    with pytest.raises(StabilizerInputError):
        st.reset([0.0, 0.1])
    q = np.array([0.05, 0.3, -0.6, 0.2])
    st.reset(q)
    np.testing.assert_array_equal(st.q_ref, q)
    assert st.step(q, (0.0, 0.0, 0.0)) == OK
    assert np.abs(st.q_ref - q).max() < ROBOT.model.vmax.max() * DT    # bumpless: one small step


def test_fixed_attractor_target_sets_the_rest_position():
    """G+ given in the world frame: after a while the CoG rests near it (walls
    pull it back a little towards the centre), not at the polygon's centre."""
    target = [0.75, 0.015, 0.05]
    st = make(attractor={**ATTRACTOR, "target": target}, virtual_robot={"vertical_task_weight": 1.0})
    q = Q0.copy()
    st.reset(q)
    np.testing.assert_array_equal(st.target, target)
    for _ in range(1500):
        assert st.step(q, (0.0, 0.0, 0.0)) == OK
        q = st.q_ref.copy()
    target = np.array(target)
    centre = st.polygon.mean(axis=0)
    assert np.linalg.norm(st.cog[1:] - target[1:]) < 0.5 * np.linalg.norm(centre - target[1:])
    assert abs(st.cog[0] - target[0]) < 1e-3                  # height tracked
    assert np.linalg.norm(st.total_force) < 1e-3              # at rest in the fields


def test_the_fields_engage_without_a_velocity_step():
    """From a posture off the fields' equilibrium, G's velocity (F / D, no virtual mass) would step to
    its full value at the first cycle (0.22 rad/s on the ankle here), an ankle torque pulse through the
    drives that rocks a free foot; the fields' force is switched on by a quintic ramp over ENGAGE_S."""
    from stabilizer.stabilizer import ENGAGE_S, engage_ramp

    assert engage_ramp(0.0) == 0.0 and engage_ramp(ENGAGE_S) == 1.0 and engage_ramp(2.0 * ENGAGE_S) == 1.0
    st = make()
    st.reset(Q0)
    q, qd = Q0.copy(), [np.zeros(4)]
    for _ in range(round(1.5 * ENGAGE_S / DT)):
        assert st.step(q, (0.0, 0.0, 0.0)) == OK
        q = st.q_ref.copy()
        qd.append(st.qd_ref.copy())
    steps = np.abs(np.diff(np.array(qd), axis=0)).max(axis=1)
    assert steps[0] < 1e-9                              # the first cycle does not move
    assert steps.max() < 1e-3, steps.max()              # measured 4.1e-4 rad/s per cycle
    assert np.abs(np.array(qd)).max() > 0.03            # and yet it moves towards the equilibrium
