"""The ground tilt from the foot IMU, taken only while the foot is flat (docs/equations.md, "Tilt
observer"; our addition, not the thesis').

An accelerometer fixed to the foot reads the specific force f = R0ᵀ (a − g): the ground's tilt
only while the foot lies flat on the ground and is at rest. When the foot rocks on a sole edge
(the centre of pressure, the zero-moment point of Vukobratović & Borovac 2004, on that edge: the
foot rotates, Goswami 1999), f is the foot's own tilt plus its rocking
accelerations, and a stabilizer that takes it for the ground's rotates the leg so as to rock the
foot further. So a sample f_k is accepted only while the sole's load cells show the foot flat and
unshaken:

* flat: total load ≥ ``min_load`` and the centre of pressure (y, z) at least ``flat_margin``
  inside every edge of the sole rectangle −a ≤ y ≤ a, −c ≤ z ≤ b (Figure 20);
* unshaken: | |f_k| − g0 | ≤ ``norm_tolerance`` g0;
* both for the last ``dwell_s`` (the first samples after a landing still carry its impact).

The last accepted sample f_a is held while the foot is not flat, and f̂ follows it through a
critically damped second-order low-pass, f̂'' = ω² (f_a − f̂) − 2ω f̂', ω = 1 / ``filter_s``
(semi-implicit Euler at the cycle h), so that f̂ and its rate stay continuous whatever f_a does.
The stabilizer needs that: its walls move G+ within ~10 ms of a tilt change (admittance damping
against the walls' stiffness), so a step or a kink in the tilt is an ankle torque pulse, and the
foot can only take pulses its sole's half-width times its load allows (about 18 N·m sideways for
the BIP leg) before it rocks. The first accepted sample starts f̂ (at rest). Before it, f̂ is NaN,
which :func:`stabilizer.ground.apparent_tilt` refuses (TILT_INVALID).

The thresholds are the stabilizer YAML's ``tilt:`` keys of the same names (:class:`ObserverSettings`;
the defaults below).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

MIN_LOAD = 20.0          # N: below this the sole is not on the ground
FLAT_MARGIN = 0.002      # m: centre of pressure this far inside every sole edge
NORM_TOLERANCE = 0.05    # | |f| - g0 | <= 5 % of g0: no impact, no rocking acceleration
DWELL_S = 0.02           # s flat and unshaken before the IMU is believed again
FILTER_S = 0.15          # s: 1/ω of the low-pass of the accepted samples
UNCONFIRMED_S = 1.0      # s without an accepted sample after which the loop warns (TILT_INPUT)

# the kernel's settings (a float64 array of SETTINGS_SIZE, ObserverSettings.array())
P_MIN_LOAD = 0
P_FLAT_MARGIN = 1
P_NORM_TOLERANCE = 2
P_DWELL_S = 3
P_FILTER_S = 4
SETTINGS_SIZE = 5


@dataclass(frozen=True)
class ObserverSettings:
    """The observer's thresholds (module docstring) and the time without an accepted sample after
    which the loop calls the held tilt unconfirmed (``unconfirmed_s``: a warning and the telemetry's
    ``tilt_held``)."""
    min_load: float = MIN_LOAD
    flat_margin: float = FLAT_MARGIN
    norm_tolerance: float = NORM_TOLERANCE
    dwell_s: float = DWELL_S
    filter_s: float = FILTER_S
    unconfirmed_s: float = UNCONFIRMED_S

    def array(self) -> np.ndarray:
        """The kernel's settings (P_* order)."""
        p = np.empty(SETTINGS_SIZE)
        p[P_MIN_LOAD], p[P_FLAT_MARGIN], p[P_NORM_TOLERANCE] = self.min_load, self.flat_margin, self.norm_tolerance
        p[P_DWELL_S], p[P_FILTER_S] = self.dwell_s, self.filter_s
        return p

# observer state (the caller's float64 buffer of STATE_SIZE)
F_HELD = 0               # the last accepted sample (3)
F_HAT = 3                # f̂ (3)
F_RATE = 6               # its rate (3)
S_FLAT = 9               # seconds flat and unshaken so far
STATE_SIZE = 10


def new_state() -> np.ndarray:
    """An observer state: nothing accepted yet (f̂ NaN)."""
    s = np.zeros(STATE_SIZE)
    s[F_HELD:F_HAT + 3] = np.nan
    return s


@njit(cache=True)
def foot_flat(sole, a, b, c, settings):
    """True when the sole's load cells (total load N, centre of pressure y0, z0 m in R0) show the
    foot flat: loaded and its centre of pressure ``flat_margin`` inside the rectangle of Figure 20."""
    load, y, z = sole[0], sole[1], sole[2]
    if not (math.isfinite(load) and math.isfinite(y) and math.isfinite(z)) or load < settings[P_MIN_LOAD]:
        return False
    return min(a - y, a + y, b - z, c + z) >= settings[P_FLAT_MARGIN]


@njit(cache=True)
def observe_tilt(f, sole, a, b, c, g0, h, settings, state, out):
    """One cycle of the observer (module docstring): the IMU's specific force ``f`` (R0, m/s²) and
    the sole reading ``sole``; the foot rectangle a, b, c (m), gravity g0, cycle h (s), the
    ``settings`` (P_*). Writes f̂ into ``out`` (3); returns 1 when ``f`` was accepted this cycle, else 0."""
    norm = math.sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2])
    steady = math.isfinite(norm) and abs(norm - g0) <= settings[P_NORM_TOLERANCE] * g0
    if steady and foot_flat(sole, a, b, c, settings):
        state[S_FLAT] += h
    else:
        state[S_FLAT] = 0.0
    accepted = state[S_FLAT] >= settings[P_DWELL_S] - 0.5 * h
    first = accepted and not math.isfinite(state[F_HELD])
    w = 1.0 / settings[P_FILTER_S]
    for r in range(3):
        if accepted:
            state[F_HELD + r] = f[r]
        if first:
            state[F_HAT + r] = f[r]
            state[F_RATE + r] = 0.0
        state[F_RATE + r] += h * (w * w * (state[F_HELD + r] - state[F_HAT + r]) - 2.0 * w * state[F_RATE + r])
        state[F_HAT + r] += h * state[F_RATE + r]
        out[r] = state[F_HAT + r]
    return 1 if accepted else 0
