"""The built-in leg plant: the 4-DOF BIP leg on its two-axis tilting platform (thesis §2.3, §2.6.3).

Motors, in the plant's internal order (``AXES``): the four leg motors in the transmission's order
(ankle l2', ankle l2'', knee, hip), then the platform's α and β motors. :meth:`LegPlant.from_config`
maps them onto the bus axes by name, so motor ``i`` is bus axis ``i`` as :class:`~drivers.plant.Plant`
requires.

Leg (foot clamped to the platform, base frame R0 on the foot)::

    (A + J_pᵀ J_m J_p) q̈ = J_pᵀ (τ_m − J_m J̇_p q̇ − f_m) − C q̇ − G_tilt − f_j + τ_stop

A, C from :func:`models.dynamics.update` (design.md §4; A includes any joint armature of the
robot YAML). J_p from the screw transmissions (thesis eq. 30-32, hip entry 2π/p_h); J_m = diag of
the rotor inertias: the rotors turn at q̇_m = J_p q̇, so they add J_pᵀ J_m (J_p q̈ + J̇_p q̇), the
Coriolis part J̇_p q̇ by a central difference of J_p q̇ along q̇. f_m / f_j: motor-side / joint
friction F_v v + F_s sign(v) (seed 001 eq. IV.10), sign(v) linear for |v| < 10 µrad/s (a load
below F_s creeps at most that fast). τ_stop: a stiff spring-damper at the YAML joint limits that
only pushes. G_tilt = −Σ m_b J_v,bᵀ g_base, g_base = R_M→O0(α, β)ᵀ g: the robot's level-floor
gravity g (thesis eq. 45-47, x_g up) turned by the platform tilt (eq. 46).

Integration: semi-implicit (symplectic) Euler, v⁺ = v + h M⁻¹ F, q⁺ = q + h v⁺, with the
dissipative terms linearly implicit, (M + h D + h² K) Δv = h (F − h K v), D the friction and stop
damping (friction by its secant slope f(v)/v, so Coulomb friction never reverses a motor), K the
stop stiffness: stiff stops and stiction stay stable at any substep (default ≤ 50 µs).
Platform motors: J θ̈ = τ − b θ̇ − τ_load (viscous term implicit), platform angle = θ / ratio.

Neglected: the platform's angular velocity and acceleration and the height of the ankle above the
platform axes (the tilt is quasi-static: the base is inertial, only gravity turns; at the thesis'
20° in 7 s the neglected terms are < 1 % of g); the leg's reaction on the platform; elasticity of
the linkages. The leg motors' inertia and friction come from the robot YAML (``transmission.motors``),
not from the bus ``plant:`` values, which only set the platform motors.

Faults: a transmission that cannot be evaluated (a linkage cannot close, a non-finite state or
torque) raises :class:`~models.errors.TransmissionFault` from :meth:`LegPlant.step`, naming the
block and q; the state stays where the fault was found (:meth:`LegPlant.reset` restarts).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numba import njit

from models import Data, Robot, TransmissionFault
from models.dynamics import gravity_vector, update
from models.linalg import spd_solve
from models.model import data_views, model_views
from models.transmission import (
    COULOMB,
    ROTOR,
    VISCOUS,
    joint_to_motor,
    joint_torque,
    motor_velocity,
    reflected_inertia,
    status_message,
    transmission_jacobian,
)

from .config import BusConfig, BusConfigError
from .plant import Plant

AXES = ("ankle_1", "ankle_2", "knee", "hip", "platform_alpha", "platform_beta")
N_LEG = 4

STICTION_VELOCITY = 1e-5        # rad/s under which Coulomb friction is linear in v (motors and joints)
BIAS_STEP = 1e-6                 # rad, joint step of the central difference giving J̇_p q̇

# status codes beyond the transmission's (models.transmission: reason + 4 * block, > 0)
BAD_TORQUE = -1                  # a non-finite motor torque
NOT_SPD = -2                     # the effective mass matrix is not SPD (non-finite state)

# layout of the parameter array
_SUBSTEP, _INERTIA, _FRICTION, _LOAD, _RATIO, _STOP_K, _STOP_C, _GRAVITY = 0, 1, 3, 5, 7, 8, 9, 10
_N_PAR = 13
# layout of the scratch array: J_p, the effective mass matrix, J_p at q ± δ, vectors
_JP, _M, _JP2, _RHS, _G, _GT, _V1, _V2, _QT, _F, _TAU = 0, 16, 32, 48, 52, 55, 59, 63, 67, 71, 75
_N_WORK = 79
# layout of the output array: motor_position, motor_velocity, then the sensors
_POS, _VEL, _JOINT, _PLATFORM, _IMU = 0, 6, 12, 16, 18
_N_OUT = 21


class LegPlantError(ValueError):
    """A robot, parameter or axis mapping the leg plant cannot be built from."""


@njit(cache=True)
def _base_gravity(par, alpha, beta, g):
    """g_base = R_M→O0(α, β)ᵀ g_world, R_M→O0 of thesis eq. 46: its first row is
    (cα cβ, −sα, −cα sβ), second (sα cβ, cα, −sα sβ), third (sβ, 0, cβ)."""
    ca, sa = math.cos(alpha), math.sin(alpha)
    cb, sb = math.cos(beta), math.sin(beta)
    x, y, z = par[_GRAVITY], par[_GRAVITY + 1], par[_GRAVITY + 2]
    g[0] = ca * cb * x + sa * cb * y + sb * z
    g[1] = -sa * x + ca * y
    g[2] = -ca * sb * x - sa * sb * y + cb * z


@njit(cache=True)
def _friction(fv, fs, v):
    """Friction F_v v + F_s sign(v) (seed 001 eq. IV.10), sign(v) linear for |v| < STICTION_VELOCITY,
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
def motor_bias(P, q, qd, jp2, qt, a, b):
    """a = J̇_p q̇ (the motor acceleration at q̈ = 0), a central difference of J_p q̇ along q̇ with a
    joint step of BIAS_STEP; b, qt, jp2 are scratch. Returns a transmission status."""
    speed = 0.0
    for j in range(4):
        speed = max(speed, abs(qd[j]))
    if speed == 0.0:
        a[:] = 0.0
        return 0
    eps = BIAS_STEP / speed
    for sign in (1.0, -1.0):
        for j in range(4):
            qt[j] = q[j] + sign * eps * qd[j]
        status = transmission_jacobian(P, qt, jp2)
        if status != 0:
            return status
        motor_velocity(jp2, qd, a if sign > 0.0 else b)
    for i in range(4):
        a[i] = (a[i] - b[i]) / (2.0 * eps)
    return 0


@njit(cache=True)
def _leg_substep(mbuf, dbuf, P, par, state, work, h):
    """One semi-implicit Euler substep of the leg (module docstring); returns a status."""
    q = state[0:4]
    qd = state[4:8]
    jp = work[_JP:_JP + 16].reshape((4, 4))
    m = work[_M:_M + 16].reshape((4, 4))
    rhs = work[_RHS:_RHS + 4]
    g = work[_G:_G + 3]
    gt = work[_GT:_GT + 4]
    vm = work[_V1:_V1 + 4]
    fm = work[_F:_F + 4]
    status = transmission_jacobian(P, q, jp)
    if status == 0:
        status = motor_bias(P, q, qd, work[_JP2:_JP2 + 16].reshape((4, 4)), work[_QT:_QT + 4], fm,
                             work[_V2:_V2 + 4])
    if status != 0:
        return status
    for i in range(4):
        fm[i] *= P[ROTOR + i]                           # J_m J̇_p q̇
    update(mbuf, dbuf, q, qd)
    mv = model_views(mbuf)
    mass, fv_j, fs_j, qmin, qmax = mv[2], mv[8], mv[9], mv[10], mv[11]
    dv = data_views(dbuf, 4)
    Jb, A, G, hv = dv[4], dv[7], dv[10], dv[11]
    ratio = par[_RATIO]
    _base_gravity(par, state[8] / ratio, state[9] / ratio, g)
    gravity_vector(mass, Jb, g, gt)
    joint_torque(jp, work[_TAU:_TAU + 4], rhs)          # J_pᵀ τ_m
    reflected_inertia(P, jp, m)                         # J_pᵀ diag(J_m) J_p
    motor_velocity(jp, qd, vm)                          # q̇_m = J_p q̇ (eq. 31)
    for i in range(4):
        f, d = _friction(P[VISCOUS + i], P[COULOMB + i], vm[i])
        fm[i] += f
        vm[i] = d                                       # vm now holds the friction slope
    for a in range(4):
        s = 0.0
        for i in range(4):
            s += jp[i, a] * fm[i]
        rhs[a] -= s + hv[a] - G[a] + gt[a]              # J_pᵀ (J_m J̇_p q̇ + f_m) + C q̇ + G_tilt
        for b in range(4):
            d = 0.0
            for i in range(4):
                d += jp[i, a] * vm[i] * jp[i, b]
            m[a, b] += A[a, b] + h * d
    k, c = par[_STOP_K], par[_STOP_C]
    for j in range(4):
        f, d = _friction(fv_j[j], fs_j[j], qd[j])
        rhs[j] -= f
        m[j, j] += h * d
        f, active = _stop(k, c, q[j], qd[j], qmin[j], qmax[j])
        if active:
            rhs[j] += f - h * k * qd[j]
            m[j, j] += h * c + h * h * k
    if spd_solve(m, rhs) != 0:
        return NOT_SPD
    for j in range(4):
        qd[j] += h * rhs[j]
        q[j] += h * qd[j]
    return 0


@njit(cache=True)
def _outputs(P, par, state, work, out, order):
    """Motor positions q_m = 2π/p (l(q) − l(0)), velocities J_p q̇ (eq. 30-32), the platform motors
    and the sensors, written in bus order; returns a transmission status."""
    jp = work[_JP:_JP + 16].reshape((4, 4))
    g = work[_G:_G + 3]
    qm = work[_V1:_V1 + 4]
    vm = work[_V2:_V2 + 4]
    q = state[0:4]
    status = joint_to_motor(P, q, qm)
    if status == 0:
        status = transmission_jacobian(P, q, jp)
    if status != 0:
        return status
    motor_velocity(jp, state[4:8], vm)
    for i in range(4):
        out[_POS + order[i]] = qm[i]
        out[_VEL + order[i]] = vm[i]
        out[_JOINT + i] = q[i]
    ratio = par[_RATIO]
    for i in range(2):
        out[_POS + order[4 + i]] = state[8 + i]
        out[_VEL + order[4 + i]] = state[10 + i]
        out[_PLATFORM + i] = state[8 + i] / ratio
    _base_gravity(par, out[_PLATFORM], out[_PLATFORM + 1], g)
    for r in range(3):
        out[_IMU + r] = -g[r]
    return 0


@njit(cache=True)
def _step(mbuf, dbuf, P, par, state, work, out, order, torque, dt):
    """Advance ``dt`` in equal substeps of at most ``par[_SUBSTEP]``; returns a status."""
    tau_m = work[_TAU:_TAU + 4]
    for i in range(6):
        if not math.isfinite(torque[order[i]]):
            return BAD_TORQUE
    for i in range(4):
        tau_m[i] = torque[order[i]]
    n = max(1, math.ceil(dt / par[_SUBSTEP] - 1e-9))
    h = dt / n
    for _ in range(n):
        status = _leg_substep(mbuf, dbuf, P, par, state, work, h)
        if status != 0:
            return status
        for i in range(2):
            J, b = par[_INERTIA + i], par[_FRICTION + i]
            tau = torque[order[4 + i]] - par[_LOAD + i]
            state[10 + i] = (J * state[10 + i] + h * tau) / (J + h * b)
            state[8 + i] += h * state[10 + i]
    return _outputs(P, par, state, work, out, order)


def finite_pair(value, name: str, error: type[Exception] = ValueError) -> np.ndarray:
    """``value`` as two finite floats (a scalar is used twice), else ``error`` naming ``name``."""
    v = np.broadcast_to(np.asarray(value, dtype=np.float64), 2).copy()
    if not np.all(np.isfinite(v)):
        raise error(f"{name} must be finite, got {v.tolist()}")
    return v


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
        self._mbuf = model.buf
        self._data = Data(model)                   # own workspace: the controller's Data is untouched
        self._P = tr.params
        self._par = np.zeros(_N_PAR)
        self._par[_SUBSTEP] = substep
        self._par[_INERTIA:_INERTIA + 2] = inertia
        self._par[_FRICTION:_FRICTION + 2] = friction
        self._par[_LOAD:_LOAD + 2] = _pair(platform_load, "platform_load")
        self._par[[_RATIO, _STOP_K, _STOP_C]] = platform_ratio, stop_stiffness, stop_damping
        self._par[_GRAVITY:_GRAVITY + 3] = model.gravity
        self._order = np.array([self.axes.index(name) for name in AXES], dtype=np.int64)

        q0 = np.zeros(N_LEG) if q0 is None else np.array(q0, dtype=np.float64)
        if q0.shape != (N_LEG,) or not np.all((model.qmin <= q0) & (q0 <= model.qmax)):
            raise LegPlantError(f"q0 must be {N_LEG} joint angles within the limits "
                                f"{model.qmin.tolist()} .. {model.qmax.tolist()} rad, got {q0.tolist()}")
        self._state0 = np.zeros(12)
        self._state0[0:4] = q0
        self._state0[8:10] = platform_ratio * _pair(platform0, "platform0")
        self._state = self._state0.copy()
        self._work = np.zeros(_N_WORK)
        self._out = np.zeros(_N_OUT)
        self.motor_position = self._out[_POS:_POS + 6]
        self.motor_velocity = self._out[_VEL:_VEL + 6]
        self.sensors = {"joint_position": self._out[_JOINT:_JOINT + 4],
                        "platform": self._out[_PLATFORM:_PLATFORM + 2],
                        "imu_gravity": self._out[_IMU:_IMU + 3]}
        self.reset()

    @classmethod
    def from_config(cls, config: BusConfig, robot_yaml: str | Path | Robot, **options) -> LegPlant:
        """A leg plant on the bus axes of ``config``, matched to ``AXES`` by name (any bus order);
        the platform motors take the inertia, friction and load of their bus ``plant:`` values."""
        names = [a.name for a in config.axes]
        if sorted(names) != sorted(AXES):
            missing = [a for a in AXES if a not in names]
            extra = [a for a in names if a not in AXES]
            raise BusConfigError(f"bus axes {names} do not match the leg plant's motors {list(AXES)}: "
                                 f"missing {missing}, unexpected {extra}")
        robot = robot_yaml if isinstance(robot_yaml, Robot) else Robot.from_yaml(robot_yaml)
        platform = [config.axis(name).plant for name in AXES[N_LEG:]]
        options.setdefault("platform_inertia", [p.inertia for p in platform])
        options.setdefault("platform_friction", [p.friction for p in platform])
        options.setdefault("platform_load", [p.load_torque for p in platform])
        return cls(robot, axes=names, **options)

    def reset(self) -> None:
        self._state[:] = self._state0
        self._raise(_outputs(self._P, self._par, self._state, self._work, self._out, self._order))

    def step(self, dt: float, motor_torque: np.ndarray) -> None:
        status = _step(self._mbuf, self._data.buf, self._P, self._par, self._state, self._work, self._out,
                       self._order, motor_torque, dt)
        if status != 0:
            self._raise(status)

    def _raise(self, status: int) -> None:
        if status == 0:
            return
        q = np.round(self._state[:4], 6).tolist()
        reason = {BAD_TORQUE: "a motor torque is not finite",
                  NOT_SPD: "the mass matrix is not positive definite (non-finite state)"}.get(
                      status, status_message(status))
        raise TransmissionFault(f"leg plant: {reason} at q = {q} rad")
