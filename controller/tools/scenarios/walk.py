"""``bipd scenario walk``: an offline gait played on the whole BIP 2000 in the HIL, hung from the
gantry by the pelvis (the thesis' walking experiment, Gastebois 2017 §2.6.2) or on the floor.

The bench (stepped lock-step: figures do not depend on the host's speed) boots the daemon on
``deploy/bip2000.yaml`` with ``control.support`` set to the mount and the HIL's biped plant on the
same mount, enables the drives where the robot stands and plays the gait file (``run
trajectory=FILE``: the daemon moves to its first sample, then plays it). Without a gait file, the
thesis' 2 steps at 360 m/h are generated first (``bipd gait``'s generator and checks).
:mod:`.walk_metrics` turns the run into figures.

On the floor the ground may differ from the one the gait was planned for, and nothing tells the
gait or the daemon: a :class:`~drivers.sim.hil.terrain.Terrain` (the floor tilted, a step ahead) is
built into the HIL's MJCF only. A :class:`WalkPush` is an impulse (N s) on the pelvis spread evenly
over :data:`PUSH_S` at a time of the gait file (from the first sample of its playback, the end of
the daemon's approach move, seen as the first telemetry frame with a support phase; stepped
lock-step, so at an exact cycle). The walk runs open-loop (the gait's joint references, held in
position by the drives) unless a stabilized walk of :data:`WALK_STABILIZERS` is asked for
(``whole-body``: the gait played under the whole-robot stabilizer, docs/walking.md).
"""
from __future__ import annotations

import csv
import json
import math
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from drivers.config import parse_bus_config
from drivers.sim.hil.terrain import Terrain
from models.common.support import SUPPORT_NAMES, DOUBLE
from models.common.validation import read_yaml

from controller.tools.scenarios.runner import Options, PlotError, Say, ScenarioError, Session
from controller.tools.scenarios.scenarios import WalkFile, push
from controller.tools.scenarios.whole_body import PUSH_DIRECTIONS
from controller.tools.scenarios.walk_metrics import (FOLLOWING_BOUND_DEG, KNEE_BOUND_DEG, TRUTH_KEYS, WalkResult, biped_fell,
                                                     adapted_landings, edge_landings, evaluate_walk, landings,
                                                     toe_downs, side_downs, strikes)

WALK_CONFIG = Path(__file__).resolve().parents[3] / "deploy" / "bip2000.yaml"
WALK_STABILIZER = WALK_CONFIG.parent / "robots" / "bip2000_stabilizer.yaml"
THESIS_SPEED_M_H = 360.0
THESIS_STEPS = 2
PUSH_S = 0.1             # s, a walk push's impulse is spread evenly over this
PUSH_BODY = "pelvis"
PUSH_SIDES = {"forward": "forward", "back": "backward", "left": "left", "right": "right"}
"""The directions of ``--push NS@T:DIRECTION`` and the world axes they name (:data:`PUSH_DIRECTIONS`)."""
WALK_STABILIZERS: dict[str, tuple[tuple[str, Any], ...]] = {"whole-body": (("stabilizer", str(WALK_STABILIZER)),)}
"""Stabilized walks by mode name: the daemon settings (dotted key, value) that make the gait's playback
stabilized (the operator then sends ``stabilizer enable=true`` during the approach)."""
OPEN_LOOP = "none: the open-loop gait"
NO_ESTIMATE = "the stance sole never lay flat: no slope estimated"
SLOPE_NOTE = "the ground's pitch (> 0 uphill) and roll (> 0 rising to the left), deg: the stance sole lying flat (docs/stabilizer.md)"
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


def mount(hung: bool) -> str:
    return "hung" if hung else "ground"


@dataclass(frozen=True)
class WalkPush:
    """An impulse (N s) on the pelvis over :data:`PUSH_S`, ``at_s`` s into the gait file's playback,
    towards ``direction`` (a key of :data:`PUSH_SIDES`)."""
    impulse_Ns: float
    at_s: float
    direction: str = "forward"

    @property
    def force_N(self) -> float:
        return self.impulse_Ns / PUSH_S

    def describe(self) -> dict[str, Any]:
        return {"impulse_Ns": self.impulse_Ns, "at_s": self.at_s, "direction": self.direction,
                "force_N": round(self.force_N, 6), "duration_s": PUSH_S, "body": PUSH_BODY}


def parse_push(text: str) -> WalkPush:
    """``NS@T[:DIRECTION]`` (N s, s into the gait; forward by default) as a :class:`WalkPush`; a
    malformed one is a ValueError saying what is wrong."""
    m = re.fullmatch(rf"\s*({_NUMBER})\s*@\s*({_NUMBER})\s*(?::\s*(\w+)\s*)?", text)
    if m is None:
        raise ValueError(f"{text!r}: expected NS@T[:DIRECTION], e.g. 10@5.2:left (10 N s, 5.2 s into the gait)")
    impulse, at, direction = float(m.group(1)), float(m.group(2)), m.group(3) or "forward"
    if direction not in PUSH_SIDES:
        raise ValueError(f"{text!r}: unknown direction {direction!r} (known: {', '.join(PUSH_SIDES)})")
    if impulse <= 0.0 or at < 0.0:
        raise ValueError(f"{text!r}: the impulse must be > 0 N s and the time >= 0 s")
    return WalkPush(impulse, at, direction)


def playback_started(op) -> bool:
    """Whether the daemon plays the file (its approach move is over): a support phase in telemetry."""
    last = op.series.last_telemetry
    return last is not None and last["support"] >= 0.0


@dataclass(frozen=True)
class Walk(WalkFile):
    """Playback of a gait file on the whole robot, ``hung`` from the gantry or on the floor, with a
    push during it when given."""
    hung: bool = True
    push: WalkPush | None = None
    stabilized: bool = False
    name: str = field(default="walk", init=False)

    def params(self) -> dict[str, Any]:
        return {"gait": str(self.path), "mount": mount(self.hung),
                "push": None if self.push is None else self.push.describe(), "stabilized": self.stabilized}

    def during(self, op) -> None:
        """The stabilizer enabled during the approach (``stabilized``), then the push, ``at_s`` after
        the first frame of the file's playback."""
        if self.stabilized:
            op.command("stabilizer", enable=True)
        p = self.push
        if p is not None:
            op.wait_until(lambda: playback_started(op), 600.0, "the start of the gait's playback")
            op.wait(p.at_s)
            push(op, PUSH_BODY, p.force_N, PUSH_DIRECTIONS[PUSH_SIDES[p.direction]], PUSH_S)


def walk_options(options: Options, gait: Path, hung: bool, terrain: Terrain | None = None,
                 stabilizer: str | None = None) -> Options:
    """``options`` (its config, speed hooks, record) made a walk bench: no stance move, the
    stabilized walk ``stabilizer`` (:data:`WALK_STABILIZERS`) or none, the gait's folder as the
    trajectory folder, the mount in the daemon's ``control.support`` and the HIL's plant, the
    ``terrain`` in the HIL's only, the biped's truth and fall test."""
    return replace(options, stabilizer=False, stance=None, trajectory_dir=Path(gait).resolve().parent,
                   daemon_set=options.daemon_set + (("control.support", mount(hung)),)
                   + (WALK_STABILIZERS[stabilizer] if stabilizer is not None else ()),
                   hil_args=options.hil_args + (("--hung",) if hung else ())
                   + (terrain.args() if terrain is not None else ()),
                   truth_keys=TRUTH_KEYS, fell=biped_fell)


def mid_single_support(gait: Path) -> float:
    """The middle (s, gait time) of the first single-support phase of a gait file (its ``support``
    column); a file without one is a :class:`ScenarioError`."""
    with open(gait, encoding="utf-8", newline="") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        start = None
        for row in rows:
            single = row.get("support") in SUPPORT_NAMES and row["support"] != SUPPORT_NAMES[DOUBLE]
            if single and start is None:
                start = float(row["t"])
            elif not single and start is not None:
                return 0.5 * (start + float(row["t"]))
    raise ScenarioError(f"{gait}: no single-support phase in its support column")


def robot_path(config: Path) -> Path:
    """The robot YAML a daemon YAML names (relative to it)."""
    return Path(config).resolve().parent / read_yaml(config)["robot"]


def bus_axes(config: Path) -> list[str]:
    """The bus axes of a daemon YAML, in the order of the HIL's per-axis truth."""
    return [a.name for a in parse_bus_config(read_yaml(config)["bus"]).axes]


def following_window_deg(config: Path) -> float:
    """The drives' smallest following-error window (0x6065) of a daemon YAML, degrees of motor turn."""
    return math.degrees(min(a.drive.following_error_limit for a in parse_bus_config(read_yaml(config)["bus"]).axes))


def gait_steps(gait: Path) -> int | None:
    """The number of steps of a ``bipd gait`` file (its sidecar), None without one."""
    try:
        return int(json.loads(Path(f"{gait}.json").read_text(encoding="utf-8"))["params"]["steps"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def generate_gait(folder: Path, config: Path, steps: int, speed_m_h: float, say: Say) -> Path:
    """The checked gait of ``steps`` steps at ``speed_m_h`` for the robot of ``config``, written
    with its sidecar into ``folder``; a gait that fails its checks is a :class:`ScenarioError`."""
    from models.gait.plan import GaitParams
    from models.gait.wholebody import GaitError
    from models.tree.robot import TreeRobot

    from controller.tools.gait import make_gait, write_gait

    robot = TreeRobot.from_yaml(robot_path(config))
    say(f"generating the gait: {steps} steps at {speed_m_h:g} m/h for {robot.model.name}")
    try:
        gait, report, seconds = make_gait(robot, GaitParams(speed=speed_m_h / 3600.0, steps=steps), say)
    except GaitError as e:
        raise ScenarioError(str(e)) from None
    path = Path(folder) / f"walk-{steps}-steps-{speed_m_h:g}-m_h.csv"
    write_gait(path, robot, gait, report, seconds)
    say(f"gait written to {path} ({len(gait.t)} samples, {gait.t[-1]:.2f} s, generated in {seconds:.1f} s)")
    return path


def plot_paths(out: Path, name: str = "walk") -> list[Path]:
    """Where :func:`run_walk` draws its PNGs: ZMP path, tracking, feet against the plan."""
    return [out / f"{name}_zmp.png", out / f"{name}_tracking.png", out / f"{name}_feet.png"]


def run_walk(gait: Path, options: Options, hung: bool, say: Say | None = None,
             report: Callable[[WalkResult], None] | None = None, terrain: Terrain | None = None,
             push: WalkPush | None = None, stabilizer: str | None = None) -> WalkResult:
    """One walk of ``gait`` on a fresh bench (:func:`walk_options`) on ``terrain``, pushed by
    ``push``, stabilized by the mode ``stabilizer`` of :data:`WALK_STABILIZERS` (None: open-loop);
    ``report(result)`` gets the figures before any plot is drawn (``options.plot_dir``), so a plotting
    failure (:class:`PlotError`) never loses them."""
    from controller.tools.scenarios.plots import plot_walk_feet, plot_walk_tracking, plot_zmp_path
    from controller.tools.scenarios.walk_metrics import plan_phases, support_margins

    o = walk_options(options, gait, hung, terrain, stabilizer)
    axes = bus_axes(o.config)
    if say is not None:
        say(f"walk stabilizer: {stabilizer or OPEN_LOOP}")
    with Session(o, say) as session:
        played = session.play(Walk(Path(gait), hung, push, stabilizer is not None))
        tel, tru = session.op.series.arrays()
        joints = list(session.daemon_config["joints"])
        result = evaluate_walk(str(gait), mount(hung), gait_steps(gait), tel, tru, session.op.series.events,
                               joints, axes, played.stats, played.sim_s, played.wall_s, played.aborted)
        period = float(session.daemon_config["period"])
        events = session.op.series.events
        result.edges = edge_landings(events, period)
        result.touchdowns = adapted_landings(events, period)
        result.toe_downs = toe_downs(events, period)
        result.side_downs = side_downs(events, period)
        result.strikes = strikes(events, period)
        result.landings = [] if hung else landings(events, period, tru)
    result.terrain = (terrain or Terrain()).describe()
    result.push = None if push is None else push.describe()
    result.stabilizer = stabilizer
    result.stabilizer_note = stabilizer or OPEN_LOOP
    result.estimated_slope_note = NO_ESTIMATE if result.estimated_slope_deg is None else SLOPE_NOTE
    if o.plot_dir is not None:
        result.plots = [str(p) for p in plot_paths(Path(o.plot_dir))]
    if report is not None:
        report(result)
    if o.plot_dir is not None:
        zmp, tracking, feet = plot_paths(Path(o.plot_dir))
        try:
            Path(o.plot_dir).mkdir(parents=True, exist_ok=True)
            margins = support_margins(tru["zmp"], tru["support_polygon"], tru["support_count"])
            plot_zmp_path(tru, margins, f"walk ({mount(hung)}): ZMP/CoP in the support polygon", zmp, hung)
            plot_walk_tracking(tel, tru, joints, axes,
                               KNEE_BOUND_DEG, FOLLOWING_BOUND_DEG, f"walk ({mount(hung)}): tracking", tracking)
            plot_walk_feet(tru, plan_phases(events, period), following_window_deg(o.config), axes,
                           f"walk ({mount(hung)}): the feet", feet)
        except Exception as e:      # noqa: BLE001 -- whatever broke, the result is out and stays valid
            raise PlotError(f"the plots in {o.plot_dir} could not be drawn ({type(e).__name__}: {e}); "
                            "the result above is complete") from e
    return result


def walk(options: Options, hung: bool, gait: Path | None = None, steps: int = THESIS_STEPS,
         speed_m_h: float = THESIS_SPEED_M_H, say: Say = lambda _m: None,
         report: Callable[[WalkResult], None] | None = None, **variant: Any) -> WalkResult:
    """:func:`run_walk` of ``gait`` (``variant``: its terrain, push, stabilizer), or of a gait
    generated first (``steps`` at ``speed_m_h``) into ``options.plot_dir`` when given (kept beside
    the plots), else into a temporary folder."""
    if gait is not None:
        return run_walk(gait, options, hung, say, report, **variant)
    if options.plot_dir is not None:
        Path(options.plot_dir).mkdir(parents=True, exist_ok=True)
        return run_walk(generate_gait(Path(options.plot_dir), options.config, steps, speed_m_h, say),
                        options, hung, say, report, **variant)
    with tempfile.TemporaryDirectory(prefix="bipd-walk-") as folder:
        return run_walk(generate_gait(Path(folder), options.config, steps, speed_m_h, say), options, hung, say,
                        report, **variant)
