"""Feet that find the ground (Gastebois 2017, chapter 4's programme): each foot's four load cells give
its load and centre of pressure; a loaded foot complies in its two ankle axes to centre that pressure,
the stance sole lying flat gives the ground's slope, and a foot landing on an edge is reported.

Centre of pressure of foot f in its sole frame, from cells at c_k (sole frame, x forward, y left)
carrying loads F_k (N, along the sole normal):

    L = sum F_k,    p = sum F_k c_k / L                                                    (1)

Sole compliance (an admittance per ankle axis, docs/stabilizer.md "Feet that find the ground"): the
ground's wrench about the target point t (the cells' centre) is the torque m = (p - t) x (L n), n the
sole normal; about ankle joint j (its axis w_j in the sole frame, the foot moving) it is

    m_j = w_j . m = L (w_jx (p_y - t_y) - w_jy (p_x - t_x))                                 (2)

with p low-passed (time constant ``cop_tau``), and the ankle turns against it, dq_j/dt = -m_j / D, within +-``max_rate`` and |dq_j| <= ``max_offset``
(and the joint's soft limits); the offset dq_j is added to the reference the generator gives. With
the sole flat on the ground the foot cannot turn: the leg turns over it instead, towards the side
that carries too much (a pressure at the heel leans the leg forward), and the robot's CoG with it, which
moves the pressure back toward t (the ankle strategy; yielding, +m_j / D, leans the leg away and
tips the robot over: measured, a fall backwards on a 4 deg uphill floor within 2 s). In double
support the two feet and the ground close a chain: the difference between the feet's pressures is
an internal force, which centring each foot's own pressure drives without end (measured: the two
sagittal offsets diverging, +2.6 and -10 deg, then a fall). There the sagittal axes both take the
feet's summed moment (sum of L (p - t) over the feet in eq. 2: the common mode, the CoG over the
soles) and the roll axes (the ones nearer the sole's x) hold their offsets; each foot on its own in
single support. The low-pass is what keeps the loop stable: leaning the leg by q over a flat foot
moves the CoG by x = h q (h its height over the ankle) but the pressure is p = x - (h/g) x''
(Kajita et al. 2003, the cart-table model), so with k = L / D the loop q' = -k (p_f - t), p_f the
pressure low-passed with time constant T, has the characteristic polynomial

    (T - k h^2 / g) s^2 + s + k h = 0                                                         (2')

stable for T > k h^2 / g only; unfiltered (T = 0) one root is unstable whatever k (BIP 2000, L ~ 1000 N
on one sole or on both, h ~ 0.8 m, D = 1000 N m s/rad: k h^2 / g ~ 0.07 s; ``cop_tau`` 0.2 s). A foot below ``min_load`` releases its offset,
dq_j/dt = -dq_j / ``release_tau`` (same rate limit).

Ground slope by proprioception: while the stance foot lies flat (each of its cells carries at least
``flat_fraction`` of the foot's load), the world's up in the stance sole's axes, from the pelvis IMU's
specific force f seen through the stance leg (R_sole_pelvis and the pelvis origin's velocity v_rel
relative to the sole, the pelvis estimator's kinematics: stabilizer.pelvis_state eq. 1-2),

    g0 u = R_sole_pelvis f - d/dt v_rel        (taken while | |f| - g0 | < ``accept``)

is low-passed (``slope_tau``) into the ground's up; its slope in the terrain's convention, the floor's axes
R = RotY(-pitch) RotX(roll) (pitch > 0 uphill, roll > 0 rising to the left),

    pitch = atan2(u_x, sqrt(u_y^2 + u_z^2)),    roll = atan2(u_y, u_z)                      (3)

and the same up as the (alpha, beta) of a platform under the sole, R = RotX(alpha) RotY(beta)
(models.tilt.sole_gravity): alpha = atan2(u_y, sqrt(u_x^2 + u_z^2)), beta = atan2(-u_x, u_z).

Edge or step: within ``edge_window`` cycles of a foot's landing (its load rising through
``min_load``), a cell carrying less than ``edge_fraction`` of the foot's load for ``edge_cycles``
cycles in a row reports the landing once: the bit mask of those cells (bit k: the foot's k-th cell).

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
    "compliance", "min_load", "damping", "max_rate", "max_offset", "release_tau", "cop_tau", "flat_fraction", "slope_tau",
    "edge_fraction", "edge_cycles", "edge_window", "g0", "accept")])
P_COMPLIANCE, P_MIN_LOAD, P_DAMPING, P_MAX_RATE, P_MAX_OFFSET, P_RELEASE_TAU, P_COP_TAU = (
    PARAMS.offset(k) for k in ("compliance", "min_load", "damping", "max_rate", "max_offset", "release_tau", "cop_tau"))
P_FLAT, P_SLOPE_TAU, P_EDGE_FRACTION, P_EDGE_CYCLES, P_EDGE_WINDOW, P_G0, P_ACCEPT = (
    PARAMS.offset(k) for k in ("flat_fraction", "slope_tau", "edge_fraction", "edge_cycles", "edge_window", "g0",
                               "accept"))

# load, cop (sole frame), cop_f (cop low-passed: the compliance's), loaded (0/1), offset / rate (the ankles' compliance: foot, axis), up (the ground's,
# in the stance sole's axes; NaN before the first flat stance), slope (pitch, roll: eq. 3), tilt (alpha, beta),
# flat (0/1, the stance foot this cycle), landing (cycles since the foot landed, -1: outside the window),
# low (cycles in a row with a cell under edge_fraction), edge (the reported cells' mask, 0: none; cleared
# when the foot lifts), new_edge (the mask reported this cycle, else 0: the loop's event), v_prev (the last
# cycle's v_rel, NaN: none), u (this cycle's measured up, scratch), last (the last cycle's stance)
STATE = Layout("feet state", [
    Field("load", (FEET,)), Field("cop", (FEET, 2)), Field("cop_f", (FEET, 2)), Field("loaded", (FEET,)), Field("offset", (FEET, 2)),
    Field("rate", (FEET, 2)), Field("up", (3,)), Field("slope", (2,)), Field("tilt", (2,)), Field("flat", (1,)),
    Field("landing", (FEET,)), Field("low", (FEET,)), Field("edge", (FEET,)), Field("new_edge", (FEET,)),
    Field("v_prev", (3,)), Field("u", (3,)), Field("last", (1,))])
_views = STATE.kernel_views


def new_state() -> np.ndarray:
    """A fresh state: no foot loaded, no slope known (NaN), no landing under way."""
    buf = np.zeros(STATE.size())
    v = STATE.views(buf)
    v.up[:] = np.nan
    v.slope[:] = np.nan
    v.tilt[:] = np.nan
    v.landing[:] = -1.0
    v.v_prev[:] = np.nan
    v.last[0] = -1.0
    return buf


def views(buf: np.ndarray):
    """Named numpy views of a state buffer (tools, tests)."""
    return STATE.views(buf)


@njit(cache=True)
def observe(p, buf, loads, cells, stance, force, rel_R, v_rel, period):
    """Loads, CoPs (eq. 1), landings and edges of both feet from ``loads`` (left cells, then right), the
    cells' sole-frame positions ``cells`` (foot, cell, xy); the ground's slope (eq. 3) from the pelvis
    IMU's specific force ``force`` (pelvis axes; zeros: none) and the pelvis' rotation ``rel_R`` and origin
    velocity ``v_rel`` in the ``stance`` sole's frame (0, 1; -1 none) while that foot lies flat."""
    st, _ = _views(buf)
    lo_frac, n_edge, window = p[P_EDGE_FRACTION], p[P_EDGE_CYCLES], p[P_EDGE_WINDOW]
    for f in range(FEET):
        load = cx = cy = 0.0
        for c in range(CELLS):
            v = loads[CELLS * f + c]
            load += v
            cx += v * cells[f, c, 0]
            cy += v * cells[f, c, 1]
        st.new_edge[f] = 0.0
        st.load[f] = load
        loaded = load >= p[P_MIN_LOAD]
        if not loaded:
            st.loaded[f] = 0.0
            st.landing[f] = -1.0
            st.edge[f] = 0.0
            continue
        st.cop[f, 0], st.cop[f, 1] = cx / load, cy / load
        kc = period / (p[P_COP_TAU] + period)
        if st.loaded[f] == 0.0:                     # it lands: a window opens
            st.cop_f[f, 0], st.cop_f[f, 1] = st.cop[f, 0], st.cop[f, 1]
            kc = 0.0
            st.loaded[f] = 1.0
            st.landing[f] = 0.0
            st.low[f] = 0.0
        for i in range(2):
            st.cop_f[f, i] += kc * (st.cop[f, i] - st.cop_f[f, i])
        if st.landing[f] < 0.0:
            continue
        mask = 0
        for c in range(CELLS):
            if loads[CELLS * f + c] < lo_frac * load:
                mask |= 1 << c
        st.low[f] = st.low[f] + 1.0 if mask else 0.0
        if st.low[f] >= n_edge and st.edge[f] == 0.0:
            st.edge[f] = st.new_edge[f] = float(mask)
        st.landing[f] += 1.0
        if st.landing[f] > window:
            st.landing[f] = -1.0
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
    if not math.isfinite(g[0]):
        for i in range(3):
            g[i] = up[i]
    else:
        k = period / (p[P_SLOPE_TAU] + period)
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
def comply(p, buf, centre, ankles, axes, q_ref, qd_ref, lo, hi, powered, period, q_cmd, qd_cmd):
    """q_cmd = q_ref and qd_cmd = qd_ref plus the ankles' compliance (eq. 2, module docstring) of the
    feet :func:`observe` saw this cycle: ``centre`` (foot, xy) the target, ``ankles`` (foot, axis) the
    joints, ``axes`` (foot, axis, xy) their axes in the sole frame, ``lo``/``hi`` the soft limits.
    Off (offsets zero) unless enabled and ``powered``."""
    st, _ = _views(buf)
    for j in range(q_ref.shape[0]):
        q_cmd[j] = q_ref[j]
        qd_cmd[j] = qd_ref[j]
    on = p[P_COMPLIANCE] != 0.0 and powered
    vmax, dmax = p[P_MAX_RATE], p[P_MAX_OFFSET]
    both = st.loaded[0] > 0.0 and st.loaded[1] > 0.0
    mx = my = 0.0                                   # both feet's moments (L e) summed: double support's
    for f in range(FEET):
        mx += st.load[f] * (st.cop_f[f, 0] - centre[f, 0])
        my += st.load[f] * (st.cop_f[f, 1] - centre[f, 1])
    for f in range(FEET):
        if not both:
            mx = st.load[f] * (st.cop_f[f, 0] - centre[f, 0])
            my = st.load[f] * (st.cop_f[f, 1] - centre[f, 1])
        for a in range(2):
            j = int(ankles[f, a])
            old = st.offset[f, a]
            if not on:
                rate = 0.0
                new = 0.0
            else:
                if st.loaded[f] > 0.0:
                    rolls = abs(axes[f, a, 0]) > abs(axes[f, a, 1])
                    rate = 0.0 if rolls and both else -(axes[f, a, 0] * my - axes[f, a, 1] * mx) / p[P_DAMPING]
                else:
                    rate = -old / p[P_RELEASE_TAU]
                rate = min(vmax, max(-vmax, rate))
                new = min(dmax, max(-dmax, old + rate * period))
                new = min(hi[j] - q_ref[j], max(lo[j] - q_ref[j], new))
                if q_ref[j] + new > hi[j] or q_ref[j] + new < lo[j]:    # the reference itself is outside
                    new = 0.0
                rate = (new - old) / period
            st.offset[f, a] = new
            st.rate[f, a] = rate
            q_cmd[j] += new
            qd_cmd[j] += rate
