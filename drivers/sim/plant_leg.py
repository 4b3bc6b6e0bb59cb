"""The built-in leg plant: the 4-DOF BIP leg on its two-axis tilting platform (thesis §2.3, §2.6.3).

Motors, in the plant's internal order (``AXES``): the four leg motors in the transmission's order
(ankle l2', ankle l2'', knee, hip), then the platform's α and β motors. :meth:`LegPlant.from_config`
maps them onto the bus axes by name, so motor ``i`` is bus axis ``i`` as :class:`~drivers.sim.plant.Plant`
requires.

Leg (foot clamped to the platform, base frame R0 on the foot)::

    (A + J_pᵀ J_m J_p) q̈ = J_pᵀ (τ_m − J_m J̇_p q̇ − f_m) − C q̇ − G_tilt − f_j + τ_stop

A, C from :func:`models.chain.dynamics.update` (docs/conventions.md; A includes any joint armature of the
robot YAML). J_p from the screw transmissions (thesis eq. 30-32, hip entry 2π/p_h); J_m = diag of
the rotor inertias: the rotors turn at q̇_m = J_p q̇, so they add J_pᵀ J_m (J_p q̈ + J̇_p q̇), J̇_p by
the difference of J_p across a step (below). f_m / f_j: motor-side / joint friction
F_v v + F_s sign(v) (Lammari 2012, eq. IV.10), sign(v) linear for |v| < 10 µrad/s (a load below F_s
creeps at most that fast). τ_stop: a stiff spring-damper at the YAML joint limits that only
pushes. G_tilt = −Σ m_b J_v,bᵀ g_base, g_base = R_M→O0(α, β)ᵀ g: the robot's level-floor
gravity g (thesis eq. 45-47, x_g up) turned by the platform tilt (eq. 46).

Integration: :meth:`LegPlant.step` advances one 400 µs bus cycle (a longer ``dt`` in intervals of
at most ``HOLD`` = 400 µs) over which the configuration-dependent terms are evaluated once and
held: A, C and G_tilt at the mid-interval configuration q_h = q + dt/2 q̇ predicted from the start
state (platform angles likewise); J_p as the mean of J_p(q) and J_p(q + dt q̇), J̇_p as their
difference over dt (both centred on q_h; J_p(q) is the one the previous step's outputs computed);
the velocity terms C q̇ + J_pᵀ J_m J̇_p q̇ as the matrix V, linear in the start q̇, applied to the
current q̇. At the joint velocity limits (≤ 2.5 rad/s) q moves ≤ 1 mrad per interval, so it stays
within 0.5 mrad of q_h, over which A, J_p and J_pᵀ J_m J_p change by ≤ 0.1 % and G_tilt by
≤ 0.2 N·m (sampled over the joint box); held at the midpoint, the part of that error linear in
time averages out, leaving O(dt²) per interval; V's frozen q̇ is off by ≤ |q̈| dt (≈ 0.01 rad/s).
Measured: within 4·10⁻⁵ rad of an RK4 reference over 0.3 s at 1-2 rad/s, as close as
recomputing the terms every substep (tests). Every substep evaluates what is stiff or
discontinuous: the motor friction at q̇_m = J_p q̇ (held J_p, current q̇), the joint friction, the
stops, the platform motors. A substep is semi-implicit (symplectic) Euler, v⁺ = v + h M⁻¹ F,
q⁺ = q + h v⁺, with the dissipative terms linearly implicit, (M + h D + h² K) Δv = h (F − h K v),
M = A + J_pᵀ J_m J_p, D the friction and stop damping (friction by its secant slope f(v)/v, so
Coulomb friction never reverses a motor), K the stop stiffness, inverted by 2×2-block Schur
complements (thesis eq. 33-35): stiff stops and stiction stay stable at any substep (default
≤ 50 µs).
Platform motors: J θ̈ = τ − b θ̇ − τ_load (viscous term implicit), platform angle = θ / ratio.

Neglected: the platform's angular velocity and acceleration and the height of the ankle above the
platform axes (the tilt is quasi-static: the base is inertial, only gravity turns; at the thesis'
20° in 7 s the neglected terms are < 1 % of g); the leg's reaction on the platform; elasticity of
the linkages. The leg motors' inertia and friction come from the robot YAML (``transmission.motors``),
not from the bus ``plant:`` values, which only set the platform motors.

Faults: a transmission that cannot be evaluated (a linkage cannot close, a non-finite state or
torque) raises :class:`~models.common.errors.TransmissionFault` from :meth:`LegPlant.step`, naming the
block and q; the state stays where the fault was found, at the start of an interval whose predicted
end q + dt q̇ failed (:meth:`LegPlant.reset` restarts).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numba import njit

from models import Robot, TransmissionFault
from models.chain.dynamics import gravity_vector, update
from models.linalg import spd_inverse4
from models.chain.model import data_size, data_views, model_views
from models.common.layout import Field, Layout
from models.tilt import tilted_gravity
from models.transmission import (
    LEG_N_PARAMS as N_PARAMS,
    ROTOR,
    joint_to_motor,
    joint_torque,
    motor_friction,
    motor_velocity,
    reflected_inertia,
    status_message,
    transmission_jacobian,
)

from drivers.config import BusConfig, BusConfigError
from drivers.sim.plant import Plant

AXES = ("ankle_1", "ankle_2", "knee", "hip", "platform_alpha", "platform_beta")
N_LEG = 4

STICTION_VELOCITY = 1e-5        # rad/s under which Coulomb friction is linear in v (motors and joints)
HOLD = 4e-4                      # s, longest interval over which the configuration-dependent terms are held

# status codes beyond the transmission's (models.transmission: reason + 4 * joint, > 0)
BAD_TORQUE = -1                  # a non-finite motor torque
NOT_SPD = -2                     # the effective mass matrix is not SPD (non-finite state)

# the parameter array (the bus index of each motor of AXES stored as a float)
PARAMS = Layout("leg plant params", [
    Field("substep"), Field("inertia", (2,)), Field("friction", (2,)), Field("load", (2,)), Field("ratio"),
    Field("stop_k"), Field("stop_c"), Field("gravity", (3,)), Field("order", (6,))])
_SUBSTEP, _INERTIA, _FRICTION, _LOAD = (PARAMS.offset(k) for k in ("substep", "inertia", "friction", "load"))
_RATIO, _STOP_K, _STOP_C, _GRAVITY, _ORDER = (PARAMS.offset(k) for k in ("ratio", "stop_k", "stop_c", "gravity",
                                                                         "order"))
_N_PAR = PARAMS.size()
# the work array, rows of 4 (read as an n × 4 array): the state q, q̇, platform motors (θ_α, θ_β, θ̇_α,
# θ̇_β); 4×4: J_p at the q of row qj, the held J_p, J̇_p, M_0 and V (_hold), the substep's effective mass
# matrix and its inverse; 4-vectors: the q of jq, τ_m, f_0, the substep's right-hand side, G_tilt, two
# scratch, q_h; g_base (3, in a row of 4)
WORK = Layout("leg plant work", [
    Field("q", (4,)), Field("qd", (4,)), Field("plat", (4,)), Field("jq", (4, 4)), Field("jp", (4, 4)),
    Field("jd", (4, 4)), Field("m0", (4, 4)), Field("cv", (4, 4)), Field("m", (4, 4)), Field("mi", (4, 4)),
    Field("qj", (4,)), Field("tau", (4,)), Field("f0", (4,)), Field("rhs", (4,)), Field("gt", (4,)),
    Field("v1", (4,)), Field("v2", (4,)), Field("qh", (4,)), Field("g", (4,))])
_Q, _QD, _PLAT = (WORK.offset(k) // 4 for k in ("q", "qd", "plat"))
_JQ, _JP, _JD, _M0, _CV, _M, _MI = (WORK.offset(k) // 4 for k in ("jq", "jp", "jd", "m0", "cv", "m", "mi"))
_QJ, _TAU, _F0, _RHS, _GT, _V1, _V2, _QH, _G = (WORK.offset(k) // 4 for k in ("qj", "tau", "f0", "rhs", "gt", "v1",
                                                                              "v2", "qh", "g"))
_N_WORK = WORK.size() // 4
# the output array: motor_position, motor_velocity (bus order), then the sensors
OUT = Layout("leg plant outputs", [
    Field("motor_position", (6,)), Field("motor_velocity", (6,)), Field("joint_position", (4,)),
    Field("platform", (2,)), Field("imu_gravity", (3,)), Field("sole", (3,))])
_POS, _VEL, _JOINT, _PLATFORM, _IMU, _SOLE = (OUT.offset(k) for k in OUT.names)
_N_OUT = OUT.size()
# a kernel call costs ~0.1 µs per array argument (models.chain.model), so the plant passes two buffers:
# the constants (parameters, transmission parameters, model buffer from _MODEL on) and the variables
# (work array, outputs from _OUT on, Data buffer from _DATA on)
_MODEL = _N_PAR + N_PARAMS
_OUT = 4 * _N_WORK
_DATA = _OUT + _N_OUT


class LegPlantError(ValueError):
    """A robot, parameter or axis mapping the leg plant cannot be built from."""


@njit(cache=True)
def _friction(fv, fs, v):
    """Friction F_v v + F_s sign(v) (Lammari 2012, eq. IV.10), sign(v) linear for |v| < STICTION_VELOCITY,
    and its secant slope d = f / v: taken implicitly, F_s v⁺ / |v| slows a sliding motor down to
    the stiction band without ever reversing it, at any substep."""
    d = fv + fs / max(abs(v), STICTION_VELOCITY)
    return d * v, d


@njit(cache=True)
def _stop(k, c, q, qd, lo, hi):
    """Joint-limit spring-damper: (torque, active); it pushes back inside, never pulls."""
    if q > hi:
        f = -k * (q - hi) - c * qd
        if f < 0.0:
            return f, True
    elif q < lo:
        f = k * (lo - q) - c * qd
        if f > 0.0:
            return f, True
    return 0.0, False


@njit(cache=True)
def _hold(mbuf, dbuf, P, par, work, dt):
    """The configuration-dependent terms of an interval ``dt``, evaluated once and held over its
    substeps (module docstring): J_p the mean of J_p at q and at the predicted end q_e = q + dt q̇,
    J̇_p = (J_p(q_e) − J_p(q)) / dt, the rest at the midpoint q_h = q + dt/2 q̇ (platform likewise)
    with the start q̇: M_0 = A + J_pᵀ J_m J_p, V = C + J_pᵀ J_m J̇_p and f_0 = J_pᵀ τ_m − G_tilt.
    J_p(q) is the one :func:`_outputs` left if q has not moved since. Returns a transmission status."""
    q = work[_Q]
    qd = work[_QD]
    plat = work[_PLAT]
    qh = work[_QH]
    jq = work[_JQ:_JQ + 4]
    qj = work[_QJ]
    jp = work[_JP:_JP + 4]
    jd = work[_JD:_JD + 4]
    m0 = work[_M0:_M0 + 4]
    cv = work[_CV:_CV + 4]
    f0 = work[_F0]
    gt = work[_GT]
    g = work[_G]
    if not (q[0] == qj[0] and q[1] == qj[1] and q[2] == qj[2] and q[3] == qj[3]):
        status = transmission_jacobian(P, q, jq)
        if status != 0:
            return status
        for j in range(4):
            qj[j] = q[j]
    for j in range(4):
        qh[j] = q[j] + dt * qd[j]                       # q_e, then q_h below
    status = transmission_jacobian(P, qh, jd)
    if status != 0:
        return status
    for i in range(4):
        qh[i] = q[i] + 0.5 * dt * qd[i]
        for j in range(4):
            jd[i, j] = (jd[i, j] - jq[i, j]) / dt
            jp[i, j] = jq[i, j] + 0.5 * dt * jd[i, j]
    update(mbuf, dbuf, qh, qd)
    mass = model_views(mbuf).mass
    d = data_views(dbuf, 4)
    Jb, A, C = d.Jb, d.A, d.C
    ratio = par[_RATIO]
    tilted_gravity((plat[0] + 0.5 * dt * plat[2]) / ratio, (plat[1] + 0.5 * dt * plat[3]) / ratio,
                   par[_GRAVITY:_GRAVITY + 3], g)
    gravity_vector(mass, Jb, g, gt)
    joint_torque(jp, work[_TAU], f0)                    # J_pᵀ τ_m
    reflected_inertia(P, jp, m0)                        # J_pᵀ diag(J_m) J_p
    for a in range(4):
        f0[a] -= gt[a]
        for b in range(4):
            s = 0.0
            for i in range(4):
                s += jp[i, a] * P[ROTOR + i] * jd[i, b]
            m0[a, b] += A[a, b]
            cv[a, b] = C[a, b] + s                      # V q̇ = C q̇ + J_pᵀ J_m J̇_p q̇
    return 0


@njit(cache=True)
def _substeps(mbuf, P, par, work, torque, n, h):
    """n semi-implicit Euler substeps h of the leg on the terms held by :func:`_hold`, and of the
    platform motors (module docstring); returns a status."""
    q = work[_Q]
    qd = work[_QD]
    plat = work[_PLAT]
    jp = work[_JP:_JP + 4]
    m0 = work[_M0:_M0 + 4]
    cv = work[_CV:_CV + 4]
    m = work[_M:_M + 4]
    mi = work[_MI:_MI + 4]
    f0 = work[_F0]
    rhs = work[_RHS]
    fm = work[_V1]
    dm = work[_V2]
    mv = model_views(mbuf)
    fv_j, fs_j, qmin, qmax = mv.viscous, mv.coulomb, mv.qmin, mv.qmax
    k, c = par[_STOP_K], par[_STOP_C]
    for _ in range(n):
        motor_velocity(jp, qd, fm)                      # q̇_m = J_p q̇ (eq. 31)
        for i in range(4):
            fv, fc = motor_friction(P, i)
            fm[i], dm[i] = _friction(fv, fc, fm[i])
        for a in range(4):
            s = f0[a]
            for i in range(4):
                s -= jp[i, a] * fm[i]                   # J_pᵀ f_m
            for b in range(4):
                s -= cv[a, b] * qd[b]                   # V q̇
            rhs[a] = s
            for b in range(a + 1):                      # the lower triangle, all spd_inverse4 reads
                d = 0.0
                for i in range(4):
                    d += jp[i, a] * dm[i] * jp[i, b]
                m[a, b] = m0[a, b] + h * d
        for j in range(4):
            f, d = _friction(fv_j[j], fs_j[j], qd[j])
            rhs[j] -= f
            m[j, j] += h * d
            f, active = _stop(k, c, q[j], qd[j], qmin[j], qmax[j])
            if active:
                rhs[j] += f - h * k * qd[j]
                m[j, j] += h * c + h * h * k
        if spd_inverse4(m, mi) != 0:
            return NOT_SPD
        for j in range(4):
            qd[j] += h * (mi[j, 0] * rhs[0] + mi[j, 1] * rhs[1] + mi[j, 2] * rhs[2] + mi[j, 3] * rhs[3])
            q[j] += h * qd[j]
        for i in range(2):
            J, b = par[_INERTIA + i], par[_FRICTION + i]
            tau = torque[int(par[_ORDER + 4 + i])] - par[_LOAD + i]
            plat[2 + i] = (J * plat[2 + i] + h * tau) / (J + h * b)
            plat[i] += h * plat[2 + i]
    return 0


@njit(cache=True)
def _outputs(P, par, work, out):
    """Motor positions q_m = 2π/p (l(q) − l(0)), velocities J_p q̇ (eq. 30-32), the platform motors
    and the sensors, written in bus order; returns a transmission status."""
    q = work[_Q]
    plat = work[_PLAT]
    jq = work[_JQ:_JQ + 4]
    qm = work[_V1]
    vm = work[_V2]
    g = work[_G]
    status = joint_to_motor(P, q, qm)
    if status == 0:
        status = transmission_jacobian(P, q, jq)
    if status != 0:
        return status
    for j in range(4):
        work[_QJ, j] = q[j]                             # jq is J_p at this q
    motor_velocity(jq, work[_QD], vm)
    for i in range(4):
        bus = int(par[_ORDER + i])
        out[_POS + bus] = qm[i]
        out[_VEL + bus] = vm[i]
        out[_JOINT + i] = q[i]
    ratio = par[_RATIO]
    for i in range(2):
        bus = int(par[_ORDER + 4 + i])
        out[_POS + bus] = plat[i]
        out[_VEL + bus] = plat[2 + i]
        out[_PLATFORM + i] = plat[i] / ratio
    tilted_gravity(out[_PLATFORM], out[_PLATFORM + 1], par[_GRAVITY:_GRAVITY + 3], g)
    for r in range(3):
        out[_IMU + r] = -g[r]
    return 0


@njit(cache=True)
def _step(const, buf, torque, dt):
    """Advance ``dt`` in equal holds of at most HOLD, each in equal substeps of at most
    ``par[_SUBSTEP]``; returns a status."""
    par, P, mbuf = const[:_N_PAR], const[_N_PAR:_MODEL], const[_MODEL:]
    work, out, dbuf = buf[:_OUT].reshape((_N_WORK, 4)), buf[_OUT:_DATA], buf[_DATA:]
    for i in range(6):
        if not math.isfinite(torque[int(par[_ORDER + i])]):
            return BAD_TORQUE
    for i in range(4):
        work[_TAU, i] = torque[int(par[_ORDER + i])]
    holds = math.ceil(dt / HOLD - 1e-9)
    span = dt / max(holds, 1)
    n = max(1, math.ceil(span / par[_SUBSTEP] - 1e-9))
    for _ in range(holds):
        status = _hold(mbuf, dbuf, P, par, work, span)
        if status == 0:
            status = _substeps(mbuf, P, par, work, torque, n, span / n)
        if status != 0:
            return status
    return _outputs(P, par, work, out)


def finite_pair(value, name: str, error: type[Exception] = ValueError) -> np.ndarray:
    """``value`` as two finite floats (a scalar is used twice), else ``error`` naming ``name``."""
    v = np.broadcast_to(np.asarray(value, dtype=np.float64), 2).copy()
    if not np.all(np.isfinite(v)):
        raise error(f"{name} must be finite, got {v.tolist()}")
    return v


def bus_axes(config: BusConfig, plant: str) -> list[str]:
    """The bus axis names of ``config``, which must be ``AXES`` in any order, else a
    :class:`BusConfigError` naming ``plant``, the missing and the unexpected axes."""
    names = [a.name for a in config.axes]
    if sorted(names) != sorted(AXES):
        missing = [a for a in AXES if a not in names]
        extra = [a for a in names if a not in AXES]
        raise BusConfigError(f"bus axes {names} do not match {plant}'s motors {list(AXES)}: "
                             f"missing {missing}, unexpected {extra}")
    return names


def _pair(value, name: str) -> np.ndarray:
    return finite_pair(value, name, LegPlantError)


class LegPlant(Plant):
    """The BIP leg on the tilting platform, six motors (see the module docstring).

    ``platform_inertia`` / ``platform_friction`` / ``platform_load`` are motor-side (kg·m²,
    N·m·s/rad, N·m; one value or one per axis), ``platform_ratio`` the motor rad per platform rad,
    ``q0`` / ``platform0`` the initial joint / platform angles (rad), ``substep`` the longest
    integration step (s), ``axes`` the six motor names of ``AXES`` in bus order (motor i = axes[i]),
    ``stop_stiffness`` / ``stop_damping`` the joint-limit spring-damper (N·m/rad, N·m·s/rad).
    """

    def __init__(self, robot: Robot, platform_inertia: float | Sequence[float] = 4.0e-4,
                 platform_ratio: float = 50.0, q0: Sequence[float] | None = None, substep: float = 50e-6,
                 *, platform_friction: float | Sequence[float] = 1.0e-3,
                 platform_load: float | Sequence[float] = 0.0, platform0: Sequence[float] = (0.0, 0.0),
                 stop_stiffness: float = 1.0e6, stop_damping: float = 2.0e3,
                 axes: Sequence[str] = AXES) -> None:
        tr = robot.transmission
        if tr is None or robot.n != N_LEG:
            raise LegPlantError(f"the leg plant needs a {N_LEG}-joint robot with a transmission: section, "
                                f"got {robot.model.name!r} with {robot.n} joints"
                                f"{'' if tr is not None else ' and no transmission'}")
        if len(axes) != len(AXES) or set(axes) != set(AXES):
            raise LegPlantError(f"axes must list the motors {list(AXES)} once each (in bus order), "
                                f"got {list(axes)}")
        inertia = _pair(platform_inertia, "platform_inertia")
        friction = _pair(platform_friction, "platform_friction")
        if np.any(inertia <= 0) or np.any(friction < 0):
            raise LegPlantError(f"platform_inertia must be > 0 and platform_friction >= 0, "
                                f"got {inertia.tolist()} and {friction.tolist()}")
        for name, v in (("platform_ratio", platform_ratio), ("substep", substep),
                        ("stop_stiffness", stop_stiffness), ("stop_damping", stop_damping)):
            if not (math.isfinite(v) and v > 0):
                raise LegPlantError(f"{name} must be a finite number > 0, got {v!r}")
        model = robot.model
        self.robot = robot
        self.axes = tuple(axes)
        self.n_motors = len(AXES)
        par = np.zeros(_N_PAR)
        par[_SUBSTEP] = substep
        par[_INERTIA:_INERTIA + 2] = inertia
        par[_FRICTION:_FRICTION + 2] = friction
        par[_LOAD:_LOAD + 2] = _pair(platform_load, "platform_load")
        par[[_RATIO, _STOP_K, _STOP_C]] = platform_ratio, stop_stiffness, stop_damping
        par[_GRAVITY:_GRAVITY + 3] = model.gravity
        par[_ORDER:_ORDER + 6] = [self.axes.index(name) for name in AXES]
        self._const = np.concatenate([par, tr.params, model.buf])
        self._const.flags.writeable = False
        self._par, self._P = self._const[:_N_PAR], self._const[_N_PAR:_MODEL]
        # own Data workspace (the controller's is untouched), after the work array and the outputs
        self._buf = np.zeros(_DATA + data_size(N_LEG))

        q0 = np.zeros(N_LEG) if q0 is None else np.array(q0, dtype=np.float64)
        if q0.shape != (N_LEG,) or not np.all((model.qmin <= q0) & (q0 <= model.qmax)):
            raise LegPlantError(f"q0 must be {N_LEG} joint angles within the limits "
                                f"{model.qmin.tolist()} .. {model.qmax.tolist()} rad, got {q0.tolist()}")
        self._state0 = np.zeros((3, 4))             # rows _Q, _QD, _PLAT of the work array
        self._state0[_Q] = q0
        self._state0[_PLAT, :2] = platform_ratio * _pair(platform0, "platform0")
        self._work = self._buf[:_OUT].reshape((_N_WORK, 4))
        self._out = self._buf[_OUT:_DATA]
        self._work[_QJ] = np.nan                     # no J_p computed yet
        out = OUT.views(self._out)
        self.motor_position, self.motor_velocity = out.motor_position, out.motor_velocity
        self.sensors = {k: getattr(out, k) for k in ("joint_position", "platform", "imu_gravity", "sole")}
        # the clamped foot is always flat: its load cells (drivers.sim.hil.plant_mujoco's ``sole``) read
        # the leg's weight at the sole's centre, the clamp carrying the rest
        foot = robot.description.foot
        self._out[_SOLE:_SOLE + 3] = (float(model.mass.sum() * np.linalg.norm(model.gravity)), 0.0,
                                      0.5 * (foot["b"] - foot["c"]) if foot else 0.0)
        self.reset()

    @classmethod
    def from_config(cls, config: BusConfig, robot_yaml: str | Path | Robot, **options) -> LegPlant:
        """A leg plant on the bus axes of ``config``, matched to ``AXES`` by name (any bus order);
        the platform motors take the inertia, friction and load of their bus ``plant:`` values."""
        names = bus_axes(config, "the leg plant")
        robot = robot_yaml if isinstance(robot_yaml, Robot) else Robot.from_yaml(robot_yaml)
        platform = [config.axis(name).plant for name in AXES[N_LEG:]]
        options.setdefault("platform_inertia", [p.inertia for p in platform])
        options.setdefault("platform_friction", [p.friction for p in platform])
        options.setdefault("platform_load", [p.load_torque for p in platform])
        return cls(robot, axes=names, **options)

    def reset(self) -> None:
        self._work[_Q:_PLAT + 1] = self._state0
        self._raise(_outputs(self._P, self._par, self._work, self._out))

    def set_platform(self, alpha: float, beta: float, alpha_rate: float, beta_rate: float) -> None:
        """Impose the platform's angles and rates (rad, rad/s) before a step, for a platform moved
        by something else than its two motors (the Stewart-Gough rig of :mod:`drivers.sim.plant_rig`)."""
        r, plat = self._par[_RATIO], self._work[_PLAT]
        plat[0], plat[1], plat[2], plat[3] = r * alpha, r * beta, r * alpha_rate, r * beta_rate

    def step(self, dt: float, motor_torque: np.ndarray) -> None:
        status = _step(self._const, self._buf, motor_torque, dt)
        if status != 0:
            self._raise(status)

    def _raise(self, status: int) -> None:
        if status == 0:
            return
        q = np.round(self._work[_Q], 6).tolist()
        reason = {BAD_TORQUE: "a motor torque is not finite",
                  NOT_SPD: "the mass matrix is not positive definite (non-finite state)"}.get(
                      status, status_message(status))
        raise TransmissionFault(f"leg plant: {reason} at q = {q} rad")
