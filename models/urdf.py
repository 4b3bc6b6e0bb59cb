"""URDF of a robot description (a chain or a tree), for Pinocchio, MuJoCo, RViz or meshcat.

Links are the description's bodies, rooted at its base (URDF is a tree with one root; a
re-rooting at a sole is left to the reader). Link j's frame is the MDH frame of joint j, so
the joint's origin is the fixed part of Khalil & Dombre's tree transform at q = 0,
RotZ(γ) TransZ(b) RotX(α) TransX(a) RotZ(θ) TransZ(d), and the joint turns (revolute) or
slides (prismatic) along its z axis: RotZ(θ + q) TransZ(d) = RotZ(θ) TransZ(d) RotZ(q), and
TransZ(d + q) likewise. Limits carry position, velocity and effort; ``<dynamics>`` carries
damping = the viscous and friction = the Coulomb coefficient (Lammari 2012, eq. IV.10);
``<inertial>`` the mass, the CoG and the inertia about the CoG, all in the link frame
(docs/conventions.md). URDF has no rotor inertia: each joint's armature is an XML comment
``<!-- armature: J kg m^2 -->`` inside its ``<joint>`` element, which a reader adds to the
diagonal of A (Pinocchio: ``model.armature``). Operational frames (a chain's ``tool``
included) become links fixed to their body (``NAME_frame`` when a body has the frame's name
and the frame is off its origin; a frame at its namesake body's origin is that body's link). Gravity is not part of URDF.

Geometry (:mod:`models.geometry`): each link carries the same ``<visual>`` and ``<collision>``
elements, named after the shape. URDF has no capsule, so a capsule is a ``<cylinder>`` along the
segment (its origin at the midpoint, its z axis along the segment) and a ``<sphere>`` at each end
(``NAME``, ``NAME_start``, ``NAME_end``); a sole is a ``<box>``. Each sub-tree's ``<material>``
is declared once at the top and named by its visuals. A body whose YAML names ``visual`` or
``collision`` meshes (:class:`models.tree.config.Mesh`) has those instead of the derived shapes, each
a ``<mesh filename scale>`` (``BODY_visual_K``, ``BODY_collision_K``) whose filename is the absolute
path, or the URL (``package://``, ``file://``) as the YAML wrote it.
"""
from __future__ import annotations

import math
from xml.sax.saxutils import quoteattr

import numpy as np

from models.chain.config import Body
from models.geometry import Box, Capsule, joint_origin, link_capsules, materials, rotation_from_z, sole_box
from models.tree.config import Frame, Mesh, Shapes, TreeDescription, TreeJoint


def rpy(R: np.ndarray) -> tuple[float, float, float]:
    """URDF roll, pitch, yaw of a rotation R = RotZ(yaw) RotY(pitch) RotX(roll)."""
    pitch = math.atan2(-R[2, 0], math.hypot(R[0, 0], R[1, 0]))
    if math.hypot(R[0, 0], R[1, 0]) > 1e-12:
        return math.atan2(R[2, 1], R[2, 2]), pitch, math.atan2(R[1, 0], R[0, 0])
    # gimbal lock (pitch = ±90°): only roll ∓ yaw is defined; take yaw = 0
    return math.atan2(-R[1, 2], R[1, 1]), pitch, 0.0


def number_list(*values: float) -> str:
    """URDF attribute text of numbers, each written to round-trip exactly."""
    return " ".join(repr(float(v)) for v in values)


def origin(T: np.ndarray) -> str:
    """The ``<origin xyz rpy>`` element of a 4x4 pose."""
    return f'<origin xyz="{number_list(*T[:3, 3])}" rpy="{number_list(*rpy(T[:3, :3]))}"/>'


def frame_link(desc: TreeDescription, frame: Frame) -> str | None:
    """The link an operational frame becomes: its name, ``NAME_frame`` when a body has that
    name, or None when the frame is its namesake body's origin (that body's link)."""
    if frame.name not in desc.bodies:
        return frame.name
    if frame.name == frame.body and np.array_equal(frame.pose, np.eye(4)):
        return None
    return frame.name + "_frame"


def _shape(kind: str, name: str, T: np.ndarray, geometry: str, material: str) -> str:
    paint = f"\n      <material name={quoteattr(material)}/>" if kind == "visual" else ""
    return (f"    <{kind} name={quoteattr(name)}>\n      {origin(T)}\n"
            f"      <geometry>{geometry}</geometry>{paint}\n    </{kind}>")


def _pose(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, p
    return T


def _pieces(shape: Capsule | Box) -> list[tuple[str, np.ndarray, str]]:
    """(name, pose, URDF geometry) of a shape: a box, or a capsule's cylinder and end spheres."""
    if isinstance(shape, Box):
        return [(shape.name, shape.pose, f'<box size="{number_list(*(2.0 * shape.half))}"/>')]
    sphere = f'<sphere radius="{number_list(shape.radius)}"/>'
    axis = shape.end - shape.start
    length = float(np.linalg.norm(axis))
    if length == 0.0:
        return [(shape.name, _pose(np.eye(3), shape.start), sphere)]
    return [(shape.name, _pose(rotation_from_z(axis), 0.5 * (shape.start + shape.end)),
             f'<cylinder radius="{number_list(shape.radius)}" length="{number_list(length)}"/>'),
            (shape.name + "_start", _pose(np.eye(3), shape.start), sphere),
            (shape.name + "_end", _pose(np.eye(3), shape.end), sphere)]


def _meshes(body: str, kind: str, meshes: tuple[Mesh, ...]) -> list[tuple[str, np.ndarray, str]]:
    """(name, pose, URDF geometry) of a body's visual or collision meshes."""
    return [(f"{body}_{kind}_{k}", np.array(m.pose),
             f"<mesh filename={quoteattr(m.filename)} scale=\"{number_list(*m.scale)}\"/>") for k, m in enumerate(meshes)]


def _link(name: str, body: Body, shapes: list[Capsule | Box], material: str, meshes: Shapes = Shapes()) -> str:
    parts = []
    if body.mass > 0.0:
        (ixx, ixy, ixz), (_, iyy, iyz), (_, _, izz) = body.inertia
        parts.append("    <inertial>\n"
                     f'      <origin xyz="{number_list(*body.com)}" rpy="0 0 0"/>\n'
                     f'      <mass value="{number_list(body.mass)}"/>\n'
                     f'      <inertia ixx="{number_list(ixx)}" ixy="{number_list(ixy)}" ixz="{number_list(ixz)}" '
                     f'iyy="{number_list(iyy)}" iyz="{number_list(iyz)}" izz="{number_list(izz)}"/>\n'
                     "    </inertial>")
    pieces = [p for shape in shapes for p in _pieces(shape)]
    for kind in ("visual", "collision"):
        own = getattr(meshes, kind)
        parts += [_shape(kind, *p, material) for p in (_meshes(name, kind, own) if own else pieces)]
    if not parts:
        return f"  <link name={quoteattr(name)}/>"
    return f"  <link name={quoteattr(name)}>\n" + "\n".join(parts) + "\n  </link>"


def _joint(t: TreeJoint) -> str:
    j = t.joint
    lo, hi = j.position_limits
    return (f"  <joint name={quoteattr(j.name)} type={quoteattr(j.type)}>\n"
            f"    <parent link={quoteattr(t.parent)}/>\n    <child link={quoteattr(t.child)}/>\n"
            f"    {origin(joint_origin(t))}\n"
            f'    <axis xyz="0 0 1"/>\n'
            f'    <limit lower="{number_list(lo)}" upper="{number_list(hi)}" velocity="{number_list(j.velocity_limit)}" '
            f'effort="{number_list(j.torque_limit)}"/>\n'
            f'    <dynamics damping="{number_list(j.viscous)}" friction="{number_list(j.coulomb)}"/>\n'
            f"    <!-- armature: {number_list(j.armature)} kg m^2 -->\n"
            f"  </joint>")


def to_urdf(desc: TreeDescription, geometry: bool = True) -> str:
    """The URDF document of ``desc`` (see the module docstring for the mapping); ``geometry``:
    with the links' visual and collision shapes and their materials."""
    out = ['<?xml version="1.0"?>',
           f"<!-- generated by bipd export urdf from {desc.source}; gravity {number_list(*desc.gravity)} m/s^2 "
           f"in the frame of {desc.base} -->",
           f"<robot name={quoteattr(desc.name)}>"]
    shapes: dict[str, list[Capsule | Box]] = {name: [] for name in desc.body_names}
    paint = materials(desc)
    if geometry:
        for shape in link_capsules(desc) + [sole_box(desc, foot) for foot in desc.feet]:
            shapes[shape.body].append(shape)
        out += [f"  <material name={quoteattr(name)}><color rgba=\"{number_list(*rgba)}\"/></material>"
                for name, rgba in dict(paint.values()).items()]
    out += [_link(name, desc.bodies[name], shapes[name], paint[name][0], desc.shapes.get(name, Shapes()) if geometry
                  else Shapes()) for name in desc.body_names]
    out += [_joint(t) for t in desc.joints]
    for f in desc.frames:
        link = frame_link(desc, f)
        if link is None:
            continue
        out.append(f"  <link name={quoteattr(link)}/>")
        out.append(f"  <joint name={quoteattr(link + '_fixed')} type=\"fixed\">\n"
                   f"    <parent link={quoteattr(f.body)}/>\n    <child link={quoteattr(link)}/>\n"
                   f"    {origin(np.array(f.pose))}\n  </joint>")
    out.append("</robot>\n")
    return "\n".join(out)
