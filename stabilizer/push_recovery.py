"""Answering a push on two feet: the CoG's velocity as a state through the instantaneous capture
point, and the ankle, hip and step strategies it selects (docs/stabilizer.md, "Pushes").

The capture point of the linear inverted pendulum (Pratt et al. 2006; Hof et al. 2005, the
"extrapolated centre of mass"; the ankle / hip / step sequence: Horak & Nashner 1986, Stephens 2007) is, in the horizontal axes (e1, e2) of the apparent gravity,

    xi = c + c_dot / omega,    omega = sqrt(g0 / z_c),

c the whole robot's CoG, z_c its height above the stance sole along apparent up and c_dot its
velocity. From the joints alone, c_dot = J_com(q) q_dot takes the stance sole as fixed: a push that
tips the soles about their toes while the joints hold is not seen. With the pelvis estimate
(:mod:`stabilizer.pelvis_state`: the IMU's acceleration fused with the stance leg's kinematics, its
velocity v_p in the world) the CoG is the pelvis plus the body about it,

    c_dot = R_root_w v_p + (J_com(q) - J_p(q)) q_dot,    R_root_w = R_root_pelvis(q) R_wp'      (P2)

J_p the pelvis origin's Jacobian, R_wp the estimate's pelvis orientation: exact when the sole
translates, short of w_sole x (c - p) when it rotates (no gyro: the sole's rotation is seen at the
pelvis only, c - p being the CoG's offset from the pelvis, ~0.1 m). The strategies answer a CoG in motion, |xi - c| = |c_dot| / omega > deadband
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
#: the pelvis estimate the capture point takes (stabilizer.pelvis_state): on (0: none, the joints'
#: velocities alone), the pelvis origin's velocity (world, m/s), R_wp (pelvis -> world, row-major)
PELVIS = Layout("capture point pelvis input", [Field("on"), Field("velocity", (3,)), Field("R", (3, 3))])
V_ON, V_VEL, V_R = PELVIS.offset("on"), PELVIS.offset("velocity"), PELVIS.offset("R")


@njit(cache=True)
def capture_point(Rws, com, Jcom, Jp, Rp, pelvis, qd, g0, xi):
    """The instantaneous capture point (module docstring) into xi[0:2] (e1, e2; the rows 1, 2 of
    Rws, whose row 0 is apparent up, in the root's axes), from the CoG ``com`` (3, root frame),
    its Jacobian ``Jcom`` (3 x n), the pelvis origin's Jacobian ``Jp`` (3 x n, linear rows) and
    rotation ``Rp`` (3 x 3) in the root frame, the joint velocities ``qd`` and the pelvis estimate
    ``pelvis`` (:data:`PELVIS`: on, the pelvis' world velocity, its world rotation row-major).
    With the estimate, c_dot = Rp R_wp' v_p + (Jcom - Jp) qd (module docstring, eq. P2), else
    Jcom qd. Returns omega (1/s), 0.0 when the CoG is not above the sole (xi is then the CoG)."""
    n = qd.shape[0]
    z = Rws[0, 0] * com[0] + Rws[0, 1] * com[1] + Rws[0, 2] * com[2]
    omega = math.sqrt(g0 / z) if z > 0.0 else 0.0
    est = pelvis[V_ON] != 0.0
    v0 = v1 = v2 = 0.0
    if est:                                  # the pelvis' world velocity in the root's axes: Rp R_wp' v_p
        for i in range(3):
            b = 0.0
            for k in range(3):
                b += pelvis[V_R + 3 * k + i] * pelvis[V_VEL + k]
            v0 += Rp[0, i] * b
            v1 += Rp[1, i] * b
            v2 += Rp[2, i] * b
    for a in range(2):
        R = Rws[1 + a]
        c = R[0] * com[0] + R[1] * com[1] + R[2] * com[2]
        cd = R[0] * v0 + R[1] * v1 + R[2] * v2
        for j in range(n):
            jc0, jc1, jc2 = Jcom[0, j], Jcom[1, j], Jcom[2, j]
            if est:
                jc0, jc1, jc2 = jc0 - Jp[0, j], jc1 - Jp[1, j], jc2 - Jp[2, j]
            cd += (R[0] * jc0 + R[1] * jc1 + R[2] * jc2) * qd[j]
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
