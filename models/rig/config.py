"""Stewart-Gough rig descriptions: YAML -> validated, typed description (no numerics here).

The rig is Staicu 2008's 3-3 platform: six legs, each a universal joint at the base,
a prismatic actuator (cylinder + rod) and a spherical joint at the platform; the base
and platform joints coincide two by two (eq. 1-2). Every error names the file and the
key, in one sentence (docs/conventions.md).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from models.common.errors import ConfigError, quote
from models.common.validation import Section, read_yaml

LEG_NAMES = ("A", "B", "C", "D", "E", "F")
BODY_NAMES = ("cross1", "cylinder", "rod", "cross4", "piece5", "platform")


@dataclass(frozen=True)
class StewartBody:
    """A rigid body: mass (kg), principal inertia about its centre of mass in the
    body's axes (kg m^2)."""

    mass: float
    inertia: tuple[float, float, float]


@dataclass(frozen=True)
class TestMotion:
    """Staicu 2008, eq. 5-6: x = x* sin(2 pi t / T), y = y* (1 - cos), z = h + z* (1 - cos),
    alpha_i = alpha_i* (1 - cos), over one period T."""

    position: tuple[float, float, float]
    angles: tuple[float, float, float]
    duration: float


@dataclass(frozen=True)
class StewartDescription:
    name: str
    l0: float                    # base radius O A1 (eq. 1)
    l1: float                    # A2 A3: universal-joint centre to the rod's base at zero stroke
    l2: float                    # cylinder length
    l3: float                    # rod length (rod base A3 to the spherical joint)
    l4: float                    # platform radius G A6
    h: float                     # platform centre's height at t = 0 (eq. 5)
    stroke: tuple[float, float]  # actuator displacement lambda_32 range (m)
    alpha1: tuple[float, ...]    # eq. 2, per leg: base joint azimuth
    alpha2: tuple[float, ...]    # eq. 2, per leg: platform joint azimuth relative to alpha1
    bodies: tuple[StewartBody, ...]   # in BODY_NAMES order
    gravity: float
    motion: TestMotion
    singular_tol: float


def load_stewart(path: str | Path) -> StewartDescription:
    """Read and validate a Stewart-Gough rig YAML file."""
    return stewart_from_dict(read_yaml(path), str(path))


def stewart_from_dict(raw: Any, where: str = "<dict>") -> StewartDescription:
    top = Section(where, "", raw)
    name = top.raw("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(where, "name", f"expected a non-empty string, got {quote(name)}")
    geo = top.sub("geometry")
    lengths = {k: geo.number(k, positive=True) for k in ("l0", "l1", "l2", "l3", "l4", "h")}
    stroke = geo.vector("stroke", 2)
    if stroke[0] >= stroke[1]:
        raise ConfigError(where, "geometry.stroke", f"expected [min, max] with min < max, got {list(stroke)}")
    if lengths["l1"] + lengths["l3"] + stroke[0] <= 0.0:
        raise ConfigError(where, "geometry.stroke", "the shortest leg (l1 + l3 + stroke min) must be > 0")
    singular_tol = geo.number("singular_tol", 1e-6, positive=True)
    geo.done()

    legs = top.sub("legs")
    alpha1, alpha2 = [], []
    for leg in LEG_NAMES:
        s = legs.sub(leg)
        alpha1.append(s.angle("alpha1"))
        alpha2.append(s.angle("alpha2"))
        s.done()
    legs.done()
    _check_not_vertical(where, alpha1, alpha2, lengths)

    bs = top.sub("bodies")
    bodies = []
    for b in BODY_NAMES:
        s = bs.sub(b)
        inertia = s.vector("inertia", 3)
        for i, v in enumerate(inertia):
            if v <= 0.0:
                raise ConfigError(where, s.path(f"inertia[{i}]"), f"must be > 0, got {v}")
        if any(inertia[i] > inertia[(i + 1) % 3] + inertia[(i + 2) % 3] * (1 + 1e-12) for i in range(3)):
            raise ConfigError(where, s.path("inertia"),
                              f"principal moments {list(inertia)} violate the triangle inequality")
        bodies.append(StewartBody(s.number("mass", positive=True), inertia))
        s.done()
    bs.done()

    gravity = top.number("gravity", positive=True)
    ms = top.sub("motion")
    position = ms.vector("position", 3)
    if ms.has("angles") and ms.has("angles_deg"):
        raise ConfigError(where, "motion.angles", "give either angles or angles_deg, not both")
    if ms.has("angles_deg"):
        angles = tuple(math.radians(a) for a in ms.vector("angles_deg", 3))
    else:
        angles = ms.vector("angles", 3)
    motion = TestMotion(position, angles, ms.number("duration", positive=True))
    ms.done()
    top.done()
    return StewartDescription(name=name, stroke=stroke, alpha1=tuple(alpha1), alpha2=tuple(alpha2),
                              bodies=tuple(bodies), gravity=gravity, motion=motion,
                              singular_tol=singular_tol, **lengths)


def _check_not_vertical(where: str, alpha1: list[float], alpha2: list[float], lengths: dict) -> None:
    """A leg may not be vertical at t = 0 (eq. 1-2): its universal joint's frame is built
    from the leg's horizontal direction there."""
    for leg, a1, a2 in zip(LEG_NAMES, alpha1, alpha2):
        dx = lengths["l4"] * math.cos(a1 + a2) - lengths["l0"] * math.cos(a1)
        dy = lengths["l4"] * math.sin(a1 + a2) - lengths["l0"] * math.sin(a1)
        if dx * dx + dy * dy < 1e-12:
            raise ConfigError(where, f"legs.{leg}", "the leg is vertical at t = 0: the universal "
                              "joint's axes are taken horizontal and across the leg, undefined then")
