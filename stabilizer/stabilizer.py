"""The electrostatic-field CoG stabilizer of thesis §2.5 (Figure 26-27): one cycle.

Everything a cycle needs lives in four flat float64 arrays, so that the Numba
kernel :func:`step` takes four arguments and allocates nothing:

* ``params`` (read-only): sizes, period, tilt source, foot, field laws and gains,
  admittance, virtual-robot weights and limits (:func:`pack_params`);
* ``state``: the virtual robot (q, qd), the admittance velocity, G+ and the
  posture target, and every scratch array of the cycle;
* ``inputs``: q_measured[n], tilt[3] (platform (alpha, beta, -) or IMU specific
  force in R0 axes), acceleration[2] (horizontal, world (y_g, z_g) axes);
* ``out``: q_ref, qd_ref, the CoG and its commanded velocity, the forces of
  every wall and of the attractor, the signed margins, flags, the polygon and
  its walls (telemetry).

One cycle (all in the world frame of eq. 45-47, x_g up):
tilt -> R_M->O0, O0 (eq. 46-47) -> support polygon (eq. 50-51) -> walls
(eq. 69) -> virtual CoG G = T_M->O0 G_0 (eq. 41, 47) -> signed distances
(eq. 70-71) -> forces (eq. 72-78) -> admittance -> weighted damped
pseudo-inverse of J_w = R_M->O0 J_G (eq. 44) with limits -> q_ref.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from numba import njit
from numpy.typing import ArrayLike

from models.common.errors import ConfigError
from models.common.layout import Field, Layout
from models.chain.leg import LegGeometry, leg_com, virtual_com_jacobian
from models.chain.robot import Robot

from stabilizer.config import StabilizerConfig, load_config
from stabilizer.fields import attractor_force, wall_forces
from stabilizer.ground import TILT_OK, apparent_tilt, base_to_world, foot_origin, rotation_world_foot
from stabilizer.shell import StabilizerShell
from stabilizer.support_polygon import outline_orientation, project_outline, rectangle_outline
from stabilizer.virtual_robot import (
    admittance_velocity,
    advance,
    damping_factor,
    lock_joint_limits,
    resolve_rates,
    scale_to_velocity_limits,
    smallest_task_singular_value,
)
from stabilizer.walls import compute_walls, signed_distances

# step() status
OK = 0
NOT_RESET = 1          # reset(q_measured) was never called
REJECTED_INPUT = 2     # non-finite q_measured / tilt / acceleration, or an impossible tilt
NUMERIC_FAILURE = 3    # an SPD solve failed (cannot happen with valid params; q_ref held)
STATUS_NAMES = ("ok", "not_reset", "rejected_input", "numeric_failure")

# flags (out), 1.0 when raised
FLAG_NAMES = ("input_rejected", "force_saturated", "speed_saturated", "joint_speed_saturated",
              "near_singular", "at_joint_limit", "cog_outside")
F_REJECTED, F_FORCE_SAT, F_SPEED_SAT, F_JOINT_SPEED_SAT, F_SINGULAR, F_LIMIT, F_OUTSIDE = range(7)
NFLAGS = len(FLAG_NAMES)

# params: the scalars, then leg[10] (models.chain.leg), the joints' limits, weights W and posture
# target, the foot outline[nv, 2] and the wall gains[nv]
_P_SCALARS = ("n", "nv", "dt", "g0", "source", "use_acc", "delta", "z", "orient",
              "wlaw", "wr", "wshape", "wc",
              "aon", "alaw", "ak", "ar", "ashape", "ac", "ainitial", "ax", "ay", "az",
              "adm_m", "adm_d", "adm_vmax",
              "s0", "s1", "s2", "lmin", "lmax", "sigma", "margin", "post_k", "post_initial")
PARAMS = Layout("stabilizer params", [
    *map(Field, _P_SCALARS), Field("leg", (10,)), Field("qmin", ("n",)), Field("qmax", ("n",)),
    Field("vmax", ("n",)), Field("W", ("n",)), Field("qpost", ("n",)), Field("outline", ("nv", 2)),
    Field("gains", ("nv",))], sizes=("n", "nv"))
P_N = PARAMS.offset("n")
P_NV = PARAMS.offset("nv")
P_DT = PARAMS.offset("dt")
P_G0 = PARAMS.offset("g0")
P_SOURCE = PARAMS.offset("source")
P_USE_ACC = PARAMS.offset("use_acc")
P_DELTA = PARAMS.offset("delta")
P_Z = PARAMS.offset("z")
P_ORIENT = PARAMS.offset("orient")
P_WLAW = PARAMS.offset("wlaw")
P_WR = PARAMS.offset("wr")
P_WSHAPE = PARAMS.offset("wshape")
P_WC = PARAMS.offset("wc")
P_AON = PARAMS.offset("aon")
P_ALAW = PARAMS.offset("alaw")
P_AK = PARAMS.offset("ak")
P_AR = PARAMS.offset("ar")
P_ASHAPE = PARAMS.offset("ashape")
P_AC = PARAMS.offset("ac")
P_AINITIAL = PARAMS.offset("ainitial")
P_AX = PARAMS.offset("ax")
P_AY = PARAMS.offset("ay")
P_AZ = PARAMS.offset("az")
P_ADM_M = PARAMS.offset("adm_m")
P_ADM_D = PARAMS.offset("adm_d")
P_ADM_VMAX = PARAMS.offset("adm_vmax")
P_S0 = PARAMS.offset("s0")
P_S1 = PARAMS.offset("s1")
P_S2 = PARAMS.offset("s2")
P_LMIN = PARAMS.offset("lmin")
P_LMAX = PARAMS.offset("lmax")
P_SIGMA = PARAMS.offset("sigma")
P_MARGIN = PARAMS.offset("margin")
P_POST_K = PARAMS.offset("post_k")
P_POST_INITIAL = PARAMS.offset("post_initial")
P_SCALARS = PARAMS.offset("leg")
# state: the scalars, the virtual robot (q, qd), the admittance velocity v, G+ (target), the posture
# target, the locked joints, the posture velocity qd0, the foot frame (R, org), G0 / Gm, the
# Jacobians, the fields' stiffness K and damping C, A3, H and its inverse, tilt, the margins' dm
STATE = Layout("stabilizer state", [
    Field("reset"), Field("target_pending"), Field("engaged"),
    Field("q", ("n",)), Field("qd", ("n",)), Field("v", (3,)), Field("target", (3,)), Field("qpost", ("n",)),
    Field("locked", ("n",)), Field("qd0", ("n",)), Field("R", (3, 3)), Field("org", (3,)), Field("G0", (3,)),
    Field("Gm", (3,)), Field("Jb6", (6, "n")), Field("Jb", (3, "n")), Field("Jw", (3, "n")), Field("K", (3, 3)),
    Field("C", (3, 3)), Field("A3", (3, 3)), Field("H", ("n", "n")), Field("Hinv", ("n", "n")),
    Field("tilt", (2,)), Field("dm", ("nv",))], sizes=("n", "nv"))
S_RESET = STATE.offset("reset")
S_TARGET_PENDING = STATE.offset("target_pending")
S_ENGAGED = STATE.offset("engaged")
# s over which the fields' force is switched on after reset (quintic ramp): G's velocity is the
# force over the admittance damping, so a force switched on at once would be a step of G's velocity,
# which the drives turn into an ankle torque pulse that rocks the foot (docs/equations.md, "Engage")
ENGAGE_S = 1.0
# out: the scalars, then q_ref, qd_ref, cog, cog_velocity, forces[nv+1, 3] (walls then attractor),
# total_force, margins[nv], flags[NFLAGS], polygon[nv, 2], walls[nv, 3]
OUT = Layout("stabilizer out", [
    Field("min_margin"), Field("measured_margin"), Field("alpha"), Field("beta"), Field("sigma"),
    Field("lambda"), Field("q_ref", ("n",)), Field("qd_ref", ("n",)), Field("cog", (3,)),
    Field("cog_velocity", (3,)), Field("forces", ("nv + 1", 3)), Field("total_force", (3,)),
    Field("margins", ("nv",)), Field("flags", (NFLAGS,)), Field("polygon", ("nv", 2)),
    Field("walls", ("nv", 3))], sizes=("n", "nv"))
O_MIN_MARGIN = OUT.offset("min_margin")
O_MEASURED_MARGIN = OUT.offset("measured_margin")
O_ALPHA = OUT.offset("alpha")
O_BETA = OUT.offset("beta")
O_SIGMA = OUT.offset("sigma")
O_LAMBDA = OUT.offset("lambda")
O_SCALARS = OUT.offset("q_ref")
# inputs: q_measured[n], tilt[3] (platform (alpha, beta, -) or IMU specific force in R0 axes),
# acceleration[2] (horizontal, world (y_g, z_g) axes)
INPUTS = Layout("stabilizer inputs", [Field("q", ("n",)), Field("tilt", (3,)), Field("acc", (2,))], sizes=("n",))
_param_views, _state_views, _out_views = PARAMS.kernel_views, STATE.kernel_views, OUT.kernel_views
_input_views = INPUTS.kernel_views


@njit(cache=True)
def param_views(p):
    """Named views of a params buffer (:data:`PARAMS`)."""
    return _param_views(p, int(p[P_N]), int(p[P_NV]))[0]


def params_size(n: int, nv: int) -> int:
    return PARAMS.size(n=n, nv=nv)


@njit(cache=True)
def state_views(s, n, nv):
    """Named views of a state buffer (:data:`STATE`)."""
    return _state_views(s, n, nv)[0]


def state_size(n: int, nv: int) -> int:
    return STATE.size(n=n, nv=nv)


@njit(cache=True)
def out_views(out, n, nv):
    """Named views of an out buffer (:data:`OUT`)."""
    return _out_views(out, n, nv)[0]


def out_size(n: int, nv: int) -> int:
    return OUT.size(n=n, nv=nv)


@njit(cache=True)
def input_views(inp, n):
    """Named views of an inputs buffer (:data:`INPUTS`)."""
    return _input_views(inp, n)[0]


def inputs_size(n: int) -> int:
    return INPUTS.size(n=n)


@njit(cache=True)
def reset(p, s, q_measured, out):
    """Bumpless start: the virtual robot starts at the measured posture, at rest;
    G+ is the configured point, or ('initial') the CoG of the next cycle; the
    posture target ('initial') is the measured posture."""
    n, nv = int(p[P_N]), int(p[P_NV])
    sv, ov = state_views(s, n, nv), out_views(out, n, nv)
    q, qd, v, target, qpost = sv.q, sv.qd, sv.v, sv.target, sv.qpost
    q_ref, qd_ref, vel, flags = ov.q_ref, ov.qd_ref, ov.cog_velocity, ov.flags
    qpost_param = param_views(p).qpost
    for i in range(n):
        q[i] = q_measured[i]
        qd[i] = 0.0
        q_ref[i] = q_measured[i]
        qd_ref[i] = 0.0
        qpost[i] = q_measured[i] if p[P_POST_INITIAL] != 0.0 else qpost_param[i]
    for a in range(3):
        v[a] = 0.0
        vel[a] = 0.0
        target[a] = p[P_AX + a]
    for f in range(NFLAGS):
        flags[f] = 0.0
    s[S_TARGET_PENDING] = p[P_AINITIAL]
    s[S_ENGAGED] = 0.0
    s[S_RESET] = 1.0


@njit(cache=True)
def engage_ramp(t):
    """The fields' share of their force ``t`` s after reset: 10u³ − 15u⁴ + 6u⁵, u = t / ENGAGE_S
    (zero velocity and acceleration of G at both ends of the ramp), 1 from ENGAGE_S on."""
    u = min(max(t / ENGAGE_S, 0.0), 1.0)
    return u * u * u * (10.0 + u * (-15.0 + 6.0 * u))


@njit(cache=True)
def reject(qd_ref, vel, flags, flag, status):
    """A refused step: the references' velocity and the admittance velocity zeroed, only ``flag``
    raised; returns ``status``."""
    for i in range(qd_ref.shape[0]):
        qd_ref[i] = 0.0
    for a in range(3):
        vel[a] = 0.0
    for f in range(flags.shape[0]):
        flags[f] = 0.0
    flags[flag] = 1.0
    return status


@njit(cache=True)
def step(p, s, inp, out):
    """One stabilizer cycle (module docstring). Returns OK, or NOT_RESET /
    REJECTED_INPUT / NUMERIC_FAILURE with q_ref held, qd_ref zeroed and the
    virtual robot's state (q, qd, admittance velocity, G+) untouched."""
    n, nv = int(p[P_N]), int(p[P_NV])
    dt = p[P_DT]
    pv, sv, ov = param_views(p), state_views(s, n, nv), out_views(out, n, nv)
    leg, qmin, qmax, vmax, W, outline, gains = pv.leg, pv.qmin, pv.qmax, pv.vmax, pv.W, pv.outline, pv.gains
    q, qd, v, target, qpost, locked, qd0 = sv.q, sv.qd, sv.v, sv.target, sv.qpost, sv.locked, sv.qd0
    R, org, G0, Gm, Jb6, Jb, Jw = sv.R, sv.org, sv.G0, sv.Gm, sv.Jb6, sv.Jb, sv.Jw
    K, C, A3, H, Hinv, tilt, dm = sv.K, sv.C, sv.A3, sv.H, sv.Hinv, sv.tilt, sv.dm
    q_ref, qd_ref, cog, vel, forces, total = ov.q_ref, ov.qd_ref, ov.cog, ov.cog_velocity, ov.forces, ov.total_force
    margins, flags, poly, walls = ov.margins, ov.flags, ov.polygon, ov.walls
    if s[S_RESET] == 0.0:
        return NOT_RESET
    iv = input_views(inp, n)
    q_meas = iv.q
    for i in range(n):
        if not np.isfinite(q_meas[i]):
            return reject(qd_ref, vel, flags, F_REJECTED, REJECTED_INPUT)
    if apparent_tilt(int(p[P_SOURCE]), p[P_USE_ACC] != 0.0, p[P_G0], iv.tilt, iv.acc,
                     R, tilt) != TILT_OK:
        return reject(qd_ref, vel, flags, F_REJECTED, REJECTED_INPUT)
    for f in range(NFLAGS):
        flags[f] = 0.0
    out[O_ALPHA], out[O_BETA] = tilt[0], tilt[1]

    # ground, polygon, walls (eq. 46-51, 69)
    rotation_world_foot(tilt[0], tilt[1], R)
    foot_origin(R, p[P_DELTA], p[P_Z], org)
    project_outline(outline, nv, R, p[P_Z], poly)
    compute_walls(poly, nv, p[P_ORIENT], walls)

    # virtual CoG and the measured one, in world (eq. 41, 47), margins (eq. 70-71)
    leg_com(leg, q, G0)
    base_to_world(R, org, G0, cog)
    if s[S_TARGET_PENDING] != 0.0:
        target[0], target[1], target[2] = cog[0], cog[1], cog[2]
        s[S_TARGET_PENDING] = 0.0
    dmin = signed_distances(walls, nv, cog[1], cog[2], margins)
    out[O_MIN_MARGIN] = dmin
    if dmin < 0.0:
        flags[F_OUTSIDE] = 1.0
    leg_com(leg, q_meas, G0)
    base_to_world(R, org, G0, Gm)
    out[O_MEASURED_MARGIN] = signed_distances(walls, nv, Gm[1], Gm[2], dm)

    # fields (eq. 72-78)
    for a in range(3):
        for b in range(3):
            K[a, b] = 0.0
            C[a, b] = 0.0
    if wall_forces(walls, margins, nv, int(p[P_WLAW]), gains, p[P_WR], p[P_WSHAPE], p[P_WC],
                   forces, K, C) > 0:
        flags[F_FORCE_SAT] = 1.0
    fa = forces[nv]
    if p[P_AON] != 0.0:
        attractor_force(cog, target, int(p[P_ALAW]), p[P_AK], p[P_AR], p[P_ASHAPE], p[P_AC], fa, K, C)
    else:
        fa[0], fa[1], fa[2] = 0.0, 0.0, 0.0
    for a in range(3):
        acc = 0.0
        for i in range(nv + 1):
            acc += forces[i, a]
        total[a] = acc * engage_ramp(s[S_ENGAGED])

    # admittance: velocity of G (world)
    for a in range(3):
        vel[a] = v[a]
    status, clipped = admittance_velocity(p[P_ADM_M], p[P_ADM_D], dt, p[P_ADM_VMAX], vel, total, K, C, A3)
    if status != 0:
        return reject(qd_ref, vel, flags, F_REJECTED, NUMERIC_FAILURE)
    if clipped:
        flags[F_SPEED_SAT] = 1.0

    # weighted damped pseudo-inverse of J_w = R J_G (eq. 44, 46)
    virtual_com_jacobian(leg, q, Jb, Jb6)
    for r in range(3):
        for c in range(n):
            Jw[r, c] = R[r, 0] * Jb[0, c] + R[r, 1] * Jb[1, c] + R[r, 2] * Jb[2, c]
    S = p[P_S0:P_S0 + 3]
    sigma = smallest_task_singular_value(Jw, S, W, A3)
    lam2 = damping_factor(sigma, p[P_LMIN], p[P_LMAX], p[P_SIGMA])
    out[O_SIGMA] = sigma
    out[O_LAMBDA] = np.sqrt(lam2)
    if sigma < p[P_SIGMA]:
        flags[F_SINGULAR] = 1.0
    for i in range(n):
        qd0[i] = p[P_POST_K] * (qpost[i] - q[i])
        locked[i] = 0.0
    if resolve_rates(Jw, S, W, lam2, vel, qd0, locked, H, Hinv, qd_ref) != 0:
        return reject(qd_ref, vel, flags, F_REJECTED, NUMERIC_FAILURE)
    status, nlocked = lock_joint_limits(Jw, S, W, lam2, vel, qd0, q, qmin, qmax, p[P_MARGIN], dt,
                                        locked, H, Hinv, qd_ref)
    if status != 0:
        return reject(qd_ref, vel, flags, F_REJECTED, NUMERIC_FAILURE)
    if scale_to_velocity_limits(qd_ref, vmax):
        flags[F_JOINT_SPEED_SAT] = 1.0

    # commit: integrate the virtual robot; its posture is the reference
    s[S_ENGAGED] += dt
    for a in range(3):
        v[a] = vel[a]
    if advance(q, qd_ref, dt, qmin, qmax, q_ref) or nlocked > 0:
        flags[F_LIMIT] = 1.0
    for i in range(n):
        qd[i] = qd_ref[i]
    return OK


def pack_params(robot: Robot, cfg: StabilizerConfig) -> np.ndarray:
    """The flat params array of :func:`step` for a robot and a configuration."""
    desc = robot.description
    if desc.foot is None:
        raise _config_error(cfg, "robot", f"robot file {desc.source} has no foot section (thesis Figure 20)")
    foot = desc.foot
    outline = (np.array(cfg.outline, dtype=np.float64) if cfg.outline is not None
               else rectangle_outline(foot["a"], foot["b"], foot["c"]))
    orient = outline_orientation(outline, cfg.source, "foot.outline" if cfg.outline else "robot.foot")
    geo = LegGeometry(robot.model)
    n, nv = robot.n, outline.shape[0]
    if cfg.posture_target is not None:
        bad = [i for i, x in enumerate(cfg.posture_target)
               if not robot.model.qmin[i] <= x <= robot.model.qmax[i]]
        if bad:
            raise _config_error(cfg, f"virtual_robot.posture.target[{bad[0]}]", "is outside the joint limits")
    p = np.zeros(params_size(n, nv))
    p[P_N], p[P_NV], p[P_DT] = n, nv, cfg.period
    p[P_G0] = float(np.linalg.norm(desc.gravity))
    p[P_SOURCE], p[P_USE_ACC] = cfg.tilt_source, float(cfg.use_acceleration)
    p[P_DELTA], p[P_Z], p[P_ORIENT] = foot["Delta"], foot["Z"], orient
    w = cfg.walls
    p[P_WLAW], p[P_WR], p[P_WSHAPE], p[P_WC] = w.law, w.radius, w.shape, w.damping
    if cfg.attractor is not None:
        a = cfg.attractor
        p[P_AON], p[P_ALAW], p[P_AK], p[P_AR], p[P_ASHAPE], p[P_AC] = 1.0, a.law, a.gains[0], a.radius, a.shape, a.damping
        if cfg.attractor_target is None:
            p[P_AINITIAL] = 1.0
        else:
            p[P_AX:P_AZ + 1] = cfg.attractor_target
    p[P_ADM_M], p[P_ADM_D], p[P_ADM_VMAX] = cfg.admittance_mass, cfg.admittance_damping, cfg.max_speed
    p[P_S0:P_S2 + 1] = (cfg.vertical_task_weight, 1.0, 1.0)
    p[P_LMIN], p[P_LMAX], p[P_SIGMA] = cfg.lambda_min, cfg.lambda_max, cfg.sigma_threshold
    p[P_MARGIN], p[P_POST_K] = cfg.limit_margin, cfg.posture_gain
    p[P_POST_INITIAL] = 1.0 if cfg.posture_target is None else 0.0
    v = PARAMS.views(p, n=n, nv=nv)
    v.leg[:] = geo.params
    v.qmin[:], v.qmax[:] = robot.model.qmin, robot.model.qmax
    v.vmax[:] = cfg.velocity_scale * robot.model.vmax
    v.W[:] = cfg.joint_weights
    if cfg.posture_target is not None:
        v.qpost[:] = cfg.posture_target
    v.outline[:] = outline
    v.gains[:] = w.gains
    width = float(np.min(np.ptp(outline, axis=0)))
    if 2.0 * w.radius >= width:
        raise _config_error(cfg, "walls.saturation_distance",
                            f"{w.radius} m leaves no unsaturated zone in a foot {width} m wide")
    p.flags.writeable = False
    return p


def _config_error(cfg: StabilizerConfig, key: str, message: str) -> ConfigError:
    return ConfigError(cfg.source, key, message)


class StabilizerInputError(ValueError):
    """reset() was given a posture of the wrong shape or with non-finite values."""


class Stabilizer(StabilizerShell):
    """Python shell over :func:`step`: owns the four arrays and named views.

    ``Stabilizer(robot, cfg)`` or ``Stabilizer.from_yaml(path)``; ``reset(q)``
    once when the stabilizer is engaged (bumpless), then ``step(q, tilt, acc)``
    every cycle. Outputs are views, valid until the next step: ``q_ref``,
    ``qd_ref``, ``cog`` (world), ``cog_velocity``, ``forces`` (nv+1, 3: walls
    in outline-edge order, then the attractor), ``total_force``, ``margins``
    (signed distance of the virtual CoG to every wall, > 0 inside), ``flags``
    (FLAG_NAMES order), ``polygon`` (nv, 2: world y_g, z_g), ``walls`` (nv, 3:
    n_y, n_z, c), and the scalars ``min_margin``, ``measured_margin``, ``tilt``,
    ``sigma_min``, ``damping``. A real-time loop calls the kernel
    ``step(st.params, st.state, st.inputs, st.out)`` directly after writing
    ``st.inputs`` (views ``in_q``, ``in_tilt``, ``in_acc``).
    """

    OUT, FLAG_NAMES = OUT, FLAG_NAMES

    def __init__(self, robot: Robot, cfg: StabilizerConfig) -> None:
        self.robot = robot
        self.config = cfg
        self.params = pack_params(robot, cfg)
        self.n = n = robot.n
        self.nv = nv = int(self.params[P_NV])
        self.state = np.zeros(state_size(n, nv))
        self.inputs = np.zeros(inputs_size(n))
        self.out = np.zeros(out_size(n, nv))
        iv = INPUTS.views(self.inputs, n=n)
        self.in_q, self.in_tilt, self.in_acc = iv.q, iv.tilt, iv.acc
        for name, arr in OUT.views(self.out, n=n, nv=nv)._asdict().items():
            setattr(self, name, arr)

    @classmethod
    def from_yaml(cls, path: str | Path) -> Stabilizer:
        cfg = load_config(path)
        return cls(Robot.from_yaml(cfg.robot_path), cfg)

    @property
    def target(self) -> np.ndarray:
        """G+ in the world frame (valid after the first step when 'initial')."""
        return STATE.views(self.state, n=self.n, nv=self.nv).target

    @property
    def tilt(self) -> tuple[float, float]:
        """Effective (alpha, beta) of the apparent gravity (rad)."""
        return float(self.out[O_ALPHA]), float(self.out[O_BETA])

    @property
    def sigma_min(self) -> float:
        return float(self.out[O_SIGMA])

    @property
    def damping(self) -> float:
        """lambda of the damped least squares this cycle."""
        return float(self.out[O_LAMBDA])

    def reset(self, q_measured: ArrayLike) -> None:
        q = np.ascontiguousarray(q_measured, dtype=np.float64)
        if q.shape != (self.n,) or not np.all(np.isfinite(q)):
            raise StabilizerInputError(f"q_measured must be {self.n} finite joint angles, got {q_measured!r}")
        reset(self.params, self.state, q, self.out)

    def step(self, q_measured: ArrayLike, tilt: ArrayLike, acceleration: ArrayLike = (0.0, 0.0)) -> int:
        """Copy the inputs and run one cycle; returns the kernel status (OK,
        NOT_RESET, REJECTED_INPUT, NUMERIC_FAILURE). ``tilt``: (alpha, beta) of
        the platform, or the IMU's specific force (3) in R0 axes."""
        self.in_q[:] = q_measured
        self.in_tilt[: len(tilt)] = tilt
        self.in_acc[:] = acceleration
        return step(self.params, self.state, self.inputs, self.out)
