"""The BIP leg standing free on its tilting platform, simulated by MuJoCo.

Same motors, order and interface as :class:`~drivers.sim.plant_leg.LegPlant`: the four leg motors in
the transmission's order (ankle l2', ankle l2'', knee, hip), then the platform's α and β motors
(``AXES``), mapped onto the bus axes by name. Differences: the foot is not clamped (it can tip,
slide and lift; the leg's reaction moves the platform), and the model is the MJCF of
:func:`drivers.sim.hil.mjcf.build_mjcf` (see there for frames and the transmission as tendons).

One step of ``dt`` = n equal MuJoCo steps of at most ``timestep`` (default 400 µs: one MuJoCo step
per POWERLINK cycle); before each, J_p(q) (thesis eq. 30-32) is written into the tendon coefficients
(computed from the state the previous step or :meth:`MujocoPlant.reset` left), so the reflected
rotor inertia J_pᵀ J_m J_p, the motor friction and the motor torques J_pᵀ τ_m are exact at the step's
posture, and the rotor bias −J_pᵀ J_m J̇_p q̇ (J̇_p q̇ by the leg plant's central difference) is an
applied joint force. Integrator ``implicitfast`` (dampings implicit), Coulomb friction by MuJoCo's
frictionloss.

Outputs, updated in place after every step: motor positions q_m = 2π/p (l(q) − l(0)) and
velocities J_p q̇ (eq. 30-32), platform motors = ratio × hinge angle; ``sensors``:

- ``joint_position`` (4, rad), ``platform`` (α, β, rad): encoders through the drives;
- ``imu_gravity`` (3, m/s²): accelerometer at O0 in R0 axes, the specific force (LegPlant's
  convention: R_M→O0ᵀ (9.81, 0, 0) at rest); ``imu_orientation`` (w, x, y, z): the rotation from the
  thesis world frame (x_g up) to R0, eq. 46's R_M→O0 when the foot is flat on the platform;
- ``foot_forces`` (4, N): uniaxial load cells along x0 under the sole corners A (+a, toe b),
  B (+a, heel −c), C (−a, heel), D (−a, toe) (eq. 48-49 order) of a rigid sole plate, each
  sole/plate contact force (MuJoCo's contact sensor ``sole``) split bilinearly among them;
  ``cop`` (y0, z0) in R0 (m), Σ F_i p_i / Σ F_i, NaN when the sole carries less than ``MIN_LOAD``;
  ``sole`` (Σ F_i, then ``cop``): what a drive's auxiliary input carries of them (``sensor: sole``);

and the ground truth for scenarios: ``foot_tilt`` (rad, foot x0 vs the plate normal),
``foot_lift`` (m, highest sole corner above the plate), ``hip_height`` (m, hip axis above M),
``com_world`` (3, m, CoG of foot + leg in thesis world axes from M), ``support_margin`` (m, signed
distance of the CoG's vertical projection to the nearest edge of the sole's projection, > 0 inside),
``fallen`` (0/1, latched until :meth:`MujocoPlant.reset`: ``foot_tilt`` > 5° or the hip more than
10 cm below its height at reset). The IMU and the ground truth come from MuJoCo's last forward
pass, so they describe the state one MuJoCo step (≤ ``timestep``) before the encoders.
Deterministic: the same torques give the same trajectory.

``bolt_foot``: the foot is welded to the plate (:func:`~drivers.sim.hil.mjcf.build_mjcf` ``bolted``), the
thesis' squat bench (§2.6.1); it follows the platform and cannot tip. External pushes:
:meth:`MujocoPlant.control` ``{"op": "push", "body": "hip", "force": [fx, fy, fz], "duration": s}``
applies the force (N, thesis world axes: x up, y lateral, z toe) at the centre of mass of the hip
body (the last leg body) for ``duration`` s of plant time, from the next step on (served over the
HIL's UDP control channel by :func:`drivers.sim.udp_server.serve_udp`).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import mujoco
import numpy as np
from numba import njit

from models import Robot, TransmissionFault
from models.tilt import rotation_world_foot
from models.transmission import (
    LEG_N_PARAMS as N_PARAMS,
    ROTOR,
    joint_to_motor,
    motor_bias,
    motor_velocity,
    status_message,
    transmission_jacobian,
)

from drivers.config import BusConfig
from drivers.sim.plant import Plant
from drivers.sim.plant_leg import AXES, N_LEG, bus_axes, finite_pair
from drivers.sim.hil.mjcf import (
    FOOT,
    IMU,
    LEG_MOTORS,
    PLATFORM,
    PLATFORM_JOINTS,
    SOLE,
    SOLE_SLOT,
    TENDON_JOINTS,
    WORLD_FROM_G,
    build_mjcf,
)
from drivers.sim.hil.push import Push

TILT_LIMIT = math.radians(5.0)   # rad, foot tilt relative to the plate beyond which it has fallen
DROP_LIMIT = 0.10                # m, hip drop since reset beyond which it has fallen
MIN_LOAD = 1.0                   # N, sole load under which the CoP is undefined (NaN)

# Layout of the float buffer: the outputs, then the constants, then scratch.
_POS, _VEL, _JOINT, _PLATFORM, _IMU, _QUAT, _FORCES, _COP = 0, 6, 12, 16, 18, 21, 25, 29
_TILT, _LIFT, _HIP, _COM, _MARGIN, _FALLEN, _SOLE = 31, 32, 33, 34, 37, 38, 39
_N_OUT = 42
_P = _N_OUT                      # transmission parameters (models.transmission layout)
_RATIO = _P + N_PARAMS           # platform motor rad per hinge rad
_LOAD = _RATIO + 1               # constant load on the two platform motors (N m)
_HIP0 = _LOAD + 2                # hip height at reset (m)
_CORNERS = _HIP0 + 1             # sole corners A, B, C, D in R0 (4 x 3)
_JP = _CORNERS + 12              # scratch: J_p (4 x 4)
_JP2 = _JP + 16                  # J_p at a perturbed posture (4 x 4)
_V = _JP2 + 16                   # vectors q_t, J̇_p q̇, b, motor angles (4 x 4)
_VM = _V + 16                    # motor velocities (4)
_WORK = _VM + 4                  # world sole corners (4 x 3)
_N_BUF = _WORK + 12
# Layout of the index buffer.
_ORDER = 0                       # bus index of each internal motor (6)
_QADR, _DOFADR, _PLAT_QADR, _PLAT_DOFADR = 6, 7, 8, 9    # first leg / platform joint in qpos, qvel
_FOOT_BODY, _PLATE_BODY, _HIP_BODY = 10, 11, 12
_IMU_ADR, _SOLE_ADR, _SOLE_SLOTS = 13, 14, 15           # sensordata: accelerometer, contact sensor
_DIVERGED = 16                   # MuJoCo warnings of a non-finite state (3)
_WRAP = 19                       # tendon coefficient k: wrap_prm index, J_p row, J_p column (3 x 6)
_N_WRAP = 6
_N_IDX = _WRAP + 3 * _N_WRAP

_VECTORS = {"joint_position": (_JOINT, 4), "platform": (_PLATFORM, 2), "imu_gravity": (_IMU, 3),
            "imu_orientation": (_QUAT, 4), "foot_forces": (_FORCES, 4), "cop": (_COP, 2),
            "com_world": (_COM, 3), "sole": (_SOLE, 3)}
_SCALARS = {"foot_tilt": _TILT, "foot_lift": _LIFT, "hip_height": _HIP, "support_margin": _MARGIN,
            "fallen": _FALLEN}
_DIVERGED_WARNINGS = (mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL,
                      mujoco.mjtWarning.mjWARN_BADQACC)
_STATUS_DIVERGED = -1            # kernel status: MuJoCo reported a non-finite state


class MujocoPlantError(ValueError):
    """A robot, parameter or axis mapping the MuJoCo plant cannot be built from."""


class SimulationError(RuntimeError):
    """MuJoCo found a non-finite state or acceleration (it would silently reset the simulation)."""


@njit(cache=True)
def _command(motor_torque, ctrl, buf, idx):
    """The motor torques (bus order) into MuJoCo's controls (internal order), less the platform
    load; returns 1, controls left unloaded, if one is not finite."""
    bad = 0
    for i in range(6):
        t = motor_torque[idx[_ORDER + i]]
        ctrl[i] = t
        if not math.isfinite(t):
            bad = 1
    if bad:
        return 1
    ctrl[N_LEG] -= buf[_LOAD]
    ctrl[N_LEG + 1] -= buf[_LOAD + 1]
    return 0


@njit(cache=True)
def _transmission(qpos, qvel, wrap, applied, buf, idx, jacobian):
    """J_p(q) (unless ``jacobian`` holds it already) into the tendon coefficients, and the rotor bias
    −J_pᵀ J_m J̇_p q̇ into the applied leg joint forces, for the next MuJoCo step; returns a
    transmission status."""
    P = buf[_P:_P + N_PARAMS]
    q = qpos[idx[_QADR]:idx[_QADR] + N_LEG]
    qd = qvel[idx[_DOFADR]:idx[_DOFADR] + N_LEG]
    jp = buf[_JP:_JP + 16].reshape((4, 4))
    v = buf[_V:_V + 16].reshape((4, 4))
    status = 0 if jacobian else transmission_jacobian(P, q, jp)
    if status == 0:
        status = motor_bias(P, q, qd, buf[_JP2:_JP2 + 16].reshape((4, 4)), v[0], v[1], v[2])
    if status != 0:
        return status
    for k in range(_N_WRAP):
        wrap[idx[_WRAP + k]] = jp[idx[_WRAP + _N_WRAP + k], idx[_WRAP + 2 * _N_WRAP + k]]
    acc = v[1]
    dof = idx[_DOFADR]
    for j in range(4):
        s = 0.0
        for i in range(4):
            s += jp[i, j] * P[ROTOR + i] * acc[i]
        applied[dof + j] = -s
    return 0


@njit(cache=True)
def _prepare(qpos, qvel, wrap, applied, buf, idx):
    """J_p(q) and the rotor bias for the next MuJoCo step (:func:`_transmission`)."""
    return _transmission(qpos, qvel, wrap, applied, buf, idx, False)


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
def _sensors(foot_pos, R, n, plate_pos, hip_pos, com, sole, corners, hip0, work, out):
    """Foot sensors and ground truth (module docstring) into ``out``; MuJoCo world axes in, thesis
    world axes out (x_g = z, y_g = x, z_g = y). R: the foot's rotation, n: the plate normal,
    plate_pos: a point of the plate's top face (its body's origin: M, moving with the rig), sole: the
    contact sensor (slots of found, force in the contact frame, point, normal from the plate to the
    foot, first tangent); corners: the sole corners A, B, C, D in R0; work: 4×3."""
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
        lift = max(lift, (work[k, 0] - plate_pos[0]) * n[0] + (work[k, 1] - plate_pos[1]) * n[1]
                   + (work[k, 2] - plate_pos[2]) * n[2])
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
    for k in range(min(int(sole[0]), sole.shape[0] // SOLE_SLOT)):
        s = sole[k * SOLE_SLOT:(k + 1) * SOLE_SLOT]
        force, pos, normal, tangent = s[1:4], s[4:7], s[7:10], s[10:13]
        bitangent = (normal[1] * tangent[2] - normal[2] * tangent[1], normal[2] * tangent[0] - normal[0] * tangent[2],
                     normal[0] * tangent[1] - normal[1] * tangent[0])
        load = 0.0
        for r in range(3):
            fr = force[0] * normal[r] + force[1] * tangent[r] + force[2] * bitangent[r]
            load += fr * R[r, 0]                          # along x0: the uniaxial sensors' axis
        y = z = 0.0
        for r in range(3):
            y += R[r, 1] * (pos[r] - foot_pos[r])
            z += R[r, 2] * (pos[r] - foot_pos[r])
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
    out[_SOLE] = total
    out[_SOLE + 1] = out[_COP]
    out[_SOLE + 2] = out[_COP + 1]
    if out[_TILT] > TILT_LIMIT or hip0 - out[_HIP] > DROP_LIMIT:
        out[_FALLEN] = 1.0


@njit(cache=True)
def _observe(qpos, qvel, xpos, xmat, subtree_com, sensordata, warning, wrap, applied, buf, idx):
    """After a MuJoCo step: the divergence check, the motors (bus order), encoders, IMU, foot sensors
    and ground truth into the outputs, and J_p and the rotor bias for the next step. Returns a
    transmission status, or _STATUS_DIVERGED."""
    for k in range(3):
        if warning[idx[_DIVERGED + k]] != 0:
            return _STATUS_DIVERGED
    P = buf[_P:_P + N_PARAMS]
    q = qpos[idx[_QADR]:idx[_QADR] + N_LEG]
    qd = qvel[idx[_DOFADR]:idx[_DOFADR] + N_LEG]
    jp = buf[_JP:_JP + 16].reshape((4, 4))
    qm = buf[_V + 12:_V + 16]
    vm = buf[_VM:_VM + 4]
    status = joint_to_motor(P, q, qm)
    if status == 0:
        status = transmission_jacobian(P, q, jp)
    if status != 0:
        return status
    motor_velocity(jp, qd, vm)
    out = buf[:_N_OUT]
    for i in range(4):
        out[_POS + idx[_ORDER + i]] = qm[i]
        out[_VEL + idx[_ORDER + i]] = vm[i]
        out[_JOINT + i] = q[i]
    ratio = buf[_RATIO]
    for i in range(2):
        x, v = qpos[idx[_PLAT_QADR] + i], qvel[idx[_PLAT_DOFADR] + i]
        out[_POS + idx[_ORDER + 4 + i]] = ratio * x
        out[_VEL + idx[_ORDER + 4 + i]] = ratio * v
        out[_PLATFORM + i] = x
    for r in range(3):
        out[_IMU + r] = sensordata[idx[_IMU_ADR] + r]
    foot, plate = idx[_FOOT_BODY], idx[_PLATE_BODY]
    R = xmat[foot].reshape((3, 3))
    n = xmat[plate].reshape((3, 3))[:, 2]                 # plate normal
    _sensors(xpos[foot], R, n, xpos[plate], xpos[idx[_HIP_BODY]], subtree_com[foot],
             sensordata[idx[_SOLE_ADR]:idx[_SOLE_ADR] + idx[_SOLE_SLOTS] * SOLE_SLOT],
             buf[_CORNERS:_CORNERS + 12].reshape((4, 3)), buf[_HIP0], buf[_WORK:_WORK + 12].reshape((4, 3)), out)
    return _transmission(qpos, qvel, wrap, applied, buf, idx, True)


def tilt_rotation(alpha: float, beta: float) -> np.ndarray:
    """R_M→O0 of thesis eq. 46 (thesis world axes, x_g up), as a new array."""
    R = np.empty((3, 3))
    rotation_world_foot(alpha, beta, R)
    return R


def _pair(value, name: str) -> np.ndarray:
    return finite_pair(value, name, MujocoPlantError)


class MujocoPlant(Plant):
    """The BIP leg standing free on the MuJoCo platform, six motors (see the module docstring).

    ``platform`` overrides :data:`drivers.sim.hil.mjcf.PLATFORM_DEFAULTS` (its ``ratio`` is the motor rad
    per platform rad), ``q0`` / ``platform0`` the initial joint / platform angles (rad; the foot starts
    flat on the plate), ``platform_load`` a constant load on the platform motors (N·m), ``timestep``
    the longest MuJoCo step (s; contact and weld time constants must stay >= 2 steps, see
    :mod:`drivers.sim.hil.mjcf`), ``axes`` the six motor names of ``AXES`` in bus order, ``bolt_foot``
    welds the foot to the plate.
    """

    def __init__(self, robot: Robot, platform: Mapping | None = None, q0: Sequence[float] | None = None, *,
                 platform0: Sequence[float] = (0.0, 0.0), platform_load: float | Sequence[float] = 0.0,
                 timestep: float = 4.0e-4, axes: Sequence[str] = AXES, bolt_foot: bool = False) -> None:
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
        self.mjcf = self._scene(robot, foot, platform, timestep)
        self.mj_model = m = mujoco.MjModel.from_xml_string(self.mjcf)
        self.mj_data = d = mujoco.MjData(m)
        self.ratio, plat_qadr, plat_dofadr = self._platform_coordinates(m)
        self._timestep = timestep
        self._q0 = q0
        self._platform0 = _pair(platform0, "platform0")
        self._load = _pair(platform_load, "platform_load")
        self._P = robot.transmission.params
        first = model.joint_names[0]
        foot_body, self._hip_body = m.body(FOOT).id, m.body(model.joint_names[-1]).id
        a, b, c, delta = foot["a"], foot["b"], foot["c"], foot["Delta"]
        self._sole_origin = np.array([delta, 0.0, -foot["Z"]])

        # Everything the kernels read or write, bound once: MuJoCo's arrays are views that stay valid.
        self._buf = buf = np.zeros(_N_BUF)
        buf[_P:_P + N_PARAMS] = self._P
        buf[_RATIO] = self.ratio
        buf[_LOAD:_LOAD + 2] = self._load
        buf[_CORNERS:_CORNERS + 12] = np.array([[-delta, a, b], [-delta, a, -c], [-delta, -a, -c],
                                                [-delta, -a, b]]).ravel()
        idx = self._idx = np.zeros(_N_IDX, dtype=np.int64)
        idx[_ORDER:_ORDER + 6] = [self.axes.index(name) for name in AXES]
        idx[_QADR], idx[_DOFADR] = m.jnt_qposadr[m.joint(first).id], m.jnt_dofadr[m.joint(first).id]
        idx[_PLAT_QADR], idx[_PLAT_DOFADR] = plat_qadr, plat_dofadr
        idx[_FOOT_BODY], idx[_PLATE_BODY], idx[_HIP_BODY] = foot_body, m.body(PLATFORM).id, self._hip_body
        sole = m.sensor(SOLE)
        idx[_IMU_ADR], idx[_SOLE_ADR] = m.sensor(IMU).adr[0], sole.adr[0]
        idx[_SOLE_SLOTS] = sole.dim[0] // SOLE_SLOT
        idx[_DIVERGED:_DIVERGED + 3] = [int(w) for w in _DIVERGED_WARNINGS]
        rows = [(m.tendon_adr[m.tendon(LEG_MOTORS[i]).id] + k, i, j)
                for i, joints in enumerate(TENDON_JOINTS) for k, j in enumerate(joints)]
        idx[_WRAP:_N_IDX] = np.array(rows, dtype=np.int64).T.ravel()
        self._q = d.qpos[idx[_QADR]:][:N_LEG]
        self._plat_q = d.qpos[idx[_PLAT_QADR]:][:2]
        self._foot_q = d.qpos[m.jnt_qposadr[m.joint(FOOT).id]:][:7]
        self._ctrl = d.ctrl
        self._prepare_args = (d.qpos, d.qvel, m.wrap_prm, d.qfrc_applied, buf, idx)
        self._observe_args = (d.qpos, d.qvel, d.xpos, d.xmat, d.subtree_com, d.sensordata, d.warning.number,
                              m.wrap_prm, d.qfrc_applied, buf, idx)
        self._mj_step = mujoco.mj_step
        self._dt = math.nan                              # the last step's dt, its substeps and their length
        self._substeps = 1
        self._h = timestep
        self._push = Push(d.xfrc_applied, {"hip": self._hip_body, model.joint_names[-1]: self._hip_body}, "hip",
                          WORLD_FROM_G)

        out = buf[:_N_OUT]
        self.motor_position = out[_POS:_POS + 6]
        self.motor_velocity = out[_VEL:_VEL + 6]
        self.sensors = {name: out[i:i + size] for name, (i, size) in _VECTORS.items()}
        self.sensors.update({name: out[i:i + 1].reshape(()) for name, i in _SCALARS.items()})
        self.time = 0.0
        self.reset()

    def _scene(self, robot: Robot, foot: Mapping[str, float], platform: Mapping | None, timestep: float) -> str:
        """The MJCF this plant simulates (:func:`~drivers.sim.hil.mjcf.build_mjcf`)."""
        return build_mjcf(robot, foot, platform, bolted=self.bolt_foot, timestep=timestep)

    def _platform_coordinates(self, m: mujoco.MjModel) -> tuple[float, int, int]:
        """The platform motors' gear and the qpos and qvel addresses of the first of their two joints."""
        plat = m.joint(PLATFORM_JOINTS[0]).id
        return m.actuator_gear[m.actuator(PLATFORM_JOINTS[0]).id, 0], m.jnt_qposadr[plat], m.jnt_dofadr[plat]

    @classmethod
    def from_config(cls, config: BusConfig, robot: str | Path | Robot, platform_ratio: float = 50.0,
                    q0: Sequence[float] | None = None, **options) -> MujocoPlant:
        """A MuJoCo plant on the bus axes of ``config``, matched to ``AXES`` by name (any bus order);
        the platform motors take the inertia, friction and load of their bus ``plant:`` values, as
        :meth:`LegPlant.from_config <drivers.sim.plant_leg.LegPlant.from_config>`."""
        names = bus_axes(config, "the MuJoCo plant")
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
        self._push.stop()
        self._buf[_FALLEN] = 0.0
        self.time = 0.0
        self._check(_prepare(*self._prepare_args))
        mujoco.mj_forward(m, d)
        self._buf[_HIP0] = d.xpos[self._hip_body, 2]
        self._check(_observe(*self._observe_args))

    def step(self, dt: float, motor_torque: np.ndarray) -> None:
        if dt != self._dt:
            self._set_step(dt)
        if _command(motor_torque, self._ctrl, self._buf, self._idx):
            raise TransmissionFault(f"MuJoCo plant: a motor torque is not finite: {self._ctrl.tolist()} N m")
        m, d = self.mj_model, self.mj_data
        for k in range(self._substeps):
            self._push.count(self._h)
            if k:                                       # J_p and the rotor bias at the substep's posture
                self._check(_prepare(*self._prepare_args))
            self._mj_step(m, d)
        status = _observe(*self._observe_args)
        if status:
            self._check(status)
        self.time += dt

    @property
    def timestep(self) -> float:
        """The longest MuJoCo step (s)."""
        return self._timestep

    @timestep.setter
    def timestep(self, value: float) -> None:
        self._timestep = value
        self._dt = math.nan

    def _set_step(self, dt: float) -> None:
        """n equal MuJoCo steps of at most ``timestep`` per step of ``dt``."""
        n = max(1, math.ceil(dt / self.timestep - 1e-9))
        self._h = self.mj_model.opt.timestep = dt / n
        self._dt, self._substeps = dt, n

    def control(self, request: Mapping) -> dict:
        """Plant-specific control ops (the HIL's UDP control channel): ``push`` (module docstring);
        the answer is ``{"ok": True}`` or ``{"error": ...}`` (:class:`~drivers.sim.hil.push.Push`)."""
        return self._push.request(request)

    def _check(self, status: int) -> None:
        if status == _STATUS_DIVERGED:
            raise SimulationError(f"MuJoCo plant diverged at t = {self.time:.4f} s (non-finite state); "
                                  f"q = {np.round(self._q, 6).tolist()} rad")
        if status != 0:
            q = np.round(self._q, 6).tolist()
            raise TransmissionFault(f"MuJoCo plant: {status_message(status)} at q = {q} rad")
