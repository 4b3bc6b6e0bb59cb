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
``<!-- walk-results -->`` and ``<!-- /walk-results -->`` of ``docs/results/bip2000.md``; then the walks
on ground the gait was not told about (:func:`collect_ground`: tilted floors, steps, pushes walking
and standing, open-loop and stabilized), between ``<!-- walk-ground-results -->`` and
``<!-- /walk-ground-results -->`` of the same page.
"""
from __future__ import annotations

import math
import platform
import re
import statistics
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from datetime import date
from pathlib import Path
from types import SimpleNamespace
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


def check_page(path: Path, markers: tuple[str, str] = (BEGIN, END)) -> tuple[str, re.Pattern[str]]:
    """The text of ``path`` (a results page) and the pattern of its block between ``markers``;
    :class:`ScenarioError` naming the page when there is no such page or block (checked before a
    results command runs, so hours of runs are never lost to a wrong ``--write`` folder)."""
    begin, end = markers
    if not path.is_file():
        raise ScenarioError(f"{path}: no such results page to rewrite")
    text = path.read_text()
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise ScenarioError(f"{path} has no {begin} ... {end} block to rewrite")
    return text, pattern


def update_readme(path: Path, table: str, markers: tuple[str, str] = (BEGIN, END)) -> None:
    """Replace the text between the result markers of ``path`` (a results page)."""
    text, pattern = check_page(path, markers)
    begin, end = markers
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


GROUND_MARKERS = ("<!-- walk-ground-results -->", "<!-- /walk-ground-results -->")   # --part walk's second table
GROUND_STEPS = 2                           # the 2-step walk: enough to meet the ground, short on a shared host
STEP_X_M = 0.175                           # m, the step's edge: just ahead of the soles' toes at the start (0.170 m)
GROUNDS = (("flat", {}),
           ("pitch +2° (uphill)", {"pitch_deg": 2.0}), ("pitch −2° (downhill)", {"pitch_deg": -2.0}),
           ("pitch +4° (uphill)", {"pitch_deg": 4.0}), ("pitch −4° (downhill)", {"pitch_deg": -4.0}),
           ("roll +2° (left side up)", {"roll_deg": 2.0}), ("roll −2° (right side up)", {"roll_deg": -2.0}),
           ("step up 1 cm", {"step": f"0.01@{STEP_X_M}"}), ("step down 1 cm", {"step": f"-0.01@{STEP_X_M}"}),
           ("step up 2 cm", {"step": f"0.02@{STEP_X_M}"}), ("step down 2 cm", {"step": f"-0.02@{STEP_X_M}"}))
"""(row label, :func:`drivers.sim.hil.terrain.terrain` arguments) of the walks on unknown ground."""
WALK_PUSHES = ("forward", "left")
WALK_PUSH_MAX_NS = 40.0                    # N s, the walk push search's first (upper) trial
WALK_PUSH_RUNS = 4                         # runs per walk push bisection: 40 / 2^3 = 5 N s resolution
STANDING_PUSH_RUNS = 4                     # runs per standing push bisection (whole-body bench)


def _walk_figures(r) -> dict[str, Any]:
    """What the ground table keeps of a walk (a :class:`~.walk_metrics.WalkResult`)."""
    return {k: getattr(r, k) for k in ("fell", "fell_at_s", "completed", "aborted", "distance_m",
                                         "following_error_max_deg", "following_error_axis", "min_zmp_margin_m",
                                         "zmp_outside_s", "terrain", "push", "stabilizer", "estimated_slope_deg")}


def collect_ground(options: Options, say: Say = lambda _m: None, workers: int = 2) -> dict[str, Any]:
    """The walks on unknown ground (:data:`GROUNDS`), the largest push survived mid-single-support
    (:data:`WALK_PUSHES`, bisection over N s) and standing (the whole-body bench, with and without its
    stabilizer), ``workers`` benches at a time. Each walk row runs open-loop and with every stabilized
    walk of :data:`~.walk.WALK_STABILIZERS` (the first)."""
    import tempfile

    from drivers.sim.hil.terrain import terrain
    from controller.tools.scenarios import whole_body_results as wr
    from controller.tools.scenarios.search import bisect
    from controller.tools.scenarios.walk import (THESIS_SPEED_M_H, WALK_CONFIG, WALK_STABILIZERS, WalkPush,
                                                 generate_gait, mid_single_support, run_walk)
    from controller.tools.scenarios.whole_body import WholeBodyOptions

    o = replace(options, config=WALK_CONFIG if options.config == Options().config else options.config,
                plot_dir=None)
    modes = (None, *WALK_STABILIZERS)[:2]      # open-loop, then the first stabilized walk when one exists

    def walk(gait: Path, label: str, mode: str | None, **variant: Any):
        return run_walk(gait, o, False, lambda m: say(f"{label} ({mode or 'open-loop'}): {m}"),
                        stabilizer=mode, **variant)

    def ground(gait: Path, label: str, kw: dict, mode: str | None) -> dict[str, Any]:
        return _walk_figures(walk(gait, label, mode, terrain=terrain(**kw)))

    def pushed(gait: Path, direction: str, at: float, mode: str | None) -> dict[str, Any]:
        label = f"walk push {direction} at {at:.2f} s"
        out = bisect(lambda ns: WalkPush(ns, at, direction), WALK_PUSH_MAX_NS, WALK_PUSH_RUNS, None,
                     lambda m: say(f"{label} ({mode or 'open-loop'}): {m}"),
                     run=lambda p, _o, s: _searched(walk(gait, label, mode, push=p)))
        return {"direction": direction, "at_s": at, "stabilizer": mode, "held_Ns": out["held"],
                "fell_Ns": out["fell"], "trials": out["trials"]}

    with tempfile.TemporaryDirectory(prefix="bipd-ground-") as folder:
        gait = generate_gait(Path(folder), o.config, GROUND_STEPS, THESIS_SPEED_M_H, say)
        at = round(mid_single_support(gait), 3)
        with ThreadPoolExecutor(workers) as pool:
            rows = {label: [pool.submit(ground, gait, label, kw, m) for m in modes] for label, kw in GROUNDS}
            pushes = [({"direction": d, "stabilizer": m}, pool.submit(pushed, gait, d, at, m))
                      for d in WALK_PUSHES for m in modes]
            standing = [({"direction": d, "stabilizer": s},
                         pool.submit(wr.largest_push, d, WholeBodyOptions(stabilizer=s), STANDING_PUSH_RUNS, say))
                        for s in (True, False) for d in wr.PUSHES]
            res = {"grounds": {label: [_outcome(f, label, say) for f in fs] for label, fs in rows.items()},
                   "walk_pushes": [_outcome(f, "walk push", say, **k) for k, f in pushes],
                   "standing_pushes": [_outcome(f, "standing push", say, **k) for k, f in standing]}
    return {"date": date.today().isoformat(), "machine": platform.processor() or platform.machine(),
            "speed_m_h": THESIS_SPEED_M_H, "steps": GROUND_STEPS, "step_x_m": STEP_X_M, "push_at_s": at,
            "stabilized_walks": list(WALK_STABILIZERS), **res}


def _outcome(future: Future, label: str, say: Say, **keys: Any) -> dict[str, Any]:
    """A run's figures, or ``keys`` (what the run was: direction, stabilizer) with ``error`` naming why
    it could not give them: one run that raises costs its own cell, not the whole table's hours of runs."""
    try:
        return future.result()
    except Exception as e:       # noqa: BLE001 - any run's failure is reported in its cell and said
        say(f"{label}: the run failed: {type(e).__name__}: {e}")
        return {**keys, "error": f"{type(e).__name__}: {e}"}


def _searched(r) -> SimpleNamespace:
    """A walk as :func:`.search.bisect` reads a run (its margin: the ZMP's)."""
    return SimpleNamespace(fell=r.fell, aborted=r.aborted, min_cog_margin_m=r.min_zmp_margin_m)


def _ground_cell(w: dict[str, Any]) -> str:
    """A walk on unknown ground: completed or fell, travel, following error, min ZMP margin, and the
    ground's pitch / roll the robot estimated by the end when it knew one."""
    if failed := _failed(w):
        return failed
    travel = "n/a" if w["distance_m"] is None else f"{w['distance_m']:.2f} m"
    fe = "n/a" if w["following_error_max_deg"] is None else f"{w['following_error_max_deg']:.2f}°"
    zmp = "n/a" if w["min_zmp_margin_m"] is None else f"{round(1e3 * w['min_zmp_margin_m'], 1) + 0.0:.1f} mm"
    verdict = (f"**fell** at {w['fell_at_s']:.2f} s" if w["fell"] else "completed" if w["completed"]
               else f"ended early ({w['aborted']})")
    slope = w.get("estimated_slope_deg")
    seen = "" if not slope else f"; slope est. {slope['pitch']:+.2f}° / {slope['roll']:+.2f}°"
    return f"{verdict}, {travel}; FE {fe}; ZMP {zmp}{seen}"


def _failed(run: dict[str, Any]) -> str | None:
    """The cell of a run that failed (:func:`_outcome`), None for one that gave figures."""
    return f"run failed ({run['error']})" if "error" in run else None


def _pushed_cell(held: float, fell: float | None) -> str:
    if fell is None:
        return f"≥ {held:.1f} N s (the search's top)"
    return f"< {fell:.1f} N s (falls there)" if held == 0.0 else f"{held:.1f} N s (falls at {fell:.1f})"


def ground_markdown(res: dict[str, Any]) -> str:
    """The unknown-ground table (docs/results/bip2000.md): one row per ground or push, open-loop beside
    stabilized."""
    none = "n/a: no stabilized walk in this run"
    rows = [f"| BIP 2000, {res['steps']} steps at {res['speed_m_h']:g} m/h, ground not told to the gait | "
            "without stabilizer (open-loop gait) | with stabilizer |", "| --- | --- | --- |"]
    for label, runs in res["grounds"].items():
        cells = [_ground_cell(w) for w in runs] + [none] * (2 - len(runs))
        rows.append(f"| {label} | {cells[0]} | {cells[1]} |")
    for direction in WALK_PUSHES:
        found = [p for p in res["walk_pushes"] if p["direction"] == direction]
        cells = [_failed(p) or _pushed_cell(p["held_Ns"], p["fell_Ns"]) for p in found] + [none] * (2 - len(found))
        rows.append(f"| largest push survived, {direction}, pelvis, {res['push_at_s']:.2f} s into the gait "
                    f"(mid-single-support) | {cells[0]} | {cells[1]} |")
    for direction in sorted({p["direction"] for p in res["standing_pushes"]}):
        by = {p["stabilizer"]: p for p in res["standing_pushes"] if p["direction"] == direction}
        cells = [_failed(by[s]) or _pushed_cell(
                     by[s]["impulse_Ns"], None if by[s]["fell_N"] is None else 0.1 * by[s]["fell_N"])
                 for s in (False, True)]
        rows.append(f"| largest push survived standing, {direction}, pelvis, both feet (whole-body bench) | "
                    f"{cells[0]} | {cells[1]} |")
    note = (f"\nMeasured {res['date']} on {res['machine']} by `bipd scenario results --part walk` (stepped "
            f"lock-step: host-independent). Ground: the HIL's MuJoCo floor tilted under the whole walk, or a "
            f"step whose edge is {res['step_x_m']:g} m ahead of the start (just ahead of the standing toes); "
            "the gait and the daemon's config assume the flat floor. FE: the drives' largest following "
            "error, motor turn (thesis bound 0.3°); ZMP: min margin of the whole robot's CoP to the support "
            "polygon (negative: outside). Pushes: impulses on the pelvis over 0.1 s, the largest survived by "
            f"bisection ({WALK_PUSH_RUNS} runs from {WALK_PUSH_MAX_NS:g} N s walking, {STANDING_PUSH_RUNS} from "
            "100 N s standing). Slope est.: the ground's pitch / roll the robot estimated by the walk's end "
            "from its stance sole lying flat (IMU through the stance leg, docs/stabilizer.md), where it knew "
            "one (pitch > 0 uphill, roll > 0 rising to the left).")
    return "\n".join(rows) + "\n" + note + "\n"
