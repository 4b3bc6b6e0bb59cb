"""The ground's slope by proprioception (stabilizer.feet eq. 3, 3') against a motion whose every term is
known in closed form: a sole lying on a floor tilted by a known pitch and roll (R_s = RotY(-pitch)
RotX(roll), the terrain's convention), the pelvis swaying over it (its origin on a Lissajous path, its
axes turning about all three), the IMU's specific force f = R_p' (p'' + g0 z) (Gastebois 2017 eq. 46)
from the analytic acceleration. The kernel gets what the robot would have: f in pelvis axes, the
pelvis' rotation R_s' R_p and origin velocity R_s' p' in the sole's frame, the four cells equally
loaded. The pelvis accelerates up to ~1.5 m/s^2 (gravity's direction off by ~9 deg if read raw): the
estimate is right only through the acceleration term and the frames. And the first sample taken (a
one-cycle transient) must not hold the estimate: eq. 3' averages the first ``slope_tau``."""
from __future__ import annotations

import math

import numpy as np
import pytest

from models.tree.model import rotation
from stabilizer.feet import CELLS, new_state, observe, views
from stabilizer.feet_config import FeetConfig

PERIOD = 0.002
G0 = 9.81
# the pelvis origin's sway, per world axis: (amplitude m, Hz); its axes' turn about x, y, z: (rad, Hz)
SWAY = ((0.04, 0.9), (0.05, 0.6), (0.005, 1.7))
TURN = ((0.05, 0.7), (0.08, 0.9), (0.1, 0.4))


def rot(axis: int, a: float) -> np.ndarray:
    return rotation(axis, a)[:3, :3]


def floor(pitch_deg: float, roll_deg: float) -> np.ndarray:
    """The sole's axes on the floor: RotY(-pitch) RotX(roll)."""
    return rot(1, -math.radians(pitch_deg)) @ rot(0, math.radians(roll_deg))


def estimates(pitch_deg: float, roll_deg: float, seconds: float) -> np.ndarray:
    """The kernel's (pitch, roll) estimate each cycle (rad) over ``seconds`` of the sway."""
    R_s = floor(pitch_deg, roll_deg)
    p = FeetConfig().params(PERIOD, G0)
    buf = new_state()
    st = views(buf)
    loads = np.zeros(2 * CELLS)
    loads[:CELLS] = 250.0                       # the left foot in stance, lying flat
    out = []
    for k in range(round(seconds / PERIOD)):
        t = k * PERIOD
        w = [2 * math.pi * f for _, f in SWAY]
        v = np.array([a * wi * math.cos(wi * t) for (a, _), wi in zip(SWAY, w)])
        acc = np.array([-a * wi * wi * math.sin(wi * t) for (a, _), wi in zip(SWAY, w)])
        R_p = rot(0, TURN[0][0] * math.sin(2 * math.pi * TURN[0][1] * t)) @ rot(
            1, TURN[1][0] * math.sin(2 * math.pi * TURN[1][1] * t)) @ rot(2, TURN[2][0] * math.sin(
                2 * math.pi * TURN[2][1] * t))
        force = R_p.T @ (acc + [0.0, 0.0, G0])
        observe(p, buf, loads, np.zeros((2, CELLS, 2)), np.zeros(2), 0.0, force, R_s.T @ R_p, R_s.T @ v, PERIOD)
        out.append(st.slope.copy())
    return np.array(out)


@pytest.mark.parametrize("pitch_deg, roll_deg", [(4.0, 0.0), (-4.0, 2.0), (0.0, -2.0)])
def test_the_swaying_pelvis_gives_the_floors_slope(pitch_deg, roll_deg):
    """Over the last second of a 3 s sway the estimate stays within 0.05 deg of the floor's pitch and
    roll (the one-cycle finite difference of the velocity lags the accelerometer by half a cycle)."""
    est = np.degrees(estimates(pitch_deg, roll_deg, 3.0)[-round(1.0 / PERIOD):])
    assert np.abs(est - [pitch_deg, roll_deg]).max() < 0.05, np.abs(est - [pitch_deg, roll_deg]).max(axis=0)


def test_a_first_sample_off_by_a_transient_does_not_hold_the_estimate():
    """One flat-stance cycle reads the floor 8 deg steeper (a velocity spike), the next ``slope_tau`` of
    cycles the floor's 4 deg: the estimate is their mean (eq. 3', 4 + 8 / (n + 1) deg); a low-pass seeded
    with the first sample would still be 8 / e = 2.9 deg off."""
    p = FeetConfig().params(PERIOD)
    buf = new_state()
    loads = np.zeros(2 * CELLS)
    loads[:CELLS] = 250.0

    def up(deg):
        a = math.radians(deg)
        return 9.81 * np.array([math.sin(a), 0.0, math.cos(a)])

    n = round(FeetConfig().slope_tau / PERIOD)
    for force in [up(4.0), up(12.0)] + [up(4.0)] * n:   # the first cycle only sets the velocity's last value
        observe(p, buf, loads, np.zeros((2, CELLS, 2)), np.zeros(2), 0.0, force, np.eye(3), np.zeros(3), PERIOD)
    assert abs(math.degrees(views(buf).slope[0]) - 4.0) < 0.06
