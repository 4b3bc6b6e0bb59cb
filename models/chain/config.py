"""Robot descriptions: YAML -> validated, typed description (no numerics here).

A description is a serial MDH chain (thesis eq. 1-5, Khalil convention):
joints with their MDH parameters, limits, rotor inertia and friction, one rigid
body per joint, a tool frame, gravity, and optional BIP-leg sections (foot,
transmission). Loading validates everything and raises one :class:`ConfigError`
naming the file and the key; never a traceback from deep inside.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from models.common.errors import ConfigError, quote
from models.transmission import Transmission, parse_transmission
from models.common.validation import Section, read_yaml, vector

JOINT_TYPES = ("revolute", "prismatic")
ACCELERATION_TIME = 0.02
"""s: a joint without ``limits.acceleration`` may reach its velocity limit in this time (amax =
vmax / 0.02 s, 100 rad/s² at 2 rad/s). REPRESENTATIVE, as the shipped robots' declared values:
above the gait's and the squat's peaks, below the triangle waves that trip the drives' torque."""


@dataclass(frozen=True)
class MDH:
    """One row of an MDH table: T = RotX(alpha) TransX(a) RotZ(theta) TransZ(d)."""

    alpha: float
    a: float
    theta: float
    d: float


@dataclass(frozen=True)
class Body:
    """Rigid body: mass (kg), CoG in its joint frame (m), inertia about the CoG in
    the joint frame's axes (kg m^2)."""

    mass: float
    com: tuple[float, float, float]
    inertia: tuple[tuple[float, float, float], ...]


@dataclass(frozen=True)
class Joint:
    name: str
    type: str
    mdh: MDH
    position_limits: tuple[float, float]
    velocity_limit: float
    torque_limit: float
    armature: float
    viscous: float
    coulomb: float
    body: Body
    acceleration_limit: float = math.inf     # rad/s² (m/s²): refuses motions beyond it (``limits.acceleration``)


@dataclass(frozen=True)
class RobotDescription:
    name: str
    source: str
    gravity: tuple[float, float, float]
    joints: tuple[Joint, ...]
    tool: MDH
    foot: dict[str, float] | None = None
    transmission: Transmission | None = field(default=None, compare=False)

    @property
    def n(self) -> int:
        return len(self.joints)


def _inertia(where: str, key: str, v: Any) -> tuple[tuple[float, float, float], ...]:
    """3x3 inertia about the CoG: symmetric, positive semi-definite, triangle inequality."""
    if isinstance(v, dict):  # {ixx, iyy, izz, ixy, ixz, iyz}
        s = Section(where, key, v)
        ixx, iyy, izz = (s.number(k) for k in ("ixx", "iyy", "izz"))
        ixy, ixz, iyz = (s.number(k, 0.0) for k in ("ixy", "ixz", "iyz"))
        s.done()
        rows = ((ixx, ixy, ixz), (ixy, iyy, iyz), (ixz, iyz, izz))
    else:
        if not isinstance(v, (list, tuple)) or len(v) != 3:
            raise ConfigError(where, key, "expected a 3x3 matrix (list of 3 rows) or {ixx, iyy, izz, ixy, ixz, iyz}")
        rows = tuple(vector(where, f"{key}[{i}]", r, 3) for i, r in enumerate(v))
    m = np.array(rows)
    scale = max(1e-12, float(np.abs(m).max()))
    if not np.allclose(m, m.T, rtol=0.0, atol=1e-9 * scale):
        raise ConfigError(where, key, "inertia tensor is not symmetric")
    eig = np.linalg.eigvalsh(m)
    if eig[0] < -1e-12 * scale:
        raise ConfigError(where, key, f"inertia tensor is not positive semi-definite (eigenvalues {eig.tolist()})")
    p = np.sort(eig)  # principal moments must satisfy the triangle inequality
    if p[0] + p[1] < p[2] - 1e-9 * scale:
        raise ConfigError(where, key, f"principal moments {p.tolist()} violate the triangle inequality")
    return rows


def _mdh(sec: Section) -> MDH:
    m = MDH(alpha=sec.angle("alpha"), a=sec.number("a"), theta=sec.angle("theta", 0.0),
            d=sec.number("d", 0.0))
    sec.done()
    return m


def _joint(where: str, i: int, v: Any) -> Joint:
    s = Section(where, f"joints[{i}]", v)
    name = s.raw("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(where, s.path("name"), "expected a non-empty string")
    jtype = s.raw("type", "revolute")
    if jtype not in JOINT_TYPES:
        raise ConfigError(where, s.path("type"), f"expected one of {JOINT_TYPES}, got {quote(jtype)}")
    mdh = _mdh(s.sub("mdh"))

    lim = s.sub("limits")
    if lim.has("position_deg"):
        lo, hi = (math.radians(x) for x in lim.vector("position_deg", 2))
        key = lim.path("position_deg")
    else:
        lo, hi = lim.vector("position", 2)
        key = lim.path("position")
    if lo >= hi:
        raise ConfigError(where, key, f"min {lo} must be < max {hi}")
    vel = lim.number("velocity", positive=True)
    tau = lim.number("torque", positive=True)
    acc = lim.number("acceleration", vel / ACCELERATION_TIME, positive=True)
    lim.done()

    fr = s.sub("friction", {})
    viscous = fr.number("viscous", 0.0, nonnegative=True)
    coulomb = fr.number("coulomb", 0.0, nonnegative=True)
    fr.done()
    armature = s.number("armature", 0.0, nonnegative=True)

    b = s.sub("body")
    body = Body(mass=b.number("mass", positive=True), com=b.vector("com", 3),
                inertia=_inertia(where, b.path("inertia"), b.raw("inertia")))
    b.done()
    s.done()
    return Joint(name, jtype, mdh, (lo, hi), vel, tau, armature, viscous, coulomb, body, acc)


FOOT_KEYS = ("a", "b", "c", "Z", "Delta")


def _foot(sec: Section) -> dict[str, float]:
    foot = {k: sec.number(k, positive=k != "Z") for k in FOOT_KEYS}
    sec.done()
    return foot


def description_from_dict(data: Any, where: str = "<dict>") -> RobotDescription:
    """Validate a parsed YAML document and build a :class:`RobotDescription`."""
    top = Section(where, "", data)
    name = top.raw("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(where, "name", "expected a non-empty string")
    gravity = top.vector("gravity", 3)
    joints_raw = top.raw("joints")
    if not isinstance(joints_raw, list) or not joints_raw:
        raise ConfigError(where, "joints", "expected a non-empty list of joints")
    joints = tuple(_joint(where, i, j) for i, j in enumerate(joints_raw))
    names = [j.name for j in joints]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ConfigError(where, "joints", f"duplicate joint names {sorted(dup)}")
    tool = _mdh(top.sub("tool")) if top.has("tool") else MDH(0.0, 0.0, 0.0, 0.0)
    foot = _foot(top.sub("foot")) if top.has("foot") else None
    transmission = None
    if top.has("transmission"):
        lo = np.array([j.position_limits[0] for j in joints])
        hi = np.array([j.position_limits[1] for j in joints])
        transmission = parse_transmission(top.raw("transmission"), where, lo, hi)
    top.done()
    return RobotDescription(name, where, gravity, joints, tool, foot, transmission)


def load_description(path: str | Path) -> RobotDescription:
    """Read and validate a robot YAML file."""
    return description_from_dict(read_yaml(path), str(Path(path)))
