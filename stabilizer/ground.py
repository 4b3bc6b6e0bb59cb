"""The ground: world frame, foot frame and the tilt that links them (thesis §2.5.5).

World frame (M, x_g, y_g, z_g): attached to the centre M of the support polygon,
x_g UP (opposite to gravity). The foot (and the leg's base frame R0 at the ankle
cardan centre O0) is tilted by the roll/pitch pair (alpha, beta) of the platform,
giving R_M->O0 (eq. 45-46) and T_M->O0 (eq. 47).

The tilt can come from three sources, all reduced to one vector: the *apparent
up* direction u in R0 axes (the direction of the specific force an accelerometer
fixed to the foot reads):

* the platform's own axes (the bench): u = R_M->O0^T x_g;
* an IMU in the foot: u = f / |f|, f the measured specific force in R0 axes;
* the platform axes plus a measured horizontal acceleration a of the support:
  by the thesis' equivalence principle (§2.5.4) a tilt and a horizontal
  acceleration of the same size are the same disturbance, so the apparent
  gravity g - a replaces g: u = R_M->O0^T (g0 x_g + a) / |g0 x_g + a|.

The effective (alpha, beta) are then read back from u (:func:`tilt_from_up`) and
everything downstream (polygon, walls, CoG in world) uses them: the world frame
is the one of the apparent gravity.
"""
from __future__ import annotations

import math

from numba import njit

from models.tilt import rotation_world_foot

TILT_PLATFORM = 0
TILT_IMU = 1

# status codes of apparent_tilt
TILT_OK = 0
TILT_INVALID = 1       # non-finite input, zero vector, or the foot upside down

# |alpha|, |beta| beyond this (rad) mean the foot is not standing on the ground
MAX_TILT = 1.2


@njit(cache=True)
def foot_origin(R, Delta, Z, o):
    """Position of O0 in the world frame, the translation of T_M->O0 (eq. 47):
    o = R_M->O0 (Delta, 0, -Z), i.e. O0 sits Delta above the sole and Z behind M."""
    for r in range(3):
        o[r] = R[r, 0] * Delta - R[r, 2] * Z


@njit(cache=True)
def base_to_world(R, o, p, out):
    """out = T_M->O0 p for a point p in R0 coordinates (eq. 47)."""
    for r in range(3):
        out[r] = o[r] + R[r, 0] * p[0] + R[r, 1] * p[1] + R[r, 2] * p[2]


@njit(cache=True)
def tilt_from_up(ux, uy, uz, out):
    """(alpha, beta) such that R_M->O0(alpha, beta)^T x_g is parallel to the
    apparent-up vector u given in R0 axes. From eq. 46 the first row of R_M->O0
    is (ca cb, -sa, -ca sb), so alpha = atan2(-uy, sqrt(ux^2 + uz^2)) and
    beta = atan2(-uz, ux). Returns TILT_INVALID (out untouched) for a non-finite
    or zero u, or a tilt beyond MAX_TILT (the foot is not on the ground)."""
    n2 = ux * ux + uy * uy + uz * uz
    if not (math.isfinite(n2) and n2 > 1e-12):
        return TILT_INVALID
    alpha = math.atan2(-uy, math.sqrt(ux * ux + uz * uz))
    beta = math.atan2(-uz, ux)
    if abs(alpha) > MAX_TILT or abs(beta) > MAX_TILT:
        return TILT_INVALID
    out[0] = alpha
    out[1] = beta
    return TILT_OK


@njit(cache=True)
def apparent_tilt(source, use_acceleration, g0, tilt, acc, R, out):
    """Effective (alpha, beta) of the apparent gravity, into out[0:2].

    source TILT_PLATFORM: tilt = (alpha, beta, unused) platform angles (rad);
    with ``use_acceleration`` the horizontal acceleration acc = (a_y, a_z) of the
    support in world axes is folded in by the equivalence principle.
    source TILT_IMU: tilt = specific force measured in R0 axes (any scale).
    R is scratch (3 x 3). Returns TILT_OK or TILT_INVALID."""
    if source == TILT_IMU:
        return tilt_from_up(tilt[0], tilt[1], tilt[2], out)
    alpha, beta = tilt[0], tilt[1]
    if not (math.isfinite(alpha) and math.isfinite(beta)):
        return TILT_INVALID
    if not use_acceleration:
        if abs(alpha) > MAX_TILT or abs(beta) > MAX_TILT:
            return TILT_INVALID
        out[0] = alpha
        out[1] = beta
        return TILT_OK
    ay, az = acc[0], acc[1]
    if not (math.isfinite(ay) and math.isfinite(az)):
        return TILT_INVALID
    rotation_world_foot(alpha, beta, R)
    # u = R^T (g0, ay, az): the apparent up in R0 axes
    ux = R[0, 0] * g0 + R[1, 0] * ay + R[2, 0] * az
    uy = R[0, 1] * g0 + R[1, 1] * ay + R[2, 1] * az
    uz = R[0, 2] * g0 + R[1, 2] * ay + R[2, 2] * az
    return tilt_from_up(ux, uy, uz, out)


@njit(cache=True)
def sole_apparent_tilt(source, use_acceleration, g0, tilt, acc, R, out):
    """:func:`apparent_tilt` for a robot standing on its soles (z up; a tree robot, docs/multi_cog.md):
    (alpha, beta) of R = RotX(alpha) RotY(beta), the tilt models.tilt.sole_gravity turns into the soles'
    gravity, into out[0:2]. tilt = the platform's (alpha, beta); with ``use_acceleration`` the support's
    horizontal acceleration acc = (a_x, a_y) in world axes (x forward, y left) is folded in by the
    equivalence principle (Gastebois 2017, §2.5.4): the apparent up u = R_p^T (a_x, a_y, g0) / |.| in the
    platform's axes (R_p its RotX RotY, into R), so alpha = asin(u_y), beta = atan2(-u_x, u_z), as
    stabilizer.whole_body.apparent_up. A sole has no IMU tilt here (``source`` TILT_IMU): TILT_INVALID."""
    if source == TILT_IMU:
        return TILT_INVALID
    alpha, beta = tilt[0], tilt[1]
    if not (math.isfinite(alpha) and math.isfinite(beta)) or abs(alpha) > MAX_TILT or abs(beta) > MAX_TILT:
        return TILT_INVALID
    if not use_acceleration:
        out[0] = alpha
        out[1] = beta
        return TILT_OK
    ax, ay = acc[0], acc[1]
    if not (math.isfinite(ax) and math.isfinite(ay)):
        return TILT_INVALID
    ca, sa, cb, sb = math.cos(alpha), math.sin(alpha), math.cos(beta), math.sin(beta)
    R[0, 0], R[0, 1], R[0, 2] = cb, 0.0, sb                  # rows of RotX(alpha) RotY(beta)
    R[1, 0], R[1, 1], R[1, 2] = sa * sb, ca, -sa * cb
    R[2, 0], R[2, 1], R[2, 2] = -ca * sb, sa, ca * cb
    ux = R[0, 0] * ax + R[1, 0] * ay + R[2, 0] * g0
    uy = R[0, 1] * ax + R[1, 1] * ay + R[2, 1] * g0
    uz = R[0, 2] * ax + R[1, 2] * ay + R[2, 2] * g0
    n = math.sqrt(ux * ux + uy * uy + uz * uz)
    if not n > 1e-6:
        return TILT_INVALID
    a2, b2 = math.asin(max(-1.0, min(1.0, uy / n))), math.atan2(-ux, uz)
    if abs(a2) > MAX_TILT or abs(b2) > MAX_TILT:
        return TILT_INVALID
    out[0] = a2
    out[1] = b2
    return TILT_OK
