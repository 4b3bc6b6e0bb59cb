"""``bipd scenario walk``: an offline gait played on the whole BIP 2000 in the HIL, hung from the
gantry by the pelvis (the thesis' walking experiment, Gastebois 2017 §2.6.2) or on the floor.

The bench (stepped lock-step: figures do not depend on the host's speed) boots the daemon on
``deploy/bip2000.yaml`` with ``control.support`` set to the mount and the HIL's biped plant on the
same mount, enables the drives where the robot stands and plays the gait file (``run
trajectory=FILE``: the daemon moves to its first sample, then plays it). Without a gait file, the
thesis' 2 steps at 360 m/h are generated first (``bipd gait``'s generator and checks).
:mod:`.walk_metrics` turns the run into figures.
"""
from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from drivers.config import parse_bus_config
from models.common.validation import read_yaml

from controller.tools.scenarios.runner import Options, PlotError, Say, ScenarioError, Session
from controller.tools.scenarios.scenarios import SETTLE_S, WalkFile, until_hold
from controller.tools.scenarios.walk_metrics import FOLLOWING_BOUND_DEG, KNEE_BOUND_DEG, TRUTH_KEYS, WalkResult, biped_fell, evaluate_walk

WALK_CONFIG = Path(__file__).resolve().parents[3] / "deploy" / "bip2000.yaml"
WALK_STABILIZER = WALK_CONFIG.parent / "robots" / "bip2000_stabilizer.yaml"
THESIS_SPEED_M_H = 360.0
THESIS_STEPS = 2


def mount(hung: bool) -> str:
    return "hung" if hung else "ground"


@dataclass(frozen=True)
class Walk(WalkFile):
    """Playback of a gait file on the whole robot, ``hung`` from the gantry or on the floor, ``stabilized``:
    under the whole-robot stabilizer (``stabilizer enable=true`` during the approach, docs/walking.md)."""
    hung: bool = True
    stabilized: bool = False
    name: str = field(default="walk", init=False)

    def params(self) -> dict[str, Any]:
        return {"gait": str(self.path), "mount": mount(self.hung), "stabilized": self.stabilized}

    def run(self, op) -> None:
        op.command("run", trajectory=str(Path(self.path).resolve()))
        if self.stabilized:
            op.command("stabilizer", enable=True)
        until_hold(op, 600.0)
        op.wait(SETTLE_S)


def walk_options(options: Options, gait: Path, hung: bool, stabilized: bool = False) -> Options:
    """``options`` (its config, speed hooks, record) made a walk bench: no stance move, no
    stabilizer phase (``stabilized``: the daemon's ``stabilizer`` key names BIP 2000's, for the walk), the
    gait's folder as the trajectory folder, the mount in the daemon's ``control.support`` and the HIL's
    plant, the biped's truth and fall test."""
    stab = (("stabilizer", str(WALK_STABILIZER)),) if stabilized else ()
    return replace(options, stabilizer=False, stance=None, trajectory_dir=Path(gait).resolve().parent,
                   daemon_set=options.daemon_set + (("control.support", mount(hung)),) + stab,
                   hil_args=options.hil_args + (("--hung",) if hung else ()),
                   truth_keys=TRUTH_KEYS, fell=biped_fell)


def robot_path(config: Path) -> Path:
    """The robot YAML a daemon YAML names (relative to it)."""
    return Path(config).resolve().parent / read_yaml(config)["robot"]


def bus_axes(config: Path) -> list[str]:
    """The bus axes of a daemon YAML, in the order of the HIL's per-axis truth."""
    return [a.name for a in parse_bus_config(read_yaml(config)["bus"]).axes]


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
    """Where :func:`run_walk` draws its PNGs: ZMP path, tracking."""
    return [out / f"{name}_zmp.png", out / f"{name}_tracking.png"]


def run_walk(gait: Path, options: Options, hung: bool, say: Say | None = None,
             report: Callable[[WalkResult], None] | None = None, stabilized: bool = False) -> WalkResult:
    """One walk of ``gait`` on a fresh bench (:func:`walk_options`); ``report(result)`` gets the
    figures before any plot is drawn (``options.plot_dir``), so a plotting failure (:class:`PlotError`)
    never loses them."""
    from controller.tools.scenarios.plots import plot_walk_tracking, plot_zmp_path
    from controller.tools.scenarios.walk_metrics import support_margins

    o = walk_options(options, gait, hung, stabilized)
    axes = bus_axes(o.config)
    with Session(o, say) as session:
        played = session.play(Walk(Path(gait), hung, stabilized))
        tel, tru = session.op.series.arrays()
        joints = list(session.daemon_config["joints"])
        result = evaluate_walk(str(gait), mount(hung), gait_steps(gait), tel, tru, session.op.series.events,
                               joints, axes, played.stats, played.sim_s, played.wall_s, played.aborted)
    if o.plot_dir is not None:
        result.plots = [str(p) for p in plot_paths(Path(o.plot_dir))]
    if report is not None:
        report(result)
    if o.plot_dir is not None:
        zmp, tracking = plot_paths(Path(o.plot_dir))
        try:
            Path(o.plot_dir).mkdir(parents=True, exist_ok=True)
            margins = support_margins(tru["zmp"], tru["support_polygon"], tru["support_count"])
            plot_zmp_path(tru, margins, f"walk ({mount(hung)}): ZMP/CoP in the support polygon", zmp)
            plot_walk_tracking(tel, tru, joints, axes,
                               KNEE_BOUND_DEG, FOLLOWING_BOUND_DEG, f"walk ({mount(hung)}): tracking", tracking)
        except Exception as e:      # noqa: BLE001 -- whatever broke, the result is out and stays valid
            raise PlotError(f"the plots in {o.plot_dir} could not be drawn ({type(e).__name__}: {e}); "
                            "the result above is complete") from e
    return result


def walk(options: Options, hung: bool, gait: Path | None = None, steps: int = THESIS_STEPS,
         speed_m_h: float = THESIS_SPEED_M_H, say: Say = lambda _m: None,
         report: Callable[[WalkResult], None] | None = None, stabilized: bool = False) -> WalkResult:
    """:func:`run_walk` of ``gait``, or of a gait generated first (``steps`` at ``speed_m_h``) into
    ``options.plot_dir`` when given (kept beside the plots), else into a temporary folder."""
    if gait is not None:
        return run_walk(gait, options, hung, say, report, stabilized)
    if options.plot_dir is not None:
        Path(options.plot_dir).mkdir(parents=True, exist_ok=True)
        return run_walk(generate_gait(Path(options.plot_dir), options.config, steps, speed_m_h, say),
                        options, hung, say, report, stabilized)
    with tempfile.TemporaryDirectory(prefix="bipd-walk-") as folder:
        return run_walk(generate_gait(Path(folder), options.config, steps, speed_m_h, say), options, hung, say,
                        report, stabilized)
