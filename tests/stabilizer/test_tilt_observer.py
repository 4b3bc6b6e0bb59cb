"""The tilt observer (stabilizer.tilt_observer): the foot IMU's specific force is believed only while
the sole's load cells show the foot flat and the IMU reads no more than gravity, then smoothed by a
critically damped second-order low-pass."""
from __future__ import annotations

import math

import numpy as np

from stabilizer.tilt_observer import (
    DWELL_S,
    FILTER_S,
    FLAT_MARGIN,
    NORM_TOLERANCE,
    ObserverSettings,
    foot_flat,
    new_state,
    observe_tilt,
)

from tests.stabilizer.helpers import FOOT

A, B, C = FOOT["a"], FOOT["b"], FOOT["c"]
G0, H = 9.81, 0.002
FLAT = np.array([300.0, 0.0, 0.04])                 # full load, centre of pressure mid-sole
LEVEL = np.array([G0, 0.0, 0.0])
SETTINGS = ObserverSettings().array()       # today's thresholds (the YAML's defaults)


def tilted(beta: float) -> np.ndarray:
    """The specific force on a foot pitched by beta (R_M→O0ᵀ g0 x_g, thesis eq. 46 with α = 0)."""
    return G0 * np.array([math.cos(beta), 0.0, -math.sin(beta)])


def run(state, f, sole, seconds: float) -> np.ndarray:
    out = np.zeros(3)
    for _ in range(round(seconds / H)):
        observe_tilt(f, sole, A, B, C, G0, H, SETTINGS, state, out)
    return out


def test_the_foot_is_flat_while_its_centre_of_pressure_is_inside_the_sole():
    assert foot_flat(FLAT, A, B, C, SETTINGS)
    inside = FLAT_MARGIN + 1e-4
    for y, z in ((A - inside, 0.0), (-A + inside, 0.0), (0.0, B - inside), (0.0, -C + inside)):
        assert foot_flat(np.array([300.0, y, z]), A, B, C, SETTINGS), (y, z)
    for y, z in ((A, 0.0), (-A, 0.0), (0.0, B), (0.0, -C), (A - 0.5 * FLAT_MARGIN, 0.0)):   # on an edge: rocking
        assert not foot_flat(np.array([300.0, y, z]), A, B, C, SETTINGS), (y, z)
    assert not foot_flat(np.array([5.0, 0.0, 0.04]), A, B, C, SETTINGS)              # lifted
    assert not foot_flat(np.array([300.0, np.nan, np.nan]), A, B, C, SETTINGS)       # no centre of pressure


def test_the_thresholds_are_the_settings_given():
    """tilt: min_load and flat_margin of the stabilizer YAML reach the kernel, not the defaults."""
    assert not foot_flat(FLAT, A, B, C, ObserverSettings(min_load=301.0).array())
    near_edge = np.array([300.0, A - 2.0 * FLAT_MARGIN, 0.0])
    assert foot_flat(near_edge, A, B, C, SETTINGS)
    assert not foot_flat(near_edge, A, B, C, ObserverSettings(flat_margin=3.0 * FLAT_MARGIN).array())
    s, out = new_state(), np.zeros(3)
    slow = ObserverSettings(dwell_s=2.0 * DWELL_S).array()
    n = round(2.0 * DWELL_S / H)
    for k in range(n):
        assert observe_tilt(LEVEL, FLAT, A, B, C, G0, H, slow, s, out) == (1 if k == n - 1 else 0)


def test_nothing_is_believed_before_the_foot_was_flat_for_the_dwell():
    s = new_state()
    assert np.isnan(run(s, LEVEL, np.array([300.0, A, 0.0]), 1.0)).all()   # on its edge: NaN (refused downstream)
    out = np.zeros(3)
    n = round(DWELL_S / H)
    for k in range(n):
        assert observe_tilt(LEVEL, FLAT, A, B, C, G0, H, SETTINGS, s, out) == (1 if k == n - 1 else 0)
    np.testing.assert_array_equal(out, LEVEL)                               # the first sample starts it


def test_a_rocking_or_shaken_foot_is_not_taken_for_the_ground():
    """Flat on a pitched ground (10°): f̂ settles on the ground's specific force; then the foot rocks on
    its heel (centre of pressure on the edge) to 15°, or is shaken (|f| beyond the tolerance): f̂ stays."""
    s = new_state()
    ground = tilted(math.radians(10.0))
    np.testing.assert_allclose(run(s, ground, FLAT, 3.0), ground, atol=1e-6)
    np.testing.assert_allclose(run(s, tilted(math.radians(15.0)), np.array([300.0, 0.0, -C]), 1.0), ground, atol=1e-6)
    shaken = (1.0 + 2.0 * NORM_TOLERANCE) * tilted(math.radians(15.0))
    np.testing.assert_allclose(run(s, shaken, FLAT, 1.0), ground, atol=1e-6)


def test_a_step_of_the_ground_is_followed_smoothly():
    """After a step Δ of the accepted samples, f̂ follows the critically damped step response
    Δ (1 − (1 + ωt) e^(−ωt)), ω = 1/FILTER_S: no step and no kink (the rate starts at zero)."""
    s = new_state()
    run(s, LEVEL, FLAT, 1.0)
    step = tilted(math.radians(5.0))
    delta = step - LEVEL
    w = 1.0 / FILTER_S
    out, prev, rates = np.zeros(3), LEVEL.copy(), []
    for k in range(1, round(5 * FILTER_S / H) + 1):
        observe_tilt(step, FLAT, A, B, C, G0, H, SETTINGS, s, out)
        t = k * H
        np.testing.assert_allclose(out, LEVEL + delta * (1.0 - (1.0 + w * t) * math.exp(-w * t)),
                                   atol=0.02 * np.abs(delta).max())        # semi-implicit Euler, h ω = 0.013
        rates.append(np.abs(out - prev).max() / H)
        prev = out.copy()
    rates = np.array(rates)
    assert rates[0] < 0.05 * rates.max()      # h ω² Δ against the peak ω Δ / e (a first-order filter: 1)
    assert np.abs(np.diff(rates)).max() < 0.05 * rates.max()               # and changes gently
