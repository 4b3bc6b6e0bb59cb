"""Stabilizer configuration: YAML -> validated :class:`StabilizerConfig`.

The file (e.g. deploy/robots/bip_leg_stabilizer.yaml) names its robot file and
holds the thesis' unnumbered choices (gains, laws, weights). Every error is one
:class:`models.common.errors.ConfigError` naming the file and the key. Schema (SI
units; every angle in rad):

.. code-block:: yaml

    robot: bip_leg.yaml            # robot description, relative to this file
    period: 0.002                  # s, the control cycle
    tilt:
      source: platform             # platform (bench axes alpha, beta) | imu (specific force in R0)
      use_acceleration: false      # platform only: fold a horizontal acceleration in
      min_load: 20.0               # imu only (stabilizer.tilt_observer): N on the sole to call it flat,
      flat_margin: 0.002           # m, centre of pressure inside every sole edge,
      norm_tolerance: 0.05         # | |f| - g0 | / g0 of an unshaken IMU, (0, 1),
      dwell_s: 0.02                # s flat and unshaken before a sample is believed (>= period),
      filter_s: 0.15               # s, 1/omega of the low-pass of the believed samples (>= 2 periods),
      unconfirmed_s: 1.0           # s without a believed sample: warning and telemetry tilt_held
    foot:                          # optional; default: the rectangle a, b, c of the robot's foot
      outline: [[y0, z0], ...]     # convex, 3..32 vertices, sole plane, R0 axes (m)
    walls:
      law: coulomb                 # coulomb | inverse_power | exponential | spring_damper
      gain: 1.0                    # k, or one per outline edge
      saturation_distance: 0.01    # m, > 0
      exponent: 3.0                # inverse_power only
      length: 0.03                 # exponential decay length / spring_damper range (m)
      damping: 0.0                 # spring_damper only (N s/m)
    attractor:                     # optional (absent: no attraction, thesis §2.5.12)
      law: coulomb                 # same laws; spring_damper is k * Delta
      gain: 0.5
      softening_radius: 0.03       # m, > 0
      target: initial              # initial (G at the first cycle) | [x, y, z] in the world frame
    admittance:
      damping: 200.0               # N s/m, > 0
      mass: 0.0                    # kg, >= 0
      max_speed: 0.5               # m/s, > 0
    virtual_robot:
      joint_weights: [1, 1, 1, 1]  # W, > 0 (thesis' torque-balancing weights)
      vertical_task_weight: 0.0    # 0: height left to the pseudo-inverse (thesis); 1: tracked
      damping: {min: 1.0e-3, max: 0.05, threshold: 0.05}   # lambda (m), sigma threshold (m/rad)
      limit_margin: 0.02           # rad
      velocity_scale: 1.0          # fraction of the joint velocity limits, (0, 1]
      posture: {gain: 0.0, target: initial}               # null-space term (1/s); initial | [q...]
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any


from models.common.errors import ConfigError, quote
from models.common.validation import Section, read_yaml

from stabilizer.fields import LAW_NAMES, SPRING_DAMPER
from stabilizer.ground import TILT_IMU, TILT_PLATFORM
from stabilizer.tilt_observer import ObserverSettings

TILT_SOURCES = {"platform": TILT_PLATFORM, "imu": TILT_IMU}


@dataclass(frozen=True)
class FieldConfig:
    """One field: law code (fields.COULOMB...), gains (one per wall, or one for
    the attractor), regularisation radius (wall saturation distance or attractor
    softening radius), shape parameter (exponent or length; 0 if unused) and
    viscous coefficient (spring_damper only)."""

    law: int
    gains: tuple[float, ...]
    radius: float
    shape: float
    damping: float


@dataclass(frozen=True)
class StabilizerConfig:
    source: str
    robot_path: Path
    period: float
    tilt_source: int
    use_acceleration: bool
    outline: tuple[tuple[float, float], ...] | None
    walls: FieldConfig
    attractor: FieldConfig | None
    attractor_target: tuple[float, float, float] | None      # None: initial
    admittance_damping: float
    admittance_mass: float
    max_speed: float
    joint_weights: tuple[float, ...]
    vertical_task_weight: float
    lambda_min: float
    lambda_max: float
    sigma_threshold: float
    limit_margin: float
    velocity_scale: float
    posture_gain: float
    posture_target: tuple[float, ...] | None                 # None: initial
    tilt_observer: ObserverSettings = ObserverSettings()     # tilt: thresholds of the IMU's observer


class MapSection(Section):
    """A YAML mapping being validated (models.common.validation.Section) with bounded numbers,
    number lists, choices and flags."""

    def fail(self, name: str, message: str) -> ConfigError:
        return ConfigError(self.where, self.path(name), message)

    def number(self, name: str, default: Any = ..., *, low: float = -math.inf,
               high: float = math.inf, low_open: bool = False) -> float:
        return _number(self.where, self.path(name), self.raw(name, default), low, high, low_open)

    def numbers(self, name: str, size: int | None, default: Any = ..., *, low: float = -math.inf,
                low_open: bool = False) -> tuple[float, ...]:
        v = self.raw(name, default)
        if not isinstance(v, (list, tuple)) or (size is not None and len(v) != size) or not v:
            want = f"a list of {size} numbers" if size is not None else "a non-empty list of numbers"
            raise self.fail(name, f"expected {want}, got {quote(v)}")
        return tuple(_number(self.where, f"{self.path(name)}[{i}]", x, low, math.inf, low_open)
                     for i, x in enumerate(v))

    def choice(self, name: str, options: tuple[str, ...], default: Any = ...) -> str:
        v = self.raw(name, default)
        if v not in options:
            raise self.fail(name, f"expected one of {list(options)}, got {quote(v)}")
        return v

    def flag(self, name: str, default: Any = ...) -> bool:
        """A true / false key."""
        v = self.raw(name, default)
        if not isinstance(v, bool):
            raise self.fail(name, f"expected true or false, got {quote(v)}")
        return v

    def sub(self, name: str, default: Any = ...) -> MapSection:
        return MapSection(self.where, self.path(name), self.raw(name, default))


def _number(where: str, key: str, v: Any, low: float, high: float, low_open: bool) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConfigError(where, key, f"expected a number, got {quote(v)}")
    v = float(v)
    if not math.isfinite(v):
        raise ConfigError(where, key, f"must be finite, got {v}")
    if v < low or (low_open and v == low) or v > high:
        lo = "(" if low_open else "["
        raise ConfigError(where, key, f"must be in {lo}{low}, {high}], got {v}")
    return v


def field_config(sec: MapSection, nwalls: int | None, radius_key: str) -> FieldConfig:
    """A field section; ``nwalls`` is None for the attractor (one gain)."""
    law = LAW_NAMES.index(sec.choice("law", LAW_NAMES))
    g = sec.raw("gain")
    if isinstance(g, list):
        if nwalls is None or len(g) != nwalls:
            raise sec.fail("gain", f"expected one number{'' if nwalls is None else f' or a list of {nwalls}'}, got {quote(g)}")
        gains = sec.numbers("gain", nwalls, low=0.0)
    else:
        k = sec.number("gain", low=0.0)
        gains = (k,) * (nwalls or 1)
    radius = sec.number(radius_key, low=0.0, low_open=True)
    name = LAW_NAMES[law]
    shape = 0.0
    if name == "inverse_power":
        shape = sec.number("exponent", low=0.0, low_open=True)
    elif sec.has("exponent"):
        raise sec.fail("exponent", "is only used by the inverse_power law")
    if name in ("exponential", "spring_damper") and (name == "exponential" or nwalls is not None):
        shape = sec.number("length", low=0.0, low_open=True)
    elif sec.has("length"):
        raise sec.fail("length", f"is not used by the {name} law here")
    damping = 0.0
    if law == SPRING_DAMPER:
        damping = sec.number("damping", 0.0, low=0.0)
    elif sec.has("damping"):
        raise sec.fail("damping", "is only used by the spring_damper law")
    return FieldConfig(law, gains, radius, shape, damping)


def config_from_dict(data: Any, where: str) -> StabilizerConfig:
    """Validate a parsed stabilizer YAML document (``where`` names its file;
    ``robot`` is resolved relative to that file's folder)."""
    top = MapSection(where, "", data)
    robot = top.raw("robot")
    if not isinstance(robot, str) or not robot:
        raise top.fail("robot", "expected the path of the robot YAML file")
    robot_path = (Path(where).parent / robot) if not Path(robot).is_absolute() else Path(robot)
    period = top.number("period", low=0.0, low_open=True, high=0.1)

    tilt = top.sub("tilt")
    source = tilt.choice("source", tuple(TILT_SOURCES))
    use_acc = tilt.flag("use_acceleration", False)
    if use_acc and source == "imu":
        raise tilt.fail("use_acceleration", "the imu source already measures the acceleration (specific force)")
    observer = _observer(tilt, period)
    tilt.done()

    outline = None
    if top.has("foot"):
        foot = top.sub("foot")
        pts = foot.raw("outline")
        if not isinstance(pts, list):
            raise foot.fail("outline", f"expected a list of [y0, z0] vertices, got {quote(pts)}")
        outline = tuple(tuple(_number(where, f"foot.outline[{i}]", x, -math.inf, math.inf, False)
                              for x in _pair(where, i, p)) for i, p in enumerate(pts))
        foot.done()
    nwalls = len(outline) if outline is not None else 4          # the default rectangle

    walls_sec = top.sub("walls")
    walls = field_config(walls_sec, nwalls, "saturation_distance")
    walls_sec.done()

    attractor = target = None
    if top.has("attractor"):
        a = top.sub("attractor")
        attractor = field_config(a, None, "softening_radius")
        t = a.raw("target")
        if t != "initial":
            target = a.numbers("target", 3)
        a.done()

    adm = top.sub("admittance")
    adm_damping = adm.number("damping", low=0.0, low_open=True)
    adm_mass = adm.number("mass", 0.0, low=0.0)
    max_speed = adm.number("max_speed", low=0.0, low_open=True)
    adm.done()

    vr = top.sub("virtual_robot")
    weights = vr.numbers("joint_weights", 4, low=0.0, low_open=True)
    vertical = vr.number("vertical_task_weight", low=0.0)
    damp = vr.sub("damping")
    lam_min = damp.number("min", low=0.0, low_open=True)
    lam_max = damp.number("max", low=0.0)
    threshold = damp.number("threshold", low=0.0, low_open=True)
    damp.done()
    margin = vr.number("limit_margin", 0.0, low=0.0)
    vscale = vr.number("velocity_scale", 1.0, low=0.0, low_open=True, high=1.0)
    post = vr.sub("posture", {"gain": 0.0, "target": "initial"})
    post_gain = post.number("gain", low=0.0)
    pt = post.raw("target", "initial")
    post_target = None if pt == "initial" else post.numbers("target", 4)
    post.done()
    vr.done()
    top.done()
    return StabilizerConfig(where, robot_path, period, TILT_SOURCES[source], use_acc, outline,
                            walls, attractor, target, adm_damping, adm_mass, max_speed, weights,
                            vertical, lam_min, lam_max, threshold, margin, vscale, post_gain,
                            post_target, observer)


def _observer(tilt: MapSection, period: float) -> ObserverSettings:
    """The tilt observer's keys of ``tilt:`` (stabilizer.tilt_observer), today's values by default."""
    d = ObserverSettings()
    return ObserverSettings(
        min_load=tilt.number("min_load", d.min_load, low=0.0, low_open=True),
        flat_margin=tilt.number("flat_margin", d.flat_margin, low=0.0),
        norm_tolerance=tilt.number("norm_tolerance", d.norm_tolerance, low=0.0, low_open=True, high=1.0),
        dwell_s=tilt.number("dwell_s", d.dwell_s, low=period),
        filter_s=tilt.number("filter_s", d.filter_s, low=2.0 * period),   # semi-implicit Euler stays stable
        unconfirmed_s=tilt.number("unconfirmed_s", d.unconfirmed_s, low=0.0, low_open=True))


def _pair(where: str, i: int, p: Any) -> tuple[Any, Any]:
    if not isinstance(p, (list, tuple)) or len(p) != 2:
        raise ConfigError(where, f"foot.outline[{i}]", f"expected a vertex [y0, z0], got {quote(p)}")
    return p[0], p[1]


def load_config(path: str | Path) -> StabilizerConfig:
    """Read and validate a stabilizer YAML file."""
    return config_from_dict(read_yaml(path), str(Path(path)))
