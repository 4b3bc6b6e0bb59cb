"""Whole-robot stabilizer configuration: YAML -> validated :class:`WholeBodyConfig`.

The file (deploy/robots/bip2000_stabilizer.yaml) names its tree robot file and holds
the unnumbered choices (gains, laws, weights); every error is one
:class:`models.common.errors.ConfigError` naming the file and the key. Schema (SI units, rad):

.. code-block:: yaml

    robot: bip2000.yaml              # kinematic tree with feet, roots left_sole / right_sole, subtrees
    period: 0.002                    # s
    tilt:
      source: platform               # platform (alpha, beta of the stance sole) | imu
      imu_frame: pelvis              # imu only: the frame whose axes the specific force is in
      use_acceleration: false        # platform only: fold a horizontal acceleration in
    support:
      source: phase                  # phase (given with the inputs) | sensors (the feet's loads)
      min_load: 50.0                 # sensors: N on a foot's sensors to call it in contact
      release_load: 30.0             # sensors: N under which a foot in contact leaves it (< min_load)
      max_load: 3000.0               # sensors: N on both feet beyond which the loads are implausible
      dwell_s: 0.01                  # sensors: s a new support phase must hold before it is taken
      double_support_root: left_sole # the sole the model is rooted at in double support
    cog:                             # virtual robot 1: the whole robot's CoG
      walls: {law: coulomb, gain: 2.0e-3, saturation_distance: 0.01}
      attractor: {law: spring_damper, gain: 40.0, softening_radius: 0.01}   # optional
      admittance: {damping: 400.0, mass: 0.0, max_speed: 0.1}
    trunk:                           # virtual robot 2: the trunk's CoG over the pelvis
      subtree: trunk                 # a subtrees group of the robot file
      box: [0.06, 0.05]              # half-sizes (m) forward, lateral of its walls around the pelvis
      walls: {...}  attractor: {...}  admittance: {...}     # as for cog
    tasks:
      joint_weights: 1.0             # W, one number or one per joint (> 0)
      damping: {min: 1.0e-4, max: 0.05, threshold: 0.02}   # lambda, sigma threshold
      feet_gain: 10.0                # 1/s, the other sole's pose held (closure / lifted foot)
      closure_tolerance: [0.002, 0.01]   # m, rad: beyond, the flag constraint_violated
      limit_margin: 0.02             # rad
      velocity_scale: 1.0            # fraction of the joint velocity limits, (0, 1]
      posture_gain: 1.0              # 1/s, towards the posture at reset, in the null space
    push:                            # optional: the capture-point strategies (stabilizer.push_recovery)
      k_ankle: 10.0                  # 1/s, CoG velocity per m of capture-point error
      v_ankle: 0.5                   # m/s, its bound
      deadband: 0.02                 # m, |xi - c| (the CoG's velocity / omega) below which nothing is added
      hip_margin: 0.02               # m, the capture point this close to the polygon's edge: hip strategy
      k_hip: 20.0                    # 1/s, trunk CoG velocity over the pelvis per m of error
      v_hip: 1.0                     # m/s, its bound
      step_margin: 0.0               # m, the capture point this far outside: a step is needed
      observer_rate: 0.0             # 1/s, > 0: the capture point from the soles' centre of pressure (LIPM observer)
      step_time: 0.0                 # s, > 0: a recovery step of this swing time when a step is needed
      step_height: 0.03              # m, its swing foot's clearance
      step_max: 0.3                  # m, the longest move of its sole
      step_settle: 1.0               # s, after its landing, before another step may be planned
      engage_time: 0.2               # s, > 0: the slow part's time constant; a |xi - c| built up slower is no push
      shift_time: 0.0                # s, > 0: a sole lifting under a push first has the CoG driven back over it
      shift_speed: 0.2               # m/s, that load shift's speed (0: the lifting sole swings at once)
      step_width: 0.16               # m, the least lateral distance between the soles' centres a step leaves
      step_delay: 0.0                # s, how long the capture point must stay beyond step_margin before a step
      tip_step: false                # true: with a pelvis gyro, its tipping point beyond step_margin wants a step too
      roll_start: 0.0                # m, with a pelvis gyro and a sole lifting under a push: the tipping point this far
      roll_span: 0.0                 # m, beyond the polygon (< 0: inside) and this much further grades its step 0 to 1
      roll_delay: 0.0                # s, the step's step_delay at grade 1 (every roll_* key: step_*'s by default)
      roll_time: 0.0                 # s, its step_time at grade 1
      roll_height: 0.03              # m, its step_height at grade 1
      roll_width: 0.16               # m, its step_width at grade 1
      roll_trunk: 0.0                # m/s, the trunk's CoG over the pelvis into the fall during its swing at grade 1
      hip_start: 0.0                 # m, with a pelvis gyro, a push seen, two soles down: the tipping point this far
      hip_span: 0.0                  # m, beyond the polygon (< 0: inside) and this much further: the spin 0..1 (0: off)
      hip_speed: 0.5                 # m/s, > 0: at grade 1 the trunk's CoG over the pelvis goes this fast,
      hip_ramp: 0.05                 # s, > 0: reached and left in this time (quintics: bounded jerk),
      hip_reach: 0.0                 # m, this far at grade 1 (a ramp's travel included),
      hip_hold: 0.0                  # s, held this long,
      hip_back: 1.0                  # s, > 0: and brought back in this time (a quintic)
      tip_shift: 0.0                 # s, > 0: the step tip_step wants first drives the CoG over its stance sole, the
      tip_speed: 0.2                 # m/s, swing sole lifting when unloaded, at the latest after tip_shift (eq. P12)
      tip_lead: 0.0                  # its landing: the tipping point carried on by the pendulum for tip_lead x swing
      tip_width: 0.16                # m, its front sole exactly this far across from the stance sole (eq. P6)
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from models.common.errors import ConfigError, quote
from models.common.validation import read_yaml

from stabilizer.config import FieldConfig, MapSection, field_config
from stabilizer.contact import DWELL_S, MAX_LOAD, MIN_LOAD, RELEASE_LOAD

TILT_SOURCES = ("platform", "imu")
SUPPORT_SOURCES = ("phase", "sensors")


@dataclass(frozen=True)
class VirtualRobotConfig:
    """One governed CoG: its wall field (one gain for every wall), optional attractor,
    and admittance (damping N s/m, mass kg, max speed m/s)."""

    walls: FieldConfig
    attractor: FieldConfig | None
    damping: float
    mass: float
    max_speed: float


@dataclass(frozen=True)
class PushConfig:
    """The push strategies' gains (stabilizer.push_recovery; SI units)."""

    k_ankle: float
    v_ankle: float
    deadband: float
    hip_margin: float
    k_hip: float
    v_hip: float
    step_margin: float
    observer_rate: float = 0.0
    step_time: float = 0.0
    step_height: float = 0.03
    step_max: float = 0.3
    step_settle: float = 1.0
    engage_time: float = 0.2
    shift_speed: float = 0.2
    shift_time: float = 0.0
    step_width: float = 0.16
    step_delay: float = 0.0
    tip_step: bool = False
    roll_start: float = 0.0
    roll_span: float = 0.0
    roll_delay: float = 0.0
    roll_time: float = 0.0
    roll_height: float = 0.03
    roll_width: float = 0.16
    roll_trunk: float = 0.0
    hip_start: float = 0.0
    hip_span: float = 0.0
    hip_speed: float = 0.5
    hip_ramp: float = 0.05
    hip_reach: float = 0.0
    hip_hold: float = 0.0
    hip_back: float = 1.0
    tip_shift: float = 0.0
    tip_speed: float = 0.2
    tip_lead: float = 0.0
    tip_width: float = 0.16


@dataclass(frozen=True)
class WholeBodyConfig:
    source: str
    robot_path: Path
    period: float
    tilt_source: str
    imu_frame: str
    use_acceleration: bool
    support_source: str
    min_load: float
    release_load: float
    max_load: float
    dwell_s: float
    double_support_root: str
    cog: VirtualRobotConfig
    trunk: VirtualRobotConfig
    trunk_subtree: str
    trunk_box: tuple[float, float]
    joint_weights: tuple[float, ...]           # one number: every joint
    lambda_min: float
    lambda_max: float
    sigma_threshold: float
    feet_gain: float
    closure_tolerance: tuple[float, float]
    limit_margin: float
    velocity_scale: float
    posture_gain: float
    push: PushConfig | None = None


def _push(sec: MapSection) -> PushConfig:
    pos = {"low": 0.0, "low_open": True}
    base = PushConfig(sec.number("k_ankle", **pos), sec.number("v_ankle", **pos), sec.number("deadband", low=0.0),
                     sec.number("hip_margin", low=0.0), sec.number("k_hip", low=0.0), sec.number("v_hip", low=0.0),
                     sec.number("step_margin", low=0.0), sec.number("observer_rate", 0.0, low=0.0),
                     sec.number("step_time", 0.0, low=0.0), sec.number("step_height", 0.03, low=0.0),
                     sec.number("step_max", 0.3, low=0.0), sec.number("step_settle", 1.0, low=0.0),
                     sec.number("engage_time", 0.2, low=0.0, low_open=True),
                     sec.number("shift_speed", 0.2, low=0.0), sec.number("shift_time", 0.0, low=0.0),
                     sec.number("step_width", 0.16, low=0.0), sec.number("step_delay", 0.0, low=0.0),
                     sec.flag("tip_step", False))
    out = replace(base, roll_start=sec.number("roll_start", 0.0), roll_span=sec.number("roll_span", 0.0, low=0.0),
                  roll_delay=sec.number("roll_delay", base.step_delay, low=0.0),
                  roll_time=sec.number("roll_time", base.step_time, low=0.0, low_open=base.step_time > 0.0),
                  roll_height=sec.number("roll_height", base.step_height, low=0.0),
                  roll_width=sec.number("roll_width", base.step_width, low=0.0),
                  roll_trunk=sec.number("roll_trunk", 0.0, low=0.0),
                  hip_start=sec.number("hip_start", 0.0), hip_span=sec.number("hip_span", 0.0, low=0.0),
                  hip_speed=sec.number("hip_speed", 0.5, low=0.0, low_open=True),
                  hip_ramp=sec.number("hip_ramp", 0.05, low=0.0, low_open=True),
                  hip_reach=sec.number("hip_reach", 0.0, low=0.0),
                  hip_hold=sec.number("hip_hold", 0.0, low=0.0),
                  hip_back=sec.number("hip_back", 1.0, low=0.0, low_open=True),
                  tip_shift=sec.number("tip_shift", 0.0, low=0.0), tip_speed=sec.number("tip_speed", 0.2, low=0.0),
                  tip_lead=sec.number("tip_lead", 0.0, low=0.0),
                  tip_width=sec.number("tip_width", base.step_width, low=0.0))
    sec.done()
    return out


def _virtual_robot(sec: MapSection) -> VirtualRobotConfig:
    walls = sec.sub("walls")
    w = field_config(walls, 1, "saturation_distance")
    walls.done()
    attractor = None
    if sec.has("attractor"):
        a = sec.sub("attractor")
        attractor = field_config(a, None, "softening_radius")
        a.done()
    adm = sec.sub("admittance")
    out = VirtualRobotConfig(w, attractor, adm.number("damping", low=0.0, low_open=True),
                             adm.number("mass", 0.0, low=0.0), adm.number("max_speed", low=0.0, low_open=True))
    adm.done()
    return out


def config_from_dict(data: Any, where: str) -> WholeBodyConfig:
    """Validate a parsed whole-robot stabilizer YAML document (``robot`` relative to it)."""
    top = MapSection(where, "", data)
    robot = top.raw("robot")
    if not isinstance(robot, str) or not robot:
        raise top.fail("robot", "expected the path of the robot YAML file")
    robot_path = Path(robot) if Path(robot).is_absolute() else Path(where).parent / robot
    period = top.number("period", low=0.0, low_open=True, high=0.1)

    tilt = top.sub("tilt")
    tsource = tilt.choice("source", TILT_SOURCES)
    imu_frame = tilt.raw("imu_frame", "pelvis")
    if not isinstance(imu_frame, str):
        raise tilt.fail("imu_frame", f"expected a frame name, got {quote(imu_frame)}")
    use_acc = tilt.flag("use_acceleration", False)
    if use_acc and tsource == "imu":
        raise tilt.fail("use_acceleration", "the imu source already measures the acceleration (specific force)")
    tilt.done()

    sup = top.sub("support")
    ssource = sup.choice("source", SUPPORT_SOURCES)
    min_load = sup.number("min_load", MIN_LOAD, low=0.0, low_open=True)
    release_load = sup.number("release_load", min(RELEASE_LOAD, min_load), low=0.0, high=min_load)
    max_load = sup.number("max_load", MAX_LOAD, low=2.0 * min_load)
    dwell_s = sup.number("dwell_s", DWELL_S, low=0.0, high=1.0)
    droot = sup.choice("double_support_root", ("left_sole", "right_sole"), "left_sole")
    sup.done()

    cog = _virtual_robot(top.sub("cog"))
    tr = top.sub("trunk")
    subtree = tr.raw("subtree", "trunk")
    if not isinstance(subtree, str):
        raise tr.fail("subtree", f"expected a subtree name, got {quote(subtree)}")
    box = tr.numbers("box", 2, low=0.0, low_open=True)
    trunk = _virtual_robot(tr)
    tr.done()

    tasks = top.sub("tasks")
    jw = tasks.raw("joint_weights", 1.0)
    weights = tasks.numbers("joint_weights", None, low=0.0, low_open=True) if isinstance(jw, list) \
        else (tasks.number("joint_weights", low=0.0, low_open=True),)
    damp = tasks.sub("damping")
    lam_min = damp.number("min", low=0.0)
    lam_max = damp.number("max", low=0.0)
    threshold = damp.number("threshold", low=0.0, low_open=True)
    damp.done()
    if lam_min == 0.0 and lam_max == 0.0:
        raise tasks.fail("damping", "min and max cannot both be 0 (no damping at a singularity)")
    feet_gain = tasks.number("feet_gain", low=0.0)
    tol = tasks.numbers("closure_tolerance", 2, low=0.0, low_open=True)
    margin = tasks.number("limit_margin", 0.0, low=0.0)
    vscale = tasks.number("velocity_scale", 1.0, low=0.0, low_open=True, high=1.0)
    post = tasks.number("posture_gain", 0.0, low=0.0)
    tasks.done()
    push = _push(top.sub("push")) if top.has("push") else None
    top.done()
    return WholeBodyConfig(where, robot_path, period, tsource, imu_frame, use_acc, ssource, min_load,
                           release_load, max_load, dwell_s, droot, cog, trunk, subtree, (box[0], box[1]), weights, lam_min,
                           lam_max, threshold, feet_gain, (tol[0], tol[1]), margin, vscale, post, push)


def load_config(path: str | Path) -> WholeBodyConfig:
    """Read and validate a whole-robot stabilizer YAML file."""
    return config_from_dict(read_yaml(path), str(Path(path)))


def robot_error(cfg: WholeBodyConfig, key: str, message: str) -> ConfigError:
    """A configuration that does not fit its robot file: names the stabilizer file and key."""
    return ConfigError(cfg.source, key, message)
