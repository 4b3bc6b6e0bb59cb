"""Axis tasks: PID with back-calculation anti-windup and filtered derivative on the
measurement, staged gains, CSP pass-through, feed-forward and the motor mapping
through the transmission (thesis eq. 12-32)."""
from __future__ import annotations

import numpy as np
import pytest
import yaml
from numba import njit

from controller.daemon.loop.axes import (CSP, CST, INTEGRAL, KAW, AxisTasks, feedforward, motor_setpoints,
                                  pid_step)
from models.transmission import CANNOT_CLOSE, parse_transmission

from tests.nrt import assert_allocation_free
from tests.paths import ROBOTS

H = 0.002
YAML = ROBOTS / "bip_leg.yaml"


def tasks(n=1, mode="cst", **kw):
    gains = dict(kp=100.0, ki=200.0, kd=20.0, tf=0.005, kaw=0.0, umax=10.0)
    gains.update(kw)
    return AxisTasks(n, mode, H, **gains)


def step_response(ax, target=1.0, seconds=6.0):
    """Unit-inertia double integrator q̈ = τ (semi-implicit Euler at the cycle period)."""
    q, qd = np.zeros(1), np.zeros(1)
    ref, zero, tau_ff = np.array([target]), np.zeros(1), np.zeros(1)
    ax.reset(q)
    qs, saturated = [], 0
    for _ in range(int(seconds / H)):
        saturated |= ax.step(ref, zero, q, tau_ff)
        qd += H * ax.tau
        q += H * qd
        qs.append(q[0])
    return np.array(qs), saturated


def test_step_response_with_and_without_anti_windup():
    """A 1 rad step saturates the 10 N·m output for ~0.6 s. Without anti-windup the
    integral winds up and the response overshoots by > 40 %; back-calculation (kaw = 20/s)
    keeps the overshoot below 5 % and both settle on the target."""
    windup, sat_a = step_response(tasks(kaw=0.0))
    aw, sat_b = step_response(tasks(kaw=20.0))
    assert sat_a == sat_b == 1
    over_windup = windup.max() - 1.0
    over_aw = aw.max() - 1.0
    assert over_windup > 0.4
    assert over_aw < 0.05
    assert abs(aw[-1] - 1.0) < 1e-3 and abs(windup[-1] - 1.0) < 1e-3


def test_derivative_filter_on_a_ramp_and_a_step():
    """Backward-Euler first-order filter tf ẏ_f' + ẏ_f = ẏ: on a ramp of slope v the
    filtered rate after k cycles is v (1 - (tf/(tf+h))^k); a measurement step δ gives
    δ/(tf+h) instead of the raw δ/h (tf = 0)."""
    tf, v = 0.01, 0.5
    ax = tasks(kp=0.0, ki=0.0, kd=1.0, tf=tf, umax=1e9)
    zero = np.zeros(1)
    ax.reset(zero)
    for k in range(1, 40):
        ax.step(zero, zero, np.array([v * H * k]), zero)
        assert -ax.tau[0] == pytest.approx(v * (1 - (tf / (tf + H)) ** k), rel=1e-12)
    for filt, expected in ((tf, 1e-3 / (tf + H)), (0.0, 1e-3 / H)):
        ax = tasks(kp=0.0, ki=0.0, kd=1.0, tf=filt, umax=1e9)
        ax.reset(zero)
        ax.step(zero, zero, np.array([1e-3]), zero)
        assert -ax.tau[0] == pytest.approx(expected, rel=1e-12)


def test_no_derivative_kick_on_a_reference_step():
    """The derivative acts on the measurement (and on q̇_ref), not on q_ref."""
    ax = tasks(kp=0.0, ki=0.0, kd=50.0, umax=1e9)
    zero = np.zeros(1)
    ax.reset(zero)
    ax.step(np.array([1.0]), zero, zero, zero)
    assert ax.tau[0] == 0.0
    ax.step(np.array([1.0]), np.array([0.2]), zero, np.array([3.0]))
    assert ax.tau[0] == pytest.approx(50.0 * 0.2 + 3.0)


def test_staged_gains_apply_only_at_the_boundary():
    ax = tasks(n=2, kp=10.0, ki=0.0, kd=0.0, umax=1e9)
    zero, ref = np.zeros(2), np.array([1.0, 1.0])
    ax.reset(zero)
    ax.set_gains(1, kp=30.0, ki=5.0)
    ax.step(ref, zero, zero, zero)
    assert ax.tau.tolist() == [10.0, 10.0]
    integral = ax.state[:, INTEGRAL].copy()
    assert ax.apply_staged() is True
    assert ax.apply_staged() is False
    assert np.array_equal(ax.state[:, INTEGRAL], integral)      # bumpless: I kept in N·m
    ax.step(ref, zero, zero, zero)
    assert ax.tau.tolist() == [10.0, 30.0]
    ax.step(ref, zero, zero, zero)
    assert ax.tau[0] == 10.0 and ax.tau[1] == pytest.approx(30.0 + 5.0 * H)


@pytest.mark.parametrize("gains,message", [
    (dict(kp=-1.0), "gain kp of axis 0 must be a finite number >= 0, got -1.0"),
    (dict(kd=float("nan")), "gain kd of axis 0 must be a finite number >= 0, got nan"),
    (dict(ki=float("inf")), "gain ki of axis 0 must be a finite number >= 0, got inf"),
    (dict(umax=0.0), "gain umax of axis 0 must be a finite number > 0, got 0.0"),
    (dict(tf="fast"), "gain tf of axis 0 must be a finite number >= 0, got 'fast'"),
    (dict(kq=1.0), "unknown gain 'kq'; known gains: kp, ki, kd, tf, kaw, umax"),
])
def test_gain_validation(gains, message):
    ax = tasks()
    with pytest.raises(ValueError) as e:
        ax.set_gains(0, kaw=5.0, **gains)
    assert str(e.value) == message
    assert not ax.pending and ax.staged[0, KAW] == 0.0       # nothing staged from a bad call


def test_axis_and_constructor_validation():
    with pytest.raises(ValueError, match=r"axis must be an integer in \[0, 1\], got 2"):
        tasks(n=2).set_gains(2, kp=1.0)
    with pytest.raises(ValueError, match=r"gain kd\[1\] must be a finite number >= 0, got -2.0"):
        tasks(n=2, kd=[1.0, -2.0])
    with pytest.raises(ValueError, match="axis mode must be one of"):
        tasks(mode="csv")


def test_csp_passes_references_and_clamps_the_feedforward():
    ax = tasks(n=3, mode="csp", umax=[5.0, 5.0, 1.0])
    q_ref, qd_ref, ff = np.array([0.1, 0.2, 0.3]), np.array([1.0, -1.0, 0.0]), np.array([2.0, -7.0, 0.5])
    assert ax.step(q_ref, qd_ref, np.zeros(3), ff) == 0b010
    assert np.array_equal(ax.q_cmd, q_ref) and np.array_equal(ax.qd_cmd, qd_ref)
    assert ax.tau.tolist() == [2.0, -5.0, 0.5]


def test_feedforward():
    """τ_ff = G, or A q̈_ref + h with h = C q̇ + G (thesis A q̈ + C q̇ + G = τ)."""
    rng = np.random.default_rng(3)
    A, h, G, qdd = rng.normal(size=(4, 4)), rng.normal(size=4), rng.normal(size=4), rng.normal(size=4)
    out = np.empty(4)
    feedforward(A, h, G, qdd, False, out)
    assert np.array_equal(out, G)
    feedforward(A, h, G, qdd, True, out)
    assert np.allclose(out, A @ qdd + h, atol=1e-14)


def test_motor_setpoints_through_the_transmission():
    """CSP: motor angle of q_ref, q̇_m = J_p q̇_ref, τ_m = J_p^-T τ (eq. 30-32), as the
    Transmission methods compute them; CST writes τ_m only."""
    doc = yaml.safe_load(YAML.read_text())
    qmin = np.array([j["limits"]["position"][0] for j in doc["joints"]])
    qmax = np.array([j["limits"]["position"][1] for j in doc["joints"]])
    tr = parse_transmission(doc["transmission"], str(YAML), qmin, qmax)
    q = np.array([0.1, 0.2, -0.8, 0.5])
    qd, tau = np.array([0.3, -0.2, 0.5, 0.1]), np.array([5.0, -20.0, 40.0, 12.0])
    Jp = tr.jacobian(q)
    qm, qmd, tau_m = np.full(4, 7.0), np.full(4, 7.0), np.empty(4)
    assert motor_setpoints(CST, tr.params, Jp, q, qd, tau, qm, qmd, tau_m) == 0
    assert np.all(qm == 7.0) and np.all(qmd == 7.0)
    assert np.allclose(tau_m, tr.torque_to_motor(q, tau), rtol=1e-12)
    assert motor_setpoints(CSP, tr.params, Jp, q, qd, tau, qm, qmd, tau_m) == 0
    assert np.allclose(qm, tr.to_motor(q), rtol=1e-12)
    assert np.allclose(qmd, tr.velocity_to_motor(q, qd), rtol=1e-12)
    bad = np.array([0.0, 0.0, np.nan, 0.0])       # the knee linkage cannot close: a status, no exception
    assert motor_setpoints(CSP, tr.params, Jp, bad, qd, tau, qm, qmd, tau_m) == CANNOT_CLOSE + 4 * 2


@njit
def _pid_cycles(params, state, q_ref, qd_ref, q, ff, tau, count):
    for _ in range(count):
        pid_step(params, state, q_ref, qd_ref, q, ff, 0.002, tau)


@pytest.mark.slow
def test_pid_is_allocation_free():
    ax = tasks(n=4)
    args = (ax.params, ax.state, np.ones(4), np.zeros(4), np.zeros(4), np.zeros(4), ax.tau)
    assert_allocation_free(_pid_cycles, *args)
