"""The 3-D scene of a record, as Foxglove messages: shared by the live view and the cycle log.

:class:`Scene` places the base in the world at the record's tilt (world (M, x_g up) -> ``base``
(R0 at the ankle): T_M->O0 of thesis eq. 46-47, robots with a ``foot`` section) and builds
``foxglove.SceneUpdate`` entities: the leg as a line through the frame origins of the forward
geometric model (thesis eq. 1-6, frames 0..n and the tool) and the CoG as a sphere, in ``base``;
with a foot, the support polygon (eq. 50-51) as a line loop in ``world``, red once a CoG margin
(eq. 70-71) is negative, and the stabilizer's field force as an arrow at the CoG
(``FORCE_SCALE`` m per N). :class:`TreeScene` does the same for a kinematic tree placed in the
world by the pelvis estimate, with the soles' support polygon and load arrows. Messages are
JSON-ready dicts; times are ``{sec, nsec}`` of a stamp in ns.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from controller.daemon.telemetry import RecordLayout
from models.chain.kinematics import forward_kinematics
from models.chain.robot import Robot
from models.tree import dynamics as td
from models.tree.model import TreeData
from models.common.support import DOUBLE, LEFT, RIGHT, SOLES
from models.polygon import hull
from models.tree.floating import rotation_xyz
from models.tree.robot import TreeRobot
from models.tilt import rotation_world_foot
from stabilizer.ground import base_to_world, foot_origin
from stabilizer.support_polygon import project_outline, rectangle_outline

FORCE_SCALE = 0.01            # m of arrow per N of field force
SOLE_FORCE_SCALE = 0.0005     # m of arrow per N of a sole's load (BIP 2000's 1030 N: 0.5 m)
BASE, WORLD = "base", "world"

_NUMBER = {"type": "number"}
_VEC3 = {"type": "object", "properties": {k: _NUMBER for k in "xyz"}, "description": "m"}
_QUAT = {"type": "object", "properties": {k: _NUMBER for k in "xyzw"}, "description": "unit quaternion"}
_COLOR = {"type": "object", "properties": {k: _NUMBER for k in "rgba"}}
_TIME = {"type": "object", "properties": {"sec": {"type": "integer"}, "nsec": {"type": "integer"}},
         "description": "Unix epoch time (s, ns)"}
_ITEMS = {"type": "array", "items": {"type": "object"}, "description": "lengths in m"}
# the subset of Foxglove's schemas (github.com/foxglove/foxglove-sdk, schemas/jsonschema) sent here
SCENE_UPDATE = {"title": "foxglove.SceneUpdate", "type": "object", "properties": {
    "deletions": _ITEMS, "entities": {"type": "array", "items": {"type": "object", "properties": {
        "timestamp": _TIME, "frame_id": {"type": "string"}, "id": {"type": "string"},
        "frame_locked": {"type": "boolean"}, "lines": _ITEMS, "spheres": _ITEMS, "arrows": _ITEMS}}}}}
FRAME_TRANSFORMS = {"title": "foxglove.FrameTransforms", "type": "object", "properties": {
    "transforms": {"type": "array", "items": {"type": "object", "properties": {
        "timestamp": _TIME, "parent_frame_id": {"type": "string"}, "child_frame_id": {"type": "string"},
        "translation": _VEC3, "rotation": _QUAT}}}}}
LINE_STRIP, LINE_LOOP, LINE_LIST = 0, 1, 2  # foxglove.LinePrimitive type
LEG_COLOR = {"r": 0.2, "g": 0.5, "b": 0.9, "a": 1.0}
COG_COLOR = {"r": 1.0, "g": 0.6, "b": 0.0, "a": 1.0}
INSIDE_COLOR = {"r": 0.1, "g": 0.8, "b": 0.2, "a": 1.0}
OUTSIDE_COLOR = {"r": 0.9, "g": 0.1, "b": 0.1, "a": 1.0}
FORCE_COLOR = {"r": 0.8, "g": 0.1, "b": 0.8, "a": 1.0}
IDENTITY = {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0}
ORIGIN = {"position": {"x": 0.0, "y": 0.0, "z": 0.0}, "orientation": IDENTITY}


def vec(p: np.ndarray) -> dict[str, float]:
    return {"x": float(p[0]), "y": float(p[1]), "z": float(p[2])}


def stamp(ns: int) -> dict[str, int]:
    """A time in ns as Foxglove's (and ROS 2's) ``{sec, nsec}``."""
    return {"sec": ns // 1_000_000_000, "nsec": ns % 1_000_000_000}


def quaternion(R: np.ndarray) -> dict[str, float]:
    """Unit quaternion of a rotation matrix (Shepperd's method, Khalil & Dombre §2.3.6)."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    if tr > 0.0:
        s = 2.0 * math.sqrt(1.0 + tr)
        w, x, y, z = 0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        v = [0.0, 0.0, 0.0]
        v[i], v[j], v[k] = 0.25 * s, (R[j, i] + R[i, j]) / s, (R[k, i] + R[i, k]) / s
        w = (R[k, j] - R[j, k]) / s
        x, y, z = v
    return {"x": x, "y": y, "z": z, "w": w}


def arrow_rotation(d: np.ndarray) -> dict[str, float]:
    """The shortest rotation taking +x (a Foxglove arrow's axis) to the unit vector ``d``."""
    w = 1.0 + d[0]
    if w < 1e-9:                                # d = -x: half a turn about z
        return {"x": 0.0, "y": 0.0, "z": 1.0, "w": 0.0}
    norm = math.sqrt(w * w + d[1] * d[1] + d[2] * d[2])
    return {"x": 0.0, "y": -d[2] / norm, "z": d[1] / norm, "w": w / norm}


def arrow(start: np.ndarray, d: np.ndarray, length: float) -> dict[str, Any]:
    """A ``foxglove.ArrowPrimitive`` of ``length`` m from ``start`` along the unit vector ``d``
    (shaft 0.8, head 0.2 of it)."""
    return {"pose": {"position": vec(start), "orientation": arrow_rotation(d)},
            "shaft_length": 0.8 * length, "shaft_diameter": 0.005,
            "head_length": 0.2 * length, "head_diameter": 0.012, "color": FORCE_COLOR}


def line_loop(points, color: dict[str, float]) -> dict[str, Any]:
    """A closed ``foxglove.LinePrimitive`` through ``points`` (x, y, z rows, m)."""
    return {"type": LINE_LOOP, "pose": ORIGIN, "thickness": 3.0, "scale_invariant": True, "color": color,
            "points": [{"x": float(x), "y": float(y), "z": float(z)} for x, y, z in points]}


class Every:
    """Decimation by loop time: ``due(t)`` is True once every ``1 / rate_hz`` s of ``t``."""

    def __init__(self, rate_hz: float) -> None:
        self.period = 1.0 / rate_hz
        self._next_t = -math.inf

    def due(self, t: float) -> bool:
        if t < self._next_t:
            return False
        self._next_t = t + self.period
        return True


class Ground:
    """What places the base in the world: the foot's Delta and Z and the sole's outline
    (the stabilizer's ``foot.outline``, else the robot's rectangle a, b, c)."""

    def __init__(self, foot: dict[str, float], outline: np.ndarray) -> None:
        self.delta, self.z = foot["Delta"], foot["Z"]
        self.outline = np.ascontiguousarray(outline, dtype=np.float64)

    @classmethod
    def of(cls, robot: Robot | TreeRobot, stabilizer_path: Path | None) -> Ground | None:
        """None for a robot without a ``foot`` section (a tree has none)."""
        foot = None if isinstance(robot, TreeRobot) else robot.description.foot
        if foot is None:
            return None
        outline = None
        if stabilizer_path is not None:
            from stabilizer.config import load_config
            outline = load_config(stabilizer_path).outline
        return cls(foot, np.array(outline) if outline is not None else rectangle_outline(foot["a"], foot["b"], foot["c"]))


class Scene:
    """The scene of a serial-chain robot's records; ``place(rec)`` first, then ``transforms``,
    ``frames`` or ``entities`` of the same record. ``T`` holds the frames' poses in ``base``,
    ``edges`` the (parent, child) rows of ``T`` each link transform joins and ``links`` their
    default names; :class:`TreeScene` fills them for a kinematic tree."""

    base = BASE                                 # the frame the scene is drawn in

    def __init__(self, robot: Robot, ground: Ground | None) -> None:
        self.layout = RecordLayout(robot.n)
        self.model, self.ground = robot.model, ground
        self.R = np.eye(3)                      # R_M->O0 of the last placed record
        self.o = np.zeros(3)                    # O0 in the world
        self.T = np.zeros((robot.n + 2, 4, 4))  # frames 0..n and the tool in base (eq. 1-6)
        names = [BASE, *robot.model.joint_names, "tool"]
        self.edges = tuple((j - 1, j) for j in range(1, robot.n + 2))
        self.links = tuple((names[i], names[j]) for i, j in self.edges)
        self._rel = np.eye(4)
        self._cog = np.zeros(3)
        self._poly = np.zeros((0 if ground is None else len(ground.outline), 2))

    def place(self, rec: np.ndarray) -> bool:
        """R_M->O0 and O0 in the world (thesis eq. 46-47) at the record's tilt; False without a
        foot or a finite tilt."""
        alpha, beta = rec[self.layout.slices["platform"]].tolist()
        if self.ground is None or not (math.isfinite(alpha) and math.isfinite(beta)):
            return False
        rotation_world_foot(alpha, beta, self.R)
        foot_origin(self.R, self.ground.delta, self.ground.z, self.o)
        return True

    def base_transform(self, ns: int) -> dict[str, Any]:
        """world -> base of the last placed record, a ``foxglove.FrameTransform``."""
        return {"timestamp": stamp(ns), "parent_frame_id": WORLD, "child_frame_id": self.base,
                "translation": vec(self.o), "rotation": quaternion(self.R)}

    def link_poses(self, links: tuple[tuple[str, str], ...] | None = None):
        """Each link's (parent, child, pose of child in parent) from the last :meth:`frames`:
        inverse(T[parent]) T[child] (thesis eq. 1-5); ``links`` names them (default ``links``).
        The pose is a view reused by the next one."""
        rel = self._rel
        for (parent, child), (i, j) in zip(self.links if links is None else links, self.edges):
            R, p = self.T[i, :3, :3], self.T[i, :3, 3]
            rel[:3, :3] = R.T @ self.T[j, :3, :3]
            rel[:3, 3] = R.T @ (self.T[j, :3, 3] - p)
            yield parent, child, rel

    def link_transforms(self, ns: int, links: tuple[tuple[str, str], ...] | None = None) -> list[dict[str, Any]]:
        """Each joint's (parent, child) link as ``foxglove.FrameTransform`` (:meth:`link_poses`)."""
        return [{"timestamp": stamp(ns), "parent_frame_id": parent, "child_frame_id": child,
                 "translation": vec(rel[:3, 3]), "rotation": quaternion(rel[:3, :3])}
                for parent, child, rel in self.link_poses(links)]

    def frames(self, q: np.ndarray) -> bool:
        """The forward geometric model at ``q`` into ``T``; False when ``q`` is not finite."""
        if not np.all(np.isfinite(q)):
            return False
        m = self.model
        forward_kinematics(m.mdh, m.jtype, m.tool, q, self.T)
        return True

    def lines(self) -> dict[str, Any]:
        """The robot's line primitive through ``T`` (the leg: frames 0..n and the tool in turn)."""
        return {"type": LINE_STRIP, "points": [vec(T[:3, 3]) for T in self.T]}

    def cog(self, rec: np.ndarray) -> np.ndarray:
        """The robot's CoG in ``base``: the record's."""
        return rec[self.layout.slices["com"]]

    def entities(self, rec: np.ndarray, ns: int, tilt_known: bool) -> list[dict[str, Any]]:
        """The ``foxglove.SceneEntity`` list of a record stamped ``ns``: the robot and its CoG in
        ``base``, then (``tilt_known``: placed in the world) what :meth:`world_entity` draws."""
        s = self.layout.slices
        when = stamp(ns)
        out = []
        if self.frames(rec[s["q"]]):
            out.append({"timestamp": when, "frame_id": self.base, "id": "leg", "frame_locked": True,
                        "lines": [self.lines() | {"pose": ORIGIN, "thickness": 4.0, "scale_invariant": True,
                                                  "color": LEG_COLOR}]})
        com = self.cog(rec)
        if np.all(np.isfinite(com)):
            out.append({"timestamp": when, "frame_id": self.base, "id": "cog", "frame_locked": True,
                        "spheres": [{"pose": {"position": vec(com), "orientation": IDENTITY},
                                     "size": vec(np.full(3, 0.02)), "color": COG_COLOR}]})
        if tilt_known:
            out.append({"timestamp": when, "frame_id": WORLD, "id": "support", "frame_locked": True}
                       | self.world_entity(rec, com))
        return out

    def support_color(self, rec: np.ndarray) -> dict[str, float]:
        """Red once a CoG margin (eq. 70-71) of the record is negative, else green."""
        margins = rec[self.layout.slices["margins"]]
        margins = margins[np.isfinite(margins)]
        return OUTSIDE_COLOR if margins.size and margins.min() < 0.0 else INSIDE_COLOR

    def world_entity(self, rec: np.ndarray, com: np.ndarray) -> dict[str, Any]:
        """The support polygon (eq. 50-51) and the stabilizer's field force at the CoG, in ``world``."""
        g = self.ground
        project_outline(g.outline, len(g.outline), self.R, g.z, self._poly)
        out: dict[str, Any] = {"lines": [line_loop([(0.0, y, z) for y, z in self._poly], self.support_color(rec))]}
        force = rec[self.layout.slices["force"]]
        size = float(np.linalg.norm(force))
        if np.all(np.isfinite(com)) and math.isfinite(size) and size > 0.0:
            base_to_world(self.R, self.o, com, self._cog)
            out["arrows"] = [arrow(self._cog, force / size, FORCE_SCALE * size)]
        return out


class TreeScene(Scene):
    """The scene of a kinematic tree's records (BIP 2000), drawn in its base body's frame (the
    URDF's root link, the pelvis): ``T`` holds every body's frame (Khalil & Dombre's tree transform,
    the description's base as root) and ``edges`` each joint's (parent body, child body), named as
    the URDF's links. The lines join each body to its children; the CoG is the model's at the
    recorded q (the record's CoG is in whichever rooting the loop used).

    In the world (the pelvis estimate's, stabilizer.pelvis_state: anchored at the first stance sole,
    z up), once the record holds one: world -> base is T(pelvis_pos, R = Rx Ry Rz (pelvis_rpy)); the
    support polygon is the convex hull (models.polygon, Andrew 1979) of the outlines of the soles in
    contact (the load cells' ``contact``, else the played file's ``support``; models.common.support),
    projected along z at their mean height; each loaded sole carries an arrow along its normal from
    its frame's origin, ``SOLE_FORCE_SCALE`` m per N of its ``feet_load``; the CoG is marked at that
    height below it (its ground projection)."""

    def __init__(self, robot: TreeRobot) -> None:
        self.layout = RecordLayout(robot.n)
        self.model, self.ground = robot.model, None
        self.data = TreeData(robot.model)
        desc = robot.description
        self.base = desc.base
        bodies = robot.model.body_names
        self.links = tuple((t.parent, t.child) for t in desc.joints)
        self.edges = tuple((bodies.index(parent), bodies.index(child)) for parent, child in self.links)
        self.T = np.zeros((len(bodies), 4, 4))
        self.R, self.o = np.eye(3), np.zeros(3)
        feet = {f.frame: f for f in desc.feet}
        # the soles (models.common.support order: left, right) a robot with both has; their frames' poses in base
        self.soles = tuple(feet[SOLES[k]] for k in (LEFT, RIGHT)) if all(SOLES[k] in feet for k in (LEFT, RIGHT)) else ()
        self._sole_frames = [robot.model.index("frame", f.frame) for f in self.soles]
        self.sole_T = np.zeros((len(self.soles), 4, 4))
        self._inv = np.eye(4)
        self._rel = np.eye(4)
        self._com = np.full(3, np.nan)
        self._cog = np.zeros(3)

    def place(self, rec: np.ndarray) -> bool:
        """world -> base from the record's pelvis estimate; False while it has none."""
        s = self.layout.slices
        pos, rpy = rec[s["pelvis_pos"]], rec[s["pelvis_rpy"]]
        if not (np.all(np.isfinite(pos)) and np.all(np.isfinite(rpy))):
            return False
        self.R, self.o = rotation_xyz(rpy), pos.copy()
        return True

    def frames(self, q: np.ndarray) -> bool:
        """Every body's frame in the base body's at ``q`` into ``T`` (the soles' into ``sole_T``, and
        the CoG); False when ``q`` is not finite."""
        if not np.all(np.isfinite(q)):
            self._com[:] = np.nan
            return False
        d = self.data
        td.kinematics(self.model.buf, d.buf, np.ascontiguousarray(q, dtype=np.float64))
        R, p = d.Tb[0, :3, :3], d.Tb[0, :3, 3]
        self._inv[:3, :3], self._inv[:3, 3] = R.T, -R.T @ p
        np.matmul(self._inv, d.Tb, out=self.T)
        for k, f in enumerate(self._sole_frames):
            np.matmul(self._inv, d.Tf[f], out=self.sole_T[k])
        self._com[:] = R.T @ (d.com[0] - p)
        return True

    def lines(self) -> dict[str, Any]:
        """Segments from each body's origin to each of its children's."""
        return {"type": LINE_LIST, "points": [vec(self.T[k, :3, 3]) for edge in self.edges for k in edge]}

    def cog(self, rec: np.ndarray) -> np.ndarray:
        """The model's CoG at the last :meth:`frames`, in the base body's frame (NaN without one)."""
        return self._com

    def in_contact(self, rec: np.ndarray) -> tuple[int, ...]:
        """The indices into ``soles`` of the soles in contact (class docstring)."""
        s = self.layout.slices
        phase = rec[s["contact"]][0]
        if not math.isfinite(phase):
            phase = rec[s["support"]][0]
        return {LEFT: (0,), RIGHT: (1,), DOUBLE: (0, 1)}.get(int(phase), ()) if math.isfinite(phase) else ()

    def support_polygon(self, rec: np.ndarray) -> np.ndarray:
        """The support polygon's vertices (h, 3) in the world, counter-clockwise (class docstring);
        none without a sole in contact or a finite q at the last :meth:`frames`."""
        feet = self.in_contact(rec) if self.soles and np.all(np.isfinite(self._com)) else ()
        pts = [self.R @ (self.sole_T[k, :3, :3] @ [x, y, 0.0] + self.sole_T[k, :3, 3]) + self.o
               for k in feet for x, y in self.soles[k].outline]
        if len(pts) < 3:
            return np.zeros((0, 3))
        pts = np.array(pts)
        poly = hull(pts[:, :2])
        return np.column_stack([poly, np.full(len(poly), pts[:, 2].mean())])

    def world_entity(self, rec: np.ndarray, com: np.ndarray) -> dict[str, Any]:
        """The support polygon, the soles' load arrows and the CoG's ground projection, in ``world``."""
        poly = self.support_polygon(rec)
        out: dict[str, Any] = {"lines": [line_loop(poly, self.support_color(rec))] if len(poly) else []}
        loads = rec[self.layout.slices["feet_load"]]
        arrows = []
        for k, load in enumerate(loads[:len(self.soles)].tolist()):
            if math.isfinite(load) and load > 0.0 and np.all(np.isfinite(com)):
                T = self.sole_T[k]
                arrows.append(arrow(self.R @ T[:3, 3] + self.o, self.R @ T[:3, 2], SOLE_FORCE_SCALE * load))
        out["arrows"] = arrows
        if len(poly) and np.all(np.isfinite(com)):
            base_to_world(self.R, self.o, com, self._cog)
            out["spheres"] = [{"pose": {"position": vec([self._cog[0], self._cog[1], poly[0, 2]]),
                                        "orientation": IDENTITY}, "size": vec(np.full(3, 0.02)), "color": COG_COLOR}]
        return out


def scene_of(robot: Robot | TreeRobot, ground: Ground | None) -> Scene:
    """The scene of either kind of robot (a tree takes no ``ground``)."""
    return TreeScene(robot) if isinstance(robot, TreeRobot) else Scene(robot, ground)
