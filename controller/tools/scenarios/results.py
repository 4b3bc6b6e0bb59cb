"""`bipd scenario results`: the figures users ask for, as the markdown tables of docs/results/.

Runs (each a fresh bench, stepped lock-step: verdicts and figures do not depend on the host's
speed): the largest tilt held with and without the stabilizer along pitch, roll and the thesis'
combined direction (bisection, :mod:`.search`), the largest push impulse survived while
stabilizing (forward and left), the squat for the tracking errors, the thesis-magnitude tilt in
eight directions (:func:`tilt_directions`, also ``bipd scenario tilt-directions``), and the thesis
tilt (10°, 20°, 7 s), run :data:`SPEED_RUNS` times alone at the end: lock-step runs are
deterministic, so only the speed differs, and the table gives its median and range (a shared
machine's speed drifts by tens of percent within minutes). ``--write`` rewrites the table between
the markers ``<!-- scenario-results -->`` and ``<!-- /scenario-results -->`` of
``docs/results/leg.md``.

The walk rows (``--part walk``, :func:`collect_walks`): BIP 2000 hung from the gantry (the thesis'
walking experiment, 2 steps) and on the floor (2 and 10 steps), at 360 m/h, with the thesis'
bounds on the knee tracking and the drives' following errors; their own table between
``<!-- walk-results -->`` and ``<!-- /walk-results -->`` of ``docs/results/bip2000.md``.
"""
from __future__ import annotations

import math
import platform
import re
import statistics
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

from controller.tools.scenarios.runner import Options, Say, ScenarioError, run_scenario
from controller.tools.scenarios.scenarios import HOLD_S, THESIS_TILT_S, TILT_DIRECTIONS_DEG, Squat, Tilt
from controller.tools.scenarios.search import TILT_AXES, largest_push, largest_tilt

RESULTS_DIR = Path(__file__).resolve().parents[3] / "docs" / "results"   # the pages ``--write`` rewrites
BEGIN, END = "<!-- scenario-results -->", "<!-- /scenario-results -->"
LEG_PAGE = "leg.md"                         # the results page of BEGIN ... END
SPEED_TARGET = 3.0
SPEED_RUNS = 3
PUSH_DIRECTIONS = ("forward", "left")


def _push(direction: str, options: Options, runs: int, say: Say) -> dict[str, Any]:
    """A push search; one the HIL cannot serve is reported, not raised."""
    try:
        return largest_push(direction, options, runs, say=say)
    except ScenarioError as e:
        return {"direction": direction, "error": str(e).splitlines()[0]}


def tilt_directions(options: Options, say: Say = lambda _m: None, workers: int = 2) -> list[dict[str, Any]]:
    """The thesis-magnitude tilt (7 s quintics, 1 s hold) in each of :data:`TILT_DIRECTIONS_DEG`,
    stabilizer on, each on a fresh bench, ``workers`` at a time: held or fell, min CoG margin."""
    stab = replace(options, stabilizer=True, plot_dir=None)

    def one(alpha: float, beta: float) -> dict[str, Any]:
        r = run_scenario(Tilt(math.radians(alpha), math.radians(beta), THESIS_TILT_S, HOLD_S), stab,
                         lambda m: say(f"tilt ({alpha:+g}, {beta:+g}) deg: {m}"))
        return {"alpha_deg": alpha, "beta_deg": beta, "fell": r.fell, "aborted": r.aborted,
                "fall_reasons": r.fall_reasons, "min_cog_margin_m": r.min_cog_margin_m,
                "states": r.states, "speed_x_realtime": r.speed_x_realtime}

    with ThreadPoolExecutor(workers) as pool:
        runs = [pool.submit(one, a, b) for a, b in TILT_DIRECTIONS_DEG]
        return [f.result() for f in runs]


def direction_rows(directions: list[dict[str, Any]]) -> list[str]:
    """One table row per direction: held or fell, min CoG margin."""
    rows = []
    for d in directions:
        lost = d["fell"] or d["aborted"] is not None
        verdict = "fell" if d["fell"] else f"ended early: {d['aborted']}" if lost else "held"
        margin = "n/a" if d["min_cog_margin_m"] is None else f"{1e3 * d['min_cog_margin_m']:.1f} mm"
        rows.append(f"| thesis-magnitude tilt (α, β) = ({d['alpha_deg']:+g}°, {d['beta_deg']:+g}°), "
                    f"{THESIS_TILT_S:g} s: held / min CoG margin | {verdict} / {margin} | — |")
    return rows


def direction_speed(directions: list[dict[str, Any]]) -> str:
    """The median speed the direction runs went at, and the statement that it does not matter."""
    speeds = sorted(d["speed_x_realtime"] for d in directions if d["speed_x_realtime"])
    at = f"{statistics.median(speeds):.1f}× real time (median)" if speeds else "an unmeasured speed"
    return (f"The tilt directions ran in stepped lock-step at {at}; in stepped lock-step the operator "
            f"owns the simulated clock, so verdicts and figures do not depend on that speed.")


def collect(options: Options, runs: int = 5, say: Say = lambda _m: None, workers: int = 2) -> dict[str, Any]:
    """Every run of the table, ``workers`` benches at a time (lock-step benches wait on each other
    across processes, so two in parallel nearly double the throughput on two cores); the thesis
    tilt runs last, alone, :data:`SPEED_RUNS` times, as its speed is the bench's lock-step speed
    figure."""
    stab, posture = replace(options, stabilizer=True), replace(options, stabilizer=False)
    with ThreadPoolExecutor(workers) as pool:
        tilts = [pool.submit(largest_tilt, axis, o, runs, say=say) for o in (stab, posture) for axis in TILT_AXES]
        pushes = [pool.submit(_push, d, stab, runs, say) for d in PUSH_DIRECTIONS]
        squat = pool.submit(run_scenario, Squat(), replace(options, bolt_foot=True), say)   # thesis §2.6.1
        searches = {"tilts": [f.result() for f in tilts], "pushes": [f.result() for f in pushes],
                    "squat": squat.result().to_dict()}
    searches["directions"] = tilt_directions(options, say, workers)
    tilts = [run_scenario(Tilt(), stab, say).to_dict() for _ in range(SPEED_RUNS)]   # alone: the speed figure
    thesis = dict(tilts[0], speeds_x_realtime=[t["speed_x_realtime"] for t in tilts])
    return {"date": date.today().isoformat(), "machine": platform.processor() or platform.machine(),
            "runs_per_search": runs, **searches, "thesis_tilt": thesis}


def _bracket(held: float, fell: float | None, unit: str) -> str:
    return f"≥ {held:.1f} {unit} (limit)" if fell is None else f"{held:.1f} {unit} (falls at {fell:.1f})"


def markdown(res: dict[str, Any]) -> str:
    """The leg's table (docs/results/leg.md)."""
    rows = ["| figure | with stabilizer | without (posture held) |", "| --- | --- | --- |"]
    by = {(t["axis"], t["stabilizer"]): t for t in res["tilts"]}
    for axis, label in (("pitch", "pitch β"), ("roll", "roll α"), ("combined", "combined, α = β/2 (β shown)")):
        cells = [_bracket(by[axis, s]["held_deg"], by[axis, s]["fell_deg"], "°") for s in (True, False)]
        rows.append(f"| largest tilt held, {label} | {cells[0]} | {cells[1]} |")
    for p in res["pushes"]:
        cell = (f"not measured: {p['error']}" if "error" in p else
                f"{p['impulse_Ns']:.1f} N s ({_bracket(p['held_N'], p['fell_N'], 'N')} for {p['duration_s']:g} s)")
        rows.append(f"| largest push impulse survived, {p['direction']}, on the hip | {cell} | — |")
    tilt, squat = res["thesis_tilt"], res["squat"]
    rows.append(f"| thesis tilt (10°, 20°, 7 s): fell / min CoG margin / max tracking error | "
                f"{'yes' if tilt['fell'] else 'no'} / {1e3 * (tilt['min_cog_margin_m'] or 0):.1f} mm / "
                f"{tilt['max_tracking_error_deg']:.3f}° | — |")
    fell = f", fell: {squat['fall_reasons'][0]}" if squat["fell"] else ""
    rows.append(f"| thesis squat, foot bolted: max tracking error (thesis walking: ≤ 1.3°) | — | "
                f"{squat['max_tracking_error_deg']:.3f}° ({squat['max_tracking_error_joint']}{fell}) |")
    rows += direction_rows(res["directions"])
    speeds = sorted(tilt.get("speeds_x_realtime") or [tilt["speed_x_realtime"]])
    speed = statistics.median(speeds)
    spread = f", median of {len(speeds)} runs: {speeds[0]:.1f}–{speeds[-1]:.1f}" if len(speeds) > 1 else ""
    rows.append(f"| lock-step speed, thesis tilt (target ≥ {SPEED_TARGET:g}× real time) | "
                f"{speed:.1f}× ({'meets' if speed >= SPEED_TARGET else 'misses'}{spread}) | — |")
    note = (f"\nMeasured {res['date']} on {res['machine']} by `bipd scenario results` ({res['runs_per_search']} "
            f"runs per bisection, 3 s quintics + 1 s hold in the searches; fell = foot lifted > 10 mm, "
            f"tipped > 5° or hip below 0.30 m; a run that faults holds nothing). "
            f"{direction_speed(res['directions'])}")
    return "\n".join(rows) + "\n" + note + "\n"


def update_readme(path: Path, table: str, markers: tuple[str, str] = (BEGIN, END)) -> None:
    """Replace the text between the result markers of ``path`` (a results page)."""
    begin, end = markers
    if not path.is_file():
        raise ScenarioError(f"{path}: no such results page to rewrite")
    text = path.read_text()
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise ScenarioError(f"{path} has no {begin} ... {end} block to rewrite")
    path.write_text(pattern.sub(lambda _m: f"{begin}\n{table}{end}", text))


WALK_MARKERS = ("<!-- walk-results -->", "<!-- /walk-results -->")   # the block --part walk rewrites
WALK_PAGE = "bip2000.md"                   # the results page of WALK_MARKERS
WALK_RUNS = ((True, 2), (False, 2), (False, 10))
"""(hung, steps) of the walk rows: the thesis' hung experiment, then on the floor, 2 and 10 steps."""


def collect_walks(options: Options, say: Say = lambda _m: None) -> dict[str, Any]:
    """Each walk of :data:`WALK_RUNS` at the thesis' 360 m/h on a fresh BIP 2000 bench (stepped
    lock-step), its gait generated once per number of steps."""
    import tempfile

    from controller.tools.scenarios.walk import THESIS_SPEED_M_H, WALK_CONFIG, generate_gait, run_walk

    o = replace(options, config=WALK_CONFIG if options.config == Options().config else options.config,
                plot_dir=None)
    walks = []
    with tempfile.TemporaryDirectory(prefix="bipd-walks-") as folder:
        gaits = {steps: generate_gait(Path(folder), o.config, steps, THESIS_SPEED_M_H, say)
                 for steps in sorted({s for _, s in WALK_RUNS})}
        for hung, steps in WALK_RUNS:
            r = run_walk(gaits[steps], o, hung, lambda m, h=hung, s=steps: say(f"walk ({'hung' if h else 'ground'}, "
                                                                                f"{s} steps): {m}"))
            walks.append(r.to_dict())
    return {"date": date.today().isoformat(), "machine": platform.processor() or platform.machine(),
            "speed_m_h": THESIS_SPEED_M_H, "walks": walks}


def _deg(value: float | None, passed: bool | None) -> str:
    return "n/a" if value is None else f"{value:.3f}° ({'pass' if passed else 'FAIL'})"


def walk_markdown(res: dict[str, Any]) -> str:
    """The walk table (docs/results/bip2000.md): one row per walk, the thesis' bounds as pass/fail beside the figures."""
    from controller.tools.scenarios.walk_metrics import FOLLOWING_BOUND_DEG, KNEE_BOUND_DEG

    rows = [f"| BIP 2000 walk, {res['speed_m_h']:g} m/h | fell? / pelvis travel | knee tracking error "
            f"(thesis ≤ {KNEE_BOUND_DEG:g}°) | drive following error, motor turn "
            f"(thesis ≤ {FOLLOWING_BOUND_DEG:g}°) | min ZMP margin | lock-step speed |",
            "| --- | --- | --- | --- | --- | --- |"]
    for w in res["walks"]:
        travel = "n/a" if w["distance_m"] is None else f"{w['distance_m']:.2f} m"
        fell = (f"fell at t = {w['fell_at_s']:.2f} s / {travel}" if w["fell"] else
                f"no / {travel}" if w["completed"] else f"ended early: {w['aborted']} / {travel}")
        zmp = "n/a" if w["min_zmp_margin_m"] is None else f"{round(1e3 * w['min_zmp_margin_m'], 1) + 0.0:.1f} mm"
        axis = f" ({w['following_error_axis']})" if w["following_error_axis"] else ""
        speed = "n/a" if w["speed_x_realtime"] is None else f"{w['speed_x_realtime']:.1f}×"
        rows.append(f"| {w['mount']}, {w['steps']} steps | {fell} | {_deg(w['knee_error_deg'], w['knee_pass'])} | "
                    f"{_deg(w['following_error_max_deg'], w['following_pass'])}{axis} | {zmp} | {speed} |")
    note = (f"\nMeasured {res['date']} on {res['machine']} by `bipd scenario results --part walk` (gaits of "
            "`bipd gait`, played through the daemon on `deploy/bip2000.yaml` against the HIL's MuJoCo biped; "
            "fell = the HIL's latch: pelvis 0.2 m below its start or tilted 30°; pelvis travel forward to the "
            "fall or the end; hung from the gantry the pelvis does not travel).")
    return "\n".join(rows) + "\n" + note + "\n"
