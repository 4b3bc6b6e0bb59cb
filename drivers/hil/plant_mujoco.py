"""The BIP leg standing free on its tilting platform, simulated by MuJoCo (issue 6).

Same motors, order and interface as :class:`~drivers.plant_leg.LegPlant`: the four leg motors in
the transmission's order (ankle l2', ankle l2'', knee, hip), then the platform's α and β motors
(``AXES``), mapped onto the bus axes by name. Differences: the foot is not clamped (it can tip,
slide and lift; the leg's reaction moves the platform), and the model is the MJCF of
:func:`drivers.hil.mjcf.build_mjcf` (see there for frames and the transmission as tendons).

One step of ``dt`` = n equal MuJoCo steps of at most ``timestep``; before each, J_p(q) (thesis
eq. 30-32) is written into the tendon coefficients, so the reflected rotor inertia J_pᵀ J_m J_p,
the motor friction and the motor torques J_pᵀ τ_m are exact at the step's posture, and the rotor
bias −J_pᵀ J_m J̇_p q̇ (J̇_p q̇ by the leg plant's central difference) is an applied joint force.
Integrator ``implicitfast`` (dampings implicit), Coulomb friction by MuJoCo's frictionloss.

Outputs, updated in place after every step: motor positions q_m = 2π/p (l(q) − l(0)) and
velocities J_p q̇ (eq. 30-32), platform motors = ratio × hinge angle; ``sensors``:

- ``joint_position`` (4, rad), ``platform`` (α, β, rad): encoders through the drives;
- ``imu_gravity`` (3, m/s²): accelerometer at O0 in R0 axes, the specific force (LegPlant's
  convention: R_M→O0ᵀ (9.81, 0, 0) at rest); ``imu_orientation`` (w, x, y, z): the rotation from the
  thesis world frame (x_g up) to R0, eq. 46's R_M→O0 when the foot is flat on the platform;
- ``foot_forces`` (4, N): uniaxial load cells along x0 under the sole corners A (+a, toe b),
  B (+a, heel −c), C (−a, heel), D (−a, toe) (eq. 48-49 order) of a rigid sole plate, each
  contact force split bilinearly among them; ``cop`` (y0, z0) in R0 (m), Σ F_i p_i / Σ F_i,
  NaN when the sole carries less than ``MIN_LOAD``;

and the ground truth for scenarios: ``foot_tilt`` (rad, foot x0 vs the plate normal),
``foot_lift`` (m, highest sole corner above the plate), ``hip_height`` (m, hip axis above M),
``com_world`` (3, m, CoG of foot + leg in thesis world axes from M), ``support_margin`` (m, signed
distance of the CoG's vertical projection to the nearest edge of the sole's projection, > 0 inside),
``fallen`` (0/1, latched until :meth:`MujocoPlant.reset`: ``foot_tilt`` > 5° or the hip more than
10 cm below its height at reset). The IMU and the ground truth come from MuJoCo's last forward
pass, so they describe the state one MuJoCo step (≤ ``timestep``) before the encoders.
Deterministic: the same torques give the same trajectory.

``bolt_foot``: the foot is welded to the plate (:func:`~drivers.hil.mjcf.build_mjcf` ``bolted``), the
thesis' squat bench (§2.6.1); it follows the platform and cannot tip. External pushes:
:meth:`MujocoPlant.control` ``{"op": "push", "body": "hip", "force": [fx, fy, fz], "duration": s}``
applies the force (N, thesis world axes: x up, y lateral, z toe) at the centre of mass of the hip
body (the last leg body) for ``duration`` s of plant time, from the next step on (served over the
HIL's UDP control channel by :func:`drivers.backends.udp.serve_udp`).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import mujoco
import numpy as np
from numba import njit

from models import Robot, TransmissionFault
from models.transmission import ROTOR, joint_to_motor, motor_velocity, status_message, transmission_jacobian

from ..config import BusConfig, BusConfigError
from ..plant import Plant
from ..plant_leg import AXES, N_LEG, finite_pair, motor_bias
from .mjcf import FOOT, IMU, LEG_MOTORS, PLATFORM, PLATFORM_JOINTS, TENDON_JOINTS, WORLD_FROM_G, build_mjcf

TILT_LIMIT = math.radians(5.0)   # rad, foot tilt relative to the plate beyond which it has fallen
DROP_LIMIT = 0.10                # m, hip drop since reset beyond which it has fallen
MIN_LOAD = 1.0                   # N, sole load under which the CoP is undefined (NaN)

# layout of the output array
_POS, _VEL, _JOINT, _PLATFORM, _IMU, _QUAT, _FORCES, _COP = 0, 6, 12, 16, 18, 21, 25, 29
_TILT, _LIFT, _HIP, _COM, _MARGIN, _FALLEN = 31, 32, 33, 34, 37, 38
_N_OUT = 39
_VECTORS = {"joint_position": (_JOINT, 4), "platform": (_PLATFORM, 2), "imu_gravity": (_IMU, 3),
            "imu_orientation": (_QUAT, 4), "foot_forces": (_FORCES, 4), "cop": (_COP, 2),
            "com_world": (_COM, 3)}
_SCALARS = {"foot_tilt": _TILT, "foot_lift": _LIFT, "hip_height": _HIP, "support_margin": _MARGIN,
            "fallen": _FALLEN}
_DIVERGED = tuple(int(w) for w in (mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL,
                                    mujoco.mjtWarning.mjWARN_BADQACC))


class MujocoPlantError(ValueError):
    """A robot, parameter or axis mapping the MuJoCo plant cannot be built from."""


class SimulationError(RuntimeError):
    """MuJoCo found a non-finite state or acceleration (it would silently reset the simulation)."""


@njit(cache=True)
def _prepare(P, q, qd, jp, jp2, qt, acc, scratch, widx, wrow, wcol, wrap, applied):
    """J_p(q) into the tendon coefficients wrap[widx[k]] = J_p[wrow[k], wcol[k]], and the rotor
    bias −J_pᵀ J_m J̇_p q̇ into the applied leg joint forces; returns a transmission status."""
    status = transmission_jacobian(P, q, jp)
    if status == 0:
        status = motor_bias(P, q, qd, jp2, qt, acc, scratch)
    if status != 0:
        return status
    for k in range(widx.shape[0]):
        wrap[widx[k]] = jp[wrow[k], wcol[k]]
    for j in range(4):
        s = 0.0
        for i in range(4):
            s += jp[i, j] * P[ROTOR + i] * acc[i]
        applied[j] = -s
    return 0


@njit(cache=True)
def _motors(P, q, qd, plat_q, plat_qd, ratio, jp, qm, vm, order, out):
    """Motor positions and velocities in bus order, encoders, platform angles; returns a status."""
    status = joint_to_motor(P, q, qm)
    if status == 0:
        status = transmission_jacobian(P, q, jp)
    if status != 0:
        return status
    motor_velocity(jp, qd, vm)
    for i in range(4):
        out[_POS + order[i]] = qm[i]
        out[_VEL + order[i]] = vm[i]
        out[_JOINT + i] = q[i]
    for i in range(2):
        out[_POS + order[4 + i]] = ratio * plat_q[i]
        out[_VEL + order[4 + i]] = ratio * plat_qd[i]
        out[_PLATFORM + i] = plat_q[i]
    return 0


@njit(cache=True)
def _quaternion(R, out):
    """Unit quaternion (w, x, y, z) of a rotation matrix (Shepperd's method)."""
    t = R[0, 0] + R[1, 1] + R[2, 2]
    if t > 0.0:
        s = 2.0 * math.sqrt(1.0 + t)
        out[0], out[1], out[2], out[3] = 0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, \
            (R[1, 0] - R[0, 1]) / s
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        s = 2.0 * math.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2])
        out[0], out[1], out[2], out[3] = (R[2, 1] - R[1, 2]) / s, 0.25 * s, (R[0, 1] + R[1, 0]) / s, \
            (R[0, 2] + R[2, 0]) / s
    elif R[1, 1] > R[2, 2]:
        s = 2.0 * math.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2])
        out[0], out[1], out[2], out[3] = (R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, 0.25 * s, \
            (R[1, 2] + R[2, 1]) / s
    else:
        s = 2.0 * math.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1])
        out[0], out[1], out[2], out[3] = (R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, \
            (R[1, 2] + R[2, 1]) / s, 0.25 * s


@njit(cache=True)
def _sensors(foot_pos, foot_mat, plat_mat, hip_pos, com, geom, cpos, frame, efc_adr, efc_force,
             foot_geom, plat_geom, corners, hip0, work, out):
    """Foot sensors and ground truth (module docstring) into ``out``; MuJoCo world axes in, thesis
    world axes out (x_g = z, y_g = x, z_g = y). corners: the sole corners A, B, C, D in R0; work: 4×3."""
    R = foot_mat.reshape((3, 3))
    n = plat_mat.reshape((3, 3))[:, 2]                    # plate normal
    g_from_world = (2, 0, 1)
    Rg = work[0:3, 0:3]
    for r in range(3):
        Rg[r, :] = R[g_from_world[r], :]
    _quaternion(Rg, out[_QUAT:_QUAT + 4])
    cos_tilt = R[0, 0] * n[0] + R[1, 0] * n[1] + R[2, 0] * n[2]
    out[_TILT] = math.acos(min(1.0, max(-1.0, cos_tilt)))
    lift = -math.inf
    for k in range(4):
        for r in range(3):
            work[k, r] = foot_pos[r] + R[r, 0] * corners[k, 0] + R[r, 1] * corners[k, 1] + R[r, 2] * corners[k, 2]
        lift = max(lift, work[k, 0] * n[0] + work[k, 1] * n[1] + work[k, 2] * n[2])
    out[_LIFT] = lift
    out[_HIP] = hip_pos[2]
    for r in range(3):
        out[_COM + r] = com[g_from_world[r]]
    area = 0.0                                            # support margin in the horizontal plane
    for k in range(4):
        k1 = (k + 1) % 4
        area += work[k, 0] * work[k1, 1] - work[k1, 0] * work[k, 1]
    margin = math.inf
    for k in range(4):
        k1 = (k + 1) % 4
        ex, ey = work[k1, 0] - work[k, 0], work[k1, 1] - work[k, 1]
        d = (ex * (com[1] - work[k, 1]) - ey * (com[0] - work[k, 0])) / math.sqrt(ex * ex + ey * ey)
        margin = min(margin, d if area > 0.0 else -d)
    out[_MARGIN] = margin
    a, b, c = corners[0, 1], corners[0, 2], -corners[1, 2]
    f = out[_FORCES:_FORCES + 4]
    f[:] = 0.0
    for k in range(geom.shape[0]):
        g1, g2 = geom[k, 0], geom[k, 1]
        if not ((g1 == foot_geom and g2 == plat_geom) or (g1 == plat_geom and g2 == foot_geom)):
            continue
        sign = 1.0 if g2 == foot_geom else -1.0           # the normal points from geom 1 to geom 2
        load = 0.0
        for r in range(3):
            fr = (efc_force[efc_adr[k]] * frame[k, r] + efc_force[efc_adr[k] + 1] * frame[k, 3 + r]
                  + efc_force[efc_adr[k] + 2] * frame[k, 6 + r])
            load += sign * fr * R[r, 0]                   # along x0: the uniaxial sensors' axis
        y = z = 0.0
        for r in range(3):
            y += R[r, 1] * (cpos[k, r] - foot_pos[r])
            z += R[r, 2] * (cpos[k, r] - foot_pos[r])
        wy = (min(a, max(-a, y)) + a) / (2.0 * a)
        wz = (min(b, max(-c, z)) + c) / (b + c)
        f[0] += load * wy * wz
        f[1] += load * wy * (1.0 - wz)
        f[2] += load * (1.0 - wy) * (1.0 - wz)
        f[3] += load * (1.0 - wy) * wz
    total = f[0] + f[1] + f[2] + f[3]
    if total > MIN_LOAD:
        out[_COP] = a * (f[0] + f[1] - f[2] - f[3]) / total
        out[_COP + 1] = (b * (f[0] + f[3]) - c * (f[1] + f[2])) / total
    else:
        out[_COP] = out[_COP + 1] = math.nan
    if out[_TILT] > TILT_LIMIT or hip0 - out[_HIP] > DROP_LIMIT:
        out[_FALLEN] = 1.0


def tilt_rotation(alpha: float, beta: float) -> np.ndarray:
    """R_M→O0 of thesis eq. 46 (thesis world axes, x_g up)."""
    ca, sa, cb, sb = math.cos(alpha), math.sin(alpha), math.cos(beta), math.sin(beta)
    return np.array([[ca * cb, -sa, -ca * sb], [sa * cb, ca, -sa * sb], [sb, 0.0, cb]])


def _pair(value, name: str) -> np.ndarray:
    return finite_pair(value, name, MujocoPlantError)


class MujocoPlant(Plant):
    """The BIP leg standing free on the MuJoCo platform, six motors (see the module docstring).

    ``platform`` overrides :data:`drivers.hil.mjcf.PLATFORM_DEFAULTS` (its ``ratio`` is the motor rad
    per platform rad), ``q0`` / ``platform0`` the initial joint / platform angles (rad; the foot starts
    flat on the plate), ``platform_load`` a constant load on the platform motors (N·m), ``timestep``
    the longest MuJoCo step (s), ``axes`` the six motor names of ``AXES`` in bus order, ``bolt_foot``
    welds the foot to the plate.
    """

    def __init__(self, robot: Robot, platform: Mapping | None = None, q0: Sequence[float] | None = None, *,
                 platform0: Sequence[float] = (0.0, 0.0), platform_load: float | Sequence[float] = 0.0,
                 timestep: float = 2.0e-4, axes: Sequence[str] = AXES, bolt_foot: bool = False) -> None:
        foot = robot.description.foot
        if robot.transmission is None or robot.n != N_LEG or foot is None:
            raise MujocoPlantError(f"the MuJoCo plant needs a {N_LEG}-joint robot with foot: and transmission: "
                                   f"sections, got {robot.model.name!r} with {robot.n} joints")
        if len(axes) != len(AXES) or set(axes) != set(AXES):
            raise MujocoPlantError(f"axes must list the motors {list(AXES)} once each (in bus order), "
                                   f"got {list(axes)}")
        model = robot.model
        q0 = np.zeros(N_LEG) if q0 is None else np.array(q0, dtype=np.float64)
        if q0.shape != (N_LEG,) or not np.all((model.qmin <= q0) & (q0 <= model.qmax)):
            raise MujocoPlantError(f"q0 must be {N_LEG} joint angles within the limits {model.qmin.tolist()} "
                                   f".. {model.qmax.tolist()} rad, got {q0.tolist()}")
        self.robot = robot
        self.axes = tuple(axes)
        self.n_motors = len(AXES)
        self.bolt_foot = bool(bolt_foot)
        self.mjcf = build_mjcf(robot, foot, platform, bolted=self.bolt_foot, timestep=timestep)
        self.mj_model = m = mujoco.MjModel.from_xml_string(self.mjcf)
        self.mj_data = d = mujoco.MjData(m)
        self.ratio = m.actuator_gear[m.actuator(PLATFORM_JOINTS[0]).id, 0]
        self.timestep = timestep
        self._q0 = q0
        self._platform0 = _pair(platform0, "platform0")
        self._load = _pair(platform_load, "platform_load")
        self._order = np.array([self.axes.index(name) for name in AXES], dtype=np.int64)
        self._P = robot.transmission.params

        def qpos(joint: str, size: int) -> np.ndarray:
            return d.qpos[m.jnt_qposadr[m.joint(joint).id]:][:size]

        def qvel(joint: str, size: int) -> np.ndarray:
            return d.qvel[m.jnt_dofadr[m.joint(joint).id]:][:size]

        first = model.joint_names[0]
        self._q, self._qd = qpos(first, N_LEG), qvel(first, N_LEG)
        self._plat_q, self._plat_qd = qpos(PLATFORM_JOINTS[0], 2), qvel(PLATFORM_JOINTS[0], 2)
        self._foot_q = qpos(FOOT, 7)
        self._applied = d.qfrc_applied[m.jnt_dofadr[m.joint(first).id]:][:N_LEG]
        rows = [(m.tendon_adr[m.tendon(LEG_MOTORS[i]).id] + k, i, j)
                for i, joints in enumerate(TENDON_JOINTS) for k, j in enumerate(joints)]
        self._widx, self._wrow, self._wcol = (np.array(col, dtype=np.int64) for col in zip(*rows))
        foot_body, self._hip_body = m.body(FOOT).id, m.body(model.joint_names[-1]).id
        self._push_bodies = {"hip", model.joint_names[-1]}
        self._push = d.xfrc_applied[self._hip_body, :3]
        self._push_left = 0.0
        self._pushing = False
        self._poses = (d.xpos[foot_body], d.xmat[foot_body], d.xmat[m.body(PLATFORM).id],
                       d.xpos[self._hip_body], d.subtree_com[foot_body])
        self._warnings = d.warning.number
        self._foot_geom, self._plat_geom = m.geom(FOOT).id, m.geom(PLATFORM).id
        imu = m.sensor(IMU)
        self._imu = d.sensordata[imu.adr[0]:][:3]
        a, b, c, delta = foot["a"], foot["b"], foot["c"], foot["Delta"]
        self._corners = np.array([[-delta, a, b], [-delta, a, -c], [-delta, -a, -c], [-delta, -a, b]])
        self._sole_origin = np.array([delta, 0.0, -foot["Z"]])
        self._jp = np.zeros((4, 4))
        self._jp2 = np.zeros((4, 4))
        self._v = np.zeros((4, 4))                       # scratch vectors: q_t, J̇_p q̇, b; motor angles
        self._vm = np.zeros(4)
        self._work = np.zeros((4, 3))
        self._out = np.zeros(_N_OUT)
        self.motor_position = self._out[_POS:_POS + 6]
        self.motor_velocity = self._out[_VEL:_VEL + 6]
        self.sensors = {name: self._out[i:i + size] for name, (i, size) in _VECTORS.items()}
        self.sensors.update({name: self._out[i:i + 1].reshape(()) for name, i in _SCALARS.items()})
        self.time = 0.0
        self._hip0 = 0.0
        self.reset()

    @classmethod
    def from_config(cls, config: BusConfig, robot: str | Path | Robot, platform_ratio: float = 50.0,
                    q0: Sequence[float] | None = None, **options) -> MujocoPlant:
        """A MuJoCo plant on the bus axes of ``config``, matched to ``AXES`` by name (any bus order);
        the platform motors take the inertia, friction and load of their bus ``plant:`` values, as
        :meth:`LegPlant.from_config <drivers.plant_leg.LegPlant.from_config>`."""
        names = [a.name for a in config.axes]
        if sorted(names) != sorted(AXES):
            missing = [a for a in AXES if a not in names]
            extra = [a for a in names if a not in AXES]
            raise BusConfigError(f"bus axes {names} do not match the MuJoCo plant's motors {list(AXES)}: "
                                 f"missing {missing}, unexpected {extra}")
        robot = robot if isinstance(robot, Robot) else Robot.from_yaml(robot)
        bus_plant = [config.axis(name).plant for name in AXES[N_LEG:]]
        platform = dict(options.pop("platform", None) or {})
        platform.setdefault("ratio", platform_ratio)
        platform.setdefault("motor_inertia", [p.inertia for p in bus_plant])
        platform.setdefault("motor_friction", [p.friction for p in bus_plant])
        options.setdefault("platform_load", [p.load_torque for p in bus_plant])
        return cls(robot, platform, q0, axes=names, **options)

    def reset(self) -> None:
        """Back to q0 with the foot flat on the plate at platform0 (eq. 47 places O0), at rest."""
        m, d = self.mj_model, self.mj_data
        mujoco.mj_resetData(m, d)
        R = WORLD_FROM_G @ tilt_rotation(*self._platform0)
        self._plat_q[:] = self._platform0
        self._foot_q[:3] = R @ self._sole_origin
        mujoco.mju_mat2Quat(self._foot_q[3:], R.ravel())
        self._q[:] = self._q0
        self._push_left = 0.0
        self._pushing = False
        self._out[_FALLEN] = 0.0
        self.time = 0.0
        self._raise(self._prepare())
        mujoco.mj_forward(m, d)
        self._hip0 = d.xpos[self._hip_body, 2]
        self._update()

    def step(self, dt: float, motor_torque: np.ndarray) -> None:
        m, d = self.mj_model, self.mj_data
        ctrl = d.ctrl
        np.take(motor_torque, self._order, out=ctrl)
        if not np.all(np.isfinite(ctrl)):
            raise TransmissionFault(f"MuJoCo plant: a motor torque is not finite: {ctrl.tolist()} N m")
        ctrl[N_LEG:] -= self._load
        n = max(1, math.ceil(dt / self.timestep - 1e-9))
        h = m.opt.timestep = dt / n
        for _ in range(n):
            if self._pushing:
                if self._push_left > 0.5 * h:
                    self._push_left -= h
                else:
                    self._pushing = False
                    self._push[:] = 0.0
            self._raise(self._prepare())
            mujoco.mj_step(m, d)
        w = self._warnings
        if w[_DIVERGED[0]] or w[_DIVERGED[1]] or w[_DIVERGED[2]]:
            raise SimulationError(f"MuJoCo plant diverged at t = {self.time:.4f} s (non-finite state); "
                                  f"q = {np.round(self._q, 6).tolist()} rad")
        self.time += dt
        self._update()

    def control(self, request: Mapping) -> dict:
        """Plant-specific control ops (the HIL's UDP control channel): ``push`` (module docstring);
        the answer is ``{"ok": True}`` or ``{"error": ...}``."""
        op = request.get("op")
        if op != "push":
            return {"error": f"unknown control op {op!r} (known: fault, reset, shutdown, push)"}
        body = request.get("body", "hip")
        if body not in self._push_bodies:
            return {"error": f"push: unknown body {body!r} (known: {', '.join(sorted(self._push_bodies))})"}
        try:
            force = np.array(request["force"], dtype=np.float64)
            duration = float(request["duration"])
        except (KeyError, TypeError, ValueError) as exc:
            return {"error": f"push: needs force [fx, fy, fz] (N) and duration (s): {exc}"}
        if force.shape != (3,) or not np.all(np.isfinite(force)):
            return {"error": f"push: force must be 3 finite numbers (N), got {request['force']!r}"}
        if not (math.isfinite(duration) and duration >= 0.0):
            return {"error": f"push: duration must be a finite number >= 0 (s), got {request['duration']!r}"}
        self._push[:] = WORLD_FROM_G @ force
        self._push_left = duration
        self._pushing = True
        return {"ok": True}

    def _prepare(self) -> int:
        v = self._v
        return _prepare(self._P, self._q, self._qd, self._jp, self._jp2, v[0], v[1], v[2], self._widx,
                        self._wrow, self._wcol, self.mj_model.wrap_prm, self._applied)

    def _update(self) -> None:
        d = self.mj_data
        self._raise(_motors(self._P, self._q, self._qd, self._plat_q, self._plat_qd, self.ratio, self._jp,
                            self._v[3], self._vm, self._order, self._out))
        self._out[_IMU:_IMU + 3] = self._imu
        con = d.contact
        _sensors(*self._poses, con.geom, con.pos, con.frame, con.efc_address, d.efc_force, self._foot_geom,
                 self._plat_geom, self._corners, self._hip0, self._work, self._out)

    def _raise(self, status: int) -> None:
        if status != 0:
            q = np.round(self._q, 6).tolist()
            raise TransmissionFault(f"MuJoCo plant: {status_message(status)} at q = {q} rad")
