"""The pelvis' state in the world: the floating base's six coordinates, estimated.

The stance foot, while its load cells say it carries the robot, is assumed flat and still: its
sole frame is an anchor whose world pose the estimator holds (position, heading), and the
kinematics of the stance leg give the pelvis relative to it (the recursive engine's poses and
motion axes, in whatever rooting the models use):

    T_w_pelvis = T_w_sole . T_sole_pelvis(q),    v_pelvis = R_w_sole (v_rel)            (1)

with v_rel the pelvis origin's velocity relative to the sole frame, v_p - v_s - w_s x (p_p - p_s).
The anchor's tilt is the ground's slope: a complementary filter takes the world's up direction in
the sole's axes from the pelvis IMU's specific force seen through the leg, less the pelvis'
acceleration the kinematics give (the rate of v_rel: the sole does not move),

    g0 u = R_sole_pelvis f - d/dt (v_rel)                                                (2)

(Gastebois 2017 eq. 46: f = R' (a + g0 z)), low-passed with time constant ``tilt_tau`` while |f|
is within ``accept`` of g0; the sole's heading is kept from the touch-down (gravity does not show
it).
The velocity fuses the IMU's acceleration (R_w_pelvis f - g0 z, fast) with the kinematic
velocity (1) (slow), time constant ``vel_tau``. At a support change the new stance sole is
anchored where the current estimate puts it (no jump); with no foot loaded the state is carried
by the IMU alone (v += a dt, p += v dt, orientation held). Without an IMU the first anchor is
level and (1) is the whole estimate.

With a rate gyro in the pelvis IMU (w, pelvis axes, rad/s) the orientation is the gyro's, carried
every cycle (from the first anchor on, with no foot loaded too),

    R <- R exp([w] dt)                                                                    (3)

and pulled slowly (time constant ``gyro_tau``) towards the accelerometer's gravity and the anchor's
heading, a complementary filter (Mahony et al. 2008):

    z_m = (f - R' a_k) / |f - R' a_k|,   R <- R exp(k theta n),   R <- Rz(k dpsi) R              (4)

theta the angle between R' z and z_m, n the unit axis along z_m x R' z; k = dt / (T + dt), T the time
the filter has run, at least GYRO_RISE_S and at most ``gyro_tau`` (nearly the mean of its samples, then
a low-pass: the HIL's first samples of f carry the settling robot's rocking, 0.5 m/s² = 2.9 deg; a
shorter T forgets them sooner but follows the accelerations of a push: a quarter of the run gave 0.93
deg at 0.5 s of a 75 N s push, against 0.30), a_k the pelvis' world acceleration (the rate of v_k
below), dpsi the anchor's heading less the stance sole's. The stance sole's world orientation is then
measured, not assumed flat: R_w_sole = R rel_R', turning at w_s = R w - R_w_sole w_rel (w_rel the
pelvis' angular velocity relative to the sole, through the leg), and eq. 1 becomes, the sole turning
about its origin (one tipping about its toe or edge moves the pelvis alike: the edge lies in the sole's
plane, the pelvis ~0.8 m above it),

    p = p_anchor + R_w_sole rel_p,     v_k = R_w_sole v_rel + w_s x (R_w_sole rel_p)          (5)

v_k taking the place of eq. 1's velocity in the fusion; the slope (eq. 2) is estimated as without it.

Orientation: rpy are the floating base's coordinates (models.tree.floating: R = Rx Ry Rz).
State and outputs in one buffer declared by :data:`STATE`; allocation-free, ``@njit(cache=True)``.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from models.common.layout import Field, Layout
from models.common.support import DOUBLE, LEFT, RIGHT, SOLES
from models.tree.floating import euler_xyz
from models.tree.model import data_layout, model_layout

# position, velocity (world, m, m/s), rpy (the floating base's angles), stance (the anchoring foot,
# models.common.support LEFT / RIGHT, -1: none), R (pelvis -> world), ground (the stance sole's roll
# and pitch, R_w_sole = Rz Ry Rx: the slope under it), anchor_R / anchor_p (the stance sole's world
# pose), up (the world's up in the sole's axes, filtered), heading (the sole's yaw), started (0
# before the first anchor), rel_R / rel_p / v_rel (the pelvis' rotation, origin and velocity in
# the sole's frame; v_prev: the last cycle's), sole_R / sole_p (the sole's pose in the rooting's base), three scratch
# 3-vectors, and with a gyro (eq. 3-5): w_rel (the pelvis' angular velocity relative to the stance sole, sole
# axes), rate (the pelvis' angular velocity, world), sole_world / sole_rate (the stance sole's world rotation
# and angular velocity: its tip), vk / vk_prev (the kinematic velocity, world: this cycle's, the last's), E scratch,
# gyro (1: R and rate are the gyro's), samples (the gravity samples eq. 4 has taken)
STATE = Layout("pelvis state", [
    Field("position", (3,)), Field("velocity", (3,)), Field("rpy", (3,)), Field("stance", (1,)),
    Field("R", (3, 3)), Field("ground", (2,)), Field("anchor_R", (3, 3)), Field("anchor_p", (3,)),
    Field("up", (3,)), Field("heading", (1,)), Field("started", (1,)), Field("rel_R", (3, 3)),
    Field("rel_p", (3,)), Field("v_rel", (3,)), Field("v_prev", (3,)), Field("sole_R", (3, 3)),
    Field("sole_p", (3,)), Field("x3", (3, 3)), Field("w_rel", (3,)), Field("rate", (3,)),
    Field("sole_world", (3, 3)), Field("sole_rate", (3,)), Field("vk", (3,)), Field("vk_prev", (3,)),
    Field("E", (3, 3)), Field("gyro", (1,)), Field("samples", (1,))])
OUTPUTS = ("position", "velocity", "rpy", "stance")    # the telemetry's (controller.daemon.telemetry)
TILT_TAU_S = 0.5      # s, the IMU's gravity low-pass (the ground's slope settles in a few of them)
VEL_TAU_S = 0.05      # s, the kinematic velocity's weight against the integrated IMU acceleration
ACCEPT = 1.0          # m/s², | |f| - g0 | beyond which the specific force is not taken as gravity
GYRO_TAU_S = 4.0      # s, the gyro-propagated orientation's pull towards gravity and the anchor's heading (eq. 4)
GYRO_RISE_S = 0.1     # s, its time constant at the first samples (then the time it has run, up to GYRO_TAU_S)
_views = STATE.kernel_views


def new_state() -> np.ndarray:
    """A fresh estimator state (:data:`STATE`), not yet anchored: its outputs NaN."""
    buf = np.zeros(STATE.size())
    v = STATE.views(buf)
    for name in OUTPUTS:
        getattr(v, name)[:] = np.nan
    v.stance[0] = -1.0
    return buf


def views(buf: np.ndarray):
    """Named numpy views of a state buffer (tools, tests)."""
    return STATE.views(buf)


@njit(cache=True, inline="always")
def _point_twist(r, b, p, S, bjoint, pred, qd, v, w):
    """Velocity v of the point p carried by body b and its angular velocity w (rooting base
    axes): the sum over the joints that move b of (S_v + S_w x p, S_w) qd_j."""
    for i in range(3):
        v[i] = 0.0
        w[i] = 0.0
    j = int(bjoint[r, b])
    while j >= 0:
        x = qd[j]
        w0, w1, w2 = S[j, 3], S[j, 4], S[j, 5]
        v[0] += (S[j, 0] + w1 * p[2] - w2 * p[1]) * x
        v[1] += (S[j, 1] + w2 * p[0] - w0 * p[2]) * x
        v[2] += (S[j, 2] + w0 * p[1] - w1 * p[0]) * x
        w[0] += w0 * x
        w[1] += w1 * x
        w[2] += w2 * x
        j = int(bjoint[r, int(pred[r, j])])


@njit(cache=True, inline="always")
def _anchor_from_up(up, heading, R, ground):
    """R_w_sole = Rz(heading) Ry(pitch) Rx(roll) with R_w_sole' z = up; (roll, pitch) into ground."""
    roll = math.atan2(up[1], up[2])
    pitch = math.atan2(-up[0], math.sqrt(up[1] * up[1] + up[2] * up[2]))
    cr, sr, cp, sp = math.cos(roll), math.sin(roll), math.cos(pitch), math.sin(pitch)
    ch, sh = math.cos(heading), math.sin(heading)
    R[0, 0], R[0, 1], R[0, 2] = ch * cp, ch * sp * sr - sh * cr, ch * sp * cr + sh * sr
    R[1, 0], R[1, 1], R[1, 2] = sh * cp, sh * sp * sr + ch * cr, sh * sp * cr - ch * sr
    R[2, 0], R[2, 1], R[2, 2] = -sp, cp * sr, cp * cr
    ground[0], ground[1] = roll, pitch


@njit(cache=True, forceinline=True)
def _relative(r, fr, pb, qd, Tb, S, fbody, fpose, bjoint, pred, sR, sp, rel_R, rel_p, v_rel, w_rel, x3):
    """The pelvis (body pb) in sole frame fr's frame: rotation rel_R, origin rel_p, the velocity
    of its origin relative to the sole v_rel = R_s' (v_p - v_s - w_s x (p_p - p_s)) and its
    angular velocity relative to the sole w_rel = R_s' (w_p - w_s)."""
    fb = int(fbody[fr])
    for i in range(3):
        for k in range(3):
            sR[i, k] = Tb[fb, i, 0] * fpose[fr, 0, k] + Tb[fb, i, 1] * fpose[fr, 1, k] + Tb[fb, i, 2] * fpose[fr, 2, k]
        sp[i] = (Tb[fb, i, 0] * fpose[fr, 0, 3] + Tb[fb, i, 1] * fpose[fr, 1, 3] + Tb[fb, i, 2] * fpose[fr, 2, 3]
                 + Tb[fb, i, 3])
    vp, vs, ws = x3[0], x3[1], x3[2]
    _point_twist(r, pb, Tb[pb, :3, 3], S, bjoint, pred, qd, vp, w_rel)
    _point_twist(r, fb, sp, S, bjoint, pred, qd, vs, ws)
    w0, w1, w2 = w_rel[0] - ws[0], w_rel[1] - ws[1], w_rel[2] - ws[2]
    d0, d1, d2 = Tb[pb, 0, 3] - sp[0], Tb[pb, 1, 3] - sp[1], Tb[pb, 2, 3] - sp[2]
    e0 = vp[0] - vs[0] - (ws[1] * d2 - ws[2] * d1)
    e1 = vp[1] - vs[1] - (ws[2] * d0 - ws[0] * d2)
    e2 = vp[2] - vs[2] - (ws[0] * d1 - ws[1] * d0)
    for i in range(3):
        rel_p[i] = sR[0, i] * d0 + sR[1, i] * d1 + sR[2, i] * d2
        v_rel[i] = sR[0, i] * e0 + sR[1, i] * e1 + sR[2, i] * e2
        w_rel[i] = sR[0, i] * w0 + sR[1, i] * w1 + sR[2, i] * w2
        for k in range(3):
            rel_R[i, k] = sR[0, i] * Tb[pb, 0, k] + sR[1, i] * Tb[pb, 1, k] + sR[2, i] * Tb[pb, 2, k]


@njit(cache=True, inline="always")
def _compose(aR, ap, rel_R, rel_p, R, pos):
    """R = aR rel_R, pos = ap + aR rel_p (the pelvis in the world, eq. 1)."""
    for i in range(3):
        pos[i] = ap[i] + aR[i, 0] * rel_p[0] + aR[i, 1] * rel_p[1] + aR[i, 2] * rel_p[2]
        for k in range(3):
            R[i, k] = aR[i, 0] * rel_R[0, k] + aR[i, 1] * rel_R[1, k] + aR[i, 2] * rel_R[2, k]


@njit(cache=True, inline="always")
def _exp(d, E):
    """E = exp([d]) (Rodrigues: the rotation by |d| about d)."""
    t2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
    t = math.sqrt(t2)
    a = math.sin(t) / t if t > 1e-12 else 1.0
    b = (1.0 - math.cos(t)) / t2 if t > 1e-12 else 0.5
    E[0, 0] = 1.0 - b * (d[1] * d[1] + d[2] * d[2])
    E[0, 1] = -a * d[2] + b * d[0] * d[1]
    E[0, 2] = a * d[1] + b * d[0] * d[2]
    E[1, 0] = a * d[2] + b * d[0] * d[1]
    E[1, 1] = 1.0 - b * (d[0] * d[0] + d[2] * d[2])
    E[1, 2] = -a * d[0] + b * d[1] * d[2]
    E[2, 0] = -a * d[1] + b * d[0] * d[2]
    E[2, 1] = a * d[0] + b * d[1] * d[2]
    E[2, 2] = 1.0 - b * (d[0] * d[0] + d[1] * d[1])


@njit(cache=True)
def turn(R, d, world, E):
    """R <- R exp([d]) (d in R's own axes: a gyro's rate times dt, eq. 3), or exp([d]) R with ``world``
    (d in the world's axes); E is scratch (3 x 3)."""
    _exp(d, E)
    for i in range(3):
        if world:                                      # column i: E R[:, i]
            a, b, c = R[0, i], R[1, i], R[2, i]
            for k in range(3):
                R[k, i] = E[k, 0] * a + E[k, 1] * b + E[k, 2] * c
        else:                                          # row i: R[i, :] E
            a, b, c = R[i, 0], R[i, 1], R[i, 2]
            for k in range(3):
                R[i, k] = a * E[0, k] + b * E[1, k] + c * E[2, k]


@njit(cache=True, inline="always")
def _sole_world(R, rel_R, w, w_rel, Rs, ws):
    """The stance sole's world rotation Rs = R rel_R' and angular velocity ws = R w - Rs w_rel (eq. 5)."""
    for i in range(3):
        for k in range(3):
            Rs[i, k] = R[i, 0] * rel_R[k, 0] + R[i, 1] * rel_R[k, 1] + R[i, 2] * rel_R[k, 2]
    for i in range(3):
        ws[i] = (R[i, 0] * w[0] + R[i, 1] * w[1] + R[i, 2] * w[2]
                 - (Rs[i, 0] * w_rel[0] + Rs[i, 1] * w_rel[1] + Rs[i, 2] * w_rel[2]))


@njit(cache=True, inline="always")
def _kinematic_velocity(Rs, ws, v_rel, rel_p, vk):
    """The pelvis origin's world velocity through the stance leg, the sole turning about its origin at
    ws: vk = Rs v_rel + ws x (Rs rel_p) (eq. 5)."""
    d0 = Rs[0, 0] * rel_p[0] + Rs[0, 1] * rel_p[1] + Rs[0, 2] * rel_p[2]
    d1 = Rs[1, 0] * rel_p[0] + Rs[1, 1] * rel_p[1] + Rs[1, 2] * rel_p[2]
    d2 = Rs[2, 0] * rel_p[0] + Rs[2, 1] * rel_p[1] + Rs[2, 2] * rel_p[2]
    vk[0] = Rs[0, 0] * v_rel[0] + Rs[0, 1] * v_rel[1] + Rs[0, 2] * v_rel[2] + ws[1] * d2 - ws[2] * d1
    vk[1] = Rs[1, 0] * v_rel[0] + Rs[1, 1] * v_rel[1] + Rs[1, 2] * v_rel[2] + ws[2] * d0 - ws[0] * d2
    vk[2] = Rs[2, 0] * v_rel[0] + Rs[2, 1] * v_rel[1] + Rs[2, 2] * v_rel[2] + ws[0] * d1 - ws[1] * d0


@njit(cache=True, inline="always")
def _towards_gravity(R, f, a, g0, heading, Rs, k, d, E):
    """Eq. 4: R turned by k of its error against the accelerometer's up z_m = (f - R' a) / g0 (pelvis
    axes, a the pelvis' world acceleration), by k of the angle between them about z_m x R' z, and about
    the world's z by k of the
    stance sole's heading error (the anchor's ``heading`` less Rs' yaw); d, E scratch."""
    m0, m1, m2 = (f[0] - (R[0, 0] * a[0] + R[1, 0] * a[1] + R[2, 0] * a[2])), \
        (f[1] - (R[0, 1] * a[0] + R[1, 1] * a[1] + R[2, 1] * a[2])), \
        (f[2] - (R[0, 2] * a[0] + R[1, 2] * a[1] + R[2, 2] * a[2]))
    n = math.sqrt(m0 * m0 + m1 * m1 + m2 * m2)
    if n > 0.5 * g0:
        m0, m1, m2 = m0 / n, m1 / n, m2 / n
        u0, u1, u2 = R[2, 0], R[2, 1], R[2, 2]                  # R' z: the estimate's up, pelvis axes
        d[0], d[1], d[2] = m1 * u2 - m2 * u1, m2 * u0 - m0 * u2, m0 * u1 - m1 * u0
        sn = math.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
        x = k * math.atan2(sn, m0 * u0 + m1 * u1 + m2 * u2) / sn if sn > 1e-12 else k
        for i in range(3):                                       # k of the angle between them
            d[i] *= x
        turn(R, d, False, E)
    e = heading - math.atan2(Rs[1, 0], Rs[0, 0])
    d[0], d[1], d[2] = 0.0, 0.0, k * math.atan2(math.sin(e), math.cos(e))
    turn(R, d, True, E)


@njit(cache=True)
def estimate(mbuf, dbuf, qd, f, w, use_imu, use_gyro, contact, sole_frames, pelvis, period, g0, tilt_tau, vel_tau,
             gyro_tau, accept, buf):
    """One cycle of the estimator (module docstring) over the models' last update (poses and
    motion axes of any rooting) at joint rates qd, the pelvis IMU's specific force f and gyro rate w
    (pelvis axes; ignored unless ``use_imu``, ``use_gyro``), the support phase ``contact`` the feet's
    loads show (LEFT, RIGHT, DOUBLE, -1 none), the sole frames' indices (left, right) and the pelvis
    body."""
    m, _ = model_layout(mbuf)
    d, _ = data_layout(mbuf, dbuf)
    st, _ = _views(buf)
    r = int(d.root[0])
    R, rel_R, rel_p, v_rel, aR, ap = st.R, st.rel_R, st.rel_p, st.v_rel, st.anchor_R, st.anchor_p
    up, pos, vel, x3, w_rel, Rs, ws = st.up, st.position, st.velocity, st.x3, st.w_rel, st.sole_world, st.sole_rate
    old = int(st.stance[0])
    s = contact if contact == LEFT or contact == RIGHT else ((old if old >= 0 else LEFT) if contact == DOUBLE else -1)
    fn = math.sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]) if use_imu else 0.0
    gravity_like = use_imu and abs(fn - g0) < accept
    started = st.started[0] > 0.0
    carried = use_gyro and started                            # R carried by the gyro (eq. 3)
    st.gyro[0] = 1.0 if carried else 0.0
    if carried:
        for i in range(3):
            st.rate[i] = w[i] * period
        turn(R, st.rate, False, x3)
        for i in range(3):
            st.rate[i] = R[i, 0] * w[0] + R[i, 1] * w[1] + R[i, 2] * w[2]
    if s < 0:                                                  # no foot loaded: the IMU carries the state
        if not started:
            return
        if use_imu:
            for i in range(3):
                pos[i] += vel[i] * period
                vel[i] += period * (R[i, 0] * f[0] + R[i, 1] * f[1] + R[i, 2] * f[2] - (g0 if i == 2 else 0.0))
        st.stance[0] = -1.0
        euler_xyz(R, st.rpy)
        return
    Tb, S, fbody, fpose, bjoint, pred, sR, sp = d.Tb, d.S, m.fbody, m.fpose, m.bjoint, m.pred, st.sole_R, st.sole_p
    pb = int(pelvis)
    if started and old >= 0 and s != old:                     # through the old stance sole, this cycle
        _relative(r, int(sole_frames[old]), pb, qd, Tb, S, fbody, fpose, bjoint, pred, sR, sp, rel_R, rel_p,
                  v_rel, w_rel, x3)
        if carried:
            _sole_world(R, rel_R, w, w_rel, Rs, ws)
            _compose(Rs, ap, rel_R, rel_p, x3, pos)
        else:
            _compose(aR, ap, rel_R, rel_p, R, pos)
    _relative(r, int(sole_frames[s]), pb, qd, Tb, S, fbody, fpose, bjoint, pred, sR, sp, rel_R, rel_p, v_rel, w_rel,
              x3)
    if not started or s != old:
        if started:                                            # re-anchored where the estimate puts it
            for i in range(3):                                 # R_w_sole = R_w_pelvis rel_R'
                for k in range(3):
                    aR[i, k] = R[i, 0] * rel_R[k, 0] + R[i, 1] * rel_R[k, 1] + R[i, 2] * rel_R[k, 2]
            for i in range(3):
                ap[i] = pos[i] - (aR[i, 0] * rel_p[0] + aR[i, 1] * rel_p[1] + aR[i, 2] * rel_p[2])
                up[i] = aR[2, i]
            st.heading[0] = math.atan2(aR[1, 0], aR[0, 0])
        else:                                                  # the first anchor: the world's origin, heading 0
            for i in range(3):
                ap[i] = 0.0
                up[i] = (rel_R[i, 0] * f[0] + rel_R[i, 1] * f[1] + rel_R[i, 2] * f[2]) / fn if gravity_like else 0.0
            if not gravity_like:                               # no IMU: a level sole
                up[2] = 1.0
            st.heading[0] = 0.0
            st.started[0] = 1.0
        st.stance[0] = float(s)
    elif gravity_like:                                         # the slope: the IMU's gravity, low-passed
        k = period / (tilt_tau + period)
        n2 = 0.0
        for i in range(3):                                     # R_sole_pelvis f - a (sole axes) = g0 up
            a = (v_rel[i] - st.v_prev[i]) / period
            up[i] += k * ((rel_R[i, 0] * f[0] + rel_R[i, 1] * f[1] + rel_R[i, 2] * f[2] - a) / g0 - up[i])
            n2 += up[i] * up[i]
        n2 = math.sqrt(n2)
        for i in range(3):
            up[i] /= n2
    _anchor_from_up(up, st.heading[0], aR, st.ground)
    vk = st.vk
    if carried:                                                # eq. 4-5: the sole's tip seen through the leg
        _sole_world(R, rel_R, w, w_rel, Rs, ws)
        _kinematic_velocity(Rs, ws, v_rel, rel_p, vk)
        if gravity_like and s == old:
            for i in range(3):                                 # the pelvis' world acceleration
                x3[0, i] = (vk[i] - st.vk_prev[i]) / period
            st.samples[0] += 1.0                                # eq. 4's time constant: the time it has run
            k = period / (min(max(st.samples[0] * period, GYRO_RISE_S), gyro_tau) + period)
            _towards_gravity(R, f, x3[0], g0, st.heading[0], Rs, k, x3[1], st.E)
            _sole_world(R, rel_R, w, w_rel, Rs, ws)
            _kinematic_velocity(Rs, ws, v_rel, rel_p, vk)
        _compose(Rs, ap, rel_R, rel_p, x3, pos)
    else:
        _compose(aR, ap, rel_R, rel_p, R, pos)
        for i in range(3):
            vk[i] = aR[i, 0] * v_rel[0] + aR[i, 1] * v_rel[1] + aR[i, 2] * v_rel[2]
    kv = period / (vel_tau + period) if use_imu and started and s == old else 1.0
    for i in range(3):
        a = (R[i, 0] * f[0] + R[i, 1] * f[1] + R[i, 2] * f[2] - (g0 if i == 2 else 0.0)) if use_imu else 0.0
        vp = vel[i] + period * a
        vel[i] = vp + kv * (vk[i] - vp) if kv < 1.0 else vk[i]
        st.v_prev[i] = v_rel[i]
        st.vk_prev[i] = vk[i]
    euler_xyz(R, st.rpy)
