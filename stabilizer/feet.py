"""Feet that find the ground (Gastebois 2017, chapter 4's programme): each foot's four load cells give
its load and centre of pressure; a loaded foot complies in its two ankle axes to centre that pressure,
the stance sole lying flat gives the ground's slope, and a foot landing on an edge is reported.

Centre of pressure of foot f in its sole frame, from cells at c_k (sole frame, x forward, y left)
carrying loads F_k (N, along the sole normal):

    L = sum F_k,    p = sum F_k c_k / L                                                    (1)

Sole compliance (an admittance per ankle axis, docs/stabilizer.md "Feet that find the ground"): the
ground's wrench about the target point t is the torque m = (p - t) x (L n), n the sole normal; about
ankle joint j (its axis w_j in the sole frame, the foot moving) it is

    m_j = w_j . m = L (w_jx (p_y - t_y) - w_jy (p_x - t_x))                                 (2)

with p - t low-passed (time constant ``cop_tau``), and the ankle turns against it, dq_j/dt = -m_j / D,
within +-``max_rate``, its rate changing by at most ``max_accel`` per second (the rate is the drives'
velocity feed-forward too: a step in it is a torque step in their speed loops, which tipped a foot
onto its edge in 2 ms when a foot's gate opened on the walk) and |dq_j| <= ``max_offset`` (and the
joint's soft limits); the offset dq_j is
added to the reference the generator gives. The target t is the caller's, per foot and cycle: the
cells' centre standing without a plan, and while a gait plays the centre of pressure the gait plans
for that sole (models.tree.dynamics.sole_cops: the plan's ground wrench split between the soles as the
feed-forward splits it), which rolls from heel to toe; a foot complies only while the caller's gate
says so (the plan's support confirmed by the cells) and its target is known, and the caller may hold
the roll axes (``playing``: while a gait plays). With
the sole flat on the ground the foot cannot turn: the leg turns over it instead, towards the side
that carries too much (a pressure at the heel leans the leg forward), and the robot's CoG with it, which
moves the pressure back toward t (the ankle strategy; yielding, +m_j / D, leans the leg away and
tips the robot over: measured, a fall backwards on a 4 deg uphill floor within 2 s). In double
support the two feet and the ground close a chain: the difference between the feet's pressures is
an internal force, which centring each foot's own pressure drives without end (measured: the two
sagittal offsets diverging, +2.6 and -10 deg, then a fall). There (both feet loaded, whatever
their gates) the sagittal axes both take the complying feet's summed moment (sum of L (p - t) over
them in eq. 2: the common mode, the CoG over the soles) and the roll axes (the ones nearer the
sole's x) hold their offsets (a roll axis moved alone in the chain drove its speed loop's integral
against the ground: on the walk a foot rolled onto its edge within 40 ms); each foot on its own in
single support, where a loaded foot whose gate is shut holds its offset. The low-pass is what keeps the loop stable: leaning the leg by q over a flat foot
moves the CoG by x = h q (h its height over the ankle) but the pressure is p = x - (h/g) x''
(Kajita et al. 2003, the cart-table model), so with k = L / D the loop q' = -k (p_f - t), p_f the
pressure low-passed with time constant T, has the characteristic polynomial

    (T - k h^2 / g) s^2 + s + k h = 0                                                         (2')

stable for T > k h^2 / g only; unfiltered (T = 0) one root is unstable whatever k (BIP 2000, L ~ 1000 N
on one sole or on both, h ~ 0.8 m, D = 1000 N m s/rad: k h^2 / g ~ 0.07 s; ``cop_tau`` 0.2 s). A foot below ``min_load`` releases its offset,
dq_j/dt = -dq_j / ``release_tau`` (same rate limit), and so does a foot its gate shuts.

Soles that lie flat while a gait plays (``flatten``: it replaces the centring above while a gait plays,
whose target the gait's heel-to-toe roll moves on purpose; measured, the centring raised the flat walk's
drive following error 0.28 -> 2.4 deg). The law acts on the sole's flatness, never on where its pressure
is: a foot is on an edge when the edge watch below holds (the plan has the sole on the ground, it carries
at least ``edge_share`` of both feet's load and the same strict subset of its cells each carries under
``edge_fraction`` of it for ``edge_cycles`` cycles in a row, longer than the gait's heel or toe phase), and
it complies only while

    gate_f and both feet loaded and the edge watch holds for foot f                              (4)

(its pressure then lies on the loaded edge). It yields to that edge's moment about the cells' centre c,
eq. 2 with t = c and the opposite sign, so the sole turns about the loaded edge, its unloaded cells
coming down:

    dq_j/dt = + L (w_jx (p_y - c_y) - w_jy (p_x - c_x)) / D_w                                    (5)

(p - c low-passed as in eq. 2 from zero, ``walk_damping`` D_w, within +-``walk_rate``, its rate changing
by at most ``walk_accel`` per second, |dq_j| <= ``max_offset`` and the soft limits). As the unloaded cells
take ``edge_fraction`` of the load the watch breaks and the offset holds, through the rest of the
stance; a lifted foot releases it (``release_tau`` at ``walk_rate``: over the swing, before it lands). A
flat sole, whatever its pressure does, sees no correction. Double support only: there the other foot
holds the robot, while yielding alone on the ground tips the robot about that edge (measured with the
same watch in single support too: the -4 deg walk's drive following error 0.70 -> 1.00 deg, +4 deg's walk
0.76 -> 1.44 deg); and never the centring's sign, the ankle strategy (measured, a dead band on the cells'
edges leaning the leg over the sole: falls on the +4 deg and both 2 deg rolled floors).

Ground slope by proprioception: while the stance foot lies flat (each of its cells carries at least
``flat_fraction`` of the foot's load), the world's up in the stance sole's axes, from the pelvis IMU's
specific force f seen through the stance leg (R_sole_pelvis and the pelvis origin's velocity v_rel
relative to the sole, the pelvis estimator's kinematics: stabilizer.pelvis_state eq. 1-2),

    g0 u = R_sole_pelvis f - d/dt v_rel        (taken while | |f| - g0 | < ``accept``)

is averaged into the ground's up u_n, the n-th sample taken with the gain

    u_n = u_{n-1} + k_n (u - u_{n-1}),    k_n = max(dt / (``slope_tau`` + dt), 1 / n)            (3')

(renormalised): the mean of the first ``slope_tau`` of flat stance, then a low-pass of that time constant.
A single sample is a finite difference of measured velocities and carries their noise (measured on the
walk up a 4 deg floor: one cycle read 12.6 deg); seeding the low-pass with the first one held it for
as long as the flat stance lasted (the soles lay flat 0.44 s of that walk: 6.0 deg estimated, the mean
3.9). Its slope in the terrain's convention, the floor's axes R = RotY(-pitch) RotX(roll) (pitch > 0
uphill, roll > 0 rising to the left),

    pitch = atan2(u_x, sqrt(u_y^2 + u_z^2)),    roll = atan2(u_y, u_z)                      (3)

and the same up as the (alpha, beta) of a platform under the sole, R = RotX(alpha) RotY(beta)
(models.tilt.sole_gravity): alpha = atan2(u_y, sqrt(u_x^2 + u_z^2)), beta = atan2(-u_x, u_z).

Edge or step: while the gait plans a foot's sole flat (the caller's ``planned``: a gait plays, which
keeps both soles parallel to the ground it assumed, the swing foot's too), the foot carries at least ``edge_share`` of both feet's load and
the same cells each carry less than ``edge_fraction`` of it (its load on a strict subset of its
cells: a pair along one edge, or one corner) for ``edge_cycles`` cycles in a row, longer than a heel
or toe phase of the gait's roll lasts, the foot is on an edge or a step: reported once per stance, the
bit mask of those cells (bit k: the foot's k-th cell), cleared as the foot lifts or the plan ends.
Feet at power-on (no plan) and heel-first landings, whose heel phase is shorter, report nothing.

State and parameters are flat buffers declared once (:data:`STATE`, :data:`PARAMS`); kernels
allocation-free, ``@njit(cache=True)``.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from models.common.layout import Field, Layout

CELLS = 4
FEET = 2
PARAMS = Layout("feet params", [Field(name) for name in (
    "compliance", "min_load", "damping", "max_rate", "max_accel", "max_offset", "release_tau", "cop_tau", "flat_fraction",
    "slope_tau",
    "edge_fraction", "edge_share", "edge_cycles", "g0", "accept",
    "flatten", "walk_damping", "walk_rate", "walk_accel")])
P_COMPLIANCE, P_MIN_LOAD, P_DAMPING, P_MAX_RATE, P_MAX_ACCEL, P_MAX_OFFSET, P_RELEASE_TAU, P_COP_TAU = (
    PARAMS.offset(k) for k in ("compliance", "min_load", "damping", "max_rate", "max_accel", "max_offset", "release_tau",
                               "cop_tau"))
P_FLAT, P_SLOPE_TAU, P_EDGE_FRACTION, P_EDGE_SHARE, P_EDGE_CYCLES, P_G0, P_ACCEPT = (
    PARAMS.offset(k) for k in ("flat_fraction", "slope_tau", "edge_fraction", "edge_share", "edge_cycles", "g0",
                               "accept"))
P_FLATTEN, P_WALK_DAMPING, P_WALK_RATE, P_WALK_ACCEL = (
    PARAMS.offset(k) for k in ("flatten", "walk_damping", "walk_rate", "walk_accel"))

# load, cop (sole frame), loaded (0/1), target (the compliance's t, sole frame; NaN: none), error (p - t
# low-passed), active (0/1: the foot complied this cycle), offset / rate (the ankles' compliance: foot, axis),
# up (the ground's, in the stance sole's axes; NaN before the first flat stance), slope (pitch, roll: eq. 3),
# tilt (alpha, beta), flat (0/1, the stance foot this cycle), low (cycles in a row on the cells ``held``),
# held (the mask of the cells unloaded all that time), edge (the reported cells' mask, 0: none; cleared
# when the foot lifts), new_edge (the mask reported this cycle, else 0: the loop's event), v_prev (the last
# cycle's v_rel, NaN: none), u (this cycle's measured up, scratch), last (the last cycle's stance), taken
# (the flat-stance samples the slope has taken), centre (foot, xy: the cells' centre, sole frame)
STATE = Layout("feet state", [
    Field("load", (FEET,)), Field("cop", (FEET, 2)), Field("loaded", (FEET,)), Field("target", (FEET, 2)),
    Field("error", (FEET, 2)), Field("active", (FEET,)), Field("offset", (FEET, 2)), Field("rate", (FEET, 2)),
    Field("up", (3,)), Field("slope", (2,)), Field("tilt", (2,)), Field("flat", (1,)), Field("low", (FEET,)),
    Field("held", (FEET,)), Field("edge", (FEET,)), Field("new_edge", (FEET,)), Field("v_prev", (3,)),
    Field("u", (3,)), Field("last", (1,)), Field("taken", (1,)), Field("centre", (FEET, 2))])
_views = STATE.kernel_views


def new_state() -> np.ndarray:
    """A fresh state: no foot loaded, no target, no slope known (NaN)."""
    buf = np.zeros(STATE.size())
    v = STATE.views(buf)
    v.target[:] = np.nan
    v.up[:] = np.nan
    v.slope[:] = np.nan
    v.tilt[:] = np.nan
    v.v_prev[:] = np.nan
    v.last[0] = -1.0
    return buf


def views(buf: np.ndarray):
    """Named numpy views of a state buffer (tools, tests)."""
    return STATE.views(buf)


@njit(cache=True)
def observe(p, buf, loads, cells, planned, stance, force, rel_R, v_rel, period):
    """Loads, CoPs (eq. 1) and edges of both feet from ``loads`` (left cells, then right), the cells'
    sole-frame positions ``cells`` (foot, cell, xy) and ``planned`` (foot: 1 while the gait plans its
    sole flat on the ground, else 0); the ground's slope (eq. 3) from the pelvis IMU's specific force
    ``force`` (pelvis axes; zeros: none) and the pelvis' rotation ``rel_R`` and origin velocity ``v_rel``
    in the ``stance`` sole's frame (0, 1; -1 none) while that foot lies flat."""
    st, _ = _views(buf)
    lo_frac, n_edge = p[P_EDGE_FRACTION], p[P_EDGE_CYCLES]
    total = 0.0
    for k in range(FEET * CELLS):
        total += loads[k]
    for f in range(FEET):
        load = cx = cy = 0.0
        for c in range(CELLS):
            v = loads[CELLS * f + c]
            load += v
            cx += v * cells[f, c, 0]
            cy += v * cells[f, c, 1]
        st.new_edge[f] = 0.0
        st.load[f] = load
        st.loaded[f] = 1.0 if load >= p[P_MIN_LOAD] else 0.0
        if st.loaded[f] > 0.0:
            st.cop[f, 0], st.cop[f, 1] = cx / load, cy / load
        st.centre[f, 0] = st.centre[f, 1] = 0.0
        for c in range(CELLS):
            st.centre[f, 0] += cells[f, c, 0] / CELLS
            st.centre[f, 1] += cells[f, c, 1] / CELLS
        if st.loaded[f] == 0.0 or planned[f] == 0.0:     # lifted, or not on the plan's ground: a new stance
            st.low[f] = st.held[f] = st.edge[f] = 0.0
            continue
        mask = 0
        for c in range(CELLS):
            if loads[CELLS * f + c] < lo_frac * load:
                mask |= 1 << c
        if mask == 0 or load < p[P_EDGE_SHARE] * total:
            st.low[f] = st.held[f] = 0.0
            continue
        held = mask & int(st.held[f]) if st.low[f] > 0.0 else 0
        if held == 0:                                   # other cells now: a roll goes on, it starts over
            st.low[f], st.held[f] = 1.0, float(mask)
        else:
            st.low[f] += 1.0
            st.held[f] = float(held)
        if st.low[f] >= n_edge and st.edge[f] == 0.0:
            st.edge[f] = st.new_edge[f] = st.held[f]
    s = int(stance)
    up, vp = st.u, st.v_prev
    known = vp[0] == vp[0] and s == int(st.last[0])         # v_rel of the same sole last cycle
    st.last[0] = float(s)
    fn = math.sqrt(force[0] * force[0] + force[1] * force[1] + force[2] * force[2])
    g0 = p[P_G0]
    for i in range(3):
        a = (v_rel[i] - vp[i]) / period if known else 0.0
        up[i] = (rel_R[i, 0] * force[0] + rel_R[i, 1] * force[1] + rel_R[i, 2] * force[2] - a) / g0
        vp[i] = v_rel[i] if s >= 0 else np.nan
    flat = s >= 0 and known and st.loaded[s] > 0.0 and abs(fn - g0) < p[P_ACCEPT]
    if flat:
        for c in range(CELLS):
            if loads[CELLS * s + c] < p[P_FLAT] * st.load[s]:
                flat = False
    st.flat[0] = 1.0 if flat else 0.0
    if not flat:
        return
    g = st.up
    st.taken[0] += 1.0
    if st.taken[0] == 1.0:
        for i in range(3):
            g[i] = up[i]
    else:                                           # eq. 3': the mean of the first tau's samples, then the low-pass
        k = max(period / (p[P_SLOPE_TAU] + period), 1.0 / st.taken[0])
        n2 = 0.0
        for i in range(3):
            g[i] += k * (up[i] - g[i])
            n2 += g[i] * g[i]
        n2 = math.sqrt(n2)
        for i in range(3):
            g[i] /= n2
    st.slope[0] = math.atan2(g[0], math.sqrt(g[1] * g[1] + g[2] * g[2]))
    st.slope[1] = math.atan2(g[1], g[2])
    st.tilt[0] = math.atan2(g[1], math.sqrt(g[0] * g[0] + g[2] * g[2]))
    st.tilt[1] = math.atan2(-g[0], g[2])


@njit(cache=True)
def comply(p, buf, target, gate, playing, ankles, axes, q_ref, qd_ref, lo, hi, powered, period, q_cmd, qd_cmd):
    """q_cmd = q_ref and qd_cmd = qd_ref plus the ankles' compliance of the feet :func:`observe` saw this
    cycle: ``target`` (foot, xy) the centre of pressure each should have (NaN: none), ``gate`` (foot: 1 it
    may comply, 0 its offset goes), ``playing`` (1 while a gait plays: the centring law's roll axes hold
    their offsets, in single support too, and with ``flatten`` on the sole-flattening law replaces it:
    eq. 4-5, a gated foot on an edge in double support complies, ``target`` unused), ``ankles`` (foot, axis) the
    joints, ``axes`` (foot, axis, xy) their axes in the sole frame, ``lo``/``hi`` the soft limits. Off
    (offsets released, at once unless ``powered``) unless a law is enabled."""
    st, _ = _views(buf)
    for j in range(q_ref.shape[0]):
        q_cmd[j] = q_ref[j]
        qd_cmd[j] = qd_ref[j]
    flat = playing != 0.0 and p[P_FLATTEN] != 0.0      # the sole-flattening law owns the ankles
    centre = p[P_COMPLIANCE] != 0.0 and not flat
    if flat:
        vmax, dv, damping = p[P_WALK_RATE], p[P_WALK_ACCEL] * period, p[P_WALK_DAMPING]
    else:
        vmax, dv, damping = p[P_MAX_RATE], p[P_MAX_ACCEL] * period, p[P_DAMPING]
    dmax = p[P_MAX_OFFSET]
    kc = period / (p[P_COP_TAU] + period)
    both = st.loaded[0] > 0.0 and st.loaded[1] > 0.0     # the closed chain: the common mode only
    for f in range(FEET):
        st.target[f, 0], st.target[f, 1] = target[f, 0], target[f, 1]
        if flat:                                    # eq. 4: on an edge (observe's, still held), both feet down
            act = gate[f] != 0.0 and both and st.low[f] >= p[P_EDGE_CYCLES]
        else:
            act = gate[f] != 0.0 and st.loaded[f] > 0.0 and target[f, 0] == target[f, 0] and \
                target[f, 1] == target[f, 1]
        for i in range(2):
            e = st.cop[f, i] - st.centre[f, i] if flat else st.cop[f, i] - target[f, i]
            if not act:                             # (and from zero as it starts: a heel-first landing's
                st.error[f, i] = 0.0                # pressure at the heel is a transient of the plan's roll)
            else:
                st.error[f, i] += kc * (e - st.error[f, i])
        st.active[f] = 1.0 if act else 0.0
    mx = my = 0.0                                   # the complying feet's moments (L e) summed: double support's
    for f in range(FEET):
        mx += st.load[f] * st.error[f, 0]
        my += st.load[f] * st.error[f, 1]
    for f in range(FEET):
        if flat or not both:
            mx = st.load[f] * st.error[f, 0]
            my = st.load[f] * st.error[f, 1]
        for a in range(2):
            j = int(ankles[f, a])
            old = st.offset[f, a]
            if not powered:
                rate = 0.0
                new = 0.0
            else:
                roll = abs(axes[f, a, 0]) > abs(axes[f, a, 1])
                if st.loaded[f] == 0.0 or not (flat or centre):     # lifted, or no law: the offset goes
                    rate = -old / p[P_RELEASE_TAU]
                elif not flat and (both or playing != 0.0) and roll:    # a roll axis held
                    rate = 0.0
                elif flat and st.active[f] > 0.0:      # eq. 5: the sole yields to its edge's moment
                    rate = (axes[f, a, 0] * my - axes[f, a, 1] * mx) / damping
                elif (not flat and both) or st.active[f] > 0.0:
                    rate = -(axes[f, a, 0] * my - axes[f, a, 1] * mx) / damping
                else:                               # loaded, its gate shut (flattening: both feet down): it holds
                    rate = 0.0
                rate = min(vmax, max(-vmax, min(st.rate[f, a] + dv, max(st.rate[f, a] - dv, rate))))
                new = min(dmax, max(-dmax, old + rate * period))
                new = min(hi[j] - q_ref[j], max(lo[j] - q_ref[j], new))
                if q_ref[j] + new > hi[j] or q_ref[j] + new < lo[j]:    # the reference itself is outside
                    new = 0.0
                rate = (new - old) / period
            st.offset[f, a] = new
            st.rate[f, a] = rate
            q_cmd[j] += new
            qd_cmd[j] += rate
