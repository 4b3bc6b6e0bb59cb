"""The two-hinge platform's tilt (α, β) as a Stewart–Gough platform orientation, and back.

What (α, β) means is the robot's, declared here once (docs/conventions.md, "Platform tilt"):

- ``THESIS`` (the bench leg): the leg stands on the rig's plate with its thesis world axes (x_g up,
  Gastebois 2017, eq. 45–47) on the rig's frame 0 as y_g → x, z_g → y, x_g → z (as the hinge bench's
  MuJoCo scene), so the hinge platform's R_M→O0 = Rz_g(α) Ry_g(−β) (eq. 46) is Ry(α) Rx(−β) in rig
  axes. With γ = −β, Ry(α) Rx(γ) = [[cα, sα sγ, sα cγ], [0, cγ, −sγ], [−sα, cα sγ, cα cγ]].
- ``SOLES`` (a tree robot standing on its soles, BIP 2000): the robot's world axes (x forward, y left,
  z up) are the rig's, and its platform is rolled by α about x then pitched by β about the rolled y,
  RotX(α) RotY(β) (its hinge platform, drivers.sim.hil.mjcf_biped; models.tilt.sole_gravity;
  stabilizer.whole_body.apparent_up).

The rig orients its platform as Rx(α1) Ry(α2) Rz(α3) (Staicu 2008, eq. 7), so under ``SOLES``
(α, β) = (α1, α2) with α3 = 0, and reading back α = atan2(−R12, R22), β = asin R02 (the plate's
normal, whatever its yaw).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

THESIS = 0
SOLES = 1
CONVENTIONS = {"chain": THESIS, "tree": SOLES}
"""The tilt convention of a robot kind (a serial chain: the bench leg; a kinematic tree standing on its soles)."""


def hinge_to_euler(alpha: float, beta: float, out: np.ndarray, convention: int = THESIS) -> None:
    """(α1, α2, α3) of the platform tilt (α, β) in ``convention``: THESIS, Ry(α) Rx(−β) = Rx(α1) Ry(α2)
    Rz(α3): α2 = asin R02, α1 = atan2(−R12, R22), α3 = atan2(−R01, R00); SOLES, (α, β, 0)."""
    if convention == SOLES:
        out[0], out[1], out[2] = alpha, beta, 0.0
        return
    ca, sa, cg, sg = math.cos(alpha), math.sin(alpha), math.cos(-beta), math.sin(-beta)
    out[0] = math.atan2(sg, ca * cg)
    out[1] = math.asin(max(-1.0, min(1.0, sa * cg)))
    out[2] = math.atan2(-sa * sg, ca)


@njit(cache=True)
def hinge_angles(pose, out, convention=THESIS):
    """(α, β) of the orientation Rx(α1) Ry(α2) Rz(α3) of ``pose`` = (x, y, z, α1, α2, α3) in
    ``convention`` (:func:`matrix_hinge_angles`)."""
    c1, s1 = math.cos(pose[3]), math.sin(pose[3])
    c2, s2 = math.cos(pose[4]), math.sin(pose[4])
    c3, s3 = math.cos(pose[5]), math.sin(pose[5])
    if convention == SOLES:
        out[0] = math.atan2(s1 * c2, c1 * c2)
        out[1] = math.asin(max(-1.0, min(1.0, s2)))
        return
    out[0] = math.atan2(-(s1 * s3 - c1 * s2 * c3), c2 * c3)
    out[1] = math.atan2(-s1 * c2, c1 * c3 - s1 * s2 * s3)


@njit(cache=True)
def matrix_hinge_angles(R, out, convention=THESIS):
    """(α, β) of a plate orientation matrix R (rig axes) in ``convention``: THESIS, read as
    Ry(α) Rx(−β), α = atan2(−R20, R00), β = atan2(R12, R11), exact where the orientation has that form
    (no yaw), the hinge angles of the plate otherwise; SOLES, read as RotX(α) RotY(β) from the plate's
    normal, α = atan2(−R12, R22), β = asin R02."""
    if convention == SOLES:
        out[0] = math.atan2(-R[1, 2], R[2, 2])
        out[1] = math.asin(max(-1.0, min(1.0, R[0, 2])))
        return
    out[0] = math.atan2(-R[2, 0], R[0, 0])
    out[1] = math.atan2(R[1, 2], R[1, 1])


def euler_to_hinge(a1: float, a2: float, a3: float, convention: int = THESIS) -> tuple[float, float]:
    """(α, β) of the orientation Rx(α1) Ry(α2) Rz(α3) in ``convention`` (:func:`hinge_angles`)."""
    out = np.zeros(2)
    hinge_angles(np.array([0.0, 0.0, 0.0, a1, a2, a3]), out, convention)
    return float(out[0]), float(out[1])
