"""The whole biped (BIP 2000: 15 joints) simulated by MuJoCo, hung from a gantry or on the floor.

One motor per joint, named after it (motor i drives joint i through the transmission), mapped onto
the bus axes by name. The model is :func:`drivers.sim.hil.mjcf_biped.build_biped` (frames, feet and the
transmission as tendons are described there). One step of ``dt`` = n equal MuJoCo steps of at most
``timestep`` (default 400 µs, one per POWERLINK cycle); before each, J_p(q) (thesis eq. 30-32, from the
state the previous step left) is written into the tendon coefficients, so the reflected rotor inertia
J_pᵀ J_m J_p, the motor friction and the joint torques J_pᵀ τ_m are exact at the step's posture, and
the rotor bias −J_pᵀ J_m J̇_p q̇ is an applied joint force (as :mod:`drivers.sim.hil.plant_mujoco`).
Deterministic: the same torques give the same trajectory, bit for bit.

``ground``: at :meth:`BipedPlant.reset` the robot is placed in ``q0`` (default :func:`flexed_posture`)
with both soles flat on the floor, then settles for :data:`SETTLE_S` of simulated time with its joints
held at ``q0`` by a joint PD (:data:`SETTLE_GAINS`); the clock then restarts at 0. ``hung``: the
pelvis is fixed at the gantry, the joints start at ``q0`` at rest.

Outputs, updated in place after every step: motor positions q_m (zero at q = 0) and velocities J_p q̇
in bus order; ``sensors`` (world axes: z up, x forward; origin on the floor, at reset midway between
the soles on the ground, below the pelvis when hung):

- ``joint_position`` (n, rad, description order): the encoders;
- ``imu_gravity`` (3, m/s²): accelerometer at the pelvis origin in pelvis axes (specific force,
  (0, 0, 9.81) at rest, level); ``imu_orientation`` (w, x, y, z): pelvis → world rotation, which is
  also the ground truth of the pelvis orientation (the IMU sits at the pelvis origin, pelvis axes);
  ``imu_rate`` (3, rad/s): the IMU's rate gyro, the pelvis' angular velocity in pelvis axes;
- ``foot_forces`` (8, N): load cells along the sole normal, left foot then right, each in the YAML's
  ``feet.*.sensors`` order. A rigid sole on four cells: each floor/sole contact force is split among
  them by the bilinear weights of its point in the cells' rectangle (extrapolated, so a cell can pull
  when the point lies outside the rectangle), which keeps the total and the moment: the CoP from the
  cells is the contact forces' CoP;

the IMU's specific force and rate and the eight cells travel over the bus where its axes declare them
(``sensor: pelvis_imu``, ``pelvis_gyro``, ``left_loads``, ``right_loads``: drivers.config.SENSORS);

and the ground truth for scenarios:

- ``pelvis_position`` (3, m); ``pelvis_height`` (m); ``tilt`` (rad, pelvis z axis from the vertical);
- ``com_world`` (3, m): whole-robot centre of gravity;
- ``foot_load`` (2, N): each foot's cells summed; ``contact`` (2, 0/1): load > :data:`MIN_LOAD`;
- ``cop`` (4, m): each foot's CoP (x, y) on the floor, left then right, NaN when not in contact;
- ``zmp`` (2, m): the whole robot's CoP/ZMP (x, y) from all eight cells, NaN when nothing is loaded;
- ``support_polygon`` (16, m): convex hull (x, y pairs, counter-clockwise, NaN-padded) of the sole
  box corners of the feet in contact; ``support_count``: its number of vertices (0 in the air);
- ``foot_lift`` (2, m): lowest sole corner of each foot above the floor, or the plate's top face on
  the platform (≈ 0 standing on it);
- ``platform`` (2, rad): the plate's hinge angles (alpha, beta), 0 without the platform;
- ``plate_position`` (3, m): the origin of the support's top face in the world: the Stewart–Gough
  rig's plate moves, the hinge plate's (on its axes) and the floor's stay at 0;
- ``fallen`` (0/1, latched until :meth:`BipedPlant.reset`): the pelvis more than :data:`DROP_LIMIT`
  below its height at reset, or ``tilt`` beyond :data:`TILT_LIMIT`. A fallen robot's links pass
  through the floor (only the soles collide).

The IMU and the ground truth come from MuJoCo's last forward pass (the state one MuJoCo step before
the encoders). Pushes: :meth:`BipedPlant.control` ``{"op": "push", "body": "pelvis", "force": [fx, fy,
fz], "duration": s}`` (N, world axes), at the body's centre of mass, for ``duration`` s of plant time.

``terrain`` (:class:`drivers.sim.hil.terrain.Terrain`, on the floor) tilts the floor and puts a step
ahead: at reset the level placement above is turned by the floor's rotation about the world origin
(the soles flat on the tilted floor), the world axes stay gravity's, and ``foot_lift`` is measured
from the terrain's plane z = 0 (a step up's top face is ``h`` above it).

``platform`` (a mapping, possibly empty: overrides of drivers.sim.hil.mjcf.PLATFORM_DEFAULTS) stands the
robot on the tilting plate (:func:`drivers.sim.hil.mjcf_biped.build_biped`); its two motors, named
``platform_alpha`` and ``platform_beta`` like the leg bench's, are bus axes too: motor = ratio × hinge
angle, held at 0 with the joints while the scene settles. ``rig`` (a
:class:`~models.rig.stewart.StewartModel`) stands it on the Stewart–Gough rig's plate instead; its six
actuators' motors (``rig_axes``, legs A-F) are bus axes: each motor torque drives its slide through
the screw, motor angle = 2π/lead × actuator displacement (:mod:`drivers.sim.hil.stewart_mjcf`), held at
the home pose while the scene settles; ``platform`` in the truth is then the plate's hinge-equivalent
tilt, RotX(alpha) RotY(beta) as the hinges' (:mod:`models.rig.tilt`, SOLES).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import mujoco
import numpy as np
from numba import njit

from models import TransmissionFault
from models.polygon import convex_hull
from models.rig.stewart import StewartModel
from models.rig.tilt import SOLES, matrix_hinge_angles
from models.transmission import (
    Transmission,
    joint_to_motor,
    motor_bias,
    motor_velocity,
    rotor_torque,
    status_message,
    transmission_jacobian,
)
from models.tree.config import TreeDescription, load_tree
from models.urdf import frame_link

from drivers.config import BusConfig, BusConfigError
from drivers.sim.plant import Plant
from drivers.sim.hil.mjcf import PLATFORM, PLATFORM_JOINTS, SOLE_SLOT
from drivers.sim.hil.mjcf_biped import IMU, IMU_GYRO, IMU_QUAT, PELVIS, build_biped, foot_geometry
from drivers.sim.hil.plant_mujoco import MujocoPlantError, SimulationError
from drivers.sim.hil.push import Push
from drivers.sim.hil.stewart_mjcf import ACTUATORS, gear, rig_params
from drivers.sim.hil.terrain import TERRAIN, Terrain

TILT_LIMIT = math.radians(30.0)  # rad, pelvis tilt beyond which the robot has fallen
DROP_LIMIT = 0.20                # m, pelvis drop since reset beyond which it has fallen (a walk's bob is < 5 cm)
MIN_LOAD = 1.0                   # N, a foot load under which the foot is not in contact
FLEXED_KNEE = 0.6                # rad, knee flexion of :func:`flexed_posture`
SETTLE_S = 0.2                   # s of simulated time the ground scene settles at reset
SETTLE_GAINS = (3000.0, 150.0)   # joint PD holding q0 while settling (N m/rad, N m s/rad)
PLATE_SETTLE_GAINS = (2.0e4, 800.0)  # hinge PD holding the plate level meanwhile (N m/rad, N m s/rad)
RIG_SETTLE_GAINS = (2.0e7, 4.0e4)    # slide PD holding the rig at home meanwhile (N/m, N s/m): ~0.1 mm under the robot
HULL_EPS = 1e-9                  # m², a corner this close to collinear with its neighbours is no hull vertex
LEVEL_TOL = 1e-3                 # rad / m, how flat and level q0 must put the soles (ground scene)

# Layout of the truth buffer, declared once: (name, size); size 0 is a scalar.
TRUTH = (("imu_gravity", 3), ("imu_orientation", 4), ("foot_forces", 8), ("pelvis_position", 3),
         ("pelvis_height", 0), ("tilt", 0), ("com_world", 3), ("foot_load", 2), ("contact", 2), ("cop", 4),
         ("zmp", 2), ("support_polygon", 16), ("support_count", 0), ("foot_lift", 2), ("fallen", 0),
         ("platform", 2), ("plate_position", 3), ("imu_rate", 3))
_OFFSET = {}
_N_TRUTH = 0
for _name, _size in TRUTH:
    _OFFSET[_name] = _N_TRUTH
    _N_TRUTH += max(_size, 1)
_ACC, _QUAT, _FORCES, _PELVIS = _OFFSET["imu_gravity"], _OFFSET["imu_orientation"], _OFFSET["foot_forces"], \
    _OFFSET["pelvis_position"]
_HEIGHT, _TILT, _COM, _LOAD = _OFFSET["pelvis_height"], _OFFSET["tilt"], _OFFSET["com_world"], _OFFSET["foot_load"]
_CONTACT, _COP, _ZMP, _POLY = _OFFSET["contact"], _OFFSET["cop"], _OFFSET["zmp"], _OFFSET["support_polygon"]
_COUNT, _LIFT, _FALLEN, _PLAT = _OFFSET["support_count"], _OFFSET["foot_lift"], _OFFSET["fallen"], _OFFSET["platform"]
_PLATE_POS, _GYRO = _OFFSET["plate_position"], _OFFSET["imu_rate"]
# Per-foot constants (sole frame): cell (x, y), cell corner flags, box corners (x, y); then the height at reset.
_CELLS, _CORNER, _BOX = _N_TRUTH, _N_TRUTH + 16, _N_TRUTH + 32
_HEIGHT0 = _BOX + 16
_WORK = _HEIGHT0 + 1             # scratch: 8 hull candidates (x, y), sorted (8 x 2), the hull's chains (16 x 2)
_N_FLOAT = _WORK + 64
# Layout of the index buffer.
_PELVIS_BODY, _SOLE_BODY, _ACC_ADR, _QUAT_ADR, _CONTACT_ADR, _SLOTS = 0, 1, 3, 4, 5, 7
_DIVERGED = 8                    # MuJoCo warnings of a non-finite state (3)
_PLATE_BODY = 11                 # the feet's support: the world (the floor) or the plate
_GYRO_ADR = 12
_N_IDX = 13
_DIVERGED_WARNINGS = (mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL,
                      mujoco.mjtWarning.mjWARN_BADQACC)
_STATUS_DIVERGED = -1


class BipedPlantError(MujocoPlantError):
    """A robot, posture or axis mapping the biped plant cannot be built from."""


def flexed_posture(desc: TreeDescription, knee: float = FLEXED_KNEE) -> np.ndarray:
    """Both knees at ``knee``, hip and ankle pitch at −knee/2 each (soles parallel to the pelvis, feet
    under the hips: the flexed stance of Gastebois 2017 §2.6.2), every other joint at 0."""
    q = np.zeros(desc.n)
    for j, t in enumerate(desc.joints):
        name = t.joint.name
        if name.endswith("knee"):
            q[j] = knee
        elif name.endswith(("hip_pitch", "ankle_sagittal")):
            q[j] = -0.5 * knee
    return q


@njit(cache=True)
def _command(motor_torque, ctrl, order):
    """The motor torques (bus order) into MuJoCo's controls (motor order); 1 if one is not finite."""
    for i in range(ctrl.shape[0]):
        t = motor_torque[order[i]]
        if not math.isfinite(t):
            return 1
        ctrl[i] = t
    return 0


@njit(cache=True)
def _transmission(P, qpos, qvel, qadr, dadr, q, qd, jp, jp2, v, wrap, wrap_idx, applied, jacobian):
    """Gather q, q̇ (description order); J_p(q) (unless ``jacobian`` holds it) into the tendon
    coefficients and the rotor bias −J_pᵀ J_m J̇_p q̇ into the applied joint forces, for the next MuJoCo
    step. v: (4, n) scratch. Returns a transmission status."""
    n = q.shape[0]
    for j in range(n):
        q[j] = qpos[qadr[j]]
        qd[j] = qvel[dadr[j]]
    status = 0 if jacobian else transmission_jacobian(P, q, jp)
    if status == 0:
        status = motor_bias(P, q, qd, jp2, v[0], v[1], v[2])
    if status != 0:
        return status
    for k in range(wrap_idx.shape[1]):
        wrap[wrap_idx[0, k]] = jp[wrap_idx[1, k], wrap_idx[2, k]]
    v[3, :] = 0.0
    rotor_torque(P, jp, v[1], v[3], v[2])
    for j in range(n):
        applied[dadr[j]] = -v[2, j]
    return 0


@njit(cache=True)
def _feet(xpos, xmat, sensordata, buf, idx):
    """Load cells, foot loads, contact flags, CoPs, ZMP, foot lift and support polygon (module
    docstring) into the truth buffer."""
    zx = zy = total = 0.0
    m = 0
    work = buf[_WORK:_WORK + 64].reshape((32, 2))
    for f in range(2):
        body = idx[_SOLE_BODY + f]
        p = xpos[body]
        R = xmat[body].reshape((3, 3))
        cells = buf[_CELLS + 8 * f:_CELLS + 8 * f + 8].reshape((4, 2))
        corner = buf[_CORNER + 8 * f:_CORNER + 8 * f + 8].reshape((4, 2))
        box = buf[_BOX + 8 * f:_BOX + 8 * f + 8].reshape((4, 2))
        x0, x1 = cells[:, 0].min(), cells[:, 0].max()
        y0, y1 = cells[:, 1].min(), cells[:, 1].max()
        cell = buf[_FORCES + 4 * f:_FORCES + 4 * f + 4]
        cell[:] = 0.0
        adr = idx[_CONTACT_ADR + f]
        for k in range(min(int(sensordata[adr]), idx[_SLOTS])):
            s = sensordata[adr + k * SOLE_SLOT:adr + (k + 1) * SOLE_SLOT]
            force, pos, normal, tangent = s[1:4], s[4:7], s[7:10], s[10:13]
            bitangent = (normal[1] * tangent[2] - normal[2] * tangent[1],
                         normal[2] * tangent[0] - normal[0] * tangent[2],
                         normal[0] * tangent[1] - normal[1] * tangent[0])
            load = x = y = 0.0
            for r in range(3):
                load += (force[0] * normal[r] + force[1] * tangent[r] + force[2] * bitangent[r]) * R[r, 2]
                x += R[r, 0] * (pos[r] - p[r])
                y += R[r, 1] * (pos[r] - p[r])
            u, w = (x - x0) / (x1 - x0), (y - y0) / (y1 - y0)
            for c in range(4):
                cell[c] += load * (u if corner[c, 0] else 1.0 - u) * (w if corner[c, 1] else 1.0 - w)
        load = cx = cy = 0.0
        for c in range(4):
            sx = p[0] + R[0, 0] * cells[c, 0] + R[0, 1] * cells[c, 1]
            sy = p[1] + R[1, 0] * cells[c, 0] + R[1, 1] * cells[c, 1]
            load += cell[c]
            cx += cell[c] * sx
            cy += cell[c] * sy
        buf[_LOAD + f] = load
        lift = math.inf
        o, Rp = xpos[idx[_PLATE_BODY]], xmat[idx[_PLATE_BODY]]       # the support's top face: z = 0 of its body
        for c in range(4):
            h = 0.0
            for r in range(3):
                h += Rp[3 * r + 2] * (p[r] + R[r, 0] * box[c, 0] + R[r, 1] * box[c, 1] - o[r])
            lift = min(lift, h)
        buf[_LIFT + f] = lift
        if load > MIN_LOAD:
            buf[_CONTACT + f] = 1.0
            buf[_COP + 2 * f] = cx / load
            buf[_COP + 2 * f + 1] = cy / load
            zx += cx
            zy += cy
            total += load
            for c in range(4):
                work[m, 0] = p[0] + R[0, 0] * box[c, 0] + R[0, 1] * box[c, 1]
                work[m, 1] = p[1] + R[1, 0] * box[c, 0] + R[1, 1] * box[c, 1]
                m += 1
        else:
            buf[_CONTACT + f] = 0.0
            buf[_COP + 2 * f] = buf[_COP + 2 * f + 1] = math.nan
    if total > MIN_LOAD:
        buf[_ZMP], buf[_ZMP + 1] = zx / total, zy / total
    else:
        buf[_ZMP] = buf[_ZMP + 1] = math.nan
    poly = buf[_POLY:_POLY + 16].reshape((8, 2))
    poly[:, :] = math.nan
    h = convex_hull(work[:8], m, work[8:16], work[16:], HULL_EPS) if m else 0
    poly[:h, :] = work[16:16 + h]
    buf[_COUNT] = h


@njit(cache=True)
def _observe(P, qpos, qvel, qadr, dadr, q, qd, jp, jp2, v, wrap, wrap_idx, applied, order, motor_pos, motor_vel,
             xpos, xmat, subtree_com, sensordata, warning, buf, idx):
    """After a MuJoCo step: the divergence check, motors (bus order), encoders, IMU, feet and ground
    truth, then J_p and the rotor bias for the next step. Returns a transmission status, or
    _STATUS_DIVERGED."""
    for k in range(3):
        if warning[idx[_DIVERGED + k]] != 0:
            return _STATUS_DIVERGED
    n = q.shape[0]
    for j in range(n):
        q[j] = qpos[qadr[j]]
        qd[j] = qvel[dadr[j]]
    qm = v[3]
    status = joint_to_motor(P, q, qm)
    if status == 0:
        status = transmission_jacobian(P, q, jp)
    if status != 0:
        return status
    motor_velocity(jp, qd, v[0])
    for i in range(n):
        motor_pos[order[i]] = qm[i]
        motor_vel[order[i]] = v[0, i]
    for r in range(3):
        buf[_ACC + r] = sensordata[idx[_ACC_ADR] + r]
    for r in range(3):
        buf[_GYRO + r] = sensordata[idx[_GYRO_ADR] + r]
    for r in range(4):
        buf[_QUAT + r] = sensordata[idx[_QUAT_ADR] + r]
    pelvis = idx[_PELVIS_BODY]
    for r in range(3):
        buf[_PELVIS + r] = xpos[pelvis, r]
        buf[_COM + r] = subtree_com[pelvis, r]
    buf[_HEIGHT] = xpos[pelvis, 2]
    buf[_TILT] = math.acos(min(1.0, max(-1.0, xmat[pelvis, 8])))
    _feet(xpos, xmat, sensordata, buf, idx)
    if buf[_HEIGHT0] - buf[_HEIGHT] > DROP_LIMIT or buf[_TILT] > TILT_LIMIT:
        buf[_FALLEN] = 1.0
    return _transmission(P, qpos, qvel, qadr, dadr, q, qd, jp, jp2, v, wrap, wrap_idx, applied, True)


@njit(cache=True)
def _platform_motors(qpos, qvel, padr, dadr, ratio, order, motor_pos, motor_vel, buf):
    """The platform's hinge angles into the truth and its motors (ratio × hinge, bus order ``order``)."""
    for k in range(2):
        buf[_PLAT + k] = qpos[padr[k]]
        motor_pos[order[k]] = ratio * qpos[padr[k]]
        motor_vel[order[k]] = ratio * qvel[dadr[k]]


class BipedPlant(Plant):
    """The whole biped on MuJoCo (module docstring): ``hung`` from the gantry or on the floor.

    ``transmission`` defaults to the description's; ``q0`` (joint angles, description order) to
    :func:`flexed_posture`; ``axes`` are the motor (joint, then platform) names in bus order;
    ``timestep`` is the longest MuJoCo step (s); ``platform`` (module docstring) the tilting plate."""

    def __init__(self, desc: TreeDescription, *, hung: bool = False, transmission: Transmission | None = None,
                 q0: Sequence[float] | None = None, axes: Sequence[str] | None = None,
                 timestep: float = 4.0e-4, platform: Mapping | None = None, rig: StewartModel | None = None,
                 rig_axes: Sequence[str] = tuple(ACTUATORS), rig_options: Mapping | None = None,
                 terrain: Terrain | None = None) -> None:
        tr = transmission if transmission is not None else getattr(desc, "transmission", None)
        if tr is None:
            raise BipedPlantError(f"{desc.source}: transmission: missing (the biped plant drives every joint "
                                  f"through it)")
        names = tuple(t.joint.name for t in desc.joints)
        if rig is not None and len(rig_axes) != 6:
            raise BusConfigError(f"the Stewart-Gough rig has six actuators (legs A-F), got axes {list(rig_axes)}")
        motors = names + (PLATFORM_JOINTS if platform is not None else ()) + (tuple(rig_axes) if rig else ())
        axes = motors if axes is None else tuple(axes)
        if sorted(axes) != sorted(motors):
            raise BusConfigError(f"bus axes {list(axes)} do not match the biped plant's motors (its joints"
                                 f"{', then the platform' if platform is not None or rig else ''}) {list(motors)}: "
                                 f"missing {[a for a in motors if a not in axes]}, "
                                 f"unexpected {[a for a in axes if a not in motors]}")
        lo = np.array([t.joint.position_limits[0] for t in desc.joints])
        hi = np.array([t.joint.position_limits[1] for t in desc.joints])
        q0 = flexed_posture(desc) if q0 is None else np.array(q0, dtype=np.float64)
        if q0.shape != (desc.n,) or not np.all((lo <= q0) & (q0 <= hi)):
            raise BipedPlantError(f"q0 must be {desc.n} joint angles within the limits {lo.tolist()} .. "
                                  f"{hi.tolist()} rad, got {np.asarray(q0).tolist()}")
        self.description = desc
        self.transmission = tr
        self.hung = bool(hung)
        self.axes = axes
        n = desc.n
        self.n_motors = len(motors)
        rig_p = rig_params(rig_options) if rig is not None else None
        self.spec = build_biped(desc, tr, q0, hung=self.hung, timestep=timestep,
                                platform=None if platform is None else dict(platform), rig=rig, rig_params=rig_p,
                                terrain=terrain)
        self.mj_model = m = self.spec.compile()
        self.mj_data = d = mujoco.MjData(m)
        self._q0 = q0
        self._timestep = timestep
        self._P = tr.params
        feet = foot_geometry(desc)

        self._buf = buf = np.zeros(_N_FLOAT)
        for f, foot in enumerate(feet):
            (x0, y0), (x1, y1) = foot.box_min, foot.box_max
            buf[_CELLS + 8 * f:_CELLS + 8 * f + 8] = foot.cells.ravel()
            buf[_CORNER + 8 * f:_CORNER + 8 * f + 8] = foot.corner.ravel()
            buf[_BOX + 8 * f:_BOX + 8 * f + 8] = [x0, y0, x1, y0, x1, y1, x0, y1]
        idx = self._idx = np.zeros(_N_IDX, dtype=np.int64)
        idx[_PELVIS_BODY] = m.body(desc.base).id
        frames = {fr.name: fr for fr in desc.frames}
        soles = [frames[ft.frame] for ft in desc.feet]          # a sole frame is a MuJoCo body (models.urdf)
        idx[_SOLE_BODY:_SOLE_BODY + 2] = [m.body(frame_link(desc, f) or f.body).id for f in soles]
        idx[_ACC_ADR], idx[_QUAT_ADR], idx[_GYRO_ADR] = (m.sensor(IMU).adr[0], m.sensor(IMU_QUAT).adr[0],
                                                         m.sensor(IMU_GYRO).adr[0])
        idx[_CONTACT_ADR:_CONTACT_ADR + 2] = [m.sensor(ft.name).adr[0] for ft in desc.feet]
        idx[_SLOTS] = m.sensor(desc.feet[0].name).dim[0] // SOLE_SLOT
        idx[_DIVERGED:_DIVERGED + 3] = [int(w) for w in _DIVERGED_WARNINGS]
        self.terrain = terrain if terrain is not None and not terrain.flat else None
        idx[_PLATE_BODY] = (m.body(PLATFORM).id if platform is not None or rig is not None else
                            m.body(TERRAIN).id if self.terrain is not None else 0)
        self.platform = platform is not None
        self.rig = rig
        # the platform's held coordinates while settling: its hinges, or the rig's six slides
        held = [m.joint(j).id for j in (PLATFORM_JOINTS if self.platform else ACTUATORS if rig else ())]
        self._plat_qadr = m.jnt_qposadr[held].astype(np.int64)
        self._plat_dadr = m.jnt_dofadr[held].astype(np.int64)
        self._settle_gains = RIG_SETTLE_GAINS if rig is not None else PLATE_SETTLE_GAINS
        self._rig_bus = np.array([axes.index(a) for a in rig_axes] if rig else [], np.int64)
        self.gear = gear(rig_p) if rig is not None else 1.0
        self._plate = d.xmat[idx[_PLATE_BODY]].reshape((3, 3))
        self._plat_order = np.array([axes.index(j) for j in PLATFORM_JOINTS] if self.platform else [], np.int64)
        self.ratio = float(m.actuator_gear[m.actuator(PLATFORM_JOINTS[0]).id, 0]) if self.platform else 1.0
        joints = [m.joint(name).id for name in names]
        self._qadr = m.jnt_qposadr[joints].astype(np.int64)
        self._dadr = m.jnt_dofadr[joints].astype(np.int64)
        wraps = []
        for i in range(n):
            t = m.tendon(names[i]).id
            for k in range(m.tendon_adr[t], m.tendon_adr[t] + m.tendon_num[t]):
                wraps.append((k, i, names.index(m.joint(m.wrap_objid[k]).name)))
        self._wrap_idx = np.array(wraps, dtype=np.int64).T.copy()
        self._order = np.array([axes.index(name) for name in motors], dtype=np.int64)
        self._q, self._qd, self._v = np.zeros(n), np.zeros(n), np.zeros((4, n))
        self._jp, self._jp2 = np.zeros((n, n)), np.zeros((n, n))
        self.motor_position, self.motor_velocity = np.zeros(self.n_motors), np.zeros(self.n_motors)
        self._transmission_args = (self._P, d.qpos, d.qvel, self._qadr, self._dadr, self._q, self._qd, self._jp,
                                   self._jp2, self._v, m.wrap_prm, self._wrap_idx, d.qfrc_applied)
        self._observe_args = self._transmission_args + (self._order, self.motor_position, self.motor_velocity,
                                                        d.xpos, d.xmat, d.subtree_com, d.sensordata,
                                                        d.warning.number, buf, idx)
        self._platform_args = (d.qpos, d.qvel, self._plat_qadr, self._plat_dadr, self.ratio, self._plat_order,
                               self.motor_position, self.motor_velocity, buf)
        self._ctrl = d.ctrl
        self._dt = math.nan
        self._substeps = 1
        self._h = timestep
        bodies = {name: m.body(name).id for name in desc.body_names}
        self._push = Push(d.xfrc_applied, bodies, desc.base)
        self.sensors = {"joint_position": self._q}
        for name, size in TRUTH:
            i = _OFFSET[name]
            self.sensors[name] = buf[i:i + size] if size else buf[i:i + 1].reshape(())
        self.time = 0.0
        self.reset()

    @classmethod
    def from_config(cls, config: BusConfig, robot: str | Path | TreeDescription, hung: bool = False,
                    platform_ratio: float | None = None, rig: StewartModel | None = None,
                    rig_axes: Sequence[str] = tuple(ACTUATORS), screw_lead: float | None = None,
                    **options) -> BipedPlant:
        """The biped plant of the robot YAML ``robot`` on the bus axes of ``config`` (matched to the
        joints by name, any bus order); bus axes named after the platform's hinges stand it on the
        tilting plate, with ``platform_ratio`` motor rad per hinge rad; ``rig`` stands it on the
        Stewart–Gough rig (its motors the bus axes ``rig_axes``, screws of lead ``screw_lead`` m, rotors
        with their axes' ``plant:`` inertia and friction)."""
        desc = robot if isinstance(robot, TreeDescription) else load_tree(robot)
        axes = [a.name for a in config.axes]
        if any(a in PLATFORM_JOINTS for a in axes):
            options["platform"] = {} if platform_ratio is None else {"ratio": platform_ratio}
        if rig is not None:
            rotor = config.axis(rig_axes[0]).plant
            options.update(rig=rig, rig_axes=tuple(rig_axes), rig_options={
                "motor_inertia": rotor.inertia, "motor_friction": rotor.friction,
                **({} if screw_lead is None else {"screw_lead": screw_lead})})
        return cls(desc, hung=hung, axes=axes, **options)

    def reset(self) -> None:
        """Back to q0 at rest: hung at the gantry, or on the floor, settled (module docstring)."""
        m, d = self.mj_model, self.mj_data
        mujoco.mj_resetData(m, d)
        d.qpos[self._qadr] = self._q0
        self._push.stop()
        self._buf[_FALLEN] = 0.0
        self._buf[_HEIGHT0] = -math.inf
        if not self.hung:
            self._stand()
        self._check(_transmission(*self._transmission_args, False))
        mujoco.mj_forward(m, d)
        self._check(_observe(*self._observe_args))
        self._publish_platform()
        self._buf[_HEIGHT0] = self._buf[_HEIGHT]
        self.time = 0.0

    def _publish_platform(self) -> None:
        """The platform's motors and its tilt in the truth: the hinges', or the rig's slides (× gear)
        and its plate's hinge-equivalent angles."""
        if self.platform:
            _platform_motors(*self._platform_args)
        elif self.rig is not None:
            d = self.mj_data
            self.motor_position[self._rig_bus] = self.gear * d.qpos[self._plat_qadr]
            self.motor_velocity[self._rig_bus] = self.gear * d.qvel[self._plat_dadr]
            matrix_hinge_angles(self._plate, self._buf[_PLAT:_PLAT + 2], SOLES)
            self._buf[_PLATE_POS:_PLATE_POS + 3] = d.xpos[self._idx[_PLATE_BODY]]

    def _stand(self) -> None:
        """Both soles flat on the floor at q0, then :data:`SETTLE_S` of settling under the joint PD."""
        m, d = self.mj_model, self.mj_data
        free = m.jnt_qposadr[m.joint(PELVIS).id]
        d.qpos[free:free + 7] = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
        mujoco.mj_kinematics(m, d)
        soles = d.xpos[self._idx[_SOLE_BODY:_SOLE_BODY + 2]]
        tilt = [math.acos(min(1.0, d.xmat[b, 8])) for b in self._idx[_SOLE_BODY:_SOLE_BODY + 2]]
        if max(tilt) > LEVEL_TOL or abs(soles[0, 2] - soles[1, 2]) > LEVEL_TOL:
            raise BipedPlantError(f"q0 {np.round(self._q0, 4).tolist()} must put both soles flat at one height "
                                  f"for the ground scene (sole tilts {np.round(tilt, 4).tolist()} rad, heights "
                                  f"{np.round(soles[:, 2], 4).tolist()} m)")
        d.qpos[free:free + 2] = -0.5 * (soles[0, :2] + soles[1, :2])
        d.qpos[free + 2] = -soles[0, 2]
        if self.terrain is not None:
            self._on_terrain(d.qpos[free:free + 7])
        kp, kd = SETTLE_GAINS
        for _ in range(max(1, round(SETTLE_S / m.opt.timestep))):
            self._check(_transmission(*self._transmission_args, False))
            d.qfrc_applied[self._dadr] += kp * (self._q0 - self._q) - kd * self._qd
            pa, pd = self._plat_qadr, self._plat_dadr                # the plate held level (no-op without)
            kp_p, kd_p = self._settle_gains
            d.qfrc_applied[pd] = -kp_p * (d.qpos[pa] - m.qpos0[pa]) - kd_p * d.qvel[pd]
            mujoco.mj_step(m, d)
            self._check(_STATUS_DIVERGED if d.warning.number[self._idx[_DIVERGED:_DIVERGED + 3]].any() else 0)
        d.qfrc_applied[self._plat_dadr] = 0.0
        d.time = 0.0

    def _on_terrain(self, pose: np.ndarray) -> None:
        """The pelvis' free-joint ``pose`` (placed on the level floor z = 0) carried onto the terrain:
        turned by its floor rotation about the world origin; a step edge under the soles is an error."""
        m, d = self.mj_model, self.mj_data
        mujoco.mj_kinematics(m, d)
        t = self.terrain
        if t.step_height:
            reach = max(float(d.xpos[b, 0] + d.xmat[b, 0] * x + d.xmat[b, 1] * y)
                        for f, b in enumerate(self._idx[_SOLE_BODY:_SOLE_BODY + 2])
                        for x, y in self._buf[_BOX + 8 * f:_BOX + 8 * f + 8].reshape((4, 2)))
            if reach >= t.step_x:
                raise BipedPlantError(f"the step at {t.step_x:g} m lies under the feet at reset (the soles reach "
                                      f"x = {reach:.3f} m): put it further ahead")
        rot = t.rotation()
        pose[:3] = rot @ pose[:3]
        mujoco.mju_mat2Quat(pose[3:7], np.ascontiguousarray(rot).ravel())

    def step(self, dt: float, motor_torque: np.ndarray) -> None:
        if dt != self._dt:
            self._set_step(dt)
        if _command(motor_torque, self._ctrl, self._order):
            raise TransmissionFault(f"biped plant: a motor torque is not finite: "
                                    f"{np.asarray(motor_torque).tolist()} N m")
        m, d = self.mj_model, self.mj_data
        for k in range(self._substeps):
            self._push.count(self._h)
            if k:
                self._check(_transmission(*self._transmission_args, False))
            mujoco.mj_step(m, d)
        status = _observe(*self._observe_args)
        if status:
            self._check(status)
        self._publish_platform()
        self.time += dt

    def _set_step(self, dt: float) -> None:
        """n equal MuJoCo steps of at most ``timestep`` per step of ``dt``."""
        n = max(1, math.ceil(dt / self._timestep - 1e-9))
        self._h = self.mj_model.opt.timestep = dt / n
        self._dt, self._substeps = dt, n

    def control(self, request: Mapping) -> dict:
        """Plant-specific control ops (the HIL's UDP control channel): ``push`` (module docstring)."""
        return self._push.request(request)

    def _check(self, status: int) -> None:
        if status == _STATUS_DIVERGED:
            raise SimulationError(f"biped plant diverged at t = {self.time:.4f} s (non-finite state); "
                                  f"q = {np.round(self._q, 6).tolist()} rad")
        if status != 0:
            raise TransmissionFault(f"biped plant: {status_message(status, self.transmission.labels)} at q = "
                                    f"{np.round(self._q, 6).tolist()} rad")
