"""Scenarios on the Stewart–Gough rig: a ground motion played under the stabilizing robot
(``rig_motion``), and the searches of the rig's results rows: the largest horizontal acceleration step
and the largest sinusoid amplitude per frequency the robot survives. The bench leg
(deploy/bipd_rig.yaml, :mod:`.runner`): fore-aft, without the stabilizer (posture held), with it, and
with it and the support's measured acceleration folded into its tilt (``tilt.use_acceleration``:
Gastebois 2017, §2.5.4's equivalence principle). BIP 2000 (deploy/bip2000_rig.yaml, :mod:`.whole_body`):
lateral and fore-aft, with the whole-robot stabilizer, without (posture held), and with it and the
support's acceleration; the earthquake row for both. The daemon YAML's robot (a chain or a tree:
:func:`is_tree_config`) chooses the bench.

Motions are the daemon's built-in kinds (controller.daemon.rig.spec: ``KIND:key=value,...`` or a YAML
file of one) or a recorded earthquake CSV (the daemon's ``io.trajectory_dir`` is then the file's
folder: :func:`motion_folder`); every search bounds its amplitudes by what the rig's stroke allows
(:func:`stroke_limit`), so no run is refused by the daemon.
"""
from __future__ import annotations

import math
import tempfile
import time
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from models import ConfigError
from models.rig.stewart import StewartModel
from models.rig.tilt import CONVENTIONS
from models.tree.config import is_tree
from models.common.validation import read_yaml

from controller.daemon.rig.earthquake import read_csv, write_csv
from controller.daemon.rig.motions import MotionError
from controller.daemon.rig.spec import COMMAND_KINDS, motion_from_spec
from controller.daemon.rig.stroke import check_motion

from controller.tools.scenarios.runner import Options, RecordingOperator, Say, ScenarioError, run_scenario
from controller.tools.scenarios.scenarios import SETTLE_S
from controller.tools.scenarios.search import bisect
from controller.tools.scenarios.whole_body import WholeBodyOptions, run_whole_body

RIG_CONFIG = Path(__file__).resolve().parents[3] / "deploy" / "bipd_rig.yaml"
TREE_RIG_CONFIG = RIG_CONFIG.parent / "bip2000_rig.yaml"
QUAKE = RIG_CONFIG.parent / "motions" / "quake_kanai_tajimi.csv"   # synthetic (controller.daemon.rig.earthquake.kanai_tajimi)
FREQUENCIES = (0.2, 0.5, 1.0, 2.0)          # Hz, the sinusoid rows
SINE_CYCLES = 3                              # per search run (plus one-cycle fades, inside them)
STEP_AXIS = SINE_AXIS = "y"                  # the rig's y: the thesis' z_g, towards the toe (fore-aft)
MAX_STEP = 4.0                               # m/s², the step search's upper bound (3x the tipping acceleration g d / h)
MAX_SINE_ACCEL = 4.0                         # m/s², A ω² at most in the sinusoid searches (the stroke may lower it)
MARKERS = ("<!-- rig-results -->", "<!-- /rig-results -->")   # the block rig-results rewrites
PAGE = "leg.md"                              # its results page (docs/results/)
CONFIGS = (("without the stabilizer (posture held)", False, False), ("stabilizer", True, False),
           ("stabilizer + support acceleration", True, True))
TREE_MARKERS = ("<!-- rig-results-bip2000 -->", "<!-- /rig-results-bip2000 -->")
TREE_PAGE = "bip2000.md"                  # its results page (docs/results/)
TREE_FREQUENCIES = (0.5, 1.0, 2.0)           # Hz, BIP 2000's sinusoid rows
TREE_AXES = (("y", "lateral"), ("x", "fore-aft"))   # the rig's axes under BIP 2000 (world y left, x forward)
TREE_CONFIGS = (("whole-robot stabilizer", True, False), ("without (posture held)", False, False),
                ("whole-robot stabilizer + support acceleration", True, True))


def is_tree_config(config: Path) -> bool:
    """Whether the daemon YAML ``config`` names a tree robot (BIP 2000) rather than the bench leg."""
    doc = read_yaml(config)
    robot = doc.get("robot") if isinstance(doc, dict) else None
    if not robot:
        raise ConfigError(str(config), "robot", "missing required key")
    return is_tree(read_yaml(Path(config).resolve().parent / robot))


def motion_spec(text: str, flag: str = "--motion") -> str:
    """``KIND[:k=v,...]`` as given, a YAML file's ``{kind: KIND, ...}`` as one, or an earthquake
    CSV's absolute path; refused (:class:`ScenarioError`) unless the daemon plays it."""
    path = Path(text)
    if path.suffix.lower() in (".yaml", ".yml"):
        doc = read_yaml(path)
        if not isinstance(doc, dict) or doc.get("kind") not in COMMAND_KINDS:
            raise ScenarioError(f"{path}: a rig motion file is a mapping with kind: one of {', '.join(COMMAND_KINDS)}")
        doc = dict(doc)
        kind = doc.pop("kind")
        text = kind + (":" + ",".join(f"{k}={v}" for k, v in doc.items()) if doc else "")
    elif path.suffix.lower() == ".csv":
        try:
            motion_from_spec(text)            # read and made drift-free here; the daemon checks it again
        except MotionError as exc:
            raise ScenarioError(f"{flag}: {exc}") from None
        return str(path.resolve())
    if text.partition(":")[0] not in COMMAND_KINDS:
        raise ScenarioError(f"{flag} {text!r}: expected one of {', '.join(COMMAND_KINDS)} (KIND or KIND:key=value,...) "
                            "or a YAML file of one")
    try:
        motion_from_spec(text)
    except MotionError as exc:
        raise ScenarioError(f"{flag}: {exc}") from None
    return text


def checked_motion(text: str, config: Path, flag: str = "--motion") -> str:
    """:func:`motion_spec` of ``text``, also refused (:class:`ScenarioError`) when the rig of the
    daemon YAML ``config`` cannot make it (controller.daemon.rig.stroke: the leg, time and stroke named):
    checked before any process starts, so a bad motion moves nothing; a tilt in its robot's convention."""
    spec = motion_spec(text, flag)
    convention = CONVENTIONS["tree" if is_tree_config(config) else "chain"]
    try:
        check_motion(rig_model(Options(config=config)), motion_from_spec(spec, convention))
    except MotionError as exc:
        raise ScenarioError(f"{flag}: {exc}") from None
    return spec


def motion_folder(spec: str) -> Path | None:
    """The folder of an earthquake CSV ``spec`` (the daemon's ``io.trajectory_dir``), None otherwise."""
    path = Path(spec)
    return path.resolve().parent if path.suffix.lower() == ".csv" else None


@dataclass(frozen=True)
class RigMotion:
    """The rig plays ``motion`` (controller.daemon.rig.spec) under the leg, then it settles."""
    motion: str
    name: str = field(default="rig", init=False)
    stabilizes: bool = field(default=True, init=False)

    def params(self) -> dict[str, Any]:
        return {"motion": self.motion, "duration_s": motion_from_spec(self.motion).duration}

    def run(self, op: RecordingOperator) -> None:
        op.command("rig_motion", motion=Path(self.motion).name if motion_folder(self.motion) else self.motion)
        op.wait(motion_from_spec(self.motion).duration + SETTLE_S)

    def plate_path(self, tau: np.ndarray) -> np.ndarray | None:
        """The commanded plate translation (N, 3) at ``tau`` s from the motion's start (at rest at home
        before it and after its end); None when the motion also turns the plate (its top face's
        origin then moves with the rotation, not with G alone)."""
        motion = motion_from_spec(self.motion)
        x = motion.sample_many(np.clip(tau, 0.0, motion.duration))[0]
        return None if np.abs(x[:, 3:]).max(initial=0.0) > 0.0 else x[:, :3]


def rig_model(options: Options) -> StewartModel:
    doc = read_yaml(options.config)
    rig = ((doc.get("control") or {}).get("platform") or {}).get("rig")
    if not rig:
        raise ScenarioError(f"{options.config}: control.platform names no Stewart-Gough rig (kind: stewart, rig: ...)")
    return StewartModel.from_yaml(Path(options.config).resolve().parent / rig)


def stroke_limit(model: StewartModel, make, hi: float, iterations: int = 12) -> float:
    """The largest amplitude in (0, hi] whose motion ``make(a)`` the rig's stroke holds (bisection)."""
    def fits(a: float) -> bool:
        try:
            check_motion(model, motion_from_spec(make(a)), step=0.01)
            return True
        except MotionError:
            return False
    if fits(hi):
        return hi
    lo = 0.0
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def _step(axis: str):
    return lambda a: f"step:axis={axis},accel={a:.6g}"


def _sine(f: float, axis: str):
    return lambda a: f"sinusoid:axis={axis},amplitude={a:.6g},frequency={f:g},cycles={SINE_CYCLES}"


def _options(options: Options | WholeBodyOptions, stabilizer: bool, acceleration: bool) -> Options | WholeBodyOptions:
    """``options`` for one column: the stabilizer on or off, and with it ``tilt.use_acceleration`` set
    in the bench's copy of the stabilizer YAML (either bench: :func:`.runner.write_config`)."""
    return replace(options, stabilizer=stabilizer, plot_dir=None,
                   stabilizer_set=(("tilt.use_acceleration", acceleration),) if stabilizer else ())


def largest_step(options: Options | WholeBodyOptions, runs: int, say: Say = lambda _m: None,
                 axis: str = STEP_AXIS, run=run_scenario) -> dict[str, Any]:
    """Bisection of the acceleration step (m/s²) along the rig's ``axis`` the robot survives, each
    run ``run(RigMotion, options, say)`` (the leg's bench by default, :func:`run_whole_body` for BIP 2000)."""
    make = _step(axis)
    hi = stroke_limit(rig_model(options), make, MAX_STEP)
    out = bisect(lambda a: RigMotion(make(a)), hi, runs, options, say, run=run)
    return {"axis": axis, "limit": round(hi, 4), "held": out["held"], "fell": out["fell"], "trials": out["trials"]}


def _sine_bound(frequency: float) -> float:
    """The sinusoid search's upper bound (m): A ω² = MAX_SINE_ACCEL."""
    return MAX_SINE_ACCEL / (2 * math.pi * frequency) ** 2


def largest_sine(frequency: float, options: Options | WholeBodyOptions, runs: int, say: Say = lambda _m: None,
                 axis: str = SINE_AXIS, run=run_scenario) -> dict[str, Any]:
    """Bisection of the sinusoid's amplitude (m) along ``axis`` the robot survives at ``frequency``."""
    make = _sine(frequency, axis)
    hi = stroke_limit(rig_model(options), make, _sine_bound(frequency))
    out = bisect(lambda a: RigMotion(make(a)), hi, runs, options, say, run=run)
    return {"axis": axis, "frequency": frequency, "limit": round(hi, 4), "held": out["held"], "fell": out["fell"],
            "trials": out["trials"]}


def largest_quake(options: Options | WholeBodyOptions, runs: int, say: Say = lambda _m: None, quake: Path = QUAKE,
                  run=run_scenario) -> dict[str, Any]:
    """Bisection of the earthquake's peak acceleration (m/s²) along the rig's y (the leg's fore-aft,
    BIP 2000's lateral) the robot survives: the record scaled (all three axes alike) into a folder of
    scaled copies, the daemon's io.trajectory_dir."""
    t, acc = read_csv(quake)
    peak = float(abs(acc[:, 1]).max())
    with tempfile.TemporaryDirectory(prefix="bipd-quake-") as folder:
        def make(a: float) -> str:
            path = Path(folder) / f"{quake.stem}_{a:.6g}.csv"
            if not path.exists():
                write_csv(path, t, acc * (a / peak), f"{quake.name} scaled to a fore-aft peak of {a:.6g} m/s^2")
            return str(path)
        hi = stroke_limit(rig_model(options), make, MAX_STEP)
        out = bisect(lambda a: RigMotion(make(a)), hi, runs, replace(options, trajectory_dir=Path(folder)), say,
                     run=run)
    return {"file": quake.name, "limit": round(hi, 4), "held": out["held"], "fell": out["fell"],
            "trials": out["trials"]}


def collect(options: Options, runs: int = 5, say: Say = lambda _m: None, quake_only: bool = False) -> dict[str, Any]:
    """Every rig row (``quake_only``: the earthquake's), for the three configurations of :data:`CONFIGS`."""
    rows = []
    for label, stab, acc in CONFIGS:
        o = _options(options, stab, acc)
        tag = lambda m, what: say(f"{label}, {what}: {m}")             # noqa: E731
        row = {"config": label, "quake": largest_quake(o, runs, lambda m: tag(m, "earthquake"))}
        if not quake_only:
            row.update(step=largest_step(o, runs, lambda m: tag(m, "step")),
                       sines=[largest_sine(f, o, runs, lambda m, f=f: tag(m, f"{f:g} Hz")) for f in FREQUENCIES])
        rows.append(row)
    return {"date": date.today().isoformat(), "runs_per_search": runs, "configs": rows}


def quake_row(res: dict[str, Any], what: str = "fore-aft") -> str:
    """A rig table's earthquake row: ``what`` names the rig's y for the robot (the peak scaled)."""
    file = res["configs"][0]["quake"]["file"]
    return (f"| largest peak {what} acceleration survived, synthetic earthquake ({file}, all axes scaled alike) | "
            + " | ".join(_cell(c["quake"], "m/s²") for c in res["configs"]) + " |")


def _cell(r: dict[str, Any], unit: str, scale: float = 1.0, digits: int = 2, accel: float = 0.0,
          bound: float = MAX_STEP) -> str:
    """held (falls at), with the peak acceleration ``accel`` × held when given; held at the first run's
    amplitude (``limit``), that is the rig's stroke, or the search's own upper bound ``bound``."""
    peak = f", {accel * r['held']:.2f} m/s²" if accel and r["held"] else ""
    if r["held"] == 0.0:
        return f"< {scale * r['fell']:.{digits}f} {unit} (falls there)"
    held = f"{scale * r['held']:.{digits}f} {unit}{peak}"
    if r["fell"] is None:
        if r["held"] < r["limit"]:
            return f"≥ {held}"
        return f"≥ {held} ({'the search' if r['limit'] >= 0.99 * bound else 'the rig'}'s limit)"
    return f"{held} (falls at {scale * r['fell']:.{digits}f})"


def _step_row(what: str, searches: list[dict[str, Any]]) -> str:
    """A table row of step searches (one per column)."""
    return (f"| largest acceleration step survived, {what} | "
            + " | ".join(_cell(r, "m/s²") for r in searches) + " |")


def _sine_row(what: str, f: float, searches: list[dict[str, Any]]) -> str:
    """A table row of sinusoid searches at ``f`` Hz (one per column): amplitude and peak A ω²."""
    cells = [_cell(r, "mm", 1e3, 1, (2 * math.pi * f) ** 2, _sine_bound(f)) for r in searches]
    return f"| largest sinusoid amplitude survived, {what}, {f:g} Hz | " + " | ".join(cells) + " |"


def markdown(res: dict[str, Any]) -> str:
    """The leg's rig table (docs/results/leg.md)."""
    rows = [_step_row(f"fore-aft ({STEP_AXIS} of the rig)", [c["step"] for c in res["configs"]])]
    rows += [_sine_row("fore-aft", f, [c["sines"][k] for c in res["configs"]]) for k, f in enumerate(FREQUENCIES)]
    rows.append(quake_row(res))
    return _table("figure", res, rows,
                  f"Measured {res['date']} by `bipd scenario rig-results` ({res['runs_per_search']} runs per "
                  f"bisection; steps held 0.2 s with 20 ms raised-cosine edges, then braked at half; sinusoids "
                  f"{SINE_CYCLES} cycles with one-cycle fades, their peak acceleration A ω² after the amplitude; the "
                  f"earthquake the shipped synthetic record scaled to the peak shown; every amplitude bounded by the "
                  f"rig's stroke; fell as in the table above).")


def _table(corner: str, res: dict[str, Any], rows: list[str], note: str) -> str:
    """A markdown table, a column per configuration of ``res``, and its note below."""
    labels = [c["config"] for c in res["configs"]]
    head = [f"| {corner} | " + " | ".join(labels) + " |", "| --- |" + " --- |" * len(labels)]
    return "\n".join(head + rows) + "\n\n" + note + "\n"


def collect_tree(options: WholeBodyOptions, runs: int = 4, say: Say = lambda _m: None) -> dict[str, Any]:
    """BIP 2000's rig rows: per configuration of :data:`TREE_CONFIGS` and axis of :data:`TREE_AXES`, the
    largest step and the largest sinusoid amplitude at each of :data:`TREE_FREQUENCIES`, and the
    earthquake's largest peak (:func:`largest_quake`; both feet; one bench per run, stepped lock-step),
    with a progress line per search and the wall time."""
    start = time.monotonic()
    kinds = [(a, f) for a, _ in TREE_AXES for f in (None,) + TREE_FREQUENCIES] + [(None, None)]   # the earthquake
    searches = [(label, stab, acc, axis, f) for label, stab, acc in TREE_CONFIGS for axis, f in kinds]
    rows = {label: {"config": label, "stabilizer": stab, "use_acceleration": acc, "steps": {}, "sines": {}}
            for label, stab, acc in TREE_CONFIGS}
    for k, (label, stab, acc, axis, f) in enumerate(searches, 1):
        what = "earthquake" if axis is None else f"{axis} {'step' if f is None else f'{f:g} Hz sinusoid'}"
        say(f"search {k}/{len(searches)} ({time.monotonic() - start:.0f} s so far): {label}, {what}")
        o = replace(_options(options, stab, acc), support="double")
        tag = lambda m, what=what: say(f"{label}, {what}: {m}")             # noqa: E731
        if axis is None:
            rows[label]["quake"] = largest_quake(o, runs, tag, run=run_whole_body)
        elif f is None:
            rows[label]["steps"][axis] = largest_step(o, runs, tag, axis, run_whole_body)
        else:
            rows[label]["sines"].setdefault(axis, []).append(largest_sine(f, o, runs, tag, axis, run_whole_body))
    return {"date": date.today().isoformat(), "runs_per_search": runs, "wall_s": round(time.monotonic() - start, 1),
            "configs": list(rows.values())}


def markdown_tree(res: dict[str, Any]) -> str:
    """BIP 2000's rig table (docs/results/bip2000.md)."""
    rows = []
    for axis, name in TREE_AXES:
        rows.append(_step_row(f"{name} ({axis} of the rig)", [c["steps"][axis] for c in res["configs"]]))
        rows += [_sine_row(name, f, [c["sines"][axis][k] for c in res["configs"]])
                 for k, f in enumerate(TREE_FREQUENCIES)]
    rows.append(quake_row(res, f"{dict(TREE_AXES)['y']} (y of the rig)"))
    return _table("BIP 2000, both feet", res, rows,
                  f"Measured {res['date']} by `bipd scenario rig-results --config deploy/bip2000_rig.yaml` "
                  f"({res['runs_per_search']} runs per bisection, {res['wall_s'] / 60:.0f} min in all; stepped "
                  f"lock-step; motions as in the table above, from {MAX_STEP:g} m/s² (step) or A ω² = "
                  f"{MAX_SINE_ACCEL:g} m/s² (sinusoid); the earthquake the leg's, the peak along the rig's y, from "
                  f"{MAX_STEP:g} m/s² or the rig's stroke; with the support acceleration the stabilizer's "
                  f"`tilt.use_acceleration`; fell = the HIL's latch (pelvis 0.2 m down or tilted 30°) or "
                  f"a sole lifted > 10 mm off the plate; a run that faults holds nothing).")
