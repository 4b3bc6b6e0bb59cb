"""Joint trajectory laws (seed 001 ch. V; thesis §2.6.1 uses the quintic)."""
from __future__ import annotations

import numpy as np

SQUAT_DEG = {"ankle_sagittal": 16.0, "knee": -85.0, "hip": 70.0}   # thesis §2.6.1
SQUAT_DURATION_S = 7.0


def quintic_scalar(s: float) -> tuple[float, float, float]:
    """Fifth-order law r(s) = 10 s^3 - 15 s^4 + 6 s^5 on s in [0, 1] with zero
    velocity and acceleration at both ends: (r, dr/ds, d2r/ds2)."""
    s = min(max(s, 0.0), 1.0)
    s2, s3 = s * s, s * s * s
    return (10 * s3 - 15 * s3 * s + 6 * s3 * s2,
            30 * s2 - 60 * s3 + 30 * s2 * s2,
            60 * s - 180 * s2 + 120 * s3)


def quintic(q0: np.ndarray, q1: np.ndarray, duration: float, t: float,
            out: np.ndarray) -> None:
    """Quintic interpolation q0 -> q1 in ``duration`` s: out = (q, qd, qdd) rows
    (3, n), preallocated."""
    r, dr, ddr = quintic_scalar(t / duration)
    dq = q1 - q0
    out[0] = q0 + r * dq
    out[1] = (dr / duration) * dq
    out[2] = (ddr / duration ** 2) * dq


def squat_posture(joint_names: tuple[str, ...]) -> np.ndarray:
    """Bottom posture of the thesis squat (ankle 16°, knee 85°, hip 70°), in the
    sign convention of deploy/robots/bip_leg.yaml (knee flexion is negative)."""
    q = np.zeros(len(joint_names))
    for name, deg in SQUAT_DEG.items():
        if name not in joint_names:
            raise ValueError(f"the squat needs a joint named {name!r}; this robot has {list(joint_names)}")
        q[joint_names.index(name)] = np.radians(deg)
    return q
