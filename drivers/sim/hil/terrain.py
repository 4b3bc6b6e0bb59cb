"""The ground under a standing or walking biped: the floor tilted, a step up or down ahead.

A :class:`Terrain` is what the HIL builds into the biped's MJCF (:func:`drivers.sim.hil.mjcf_biped.build_biped`)
and nothing else is told about: the gait and the daemon's config still assume the flat floor z = 0.
World axes: z up, x forward (the walking direction), y left. The tilted floor is the body
:data:`TERRAIN` of orientation R = RotY(−pitch) RotX(roll) about the world origin (the point midway
between the soles at reset): ``pitch`` > 0 raises the floor ahead (uphill), ``roll`` > 0 raises it
to the left. In that body's frame the floor is the plane z = min(0, h) and a step of height ``h``
(m) at ``x`` ahead is a box of :data:`STEP_LENGTH` × 2 :data:`STEP_HALF_WIDTH`: for h > 0 its top face
z = h covers x ≥ ``x`` (a step up), for h < 0 its top face z = 0 covers x ≤ ``x`` and the floor lies
|h| below beyond it (a step down). The flat terrain is no terrain: the scene's floor stays the plain
plane z = 0 of the world, bit for bit.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

TERRAIN, STEP = "terrain", "step"
STEP_LENGTH = 6.0        # m, the step box's length along x (longer than any scenario's walk)
STEP_HALF_WIDTH = 2.0    # m, its half-width along y
MAX_TILT_DEG = 30.0      # the floor tilts at most this much about either axis
MAX_STEP_M = 0.2         # m, the largest |step height|
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


class TerrainError(ValueError):
    """A terrain argument out of range or malformed (its message names it)."""


@dataclass(frozen=True)
class Terrain:
    """Floor tilt (rad) and an optional step (height m, distance ahead m) (module docstring)."""
    pitch: float = 0.0
    roll: float = 0.0
    step_height: float = 0.0
    step_x: float = 0.0

    def __post_init__(self) -> None:
        for name, angle in (("floor pitch", self.pitch), ("floor roll", self.roll)):
            if not (math.isfinite(angle) and abs(angle) <= math.radians(MAX_TILT_DEG)):
                raise TerrainError(f"{name} {math.degrees(angle):g} deg: must be within ±{MAX_TILT_DEG:g} deg")
        if not (math.isfinite(self.step_height) and abs(self.step_height) <= MAX_STEP_M):
            raise TerrainError(f"step height {self.step_height:g} m: must be within ±{MAX_STEP_M:g} m")
        if not (math.isfinite(self.step_x) and 0.0 <= self.step_x <= STEP_LENGTH):
            raise TerrainError(f"step distance {self.step_x:g} m: must be within 0 .. {STEP_LENGTH:g} m ahead")

    @property
    def flat(self) -> bool:
        return self.pitch == 0.0 and self.roll == 0.0 and self.step_height == 0.0

    def rotation(self) -> np.ndarray:
        """R = RotY(−pitch) RotX(roll): the floor's axes in the world."""
        cp, sp, cr, sr = math.cos(self.pitch), math.sin(self.pitch), math.cos(self.roll), math.sin(self.roll)
        rot_y = np.array([[cp, 0.0, -sp], [0.0, 1.0, 0.0], [sp, 0.0, cp]])
        rot_x = np.array([[1.0, 0.0, 0.0], [0.0, cr, -sr], [0.0, sr, cr]])
        return rot_y @ rot_x

    def floor_z(self) -> float:
        """The floor plane's height in the terrain frame (below a step down)."""
        return min(0.0, self.step_height)

    def step_box(self) -> tuple[list[float], list[float]] | None:
        """(centre, half sizes) of the step box in the terrain frame, None without a step."""
        h = self.step_height
        if h == 0.0:
            return None
        x0 = self.step_x if h > 0 else self.step_x - STEP_LENGTH
        return ([x0 + 0.5 * STEP_LENGTH, 0.0, 0.5 * h], [0.5 * STEP_LENGTH, STEP_HALF_WIDTH, 0.5 * abs(h)])

    def args(self) -> tuple[str, ...]:
        """The ``bipd hil`` arguments that build this terrain."""
        out = []
        if self.pitch:
            out += ["--floor-pitch", repr(math.degrees(self.pitch))]
        if self.roll:
            out += ["--floor-roll", repr(math.degrees(self.roll))]
        if self.step_height:
            out += [f"--floor-step={self.step_height!r}@{self.step_x!r}"]   # "=": a step down starts with "-"
        return tuple(out)

    def describe(self) -> dict[str, float]:
        """The terrain as results report it (degrees, metres)."""
        return {"floor_pitch_deg": round(math.degrees(self.pitch), 6), "floor_roll_deg": round(math.degrees(self.roll), 6),
                "step_height_m": self.step_height, "step_x_m": self.step_x}


def parse_step(text: str) -> tuple[float, float]:
    """``HEIGHT@X`` (m, m; negative height: a step down) as (height, x); a malformed one is a
    :class:`TerrainError`."""
    m = re.fullmatch(rf"\s*({_NUMBER})\s*@\s*({_NUMBER})\s*", text)
    if m is None:
        raise TerrainError(f"{text!r}: expected HEIGHT@X in metres, e.g. 0.01@0.3 (a 1 cm step up 0.3 m ahead)")
    height, x = float(m.group(1)), float(m.group(2))
    if height == 0.0:
        raise TerrainError(f"{text!r}: a step of height 0 is no step")
    return height, x


def terrain(pitch_deg: float = 0.0, roll_deg: float = 0.0, step: str | None = None) -> Terrain:
    """The terrain of the command-line arguments (degrees, ``HEIGHT@X``)."""
    height, x = parse_step(step) if step is not None else (0.0, 0.0)
    return Terrain(math.radians(pitch_deg), math.radians(roll_deg), height, x)
