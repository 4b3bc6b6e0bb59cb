"""The electrostatic-field stabilizer of the whole robot: several CoGs, one coherent
joint motion (the step beyond Gastebois 2017 §2.7; formulation in docs/multi_cog.md).

Like the bench stabilizer (:mod:`stabilizer.stabilizer`) a cycle is one Numba call over
flat float64 arrays, ``step(mbuf, dbuf, params, state, inputs, out)``, where mbuf/dbuf
are a kinematic tree's model and a Data of its own (:mod:`models.tree.model`), holding the
virtual robot's kinematics after the call. Nothing is allocated. One cycle:

1. support: LEFT / RIGHT / DOUBLE from the input phase or from the feet's force sensors
   (:mod:`stabilizer.contact`: thresholds with hysteresis and a dwell, implausible loads
   refused, a sensed support other than the input phase flagged); the model is rooted at the
   stance sole (the left or right one, configurable, in double support);
2. apparent up u in the stance sole's axes: platform (alpha, beta) with an optional
   horizontal acceleration, or a specific force measured in the pelvis IMU's frame
   (eq. 45-51 generalised: the world frame is the apparent gravity's, x_g up);
3. support polygon: convex hull of the sole outlines of the feet in contact (phase or
   debounced sensed contact alike), projected along u; walls on its edges (eq. 69-71);
4. virtual robot 1, the whole robot's CoG: wall and attractor fields (eq. 72-78,
   :mod:`stabilizer.fields`), admittance -> horizontal CoG velocity;
   virtual robot 2, the trunk's CoG over the pelvis: its own walls (a box around the
   pelvis) and attractor, its own admittance -> horizontal velocity relative to the pelvis;
5. task hierarchy (:mod:`stabilizer.task_hierarchy`): double support: the other sole
   fixed (closed chain) > CoG > trunk > posture; single support: CoG > the lifted
   foot's pose > trunk > posture; joints leaving their limits are locked and the
   hierarchy re-solved; rates scaled into the velocity limits and integrated;
6. push strategies (:mod:`stabilizer.push_recovery`, with a ``push:`` section): the measured
   CoG's capture point from the joint velocities; engaged by a push (a fast change of the CoG's
   velocity, never while a gait plays: ``push_gate``), its ankle strategy adds to the CoG task's
   velocity, its hip strategy to the trunk task's, a capture point out of reach is flagged.

Every status that is not OK is a flag with a reaction for the loop (FLAG_REACTIONS).
"""
from __future__ import annotations

import math
from dataclasses import asdict
from pathlib import Path

import numpy as np
from numba import njit
from numpy.typing import ArrayLike

from models.common.support import DOUBLE, LEFT, RIGHT, SOLES
from models.common.layout import Field, Layout
from models.tree.model import TreeData, data_layout
from models.tree.dynamics import kinematics, set_root
from models.gait.plan import quintic
from models.tree.robot import TreeRobot

from stabilizer.fields import attractor_force, wall_forces
from stabilizer.push_recovery import (ANKLE, GATE, H_DIR, H_X, IDLE, PELVIS, PUSH, R_FOOT, R_LIFTING, R_PHASE, R_ROOT,
                                      R_START, R_T, R_TARGET, R_TIP, RECOVERY, SETTLE, SPIN, STEP, SWING,
                                      U_OBSERVER_RATE, U_STEP_MARGIN, U_STEP_TIME, U_TIP_STEP, V_GYRO, V_ON, V_R,
                                      V_RATE, V_VEL, advance_step, capture_point, gyro_capture_point, hip_spin,
                                      load_shift, lowest_vertex, observe_lipm, partway, plan_step, push_gate,
                                      push_response, roll_grade, roll_trunk, step_due, swing_pose, tilt_pose, tip_aim,
                                      tip_follow, tip_shift, touchdown, unloaded_sole)
from stabilizer.contact import CELLS, CONTACT_STATE, LOADS_OK, debounced_contact, loads_status
from stabilizer.ground import MAX_TILT, TILT_IMU
from stabilizer.stabilizer import engage_ramp, reject
from models.polygon import convex_hull, polygon_centroid
from stabilizer.shell import StabilizerShell
from stabilizer.task_hierarchy import posture_level, solve_level, start_basis
from stabilizer.virtual_robot import admittance_velocity, advance, scale_to_velocity_limits
from stabilizer.walls import compute_walls, signed_distances
from stabilizer.whole_body_config import VirtualRobotConfig, WholeBodyConfig, load_config, robot_error

# step() status
OK = 0
NOT_RESET = 1          # reset(q_measured) was never called
REJECTED_INPUT = 2     # non-finite input, unknown support phase, impossible tilt
NUMERIC_FAILURE = 3    # an SPD solve failed (q_ref held)
NO_SUPPORT = 4         # no foot in contact, or the contact points span no polygon
STATUS_NAMES = ("ok", "not_reset", "rejected_input", "numeric_failure", "no_support")

FLAG_NAMES = ("input_rejected", "no_support", "force_saturated", "speed_saturated",
              "joint_speed_saturated", "near_singular", "at_joint_limit", "cog_outside",
              "measured_cog_outside", "trunk_outside", "constraint_violated", "loads_implausible",
              "support_disagrees", "ankle_strategy", "hip_strategy", "step_needed", "recovery_step")
(F_REJECTED, F_NO_SUPPORT, F_FORCE_SAT, F_SPEED_SAT, F_JOINT_SPEED_SAT, F_SINGULAR, F_LIMIT,
 F_OUTSIDE, F_MEASURED_OUTSIDE, F_TRUNK_OUTSIDE, F_CONSTRAINT, F_LOADS, F_DISAGREE, F_ANKLE, F_HIP,
 F_STEP, F_RECOVERY) = range(len(FLAG_NAMES))
NFLAGS = len(FLAG_NAMES)
# the loop's reaction to each flag (docs/multi_cog.md, "Statuses"): "hold" = keep q_ref at rest,
# event, HOLD (STABILIZER_FAILED) after the configured count; "warn" = event and telemetry, keep stabilizing
FLAG_REACTIONS = {"input_rejected": "hold", "no_support": "hold", "force_saturated": "warn",
                  "speed_saturated": "warn", "joint_speed_saturated": "warn", "near_singular": "warn",
                  "at_joint_limit": "warn", "cog_outside": "warn", "measured_cog_outside": "warn",
                  "trunk_outside": "warn", "constraint_violated": "hold", "loads_implausible": "hold",
                  "support_disagrees": "warn", "ankle_strategy": "warn", "hip_strategy": "warn",
                  "step_needed": "warn", "recovery_step": "warn"}

CONTACT_PHASE = 0      # the support phase comes with the inputs (the gait's)
CONTACT_SENSORS = 1    # from the feet's force sensors
MAX_OUTLINE = 8        # vertices per sole outline
MAX_SENSORS = CELLS    # force sensors per foot (the loads' layout: stabilizer.contact)
MAX_POINTS = 2 * MAX_OUTLINE
# m²: a hull vertex whose turn spans less (twice the triangle, ~0.05 mm off a 0.2 m edge) is no corner: the
# two soles' front or back edges, collinear up to rounding, make one wall, not two of half the reach
HULL_TOL = 1e-5
TASK_ROWS = 10         # rows 0-5 the other sole, 6-7 the CoG, 8-9 the trunk's CoG
SIG_FEET, SIG_COG, SIG_TRUNK = range(3)

# params: the scalars, a field block (one virtual robot's fields and admittance) for the CoG and
# one for the trunk, the push block (stabilizer.push_recovery.PUSH), then qmin, qmax, vmax, W (joint weights) [n]; outline[foot, MAX_OUTLINE, 2]
# (sole frame x, y; foot 0 left, 1 right); gains_cog[MAX_POINTS], gains_trunk[4] (wall gains)
_P_SCALARS = ("n", "dt", "g0", "tilt_source", "use_acc", "contact", "min_load",
              "root_l", "root_r", "double_stance", "frame_l", "frame_r", "frame_pelvis", "frame_imu",
              "group_trunk", "nv_l", "nv_r", "feet_k", "close_tol", "close_tol_rot", "lmin", "lmax",
              "sigma", "margin", "post_k", "trunk_hx", "trunk_hy", "release_load", "max_load", "dwell")
_B_SCALARS = ("wlaw", "wr", "wshape", "wc", "aon", "alaw", "ak", "ar", "ashape", "ac",
              "adm_m", "adm_d", "adm_vmax")
FIELD_BLOCK = Layout("field block", list(map(Field, _B_SCALARS)))
B_WLAW = FIELD_BLOCK.offset("wlaw")
B_WR = FIELD_BLOCK.offset("wr")
B_WSHAPE = FIELD_BLOCK.offset("wshape")
B_WC = FIELD_BLOCK.offset("wc")
B_AON = FIELD_BLOCK.offset("aon")
B_ALAW = FIELD_BLOCK.offset("alaw")
B_AK = FIELD_BLOCK.offset("ak")
B_AR = FIELD_BLOCK.offset("ar")
B_ASHAPE = FIELD_BLOCK.offset("ashape")
B_AC = FIELD_BLOCK.offset("ac")
B_ADM_M = FIELD_BLOCK.offset("adm_m")
B_ADM_D = FIELD_BLOCK.offset("adm_d")
B_ADM_VMAX = FIELD_BLOCK.offset("adm_vmax")
BLOCK = FIELD_BLOCK.size()
PARAMS = Layout("whole body params", [
    *map(Field, _P_SCALARS), *(Field(f"{robot}_{b}") for robot in ("cog", "trunk") for b in _B_SCALARS),
    *(Field(f"push_{f.name}") for f in PUSH.fields),
    Field("qmin", ("n",)), Field("qmax", ("n",)), Field("vmax", ("n",)), Field("W", ("n",)),
    Field("outline", (2, MAX_OUTLINE, 2)), Field("gains_cog", (MAX_POINTS,)), Field("gains_trunk", (4,)),
    Field("cells", (2, MAX_SENSORS))],
    sizes=("n",))
P_N = PARAMS.offset("n")
P_DT = PARAMS.offset("dt")
P_G0 = PARAMS.offset("g0")
P_TILT_SOURCE = PARAMS.offset("tilt_source")
P_USE_ACC = PARAMS.offset("use_acc")
P_CONTACT = PARAMS.offset("contact")
P_MIN_LOAD = PARAMS.offset("min_load")
P_ROOT_L = PARAMS.offset("root_l")
P_ROOT_R = PARAMS.offset("root_r")
P_DOUBLE_STANCE = PARAMS.offset("double_stance")
P_FRAME_L = PARAMS.offset("frame_l")
P_FRAME_R = PARAMS.offset("frame_r")
P_FRAME_PELVIS = PARAMS.offset("frame_pelvis")
P_FRAME_IMU = PARAMS.offset("frame_imu")
P_GROUP_TRUNK = PARAMS.offset("group_trunk")
P_NV_L = PARAMS.offset("nv_l")
P_NV_R = PARAMS.offset("nv_r")
P_FEET_K = PARAMS.offset("feet_k")
P_CLOSE_TOL = PARAMS.offset("close_tol")
P_CLOSE_TOL_ROT = PARAMS.offset("close_tol_rot")
P_LMIN = PARAMS.offset("lmin")
P_LMAX = PARAMS.offset("lmax")
P_SIGMA = PARAMS.offset("sigma")
P_MARGIN = PARAMS.offset("margin")
P_POST_K = PARAMS.offset("post_k")
P_TRUNK_HX = PARAMS.offset("trunk_hx")
P_TRUNK_HY = PARAMS.offset("trunk_hy")
P_RELEASE_LOAD = PARAMS.offset("release_load")
P_MAX_LOAD = PARAMS.offset("max_load")
P_DWELL = PARAMS.offset("dwell")
P_COG = PARAMS.offset(f"cog_{_B_SCALARS[0]}")       # each robot's field block
P_TRUNK = PARAMS.offset(f"trunk_{_B_SCALARS[0]}")
P_PUSH = PARAMS.offset(f"push_{PUSH.fields[0].name}")   # stabilizer.push_recovery's block
P_PUSH_END = P_PUSH + PUSH.size()
P_SCALARS = PARAMS.offset("qmin")
# state: the scalars (contact: stabilizer.contact's CONTACT_STATE), the virtual robot q, the two
# admittance velocities, the posture target, the other sole's held pose, the apparent-gravity axes
# Rws (rows u, e1, e2 in the stance sole's axes) and the cycle's scratch
STATE = Layout("whole body state", [
    Field("reset"), Field("engaged"), Field("support"), Field("tracking"),
    *(Field(f"contact{k}") for k in range(CONTACT_STATE)),
    Field("q", ("n",)), Field("q_gait", ("n",)), Field("qd_gait", ("n",)), Field("ff", (TASK_ROWS,)),
    Field("cog_plan", (3,)), Field("trunk_plan", (3,)), Field("fbias", (2, 3)), Field("Rflat", (3, 3)),
    Field("pforces", (MAX_POINTS + 1, 3)), Field("v_cog", (3,)), Field("v_trunk", (3,)), Field("qpost", ("n",)),
    Field("hold", (4, 4)), Field("Rws", (3, 3)), Field("locked", ("n",)), Field("qd0", ("n",)),
    Field("Z", ("n", "n")), Field("Jt", (TASK_ROWS, "n")), Field("xd", (TASK_ROWS,)), Field("Jz", (6, "n")),
    Field("M", (6, 6)), Field("work", (6, 6)), Field("e", (6,)), Field("hv", ("n",)),
    Field("pts", (MAX_POINTS, 2)), Field("srt", (MAX_POINTS, 2)), Field("hull", (2 * MAX_POINTS + 1, 2)),
    Field("K", (3, 3)), Field("C", (3, 3)), Field("A3", (3, 3)), Field("vec", (4, 3)), Field("tpoly", (4, 2)),
    Field("twalls", (4, 3)), Field("tmarg", (4,)), Field("tforces", (5, 3)), Field("dm", (MAX_POINTS,)),
    Field("cog_observer", (2, 2)), Field("recovery", (RECOVERY.size(),)), Field("centres", (2, 2)),
    Field("swing_velocity", (3,)), Field("push_gate", (GATE.size(),)), Field("hip_spin", (SPIN.size(),)),
    Field("tip_aim", (2,))],
    sizes=("n",))
S_RESET = STATE.offset("reset")
S_ENGAGED = STATE.offset("engaged")
S_SUPPORT = STATE.offset("support")
S_TRACKING = STATE.offset("tracking")
S_CONTACT = STATE.offset("contact0")
S_SCALARS = STATE.offset("q")
# out: the scalars (sigma_*: per task, SIG_*), then q_ref, qd_ref [n]; cog (world: x_g up, then
# the horizontal e1 forward, e2 left), cog_velocity, forces[MAX_POINTS + 1, 3] (walls in hull-edge
# order, then the attractor), total_force, trunk_force [3]; margins[MAX_POINTS]; flags[NFLAGS];
# polygon[MAX_POINTS, 2] (e1, e2) and walls[MAX_POINTS, 3] (the first O_NHULL entries are valid);
# up[3] (apparent up in the stance sole's axes); capture_point[2] (e1, e2), strategy[1] and
# push_velocity[4] (CoG e1, e2, trunk e1, e2) of stabilizer.push_recovery; recovery_step[3]; tip_point[2]
# (e1, e2: the capture point with the pelvis estimate's gyro, push_recovery eq. P2'; NaN without one)
OUT = Layout("whole body out", [
    Field("min_margin"), Field("measured_margin"), Field("trunk_margin"), Field("tilt"), Field("support"),
    Field("nhull"), Field("close_pos"), Field("close_rot"), Field("sigma_feet"), Field("sigma_cog"),
    Field("sigma_trunk"), Field("omega"), Field("capture_margin"), Field("q_ref", ("n",)), Field("qd_ref", ("n",)), Field("cog", (3,)),
    Field("cog_velocity", (3,)), Field("forces", (MAX_POINTS + 1, 3)), Field("total_force", (3,)),
    Field("trunk_force", (3,)), Field("margins", (MAX_POINTS,)), Field("flags", (NFLAGS,)),
    Field("polygon", (MAX_POINTS, 2)), Field("walls", (MAX_POINTS, 3)), Field("up", (3,)),
    Field("capture_point", (2,)), Field("strategy", (1,)), Field("push_velocity", (4,)),
    Field("recovery_step", (3,)), Field("tip_point", (2,))], sizes=("n",))
O_MIN_MARGIN = OUT.offset("min_margin")
O_MEASURED_MARGIN = OUT.offset("measured_margin")
O_TRUNK_MARGIN = OUT.offset("trunk_margin")
O_TILT = OUT.offset("tilt")
O_SUPPORT = OUT.offset("support")
O_NHULL = OUT.offset("nhull")
O_CLOSE_POS = OUT.offset("close_pos")
O_CLOSE_ROT = OUT.offset("close_rot")
O_SIGMA = OUT.offset("sigma_feet")
O_OMEGA = OUT.offset("omega")
O_CAPTURE_MARGIN = OUT.offset("capture_margin")
O_SCALARS = OUT.offset("q_ref")
# inputs: q_measured[n], the support phase, tilt[3], acceleration[2], loads[2 * MAX_SENSORS],
# qd_measured[n] and the pelvis estimate (stabilizer.push_recovery.PELVIS): the push strategies' CoG velocity
INPUTS = Layout("whole body inputs", [
    Field("q", ("n",)), Field("support", (1,)), Field("tilt", (3,)), Field("acc", (2,)),
    Field("loads", (2 * MAX_SENSORS,)), Field("qd", ("n",)), Field("pelvis", (PELVIS.size(),))], sizes=("n",))
_param_views, _state_views, _out_views = PARAMS.kernel_views, STATE.kernel_views, OUT.kernel_views
_input_views = INPUTS.kernel_views


@njit(cache=True)
def param_layout(p):
    """Named views of a params buffer (:data:`PARAMS`) and its size."""
    return _param_views(p, int(p[P_N]))


@njit(cache=True)
def state_layout(p, s):
    """Named views of a state buffer (:data:`STATE`) and its size."""
    return _state_views(s, int(p[P_N]))


@njit(cache=True)
def out_layout(p, out):
    """Named views of an out buffer (:data:`OUT`) and its size."""
    return _out_views(out, int(p[P_N]))


@njit(cache=True)
def input_layout(inp, n):
    """Named views of an inputs buffer (:data:`INPUTS`) and its size."""
    return _input_views(inp, n)


def inputs_size(n: int) -> int:
    return INPUTS.size(n=n)


@njit(cache=True)
def reset(p, s, q_measured, out):
    """Bumpless start: the virtual robot at the measured posture, at rest; posture
    target = that posture; the other sole's pose is captured at the first step."""
    n = int(p[P_N])
    sv, _ = state_layout(p, s)
    ov, _ = out_layout(p, out)
    q, v_cog, v_trunk, qpost = sv.q, sv.v_cog, sv.v_trunk, sv.qpost
    q_ref, qd_ref, vel, flags = ov.q_ref, ov.qd_ref, ov.cog_velocity, ov.flags
    for i in range(n):
        q[i] = q_measured[i]
        qpost[i] = q_measured[i]
        q_ref[i] = q_measured[i]
        qd_ref[i] = 0.0
    for a in range(3):
        v_cog[a] = v_trunk[a] = vel[a] = 0.0
    for f in range(NFLAGS):
        flags[f] = 0.0
    s[S_ENGAGED] = 0.0
    s[S_TRACKING] = 0.0
    s[S_SUPPORT] = -1.0
    s[S_CONTACT] = math.nan
    sv.cog_observer[:, :] = math.nan
    sv.recovery[:] = 0.0
    sv.push_gate[:] = 0.0
    sv.hip_spin[:] = 0.0
    ov.recovery_step[:] = math.nan
    s[S_RESET] = 1.0


@njit(cache=True)
def set_gait(p, s, q_gait, qd_gait):
    """The gait's posture q* and rate q̇* for the next step, which then tracks them: the other sole
    follows the gait's, the CoG's and the trunk's attractors sit on the gait's, the tasks' rates
    and the posture's are fed forward (docs/walking.md, "Stabilized walking"). :func:`reset` ends it."""
    sv, _ = state_layout(p, s)
    for i in range(int(p[P_N])):
        sv.q_gait[i] = q_gait[i]
        sv.qd_gait[i] = qd_gait[i]
        sv.qpost[i] = q_gait[i]
    s[S_TRACKING] = 1.0


@njit(cache=True)
def input_phase(phase):
    """The input support phase if it is LEFT, RIGHT or DOUBLE, else -1."""
    k = int(phase)
    return k if (k == phase and (k == LEFT or k == RIGHT or k == DOUBLE)) else -1


@njit(cache=True)
def support_phase(p, phase, loads, cs):
    """LEFT, RIGHT or DOUBLE from the input phase (CONTACT_PHASE) or from the feet's
    loads (CONTACT_SENSORS: :func:`stabilizer.contact.debounced_contact`, min_load with
    hysteresis down to release_load, held for the dwell; ``cs`` its state); -1: no support."""
    if p[P_CONTACT] == CONTACT_PHASE:
        return input_phase(phase)
    return debounced_contact(loads, p[P_MIN_LOAD], p[P_RELEASE_LOAD], p[P_DWELL], cs)


@njit(cache=True)
def apparent_up(p, tilt, acc, Tf, u):
    """Apparent up (unit) in the stance sole's axes, into u. Platform: the sole's axes
    in the world are R = RotX(alpha) RotY(beta) (roll about the sole's x, then pitch
    about its y) and u = R^T (a_x, a_y, g0) / |.| (a = 0 without use_acceleration: the
    equivalence principle of thesis §2.5.4). IMU: u = R_sole->imu f / |f|, f the
    specific force in the IMU frame's axes. Returns False for a non-finite or zero
    vector or a tilt beyond MAX_TILT (the foot is not standing on the ground)."""
    if p[P_TILT_SOURCE] == TILT_IMU:
        f = int(p[P_FRAME_IMU])
        for r in range(3):
            u[r] = Tf[f, r, 0] * tilt[0] + Tf[f, r, 1] * tilt[1] + Tf[f, r, 2] * tilt[2]
    else:
        al, be = tilt[0], tilt[1]
        if not (math.isfinite(al) and math.isfinite(be)) or abs(al) > MAX_TILT or abs(be) > MAX_TILT:
            return False
        ca, sa, cb, sb = math.cos(al), math.sin(al), math.cos(be), math.sin(be)
        ax, ay = (acc[0], acc[1]) if p[P_USE_ACC] != 0.0 else (0.0, 0.0)
        w0, w1, w2 = ax, ay, p[P_G0]
        u[0] = cb * w0 + sa * sb * w1 - ca * sb * w2        # R^T w, R = RotX(alpha) RotY(beta)
        u[1] = ca * w1 + sa * w2
        u[2] = sb * w0 - sa * cb * w1 + ca * cb * w2
    n2 = u[0] * u[0] + u[1] * u[1] + u[2] * u[2]
    if not (math.isfinite(n2) and n2 > 1e-12):
        return False
    inv = 1.0 / math.sqrt(n2)
    for r in range(3):
        u[r] *= inv
    return u[2] > math.cos(MAX_TILT)


@njit(cache=True)
def gravity_axes(u, Rws):
    """Rows of Rws: u (x_g, up), e1 = the sole's x made horizontal (forward), e2 = u x e1
    (left): world coordinates of a vector v are Rws v (thesis eq. 45-47, x_g up)."""
    d = u[0]
    e0, e1, e2 = 1.0 - d * u[0], -d * u[1], -d * u[2]
    inv = 1.0 / math.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
    e0, e1, e2 = e0 * inv, e1 * inv, e2 * inv
    Rws[0, 0], Rws[0, 1], Rws[0, 2] = u[0], u[1], u[2]
    Rws[1, 0], Rws[1, 1], Rws[1, 2] = e0, e1, e2
    Rws[2, 0] = u[1] * e2 - u[2] * e1
    Rws[2, 1] = u[2] * e0 - u[0] * e2
    Rws[2, 2] = u[0] * e1 - u[1] * e0


@njit(cache=True, inline="always")
def _rot(Rws, x0, x1, x2, out):
    for r in range(3):
        out[r] = Rws[r, 0] * x0 + Rws[r, 1] * x1 + Rws[r, 2] * x2


@njit(cache=True)
def contact_points(p, support, Tf, Rws, pts):
    """Contact points of the feet in contact (``support``, from the inputs or the debounced
    loads), projected along u: the (e1, e2) coordinates of their sole outlines into pts.
    A flat sole's cells measure its centre of pressure, not its contact area: a cell reads
    ~0 or pulls while its corner still touches, whenever the load moves away from it
    (docs/multi_cog.md, section 2). Returns their number."""
    pv, _ = param_layout(p)
    outline = pv.outline
    m = 0
    for foot in range(2):
        if support != DOUBLE and support != foot:       # LEFT == 0, RIGHT == 1: the foot indices
            continue
        f = int(p[P_FRAME_L] if foot == 0 else p[P_FRAME_R])
        for k in range(int(p[P_NV_L] if foot == 0 else p[P_NV_R])):
            ox, oy = outline[foot, k, 0], outline[foot, k, 1]
            x0 = Tf[f, 0, 3] + Tf[f, 0, 0] * ox + Tf[f, 0, 1] * oy
            x1 = Tf[f, 1, 3] + Tf[f, 1, 0] * ox + Tf[f, 1, 1] * oy
            x2 = Tf[f, 2, 3] + Tf[f, 2, 0] * ox + Tf[f, 2, 1] * oy
            pts[m, 0] = Rws[1, 0] * x0 + Rws[1, 1] * x1 + Rws[1, 2] * x2
            pts[m, 1] = Rws[2, 0] * x0 + Rws[2, 1] * x1 + Rws[2, 2] * x2
            m += 1
    return m


@njit(cache=True)
def _finite(a):
    """Every entry of ``a`` finite."""
    for i in range(a.shape[0]):
        if not math.isfinite(a[i]):
            return False
    return True


@njit(cache=True)
def pressure_centre(cells, loads, Tf, Rws, min_load, out):
    """The soles' centre of pressure (e1, e2) into out[0:2], from the feet's cells (frame indices
    ``cells[foot, k]``, the loads' order) at the measured posture ``Tf``: sum F_k x_k / sum F_k over
    both feet (stabilizer.feet eq. 1, the two soles together). False when they carry less than
    ``min_load`` or a cell reads NaN (no pressure to read)."""
    total = s1 = s2 = 0.0
    for foot in range(2):
        for k in range(MAX_SENSORS):
            f, load = int(cells[foot, k]), loads[foot * MAX_SENSORS + k]
            total += load
            s1 += load * (Rws[1, 0] * Tf[f, 0, 3] + Rws[1, 1] * Tf[f, 1, 3] + Rws[1, 2] * Tf[f, 2, 3])
            s2 += load * (Rws[2, 0] * Tf[f, 0, 3] + Rws[2, 1] * Tf[f, 1, 3] + Rws[2, 2] * Tf[f, 2, 3])
    if not total >= min_load:                        # or NaN: a cell not measured
        return False
    out[0], out[1] = s1 / total, s2 / total
    return True


@njit(cache=True)
def sole_centres(p, Tf, Rws, out):
    """Each sole's outline centre (the mean of its vertices), (e1, e2), into out[foot]."""
    outline = param_layout(p)[0].outline
    for foot in range(2):
        f, nv = int(p[P_FRAME_L] if foot == 0 else p[P_FRAME_R]), int(p[P_NV_L] if foot == 0 else p[P_NV_R])
        ox = oy = 0.0
        for k in range(nv):
            ox += outline[foot, k, 0] / nv
            oy += outline[foot, k, 1] / nv
        for a in range(2):
            R = Rws[1 + a]
            out[foot, a] = (R[0] * (Tf[f, 0, 3] + Tf[f, 0, 0] * ox + Tf[f, 0, 1] * oy)
                            + R[1] * (Tf[f, 1, 3] + Tf[f, 1, 0] * ox + Tf[f, 1, 1] * oy)
                            + R[2] * (Tf[f, 2, 3] + Tf[f, 2, 0] * ox + Tf[f, 2, 1] * oy))


@njit(cache=True)
def sole_edge(p, foot, T, n):
    """The vertex of ``foot``'s outline, its sole at pose ``T`` (root frame), lowest along ``n``
    (push_recovery.lowest_vertex): the edge a tipped sole stands on."""
    nv = int(p[P_NV_L] if foot == LEFT else p[P_NV_R])
    return lowest_vertex(param_layout(p)[0].outline[foot], nv, T, n)


@njit(cache=True)
def pose_error(T, H, gain, xd):
    """xd = gain (H_p - T_p, 1/2 sum_i t_i x h_i): the velocity (frame origin, angular)
    that brings pose T to the held pose H (positions and axes in base coordinates).
    Returns (|position error|, |rotation error|)."""
    ep = 0.0
    for r in range(3):
        d = H[r, 3] - T[r, 3]
        xd[r] = gain * d
        ep += d * d
    w0 = w1 = w2 = 0.0
    for i in range(3):
        w0 += 0.5 * (T[1, i] * H[2, i] - T[2, i] * H[1, i])
        w1 += 0.5 * (T[2, i] * H[0, i] - T[0, i] * H[2, i])
        w2 += 0.5 * (T[0, i] * H[1, i] - T[1, i] * H[0, i])
    xd[3], xd[4], xd[5] = gain * w0, gain * w1, gain * w2
    eo = w0 * w0 + w1 * w1 + w2 * w2
    return math.sqrt(ep), math.sqrt(eo)


@njit(cache=True)
def plan_targets(Tf, Jf, com, Jcom, Rws, fo, fp, g, qd_gait, hold, cog_plan, trunk_plan, ff):
    """From the kinematics of the gait's posture q* (in ``Tf``, ``Jf``, ``com``, ``Jcom``, rooted at
    the stance sole) and its rate q̇*: the other sole's planned pose into ``hold``, the planned CoG and
    the trunk's CoG over the pelvis (world axes ``Rws``) into ``cog_plan``, ``trunk_plan``, and each
    task row's planned rate J(q*) q̇* into ``ff`` (rows as the step's Jt: the other sole, the CoG's e1,
    e2, the trunk's e1, e2; docs/walking.md, "Stabilized walking")."""
    for a in range(4):
        for c in range(4):
            hold[a, c] = Tf[fo, a, c]
    _rot(Rws, com[0, 0], com[0, 1], com[0, 2], cog_plan)
    _rot(Rws, com[g, 0] - Tf[fp, 0, 3], com[g, 1] - Tf[fp, 1, 3], com[g, 2] - Tf[fp, 2, 3], trunk_plan)
    for r in range(TASK_ROWS):
        ff[r] = 0.0
    for j in range(qd_gait.shape[0]):
        v = qd_gait[j]
        for r in range(6):
            ff[r] += Jf[fo, r, j] * v
        for a in range(2):
            Rr = Rws[1 + a]
            ff[6 + a] += (Rr[0] * Jcom[0, 0, j] + Rr[1] * Jcom[0, 1, j] + Rr[2] * Jcom[0, 2, j]) * v
            ff[8 + a] += (Rr[0] * (Jcom[g, 0, j] - Jf[fp, 0, j]) + Rr[1] * (Jcom[g, 1, j] - Jf[fp, 1, j])
                          + Rr[2] * (Jcom[g, 2, j] - Jf[fp, 2, j])) * v


@njit(cache=True)
def plan_force(p, b, walls, d, nw, gains, forces, K, C, out):
    """The walls' force (eq. 72-76) on a point at distances ``d`` of the ``nw`` walls, into ``out``
    (``forces``, ``K``, ``C``: scratch)."""
    wall_forces(walls, d, nw, int(p[b + B_WLAW]), gains, p[b + B_WR], p[b + B_WSHAPE], p[b + B_WC], forces, K, C)
    for a in range(3):
        acc = 0.0
        for i in range(nw):
            acc += forces[i, a]
        out[a] = acc


@njit(cache=True)
def field_velocity(p, b, walls, d, nw, gains, G, target, engaged, v, forces, total, K, C, A3, flags, bias):
    """One virtual robot's fields (eq. 72-78) and admittance: the velocity v (world) of
    its point G. b: the params offset of its field block; ``bias``: a force taken off the
    total (the walls' force on the gait's point while it is tracked, else zero). Returns the
    admittance's status; when it is 0, raises F_FORCE_SAT on a saturated wall and F_SPEED_SAT
    on a clipped speed."""
    for a in range(3):
        for c in range(3):
            K[a, c] = 0.0
            C[a, c] = 0.0
    sat = wall_forces(walls, d, nw, int(p[b + B_WLAW]), gains, p[b + B_WR], p[b + B_WSHAPE],
                      p[b + B_WC], forces, K, C)
    fa = forces[nw]
    if p[b + B_AON] != 0.0:
        attractor_force(G, target, int(p[b + B_ALAW]), p[b + B_AK], p[b + B_AR], p[b + B_ASHAPE],
                        p[b + B_AC], fa, K, C)
    else:
        fa[0], fa[1], fa[2] = 0.0, 0.0, 0.0
    ramp = engage_ramp(engaged)
    for a in range(3):
        acc = 0.0
        for i in range(nw + 1):
            acc += forces[i, a]
        total[a] = (acc - bias[a]) * ramp
    status, clipped = admittance_velocity(p[b + B_ADM_M], p[b + B_ADM_D], p[P_DT], p[b + B_ADM_VMAX],
                                          v, total, K, C, A3)
    if status == 0:
        if sat > 0:
            flags[F_FORCE_SAT] = 1.0
        if clipped:
            flags[F_SPEED_SAT] = 1.0
    return status


@njit(cache=True)
def solve_tasks(p, support, W, locked, qd0, Z, Jt, xd, Jz, M, work, e, hv, qd, sig):
    """The hierarchy for this support (module docstring, step 5) with the joints in
    ``locked`` held still; sig[SIG_*] receives each task's smallest singular value.
    Returns models.linalg's status (0 ok)."""
    lmin, lmax, thr = p[P_LMIN], p[P_LMAX], p[P_SIGMA]
    for i in range(qd.shape[0]):
        qd[i] = 0.0
    r = start_basis(W, locked, Z)
    for k in range(3):
        if support == DOUBLE:
            t = SIG_FEET if k == 0 else (SIG_COG if k == 1 else SIG_TRUNK)
        else:
            t = SIG_COG if k == 0 else (SIG_FEET if k == 1 else SIG_TRUNK)
        lo = 0 if t == SIG_FEET else (6 if t == SIG_COG else 8)
        m = 6 if t == SIG_FEET else 2
        status, r, sigma = solve_level(Jt[lo:lo + m], m, xd[lo:lo + m], Z, r, lmin, lmax, thr,
                                        qd, Jz, M, e, hv, work)
        sig[t] = sigma
        if status != 0:
            return status
    posture_level(W, qd0, Z, r, qd)
    return 0


@njit(cache=True)
def step(mbuf, dbuf, p, s, inp, out):
    """One whole-robot stabilizer cycle (module docstring). Returns OK, or NOT_RESET /
    REJECTED_INPUT / NUMERIC_FAILURE / NO_SUPPORT with q_ref held, qd_ref zeroed and
    the virtual robot's state untouched."""
    n = int(p[P_N])
    dt = p[P_DT]
    pv, _ = param_layout(p)
    sv, _ = state_layout(p, s)
    ov, _ = out_layout(p, out)
    d, _ = data_layout(mbuf, dbuf)
    iv, _ = input_layout(inp, n)
    qmin, qmax, vmax, W, outline = pv.qmin, pv.qmax, pv.vmax, pv.W, pv.outline
    gains_cog, gains_trunk = pv.gains_cog, pv.gains_trunk
    q, v_cog, v_trunk, qpost, hold, Rws, locked = sv.q, sv.v_cog, sv.v_trunk, sv.qpost, sv.hold, sv.Rws, sv.locked
    qd0, Z, Jt, xd, Jz, M, work, e, hv = sv.qd0, sv.Z, sv.Jt, sv.xd, sv.Jz, sv.M, sv.work, sv.e, sv.hv
    pts, srt, hull, K, C, A3, vec, tpoly = sv.pts, sv.srt, sv.hull, sv.K, sv.C, sv.A3, sv.vec, sv.tpoly
    twalls, tmarg, tforces, dm = sv.twalls, sv.tmarg, sv.tforces, sv.dm
    q_gait, qd_gait, ff, cog_plan, trunk_plan = sv.q_gait, sv.qd_gait, sv.ff, sv.cog_plan, sv.trunk_plan
    fbias, Rflat, pforces = sv.fbias, sv.Rflat, sv.pforces
    tracking = s[S_TRACKING] != 0.0
    q_ref, qd_ref, cog, vel, forces, total = ov.q_ref, ov.qd_ref, ov.cog, ov.cog_velocity, ov.forces, ov.total_force
    trunk_total, margins, flags, poly, walls, up = ov.trunk_force, ov.margins, ov.flags, ov.polygon, ov.walls, ov.up
    Tf, Jf, com, Jcom = d.Tf, d.Jf, d.com, d.Jcom
    if s[S_RESET] == 0.0:
        return reject(qd_ref, vel, flags, F_REJECTED, NOT_RESET)
    q_meas, phase, tilt, acc, loads, qd_meas = iv.q, iv.support[0], iv.tilt, iv.acc, iv.loads, iv.qd
    xi, strategy, pushv = ov.capture_point, ov.strategy, ov.push_velocity
    sensed = p[P_CONTACT] == CONTACT_SENSORS
    if sensed and loads_status(loads, p[P_MIN_LOAD], p[P_MAX_LOAD]) != LOADS_OK:
        return reject(qd_ref, vel, flags, F_LOADS, REJECTED_INPUT)
    # every input finite; the loads only when they give the support (for the observer alone, loads a plant
    # does not measure read NaN: no pressure to read, pressure_centre)
    if not (_finite(iv.q) and _finite(iv.support) and _finite(iv.tilt) and _finite(iv.acc) and _finite(iv.qd)
            and _finite(iv.pelvis) and (_finite(loads) or not sensed)):
        return reject(qd_ref, vel, flags, F_REJECTED, REJECTED_INPUT)
    support = support_phase(p, phase, loads, s[S_CONTACT:S_CONTACT + CONTACT_STATE])
    if support < 0:
        if not sensed:
            return reject(qd_ref, vel, flags, F_REJECTED, REJECTED_INPUT)
        return reject(qd_ref, vel, flags, F_NO_SUPPORT, NO_SUPPORT)
    rec, u = sv.recovery, p[P_PUSH:P_PUSH_END]
    stepping = rec[R_PHASE] == SWING
    if stepping:                                     # a recovery step: the other foot stands alone
        support = 1 - int(rec[R_FOOT])
    stance = support if support != DOUBLE else int(p[P_DOUBLE_STANCE])
    if support == DOUBLE and rec[R_ROOT] > 0.0:
        stance = int(rec[R_ROOT]) - 1                # after a step the sole that stayed down roots it: the landed
                                                     # one may not lie flat yet (its up would be wrong)
    other = 1 - stance
    set_root(mbuf, dbuf, int(p[P_ROOT_L] if stance == LEFT else p[P_ROOT_R]))
    fo = int(p[P_FRAME_L] if other == LEFT else p[P_FRAME_R])

    # the measured posture: apparent up (the IMU's frame) and the measured CoG
    kinematics(mbuf, dbuf, q_meas)
    if not apparent_up(p, tilt, acc, Tf, up):
        return reject(qd_ref, vel, flags, F_REJECTED, REJECTED_INPUT)
    gravity_axes(up, Rws)
    _rot(Rws, com[0, 0], com[0, 1], com[0, 2], vec[0])
    g, fp = int(p[P_GROUP_TRUNK]), int(p[P_FRAME_PELVIS])
    out[O_OMEGA] = capture_point(Rws, com[0], Jcom[0], Jf[fp, 0:3], Tf[fp, 0:3, 0:3], iv.pelvis, qd_meas, p[P_G0], xi)
    if iv.pelvis[V_GYRO] != 0.0:                     # the soles' tip measured (push_recovery eq. P2')
        gyro_capture_point(Rws, com[0], Jcom[0], Jf[fp], Tf[fp], iv.pelvis, qd_meas, p[P_G0], ov.tip_point)
    else:
        ov.tip_point[:] = math.nan
    lam = p[P_PUSH + U_OBSERVER_RATE]
    if rec[R_TIP] == 1.0 and rec[R_PHASE] == SETTLE and int(s[S_SUPPORT]) // 3 != stance:
        for a in range(2):                           # a tip step landed, rooted anew (eq. P12): the observer's CoG
            sv.cog_observer[a, 0] = vec[0, 1 + a]    # re-anchored in the new root's axes, its velocity kept
    if lam > 0.0 and pressure_centre(pv.cells, loads, Tf, Rws, p[P_MIN_LOAD], vec[2]):
        observe_lipm(sv.cog_observer, vec[0, 1:3], vec[2], out[O_OMEGA], lam, dt, xi)
    for a in range(3):
        fbias[0, a] = fbias[1, a] = 0.0
    if tracking:                                     # the gait's posture: the tasks' targets and rates
        kinematics(mbuf, dbuf, q_gait)
        plan_targets(Tf, Jf, com, Jcom, Rws, fo, fp, g, qd_gait, hold, cog_plan, trunk_plan, ff)
        # the walls' force on the gait's CoG over the gait's polygon, on the ground it was planned
        # for (up: the stance sole's normal): the field the plan already answers (docs/walking.md)
        for a in range(3):                           # gravity_axes of u = z: rows z, x, y
            for c in range(3):
                Rflat[a, c] = 1.0 if c == (a + 2) % 3 else 0.0
        m = contact_points(p, support, Tf, Rflat, pts)
        h = convex_hull(pts, m, srt, hull, HULL_TOL) if m >= 3 else 0
        if h >= 3:
            compute_walls(hull, h, 1.0, walls)
            _rot(Rflat, com[0, 0], com[0, 1], com[0, 2], vec[3])
            signed_distances(walls, h, vec[3, 1], vec[3, 2], margins)
            plan_force(p, P_COG, walls, margins, h, gains_cog, pforces, K, C, fbias[0])

    # the virtual robot: support polygon and walls (eq. 50-51, 69, generalised)
    kinematics(mbuf, dbuf, q)
    m = contact_points(p, support, Tf, Rws, pts)
    h = convex_hull(pts, m, srt, hull, HULL_TOL) if m >= 3 else 0
    if h < 3:
        return reject(qd_ref, vel, flags, F_NO_SUPPORT, NO_SUPPORT)
    for f in range(NFLAGS):
        flags[f] = 0.0
    commanded = input_phase(phase)
    if sensed and commanded >= 0 and commanded != support:
        flags[F_DISAGREE] = 1.0
    if s[S_SUPPORT] != support + 3 * stance and not tracking:   # a new support or root: the other sole stays
        for a in range(4):                                        # where it is
            for c in range(4):
                hold[a, c] = Tf[fo, a, c]
        s[S_SUPPORT] = support + 3 * stance
        if rec[R_TIP] == 1.0 and rec[R_PHASE] == SETTLE:    # a tip step landed: the rear sole, on its edge,
            flat = (0.0, 0.0, 1.0)                          # laid flat on the floor the root lies on (eq. P12)
            pivot = sole_edge(p, other, Tf[fo], flat)
            tilt_pose((hold[0, 2], hold[1, 2], hold[2, 2]), flat, pivot, hold, sv.swing_velocity)
    if stepping:                                     # the swing sole on its curve, the lifted foot's task
        swing_pose(u, rec, up, dt, hold, sv.swing_velocity)
        if rec[R_TIP] == 2.0:                        # the rear sole, lifted on its edge, laid flat along its swing
            fw = 1 - stance                          # (eq. P12): turned about its lowest vertex by quintic(s) of
            flat = (0.0, 0.0, 1.0)                   # the rotation from its lift-off normal onto the floor's
            pivot = sole_edge(p, fw, hold, flat)
            a = (rec[R_START + 2], rec[R_START + 6], rec[R_START + 10])
            tilt_pose(a, partway(a, flat, quintic(min(1.0, rec[R_T] / u[U_STEP_TIME]))), pivot, hold,
                      sv.swing_velocity)
        if rec[R_TIP] != 0.0 and iv.pelvis[V_GYRO] != 0.0:  # a tip step flown in the gyro's world (eq. P12):
            Tp, wz = Tf[fp], iv.pelvis[V_R + 6:V_R + 9]      # the curve turned from apparent up onto the true up
            true_up = (Tp[0, 0] * wz[0] + Tp[0, 1] * wz[1] + Tp[0, 2] * wz[2], Tp[1, 0] * wz[0] + Tp[1, 1] * wz[1]
                       + Tp[1, 2] * wz[2], Tp[2, 0] * wz[0] + Tp[2, 1] * wz[1] + Tp[2, 2] * wz[2])
            pivot = sole_edge(p, stance, Tf[int(p[P_FRAME_L] if stance == LEFT else p[P_FRAME_R])], true_up)
            tilt_pose(up, true_up, pivot, hold, sv.swing_velocity)    # about the stance sole's tipping edge
        flags[F_RECOVERY] = 1.0
    for i in range(h):
        poly[i, 0], poly[i, 1] = hull[i, 0], hull[i, 1]
    compute_walls(poly, h, 1.0, walls)
    out[O_NHULL], out[O_SUPPORT] = h, support
    out[O_TILT] = math.acos(min(1.0, up[2]))

    # virtual robot 1: the whole robot's CoG against the support polygon
    _rot(Rws, com[0, 0], com[0, 1], com[0, 2], cog)
    dmin = signed_distances(walls, h, cog[1], cog[2], margins)
    out[O_MIN_MARGIN] = dmin
    if dmin < 0.0:
        flags[F_OUTSIDE] = 1.0
    out[O_MEASURED_MARGIN] = signed_distances(walls, h, vec[0, 1], vec[0, 2], dm)
    if out[O_MEASURED_MARGIN] < 0.0:
        flags[F_MEASURED_OUTSIDE] = 1.0
    cy, cz = polygon_centroid(poly, h)
    vec[1, 0], vec[1, 1], vec[1, 2] = cog[0], cy, cz              # G+: over the polygon's centroid
    if tracking:                                                  # or the gait's CoG
        vec[1, 1], vec[1, 2] = cog_plan[1], cog_plan[2]
    for a in range(3):
        vel[a] = v_cog[a]
    if field_velocity(p, P_COG, walls, margins, h, gains_cog, cog, vec[1], s[S_ENGAGED], vel, forces, total,
                      K, C, A3, flags, fbias[0]) != 0:
        return reject(qd_ref, vel, flags, F_REJECTED, NUMERIC_FAILURE)

    # the push strategies' gate on the measured capture point (stabilizer.push_recovery, eq. P4)
    engaged = push_gate(u, sv.push_gate, xi, vec[0, 1:3], tracking, dt)
    # eq. P11: the trunk spun into a fall the gyro's tipping point sees past the toes (a push engaged the gate,
    # two soles down, no gait, no step); its box and attractor carried by the spin's offset, its speed vs added
    # to the task below
    tip = ov.tip_point
    beyond = -signed_distances(walls, h, tip[0], tip[1], dm) if tip[0] == tip[0] else math.nan
    unloaded = unloaded_sole(loads, MAX_SENSORS, p[P_MIN_LOAD], p[P_RELEASE_LOAD]) if support == DOUBLE else -1
    spin = sv.hip_spin
    vs = hip_spin(u, spin, beyond, tip, cy, cz, engaged and support == DOUBLE and not tracking
                  and rec[R_PHASE] == IDLE and unloaded < 0, dt)
    off = spin[H_X] - vs * dt                        # the offset at this cycle (0 unless spinning)
    ox, oy = off * spin[H_DIR], off * spin[H_DIR + 1]

    # virtual robot 2: the trunk's CoG over the pelvis (relative, world axes)
    _rot(Rws, com[g, 0] - Tf[fp, 0, 3], com[g, 1] - Tf[fp, 1, 3], com[g, 2] - Tf[fp, 2, 3], vec[2])
    hx, hy = p[P_TRUNK_HX], p[P_TRUNK_HY]
    tpoly[0, 0], tpoly[0, 1], tpoly[1, 0], tpoly[1, 1] = ox + hx, oy - hy, ox + hx, oy + hy
    tpoly[2, 0], tpoly[2, 1], tpoly[3, 0], tpoly[3, 1] = ox - hx, oy + hy, ox - hx, oy - hy
    compute_walls(tpoly, 4, 1.0, twalls)
    tm = signed_distances(twalls, 4, vec[2, 1], vec[2, 2], tmarg)
    out[O_TRUNK_MARGIN] = tm
    if tm < 0.0:
        flags[F_TRUNK_OUTSIDE] = 1.0
    vec[3, 0], vec[3, 1], vec[3, 2] = vec[2, 0], ox, oy
    if tracking:                                                  # the gait's trunk over the pelvis
        vec[3, 1], vec[3, 2] = trunk_plan[1], trunk_plan[2]
    for a in range(3):
        vec[1, a] = v_trunk[a]
    if tracking:                                     # the walls' force on the gait's trunk
        signed_distances(twalls, 4, trunk_plan[1], trunk_plan[2], tmarg)
        plan_force(p, P_TRUNK, twalls, tmarg, 4, gains_trunk, pforces, K, C, fbias[1])
        signed_distances(twalls, 4, vec[2, 1], vec[2, 2], tmarg)
    if field_velocity(p, P_TRUNK, twalls, tmarg, 4, gains_trunk, vec[2], vec[3], s[S_ENGAGED], vec[1], tforces,
                      trunk_total, K, C, A3, flags, fbias[1]) != 0:
        return reject(qd_ref, vel, flags, F_REJECTED, NUMERIC_FAILURE)

    # the tasks' rows: the other sole (base axes), the CoGs' horizontal rows (e1, e2)
    ep, eo = pose_error(Tf[fo], hold, p[P_FEET_K], xd)
    if stepping:                                     # the swing curve's own velocity fed forward
        for r in range(3):
            xd[r] += sv.swing_velocity[r]
    out[O_CLOSE_POS], out[O_CLOSE_ROT] = ep, eo
    laying = rec[R_TIP] == 1.0 and rec[R_PHASE] == SETTLE     # a tip step's rear sole laid flat: no closure yet
    if support == DOUBLE and not laying and (ep > p[P_CLOSE_TOL] or eo > p[P_CLOSE_TOL_ROT]):
        flags[F_CONSTRAINT] = 1.0
    for j in range(n):
        for r in range(6):
            Jt[r, j] = Jf[fo, r, j]
        for a in range(2):
            Rr = Rws[1 + a]
            Jt[6 + a, j] = Rr[0] * Jcom[0, 0, j] + Rr[1] * Jcom[0, 1, j] + Rr[2] * Jcom[0, 2, j]
            Jt[8 + a, j] = (Rr[0] * (Jcom[g, 0, j] - Jf[fp, 0, j]) + Rr[1] * (Jcom[g, 1, j] - Jf[fp, 1, j])
                            + Rr[2] * (Jcom[g, 2, j] - Jf[fp, 2, j]))
        qd0[j] = p[P_POST_K] * (qpost[j] - q[j])
        locked[j] = 0.0
    # the push strategies on the measured capture point (stabilizer.push_recovery)
    k, out[O_CAPTURE_MARGIN] = push_response(u, engaged, xi, cy, cz, walls, h, dm, pushv[0:2], pushv[2:4])
    strategy[0] = k
    if k >= ANKLE:
        flags[F_ANKLE + k - ANKLE] = 1.0
    swing = -2                                       # -2: no step this cycle, -1: the sole nearest xi
    xs = xi                                          # the capture point a step is planned on
    if u[U_STEP_TIME] > 0.0 and support == DOUBLE and not tracking:
        sole_centres(p, Tf, Rws, sv.centres)
        # with tip_step the gyro's tipping point out (eq. P2') is a step wanted too, planned on it
        tipping = k != STEP and u[U_TIP_STEP] != 0.0 and beyond > u[U_STEP_MARGIN]
        roll_grade(u, rec, beyond, k >= ANKLE and unloaded >= 0)     # eq. P10: the sideways answer's grade
        if tipping or rec[R_TIP] != 0.0:             # eq. P12: planned where the tip carries xi_t by the landing
            xs = sv.tip_aim
            tip_aim(u, rec, tip, beyond, out[O_OMEGA], cy, cz, xs)
        # eq. P7: a step wanted (xi out, or a push lifting a sole) for step_delay on end, or one under way
        if step_due(u, rec, k == STEP or tipping or (k >= ANKLE and unloaded >= 0), dt):
            if tipping and unloaded < 0:             # eq. P12: the load onto the stance sole first
                tip_shift(u, rec, tip, sv.centres)
            f = load_shift(u, rec, unloaded, sv.centres, vec[0, 1:3], pushv[0:2], pushv[2:4])
            swing = f if f >= 0 else swing          # a sole the push lifts swings; else the one nearest xi
            if (k == STEP or tipping) and rec[R_PHASE] == IDLE and swing == -2:
                swing = -1
            f = tip_follow(u, rec, unloaded, sv.centres, sv.tip_aim)
            if f >= 0:                               # eq. P12: the rear sole up beside the front one, moved from
                swing, xs, cy, cz = f, sv.tip_aim, sv.centres[f, 0], sv.centres[f, 1]    # its own centre
    if swing > -2:
        plan_step(u, xs, cy, cz, sv.centres, Rws, Tf[int(p[P_FRAME_L])], Tf[int(p[P_FRAME_R])], rec, swing)
        ov.recovery_step[0], ov.recovery_step[1], ov.recovery_step[2] = rec[R_FOOT], rec[R_TARGET], rec[R_TARGET + 1]
    elif rec[R_PHASE] != SWING:
        ov.recovery_step[:] = math.nan
    if stepping:                                     # a tip step lands when its sole meets the floor (eq. P12)
        touchdown(u, rec, loads, MAX_SENSORS, p[P_MIN_LOAD])
    if stepping and rec[R_LIFTING] != 0.0:           # the sideways step: its swing alone answers (eq. P5),
        pushv[:] = 0.0
        roll_trunk(u, rec, Rws, pushv[2:4])          # the trunk into the fall as graded (eq. P10)
    elif rec[R_TIP] == 1.0 and rec[R_PHASE] == SETTLE:   # a tip step's first landing: the fields alone (eq. P12)
        pushv[:] = 0.0
    pushv[2] += vs * sv.hip_spin[H_DIR]              # eq. P11: the trunk's spin into the fall
    pushv[3] += vs * sv.hip_spin[H_DIR + 1]
    xd[6], xd[7] = vel[1] + pushv[0], vel[2] + pushv[1]
    xd[8], xd[9] = vec[1, 1] + pushv[2], vec[1, 2] + pushv[3]
    if tracking:                                     # eq. (walking): the gait's rates fed forward
        for r in range(TASK_ROWS):
            xd[r] += ff[r]
        for j in range(n):
            qd0[j] = qd_gait[j] + p[P_POST_K] * (q_gait[j] - q[j])

    # the hierarchy, joints locked at their limits (as the bench stabilizer)
    sig = out[O_SIGMA:O_SIGMA + 3]
    nlocked = 0
    for _ in range(n + 1):
        if solve_tasks(p, support, W, locked, qd0, Z, Jt, xd, Jz, M, work, e, hv, qd_ref, sig) != 0:
            return reject(qd_ref, vel, flags, F_REJECTED, NUMERIC_FAILURE)
        new = False
        for i in range(n):
            nxt = q[i] + qd_ref[i] * dt
            if locked[i] == 0.0 and ((qd_ref[i] < 0.0 and nxt < qmin[i] + p[P_MARGIN])
                                     or (qd_ref[i] > 0.0 and nxt > qmax[i] - p[P_MARGIN])):
                locked[i] = 1.0
                nlocked += 1
                new = True
        if not new:
            break
    for t in range(3):
        if sig[t] < p[P_SIGMA]:
            flags[F_SINGULAR] = 1.0
    if scale_to_velocity_limits(qd_ref, vmax):
        flags[F_JOINT_SPEED_SAT] = 1.0

    # commit: integrate the virtual robot; its posture is the reference
    s[S_ENGAGED] += dt
    advance_step(u, rec, dt)
    for a in range(3):
        v_cog[a] = vel[a]
        v_trunk[a] = vec[1, a]
    if advance(q, qd_ref, dt, qmin, qmax, q_ref) or nlocked > 0:
        flags[F_LIMIT] = 1.0
    return OK


def _field_block(p: np.ndarray, b: int, vr: VirtualRobotConfig) -> None:
    w, a = vr.walls, vr.attractor
    p[b + B_WLAW], p[b + B_WR], p[b + B_WSHAPE], p[b + B_WC] = w.law, w.radius, w.shape, w.damping
    if a is not None:
        p[b + B_AON], p[b + B_ALAW], p[b + B_AK] = 1.0, a.law, a.gains[0]
        p[b + B_AR], p[b + B_ASHAPE], p[b + B_AC] = a.radius, a.shape, a.damping
    p[b + B_ADM_M], p[b + B_ADM_D], p[b + B_ADM_VMAX] = vr.mass, vr.damping, vr.max_speed


def pack_params(robot: TreeRobot, cfg: WholeBodyConfig) -> np.ndarray:
    """The flat params array of :func:`step` for a tree robot and a configuration (setup only)."""
    model, desc = robot.model, robot.description
    n = robot.n
    feet = {f.frame: f for f in desc.feet}
    for sole in SOLES.values():
        if sole not in feet or sole not in model.root_names:
            raise robot_error(cfg, "robot", f"{desc.source} needs a foot and a root {sole!r} (feet:, roots:)")
        if len(feet[sole].outline) > MAX_OUTLINE or len(feet[sole].sensors) != MAX_SENSORS:
            raise robot_error(cfg, "robot", f"{desc.source}: feet: the {sole} foot needs at most "
                                            f"{MAX_OUTLINE} outline vertices and {MAX_SENSORS} sensors")
    if cfg.trunk_subtree not in model.group_names[1:]:
        raise robot_error(cfg, "trunk.subtree", f"{cfg.trunk_subtree!r} is not a subtree of {desc.source} "
                                                f"(subtrees: {list(model.group_names[1:])})")
    for frame, key in ((cfg.imu_frame, "tilt.imu_frame"), ("pelvis", "robot")):
        if frame not in model.frame_names:
            raise robot_error(cfg, key, f"{desc.source} has no frame {frame!r}")
    if len(cfg.joint_weights) not in (1, n):
        raise robot_error(cfg, "tasks.joint_weights", f"expected one number or {n}, got {len(cfg.joint_weights)}")
    p = np.zeros(PARAMS.size(n=n))
    p[P_N], p[P_DT], p[P_G0] = n, cfg.period, float(np.linalg.norm(desc.gravity))
    p[P_TILT_SOURCE] = TILT_IMU if cfg.tilt_source == "imu" else 0.0
    p[P_USE_ACC] = float(cfg.use_acceleration)
    p[P_CONTACT] = CONTACT_SENSORS if cfg.support_source == "sensors" else CONTACT_PHASE
    p[P_MIN_LOAD] = cfg.min_load
    p[P_RELEASE_LOAD], p[P_MAX_LOAD] = cfg.release_load, cfg.max_load
    p[P_DWELL] = max(1, round(cfg.dwell_s / cfg.period))
    p[P_ROOT_L] = model.root_names.index(SOLES[LEFT])
    p[P_ROOT_R] = model.root_names.index(SOLES[RIGHT])
    p[P_DOUBLE_STANCE] = LEFT if cfg.double_support_root == SOLES[LEFT] else RIGHT
    p[P_FRAME_L] = model.index("frame", SOLES[LEFT])
    p[P_FRAME_R] = model.index("frame", SOLES[RIGHT])
    p[P_FRAME_PELVIS] = model.index("frame", "pelvis")
    p[P_FRAME_IMU] = model.index("frame", cfg.imu_frame)
    p[P_GROUP_TRUNK] = model.index("group", cfg.trunk_subtree)
    p[P_NV_L], p[P_NV_R] = len(feet[SOLES[LEFT]].outline), len(feet[SOLES[RIGHT]].outline)
    p[P_FEET_K] = cfg.feet_gain
    p[P_CLOSE_TOL], p[P_CLOSE_TOL_ROT] = cfg.closure_tolerance
    p[P_LMIN], p[P_LMAX], p[P_SIGMA] = cfg.lambda_min, cfg.lambda_max, cfg.sigma_threshold
    p[P_MARGIN], p[P_POST_K] = cfg.limit_margin, cfg.posture_gain
    p[P_TRUNK_HX], p[P_TRUNK_HY] = cfg.trunk_box
    if cfg.push is not None:
        p[P_PUSH + PUSH.offset("on")] = 1.0
        for name, value in asdict(cfg.push).items():
            p[P_PUSH + PUSH.offset(name)] = value
    _field_block(p, P_COG, cfg.cog)
    _field_block(p, P_TRUNK, cfg.trunk)
    qmin, qmax, vmax, W, outline, gains_cog, gains_trunk, cells = PARAMS.views(p, n=n)
    qmin[:], qmax[:] = model.qmin, model.qmax
    vmax[:] = cfg.velocity_scale * model.vmax
    W[:] = cfg.joint_weights
    for code, sole in SOLES.items():
        ol = np.array(feet[sole].outline)
        outline[code, :len(ol)] = ol
    gains_cog[:] = cfg.cog.walls.gains[0]
    for code, sole in SOLES.items():
        cells[code] = [model.index("frame", name) for name in feet[sole].sensors]
    gains_trunk[:] = cfg.trunk.walls.gains[0]
    p.flags.writeable = False
    return p


class WholeBodyStabilizer(StabilizerShell):
    """Python shell over :func:`step`: owns the params/state/inputs/out arrays, a tree
    Data of its own (the virtual robot's kinematics) and named views.

    ``WholeBodyStabilizer(robot, cfg)`` or ``.from_yaml(path)``; ``reset(q)`` once when
    engaged, then ``step(q, support, tilt, acc, loads)`` every cycle. A real-time loop
    calls the kernel ``step(st.mbuf, st.dbuf, st.params, st.state, st.inputs, st.out)``
    after writing the input views ``in_q``, ``in_support``, ``in_tilt``, ``in_acc``,
    ``in_loads``. Output views: ``q_ref``, ``qd_ref``, ``cog`` (world, x_g up),
    ``cog_velocity``, ``forces``, ``total_force``, ``trunk_force``, ``margins``,
    ``flags`` (FLAG_NAMES order), ``polygon`` / ``walls`` (first ``n_hull`` rows),
    ``up``; scalars through the properties.
    """

    OUT, FLAG_NAMES = OUT, FLAG_NAMES

    def __init__(self, robot: TreeRobot, cfg: WholeBodyConfig) -> None:
        self.robot, self.config = robot, cfg
        self.params = pack_params(robot, cfg)
        self.n = n = robot.n
        self.mbuf = robot.model.buf
        self.data = TreeData(robot.model)
        self.dbuf = self.data.buf
        self.state = np.zeros(STATE.size(n=n))
        self.inputs = np.zeros(inputs_size(n))
        self.out = np.zeros(OUT.size(n=n))
        iv = INPUTS.views(self.inputs, n=n)
        self.in_q, self.in_support, self.in_tilt, self.in_acc, self.in_loads = (iv.q, iv.support, iv.tilt, iv.acc,
                                                                                iv.loads)
        self.in_qd, self.in_pelvis = iv.qd, iv.pelvis
        for name, arr in OUT.views(self.out, n=n)._asdict().items():
            setattr(self, name, arr)

    @classmethod
    def from_yaml(cls, path: str | Path) -> WholeBodyStabilizer:
        cfg = load_config(path)
        return cls(TreeRobot.from_yaml(cfg.robot_path), cfg)

    @property
    def omega(self) -> float:
        """sqrt(g0 / z_c) of the measured CoG (1/s; stabilizer.push_recovery)."""
        return float(self.out[O_OMEGA])

    @property
    def capture_margin(self) -> float:
        """The capture point's signed distance to the support polygon (m, < 0 outside)."""
        return float(self.out[O_CAPTURE_MARGIN])

    @property
    def trunk_margin(self) -> float:
        return float(self.out[O_TRUNK_MARGIN])

    @property
    def n_hull(self) -> int:
        return int(self.out[O_NHULL])

    @property
    def sigmas(self) -> dict[str, float]:
        """Smallest singular value of each task within the null space of those above it."""
        return dict(zip(("feet", "cog", "trunk"), self.out[O_SIGMA:O_SIGMA + 3].tolist()))

    @property
    def closure_error(self) -> tuple[float, float]:
        """The other sole's distance (m) and rotation (rad) from its held pose."""
        return float(self.out[O_CLOSE_POS]), float(self.out[O_CLOSE_ROT])

    def reset(self, q_measured: ArrayLike) -> None:
        q = np.ascontiguousarray(q_measured, dtype=np.float64)
        if q.shape != (self.n,) or not np.all(np.isfinite(q)):
            raise ValueError(f"q_measured must be {self.n} finite joint angles, got shape {q.shape}")
        reset(self.params, self.state, q, self.out)

    def step(self, q_measured: ArrayLike, support: int, tilt: ArrayLike = (0.0, 0.0),
             acceleration: ArrayLike = (0.0, 0.0), loads: ArrayLike | None = None,
             qd_measured: ArrayLike | None = None,
             pelvis: tuple[ArrayLike, ArrayLike] | None = None) -> int:
        """Copy the inputs and run one cycle; returns the kernel status. ``support``:
        LEFT, RIGHT or DOUBLE (ignored with support source sensors); ``tilt``: the
        platform's (alpha, beta) or the IMU's specific force (3); ``loads``: the 8
        force sensors (N), left foot first, in the robot file's sensor order; ``qd_measured``: the
        joint velocities (rad/s, zeros if None) and ``pelvis`` the pelvis estimate (its world
        velocity, m/s, and rotation pelvis -> world, and with a gyro its world angular velocity, rad/s;
        None: none) of the push strategies' capture point."""
        self.in_q[:] = q_measured
        self.in_support[0] = support
        self.in_tilt[:len(tilt)] = tilt
        self.in_acc[:] = acceleration
        self.in_loads[:] = 0.0 if loads is None else loads
        self.in_qd[:] = 0.0 if qd_measured is None else qd_measured
        self.in_pelvis[:] = 0.0
        if pelvis is not None:
            self.in_pelvis[V_ON] = 1.0
            self.in_pelvis[V_VEL:V_VEL + 3] = pelvis[0]
            self.in_pelvis[V_R:V_R + 9] = np.asarray(pelvis[1], dtype=np.float64).ravel()
            if len(pelvis) > 2:                            # a gyro's rate (eq. P2')
                self.in_pelvis[V_GYRO] = 1.0
                self.in_pelvis[V_RATE:V_RATE + 3] = pelvis[2]
        return step(self.mbuf, self.dbuf, self.params, self.state, self.inputs, self.out)
