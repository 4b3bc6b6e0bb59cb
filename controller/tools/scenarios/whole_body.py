"""BIP 2000 standing on the two-axis tilting platform in the HIL (deploy/bip2000_platform.yaml), with the
whole-robot stabilizer (docs/multi_cog.md) or its posture held in position.

A run is a fresh bench (the HIL's biped plant on the plate and the daemon, stepped lock-step as
:mod:`.runner`): enable; on one foot, two posture moves first (the CoG over the left sole, then the
right sole lifted :data:`LIFT_M`), solved by the models' IK (models.ik.numerical); the stabilizer on in that
support (``stabilizer enable=true support=double|left``) unless the posture is held; then the
scenario: a platform tilt (α about the world's forward x: roll; β about its lateral y: pitch; the
plate's axes RotX(α) RotY(β)) or a push on the pelvis. Every wait is in simulated time.

The robot *fell* when the HIL's ``fallen`` latches (pelvis 0.20 m down or tilted beyond 30°), a
sole it stands on lifts more than :data:`FOOT_LIFT_M` off the plate, or the run ends with its CoG
outside the polygon its soles had at the start (tipped on their edges, not yet down: a push whose
fall is slower than the run). A sole a RECOVERY_STEP event swung (``push.step_time`` > 0 in the
stabilizer YAML) may lift: the run goes on, and must end with the CoG inside the polygon its soles have at
the end; a sole that lifts before its step is planned has fallen (the run stops there). Its CoG margin is the signed
distance (positive inside) of the whole robot's CoG, projected along gravity, to the support polygon
of the soles in contact (the HIL's ground truth). On the Stewart–Gough rig (deploy/bip2000_rig.yaml,
a rig motion as the scenario: :class:`.rig.RigMotion`) the plate's truth is also held against the
commanded motion.
"""
from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from models.common.support import LEFT, SOLES, SUPPORT_NAMES
from models.ik.numerical import IkSolver, Task
from models.tree.robot import TreeRobot
from models.common.errors import ConfigError
from models.common.validation import read_yaml
from stabilizer.whole_body_config import config_from_dict

from controller.tools.scenarios.metrics import FOOT_LIFT_M, plate_tracking, rig_following_errors, state_sequence, tracking_error
from controller.tools.scenarios.plots import plot_paths, write_whole_body_plots
from controller.tools.scenarios.runner import (SETTLE_S, RecordingOperator, Processes, Say, ScenarioError, play_measured, plot_errors,
                     raw_wire, set_dotted, write_config)
from controller.tools.scenarios.scenarios import push, push_params, tilt_and_back

CONFIG = Path(__file__).resolve().parents[3] / "deploy" / "bip2000_platform.yaml"
TRUTH_KEYS = ("t", "platform", "foot_lift", "contact", "com_world", "support_polygon", "support_count", "fallen",
              "pelvis_height", "plate_position")
LIFT_M = 0.04                 # m, the lifted sole above its place on one foot
POSTURE_S = 2.0               # s, each posture move
HOLD_S = 1.0
PUSH_DIRECTIONS = {"forward": (1.0, 0.0, 0.0), "backward": (-1.0, 0.0, 0.0),
                   "left": (0.0, 1.0, 0.0), "right": (0.0, -1.0, 0.0)}
"""World axes of the biped plant: x forward, y left, z up."""
TILT_DIRECTIONS = {"+alpha": (1.0, 0.0), "-alpha": (-1.0, 0.0), "+beta": (0.0, 1.0), "-beta": (0.0, -1.0),
                   "+alpha+beta": (1.0, 1.0), "+alpha-beta": (1.0, -1.0), "-alpha+beta": (-1.0, 1.0),
                   "-alpha-beta": (-1.0, -1.0)}
"""(α, β) per unit amplitude: roll and pitch both ways and the four diagonals (both angles = the amplitude)."""
STABILIZER = CONFIG.parent / "robots" / "bip2000_stabilizer.yaml"
PUSH_STRATEGIES = tuple((f"push.{k}", v) for k, v in read_yaml(STABILIZER)["push"].items() if k in (
    "k_ankle", "v_ankle", "deadband", "hip_margin", "k_hip", "v_hip", "step_margin"))
"""The capture-point strategies' gains (stabilizer.push_recovery) as ``stabilizer_set`` keys, read from the
deployed stabilizer YAML (with its pressure observer and its gate), for a YAML without them
(docs/stabilizer.md, "Pushes")."""


def push_strategies(on: bool, observer_rate: float | None = None,
                    step_time: float | None = None) -> tuple[tuple[str, Any], ...]:
    """The ``stabilizer_set`` keys of the strategies (:data:`PUSH_STRATEGIES`) when ``on``, an
    ``observer_rate`` (1/s: the capture point's LIPM observer) or a ``step_time`` (s: recovery steps of
    that swing) is given; none else."""
    extra = tuple((f"push.{k}", v) for k, v in (("observer_rate", observer_rate), ("step_time", step_time))
                  if v is not None)
    for key, v in extra:
        if not v > 0.0:
            raise ScenarioError(f"{key} must be > 0, got {v}")
    return (*PUSH_STRATEGIES, *extra) if on or extra else ()


def parse_sets(items: list[str]) -> tuple[tuple[str, Any], ...]:
    """``KEY=VALUE`` items (``bipd scenario whole-body --set``: a dotted key of the stabilizer YAML, the value
    a YAML scalar) as ``stabilizer_set`` keys; an item without a key and a value is a ScenarioError."""
    out = []
    for item in items:
        key, eq, text = item.partition("=")
        if not eq or not key.strip() or not text.strip() or any(not k for k in key.strip().split(".")):
            raise ScenarioError(f"--set {item!r}: expected KEY=VALUE, a dotted key of the stabilizer YAML "
                                f"(e.g. push.step_width=0.2)")
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError:
            raise ScenarioError(f"--set {item!r}: the value is not a YAML scalar") from None
        out.append((key.strip(), value))
    return tuple(out)


def check_stabilizer_set(config: Path, keys: tuple[tuple[str, Any], ...]) -> None:
    """Validate the stabilizer YAML that the daemon YAML ``config`` names with ``keys`` set (dotted key,
    value), as the run's copy will be: an unknown key or a bad value is a ConfigError naming it, raised
    before any process starts."""
    doc = read_yaml(config)
    if not isinstance(doc, dict) or not isinstance(doc.get("stabilizer"), str):
        raise ConfigError(str(config), "stabilizer", "names no stabilizer YAML for --set to change")
    path = Path(config).resolve().parent / doc["stabilizer"]
    stab = read_yaml(path)
    for key, value in keys:
        set_dotted(stab, key, value)
    config_from_dict(stab, str(path))


@dataclass(frozen=True)
class WholeBodyOptions:
    config: Path = CONFIG
    stabilizer: bool = True
    support: str = "double"           # double | left (the right foot lifted by the posture moves)
    trajectory_dir: Path | None = None   # the daemon's io.trajectory_dir (a rig motion's earthquake CSV)
    plot_dir: Path | None = None      # PNGs of the run (:func:`.plots.write_whole_body_plots`)
    tilt_source: str = "platform"     # the stabilizer's tilt: the platform's angles or the pelvis IMU (imu)
    support_source: str = "phase"     # its support: the command's (phase) or the feet's load cells (sensors)
    stabilizer_set: tuple[tuple[str, Any], ...] = ()   # more (dotted key, value) set in the stabilizer YAML copy
    transport: str = "udp"            # the frames over loopback UDP, or "raw": a veth into a namespace (.runner)


@dataclass(frozen=True)
class PlatformTilt:
    """Platform 0 -> (α, β) by a quintic in ``duration``, hold, back to level."""
    alpha: float
    beta: float
    duration: float = 7.0
    hold: float = HOLD_S
    name: str = field(default="whole-body-tilt", init=False)

    def params(self) -> dict[str, Any]:
        return {"alpha_deg": round(math.degrees(self.alpha), 4), "beta_deg": round(math.degrees(self.beta), 4),
                "duration_s": self.duration, "hold_s": self.hold}

    def run(self, op: RecordingOperator) -> None:
        tilt_and_back(op, self.alpha, self.beta, self.duration, self.hold)


@dataclass(frozen=True)
class PelvisPush:
    """A force on the pelvis (world axes) for ``duration`` s, through the HIL's ``push`` op."""
    force: float
    direction: str = "forward"
    duration: float = 0.1
    before: float = 0.5
    after: float = 2.5
    name: str = field(default="whole-body-push", init=False)

    def params(self) -> dict[str, Any]:
        return push_params(self.force, self.duration, self.direction)

    def run(self, op: RecordingOperator) -> None:
        op.wait(self.before)
        push(op, "pelvis", self.force, PUSH_DIRECTIONS[self.direction], self.duration)
        op.wait(self.duration + self.after)


def one_foot_postures(robot: TreeRobot, q0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """From ``q0`` on both soles: the CoG over the left sole's centre (both soles where they are),
    then the right sole :data:`LIFT_M` up as well; the pelvis keeps its orientation (IK on the models,
    rooted at the left sole). Raises models.ik.numerical.IkError if a posture is out of reach."""
    robot.set_root(SOLES[LEFT])
    foot = next(f for f in robot.description.feet if f.frame == SOLES[LEFT])
    centre = np.mean(np.array(foot.outline), axis=0)
    right, pelvis, com = robot.frame(q0, SOLES[1 - LEFT]), robot.frame(q0, "pelvis"), robot.com(q0)
    target = np.array([centre[0], centre[1], com[2]])
    out = []
    q = q0
    for lift in (0.0, LIFT_M):
        pose = right.copy()
        pose[2, 3] += lift
        ik = IkSolver(robot, [Task(SOLES[1 - LEFT], "pose", pose), Task("com", "position", target),
                              Task("pelvis", "orientation", pelvis)], rest=q0, null_gain=0.1,
                      tol_pos=1e-6, tol_rot=1e-6)
        q = ik.solve(q).raise_for_status().q
        out.append(q)
    return out[0], out[1]


def cog_margin(com: np.ndarray, poly: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Signed distance (m, positive inside) of each frame's CoG (x, y) to its convex support polygon
    (counter-clockwise x, y pairs, ``count`` vertices); NaN without a polygon."""
    out = np.full(com.shape[0], np.nan)
    for k in range(com.shape[0]):
        h = int(count[k]) if np.isfinite(count[k]) else 0
        if h < 3:
            continue
        p = poly[k].reshape(-1, 2)[:h]
        e = np.roll(p, -1, axis=0) - p
        n = np.stack([-e[:, 1], e[:, 0]], axis=1) / np.linalg.norm(e, axis=1)[:, None]   # inward (ccw)
        out[k] = float(np.min(np.sum((com[k, :2] - p) * n, axis=1)))
    return out


@dataclass
class WholeBodyResult:
    scenario: str
    params: dict[str, Any]
    stabilizer: bool
    support: str
    fell: bool
    fall_reason: str | None
    fell_at_s: float | None              # simulated time of the first frame that met a fall criterion
    min_cog_margin_m: float | None
    max_stance_lift_m: float | None
    min_pelvis_height_m: float | None
    plate_travel_m: list[float] | None   # the plate's (x, y, z) range over the measured part (the rig moves it)
    plate_tracking_error_m: float | None    # largest |plate - home - commanded translation| (rig, no rotation)
    plate_lag_s: float | None               # the delay of the command that fits the plate best, and the largest
    plate_error_at_lag_m: float | None      # error against the command so delayed (metrics.plate_tracking)
    max_tracking_error_deg: float | None    # largest |q - q_ref| with the drives powered, and its joint
    max_tracking_error_joint: str | None
    max_rig_following_error_mm: dict[str, float] | None   # per rig actuator A-F (telemetry frames)
    max_tilt_error_deg: float | None     # the loop's tilt (telemetry ``tilt``) against the plate's hinges, max
    contacts: list[str]                  # the support phases the feet's loads showed (CONTACT events), in order
    supports: list[str]                  # the stabilizer's support phases (SUPPORT events), in order
    recovery_steps: list[dict[str, Any]]  # RECOVERY_STEP events: cycle, foot, target (e1, e2, m)
    states: list[str]
    stab_flags: list[str]
    aborted: str | None
    sim_s: float
    wall_s: float
    plots: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _stance(support: str) -> list[int]:
    return [0, 1] if support == "double" else [LEFT]


def _stepped(events: list[dict]) -> set[int]:
    """The soles a RECOVERY_STEP event swung (0 left, 1 right)."""
    return {SUPPORT_NAMES.index(e["foot"]) for e in events
            if e.get("kind") == "RECOVERY_STEP" and e.get("foot") in SUPPORT_NAMES[:2]}


def _fell(support: str, events: Callable[[], list[dict]]):
    """The in-run fall test of a truth frame: the HIL's ``fallen``, or a stance sole lifted that no recovery
    step swung (``events()``: the run's events so far), as :func:`_evaluate` judges the run."""
    feet = _stance(support)

    def fell(msg: dict) -> bool:
        if msg["fallen"]:
            return True
        if not any(msg["foot_lift"][f] > FOOT_LIFT_M for f in feet):
            return False
        swung = _stepped(events())
        return any(msg["foot_lift"][f] > FOOT_LIFT_M for f in feet if f not in swung)
    return fell


def _evaluate(scenario, o: WholeBodyOptions, op: RecordingOperator, aborted: str | None) -> WholeBodyResult:
    tel, tru = op.series.arrays()
    stepped = _stepped(op.series.events)
    feet = [f for f in _stance(o.support) if f not in stepped]      # a stepping sole's lift is no fall
    lift = tru["foot_lift"][:, feet] if tru["t"].size else np.empty((0, len(feet)))
    margin = cog_margin(tru["com_world"], tru["support_polygon"], tru["support_count"]) if tru["t"].size \
        else np.empty(0)
    reason, fell_at = None, None
    if tru["t"].size:
        hit = (tru["fallen"] > 0.5) | (lift > FOOT_LIFT_M).any(axis=1)
        if hit.any():
            k = int(np.argmax(hit))
            fell_at = float(tru["t"][k])
            reason = (f"fallen (pelvis down or tilted) at t = {tru['t'][k]:.2f} s" if tru["fallen"][k] > 0.5
                      else f"stance sole lifted {lift[k].max() * 1e3:.1f} mm > {FOOT_LIFT_M * 1e3:g} mm at "
                           f"t = {tru['t'][k]:.2f} s")
        else:                       # the soles' polygon at the start: a robot rocking onto one sole is not out
            k = -1 if stepped else 0    # (after a step: the polygon it stepped to)
            end = cog_margin(tru["com_world"][-1:], tru["support_polygon"][k:][:1], tru["support_count"][k:][:1])[0]
            if end < 0.0:           # balanced on the soles' edges, still tipping
                fell_at = float(tru["t"][-1])
                reason = (f"the CoG ends {-end * 1e3:.1f} mm outside the soles' polygon at t = {fell_at:.2f} s "
                          "(tipped on their edges, not at rest)")
    else:
        reason = "no ground truth received from the HIL process"
    if reason is None and op.fell:  # a sole lifted before its recovery step was planned: the run stopped there
        fell_at = float(tru["t"][-1])
        reason = f"{aborted or 'the in-run fall test fired'} (a stance sole lifted before its recovery step)"
    flags = sorted({n for e in op.series.events if e.get("kind") == "STABILIZER" for n in e.get("rose") or []})
    # the plate's hinge angles in the same frame as the tilt: its encoders through rigid gears, the truth's
    tilt_err = float(np.degrees(np.nanmax(np.abs(tel["tilt"] - tel["platform"])))) if tel["t"].size else None
    fin = margin[np.isfinite(margin)]
    sim_s, wall_s = op.elapsed()
    err, joint = tracking_error(tel, list(op.call("get_config")["joints"]))
    plate = plate_tracking(tru["t"], tru["plate_position"], _commanded_plate(scenario, op))
    return WholeBodyResult(
        scenario=scenario.name, params=scenario.params(), stabilizer=o.stabilizer, support=o.support,
        fell=reason is not None, fall_reason=reason, fell_at_s=fell_at,
        min_cog_margin_m=float(fin.min()) if fin.size else None,
        max_stance_lift_m=float(np.nanmax(lift)) if lift.size else None,
        min_pelvis_height_m=float(np.nanmin(tru["pelvis_height"])) if tru["t"].size else None,
        plate_travel_m=np.ptp(tru["plate_position"], axis=0).tolist() if tru["t"].size else None,
        plate_tracking_error_m=plate[0], plate_lag_s=plate[1], plate_error_at_lag_m=plate[2],
        max_tracking_error_deg=err, max_tracking_error_joint=joint,
        max_rig_following_error_mm=rig_following_errors(tel["rig_ferr"]),
        max_tilt_error_deg=tilt_err,
        contacts=[e.get("support") or "none" for e in op.series.events if e.get("kind") == "CONTACT"],
        supports=[e.get("support") for e in op.series.events if e.get("kind") == "SUPPORT"],
        recovery_steps=[{"cycle": e.get("cycle"), "foot": e.get("foot"), "target": e.get("target")}
                        for e in op.series.events if e.get("kind") == "RECOVERY_STEP"],
        states=state_sequence(tel["state"]), stab_flags=flags, aborted=aborted,
        sim_s=round(sim_s, 3), wall_s=round(wall_s, 3))


def run_whole_body(scenario, options: WholeBodyOptions = WholeBodyOptions(), say: Say | None = None,
                   report: Callable[[WholeBodyResult], None] | None = None) -> WholeBodyResult:
    """One scenario on a fresh bench (module docstring); the figures of its measured part.
    ``report(result)`` gets them before any plot is drawn (``options.plot_dir``), so a plotting
    failure (:class:`.runner.PlotError`) never loses a finished result."""
    say = say or (lambda _m: None)
    if options.support not in ("double", "left"):
        raise ScenarioError(f"support must be double or left, got {options.support!r}")
    with tempfile.TemporaryDirectory(prefix="bipd-whole-body-") as tmp:
        folder = Path(tmp)
        veth = raw_wire(options.transport)
        config, ep = write_config(options.config, True, folder, options.tilt_source,
                                  stabilizer_set=(("support.source", options.support_source),) + options.stabilizer_set,
                                  trajectory_dir=options.trajectory_dir, interface=None if veth is None else veth.mn)
        wire = f"UDP port {ep.udp_port}" if veth is None else f"raw Ethernet on {veth.mn}"
        say(f"starting the biped HIL on the platform and the daemon (stepped lock-step, {wire})")
        procs = Processes(config, ep, True, False, folder, veth=veth)
        try:
            bench: list[RecordingOperator] = []             # the fall test reads the run's events
            with RecordingOperator(ep, procs, say, stepped=True, truth_keys=TRUTH_KEYS,
                                   fell=_fell(options.support, lambda: bench[0].series.events if bench else [])) as op:
                bench.append(op)
                op.wait_ready()
                result = _run(scenario, options, op, config, say)
                if options.plot_dir is not None:
                    result.plots = [str(p) for p in plot_paths(scenario.name, options.plot_dir)]
                if report is not None:
                    report(result)
                if options.plot_dir is not None:
                    _plot(scenario, op, result, options.plot_dir)
                return result
        finally:
            procs.stop()


def _commanded_plate(scenario, op: RecordingOperator) -> Callable[[np.ndarray], np.ndarray | None] | None:
    """A rig motion's commanded plate translation at simulated times t ((N, 3), or None when the motion
    turns the plate), timed from the start of the measured part, where its ``rig_motion`` command
    lands; None for other scenarios."""
    plate_path = getattr(scenario, "plate_path", None)
    t0 = op.sim_time() - op.elapsed()[0]
    return None if plate_path is None else (lambda t: plate_path(t - t0))


def _plot(scenario, op: RecordingOperator, result: WholeBodyResult, out: Path) -> None:
    """The run's PNGs (:func:`.plots.write_whole_body_plots`); any failure is a PlotError."""
    tel, tru = op.series.arrays()
    commanded = _commanded_plate(scenario, op)
    margin = cog_margin(tru["com_world"], tru["support_polygon"], tru["support_count"])
    joints = list(op.call("get_config")["joints"])
    with plot_errors(out):
        write_whole_body_plots(tel, tru, margin, commanded(tru["t"]) if commanded and tru["t"].size else None,
                               joints, _stance(result.support), result.scenario, Path(out))


def _run(scenario, o: WholeBodyOptions, op: RecordingOperator, config: Path, say: Say) -> WholeBodyResult:
    op.command("enable")
    op.wait_state("HOLD")
    op.wait(SETTLE_S)
    if o.support == "left":
        robot = TreeRobot.from_yaml(Path(config).parent / read_yaml(config)["robot"])
        q0 = np.array(op.series.last_telemetry["q"])
        for q in one_foot_postures(robot, q0):
            op.command("move_joints", q=q.tolist(), duration=POSTURE_S)
            op.wait_state("MOVING", "HOLD")
            op.wait_state("HOLD", timeout_s=POSTURE_S + 2.0)
        op.wait(SETTLE_S)
    if o.stabilizer:
        op.command("stabilizer", enable=True, support=o.support)
        op.wait_state("STABILIZING")
        op.wait(SETTLE_S)
    say(f"{scenario.name}: {scenario.params()}, {o.support} support, "
        f"{'stabilizer on' if o.stabilizer else 'posture held in position'}")
    return _evaluate(scenario, o, op, play_measured(scenario, op, say, scenario.name))
