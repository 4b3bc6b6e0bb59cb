"""MJCF -> robot YAML through MuJoCo's compiler and the URDF importer (docs/import.md).

MuJoCo compiles the MJCF (defaults, includes, frames and orientations resolved) into an
MjModel; each body with at most one hinge or slide joint is then a URDF link: a link's frame is
its body's frame moved to the joint's anchor (jnt_pos, which a URDF joint origin must hold), so
the joint origin is body_pos − o_parent + R(body_quat) jnt_pos, with o the anchor offset of the
parent, and the inertial and child bodies are shifted by −o. Damping, frictionloss and armature
become ``<dynamics>`` and the armature comment, MuJoCo's gravity the gravity comment: the
URDF text then goes through :func:`models.importers.urdf.import_urdf`. MJCF has no velocity
limit: ``velocity`` is given by the caller; a joint's effort limit is its actuatorfrcrange, else
that of the actuators driving it (forcerange x gear), else ``effort``.
"""
from __future__ import annotations

import math
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np

from models.importers.urdf import UrdfError, import_urdf
from models.urdf import origin, number_list

KINDS = {2: "prismatic", 3: "revolute"}                 # mjtJoint: slide, hinge
REFUSED = {0: "a free joint (the tree's base is fixed: import from the body below it with --root)",
           1: "a ball joint (not a single axis)"}


def _name(mujoco, m, kind, i: int, stem: str) -> str:
    return mujoco.mj_id2name(m, kind, i) or f"{stem}{i}"


def _quat_pose(pos, quat) -> np.ndarray:
    """4x4 of a MuJoCo position and unit quaternion (w, x, y, z)."""
    w, x, y, z = quat
    T = np.eye(4)
    T[:3, :3] = [[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                 [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                 [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]]
    T[:3, 3] = pos
    return T


def _effort(m, j: int, where: str, name: str, effort: float | None) -> float:
    if m.jnt_actfrclimited[j]:
        return float(np.abs(m.jnt_actfrcrange[j]).max())
    driving = [a for a in range(m.nu) if m.actuator_trnid[a, 0] == j and m.actuator_trntype[a] == 0
               and m.actuator_forcelimited[a]]
    if driving:
        return float(sum(np.abs(m.actuator_forcerange[a]).max() * abs(m.actuator_gear[a, 0]) for a in driving))
    if effort is None:
        raise UrdfError(where, f"joint {name!r}: no actuatorfrcrange nor force-limited actuator: give --effort")
    return effort


def mjcf_to_urdf(path: str, velocity: float, effort: float | None = None) -> str:
    """The URDF text of the tree MuJoCo compiles from the MJCF file ``path`` (module docstring)."""
    import mujoco

    try:
        m = mujoco.MjModel.from_xml_path(str(path))
    except ValueError as e:
        raise UrdfError(str(path), f"MuJoCo cannot compile it: {str(e).splitlines()[0]}") from None
    where = str(path)
    bodies = [_name(mujoco, m, mujoco.mjtObj.mjOBJ_BODY, b, "body") for b in range(m.nbody)]
    offset = np.zeros((m.nbody, 3))
    links, joints = [], []
    for b in range(m.nbody):
        if m.body_jntnum[b] == 1:                          # the link frame sits at the joint's anchor
            offset[b] = m.jnt_pos[m.body_jntadr[b]]
        link = f"  <link name={quoteattr(bodies[b])}>"
        if m.body_mass[b] > 0.0:
            T = _quat_pose(m.body_ipos[b] - offset[b], m.body_iquat[b])
            ixx, iyy, izz = m.body_inertia[b]
            link += (f"<inertial>{origin(T)}<mass value=\"{number_list(m.body_mass[b])}\"/>"
                     f"<inertia ixx=\"{number_list(ixx)}\" iyy=\"{number_list(iyy)}\" izz=\"{number_list(izz)}\" "
                     "ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial>")
        links.append(link + "</link>")
        if b == 0:
            continue
        p = m.body_parentid[b]
        placement = _quat_pose(m.body_pos[b] - offset[p], m.body_quat[b])
        ends = f"<parent link={quoteattr(bodies[p])}/><child link={quoteattr(bodies[b])}/>"
        if m.body_jntnum[b] == 0:
            joints.append(f"  <joint name={quoteattr(bodies[b] + '_weld')} type=\"fixed\">{ends}"
                          f"{origin(placement)}</joint>")
            continue
        names = [_name(mujoco, m, mujoco.mjtObj.mjOBJ_JOINT, j, "joint")
                 for j in range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b])]
        j = int(m.body_jntadr[b])
        if int(m.jnt_type[j]) in REFUSED:
            raise UrdfError(where, f"joint {names[0]!r} is {REFUSED[int(m.jnt_type[j])]}: not imported")
        if len(names) > 1:
            raise UrdfError(where, f"body {bodies[b]!r} carries {len(names)} joints {names}: a URDF-equivalent "
                                   "tree has one per body")
        placement[:3, 3] += placement[:3, :3] @ offset[b]
        kind = KINDS[int(m.jnt_type[j])]
        if m.jnt_limited[j]:
            lo, hi = m.jnt_range[j]
        elif kind == "revolute":
            kind, lo, hi = "continuous", -math.inf, math.inf
        else:
            raise UrdfError(where, f"joint {names[0]!r}: a slide joint needs a range")
        dof = int(m.jnt_dofadr[j])
        limit = f"velocity=\"{number_list(velocity)}\" effort=\"{number_list(_effort(m, j, where, names[0], effort))}\""
        if kind != "continuous":
            limit = f"lower=\"{number_list(lo)}\" upper=\"{number_list(hi)}\" " + limit
        joints.append(f"  <joint name={quoteattr(names[0])} type=\"{kind}\">{ends}{origin(placement)}"
                      f"<axis xyz=\"{number_list(*m.jnt_axis[j])}\"/><limit {limit}/>"
                      f"<dynamics damping=\"{number_list(m.dof_damping[dof])}\" "
                      f"friction=\"{number_list(m.dof_frictionloss[dof])}\"/>"
                      f"<!-- armature: {number_list(m.dof_armature[dof])} kg m^2 --></joint>")
    name = Path(path).stem
    return "\n".join([f"<!-- from {where} by MuJoCo's compiler; gravity {number_list(*m.opt.gravity)} m/s^2 -->",
                      f"<robot name={quoteattr(name)}>", *links, *joints, "</robot>\n"])


def import_mjcf(path: str, velocity: float, effort: float | None = None, root: str | None = None,
                feet: tuple[str, ...] = (), cut: tuple[str, ...] = ()) -> str:
    """The robot YAML of an MJCF file (through :func:`mjcf_to_urdf`)."""
    return import_urdf(mjcf_to_urdf(path, velocity, effort), str(path), root, feet, cut)
