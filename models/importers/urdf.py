"""URDF -> robot YAML (a kinematic tree), converted exactly (docs/import.md).

Each movable URDF joint becomes a tree joint whose frame has z along the joint's axis: the
link frame turned by R_a, the smallest rotation taking z onto the axis, so that
T(link) Rot(axis, q) = T(link) R_a RotZ(q) R_a^T. The joint's fixed placement in its parent
body's frame at q = 0 is then split into Khalil & Dombre's tree parameters,
RotZ(γ) TransZ(b) RotX(α) TransX(a) RotZ(θ) TransZ(d) (a Z-X-Z screw product, exact for any
placement whose z is the axis, :func:`kk_parameters`). Fixed joints merge their child link into
the parent body: its inertial is moved into the body's frame and added (Steiner), and its frame
is kept by name as an operational frame. An axis a hair off parallel to its parent's puts the
common normal kilometres away (huge b and d, or a recomposition off by more than
:data:`EXACT`): that joint keeps its placement as a fixed pose before zero parameters instead.
Inertias are re-expressed in the new frames: c' = R c + p, I' = R I R^T; so are the links' mesh
visuals and collisions (``<mesh filename scale>``: the body's ``visual`` / ``collision`` list, a
merged link's on its body, the pose T(body, link) T(link, mesh); a relative filename made absolute
against the URDF's directory, a ``package://`` or ``file://`` URL kept as written; primitive shapes,
which the YAML derives anew, are left out, and so is a mesh of another format or whose file is not
there, named in a comment at the top of the YAML). URDF has no rotor
inertia; a ``<!-- armature: J kg m^2 -->`` comment inside a ``<joint>`` (written by
:mod:`models.urdf`) is read back, and so is the export's gravity comment.
"""
from __future__ import annotations

import math
import os
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np
import yaml

from models.common.errors import ConfigError, ModelError, quote
from models.chain.model import mdh_matrix
from models.tree.config import MESH_FORMATS, tree_from_dict
from models.tree.model import rotation
from models.urdf import rpy

MOVABLE = {"revolute": "revolute", "continuous": "revolute", "prismatic": "prismatic"}
REFUSED = {"floating": "a floating joint (the tree's base is fixed; import the robot from its base link)",
           "planar": "a planar joint (not a single axis)"}
CONTINUOUS_RANGE = 1000.0
"""rad: the position range written for a continuous joint (the YAML needs finite limits)."""
PARALLEL = 1e-12
"""sin α below which a joint axis is taken as parallel to its parent's (α = 0 or π)."""
EXACT = 1e-12
"""Largest error (m, or rad on a unit length) allowed when the parameters are recomposed."""
LONG = 10.0
"""m: a common normal longer than this (axes a hair off parallel) is held by a placement instead."""
_ARMATURE = re.compile(r"^\s*armature:\s*(\S+)\s*kg m\^2\s*$")
_GRAVITY = re.compile(r"<!--(?:(?!-->).)*?\bgravity (\S+) (\S+) (\S+) m/s\^2", re.S)


class UrdfError(ModelError):
    """A URDF that cannot be imported; the message names the file and the joint or link."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class Inertial:
    """Mass, CoG and inertia about the CoG, all in a frame given by ``pose`` (4x4)."""

    mass: float
    com: np.ndarray
    inertia: np.ndarray


@dataclass(frozen=True)
class UrdfJoint:
    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray                      # 4x4, child link frame in the parent link frame at q = 0
    axis: np.ndarray                        # unit vector in the child link frame
    limits: tuple[float, float, float, float] | None    # lower, upper, velocity, effort
    damping: float
    friction: float
    armature: float
    problem: UrdfError | None = None       # why it cannot be imported (raised if it is reached)


@dataclass(frozen=True)
class UrdfMesh:
    """A link's ``<visual>`` or ``<collision>`` mesh: its file (absolute path or URL), scale and
    pose (4x4) in the link frame."""

    filename: str
    scale: tuple[float, ...]
    origin: np.ndarray


@dataclass(frozen=True)
class Urdf:
    name: str
    links: dict[str, Inertial | None]
    joints: tuple[UrdfJoint, ...]
    gravity: tuple[float, float, float]
    meshes: dict[str, dict[str, list[UrdfMesh]]] = field(default_factory=dict)   # link -> kind -> meshes
    left_out: tuple[str, ...] = ()          # the meshes the YAML cannot name, each with the reason


def _meshes(where: str, link: str, el: ET.Element, left_out: list[str]) -> dict[str, list[UrdfMesh]]:
    """The mesh visuals and collisions of a link (module docstring); a mesh of another format than
    :data:`MESH_FORMATS`, or a file that is not there, goes to ``left_out`` with the reason."""
    out: dict[str, list[UrdfMesh]] = {}
    for kind in ("visual", "collision"):
        for k, shape in enumerate(el.findall(kind)):
            mesh = shape.find("geometry/mesh")
            if mesh is None:
                continue
            what = f"link {link!r} {kind} {k}"
            name = mesh.get("filename") or ""
            if not name:
                raise UrdfError(where, f"{what}: a <mesh> without a filename")
            if "://" not in name and not os.path.isabs(name) and os.path.isfile(where):
                name = os.path.abspath(os.path.join(os.path.dirname(where), name))
            scale = _floats(where, f"{what} mesh scale", mesh.get("scale"), 3, (1.0, 1.0, 1.0))
            if not name.lower().endswith(MESH_FORMATS):
                left_out.append(f"{what}: {name} (not one of {', '.join(MESH_FORMATS)})")
                continue
            if not name.startswith("package://") and not os.path.isfile(name.removeprefix("file://")):
                left_out.append(f"{what}: {name} (no such file)")
                continue
            out.setdefault(kind, []).append(UrdfMesh(name, scale, _origin(where, what, shape.find("origin"))))
    return out


def pose(xyz, rpy_: tuple[float, float, float]) -> np.ndarray:
    """4x4 of a URDF origin: R = RotZ(yaw) RotY(pitch) RotX(roll)."""
    T = rotation(2, rpy_[2]) @ rotation(1, rpy_[1]) @ rotation(0, rpy_[0])
    T[:3, 3] = xyz
    return T


def _floats(where: str, what: str, text: str | None, size: int, default: tuple[float, ...]) -> tuple[float, ...]:
    if text is None:
        return default
    try:
        out = tuple(float(x) for x in text.split())
    except ValueError:
        out = ()
    if len(out) != size or not all(math.isfinite(x) for x in out):
        raise UrdfError(where, f"{what}: expected {size} finite numbers, got {quote(text)}")
    return out


def _origin(where: str, what: str, el: ET.Element | None) -> np.ndarray:
    if el is None:
        return np.eye(4)
    return pose(_floats(where, f"{what} origin xyz", el.get("xyz"), 3, (0.0, 0.0, 0.0)),
                _floats(where, f"{what} origin rpy", el.get("rpy"), 3, (0.0, 0.0, 0.0)))


def _attr(where: str, what: str, el: ET.Element, key: str, default: float | None = None) -> float:
    v = el.get(key)
    if v is None:
        if default is None:
            raise UrdfError(where, f"{what}: missing attribute {key!r}")
        return default
    return _floats(where, f"{what} {key}", v, 1, ())[0]


def _inertial(where: str, link: str, el: ET.Element | None) -> Inertial | None:
    if el is None:
        return None
    what = f"link {link!r} inertial"
    mass_el, inertia_el = el.find("mass"), el.find("inertia")
    if mass_el is None or inertia_el is None:
        raise UrdfError(where, f"{what}: needs <mass> and <inertia>")
    mass = _attr(where, what, mass_el, "value")
    if mass < 0.0:
        raise UrdfError(where, f"{what}: negative mass {mass}")
    ixx, ixy, ixz, iyy, iyz, izz = (_attr(where, what, inertia_el, k, 0.0 if k[1] != k[2] else None)
                                    for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
    T = _origin(where, what, el.find("origin"))
    inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    return Inertial(mass, T[:3, 3].copy(), T[:3, :3] @ inertia @ T[:3, :3].T)


def _armature(el: ET.Element) -> float:
    for c in el:
        if c.tag is ET.Comment:
            m = _ARMATURE.match(c.text or "")
            if m:
                return float(m.group(1))
    return 0.0


def _joint(where: str, el: ET.Element, links: dict) -> UrdfJoint:
    """A joint's links (a wrong one is an error at once) and the rest, whose error is kept in
    ``problem`` and raised only if the joint is imported (not below a ``cut`` joint)."""
    name = el.get("name") or ""
    what = f"joint {name!r}"
    if not name:
        raise UrdfError(where, "a <joint> without a name")
    ends = []
    for tag in ("parent", "child"):
        e = el.find(tag)
        link = e.get("link") if e is not None else None
        if not link:
            raise UrdfError(where, f"{what}: missing <{tag} link=...>")
        if link not in links:
            raise UrdfError(where, f"{what}: unknown {tag} link {link!r}")
        ends.append(link)
    try:
        return _joint_body(where, what, el, name, ends)
    except UrdfError as e:
        return UrdfJoint(name, "fixed", ends[0], ends[1], np.eye(4), np.zeros(3), None, 0.0, 0.0, 0.0, e)


def _joint_body(where: str, what: str, el: ET.Element, name: str, ends: list[str]) -> UrdfJoint:
    jtype = el.get("type", "")
    if jtype in REFUSED:
        raise UrdfError(where, f"{what} is {REFUSED[jtype]}: not imported")
    if jtype != "fixed" and jtype not in MOVABLE:
        raise UrdfError(where, f"{what}: unknown type {quote(jtype)} (revolute, continuous, prismatic, fixed)")
    if el.find("mimic") is not None and jtype != "fixed":     # a fixed joint's mimic moves nothing
        raise UrdfError(where, f"{what} mimics another joint: mimic joints (a coupling, not an independent "
                               "axis) are not imported")
    axis_el = el.find("axis")
    axis = np.array(_floats(where, f"{what} axis", axis_el.get("xyz") if axis_el is not None else None,
                            3, (1.0, 0.0, 0.0)))
    norm = float(np.linalg.norm(axis))
    if jtype != "fixed" and norm < 1e-9:
        raise UrdfError(where, f"{what}: zero axis")
    limits = None
    lim = el.find("limit")
    if jtype in MOVABLE:
        if lim is None and jtype != "continuous":
            raise UrdfError(where, f"{what}: a {jtype} joint needs <limit>")
        vel = _attr(where, what + " limit", lim, "velocity", 0.0) if lim is not None else 0.0
        eff = _attr(where, what + " limit", lim, "effort", 0.0) if lim is not None else 0.0
        if vel <= 0.0 or eff <= 0.0:
            raise UrdfError(where, f"{what}: needs a positive velocity and effort limit (got velocity {vel}, "
                                   f"effort {eff})")
        if jtype == "continuous":
            lo, hi = -CONTINUOUS_RANGE, CONTINUOUS_RANGE
        else:
            lo, hi = _attr(where, what + " limit", lim, "lower", 0.0), _attr(where, what + " limit", lim, "upper", 0.0)
            if lo >= hi:
                raise UrdfError(where, f"{what}: limit lower {lo} must be < upper {hi}")
        limits = (lo, hi, vel, eff)
    dyn = el.find("dynamics")
    damping = _attr(where, what + " dynamics", dyn, "damping", 0.0) if dyn is not None else 0.0
    friction = _attr(where, what + " dynamics", dyn, "friction", 0.0) if dyn is not None else 0.0
    if damping < 0.0 or friction < 0.0:
        raise UrdfError(where, f"{what}: negative damping or friction")
    return UrdfJoint(name, jtype, ends[0], ends[1], _origin(where, what, el.find("origin")),
                     axis / max(norm, 1e-300), limits, damping, friction, _armature(el))


def parse_urdf(text: str, where: str) -> Urdf:
    """The links' inertials and the joints of a URDF document (its comments kept for the armature)."""
    try:
        root = ET.fromstring(text, parser=ET.XMLParser(target=ET.TreeBuilder(insert_comments=True)))
    except ET.ParseError as e:
        raise UrdfError(where, f"not XML: {e}") from None
    if root.tag != "robot":
        raise UrdfError(where, f"the root element is <{root.tag}>, not <robot>")
    links: dict[str, Inertial | None] = {}
    meshes: dict[str, dict[str, list[UrdfMesh]]] = {}
    left_out: list[str] = []
    for el in root.findall("link"):
        name = el.get("name") or ""
        if not name or name in links:
            raise UrdfError(where, f"link {name!r} is unnamed or named twice")
        links[name] = _inertial(where, name, el.find("inertial"))
        meshes[name] = _meshes(where, name, el, left_out)
    joints = tuple(_joint(where, el, links) for el in root.findall("joint"))
    m = _GRAVITY.search(text)                         # a comment, before <robot> as the export writes it
    gravity = tuple(float(x) for x in m.groups()) if m else (0.0, 0.0, -9.81)
    return Urdf(root.get("name") or "robot", links, joints, gravity, meshes, tuple(left_out))


def axis_frame(axis: np.ndarray) -> np.ndarray:
    """R_a (3x3): the smallest rotation taking z onto the unit ``axis`` (Rodrigues)."""
    z = np.array([0.0, 0.0, 1.0])
    c = float(axis @ z)
    k = np.cross(z, axis)
    s = float(np.linalg.norm(k))
    if s < PARALLEL:
        return np.eye(3) if c > 0 else rotation(0, math.pi)[:3, :3]
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]]) / s
    return np.eye(3) + s * K + (1.0 - c) * (K @ K)


def kk_matrix(gamma: float, b: float, alpha: float, a: float, theta: float, d: float) -> np.ndarray:
    """RotZ(γ) TransZ(b) RotX(α) TransX(a) RotZ(θ) TransZ(d) (Khalil & Dombre, tree structures)."""
    return mdh_matrix(0.0, 0.0, gamma, b) @ mdh_matrix(alpha, a, theta, d)


def kk_parameters(T: np.ndarray) -> tuple[float, float, float, float, float, float]:
    """(γ, b, α, a, θ, d) with :func:`kk_matrix` = T, for a placement T whose z is the joint axis.

    x1, the common normal of the parent's z and the axis z', sets γ; α turns z onto z' about x1;
    p = b z + a x1 + d z' splits the origin along the three (z ⊥ x1 ⊥ z'); θ turns x1 onto x'.
    Parallel axes (sin α = 0) leave the normal free: it is taken through the origin's offset, d = 0.
    Of the normal's two senses (γ, α, a, θ) and (γ + π, −α, −a, θ + π) the one with |γ| <= 90° is kept."""
    R, p = T[:3, :3], T[:3, 3]
    z = R[:, 2]
    s, c = math.hypot(z[0], z[1]), float(z[2])
    if s >= PARALLEL:
        alpha = math.atan2(s, c)
        x1 = np.array([-z[1], z[0], 0.0]) / s
        a = float(p @ x1)
        r = p - a * x1
        pz, pn = float(r[2]), float(r @ z)
        b, d = (pz - c * pn) / (s * s), (pn - c * pz) / (s * s)
        zz = z
    else:
        alpha = 0.0 if c > 0 else math.pi
        h = math.hypot(p[0], p[1])
        x1 = p * [1.0, 1.0, 0.0] / h if h > 0.0 else np.array([1.0, 0.0, 0.0])
        a, b, d = h, float(p[2]), 0.0
        zz = np.array([0.0, 0.0, 1.0 if c > 0 else -1.0])
    if abs(math.atan2(x1[1], x1[0])) > math.pi / 2 + PARALLEL:   # the normal's other sense: |γ| <= 90°
        x1, alpha, a = -x1, -alpha, -a
    gamma = math.atan2(x1[1], x1[0])
    xr = R[:, 0]
    theta = math.atan2(float(np.cross(x1, xr) @ zz), float(x1 @ xr))
    return tuple(v + 0.0 for v in (gamma, b, alpha, a, theta, d))      # + 0.0: no -0.0 in the file


@dataclass
class _Body:
    name: str
    parts: list[tuple[np.ndarray, Inertial]]        # (pose in the body frame, inertial in that pose)
    meshes: dict[str, list[dict]] = field(default_factory=dict)   # kind -> the YAML's mesh entries


def _mesh_entry(T: np.ndarray, m: UrdfMesh) -> dict:
    """The robot YAML's entry of a mesh placed at T (its pose in the body frame)."""
    origin = _frame("", T)
    del origin["body"]
    return {"mesh": m.filename, "scale": [float(x) for x in m.scale], "origin": origin}


def _merge(where: str, body: _Body, need_mass: str | None) -> dict:
    """Mass, CoG and inertia about the CoG of a body's parts, in the body frame (Steiner, about the
    common CoG: a single part keeps its numbers as they are when its frame is the body's)."""
    parts = [(p.mass, T[:3, :3] @ p.com + T[:3, 3], T[:3, :3] @ p.inertia @ T[:3, :3].T) for T, p in body.parts]
    m = sum(mass for mass, _, _ in parts)
    if m <= 0.0:
        if need_mass:
            raise UrdfError(where, f"link {body.name!r} (carried by {need_mass}) has no inertial or zero mass, "
                                   "with every link fixed to it")
        return {"name": body.name, "mass": 0.0, "com": [0.0, 0.0, 0.0], "inertia": [[0.0] * 3] * 3} | body.meshes
    com = parts[0][1] if len(parts) == 1 else sum(mass * c for mass, c, _ in parts) / m
    Ic = sum(I + mass * (((c - com) @ (c - com)) * np.eye(3) - np.outer(c - com, c - com)) for mass, c, I in parts)
    Ic = 0.5 * (Ic + Ic.T)
    return {"name": body.name, "mass": float(m), "com": [float(x) for x in com],
            "inertia": [[float(x) for x in row] for row in Ic]} | body.meshes


def _frame(body: str, T: np.ndarray) -> dict:
    return {"body": body, "xyz": [float(x) + 0.0 for x in T[:3, 3]], "rpy": [x + 0.0 for x in rpy(T[:3, :3])]}


def _tree(where: str, urdf: Urdf, root: str | None, cut: tuple[str, ...]) -> tuple[str, dict[str, list[UrdfJoint]]]:
    """The root link (given or the one without a parent) and each link's child joints, without the
    ``cut`` joints."""
    unknown = sorted(set(cut) - {j.name for j in urdf.joints})
    if unknown:
        raise UrdfError(where, f"unknown joint {unknown[0]!r} to cut")
    parent_of: dict[str, UrdfJoint] = {}
    children: dict[str, list[UrdfJoint]] = {name: [] for name in urdf.links}
    for j in urdf.joints:
        if j.child in parent_of:
            raise UrdfError(where, f"link {j.child!r} has two parents (joints {parent_of[j.child].name!r} and "
                                   f"{j.name!r}): a loop, which a tree cannot hold")
        parent_of[j.child] = j
        if j.name not in cut:
            children[j.parent].append(j)
    tops = [name for name in urdf.links if name not in parent_of]
    if not urdf.links:
        raise UrdfError(where, "no <link>: not a robot (a xacro file must be expanded first)")
    if not tops:
        raise UrdfError(where, "every link has a parent: the joints close a loop")
    if root is None:
        if len(tops) > 1:
            raise UrdfError(where, f"links {tops[:4]} have no parent: give the base with --root")
        root = tops[0]
    elif root not in urdf.links:
        raise UrdfError(where, f"unknown link {root!r} for the root")
    seen, todo = {root}, [root]
    while todo:
        for j in children[todo.pop()]:
            if j.child in seen:
                raise UrdfError(where, f"joint {j.name!r} closes a loop at link {j.child!r}")
            seen.add(j.child)
            todo.append(j.child)
    return root, children


def convert(urdf: Urdf, where: str, root: str | None = None, feet: tuple[str, ...] = (),
            cut: tuple[str, ...] = ()) -> dict:
    """The robot YAML document (a tree) of ``urdf`` from link ``root`` down, without the ``cut`` joints
    and what hangs from them (see the module docstring)."""
    root, children = _tree(where, urdf, root, cut)
    for f in feet:
        if f not in urdf.links:
            raise UrdfError(where, f"unknown link {f!r} for a foot")
    bodies = {root: _Body(root, [])}
    owner = {root: root}                             # link -> the body it is part of
    in_body = {root: np.eye(4)}                      # link frame in its body's frame
    carried_by = {root: None}
    joints, frames = [], {}                          # (position in the URDF, ...): the URDF's order is kept
    pos = {j.name: k for k, j in enumerate(urdf.joints)}
    order = [root]
    for link in order:                               # breadth-first, the URDF's joint order per link
        inertial = urdf.links[link]
        if inertial is not None:
            bodies[owner[link]].parts.append((in_body[link], inertial))
        for kind, meshes in urdf.meshes.get(link, {}).items():
            bodies[owner[link]].meshes.setdefault(kind, []).extend(
                _mesh_entry(in_body[link] @ m.origin, m) for m in meshes)
        for j in children[link]:
            if j.problem is not None:
                raise j.problem
            order.append(j.child)
            placement = in_body[link] @ j.origin     # child link frame in the parent body's frame
            if j.type == "fixed":
                owner[j.child], in_body[j.child] = owner[link], placement
                name = j.child                       # models.urdf names a frame NAME_frame when body
                stem = name[:-len("_frame")]         # NAME holds it off its origin: the name comes back
                if name.endswith("_frame") and j.name == name + "_fixed" and stem == owner[link] not in frames:
                    name = stem
                frames[name] = (pos[j.name], _frame(owner[link], placement))
                continue
            Ra = np.eye(4)
            Ra[:3, :3] = axis_frame(j.axis)
            K = placement @ Ra
            mdh = dict(zip(("gamma", "b", "alpha", "a", "theta", "d"), kk_parameters(K)))
            exact = float(np.abs(kk_matrix(**mdh) - K).max()) <= EXACT
            owner[j.child], in_body[j.child], carried_by[j.child] = j.child, Ra.T, j.name
            bodies[j.child] = _Body(j.child, [])
            lo, hi, vel, eff = j.limits
            entry = {"name": j.name, "type": MOVABLE[j.type], "parent": owner[link],
                     "mdh": mdh, "limits": {"position": [lo, hi], "velocity": vel, "torque": eff},
                     "friction": {"viscous": j.damping, "coulomb": j.friction}}
            if not exact or max(abs(mdh["b"]), abs(mdh["d"])) > LONG:
                entry["mdh"] = dict.fromkeys(mdh, 0.0)
                entry["placement"] = _frame(owner[link], K)
                del entry["placement"]["body"]
            if j.armature:
                entry["armature"] = j.armature
            joints.append((pos[j.name], entry, j.child))
            if not np.array_equal(Ra, np.eye(4)) or j.child in feet:
                frames[j.child] = (pos[j.name], _frame(j.child, Ra.T))
    if not joints:
        raise UrdfError(where, f"no revolute, continuous or prismatic joint below link {root!r}")
    joints.sort(key=lambda x: x[0])
    for _, entry, child in joints:
        entry["body"] = _merge(where, bodies[child], f"joint {entry['name']!r}")
    for f in feet:
        if f not in frames and f in bodies:
            frames[f] = (-1, _frame(f, np.eye(4)))
    base = _merge(where, bodies[root], None)
    doc = {"name": urdf.name, "gravity": list(urdf.gravity), "base": base, "joints": [e for _, e, _ in joints]}
    if frames:
        doc["frames"] = {name: f for name, (_, f) in sorted(frames.items(), key=lambda x: x[1][0])}
    if feet:
        doc["roots"] = [root, *feet]
    return doc


def to_yaml(doc: dict, source: str, left_out: tuple[str, ...] = ()) -> str:
    """The robot YAML text of a converted document (floats written to round-trip exactly), with a
    comment line per mesh ``left_out``."""
    head = (f"# imported by bipd import urdf from {os.path.basename(source)}: Khalil-Kleinfinger tree parameters, each joint's\n"
            "# frame z along its axis; bodies are the URDF links with their fixed children merged in.\n")
    head += "".join(f"# mesh left out: {why}\n" for why in left_out)
    return head + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=110)


def _checked(doc: dict, where: str) -> None:
    """The document passes the robot YAML's own checks (a physical inertia, ...), or the error
    names the URDF link and joint (the URDF's numbers, not the conversion's, when it fails)."""
    try:
        tree_from_dict(doc, where)
    except ConfigError as e:
        problem = str(e)[len(f"{e.where}: {e.key}: "):]
        m = re.match(r"joints\[(\d+)\]\.body\.(\w+)", e.key)
        if m:
            j = doc["joints"][int(m.group(1))]
            raise UrdfError(where, f"link {j['body']['name']!r} (on joint {j['name']!r}), with the links fixed "
                                   f"to it: {m.group(2)}: {problem}") from None
        if e.key.startswith("base."):
            raise UrdfError(where, f"link {doc['base']['name']!r} (the base), with the links fixed to it: "
                                   f"{e.key[5:]}: {problem}") from None
        raise UrdfError(where, f"{e.key}: {problem}") from None


def import_urdf(text: str, where: str, root: str | None = None, feet: tuple[str, ...] = (),
                cut: tuple[str, ...] = ()) -> str:
    """The robot YAML of a URDF document (``where`` names it in errors)."""
    urdf = parse_urdf(text, where)
    doc = convert(urdf, where, root, feet, cut)
    _checked(doc, where)
    return to_yaml(doc, where, urdf.left_out)
