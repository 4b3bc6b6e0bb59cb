"""Offline evaluation of the whole-robot stabilizer: kinematics only, no plant.

BIP 2000 stands on a platform tilted quasi-statically in eight directions (+-alpha,
+-beta and the diagonals), on both feet and on the left one. The platform's tilt
follows a quintic from 0 to the largest amplitude in ``ramp_s`` seconds; the
stabilizer's q_ref is integrated and fed back as the measured posture (perfect
tracking). Reported per direction and amplitude: the CoG margin (signed distance of
the CoG's projection along gravity to the nearest support-polygon edge, > 0 inside)
with the posture held (no stabilizer) and with the stabilizer, and the smallest
margin met on the way. This is not the HIL figure (no dynamics, no drives): that
comes from the daemon and the MuJoCo plant.

The single-support start posture is the one the stabilizer reaches on a level floor
from the double-support posture once the right foot is unloaded (the CoG moved over
the left sole); both the held and the stabilized runs start from it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.common.support import DOUBLE, LEFT
from models.gait.plan import GaitParams
from models.gait.wholebody import flexed_posture

from stabilizer.whole_body import OK, STATUS_NAMES, WholeBodyStabilizer

DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "deploy" / "robots" / "bip2000_stabilizer.yaml"
DIRECTIONS_DEG = (0, 45, 90, 135, 180, 225, 270, 315)   # 0: +alpha (roll), 90: +beta (pitch)
SUPPORTS = {"double": DOUBLE, "left": LEFT}


@dataclass(frozen=True)
class Row:
    support: str
    direction_deg: int
    amplitude_deg: float
    held_margin: float          # m, the posture held
    stabilized_margin: float    # m, the stabilizer's posture at this tilt
    min_stabilized: float       # m, the smallest margin on the way up to this tilt


def _tilt(direction_deg: float, amplitude: float) -> tuple[float, float]:
    d = np.radians(direction_deg)
    return amplitude * np.cos(d), amplitude * np.sin(d)


def _settle(st: WholeBodyStabilizer, q: np.ndarray, support: int, seconds: float) -> np.ndarray:
    st.reset(q)
    for _ in range(int(round(seconds / st.config.period))):
        status = st.step(q, support)
        if status != OK:
            raise RuntimeError(f"stabilizer status {STATUS_NAMES[status]} while settling")
        q = st.q_ref.copy()
    return q


def _margin(st: WholeBodyStabilizer, q: np.ndarray, support: int, tilt) -> float:
    """CoG margin of posture q under a tilt (one step from a reset: the measured margin)."""
    st.reset(q)
    status = st.step(q, support, tilt)
    if status != OK:
        raise RuntimeError(f"stabilizer status {STATUS_NAMES[status]} at tilt {tilt}")
    return st.measured_margin


def evaluate(config: str | Path = DEFAULT_CONFIG, amplitudes_deg=(2.0, 4.0, 6.0, 8.0, 10.0),
             ramp_s: float = 7.0, flex: float = 0.06, settle_s: float = 5.0,
             directions=DIRECTIONS_DEG, supports=("double", "left")) -> list[Row]:
    """Rows of the table (module docstring)."""
    st = WholeBodyStabilizer.from_yaml(config)
    probe = WholeBodyStabilizer(st.robot, st.config)
    dt = st.config.period
    amps = np.radians(np.asarray(amplitudes_deg, dtype=float))
    q_double = flexed_posture(st.robot, GaitParams(flex=flex))
    starts = {"double": q_double, "left": _settle(st, q_double, LEFT, settle_s)}
    rows = []
    steps = int(round(ramp_s / dt))
    for name in supports:
        support, q0 = SUPPORTS[name], starts[name]
        for d in directions:
            st.reset(q0)
            q, lowest, k_amp = q0.copy(), np.inf, 0
            for k in range(1, steps + 1):
                x = k / steps
                a = amps[-1] * x ** 3 * (10.0 - 15.0 * x + 6.0 * x * x)
                status = st.step(q, support, _tilt(d, a))
                if status != OK:
                    raise RuntimeError(f"stabilizer status {STATUS_NAMES[status]} at {name} support, "
                                       f"direction {d} deg, tilt {np.degrees(a):.2f} deg")
                q = st.q_ref.copy()
                lowest = min(lowest, st.measured_margin)
                while k_amp < len(amps) and a >= amps[k_amp] - 1e-12:
                    tilt = _tilt(d, amps[k_amp])
                    rows.append(Row(name, d, float(np.degrees(amps[k_amp])), _margin(probe, q0, support, tilt),
                                    _margin(probe, q, support, tilt), lowest))
                    k_amp += 1
    return rows


def format_table(rows: list[Row]) -> str:
    """Margins in mm: held / stabilized per direction (columns) and amplitude (rows)."""
    out = ["Whole-robot stabilizer, offline kinematic evaluation (NOT the HIL figure): CoG margin, mm,",
           "posture held / stabilized (> 0 inside the support polygon); tilt direction 0 = +alpha (roll),",
           "90 = +beta (pitch)."]
    for support in dict.fromkeys(r.support for r in rows):
        sub = [r for r in rows if r.support == support]
        dirs = list(dict.fromkeys(r.direction_deg for r in sub))
        out.append(f"\n{support} support")
        out.append("tilt deg | " + " | ".join(f"{d:>3d} deg     " for d in dirs))
        for amp in dict.fromkeys(r.amplitude_deg for r in sub):
            cells = [next(r for r in sub if r.direction_deg == d and r.amplitude_deg == amp) for d in dirs]
            out.append(f"{amp:8.1f} | " + " | ".join(f"{1e3 * c.held_margin:5.0f} /{1e3 * c.stabilized_margin:5.0f}"
                                                      for c in cells))
        worst = min(sub, key=lambda r: r.min_stabilized)
        held = min(sub, key=lambda r: r.held_margin)
        out.append(f"smallest margin: held {1e3 * held.held_margin:.0f} mm ({held.direction_deg} deg, "
                   f"{held.amplitude_deg:.0f} deg), stabilized {1e3 * worst.min_stabilized:.0f} mm "
                   f"({worst.direction_deg} deg, up to {worst.amplitude_deg:.0f} deg)")
    return "\n".join(out)
