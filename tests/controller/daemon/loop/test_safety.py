"""Safety: every hard-limit fault and non-finite path, every soft clamp and
its flag, the limits' validation, the heartbeat watchdog on a fake clock, and the
kernels' freedom from allocation."""
from __future__ import annotations

import math

import numpy as np
import pytest
from numba import njit

from controller.daemon.codes import Reason
from controller.daemon.loop import safety as sf
from controller.daemon.loop.safety import Limits, Watchdog, check_hard, clamp_soft

from tests.nrt import assert_allocation_free

QMIN = np.array([-0.35, -0.5, -1.7, -0.5])
QMAX = np.array([0.35, 0.6, 0.0, 1.5])
VMAX = np.array([2.0, 2.0, 2.5, 2.5])
TMAX = np.array([250.0, 250.0, 300.0, 300.0])
LIM = Limits(QMIN, QMAX, VMAX, TMAX, margin=0.02, tol=0.05, factor=1.5)
NAMES = ("ankle_lateral", "ankle_sagittal", "knee", "hip")


def state():
    """A nominal cycle: q, q̇, q_ref, q̇_ref, τ, all inside every limit."""
    q = np.array([0.0, 0.1, -0.8, 0.4])
    return q, np.full(4, 0.5), q.copy(), np.full(4, -0.5), np.full(4, 10.0)


def test_nominal_cycle_passes():
    assert LIM.check(*state()) == (sf.OK, -1)
    q, qd, q_ref, qd_ref, tau = state()
    assert LIM.clamp(q_ref, qd_ref, tau) == (0, -1)
    assert np.array_equal(q_ref, q)


@pytest.mark.parametrize("which,code", [(0, sf.NONFINITE_Q), (1, sf.NONFINITE_QD), (2, sf.NONFINITE_Q_REF),
                                        (3, sf.NONFINITE_QD_REF), (4, sf.NONFINITE_TAU)])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_anywhere_faults(which, code, bad):
    arrays = state()
    arrays[which][2] = bad
    assert LIM.check(*arrays) == (code, 2)
    assert sf.reason(code) == Reason.NON_FINITE


def test_non_finite_is_found_before_limits():
    """A NaN later in the arrays wins over a hard limit earlier: NaN never reaches a drive."""
    q, qd, q_ref, qd_ref, tau = state()
    q[0] = 5.0
    tau[3] = math.nan
    assert LIM.check(q, qd, q_ref, qd_ref, tau) == (sf.NONFINITE_TAU, 3)


@pytest.mark.parametrize("which,joint,value,code", [
    (0, 1, 0.6 + 0.051, sf.HARD_Q), (0, 2, -1.7 - 0.051, sf.HARD_Q),
    (1, 3, -2.5 * 1.5 - 1e-9, sf.HARD_QD),
    (2, 0, 0.35 + 0.051, sf.HARD_Q_REF), (2, 3, -0.5 - 0.06, sf.HARD_Q_REF),
    (3, 1, 2.0 * 1.5 + 1e-9, sf.HARD_QD_REF),
    (4, 2, -300.0 * 1.5 - 1e-9, sf.HARD_TAU),
])
def test_hard_limits_fault(which, joint, value, code):
    arrays = state()
    arrays[which][joint] = value
    assert LIM.check(*arrays) == (code, joint)
    assert sf.reason(code) == Reason.HARD_LIMIT
    assert NAMES[joint] in sf.describe(code, joint, NAMES)


@pytest.mark.parametrize("which,joint,value", [
    (0, 1, 0.6 + 0.049), (1, 3, -2.5 * 1.5), (2, 0, -0.35 - 0.049), (3, 1, 3.0), (4, 2, 450.0)])
def test_within_the_hard_tolerance_is_no_fault(which, joint, value):
    arrays = state()
    arrays[which][joint] = value
    assert LIM.check(*arrays) == (sf.OK, -1)


def test_soft_limits_clamp_and_flag():
    """q_ref into [qmin + margin, qmax - margin], q̇_ref into ±vmax, τ into ±τmax; the
    flags name the kinds, the index the first joint clamped."""
    _, _, q_ref, qd_ref, tau = state()
    q_ref[1] = 0.59                      # in the margin band above qmax - 0.02
    q_ref[2] = -1.72                     # below qmin
    assert LIM.clamp(q_ref, qd_ref, tau) == (sf.SOFT_Q, 1)
    assert q_ref[1] == pytest.approx(0.58) and q_ref[2] == pytest.approx(-1.68)
    _, _, q_ref, qd_ref, tau = state()
    qd_ref[3] = -2.6
    tau[2] = 301.0
    assert LIM.clamp(q_ref, qd_ref, tau) == (sf.SOFT_QD | sf.SOFT_TAU, 2)
    assert qd_ref[3] == -2.5 and tau[2] == 300.0
    _, _, q_ref, qd_ref, tau = state()
    q_ref[0], qd_ref[0], tau[0] = 0.34, 2.1, -260.0
    assert LIM.clamp(q_ref, qd_ref, tau) == (sf.SOFT_Q | sf.SOFT_QD | sf.SOFT_TAU, 0)
    assert (q_ref[0], qd_ref[0], tau[0]) == (pytest.approx(0.33), 2.0, -250.0)


def test_soft_clamp_then_hard_check_is_clean():
    """After clamping, the setpoints pass the hard check (the soft band lies inside it)."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        q, qd, _, _, _ = state()
        q_ref = rng.uniform(QMIN - 0.04, QMAX + 0.04)
        qd_ref = rng.uniform(-1.4, 1.4) * VMAX
        tau = rng.uniform(-1.4, 1.4) * TMAX
        assert LIM.check(q, qd, q_ref, qd_ref, tau) == (sf.OK, -1)
        LIM.clamp(q_ref, qd_ref, tau)
        assert np.all((q_ref >= QMIN + 0.02 - 1e-15) & (q_ref <= QMAX - 0.02 + 1e-15))
        assert np.all(np.abs(qd_ref) <= VMAX) and np.all(np.abs(tau) <= TMAX)


@pytest.mark.parametrize("kw,message", [
    (dict(vmax=[2.0, 0.0, 1.0, 1.0]), "joint 1: vmax must be > 0"),
    (dict(factor=0.9), "joint 0: factor must be >= 1"),
    (dict(margin=0.5), "joint 0: qmin \\+ margin must be below qmax - margin"),
    (dict(tau_max=[1.0, 1.0, math.nan, 1.0]), r"limit tau_max\[2\] must be finite, got nan"),
])
def test_limits_validation(kw, message):
    args = dict(qmin=QMIN, qmax=QMAX, vmax=VMAX, tau_max=TMAX)
    args.update(kw)
    with pytest.raises(ValueError, match=message):
        Limits(**args)


def test_watchdog_on_a_fake_clock():
    wd = Watchdog(0.5)
    assert not wd.expired(100.0)                  # disarmed: never expires
    wd.arm(10.0)
    assert not wd.expired(10.5)                   # exactly the timeout: still alive
    assert wd.expired(10.5 + 1e-9)
    wd.feed(10.4)
    assert not wd.expired(10.9) and wd.expired(10.91)
    for k in range(1, 100):                       # heartbeats every 0.4 s keep it alive
        wd.feed(10.4 + 0.4 * k)
        assert not wd.expired(10.4 + 0.4 * k + 0.4)
    wd.disarm()
    assert not wd.expired(1e9)
    with pytest.raises(ValueError, match="watchdog timeout must be a finite number > 0 s, got 0"):
        Watchdog(0)
    with pytest.raises(ValueError, match="got nan"):
        Watchdog(math.nan)


@njit
def _checks(lim, q, qd, q_ref, qd_ref, tau, count):
    total = 0
    for _ in range(count):
        code, j = check_hard(lim, q, qd, q_ref, qd_ref, tau)
        flags, first = clamp_soft(lim, q_ref, qd_ref, tau)
        total += code + j + flags + first
    return total


def test_checks_are_allocation_free():
    args = (LIM.lim, *state())
    assert_allocation_free(_checks, *args)
