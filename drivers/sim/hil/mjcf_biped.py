"""MuJoCo model of a whole biped (a tree description with two feet), hung from a gantry or on the floor.

Built from the same YAML as the controller's tree models (:func:`drivers.sim.hil.mjcf.spec_from_description`:
bodies, inertias, joint frames, limits, joint armature and friction), so the two cannot drift. World
axes: z up, x forward; at reset the pelvis frame (x forward, y left, z up) is level.

- ``hung``: the pelvis is fixed in the world :data:`GANTRY_HEIGHT` above the floor, the feet free in
  the air (the thesis' gantry experiment, Gastebois 2017 §2.6.2);
- ``ground``: the pelvis carries a free joint; each foot is its sole box (:func:`models.geometry.sole_box`: the
  bounding box of the YAML's sole outline, sole face on the sole frame's z = 0) in contact with the
  floor plane z = 0;
- ``ground`` with ``platform``: the feet stand on the leg bench's two-axis tilting plate instead
  (:data:`drivers.sim.hil.mjcf.PLATFORM_DEFAULTS`: size, masses, motors, ratio), its top face at z = 0: a
  hinge ``platform_alpha`` about the world x (forward: roll) carries a hinge ``platform_beta`` about
  its own y (pitch), so the plate's axes are RotX(alpha) RotY(beta), the whole-robot stabilizer's
  platform tilt (stabilizer.whole_body, apparent_up); each hinge is a motor actuator through a gear
  of ``ratio`` (its rotor inertia and viscous friction appear as ratio² J and ratio² b at the hinge).
  The floor plane lies :data:`PLATFORM_DEPTH` below.
- ``ground`` with ``rig``: the feet stand on the Stewart–Gough rig's plate instead (body and geom
  ``platform``, :func:`drivers.sim.hil.stewart_mjcf.rig_xml` with ``origin: plate``: its top face at z = 0
  at the home pose), the six actuators' motors after the joints'; the floor lies at the rig's base.

- ``ground`` with ``terrain`` (:class:`drivers.sim.hil.terrain.Terrain`): the floor tilted and a step,
  both in the static body ``terrain``, whose geoms the feet's contact sensors take together.

Every scene has the floor (the hung feet never reach it; the feet's support is :data:`FLOOR` or the
plate :data:`PLATFORM`), an IMU site at the pelvis origin (pelvis
axes) with an accelerometer ``imu``, a rate gyro ``imu_gyro`` (angular velocity, rad/s, pelvis axes) and
an orientation sensor ``imu_quat``, and per foot a contact
sensor (:data:`SOLE_DATA` per support/sole contact, as the bench leg's ``sole``; its name is the foot's).

Transmission (thesis eq. 30-32, any number of joints): one fixed tendon per motor (named after its
joint; motor i drives joint i) spanning the joints of its block (those its row of J_p reaches),
whose coefficients are that row, so the tendon velocity is q̇_m = J_p q̇; the rotor inertia J_m,
viscous and Coulomb friction of the motor are the tendon's armature, damping and frictionloss.
MuJoCo then adds J_pᵀ J_m J_p to the mass matrix (exact, ankle coupling included) and
J_pᵀ (F_v q̇_m + F_c sign q̇_m) implicitly, and a motor actuator on each tendon applies J_pᵀ τ_m.
Tendons rather than a per-step joint armature: a gear's J_p is constant (its tendon is then exactly
ratio² J_m of armature), while an ankle's 2×2 block couples its two joints, which a diagonal armature
cannot hold. The coefficients written here are
J_p(q0); the plant rewrites them from J_p(q) before every MuJoCo step (:mod:`drivers.sim.hil.plant_biped`).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import mujoco
import numpy as np

from models.geometry import sole_box
from models.rig.stewart import StewartModel
from models.tree.config import TreeDescription
from models.transmission import Transmission, status_message, transmission_jacobian

from drivers.sim.hil.mjcf import PLATFORM, PLATFORM_JOINTS, SOLE_DATA, SOLE_SLOTS, MjcfError, platform_params, spec_from_description
from drivers.sim.hil.stewart_mjcf import rig_params as checked_rig_params
from drivers.sim.hil.stewart_mjcf import rig_xml
from drivers.sim.hil.terrain import STEP, TERRAIN, Terrain

GANTRY_HEIGHT = 1.25     # m, pelvis origin above the floor when hung (legs 0.92 m at full stretch)
FRICTION = 1.0           # sole/floor sliding friction coefficient
CONTACT_TIMECONST = 0.005  # s, contact stiffness (MuJoCo solref time constant, >= 2 steps)
PLATFORM_DEPTH = 0.5     # m, the floor below the plate's top face (a 25° tilt of the plate sinks 0.17 m)
FLOOR, PELVIS, IMU, IMU_QUAT, IMU_GYRO = "floor", "pelvis", "imu", "imu_quat", "imu_gyro"
_CONTACT_DATA = sum(1 << int(getattr(mujoco.mjtConDataField, f"mjCONDATA_{f.upper()}")) for f in SOLE_DATA.split())


@dataclass(frozen=True)
class FootGeometry:
    """A foot as the plant sees it: its body, the sole frame's pose in it (4×4), the contact box's
    (x, y) extent in the sole frame, and its four load cells' (x, y) in the sole frame with their
    corner of the cell rectangle (front, left: 1 or 0)."""

    name: str
    body: str
    sole: np.ndarray
    box_min: tuple[float, float]
    box_max: tuple[float, float]
    cells: np.ndarray        # (4, 2) cell positions (m, sole frame)
    corner: np.ndarray       # (4, 2) 1.0 at the front (max x) / left (max y) side of the rectangle


def foot_geometry(desc: TreeDescription) -> tuple[FootGeometry, FootGeometry]:
    """The two feet of ``desc`` (``feet:``), each with four load cells on an axis-aligned rectangle of
    its sole frame; anything else is an :class:`MjcfError` naming the key."""
    if len(desc.feet) != 2:
        raise MjcfError(f"{desc.source}: feet: a biped needs exactly two feet, got {len(desc.feet)}")
    frames = {f.name: f for f in desc.frames}
    out = []
    for foot in desc.feet:
        sole = np.array(frames[foot.frame].pose)
        inv = np.linalg.inv(sole)
        cells = np.array([(inv @ np.array(frames[s].pose))[:2, 3] for s in foot.sensors])
        xs, ys = np.unique(np.round(cells[:, 0], 9)), np.unique(np.round(cells[:, 1], 9))
        if cells.shape[0] != 4 or xs.size != 2 or ys.size != 2 or np.unique(np.round(cells, 9), axis=0).shape[0] != 4:
            raise MjcfError(f"{desc.source}: feet.{foot.name}.sensors: the plant needs four load cells at the "
                            f"corners of a rectangle aligned with the sole frame, got {np.round(cells, 4).tolist()}")
        outline = np.array(foot.outline)
        out.append(FootGeometry(foot.name, frames[foot.frame].body, sole, tuple(outline.min(axis=0)),
                                tuple(outline.max(axis=0)), cells,
                                (cells > [[xs.mean(), ys.mean()]]).astype(np.float64)))
    return out[0], out[1]


def transmission_spans(tr: Transmission) -> tuple[tuple[int, ...], ...]:
    """The joints each motor's row of J_p reaches: those of its block (motor i drives joint i)."""
    span: list[tuple[int, ...]] = [()] * tr.n
    for block in tr.blocks:
        for j in block.joints:
            span[j] = tuple(sorted(block.joints))
    return tuple(span)


def _add_platform(spec: mujoco.MjSpec, p: dict, solref: list[float]) -> None:
    """The α frame and the β plate (module docstring), top face at z = 0, hinges through the origin."""
    hs, t, r2 = p["half_size"], p["thickness"], p["ratio"] ** 2
    frame = spec.worldbody.add_body(name=PLATFORM_JOINTS[0], mass=p["frame_mass"], pos=[0.0, 0.0, 0.0],
                                    ipos=[0.0, 0.0, -1.5 * t],
                                    inertia=[p["frame_mass"] * hs * hs / 3.0] * 2 + [2 * p["frame_mass"] * hs * hs / 3.0])
    plate = frame.add_body(name=PLATFORM)
    for body, joint, axis, k in ((frame, PLATFORM_JOINTS[0], [1.0, 0.0, 0.0], 0),
                                 (plate, PLATFORM_JOINTS[1], [0.0, 1.0, 0.0], 1)):
        body.add_joint(name=joint, type=mujoco.mjtJoint.mjJNT_HINGE, axis=axis,
                       armature=r2 * p["motor_inertia"][k], damping=r2 * p["motor_friction"][k])
        spec.add_actuator(name=joint, target=joint, trntype=mujoco.mjtTrn.mjTRN_JOINT,
                          gear=[p["ratio"], 0.0, 0.0, 0.0, 0.0, 0.0])
    plate.add_geom(name=PLATFORM, type=mujoco.mjtGeom.mjGEOM_BOX, size=[hs, hs, 0.5 * t], pos=[0.0, 0.0, -0.5 * t],
                   mass=p["mass"], contype=0, conaffinity=1, condim=3, friction=[FRICTION, 0.005, 1e-4],
                   solref=solref)


def _add_terrain(spec: mujoco.MjSpec, terrain: Terrain, solref: list[float]) -> None:
    """The static body :data:`TERRAIN` (the floor's axes R about the world origin) holding the floor
    plane and the step box (:mod:`drivers.sim.hil.terrain`)."""
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, np.ascontiguousarray(terrain.rotation()).ravel())
    body = spec.worldbody.add_body(name=TERRAIN, quat=quat)
    contact = dict(contype=0, conaffinity=1, condim=3, friction=[FRICTION, 0.005, 1e-4], solref=solref)
    body.add_geom(name=FLOOR, type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0.0, 0.0, 0.05],
                  pos=[0.0, 0.0, terrain.floor_z()], **contact)
    box = terrain.step_box()
    if box is not None:
        body.add_geom(name=STEP, type=mujoco.mjtGeom.mjGEOM_BOX, pos=box[0], size=box[1], **contact)


def _with_rig(spec: mujoco.MjSpec, rig: StewartModel, params: Mapping | None, timestep: float,
              solref: list[float]) -> mujoco.MjSpec:
    """``spec`` with the Stewart–Gough rig (:func:`drivers.sim.hil.stewart_mjcf.rig_xml`, plate top face at
    z = 0): its bodies, loop-closing welds and six motors, after the scene's own, under their names."""
    bodies, welds, motors = rig_xml(rig, checked_rig_params(params), "plate", timestep, (FRICTION, solref[0]))
    xml = spec.to_xml()
    head, tail = xml.rsplit("</worldbody>", 1)
    body, end = tail.rsplit("</mujoco>", 1)
    return mujoco.MjSpec.from_string(f"{head}{bodies}\n</worldbody>{body}<equality>\n{welds}</equality>\n"
                                     f"<actuator>\n{motors}</actuator>\n</mujoco>{end}")


def build_biped(desc: TreeDescription, tr: Transmission, q0: Sequence[float], *, hung: bool,
                timestep: float = 4.0e-4, platform: dict | None = None, rig: StewartModel | None = None,
                rig_params: Mapping | None = None, terrain: Terrain | None = None) -> mujoco.MjSpec:
    """The scene (module docstring) as a MuJoCo spec; ``q0`` (joint angles, description order) sets
    the tendons' initial J_p; ``platform`` (on the ground only: overrides of the leg bench's
    PLATFORM_DEFAULTS, ``{}`` for none) puts the feet on the tilting plate, ``rig`` (``rig_params``:
    overrides of stewart_mjcf.RIG_DEFAULTS) on the Stewart–Gough rig's plate; ``terrain`` (on the floor
    only) tilts the floor and adds a step (:mod:`drivers.sim.hil.terrain`). ``spec.compile()`` is the
    model, ``spec.to_xml()`` its MJCF; the platform's two (the rig's six) actuators come after the
    joints' motors."""
    if not (math.isfinite(timestep) and timestep > 0):
        raise MjcfError(f"timestep must be a finite number > 0, got {timestep!r}")
    if tr.n != desc.n:
        raise MjcfError(f"{desc.source}: transmission: {tr.n} motors for {desc.n} joints")
    if (platform is not None or rig is not None) and hung:
        raise MjcfError("the tilting platform carries a standing robot, not one hung from the gantry")
    if platform is not None and rig is not None:
        raise MjcfError("the feet stand on the two-hinge platform or on the Stewart-Gough rig, not both")
    rough = terrain is not None and not terrain.flat
    if rough and (hung or platform is not None or rig is not None):
        raise MjcfError("a tilted floor or a step is ground under the robot standing on the floor, "
                        "not hung from the gantry nor on a platform")
    plat = None if platform is None else platform_params(platform)
    feet = foot_geometry(desc)
    spec = spec_from_description(desc)
    spec.modelname = f"{desc.name}_{'hung' if hung else 'ground'}"
    spec.option.timestep = timestep
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_ISLAND
    solref = [max(CONTACT_TIMECONST, 2.0 * timestep), 1.0]
    if rough:
        _add_terrain(spec, terrain, solref)
    else:
        spec.worldbody.add_geom(name=FLOOR, type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0.0, 0.0, 0.05],
                                pos=[0.0, 0.0, -rig.desc.h if rig is not None else
                                     0.0 if plat is None else -PLATFORM_DEPTH],
                                contype=0, conaffinity=1, condim=3, friction=[FRICTION, 0.005, 1e-4], solref=solref)
    support = FLOOR if plat is None and rig is None else PLATFORM
    pelvis = spec.body(desc.base)
    pelvis.pos = [0.0, 0.0, GANTRY_HEIGHT]
    if not hung:
        pelvis.add_freejoint(name=PELVIS)
    pelvis.add_site(name=IMU, size=[0.01, 0.0, 0.0])
    for foot in desc.feet:
        box = sole_box(desc, foot)
        quat = np.empty(4)
        mujoco.mju_mat2Quat(quat, np.ascontiguousarray(box.pose[:3, :3]).ravel())
        spec.body(box.body).add_geom(name=box.name, type=mujoco.mjtGeom.mjGEOM_BOX, size=box.half,
                                     pos=box.pose[:3, 3], quat=quat, contype=1, conaffinity=0, condim=3,
                                     friction=[FRICTION, 0.005, 1e-4], solref=solref)
    spec.add_sensor(name=IMU, type=mujoco.mjtSensor.mjSENS_ACCELEROMETER, objtype=mujoco.mjtObj.mjOBJ_SITE,
                    objname=IMU)
    spec.add_sensor(name=IMU_GYRO, type=mujoco.mjtSensor.mjSENS_GYRO, objtype=mujoco.mjtObj.mjOBJ_SITE, objname=IMU)
    spec.add_sensor(name=IMU_QUAT, type=mujoco.mjtSensor.mjSENS_FRAMEQUAT, objtype=mujoco.mjtObj.mjOBJ_SITE,
                    objname=IMU)
    names = [t.joint.name for t in desc.joints]
    jp = np.empty((desc.n, desc.n))
    status = transmission_jacobian(tr.params, np.asarray(q0, dtype=np.float64), jp)
    if status != 0:
        raise MjcfError(f"transmission: J_p at the initial posture {np.round(q0, 4).tolist()}: "
                        f"{status_message(status, tr.labels)}")
    motors = tr.motors
    rotor, viscous, coulomb = motors.rotor_inertia, motors.viscous, motors.coulomb
    for i, joints in enumerate(transmission_spans(tr)):
        tendon = spec.add_tendon(name=names[i], armature=rotor[i], damping=[viscous[i]], frictionloss=coulomb[i])
        for j in joints:
            tendon.wrap_joint(names[j], jp[i, j])
        spec.add_actuator(name=names[i], target=names[i], trntype=mujoco.mjtTrn.mjTRN_TENDON)
    if plat is not None:
        _add_platform(spec, plat, solref)
    if rig is not None:                        # (its plate is the contact sensors' support)
        spec = _with_rig(spec, rig, rig_params, timestep, solref)
    for foot in feet:                          # a rough terrain's floor and step: any geom of its body
        spec.add_sensor(name=foot.name, type=mujoco.mjtSensor.mjSENS_CONTACT,
                        objtype=mujoco.mjtObj.mjOBJ_BODY if rough else mujoco.mjtObj.mjOBJ_GEOM,
                        objname=TERRAIN if rough else support, reftype=mujoco.mjtObj.mjOBJ_GEOM, refname=foot.name,
                        intprm=[_CONTACT_DATA, 0, SOLE_SLOTS])
    return spec
