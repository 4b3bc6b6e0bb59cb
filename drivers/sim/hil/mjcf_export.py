"""``bipd export mjcf``: a MuJoCo model of a robot description that the viewer shows and, for a
biped, that stands.

A biped (a tree with two ``feet`` and a ``transmission``) is the HIL's ground scene
(:func:`drivers.sim.hil.mjcf_biped.build_biped`, one source with the bench): a free joint at the
pelvis, the floor, the sole boxes in contact with it (the bench's friction and contact stiffness)
with a contact sensor each, the IMU, and the transmission as one fixed tendon per motor whose
coefficients are its row of J_p at the stance posture (a gear block's single coefficient is its
ratio; a linkage's its ratio there) and whose armature is the rotor inertia: MuJoCo adds
J_pᵀ J_m J_p to the mass matrix, the ankle's coupling included. The pelvis is placed so that the
soles rest on the floor at q = 0, and the keyframe :data:`STANCE` holds the bench's stance
(:func:`drivers.sim.hil.plant_biped.flexed_posture`) with both soles flat on the floor.

Actuators, one per joint, named after it: ``motor`` (ctrl = the motor torque, on the motor's tendon,
so the joint torques are J_pᵀ τ_m), or ``position`` (ctrl = the joint angle, a PD at the joint of
gains ``kp``, ``kv``; the keyframe's ctrl is the stance). Any other robot is fixed at its base
(:func:`drivers.sim.hil.mjcf.spec_from_description`).

Every robot gets the link capsules and a material per sub-tree (:mod:`models.geometry`); the
capsules touch the floor only (a fallen robot lies on it), never each other or the soles. A body
whose YAML names meshes (:class:`models.tree.config.Mesh`) gets a mesh asset per file
(``BODY_visual_K``, ``BODY_collision_K``, the file's absolute path, its scale): visual meshes touch
nothing (geom group 1, the capsules then move to the hidden group 3), collision meshes replace the
body's capsules (they touch the floor as the capsules did; hidden in group 3 beside visual meshes). MuJoCo loads STL and OBJ meshes.
"""
from __future__ import annotations

import mujoco
import numpy as np

from models.geometry import link_capsules, materials
from models.tree.config import TreeDescription, mesh_file

from drivers.sim.hil.mjcf import spec_from_description
from drivers.sim.hil.mjcf_biped import PELVIS, build_biped
from drivers.sim.hil.mjcf_text import MjcfError
from drivers.sim.hil.plant_biped import SETTLE_GAINS, flexed_posture

STANCE = "stance"            # the keyframe of the standing posture
ACTUATORS = ("motor", "position")
MUJOCO_MESHES = (".stl", ".obj")


def _add_meshes(spec: mujoco.MjSpec, desc: TreeDescription, paint: dict) -> None:
    """The YAML's meshes (module docstring) as assets and geoms of their bodies."""
    for body, shapes in desc.shapes.items():
        for kind, meshes in (("visual", shapes.visual), ("collision", shapes.collision)):
            for k, m in enumerate(meshes):
                path = mesh_file(m)
                if path.suffix.lower() not in MUJOCO_MESHES:
                    raise MjcfError(f"{desc.source}: body {body!r}: MuJoCo cannot load the {kind} mesh {str(path)!r} "
                                    f"(only {', '.join(MUJOCO_MESHES)} files)")
                name = f"{body}_{kind}_{k}"
                spec.add_mesh(name=name, file=str(path), scale=list(m.scale))
                T = np.array(m.pose)
                quat = np.zeros(4)
                mujoco.mju_mat2Quat(quat, np.ascontiguousarray(T[:3, :3]).ravel())
                touch = dict(contype=1, conaffinity=0, condim=3, group=3 if shapes.visual else 1) \
                    if kind == "collision" else dict(contype=0, conaffinity=0, group=1)
                spec.body(body).add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_MESH, meshname=name, pos=T[:3, 3],
                                         quat=quat, material=paint[body][0], **touch)


def _add_geometry(spec: mujoco.MjSpec, desc: TreeDescription) -> None:
    """The capsules of :func:`models.geometry.link_capsules` with their sub-tree's material, and
    the YAML's meshes (module docstring)."""
    paint = materials(desc)
    for name, rgba in dict(paint.values()).items():
        spec.add_material(name=name, rgba=list(rgba))
    _add_meshes(spec, desc, paint)
    for c in link_capsules(desc):
        body = spec.body(c.body)
        own = desc.shapes.get(c.body)
        if own is not None and own.collision:
            continue
        shape = dict(contype=1, conaffinity=0, condim=3, material=paint[c.body][0],
                     group=3 if own is not None and own.visual else 1)
        if np.array_equal(c.start, c.end):
            body.add_geom(name=c.name, type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[c.radius, 0.0, 0.0],
                          pos=c.start, **shape)
        else:
            body.add_geom(name=c.name, type=mujoco.mjtGeom.mjGEOM_CAPSULE, size=[c.radius, 0.0, 0.0],
                          fromto=[*c.start, *c.end], **shape)


def is_biped(desc: TreeDescription) -> bool:
    """Whether ``desc`` exports as a standing biped (two feet and a transmission)."""
    return len(desc.feet) == 2 and desc.transmission is not None


def _soles_z(m: mujoco.MjModel, d: mujoco.MjData, desc: TreeDescription) -> np.ndarray:
    """The sole frames' world (x, y, z), one row per foot, after forward kinematics."""
    mujoco.mj_kinematics(m, d)
    return np.array([d.xpos[m.body(foot.frame).id] for foot in desc.feet])


def standing_spec(desc: TreeDescription, actuators: str = "motor",
                  gains: tuple[float, float] = SETTLE_GAINS) -> mujoco.MjSpec:
    """The standing biped (module docstring) as a MuJoCo spec; ``gains`` (kp N m/rad, kv N m s/rad)
    of the ``position`` actuators."""
    if actuators not in ACTUATORS:
        raise ValueError(f"actuators must be one of {', '.join(ACTUATORS)}, got {actuators!r}")
    q0 = flexed_posture(desc)
    spec = build_biped(desc, desc.transmission, q0, hung=False)
    spec.modelname = desc.name
    _add_geometry(spec, desc)
    names = [t.joint.name for t in desc.joints]
    if actuators == "position":
        for act in list(spec.actuators):
            spec.delete(act)
        for name in names:
            spec.add_actuator(name=name, target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT).set_to_position(
                kp=gains[0], kv=gains[1])
    m = spec.compile()
    d = mujoco.MjData(m)
    spec.body(desc.base).pos[2] -= _soles_z(m, d, desc)[:, 2].min()     # soles on the floor at q = 0
    m = spec.compile()
    free = m.jnt_qposadr[m.joint(PELVIS).id]
    adr = np.array([m.jnt_qposadr[m.joint(name).id] for name in names])
    d = mujoco.MjData(m)
    d.qpos[adr] = q0
    soles = _soles_z(m, d, desc)
    d.qpos[free:free + 3] -= [*soles[:, :2].mean(axis=0), soles[:, 2].min()]   # midway above, on the floor
    ctrl = np.zeros(m.nu)
    if actuators == "position":
        ctrl[[m.actuator(name).id for name in names]] = q0
    spec.add_key(name=STANCE, qpos=d.qpos.tolist(), ctrl=ctrl.tolist())
    return spec


def export_mjcf(desc: TreeDescription, actuators: str = "motor") -> str:
    """The MJCF of ``desc`` (module docstring). MuJoCo writes numbers to 6 significant digits."""
    if is_biped(desc):
        return standing_spec(desc, actuators).to_xml()
    spec = spec_from_description(desc)
    _add_geometry(spec, desc)
    return spec.to_xml()
