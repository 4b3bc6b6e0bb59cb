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
pelvis only, c - p being the CoG's offset from the pelvis, ~0.1 m). With the estimate's gyro
(stabilizer.pelvis_state eq. 3-5: R_wp carried by it, w_p the pelvis' angular velocity in the world)
the root sole's rotation is measured too, w_r = Rp R_wp' w_p - J_w(q) q_dot in the root's axes (J_w
the pelvis frame's angular rows), and

    c_dot = Rp R_wp' v_p + w_r x (c - p) + (J_com(q) - J_p(q)) q_dot                             (P2')

with the CoG and its velocity turned by the least rotation taking the true up u = Rp R_wp' z onto
apparent up before they are projected on e1, e2 (z_c = u . c): a sole tipped about its toe carries the
CoG ahead by about z_c times the tip angle (to first order the tip turns about the sole's origin; the
polygon's edges, in the sole's plane, stay put): the tipping point ``tip_point`` the stabilizer puts
out beside xi (the strategies keep theirs). With ``tip_step`` it beyond step_margin outside the polygon
wants a step too (eq. P7), planned on it.

The strategies answer a push, not a slow drift (:func:`push_gate`): with l = xi - c = c_dot / omega and
its slow part l_s (a first-order low-pass of time constant tau = ``engage_time``),

    l_s_dot = (l - l_s) / tau,
    engage when |l - l_s| > deadband and |l| > deadband,   release when |l| <= deadband    (P4)

and never while a gait plays. A push changes the CoG's velocity within its 0.1 s, faster than tau: l - l_s
takes nearly all of it. A tilt of the ground, the fields' own motion (at most ``cog.admittance.max_speed``)
or the observer settling on a shifted centre of pressure build l up over seconds: l_s follows and
l - l_s = tau l_dot = tau c_ddot / omega stays small (the CoG's slow drift is the fields' business). Once
engaged the gate holds until the CoG's velocity is captured (|l| back within the deadband). Engaged, the
stance sole must bring xi back over the support polygon:

* ankle strategy: the CoG is driven against the error,
  v_c = -k_ankle (xi - centroid), |v_c| <= v_ankle; in position control this moves the CoP
  within the feet (the ankles' torques follow the reference);
* hip strategy (xi within hip_margin of the polygon's edge: the CoP saturates at the edge): the
  trunk's CoG is spun over the pelvis in the direction of the error, v_t = k_hip (xi - centroid),
  |v_t| <= v_hip, while the CoG task keeps pulling back: the trunk's angular momentum gives the
  ground reaction a horizontal component against the fall (the CMP leaves the CoP);
* step (xi beyond step_margin outside the polygon): no posture can capture the robot; with
  ``step_time`` > 0 a recovery step is taken (Stephens 2007; the capture step of Pratt et al. 2006):
  standing on two feet and not stepping already, the foot whose sole centre is nearest xi swings for
  ``step_time`` s while the other stands alone, its centre moved by xi - centroid (it lands at
  xi + the offset it had from the centroid, at most ``step_max`` m away), on the gait's swing profile
  (models.gait.plan: quintic along the ground, a ``step_height`` bell up); then both feet stand again,
  and no other step is planned for ``step_settle`` s.

A sideways push tips the robot onto one sole's outer edge and lifts the other before the capture point
leaves the polygon (the kinematic CoG, rooted at the loaded sole, does not see the roll). Standing on two
feet with a strategy engaged, a sole whose cells carry less than ``release_load`` while the other's carry
``min_load`` is a step the push has begun: with ``shift_time`` 0 it swings at once (the ankle and hip
velocities off during its swing: the single support's CoG task alone answers); with ``shift_time`` > 0 a
load shift comes first,

    v_c = k_ankle (o_u - c),  |v_c| <= shift_speed,  for at most shift_time,                           (P5)

o_u the unloaded sole's centre, until the loaded sole unloads in its turn and swings (a side step after an
unloading phase). Any step's landing keeps its centre ``step_width`` from the stance sole's along the line
n between the two centres at lift-off (no crossover: the legs would meet),

    (o_w + d - o_s) . n >= step_width   (d moved along n until it holds).                              (P6)

A step is taken only for a need that lasts: IDLE, ``need`` (s) counts the cycles on end a step is wanted
(the strategy STEP, or a strategy engaged and a sole unloaded, or with ``tip_step`` the gyro's tipping
point beyond step_margin outside the polygon, eq. P2'), reset to 0 whenever it is not,

    need <- need + dt while wanted,   step when need >= step_delay                                    (P7)

(:func:`step_due`): a small push unloads a sole for tens of ms and a single cycle's spike puts xi out;
neither steps. A step under way is not delayed.

With the pelvis gyro the sideways step is graded by how far the push tips the robot (docs/stabilizer.md, "The
sideways step graded by the gyro"): IDLE, a sole lifting under a push, the tipping point xi_t (eq. P2') d_t m
outside the support polygon (negative inside) gives the grade

    g = max over the lift of clip((d_t - roll_start) / roll_span, 0, 1),
    x = x_step + g (x_roll - x_step) for the delay, swing time, height and width,
    v_t = -g roll_trunk (o_w - o_s) / |o_w - o_s| during the swing                                     (P10)

(x_step the ``step_*`` key, x_roll the ``roll_*`` one; o_w, o_s the swing and stance soles' centres at
lift-off, v_t the trunk's CoG over the pelvis, into the fall): g 0 is the step above to the digit, g 1 the
early, slow, high and wide swing with the trunk thrown into the fall that a push rolling the robot past the
loaded sole's edge needs. The grade holds through the step and after it while the sole still lifts (it
landed in the air), 0 again once no sole lifts, and always 0 without a gyro (xi_t NaN) or with roll_span 0.

Forward, no sole lifts and the step above is not taken: with the pelvis gyro the trunk is spun into the fall
instead, the hip strategy of Horak & Nashner 1986 fired by the tipping point (the momentum a body spun about
the pelvis takes off the CoG: Pratt et al. 2006's capture point with a flywheel; docs/stabilizer.md, "The
trunk spun into the fall"). A push seen (the gate, eq. P4, engaged), two soles down, no gait, no step, the
tipping point xi_t d_t m outside the polygon past ``hip_start`` fires it once per excursion, along
d = (xi_t - G+) / |xi_t - G+| (G+ the polygon's centroid):

    g = max over the spin's way out of clip((d_t - hip_start) / hip_span, 0, 1),
    x_dot = g hip_speed quintic(s / hip_ramp) quintic((T - s) / hip_ramp),  T = hip_reach / hip_speed + hip_ramp,
    then x held for hip_hold, then x = x_T (1 - quintic(s' / hip_back)),   v_t += x_dot d            (P11)

x the trunk's CoG over the pelvis moved along d (its box and attractor carried with it), v_t the trunk task's
velocity: a speed reached and left with bounded jerk (the trunk_pitch drive follows it), g hip_reach at the
end of the way out, back to 0 after the hold. Never without a gyro (xi_t NaN) or with hip_span 0.

With the gyro and ``tip_shift`` > 0 the step ``tip_step`` wants (a forward push: the soles tipping on their
toes, none unloaded) is a forward step in two (docs/stabilizer.md, "The forward step fired by the tipping
point"): a load shift first (P5's law towards the stance sole's centre at ``tip_speed``; the anticipatory
postural adjustment, Massion 1992), the swing sole (the one nearest xi_t) lifting when unloaded or after ``tip_shift`` s; its landing
where the pendulum about the polygon's edge carries xi_t (b m outside, G the centroid) for ``tip_lead`` times the
swing's time T (Pratt et al. 2006: xi_dot = omega (xi - p)),

    x = xi_t + (exp(omega tip_lead T) - 1) b (xi_t - G) / |xi_t - G|,   P6 with exactly ``tip_width``   (P12)

flown in the gyro's world up (the curve turned from apparent up onto the true up about the stance sole's
tipping edge, :func:`tilt_pose`), landed on touchdown (:func:`touchdown`), the landed sole then rooting and the
rear sole laid flat and brought up beside the front one (:func:`tip_follow`). Alone it stops the forward fall
at 75 N·s and falls sideways; after the trunk spin (P11) has slowed the CoG it lands nearer and stands (both
on in the shipped YAML).

Seen without a gyro (``observer_rate`` > 0 and the feet's load cells): the CoG's horizontal motion
obeys the linear inverted pendulum on the measured centre of pressure p of the soles in contact
(Hof 2008: c_ddot = omega^2 (c - p), so xi_dot = omega (xi - p)); a Luenberger observer of (c, c_dot)
per horizontal axis predicts with it and corrects on the kinematic CoG c_k (eq. P2's position):

    c_hat_dot = v_hat + l1 (c_k - c_hat),    v_hat_dot = omega^2 (c_hat - p) + l2 (c_k - c_hat)    (P3)

l1 = 2 lambda, l2 = lambda^2 + omega^2 (the error's two poles at -lambda, ``observer_rate``), and
xi = c_hat + v_hat / omega. The pressure at the toes while the joints hold (the soles tipping) drives
v_hat forward through the model, which the joints' velocities alone do not show.

Nothing is allocated; the kernels work on the whole-robot stabilizer's buffers
(:mod:`stabilizer.whole_body` packs :data:`PUSH` into its params).
"""
from __future__ import annotations

import math

from numba import njit

from models.common.layout import Field, Layout
from models.gait.plan import bell, quintic

from stabilizer.walls import signed_distances

NONE, ANKLE, HIP, STEP = range(4)
STRATEGY_NAMES = ("none", "ankle", "hip", "step")
PUSH = Layout("push recovery params", [Field(k) for k in (
    "on", "k_ankle", "v_ankle", "deadband", "hip_margin", "k_hip", "v_hip", "step_margin", "observer_rate",
    "step_time", "step_height", "step_max", "step_settle", "engage_time", "shift_speed", "shift_time",
    "step_width", "step_delay", "tip_step", "roll_start", "roll_span", "roll_delay", "roll_time", "roll_height",
    "roll_width", "roll_trunk", "hip_start", "hip_span", "hip_speed", "hip_ramp", "hip_reach", "hip_hold",
    "hip_back", "tip_shift", "tip_speed", "tip_lead", "tip_width")])
U_ON = PUSH.offset("on")
U_K_ANKLE = PUSH.offset("k_ankle")
U_V_ANKLE = PUSH.offset("v_ankle")
U_DEADBAND = PUSH.offset("deadband")
U_HIP_MARGIN = PUSH.offset("hip_margin")
U_K_HIP = PUSH.offset("k_hip")
U_V_HIP = PUSH.offset("v_hip")
U_STEP_MARGIN = PUSH.offset("step_margin")
U_OBSERVER_RATE = PUSH.offset("observer_rate")
U_ENGAGE_TIME = PUSH.offset("engage_time")
U_STEP_TIME, U_STEP_HEIGHT, U_STEP_MAX, U_STEP_SETTLE = (PUSH.offset(k) for k in (
    "step_time", "step_height", "step_max", "step_settle"))
U_SHIFT_SPEED, U_SHIFT_TIME, U_STEP_WIDTH, U_STEP_DELAY, U_TIP_STEP = (PUSH.offset(k) for k in (
    "shift_speed", "shift_time", "step_width", "step_delay", "tip_step"))
U_ROLL_START, U_ROLL_SPAN, U_ROLL_TRUNK = PUSH.offset("roll_start"), PUSH.offset("roll_span"), PUSH.offset("roll_trunk")
U_ROLL_DELAY, U_ROLL_TIME, U_ROLL_HEIGHT, U_ROLL_WIDTH = (PUSH.offset(k) for k in (
    "roll_delay", "roll_time", "roll_height", "roll_width"))
U_HIP_START, U_HIP_SPAN, U_HIP_SPEED, U_HIP_RAMP, U_HIP_REACH, U_HIP_HOLD, U_HIP_BACK = (PUSH.offset(k) for k in (
    "hip_start", "hip_span", "hip_speed", "hip_ramp", "hip_reach", "hip_hold", "hip_back"))
#: the forward hip strategy's state (:func:`hip_spin`, eq. P11): phase (ARMED, SPINNING, SPENT), the time since
#: it fired (s), its grade (0..1), the trunk's CoG offset over the pelvis commanded so far and at its peak (m,
#: along dir), dir (e1, e2: the unit direction of the tipping point from the polygon's centroid when it fired)
ARMED, SPINNING, SPENT = range(3)
SPIN = Layout("hip spin state", [Field("phase"), Field("t"), Field("grade"), Field("x"), Field("peak"),
                                 Field("dir", (2,))])
H_PHASE, H_T, H_GRADE, H_X, H_PEAK, H_DIR = (SPIN.offset(k) for k in ("phase", "t", "grade", "x", "peak", "dir"))
U_TIP_SHIFT, U_TIP_SPEED, U_TIP_LEAD, U_TIP_WIDTH = (PUSH.offset(k) for k in (
    "tip_shift", "tip_speed", "tip_lead", "tip_width"))
#: a recovery step's state: phase (IDLE, SWING, SETTLE, SHIFT), the swing foot (in SHIFT: the loaded sole that
#: will swing), the time since it lifted (in SHIFT: since the shift began, s), the swing sole's pose at lift-off
#: relative to the stance sole, the move of its centre (stance sole axes, m) and where that centre lands (e1, e2
#: of the planning cycle, m), lifting (1: the push lifted the swing sole, the sideways step) and need (s: how
#: long, IDLE, a step has been wanted on end, eq. P7) and root (the sole that stayed down through the last
#: recovery step, plus one; 0: none yet): it roots the double support from then on, and grade (eq. P10: 0, the
#: step as step_* give it, to 1, as roll_* do) and tip (1: the step the gyro's tipping point planned, its load
#: shift and swing, eq. P12)
IDLE, SWING, SETTLE, SHIFT = range(4)
RECOVERY = Layout("recovery step state", [Field("phase"), Field("foot"), Field("t"), Field("start", (4, 4)),
                                          Field("shift", (3,)), Field("target", (2,)), Field("lifting"),
                                          Field("need"), Field("root"), Field("grade"), Field("tip")])
R_PHASE, R_FOOT, R_T = RECOVERY.offset("phase"), RECOVERY.offset("foot"), RECOVERY.offset("t")
R_LIFTING, R_NEED, R_ROOT = RECOVERY.offset("lifting"), RECOVERY.offset("need"), RECOVERY.offset("root")
R_START, R_SHIFT, R_TARGET = RECOVERY.offset("start"), RECOVERY.offset("shift"), RECOVERY.offset("target")
R_GRADE, R_TIP = RECOVERY.offset("grade"), RECOVERY.offset("tip")
#: the gate's state (:func:`push_gate`): engaged (0, 1), the slow part of xi - c (e1, e2, m; zeros at rest)
GATE = Layout("push gate state", [Field("engaged"), Field("slow", (2,))])
G_ENGAGED, G_SLOW = GATE.offset("engaged"), GATE.offset("slow")
#: the pelvis estimate the capture point takes (stabilizer.pelvis_state): on (0: none, the joints'
#: velocities alone), the pelvis origin's velocity (world, m/s), R_wp (pelvis -> world, row-major), gyro (1: R_wp
#: and the pelvis' angular velocity ``rate`` (world, rad/s) are a gyro's: eq. P2')
PELVIS = Layout("capture point pelvis input", [Field("on"), Field("velocity", (3,)), Field("R", (3, 3)),
                                               Field("gyro"), Field("rate", (3,))])
V_ON, V_VEL, V_R = PELVIS.offset("on"), PELVIS.offset("velocity"), PELVIS.offset("R")
V_GYRO, V_RATE = PELVIS.offset("gyro"), PELVIS.offset("rate")


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


@njit(cache=True, inline="always")
def _in_root(Tp, P, off):
    """Rp R_wp' x: the world vector x = P[off:off + 3] in the root's axes (Rp = Tp's rotation, R_wp the
    estimate's, row-major at P[V_R:])."""
    y0 = P[V_R] * P[off] + P[V_R + 3] * P[off + 1] + P[V_R + 6] * P[off + 2]
    y1 = P[V_R + 1] * P[off] + P[V_R + 4] * P[off + 1] + P[V_R + 7] * P[off + 2]
    y2 = P[V_R + 2] * P[off] + P[V_R + 5] * P[off + 1] + P[V_R + 8] * P[off + 2]
    return (Tp[0, 0] * y0 + Tp[0, 1] * y1 + Tp[0, 2] * y2, Tp[1, 0] * y0 + Tp[1, 1] * y1 + Tp[1, 2] * y2,
            Tp[2, 0] * y0 + Tp[2, 1] * y1 + Tp[2, 2] * y2)


@njit(cache=True, inline="always")
def _turn(v, cs, x0, x1, x2):
    """Q x, Q the least rotation taking a unit vector a to b, v = a x b, cs = a . b (Rodrigues)."""
    c0, c1, c2 = v[1] * x2 - v[2] * x1, v[2] * x0 - v[0] * x2, v[0] * x1 - v[1] * x0
    k = 1.0 / (1.0 + cs)
    return (x0 + c0 + k * (v[1] * c2 - v[2] * c1), x1 + c1 + k * (v[2] * c0 - v[0] * c2),
            x2 + c2 + k * (v[0] * c1 - v[1] * c0))


@njit(cache=True)
def gyro_capture_point(Rws, com, Jcom, Jp, Tp, pelvis, qd, g0, xi):
    """Eq. P2' (module docstring): the capture point with the pelvis estimate's gyro (``pelvis[V_GYRO]``
    set), the root sole's rotation and tip measured, into xi[0:2]; arguments as :func:`capture_point`
    but the pelvis frame's whole Jacobian ``Jp`` (6 x n: linear rows, then angular) and pose ``Tp``
    (4 x 4). Returns omega (1/s)."""
    n = qd.shape[0]
    v0, v1, v2 = _in_root(Tp, pelvis, V_VEL)               # the pelvis' velocity,
    w0, w1, w2 = _in_root(Tp, pelvis, V_RATE)              # its angular velocity,
    g = pelvis[V_R + 6:V_R + 9]                            # and the world's up (R_wp' z), in the root's axes
    u0 = Tp[0, 0] * g[0] + Tp[0, 1] * g[1] + Tp[0, 2] * g[2]
    u1 = Tp[1, 0] * g[0] + Tp[1, 1] * g[1] + Tp[1, 2] * g[2]
    u2 = Tp[2, 0] * g[0] + Tp[2, 1] * g[1] + Tp[2, 2] * g[2]
    d0, d1, d2 = com[0] - Tp[0, 3], com[1] - Tp[1, 3], com[2] - Tp[2, 3]
    cd0, cd1, cd2 = v0, v1, v2
    for j in range(n):                                     # the root's rate: the pelvis' less the joints'
        x = qd[j]
        w0 -= Jp[3, j] * x
        w1 -= Jp[4, j] * x
        w2 -= Jp[5, j] * x
        cd0 += (Jcom[0, j] - Jp[0, j]) * x
        cd1 += (Jcom[1, j] - Jp[1, j]) * x
        cd2 += (Jcom[2, j] - Jp[2, j]) * x
    cd0 += w1 * d2 - w2 * d1
    cd1 += w2 * d0 - w0 * d2
    cd2 += w0 * d1 - w1 * d0
    a = Rws[0]                                             # the true up turned onto apparent up: Q
    v = (u1 * a[2] - u2 * a[1], u2 * a[0] - u0 * a[2], u0 * a[1] - u1 * a[0])
    cs = u0 * a[0] + u1 * a[1] + u2 * a[2]
    c0, c1, c2 = _turn(v, cs, com[0], com[1], com[2])
    e0, e1, e2 = _turn(v, cs, cd0, cd1, cd2)
    z = u0 * com[0] + u1 * com[1] + u2 * com[2]
    omega = math.sqrt(g0 / z) if z > 0.0 else 0.0
    for k in range(2):
        R = Rws[1 + k]
        c = R[0] * c0 + R[1] * c1 + R[2] * c2
        xi[k] = c + (R[0] * e0 + R[1] * e1 + R[2] * e2) / omega if omega > 0.0 else c
    return omega


@njit(cache=True)
def observe_lipm(obs, ck, p, omega, lam, dt, xi):
    """One step ``dt`` of the observer (module docstring, eq. P3) per horizontal axis a: ``obs[a]`` =
    (c_hat, v_hat), NaN until the first call, which starts it at rest on the kinematic CoG ``ck``; ``p``
    the measured centre of pressure; ``lam`` the error's pole rate (1/s). Writes xi = c_hat + v_hat / omega
    into xi[0:2]. The prediction is the pendulum's exact transition over dt (p held: c - p and v_hat turn
    by cosh, sinh), then the correction on this cycle's measurement, an Euler step (explicit Euler on
    the diverging mode, or the measurement set against last cycle's estimate, biased xi by 0.6 % of its
    distance to p)."""
    w2 = omega * omega
    l1, l2 = 2.0 * lam, lam * lam + w2
    ch, sh = math.cosh(omega * dt), math.sinh(omega * dt)
    for a in range(2):
        if not math.isfinite(obs[a, 0]):
            obs[a, 0], obs[a, 1] = ck[a], 0.0
        r, v = obs[a, 0] - p[a], obs[a, 1]
        c = p[a] + ch * r + (sh / omega * v if omega > 0.0 else dt * v)   # predicted to this cycle
        v = omega * sh * r + ch * v
        e = ck[a] - c                                                    # this cycle's measurement
        obs[a, 0] = c + dt * l1 * e
        obs[a, 1] = v + dt * l2 * e
        xi[a] = obs[a, 0] + obs[a, 1] / omega if omega > 0.0 else obs[a, 0]


@njit(cache=True)
def _clipped(k, ex, ey, vmax, v):
    """v = k (ex, ey) with |v| <= vmax."""
    v[0], v[1] = k * ex, k * ey
    s = math.sqrt(v[0] * v[0] + v[1] * v[1])
    if s > vmax:
        v[0] *= vmax / s
        v[1] *= vmax / s


@njit(cache=True)
def push_gate(u, gate, xi, c, gait, dt):
    """The gate (module docstring, eq. P4) for the capture point ``xi`` of the CoG ``c`` (e1, e2), one
    cycle ``dt`` on its state ``gate`` (:data:`GATE`); ``gait``: a gait plays (the strategies stand
    aside). Returns whether the strategies are engaged; never without a ``push:`` section (``u`` all zeros)."""
    if u[U_ON] == 0.0:
        gate[G_ENGAGED] = 0.0
        return False
    lx, ly = xi[0] - c[0], xi[1] - c[1]
    fx, fy = lx - gate[G_SLOW], ly - gate[G_SLOW + 1]
    a = min(1.0, dt / u[U_ENGAGE_TIME])
    gate[G_SLOW] += a * fx
    gate[G_SLOW + 1] += a * fy
    db = u[U_DEADBAND]
    moving = math.sqrt(lx * lx + ly * ly) > db
    if gait or not moving:
        gate[G_ENGAGED] = 0.0
    elif math.sqrt(fx * fx + fy * fy) > db:
        gate[G_ENGAGED] = 1.0
    return gate[G_ENGAGED] != 0.0


@njit(cache=True)
def push_response(u, engaged, xi, cy, cz, walls, nw, d, v_cog, v_trunk):
    """The strategy for the capture point ``xi`` (e1, e2) over the polygon of walls ``walls``
    (``nw`` of them; ``d`` scratch) whose centroid is (cy, cz), ``u`` the :data:`PUSH` block,
    ``engaged`` the gate's verdict (:func:`push_gate`): the added CoG velocity into v_cog[0:2] and
    trunk velocity over the pelvis into v_trunk[0:2] (zeros when not engaged or NONE). Returns
    (strategy, xi's margin in the polygon, m)."""
    margin = signed_distances(walls, nw, xi[0], xi[1], d)
    v_cog[0] = v_cog[1] = v_trunk[0] = v_trunk[1] = 0.0
    if not engaged:
        return NONE, margin
    ex, ey = xi[0] - cy, xi[1] - cz
    _clipped(-u[U_K_ANKLE], ex, ey, u[U_V_ANKLE], v_cog)
    if margin > u[U_HIP_MARGIN]:
        return ANKLE, margin
    _clipped(u[U_K_HIP], ex, ey, u[U_V_HIP], v_trunk)
    return (STEP if margin < -u[U_STEP_MARGIN] else HIP), margin


@njit(cache=True, inline="always")
def graded(u, rec, base, full):
    """A step parameter at ``rec``'s grade g (eq. P10): u[base] + g (u[full] - u[base])."""
    return u[base] + rec[R_GRADE] * (u[full] - u[base])


@njit(cache=True)
def roll_grade(u, rec, beyond, lifting):
    """The sideways answer's grade (module docstring, eq. P10), one cycle: IDLE with a sole the push is
    ``lifting``, the tipping point ``beyond`` m outside the polygon (eq. P2'; negative inside, NaN without a
    gyro) grades it, g = clip((beyond - roll_start) / roll_span, 0, 1), the largest g since the sole unloaded
    kept in ``rec``'s grade (0 again once none is lifting; always 0 with roll_span 0). A step under way keeps
    the grade it was planned with, and IDLE again with the sole still lifting (landed in the air: the robot
    rolled on the other's edge) the next step takes it too. Returns the grade."""
    if rec[R_PHASE] != IDLE:
        return rec[R_GRADE]
    if not lifting:
        rec[R_GRADE] = 0.0
    elif u[U_ROLL_SPAN] > 0.0 and beyond > u[U_ROLL_START]:
        rec[R_GRADE] = max(rec[R_GRADE], min(1.0, (beyond - u[U_ROLL_START]) / u[U_ROLL_SPAN]))
    return rec[R_GRADE]


@njit(cache=True)
def roll_trunk(u, rec, Rws, v_trunk):
    """The trunk into the fall during a sideways step's swing (eq. P10), one cycle: the trunk's CoG over the
    pelvis moved at g ``roll_trunk`` m/s (g ``rec``'s grade) away from the swing sole, along the stance sole's
    line to it in the horizontal axes (rows 1, 2 of ``Rws``, the stance sole's axes), into v_trunk[0:2]."""
    t0, t1, t2 = rec[R_START + 3], rec[R_START + 7], rec[R_START + 11]
    d1 = Rws[1, 0] * t0 + Rws[1, 1] * t1 + Rws[1, 2] * t2
    d2 = Rws[2, 0] * t0 + Rws[2, 1] * t1 + Rws[2, 2] * t2
    ln = math.sqrt(d1 * d1 + d2 * d2)
    k = -rec[R_GRADE] * u[U_ROLL_TRUNK] / ln if ln > 0.0 else 0.0
    v_trunk[0], v_trunk[1] = k * d1, k * d2


@njit(cache=True)
def step_due(u, rec, wanted, dt):
    """The recovery step's trigger (module docstring, eq. P7), one cycle ``dt``: IDLE, the time a step has
    been ``wanted`` on end (the capture point beyond step_margin outside the polygon, or a sole unloaded
    under a push) grows in ``rec``'s need (reset when it is not); a step is due once the need reaches
    ``step_delay``. Not IDLE (a step or its load shift under way): due, the need reset. Returns whether a
    step may start (or go on) this cycle."""
    if rec[R_PHASE] != IDLE:
        rec[R_NEED] = 0.0
        return True
    if not wanted:
        rec[R_NEED] = 0.0
        return False
    rec[R_NEED] += dt
    return rec[R_NEED] >= graded(u, rec, U_STEP_DELAY, U_ROLL_DELAY)


@njit(cache=True)
def nearest_sole(xi, centres):
    """The sole (0 left, 1 right) whose centre (``centres``, foot, e1 / e2) is nearest ``xi``; a tie: the right
    one (the gait's first swing foot)."""
    d0 = (xi[0] - centres[0, 0]) ** 2 + (xi[1] - centres[0, 1]) ** 2
    d1 = (xi[0] - centres[1, 0]) ** 2 + (xi[1] - centres[1, 1]) ** 2
    return 0 if d0 < d1 else 1


@njit(cache=True)
def tip_shift(u, rec, tip, centres):
    """The forward step's first phase (module docstring, eq. P12): IDLE with ``tip_shift`` > 0, the step the
    tipping point ``tip`` wants (eq. P7) starts a load shift instead of swinging at once, the sole nearest
    ``tip`` to swing (rec's tip set: :func:`load_shift` drives it at ``tip_speed`` and swings it at the latest
    after ``tip_shift`` s). Returns whether the shift started."""
    if rec[R_PHASE] != IDLE or u[U_TIP_SHIFT] <= 0.0:
        return False
    rec[R_PHASE], rec[R_FOOT], rec[R_T], rec[R_TIP] = SHIFT, nearest_sole(tip, centres), 0.0, 1.0
    return True


@njit(cache=True)
def tip_aim(u, rec, tip, beyond, omega, cy, cz, out):
    """Where the forward step lands (module docstring, eq. P12) into out[0:2]: the tipping point ``tip`` (e1, e2)
    ``beyond`` m outside the polygon, carried on by the pendulum about the polygon's edge for ``tip_lead`` times
    the swing's time T, away from its centroid G = (cy, cz): tip + (exp(omega tip_lead T) - 1) max(beyond, 0)
    (tip - G) / |tip - G| (tip_lead 0: the tipping point itself)."""
    ex, ey = tip[0] - cy, tip[1] - cz
    ln = math.sqrt(ex * ex + ey * ey)
    k = 0.0
    if ln > 0.0 and beyond > 0.0:
        k = (math.exp(omega * u[U_TIP_LEAD] * graded(u, rec, U_STEP_TIME, U_ROLL_TIME)) - 1.0) * beyond / ln
    out[0], out[1] = tip[0] + k * ex, tip[1] + k * ey


@njit(cache=True)
def tip_follow(u, rec, unloaded, centres, aim):
    """The forward step's second step (module docstring, eq. P12), one cycle: a tip step landed (SETTLE, tip 1)
    and the rear sole ``unloaded`` (:func:`unloaded_sole`: the robot gone over the front one) swings to beside
    the front sole, ``step_width`` from its centre across (``centres``, foot, e1 / e2; :func:`plan_step` keeps
    it at least ``tip_width``), into ``aim`` (the point
    :func:`plan_step` moves it to, from its own centre); tip 2 from then on (no third). Returns the rear sole
    to swing, or -1."""
    front = int(rec[R_FOOT])
    if rec[R_TIP] != 1.0 or rec[R_PHASE] != SETTLE or front < 0 or unloaded != 1 - front:
        return -1
    side = 1.0 if centres[unloaded, 1] > centres[front, 1] else -1.0
    aim[0], aim[1] = centres[front, 0], centres[front, 1] + side * u[U_STEP_WIDTH]
    rec[R_TIP], rec[R_LIFTING] = 2.0, 1.0
    return unloaded


@njit(cache=True)
def plan_step(u, xi, cy, cz, centres, Rws, Tl, Tr, rec, foot):
    """A recovery step (module docstring) into ``rec`` (:data:`RECOVERY`), planned on two feet: ``centres``
    the soles' centres (foot, e1 / e2), ``Tl``, ``Tr`` the left and right soles' poses and ``Rws`` the
    gravity axes, all in the model's root frame; ``u`` the :data:`PUSH` block; ``foot`` the swing foot
    (0 left, 1 right; -1: the sole nearest xi). The landing centre keeps ``step_width`` from the stance
    sole's along the line between the two centres (eq. P6: no crossover, the legs would meet); a tip step's front
    sole (rec's tip 1) exactly ``tip_width`` (eq. P12: under the CoG the load shift moved). Returns the
    swing foot."""
    if foot < 0:
        foot = nearest_sole(xi, centres)
    Ts, Tw = (Tr, Tl) if foot == 0 else (Tl, Tr)
    de1, de2 = xi[0] - cy, xi[1] - cz
    ln = math.sqrt(de1 * de1 + de2 * de2)
    if ln > u[U_STEP_MAX]:
        de1, de2 = de1 * u[U_STEP_MAX] / ln, de2 * u[U_STEP_MAX] / ln
    n1, n2 = centres[foot, 0] - centres[1 - foot, 0], centres[foot, 1] - centres[1 - foot, 1]
    ln = math.sqrt(n1 * n1 + n2 * n2)
    if ln > 0.0:                                    # eq. P6: (c_w + shift - c_s) . n >= step_width
        n1, n2 = n1 / ln, n2 / ln
        width = u[U_TIP_WIDTH] if rec[R_TIP] != 0.0 else graded(u, rec, U_STEP_WIDTH, U_ROLL_WIDTH)
        short = width - (ln + de1 * n1 + de2 * n2)
        if short > 0.0 or rec[R_TIP] == 1.0:        # the tip step's front sole: exactly tip_width across
            de1, de2 = de1 + short * n1, de2 + short * n2
    for r in range(3):                               # the stance sole's view: Ts^-1 Tw, Ts^T (e1 de1 + e2 de2)
        for c in range(4):
            acc = 0.0
            for k in range(3):
                acc += Ts[k, r] * (Tw[k, c] - (Ts[k, 3] if c == 3 else 0.0))
            rec[R_START + 4 * r + c] = acc
        rec[R_SHIFT + r] = (Ts[0, r] * (Rws[1, 0] * de1 + Rws[2, 0] * de2) + Ts[1, r] * (Rws[1, 1] * de1 + Rws[2, 1] * de2)
                            + Ts[2, r] * (Rws[1, 2] * de1 + Rws[2, 2] * de2))
    for c in range(4):
        rec[R_START + 12 + c] = 1.0 if c == 3 else 0.0
    rec[R_TARGET], rec[R_TARGET + 1] = centres[foot, 0] + de1, centres[foot, 1] + de2
    rec[R_PHASE], rec[R_FOOT], rec[R_T] = SWING, foot, 0.0
    return foot


@njit(cache=True)
def unloaded_sole(loads, cells, min_load, release_load):
    """The sole (0 left, 1 right) whose ``cells`` load cells (``loads[cells * foot:]``) carry less than
    ``release_load`` while the other's carry at least ``min_load`` (the robot tips on the other's edge);
    -1 when both or neither carry it."""
    f0 = f1 = 0.0
    for c in range(cells):
        f0 += loads[c]
        f1 += loads[cells + c]
    if f0 < release_load and f1 >= min_load:
        return 0
    if f1 < release_load and f0 >= min_load:
        return 1
    return -1


@njit(cache=True)
def load_shift(u, rec, unloaded, centres, c, v_cog, v_trunk):
    """The sideways step's first phase (module docstring, eq. P5), one cycle. IDLE with a sole ``unloaded``
    (:func:`unloaded_sole`, -1 none): with ``shift_time`` 0 that sole, lifting already, swings at once; else
    SHIFT starts, the other (loaded) sole to swing: the CoG ``c`` (e1, e2) is driven towards the unloaded
    sole's centre (``centres``, foot, e1 / e2), v_c = k_ankle (centre - c), |v_c| <= shift_speed, into
    v_cog[0:2], the trunk's added velocity zeroed, until the loaded sole is unloaded in its turn or
    ``shift_time`` has passed (:func:`advance_step`: SETTLE, no step). Returns the foot to swing now, or -1."""
    if rec[R_PHASE] == IDLE:
        if unloaded < 0:
            return -1
        if u[U_SHIFT_TIME] == 0.0:
            rec[R_LIFTING] = 1.0
            return unloaded
        rec[R_PHASE], rec[R_FOOT], rec[R_T] = SHIFT, 1 - unloaded, 0.0
    if rec[R_PHASE] != SHIFT:
        return -1
    foot = int(rec[R_FOOT])
    tipping = rec[R_TIP] != 0.0
    if unloaded == foot or (tipping and rec[R_T] >= u[U_TIP_SHIFT]):
        rec[R_LIFTING] = 1.0
        return foot
    other = 1 - foot
    speed = u[U_TIP_SPEED] if tipping else u[U_SHIFT_SPEED]
    _clipped(u[U_K_ANKLE], centres[other, 0] - c[0], centres[other, 1] - c[1], speed, v_cog)
    v_trunk[0] = v_trunk[1] = 0.0
    return -1


@njit(cache=True)
def swing_pose(u, rec, up, dt, H, v):
    """The swing sole's pose at the step's time into ``H`` (4 x 4, the stance sole's frame, the model's
    root): its lift-off pose moved by quintic(s) of the shift and lifted ``step_height`` bell(s) along
    ``up`` (apparent up in the stance sole's axes), s = t / step_time (models.gait.plan's swing); into
    ``v`` (3) its velocity over the next ``dt`` (the lifted foot task's feed-forward)."""
    T, height = graded(u, rec, U_STEP_TIME, U_ROLL_TIME), graded(u, rec, U_STEP_HEIGHT, U_ROLL_HEIGHT)
    s0, s1 = rec[R_T] / T, (rec[R_T] + dt) / T
    a, b = quintic(s0), height * bell(s0)
    da, db = (quintic(s1) - a) / dt, (height * bell(s1) - b) / dt
    for r in range(4):
        for c in range(4):
            H[r, c] = rec[R_START + 4 * r + c]
    for r in range(3):
        H[r, 3] += a * rec[R_SHIFT + r] + b * up[r]
        v[r] = da * rec[R_SHIFT + r] + db * up[r]


@njit(cache=True)
def lowest_vertex(outline, nv, T, n):
    """The vertex of a sole's outline (``outline[:nv]``, x / y in the sole's frame, pose ``T`` 4 x 4 in the
    model's root frame) lowest along the unit vector ``n`` (root axes): the edge a tipped sole stands on.
    Returns its root coordinates."""
    best, p0, p1, p2 = math.inf, 0.0, 0.0, 0.0
    for k in range(nv):
        x, y = outline[k, 0], outline[k, 1]
        q0 = T[0, 3] + T[0, 0] * x + T[0, 1] * y
        q1 = T[1, 3] + T[1, 0] * x + T[1, 1] * y
        q2 = T[2, 3] + T[2, 0] * x + T[2, 1] * y
        h = n[0] * q0 + n[1] * q1 + n[2] * q2
        if h < best:
            best, p0, p1, p2 = h, q0, q1, q2
    return p0, p1, p2


@njit(cache=True)
def partway(a, b, s):
    """The unit vector a fraction ``s`` of the way from the unit vector ``a`` to ``b`` (normalised chord)."""
    x0, x1, x2 = a[0] + s * (b[0] - a[0]), a[1] + s * (b[1] - a[1]), a[2] + s * (b[2] - a[2])
    n = math.sqrt(x0 * x0 + x1 * x1 + x2 * x2)
    return x0 / n, x1 / n, x2 / n


@njit(cache=True)
def tilt_pose(a, b, pivot, H, v):
    """H (4 x 4, root frame) and the vector ``v`` (3) turned by the least rotation Q taking the unit vector ``a``
    onto ``b`` (eq. P12), H about the point ``pivot``: H <- Q (H - pivot) + pivot, v <- Q v."""
    ax = (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])
    cs = a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
    for c in range(3):
        H[0, c], H[1, c], H[2, c] = _turn(ax, cs, H[0, c], H[1, c], H[2, c])
    x0, x1, x2 = _turn(ax, cs, H[0, 3] - pivot[0], H[1, 3] - pivot[1], H[2, 3] - pivot[2])
    H[0, 3], H[1, 3], H[2, 3] = x0 + pivot[0], x1 + pivot[1], x2 + pivot[2]
    v[0], v[1], v[2] = _turn(ax, cs, v[0], v[1], v[2])


@njit(cache=True)
def touchdown(u, rec, loads, cells, min_load):
    """A tip step's swing ended by its sole's landing (eq. P12), one cycle: SWING with tip, past half its time,
    the swing sole's ``cells`` load cells (``loads[cells * foot:]``) carrying ``min_load`` end it now
    (:func:`advance_step` lands it this cycle): the floor met before the curve's end (the stance sole tipped)."""
    if rec[R_PHASE] != SWING or rec[R_TIP] == 0.0:
        return
    T = graded(u, rec, U_STEP_TIME, U_ROLL_TIME)
    f = int(rec[R_FOOT])
    w = 0.0
    for c in range(cells):
        w += loads[cells * f + c]
    if rec[R_T] >= 0.5 * T and w >= min_load:
        rec[R_T] = T


@njit(cache=True)
def advance_step(u, rec, dt):
    """The step's clock: SHIFT for at most ``shift_time``, SWING until ``step_time`` (the sole that stayed
    down then roots the double support, ``root``), SETTLE for ``step_settle`` more, then IDLE."""
    if rec[R_PHASE] == IDLE:
        return
    rec[R_T] += dt
    T = graded(u, rec, U_STEP_TIME, U_ROLL_TIME)
    # no step (foot -1): settle as after one; a tip shift swings at tip_shift (load_shift), ended here only when
    # the double support it needs was lost
    limit = u[U_TIP_SHIFT] + dt if rec[R_TIP] != 0.0 else u[U_SHIFT_TIME]
    if rec[R_PHASE] == SHIFT and rec[R_T] >= limit:
        rec[R_PHASE], rec[R_T], rec[R_FOOT] = SETTLE, T, -1.0
    if rec[R_PHASE] == SWING and rec[R_T] >= T:          # a tip step's landed sole lies flat: it roots (eq. P12)
        root = 1.0 + rec[R_FOOT] if rec[R_TIP] == 1.0 else 2.0 - rec[R_FOOT]
        rec[R_PHASE], rec[R_LIFTING], rec[R_ROOT] = SETTLE, 0.0, root
    elif rec[R_PHASE] == SETTLE and rec[R_T] >= T + u[U_STEP_SETTLE]:
        rec[R_PHASE], rec[R_TIP] = IDLE, 0.0


@njit(cache=True)
def hip_spin(u, spin, beyond, tip, cy, cz, armed, dt):
    """The forward hip strategy graded by the gyro (module docstring, eq. P11), one cycle ``dt`` on its state
    ``spin`` (:data:`SPIN`). ARMED, ``armed`` (the gate engaged, two soles down, no gait, no step) and the tipping point ``tip``
    (e1, e2; eq. P2') ``beyond`` m outside the polygon past ``hip_start`` (NaN without a gyro: never) fires it,
    along the unit direction d of tip from the centroid (cy, cz). Fired, the trunk's CoG over the pelvis moves
    along d at g hip_speed r(s) (g the grade, the largest clip((beyond - hip_start) / hip_span, 0, 1) so far;
    r rising as quintic(s / hip_ramp), 1, falling as quintic((T - s) / hip_ramp), T = hip_reach / hip_speed +
    hip_ramp: hip_reach m at grade 1), stops hip_hold s, and comes back over hip_back s as
    x_peak (1 - quintic(s' / hip_back)); then SPENT until the tipping point is back within hip_start (one
    answer per excursion). Returns the speed along d over this cycle, (x(s + dt) - x(s)) / dt (0 when not
    spinning); ``spin``'s x is then x(s + dt)."""
    start, span = u[U_HIP_START], u[U_HIP_SPAN]
    out = beyond > start                                   # False for NaN
    if spin[H_PHASE] == SPENT:
        if not out:
            spin[H_PHASE] = ARMED
        return 0.0
    if spin[H_PHASE] == ARMED:
        dx, dy = tip[0] - cy, tip[1] - cz
        ln = math.sqrt(dx * dx + dy * dy)
        if not (armed and out and span > 0.0 and ln > 0.0):
            return 0.0
        spin[H_PHASE], spin[H_T], spin[H_GRADE], spin[H_X], spin[H_PEAK] = SPINNING, 0.0, 0.0, 0.0, 0.0
        spin[H_DIR], spin[H_DIR + 1] = dx / ln, dy / ln
    t, ramp, hold = spin[H_T], u[U_HIP_RAMP], u[U_HIP_HOLD]
    T = u[U_HIP_REACH] / u[U_HIP_SPEED] + ramp
    if t < T:
        if out:
            spin[H_GRADE] = max(spin[H_GRADE], min(1.0, (beyond - start) / span))
        r = quintic((t + 0.5 * dt) / ramp) * quintic((T - t - 0.5 * dt) / ramp)    # at mid-cycle
        x = spin[H_X] + spin[H_GRADE] * u[U_HIP_SPEED] * r * dt
        spin[H_PEAK] = x
    elif t < T + hold:
        x = spin[H_PEAK]
    else:
        x = spin[H_PEAK] * (1.0 - quintic((t + dt - T - hold) / u[U_HIP_BACK]))
    v = (x - spin[H_X]) / dt
    spin[H_X] = x
    spin[H_T] = t + dt
    if spin[H_T] >= T + hold + u[U_HIP_BACK]:
        spin[H_PHASE] = SPENT
    return v
