"""Answering a push on two feet: the CoG's velocity as a state through the instantaneous capture
point, and the ankle, hip and step strategies it selects (docs/stabilizer.md, "Pushes").

The capture point of the linear inverted pendulum (Pratt et al. 2006; Hof et al. 2005, the
"extrapolated centre of mass"; the ankle / hip / step sequence: Horak & Nashner 1986, Stephens 2007) is, in the horizontal axes (e1, e2) of the apparent gravity,

    xi = c + c_dot / omega,    omega = sqrt(g0 / z_c),

c the whole robot's CoG, z_c its height above the stance sole along apparent up and c_dot its
velocity J_com(q) q_dot from the measured joint velocities (the stance sole taken as fixed: a sole
that tips is not seen). The strategies answer a CoG in motion, |xi - c| = |c_dot| / omega > deadband
(a CoG at rest is the fields' business, wherever it is); the stance sole must then bring xi back
over the support polygon:

* ankle strategy: the CoG is driven against the error,
  v_c = -k_ankle (xi - centroid), |v_c| <= v_ankle; in position control this moves the CoP
  within the feet (the ankles' torques follow the reference);
* hip strategy (xi within hip_margin of the polygon's edge: the CoP saturates at the edge): the
  trunk's CoG is spun over the pelvis in the direction of the error, v_t = k_hip (xi - centroid),
  |v_t| <= v_hip, while the CoG task keeps pulling back: the trunk's angular momentum gives the
  ground reaction a horizontal component against the fall (the CMP leaves the CoP);
* step (xi beyond step_margin outside the polygon): no posture can capture the robot; it is
  reported (flag) for a recovery step.

Nothing is allocated; the kernels work on the whole-robot stabilizer's buffers
(:mod:`stabilizer.whole_body` packs :data:`PUSH` into its params).
"""
from __future__ import annotations

import math

from numba import njit

from models.common.layout import Field, Layout

from stabilizer.walls import signed_distances

NONE, ANKLE, HIP, STEP = range(4)
STRATEGY_NAMES = ("none", "ankle", "hip", "step")
PUSH = Layout("push recovery params", [Field(k) for k in (
    "on", "k_ankle", "v_ankle", "deadband", "hip_margin", "k_hip", "v_hip", "step_margin")])
U_ON = PUSH.offset("on")
U_K_ANKLE = PUSH.offset("k_ankle")
U_V_ANKLE = PUSH.offset("v_ankle")
U_DEADBAND = PUSH.offset("deadband")
U_HIP_MARGIN = PUSH.offset("hip_margin")
U_K_HIP = PUSH.offset("k_hip")
U_V_HIP = PUSH.offset("v_hip")
U_STEP_MARGIN = PUSH.offset("step_margin")


@njit(cache=True)
def capture_point(Rws, com, Jcom, qd, g0, xi):
    """The instantaneous capture point (module docstring) into xi[0:2] (e1, e2; the rows 1, 2 of
    Rws, whose row 0 is apparent up, in the root's axes), from the CoG ``com`` (3, root frame),
    its Jacobian ``Jcom`` (3 x n) and the joint velocities ``qd``. Returns omega (1/s), 0.0 when
    the CoG is not above the sole (xi is then the CoG)."""
    n = qd.shape[0]
    z = Rws[0, 0] * com[0] + Rws[0, 1] * com[1] + Rws[0, 2] * com[2]
    omega = math.sqrt(g0 / z) if z > 0.0 else 0.0
    for a in range(2):
        R = Rws[1 + a]
        c = R[0] * com[0] + R[1] * com[1] + R[2] * com[2]
        cd = 0.0
        for j in range(n):
            cd += (R[0] * Jcom[0, j] + R[1] * Jcom[1, j] + R[2] * Jcom[2, j]) * qd[j]
        xi[a] = c + cd / omega if omega > 0.0 else c
    return omega


@njit(cache=True)
def _clipped(k, ex, ey, vmax, v):
    """v = k (ex, ey) with |v| <= vmax."""
    v[0], v[1] = k * ex, k * ey
    s = math.sqrt(v[0] * v[0] + v[1] * v[1])
    if s > vmax:
        v[0] *= vmax / s
        v[1] *= vmax / s


@njit(cache=True)
def push_response(u, xi, c, cy, cz, walls, nw, d, v_cog, v_trunk):
    """The strategy for the capture point ``xi`` (e1, e2) of the CoG ``c`` (e1, e2: only
    ``xi - c`` is read) over the polygon of walls ``walls``
    (``nw`` of them; ``d`` scratch) whose centroid is (cy, cz), ``u`` the :data:`PUSH` block:
    the added CoG velocity into v_cog[0:2] and trunk velocity over the pelvis into v_trunk[0:2]
    (zeros when the strategy is off or NONE). Returns (strategy, xi's margin in the polygon, m)."""
    margin = signed_distances(walls, nw, xi[0], xi[1], d)
    v_cog[0] = v_cog[1] = v_trunk[0] = v_trunk[1] = 0.0
    if u[U_ON] == 0.0:
        return NONE, margin
    lx, ly = xi[0] - c[0], xi[1] - c[1]
    if math.sqrt(lx * lx + ly * ly) <= u[U_DEADBAND]:
        return NONE, margin
    ex, ey = xi[0] - cy, xi[1] - cz
    _clipped(-u[U_K_ANKLE], ex, ey, u[U_V_ANKLE], v_cog)
    if margin > u[U_HIP_MARGIN]:
        return ANKLE, margin
    _clipped(u[U_K_HIP], ex, ey, u[U_V_HIP], v_trunk)
    return (STEP if margin < -u[U_STEP_MARGIN] else HIP), margin
