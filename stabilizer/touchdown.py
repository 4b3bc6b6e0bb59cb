"""Touch-down found by the swing foot's load cells, the plan's timing kept (docs/walking.md, "A touch-down
the cells find").

The gait plans every landing on the floor it assumed (z = 0). Per foot f, a vertical offset d_f of its sole
from the plan (m, > 0: higher), along the pelvis' z (the gait keeps the pelvis upright), is added to the leg's
joints by the leg's own Jacobian (the sole f's origin and axes in the pelvis frame, J_f: 6 x 6 over the leg's
joints, at the reference q*):

    J_f(q*) dq_f = (0, 0, d_f, 0, 0, 0),    q = q* + dq_f,    qd = qd* + (dq_f(t) - dq_f(t - T)) / T     (1)

and d_f follows the foot's cells (L_f its load, z_f the plan's height of sole f above the other sole, T the
period):

* swinging (the plan's single support on the other foot): a carried offset is released,
  d_f = d_0 (1 - quintic(t / t_release)), t from the plan's lift-off; an early contact, L_f >= ``touch_load``
  while the plan descends (z_f(t) < z_f(t - T)) still ``min_offset`` or more above the other sole (lower, the
  floor the plan assumed: on the flat floor a sole meets it within µm of the plan, and a µm offset moves the
  drives' following error by hundredths of a degree), holds the sole where it met the ground:
  d_f = h - z_f with h = z_f + d_f at the contact (it stops descending, the plan's timing kept);
* from the plan's touch-down: held, carried unchanged through the foot's stance, until its next lift-off;
  a late contact (not loaded ``delay`` after the plan's touch-down, longer than the flat floor's late
  landings) keeps descending, d_f' = -v with v ramping up to ``speed`` at ``accel``, until L_f >= ``touch_load``
  or d_f = -``bound``.

A sole landed across an edge (a step down whose edge lies under its heel) bears on its heel only, its toes over
the drop: from the plan's touch-down through the foot's stance, while its cells carry ``touch_load`` with their
centre of pressure p_x behind the rear cells (x_r, sole frame) by ``tilt_margin`` or more and ``tilt_share``
of both feet's load, for ``tilt_delay`` in a row (a flat floor's heel-first landing is over before the foot
carries that share, or lasts less), the sole turns toes down about the line it bears on
(the pivot x_c = p_x as the turn starts), its pitch theta_f (rad, > 0 toes down) at a rate ramping at
``tilt_accel`` up to ``tilt_speed``, until its toes load (p_x back within the margin) or theta_f = ``tilt_max``;
held, carried through the stance and released with the offset at the next lift-off. The leg's joints take
the sole's goal pose, turned about its y axis through the pivot:

    T_goal = Tz(d_f) T_f(q*) . Tx(x_c) Ry(theta_f) Tx(-x_c)                                                  (2)

(in eq. 1's solve: the pelvis, and so the robot, stays upright while the foot turns under it; turning the
whole robot over the edge with the foot is what made it fall forward).

With ``tilt_edges`` on, every edge of the cells' box counts (a sole lying flat on whatever is under it): a
pressure past the front cells turns the sole toes up (theta_f < 0) about the line it bears on, and one past
the right or left cells (y_r, y_l) by the margin turns it about its x axis through y_c = p_y (phi_f, rad, > 0:
its right side down), each by the same law, until the pressure is back within the margin:

    T_goal = Tz(d_f) T_f(q*) . T(c) Ry(theta_f) Rx(phi_f) T(-c),    c = (x_c, y_c, 0)                       (2')

With ``step_up`` on, a swing lands on the level its stance sole found, not the plan's floor (the ground
assumed to go on where the last landing found it), and rises over a step up before it moves forward. At the
plan's lift-off of foot f, the level L = d_s (the stance sole's carried offset) and the rise r = L - d_0 (d_0
f's own offset; the soles' height difference by the legs' kinematics); t from the lift-off, x the plan's
progress of the sole along the base's x since then, g = z_f / max z_f (1 while the plan rises, 0 as it lands),
a = (t - t_R) / T_R (to 1) and u = quintic(a) from the raise's start t_R:

    d_f = d_0 + r w(t) + K_0 + (K - K_0) u + (R_0 + (R - R_0) u) g,    x_f = P_0 + (x - P_0) u - 16 r_b a^2 (1 - a)^2   (3)

w = quintic(t / ``lift``) for a learned step up (r >= ``step_min``: the raise starts at the lift-off, T_R = ``lift``,
R = ``clearance``, P_0 = r_b = 0: the sole rises its step and a clearance while its progress is held to x u), else
w = quintic(t / ``release``) (the carried offset released towards L; R = K = 0, no hold: the plan's swing when
L = d_0). A **strike**, |L_f| >= ``touch_load`` while the plan's sole rises, ``strike_min`` or more up (a riser's
face, its friction pulling the rising toe: something in the way, not the ground), starts a raise there: R_0,
K_0 the raise so far, K lifted to land no lower than where the sole struck (its top is higher), R adding
``strike_raise`` over it (to ``bound`` in all) over T_R = ``strike_s``, P_0 the sole's progress then (its move
forward held again), the toe stepping back from the face by up to r_b = ``strike_back`` meanwhile; its
event ``new_strike`` (the raise). The goal of eq. 2' moves by x_f - x along the base's x.

A touch-down whose held offset reaches ``min_offset`` in size is reported once (``new``: the loop's event), and
so is a turned sole as its sunk edge finds the ground (``new_turn``: theta_f, phi_f).
State and parameters are flat buffers declared once (:data:`STATE`, :data:`PARAMS`); the kernel is
allocation-free, ``@njit(cache=True)``.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from models.common.layout import Field, Layout
from models.gait.plan import quintic
from models.tree.dynamics import kinematics
from models.tree.model import data_layout as data_views

FEET = 2
LEG = 6
PARAMS = Layout("touchdown params", [Field(name) for name in (
    "enabled", "touch_load", "bound", "speed", "accel", "delay", "release", "min_offset", "tilt_margin",
    "tilt_share", "tilt_delay", "tilt_speed", "tilt_accel", "tilt_max", "tilt_edges", "step_up", "step_min",
    "lift", "clearance", "strike_min", "strike_raise", "strike_s", "strike_back")])
P_ENABLED, P_TOUCH, P_BOUND, P_SPEED, P_ACCEL, P_DELAY, P_RELEASE, P_MIN = (
    PARAMS.offset(k) for k in ("enabled", "touch_load", "bound", "speed", "accel", "delay", "release", "min_offset"))
P_TILT_MARGIN, P_TILT_SHARE, P_TILT_DELAY, P_TILT_SPEED, P_TILT_ACCEL, P_TILT_MAX, P_TILT_EDGES = (
    PARAMS.offset(k) for k in ("tilt_margin", "tilt_share", "tilt_delay", "tilt_speed", "tilt_accel", "tilt_max",
                               "tilt_edges"))
P_STEP_UP, P_STEP_MIN, P_LIFT, P_CLEARANCE, P_STRIKE_MIN, P_STRIKE_RAISE, P_STRIKE_S, P_STRIKE_BACK = (
    PARAMS.offset(k) for k in ("step_up", "step_min", "lift", "clearance", "strike_min", "strike_raise", "strike_s",
                               "strike_back"))
SOFT_BAND = 0.05                                      # rad: a joint's offset is eased into its soft limit over this
NO_RAISE = 1.0e9                                      # s since a raise began: none this swing (u = 1)
# the cells' box of a foot (sole frame, m): the rear and front cells' x, the right and left cells' y
BOX_REAR, BOX_FRONT, BOX_RIGHT, BOX_LEFT = 0, 1, 2, 3

# the modes of a foot: free (no offset, no plan), watch (swinging before any contact), hold (an early contact
# in the swing), search (late: descending after the plan's touch-down), carried (held until the next lift-off)
FREE, WATCH, HOLD, SEARCH, CARRIED = 0.0, 1.0, 2.0, 3.0, 4.0

# mode, offset d_f (m), rate (m/s), held height h, start (d_0 at the lift-off), z_prev (the plan's height last
# cycle), t (s since the plan's lift-off or touch-down), swung (1: the plan swings the foot), new (the offset
# reported this cycle, else 0: the loop's event), dq / dq_prev (the joint offsets of eq. 1, this cycle's and the
# last's), per foot and axis (0: pitch theta_f about y, 1: roll phi_f about x, eq. 2'): turn / turn_rate / pivot
# (the angle, its rate, the pivot x_c or y_c), turn_start (the angle at the lift-off), outside (s the cells'
# pressure has been outside their box on that axis), tilted (1: this stance's turn reported), new_turn (the
# angle reported this cycle, else 0), the swing's learned step (eq. 3): level (the stance sole's offset at the
# lift-off: the level it lands on), x0 (the plan's sole x over the other at the lift-off), zmax (the plan's highest
# sole this swing), raise_t (s since its raise began, NO_RAISE: none), raise_s (its duration T_R), retract (its
# step back r, m), raise_from / raise_to (R_0, R: the raise gone as the sole lands, then K_0, K: the one it lands
# with), progress_from (P_0, m), back (the sole's x behind the plan, m), strikes (this swing's), new_strike (the
# raise of a strike this cycle, else 0: the loop's event), then scratch: z and x (the plan's sole heights and x
# over the other sole), T0 (the soles' goal poses, eq. 2), a (6 x 7: the system of eq. 1)
STATE = Layout("touchdown state", [
    Field("mode", (FEET,)), Field("offset", (FEET,)), Field("rate", (FEET,)), Field("held", (FEET,)),
    Field("start", (FEET,)), Field("z_prev", (FEET,)), Field("t", (FEET,)), Field("swung", (FEET,)),
    Field("new", (FEET,)), Field("dq", (FEET, LEG)), Field("dq_prev", (FEET, LEG)), Field("turn", (FEET, 2)),
    Field("turn_rate", (FEET, 2)), Field("pivot", (FEET, 2)), Field("turn_start", (FEET, 2)),
    Field("outside", (FEET, 2)), Field("tilted", (FEET, 2)), Field("new_turn", (FEET, 2)), Field("level", (FEET,)),
    Field("x0", (FEET,)), Field("zmax", (FEET,)), Field("raise_t", (FEET,)), Field("raise_s", (FEET,)),
    Field("retract", (FEET,)), Field("raise_from", (FEET, 2)), Field("raise_to", (FEET, 2)), Field("progress_from", (FEET,)), Field("back", (FEET,)), Field("strikes", (FEET,)),
    Field("new_strike", (FEET,)), Field("z", (FEET,)), Field("x", (FEET,)), Field("T0", (FEET, 4, 4)),
    Field("a", (LEG, LEG + 1))])
_views = STATE.kernel_views


def new_state() -> np.ndarray:
    """A fresh state: no offset, both feet free."""
    return np.zeros(STATE.size())


def views(buf: np.ndarray):
    """Named numpy views of a state buffer (tools, tests)."""
    return STATE.views(buf)


@njit(cache=True)
def _turn(p, st, f, ax, gate, c, lo, hi, sense, both, period):
    """This cycle's turn of foot f about axis ``ax`` (eq. 2/2', module docstring): ``gate`` its load and share
    allow it, ``c`` its cells' centre of pressure along the axis' lever, ``lo``/``hi`` its cells' extent there
    (sole frame, m), ``sense`` the turn's sign for a pressure past ``hi`` (the side past ``lo`` sinks for the
    other sign), ``both``: past ``hi`` counts too (else only past ``lo``: the heel's edge)."""
    m = p[P_TILT_MARGIN]
    side = 0.0
    if gate and c < lo - m:
        side = -1.0
    elif gate and both and c > hi + m:
        side = 1.0
    st.outside[f, ax] = st.outside[f, ax] + period if side != 0.0 else 0.0
    way = sense * side
    angle = st.turn[f, ax]
    if st.outside[f, ax] >= p[P_TILT_DELAY] and way * angle >= 0.0 and abs(angle) < p[P_TILT_MAX]:
        if angle == 0.0:
            st.pivot[f, ax] = c
        st.turn_rate[f, ax] = min(st.turn_rate[f, ax] + p[P_TILT_ACCEL] * period, p[P_TILT_SPEED])
        st.turn[f, ax] = min(max(angle + way * st.turn_rate[f, ax] * period, -p[P_TILT_MAX]), p[P_TILT_MAX])
        return
    if st.turn_rate[f, ax] != 0.0 and side == 0.0 and st.tilted[f, ax] == 0.0:   # the sunk side found the ground
        st.tilted[f, ax] = 1.0
        st.new_turn[f, ax] = st.turn[f, ax]
    if side == 0.0:
        st.turn_rate[f, ax] = 0.0


@njit(cache=True)
def _tilt(p, st, f, load, share, cop, box, period):
    """This cycle's theta_f and phi_f of a foot in its stance (eq. 2, 2'): ``share`` its part of both feet's
    load, ``cop`` its cells' centre of pressure and ``box`` its cells' extent (BOX_*; sole frame, m)."""
    gate = load >= p[P_TOUCH] and share >= p[P_TILT_SHARE]
    both = p[P_TILT_EDGES] != 0.0
    _turn(p, st, f, 0, gate, cop[0], box[BOX_REAR], box[BOX_FRONT], -1.0, both, period)
    if both:
        _turn(p, st, f, 1, gate, cop[1], box[BOX_RIGHT], box[BOX_LEFT], 1.0, True, period)


@njit(cache=True)
def _lift_off(p, st, f, x, z):
    """The plan lifts foot f (its plan x and height ``x``, ``z`` over the other sole): its offset is carried from
    here, its turns released, and the level it lands on learned from the stance sole's offset (eq. 3): a step up
    of ``step_min`` or more is risen at once, ``clearance`` over it."""
    st.swung[f], st.t[f], st.start[f], st.mode[f] = 1.0, 0.0, st.offset[f], WATCH
    for ax in range(2):
        st.turn_start[f, ax] = st.turn[f, ax]
        st.turn_rate[f, ax] = st.outside[f, ax] = st.tilted[f, ax] = 0.0
    st.level[f] = st.offset[1 - f] if p[P_STEP_UP] != 0.0 else 0.0
    st.x0[f], st.zmax[f] = x, z
    st.progress_from[f] = st.back[f] = st.strikes[f] = st.retract[f] = 0.0
    st.raise_s[f] = p[P_LIFT]
    for k in range(2):
        st.raise_from[f, k] = st.raise_to[f, k] = 0.0
    if st.level[f] - st.start[f] >= p[P_STEP_MIN]:
        st.raise_to[f, 0], st.raise_t[f] = p[P_CLEARANCE], 0.0
    else:
        st.raise_t[f] = NO_RAISE


@njit(cache=True)
def _strike(p, st, f, x, z):
    """Foot f's rising sole struck something (eq. 3): from where it is (the plan's ``x``, ``z``), its move forward
    held again, it rises ``strike_raise`` more, and lands no lower than where it struck (a riser's face: its top is
    higher)."""
    kept, fade = st.raise_to[f, 1], st.raise_to[f, 0]
    st.raise_from[f, 0], st.raise_from[f, 1] = fade, kept
    floor = st.level[f] + kept                        # the level it would land on
    lift = max(z + st.offset[f] - floor, 0.0)
    st.raise_to[f, 1] = kept + lift
    st.raise_to[f, 0] = max(fade + p[P_STRIKE_RAISE] - lift, 0.0)
    st.progress_from[f] = x - st.x0[f] + st.back[f]
    st.raise_t[f], st.raise_s[f], st.retract[f] = 0.0, p[P_STRIKE_S], p[P_STRIKE_BACK]
    st.strikes[f] += 1.0
    st.new_strike[f] = st.raise_to[f, 0] + st.raise_to[f, 1]


@njit(cache=True)
def _swing(p, st, f, x, z, release):
    """The swing's offset d_f (eq. 3) at the plan's sole x, height ``x``, ``z`` and the carried offset's
    ``release`` (1 - quintic(t / release_s)); the sole's x behind the plan into ``back``."""
    st.zmax[f] = max(st.zmax[f], z)
    g = z / st.zmax[f] if z < st.zmax[f] else 1.0     # 1 while the plan rises, 0 as it lands
    a = min(st.raise_t[f] / st.raise_s[f], 1.0)
    u = quintic(a)
    rise = st.level[f] - st.start[f]
    w = quintic(min(st.t[f] / p[P_LIFT], 1.0)) if rise >= p[P_STEP_MIN] else 1.0 - release
    progress = x - st.x0[f]
    st.back[f] = (st.progress_from[f] - progress) * (1.0 - u) - st.retract[f] * 16.0 * a * a * (1.0 - a) * (1.0 - a)
    fade = st.raise_from[f, 0] + (st.raise_to[f, 0] - st.raise_from[f, 0]) * u
    kept = st.raise_from[f, 1] + (st.raise_to[f, 1] - st.raise_from[f, 1]) * u
    return st.start[f] + rise * w + kept + fade * g


@njit(cache=True)
def _offset(p, st, f, phase, load, share, z, x, cop, box, period):
    """This cycle's d_f, theta_f and phi_f (module docstring) from the plan's ``phase`` (0 left, 1 right single
    support, 2 double, < 0 none), the foot's ``load``, its plan height ``z`` and x ``x`` over the other sole, its
    cells' centre of pressure ``cop`` (xy) and extent ``box`` (BOX_*)."""
    st.new[f] = st.new_strike[f] = 0.0
    for ax in range(2):
        st.new_turn[f, ax] = 0.0
    touched = load >= p[P_TOUCH]
    descending = z < st.z_prev[f]
    st.z_prev[f] = z
    if phase < 0.0:                                   # no plan: the offset stays as it is
        st.rate[f] = 0.0
        for ax in range(2):
            st.turn_rate[f, ax] = 0.0
        return
    st.t[f] += period
    st.raise_t[f] += period
    if int(phase) == 1 - f:                           # the plan swings this foot
        if st.swung[f] == 0.0:                        # its lift-off
            _lift_off(p, st, f, x, z)
        release = 1.0 - quintic(st.t[f] / p[P_RELEASE])
        for ax in range(2):
            st.turn[f, ax] = st.turn_start[f, ax] * release
        if st.mode[f] == WATCH and p[P_STEP_UP] != 0.0 and abs(load) >= p[P_TOUCH] and not descending \
                and z >= p[P_STRIKE_MIN] and st.raise_t[f] >= st.raise_s[f] \
                and st.raise_to[f, 0] + st.raise_to[f, 1] < p[P_BOUND]:
            _strike(p, st, f, x, z)
        d = _swing(p, st, f, x, z, release)
        if st.mode[f] == WATCH:
            if touched and descending and z > p[P_MIN]:
                st.mode[f], st.held[f] = HOLD, z + d
            st.offset[f] = d
        if st.mode[f] == HOLD:
            st.offset[f] = st.held[f] - z
        st.rate[f] = 0.0
        return
    if st.swung[f] != 0.0:                            # the plan's touch-down
        st.swung[f], st.t[f], st.back[f] = 0.0, 0.0, 0.0
        if st.mode[f] == WATCH:
            st.mode[f] = SEARCH
        elif st.mode[f] == HOLD:
            st.mode[f] = CARRIED
            if abs(st.offset[f]) >= p[P_MIN]:
                st.new[f] = st.offset[f]
    if st.mode[f] == SEARCH or st.mode[f] == CARRIED:
        _tilt(p, st, f, load, share, cop, box, period)
    if st.mode[f] != SEARCH:
        return
    if touched or st.offset[f] <= -p[P_BOUND]:
        st.mode[f], st.rate[f] = CARRIED, 0.0
        if abs(st.offset[f]) >= p[P_MIN]:
            st.new[f] = st.offset[f]
        return
    if st.t[f] < p[P_DELAY]:
        return
    st.rate[f] = max(st.rate[f] - p[P_ACCEL] * period, -p[P_SPEED])
    st.offset[f] = max(st.offset[f] + st.rate[f] * period, -p[P_BOUND])


@njit(cache=True)
def _solve(a, n):
    """Gaussian elimination with partial pivoting of the n x (n + 1) augmented system ``a``, in place: the
    solution in its last column (a singular leg leaves it zero)."""
    for c in range(n):
        piv = c
        for r in range(c + 1, n):
            if abs(a[r, c]) > abs(a[piv, c]):
                piv = r
        if abs(a[piv, c]) < 1e-12:
            for r in range(n):
                a[r, n] = 0.0
            return
        if piv != c:
            for k in range(n + 1):
                a[c, k], a[piv, k] = a[piv, k], a[c, k]
        for r in range(c + 1, n):
            m = a[r, c] / a[c, c]
            for k in range(c, n + 1):
                a[r, k] -= m * a[c, k]
    for c in range(n - 1, -1, -1):
        s = a[c, n]
        for k in range(c + 1, n):
            s -= a[c, k] * a[k, n]
        a[c, n] = s / a[c, c]


@njit(cache=True)
def offsets(p, buf, phase, loads, z, x, cops, boxes, powered, period):
    """Each foot's offset d_f, pitch theta_f and roll phi_f (module docstring) from the plan's ``phase``, the
    feet's ``loads`` (N), the plan's sole heights ``z`` and x ``x`` (foot: over the other sole, m; x along the
    base's x axis), the cells' centres of
    pressure ``cops`` (foot, xy: sole frame, m) and their extents ``boxes`` (foot, BOX_*: the rear and front
    cells' x, the right and left cells' y). Off (offsets zero) unless enabled and ``powered``."""
    st, _ = _views(buf)
    on = p[P_ENABLED] != 0.0 and powered
    for f in range(FEET):
        if on:
            total = loads[0] + loads[1]
            share = loads[f] / total if total > 0.0 else 0.0
            _offset(p, st, f, phase, loads[f], share, z[f], x[f], cops[f], boxes[f], period)
        else:
            st.mode[f] = st.offset[f] = st.rate[f] = st.swung[f] = st.new[f] = st.back[f] = st.new_strike[f] = 0.0
            for ax in range(2):
                st.turn[f, ax] = st.turn_rate[f, ax] = st.outside[f, ax] = st.tilted[f, ax] = 0.0
                st.new_turn[f, ax] = 0.0


@njit(cache=True)
def _within(dq, low, high):
    """A joint's offset ``dq`` kept within the room ``low`` <= 0 <= ``high`` its soft limits leave, smoothly:
    unchanged up to SOFT_BAND of the room's end, then a tanh into it (an offset stopped at the limit at once jolted
    the trailing ankle, raised over a learned step, 5-6 deg of following error)."""
    room = high if dq > 0.0 else -low
    a = abs(dq)
    knee = max(room - SOFT_BAND, 0.0)
    if a <= knee:
        return dq
    band = room - knee
    out = knee + band * math.tanh((a - knee) / band) if band > 0.0 else 0.0
    return out if dq > 0.0 else -out


@njit(cache=True)
def _moves(st, f):
    """Whether foot f's sole leaves its plan this cycle (an offset, a turn, a hold-back)."""
    return st.offset[f] != 0.0 or st.back[f] != 0.0 or st.turn[f, 0] != 0.0 or st.turn[f, 1] != 0.0


@njit(cache=True)
def _goal(G, Tf, s, d, b, theta, phi, xc, yc):
    """G = T(b, 0, d) Tf[s] T(c) Ry(theta) Rx(phi) T(-c) (eq. 2', 3): sole s's pose at q*, moved up by ``d`` and
    along x by ``b`` (base axes) and turned by ``theta`` about its own y axis and ``phi`` about its x axis
    through the point c = (xc, yc, 0) of its plane."""
    ct, st_, cp, sp = math.cos(theta), math.sin(theta), math.cos(phi), math.sin(phi)
    # R = Ry(theta) Rx(phi) by rows; P = T(c) R T(-c): rotation R, translation c - R c
    r00, r01, r02 = ct, st_ * sp, st_ * cp
    r10, r11, r12 = 0.0, cp, -sp
    r20, r21, r22 = -st_, ct * sp, ct * cp
    tx = xc - (r00 * xc + r01 * yc)
    ty = yc - (r10 * xc + r11 * yc)
    tz = -(r20 * xc + r21 * yc)
    for i in range(3):
        a0, a1, a2 = Tf[s, i, 0], Tf[s, i, 1], Tf[s, i, 2]
        G[i, 0] = a0 * r00 + a1 * r10 + a2 * r20
        G[i, 1] = a0 * r01 + a1 * r11 + a2 * r21
        G[i, 2] = a0 * r02 + a1 * r12 + a2 * r22
        G[i, 3] = Tf[s, i, 3] + a0 * tx + a1 * ty + a2 * tz
    G[0, 3] += b
    G[2, 3] += d


@njit(cache=True)
def _sole_system(a, Tf, Jf, s, legs, f, G):
    """a = [J_f | G − x_f]: sole s's Jacobian over the leg's joints and the error of its pose Tf[s] to the goal
    G (translation; rotation as the vee of the skew part of G_R R^T, in base axes, to first order)."""
    for r in range(LEG):
        for c in range(LEG):
            a[r, c] = Jf[s, r, int(legs[f, c])]
    for i in range(3):
        a[i, LEG] = G[i, 3] - Tf[s, i, 3]
    # R0 Rᵀ − R Rᵀ0 ≈ 2 [w]x for the small turn w (base axes) from R to R0
    m01 = m12 = m20 = 0.0
    for k in range(3):
        m12 += G[1, k] * Tf[s, 2, k] - Tf[s, 1, k] * G[2, k]
        m20 += G[2, k] * Tf[s, 0, k] - Tf[s, 2, k] * G[0, k]
        m01 += G[0, k] * Tf[s, 1, k] - Tf[s, 0, k] * G[1, k]
    a[3, LEG], a[4, LEG], a[5, LEG] = -0.5 * m12, -0.5 * m20, -0.5 * m01


@njit(cache=True)
def touchdown(p, buf, phase, loads, cops, boxes, mbuf, dbuf, q_ref, soles, legs, lo, hi, powered, period, q, q_cmd,
              qd_cmd):
    """Each foot's offset d_f and turn theta_f, phi_f (:func:`offsets`) and its joints' dq_f (eq. 1 to eq. 2's goal, one
    Newton step from the linear solve: the Jacobian again at q* + dq_f) added to ``q_cmd`` and ``qd_cmd``
    (within the soft limits ``lo``/``hi``): ``phase`` the plan's support phase, ``loads`` the feet's loads (N),
    ``cops`` (foot, xy) their cells' centres of pressure and ``boxes`` (foot, BOX_*) their extents (sole frame,
    m), ``mbuf``/``dbuf`` the models and a Data rooted at the pelvis (its kinematics are this kernel's),
    ``q_ref`` the reference q*, ``soles`` (foot) the soles' frame indices, ``legs`` (foot, 6) the joints carrying
    each sole, ``q`` scratch (n)."""
    st, _ = _views(buf)
    if p[P_ENABLED] == 0.0 or not powered:
        offsets(p, buf, phase, loads, st.z_prev, st.x, cops, boxes, powered, period)
        for f in range(FEET):
            for c in range(LEG):
                st.dq[f, c] = st.dq_prev[f, c] = 0.0
        return
    d, _ = data_views(mbuf, dbuf)
    Tf, Jf = d.Tf, d.Jf
    kinematics(mbuf, dbuf, q_ref)
    z, x, G, a = st.z, st.x, st.T0, st.a
    for f in range(FEET):
        z[f] = Tf[int(soles[f]), 2, 3] - Tf[int(soles[1 - f]), 2, 3]
        x[f] = Tf[int(soles[f]), 0, 3] - Tf[int(soles[1 - f]), 0, 3]
    offsets(p, buf, phase, loads, z, x, cops, boxes, powered, period)
    moved = False
    for f in range(FEET):
        s = int(soles[f])
        on = _moves(st, f)
        moved = moved or on
        _goal(G[f], Tf, s, st.offset[f], st.back[f], st.turn[f, 0], st.turn[f, 1], st.pivot[f, 0], st.pivot[f, 1])
        _sole_system(a, Tf, Jf, s, legs, f, G[f])
        if on:
            _solve(a, LEG)
        for c in range(LEG):
            st.dq[f, c] = a[c, LEG] if on else 0.0
    if moved:                                          # the Newton step at q* + dq
        for j in range(q_ref.shape[0]):
            q[j] = q_ref[j]
        for f in range(FEET):
            for c in range(LEG):
                q[int(legs[f, c])] += st.dq[f, c]
        kinematics(mbuf, dbuf, q)
        for f in range(FEET):
            if not _moves(st, f):
                continue
            _sole_system(a, Tf, Jf, int(soles[f]), legs, f, G[f])
            _solve(a, LEG)
            for c in range(LEG):
                st.dq[f, c] += a[c, LEG]
    for f in range(FEET):
        for c in range(LEG):
            j = int(legs[f, c])
            dq = _within(st.dq[f, c], lo[j] - q_cmd[j], hi[j] - q_cmd[j])
            if q_cmd[j] > hi[j] or q_cmd[j] < lo[j]:    # the reference itself is outside: left as it is
                dq = 0.0
            qd_cmd[j] += (dq - st.dq_prev[f, c]) / period
            q_cmd[j] += dq
            st.dq_prev[f, c] = dq
