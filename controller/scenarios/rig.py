"""Scenarios on the Stewart–Gough rig (deploy/bipd_rig.yaml): a ground motion played under the
stabilizing leg (``rig_motion``), and the searches of the README's rig rows: the largest horizontal
acceleration step and the largest sinusoid amplitude per frequency the leg survives, without the
stabilizer (posture held), with it, and with it and the support's measured acceleration folded into
its tilt (``tilt.use_acceleration``: Gastebois 2017, §2.5.4's equivalence principle).

Motions are the daemon's built-in kinds (controller.rig.spec: ``KIND:key=value,...`` or a YAML
file of one) or a recorded earthquake CSV (the daemon's ``io.trajectory_dir`` is then the file's
folder: :func:`motion_folder`); every search bounds its amplitudes by what the rig's stroke allows
(:func:`stroke_limit`), so no run is refused by the daemon.
"""
from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

from models.stewart import StewartModel
from models.validation import read_yaml

from controller.rig.earthquake import read_csv, write_csv
from controller.rig.motions import MotionError
from controller.rig.spec import COMMAND_KINDS, motion_from_spec
from controller.rig.stroke import check_motion

from .runner import Options, Operator, Say, ScenarioError
from .scenarios import SETTLE_S
from .search import bisect

RIG_CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "bipd_rig.yaml"
QUAKE = RIG_CONFIG.parent / "motions" / "quake_kanai_tajimi.csv"   # synthetic (controller.rig.earthquake.kanai_tajimi)
FREQUENCIES = (0.2, 0.5, 1.0, 2.0)          # Hz, the sinusoid rows
SINE_CYCLES = 3                              # per search run (plus one-cycle fades, inside them)
STEP_AXIS = SINE_AXIS = "y"                  # the rig's y: the thesis' z_g, towards the toe (fore-aft)
MAX_STEP = 4.0                               # m/s², the step search's upper bound (3x the tipping acceleration g d / h)
MAX_SINE_ACCEL = 4.0                         # m/s², A ω² at most in the sinusoid searches (the stroke may lower it)
MARKERS = ("<!-- rig-results -->", "<!-- /rig-results -->")   # the README block rig-results rewrites
CONFIGS = (("without the stabilizer (posture held)", False, False), ("stabilizer", True, False),
           ("stabilizer + support acceleration", True, True))


def motion_spec(text: str) -> str:
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
            raise ScenarioError(str(exc)) from None
        return str(path.resolve())
    if text.partition(":")[0] not in COMMAND_KINDS:
        raise ScenarioError(f"--motion {text!r}: expected one of {', '.join(COMMAND_KINDS)} (KIND or KIND:key=value,...) "
                            "or a YAML file of one")
    try:
        motion_from_spec(text)
    except MotionError as exc:
        raise ScenarioError(str(exc)) from None
    return text


def motion_folder(spec: str) -> Path | None:
    """The folder of an earthquake CSV ``spec`` (the daemon's ``io.trajectory_dir``), None otherwise."""
    path = Path(spec)
    return path.resolve().parent if path.suffix.lower() == ".csv" else None


@dataclass(frozen=True)
class RigMotion:
    """The rig plays ``motion`` (controller.rig.spec) under the leg, then it settles."""
    motion: str
    name: str = field(default="rig", init=False)
    stabilizes: bool = field(default=True, init=False)

    def params(self) -> dict[str, Any]:
        return {"motion": self.motion, "duration_s": motion_from_spec(self.motion).duration}

    def run(self, op: Operator) -> None:
        op.command("rig_motion", motion=Path(self.motion).name if motion_folder(self.motion) else self.motion)
        op.wait(motion_from_spec(self.motion).duration + SETTLE_S)


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


def _step(a: float) -> str:
    return f"step:axis={STEP_AXIS},accel={a:.6g}"


def _sine(f: float):
    return lambda a: f"sinusoid:axis={SINE_AXIS},amplitude={a:.6g},frequency={f:g},cycles={SINE_CYCLES}"


def _options(options: Options, stabilizer: bool, acceleration: bool) -> Options:
    return replace(options, stabilizer=stabilizer, plot_dir=None,
                   stabilizer_set=(("tilt.use_acceleration", acceleration),) if stabilizer else ())


def largest_step(options: Options, runs: int, say: Say = lambda _m: None) -> dict[str, Any]:
    """Bisection of the acceleration step (m/s²) the leg survives."""
    hi = stroke_limit(rig_model(options), _step, MAX_STEP)
    out = bisect(lambda a: RigMotion(_step(a)), hi, runs, options, say)
    return {"limit": round(hi, 4), "held": out["held"], "fell": out["fell"], "trials": out["trials"]}


def largest_sine(frequency: float, options: Options, runs: int, say: Say = lambda _m: None) -> dict[str, Any]:
    """Bisection of the sinusoid's amplitude (m) the leg survives at ``frequency``."""
    make = _sine(frequency)
    hi = stroke_limit(rig_model(options), make, MAX_SINE_ACCEL / (2 * math.pi * frequency) ** 2)
    out = bisect(lambda a: RigMotion(make(a)), hi, runs, options, say)
    return {"frequency": frequency, "limit": round(hi, 4), "held": out["held"], "fell": out["fell"],
            "trials": out["trials"]}


def largest_quake(options: Options, runs: int, say: Say = lambda _m: None, quake: Path = QUAKE) -> dict[str, Any]:
    """Bisection of the earthquake's peak fore-aft acceleration (m/s²) the leg survives: the record
    scaled (all three axes alike) into a folder of scaled copies, the daemon's io.trajectory_dir."""
    t, acc = read_csv(quake)
    peak = float(abs(acc[:, 1]).max())
    with tempfile.TemporaryDirectory(prefix="bipd-quake-") as folder:
        def make(a: float) -> str:
            path = Path(folder) / f"{quake.stem}_{a:.6g}.csv"
            if not path.exists():
                write_csv(path, t, acc * (a / peak), f"{quake.name} scaled to a fore-aft peak of {a:.6g} m/s^2")
            return str(path)
        hi = stroke_limit(rig_model(options), make, MAX_STEP)
        out = bisect(lambda a: RigMotion(make(a)), hi, runs, replace(options, trajectory_dir=Path(folder)), say)
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


def quake_row(res: dict[str, Any]) -> str:
    """The README rig table's earthquake row."""
    file = res["configs"][0]["quake"]["file"]
    return (f"| largest peak fore-aft acceleration survived, synthetic earthquake ({file}, all axes scaled alike) | "
            + " | ".join(_cell(c["quake"], "m/s²") for c in res["configs"]) + " |")


def _cell(r: dict[str, Any], unit: str, scale: float = 1.0, digits: int = 2, accel: float = 0.0) -> str:
    """held (falls at), with the peak acceleration ``accel`` × held when given."""
    peak = f", {accel * r['held']:.2f} m/s²" if accel and r["held"] else ""
    if r["held"] == 0.0:
        return f"< {scale * r['fell']:.{digits}f} {unit} (falls there)"
    held = f"{scale * r['held']:.{digits}f} {unit}{peak}"
    if r["fell"] is None:
        return f"≥ {held} (the rig's limit)" if r["held"] >= r["limit"] else f"≥ {held}"
    return f"{held} (falls at {scale * r['fell']:.{digits}f})"


def markdown(res: dict[str, Any]) -> str:
    """The README's rig table."""
    labels = [c["config"] for c in res["configs"]]
    rows = ["| figure | " + " | ".join(labels) + " |", "| --- |" + " --- |" * len(labels)]
    rows.append(f"| largest acceleration step survived, fore-aft ({STEP_AXIS} of the rig) | "
                + " | ".join(_cell(c["step"], "m/s²") for c in res["configs"]) + " |")
    for k, f in enumerate(FREQUENCIES):
        cells = [_cell(c["sines"][k], "mm", 1e3, 1, (2 * math.pi * f) ** 2) for c in res["configs"]]
        rows.append(f"| largest sinusoid amplitude survived, fore-aft, {f:g} Hz | " + " | ".join(cells) + " |")
    rows.append(quake_row(res))
    note = (f"\nMeasured {res['date']} by `bipd scenario rig-results` ({res['runs_per_search']} runs per bisection; "
            f"steps held 0.2 s with 20 ms raised-cosine edges, then braked at half; sinusoids {SINE_CYCLES} cycles "
            f"with one-cycle fades, their peak acceleration A ω² after the amplitude; the earthquake the shipped "
            f"synthetic record scaled to the peak shown; every amplitude bounded by the "
            f"rig's stroke; fell as in the table above).")
    return "\n".join(rows) + "\n" + note + "\n"

