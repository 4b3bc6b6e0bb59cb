"""Kinematic-tree descriptions: YAML -> validated, typed tree (no numerics here).

A tree file is a chain file (:mod:`models.chain.config`) grown by a few keys:

- ``base: {name, mass, com, inertia}``: the body frame 0 is fixed to (the root of
  the description). Its presence makes the file a tree, and then every joint
  names its ``parent`` body; a file without ``base`` is a serial chain (no
  ``parent`` key = the previous joint's body) with a massless base.
- per joint, ``parent`` (a body name), ``body.name`` (default: the joint's name)
  and the Khalil-Kleinfinger tree parameters ``mdh.gamma`` and ``mdh.b``:
  T(a(j), j) = RotZ(gamma) TransZ(b) RotX(alpha) TransX(a) RotZ(theta + q) TransZ(d)
  (Khalil & Dombre, tree structures; both 0 on a chain).
- per joint, optionally ``placement: {xyz, rpy | rpy_deg}``: a fixed pose P put before
  those parameters, T(a(j), j) = P RotZ(gamma) ... TransZ(d), for a placement they would
  hold only with huge b and d (an axis a hair off parallel to its parent's, as imported
  URDFs have: docs/import.md).
- ``frames: {name: {body, xyz, rpy | rpy_deg}}``: operational frames fixed to a
  body, R = RotZ(yaw) RotY(pitch) RotX(roll). A chain's ``tool`` becomes the
  frame ``tool`` on its last body.
- ``roots: [name, ...]``: where the model may be rooted, each a body or a frame
  (default: the base).
- ``subtrees: {name: joint}``: the bodies a joint carries, away from the base.
- ``feet: {name: {frame, outline: [[x, y], ...], sensors: [frame, ...]}}``: the
  sole polygon and the force-sensor frames, in the sole frame's (x, y) plane.
- per body (``base`` or a joint's ``body``), optionally ``visual`` and ``collision``: a mesh or a
  list of them, each ``{mesh: PATH, scale: [sx, sy, sz], origin: {xyz, rpy | rpy_deg}}`` (the
  mesh's frame in the body's; a negative scale mirrors). PATH is relative to the YAML file (or absolute, or a
  ``file://`` URL: the file must exist), or a ``package://`` URL, kept as written for ROS tools
  (:func:`mesh_file` resolves it through ``ROS_PACKAGE_PATH``); formats :data:`MESH_FORMATS`.
  A body without them is drawn and collides as its derived capsules (:mod:`models.geometry`).

Every error names the file and the key, in one sentence.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from models.chain.config import Body, Joint, _inertia, _joint, description_from_dict
from models.common.errors import ConfigError
from models.chain.model import mdh_matrix
from models.transmission import Transmission, parse_blocks
from models.common.validation import Section, read_yaml, vector


@dataclass(frozen=True)
class TreeJoint:
    """A joint of the tree: the chain joint (MDH alpha, a, theta, d, limits,
    friction, armature, carried body) plus its parent body, gamma, b and the optional
    fixed placement P before them (4x4 row-major tuples, None for the identity)."""

    joint: Joint
    parent: str
    child: str
    gamma: float
    b: float
    placement: tuple[tuple[float, ...], ...] | None = None


@dataclass(frozen=True)
class Frame:
    """An operational frame: a fixed 4x4 pose (row-major tuples) in a body's frame."""

    name: str
    body: str
    pose: tuple[tuple[float, ...], ...]


@dataclass(frozen=True)
class Foot:
    name: str
    frame: str
    outline: tuple[tuple[float, float], ...]
    sensors: tuple[str, ...]


IDENTITY = tuple(tuple(float(r == c) for c in range(4)) for r in range(4))
MESH_FORMATS = (".stl", ".obj", ".dae")
"""Mesh files a body may name (MuJoCo loads the first two; URDF viewers all three)."""


@dataclass(frozen=True)
class Mesh:
    """A mesh drawn or collided with a body: ``filename`` an absolute path or a URL (a YAML's
    relative path resolved against its directory), ``scale`` per axis, ``pose`` (4x4 row-major)
    of the mesh's frame in the body's frame."""

    filename: str
    scale: tuple[float, float, float]
    pose: tuple[tuple[float, ...], ...]


@dataclass(frozen=True)
class Shapes:
    """A body's meshes, ``visual`` and ``collision`` (empty: the derived capsules)."""

    visual: tuple[Mesh, ...] = ()
    collision: tuple[Mesh, ...] = ()


@dataclass(frozen=True)
class TreeDescription:
    name: str
    source: str
    gravity: tuple[float, float, float]
    base: str
    bodies: dict[str, Body]
    joints: tuple[TreeJoint, ...]
    frames: tuple[Frame, ...]
    roots: tuple[str, ...]
    subtrees: dict[str, tuple[str, ...]]
    feet: tuple[Foot, ...]
    transmission: Transmission | None = field(default=None, compare=False)   # motor i drives joint i
    shapes: dict[str, Shapes] = field(default_factory=dict)   # body -> its meshes (bodies with some)

    @property
    def n(self) -> int:
        return len(self.joints)

    @property
    def body_names(self) -> tuple[str, ...]:
        """Body 0 is the base, body j + 1 the body joint j carries."""
        return (self.base,) + tuple(j.child for j in self.joints)


def _name(where: str, key: str, v: Any) -> str:
    if not isinstance(v, str) or not v:
        raise ConfigError(where, key, f"expected a non-empty name, got {v!r}")
    return v


def _body(s: Section) -> Body:
    return Body(mass=s.number("mass", nonnegative=True), com=s.vector("com", 3),
                inertia=_inertia(s.where, s.path("inertia"), s.raw("inertia")))


def mesh_file(mesh: Mesh) -> Path:
    """The file of a mesh: its path, a ``file://`` URL's, or a ``package://PKG/REST`` URL's found in
    a directory of ``ROS_PACKAGE_PATH`` (DIR/PKG/REST, or DIR/REST when DIR is named PKG)."""
    name = mesh.filename
    if name.startswith("file://"):
        return Path(name[len("file://"):])
    if not name.startswith("package://"):
        return Path(name)
    pkg, _, rest = name[len("package://"):].partition("/")
    for d in filter(None, os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep)):
        for cand in (Path(d) / pkg / rest, Path(d) / rest if Path(d).name == pkg else None):
            if cand is not None and cand.is_file():
                return cand
    raise ConfigError(name, "ROS_PACKAGE_PATH", f"package {pkg!r} holding {rest!r} is in no directory of it "
                                                "(set ROS_PACKAGE_PATH to the directories that hold the package)")


def _mesh(where: str, ms: Section) -> Mesh:
    """One ``{mesh, scale, origin}`` entry (module docstring)."""
    name = ms.raw("mesh")
    if not isinstance(name, str) or not name:
        raise ConfigError(where, ms.path("mesh"), f"expected a mesh file name, got {name!r}")
    if not name.lower().endswith(MESH_FORMATS):
        raise ConfigError(where, ms.path("mesh"), f"{name!r} is not one of {', '.join(MESH_FORMATS)}")
    if "://" not in name:
        name = str((Path(where).parent / name).resolve())
    pose = IDENTITY
    if ms.has("origin"):
        origin = ms.sub("origin")
        pose = _rpy_pose(origin)
        origin.done()
    mesh = Mesh(name, ms.vector("scale", 3, (1.0, 1.0, 1.0)), pose)
    if 0.0 in mesh.scale:
        raise ConfigError(where, ms.path("scale"), f"a scale factor is zero, got {list(mesh.scale)}")
    if not name.startswith("package://") and not mesh_file(mesh).is_file():
        raise ConfigError(where, ms.path("mesh"), f"mesh file {str(mesh_file(mesh))!r} does not exist")
    ms.done()
    return mesh


def _meshes(where: str, s: Section, key: str, body: str) -> tuple[Mesh, ...]:
    """A body's ``visual`` or ``collision`` meshes (module docstring); each error names the body."""
    raw = s.raw(key, None)
    if raw is None:
        return ()
    items = raw if isinstance(raw, list) else [raw]
    out = []
    for k, item in enumerate(items):
        key_k = s.path(key) + (f"[{k}]" if isinstance(raw, list) else "")
        try:
            out.append(_mesh(where, Section(where, key_k, item)))
        except ConfigError as e:
            problem = str(e)[len(f"{e.where}: {e.key}: "):]
            raise ConfigError(where, e.key, f"body {body!r}: {problem}") from None
    return tuple(out)


def _shapes(where: str, s: Section, body: str) -> Shapes | None:
    """A body's :class:`Shapes`, or None without ``visual`` or ``collision`` keys."""
    shapes = Shapes(_meshes(where, s, "visual", body), _meshes(where, s, "collision", body))
    return shapes if shapes.visual or shapes.collision else None


def _tree_joint(where: str, i: int, v: Any, tree: bool, previous: str) -> tuple[TreeJoint, Shapes | None]:
    """Split the tree keys (and the body's meshes) off a joint and validate the rest as a chain joint."""
    key = f"joints[{i}]"
    if not isinstance(v, dict):
        raise ConfigError(where, key, f"expected a mapping, got {type(v).__name__}")
    v = dict(v)
    if "parent" in v:
        if not tree:
            raise ConfigError(where, f"{key}.parent", "a chain has no parent keys: add a 'base' body to make it a tree")
        if v["parent"] is None:
            raise ConfigError(where, f"{key}.parent",
                              "no parent body: a tree has one root, the base; name the body this joint hangs from")
        parent = _name(where, f"{key}.parent", v.pop("parent"))
    elif tree:
        raise ConfigError(where, f"{key}.parent", "missing required key (a tree names each joint's parent body)")
    else:
        parent = previous
    gamma = b = 0.0
    if isinstance(v.get("mdh"), dict):
        mdh = dict(v["mdh"])
        sec = Section(where, f"{key}.mdh", mdh)
        gamma, b = sec.angle("gamma", 0.0), sec.number("b", 0.0)
        for k in ("gamma", "gamma_deg", "b"):
            mdh.pop(k, None)
        v["mdh"] = mdh
    placement = None
    if "placement" in v:
        if not tree:
            raise ConfigError(where, f"{key}.placement", "a chain has no placements: add a 'base' body to make it a tree")
        sec = Section(where, f"{key}.placement", v.pop("placement"))
        placement = _rpy_pose(sec)
        sec.done()
    child, shapes = None, None
    if isinstance(v.get("body"), dict):
        v["body"] = dict(v["body"])
        if "name" in v["body"]:
            child = _name(where, f"{key}.body.name", v["body"].pop("name"))
        meshes = {k: v["body"].pop(k) for k in ("visual", "collision") if k in v["body"]}
        if meshes:
            shapes = _shapes(where, Section(where, f"{key}.body", meshes), child or str(v.get("name")))
    joint = _joint(where, i, v)
    return TreeJoint(joint, parent, child or joint.name, gamma, b, placement), shapes


def _rpy_pose(s: Section) -> tuple[tuple[float, ...], ...]:
    xyz = s.vector("xyz", 3, (0.0, 0.0, 0.0))
    if s.has("rpy") and s.has("rpy_deg"):
        raise ConfigError(s.where, s.path("rpy"), "give either rpy or rpy_deg, not both")
    if s.has("rpy_deg"):
        r, p, y = (math.radians(a) for a in s.vector("rpy_deg", 3))
    else:
        r, p, y = s.vector("rpy", 3, (0.0, 0.0, 0.0))
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    R = ((cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr),
         (sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr),
         (-sp, cp * sr, cp * cr))
    return tuple(R[k] + (xyz[k],) for k in range(3)) + ((0.0, 0.0, 0.0, 1.0),)


def _check_tree(where: str, base: str, joints: tuple[TreeJoint, ...]) -> None:
    """Each body named once, each parent a body, no cycle (so every body hangs
    from the base)."""
    owner: dict[str, str] = {base: "base.name"}
    for i, j in enumerate(joints):
        if j.child in owner:
            raise ConfigError(where, f"joints[{i}].body.name", f"body {j.child!r} is already named by {owner[j.child]}")
        owner[j.child] = f"joints[{i}]"
    parent_of = {j.child: (i, j.parent) for i, j in enumerate(joints)}
    for i, j in enumerate(joints):
        if j.parent not in owner:
            raise ConfigError(where, f"joints[{i}].parent", f"unknown body {j.parent!r} (bodies: {sorted(owner)})")
    for i, j in enumerate(joints):
        seen, body = {j.child}, j.parent
        while body != base:
            if body in seen:
                raise ConfigError(where, f"joints[{i}].parent",
                                  f"cycle: body {j.child!r} hangs (through {sorted(seen)}) from itself")
            seen.add(body)
            body = parent_of[body][1]


def _frames(where: str, top: Section, bodies: dict[str, Body]) -> tuple[Frame, ...]:
    if not top.has("frames"):
        return ()
    fs = top.sub("frames")
    out = []
    for name in fs.value:
        s = fs.sub(name)
        _name(where, s.key, name)
        body = _name(where, s.path("body"), s.raw("body"))
        if body not in bodies:
            raise ConfigError(where, s.path("body"), f"unknown body {body!r}")
        if name in bodies and name != body:
            raise ConfigError(where, s.key, f"{name!r} names another body")
        out.append(Frame(name, body, _rpy_pose(s)))
        s.done()
    fs.done()
    return tuple(out)


def _feet(where: str, top: Section, frames: dict[str, Frame]) -> tuple[Foot, ...]:
    if not top.has("feet"):
        return ()
    fs = top.sub("feet")
    out = []
    for name in fs.value:
        s = fs.sub(name)
        frame = _name(where, s.path("frame"), s.raw("frame"))
        if frame not in frames:
            raise ConfigError(where, s.path("frame"), f"unknown frame {frame!r}")
        raw = s.raw("outline")
        if not isinstance(raw, list) or len(raw) < 3:
            raise ConfigError(where, s.path("outline"), "expected a polygon of at least 3 [x, y] points")
        outline = tuple(vector(where, f"{s.path('outline')}[{k}]", p, 2) for k, p in enumerate(raw))
        area = 0.5 * sum(x0 * y1 - x1 * y0 for (x0, y0), (x1, y1) in zip(outline, outline[1:] + outline[:1]))
        if area <= 0.0:
            raise ConfigError(where, s.path("outline"),
                              "the sole polygon must be counter-clockwise with a positive area")
        sensors = s.raw("sensors")
        if not isinstance(sensors, list) or not sensors:
            raise ConfigError(where, s.path("sensors"), "expected a list of sensor frame names")
        for k, f in enumerate(sensors):
            key = f"{s.path('sensors')}[{k}]"
            if _name(where, key, f) not in frames or frames[f].body != frames[frame].body:
                raise ConfigError(where, key, f"{f!r} is not a frame on the foot's body {frames[frame].body!r}")
        out.append(Foot(name, frame, outline, tuple(sensors)))
        s.done()
    fs.done()
    return tuple(out)


def tree_from_dict(data: Any, where: str = "<dict>") -> TreeDescription:
    """Validate a parsed robot YAML (chain or tree) and build a :class:`TreeDescription`."""
    top = Section(where, "", data)
    name = _name(where, "name", top.raw("name"))
    gravity = top.vector("gravity", 3)
    tree = top.has("base")
    if tree:
        bs = top.sub("base")
        base = _name(where, bs.path("name"), bs.raw("name"))
        base_body = _body(bs)
        shapes = {base: _shapes(where, bs, base)}
        bs.done()
    else:
        base, base_body, shapes = "base", Body(0.0, (0.0, 0.0, 0.0), ((0.0,) * 3,) * 3), {}
    raw = top.raw("joints")
    if not isinstance(raw, list) or not raw:
        raise ConfigError(where, "joints", "expected a non-empty list of joints")
    joints: list[TreeJoint] = []
    for i, v in enumerate(raw):
        joint, body_shapes = _tree_joint(where, i, v, tree, joints[-1].child if joints else base)
        joints.append(joint)
        shapes[joint.child] = body_shapes
    names = [j.joint.name for j in joints]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(where, "joints", f"duplicate joint names {dup}")
    _check_tree(where, base, tuple(joints))
    bodies = {base: base_body}
    bodies.update((j.child, j.joint.body) for j in joints)
    frames = _frames(where, top, bodies)
    by_frame = {f.name: f for f in frames}
    roots = tuple(top.raw("roots", [base]))
    if not roots:
        raise ConfigError(where, "roots", "expected a non-empty list of bodies or frames")
    for k, r in enumerate(roots):
        if _name(where, f"roots[{k}]", r) not in bodies and r not in by_frame:
            raise ConfigError(where, f"roots[{k}]", f"{r!r} is neither a body nor a frame")
    subtrees = {}
    if top.has("subtrees"):
        st = top.sub("subtrees")
        for sname in st.value:
            jname = _name(where, st.path(sname), st.raw(sname))
            if jname not in names:
                raise ConfigError(where, st.path(sname), f"unknown joint {jname!r}")
            subtrees[sname] = _carried(joints, names.index(jname))
        st.done()
    feet = _feet(where, top, by_frame)
    transmission = None
    if tree and top.has("transmission"):
        lo = [j.joint.position_limits[0] for j in joints]
        hi = [j.joint.position_limits[1] for j in joints]
        transmission = parse_blocks(top.raw("transmission"), where, tuple(names), lo, hi)
    if not tree:   # a chain: validated as such, its tool becomes the frame 'tool'
        chain = description_from_dict(data, where)
        transmission = chain.transmission
        for k in ("tool", "foot", "transmission"):
            top.raw(k, None)
        t = chain.tool
        pose = tuple(tuple(float(x) for x in row) for row in mdh_matrix(t.alpha, t.a, t.theta, t.d))
        frames += (Frame("tool", joints[-1].child, pose),)
    top.done()
    return TreeDescription(name, where, gravity, base, bodies, tuple(joints), frames, roots, subtrees, feet,
                           transmission, {body: s for body, s in shapes.items() if s is not None})


def _carried(joints: list[TreeJoint], j: int) -> tuple[str, ...]:
    """Bodies joint j carries, away from the base: its body and all below it."""
    out = [joints[j].child]
    for body in out:
        out.extend(t.child for t in joints if t.parent == body)
    return tuple(out)


def is_tree(doc: Any) -> bool:
    """A robot YAML document describing a kinematic tree (it names its ``base`` body)."""
    return isinstance(doc, dict) and "base" in doc


def load_tree(path: str | Path) -> TreeDescription:
    """Read and validate a robot YAML file as a kinematic tree."""
    return tree_from_dict(read_yaml(path), str(Path(path)))
