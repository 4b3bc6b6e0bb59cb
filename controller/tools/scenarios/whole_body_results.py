"""`bipd scenario results --part whole-body`: the whole robot's figures, as a table of docs/results/.

BIP 2000 on the tilting platform (:mod:`.whole_body`, each run a fresh bench in stepped lock-step:
verdicts and figures do not depend on the host's speed), with the whole-robot stabilizer and with its
posture held: the largest tilt held in eight directions (:data:`.whole_body.TILT_DIRECTIONS`) on both
feet and on the left one (bisection, :func:`.search.bisect`, the amplitude being both angles'
magnitude), the largest push on the pelvis survived (forward, left; both feet), and the thesis' bench
tilt (10°, 20°, 7 s each way) on both feet. ``--write`` rewrites the table between the markers
``<!-- whole-body-results -->`` and ``<!-- /whole-body-results -->`` of ``docs/results/bip2000.md``.
"""
from __future__ import annotations

import math
import platform
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import date
from typing import Any

from controller.tools.scenarios.runner import Say
from controller.tools.scenarios.scenarios import THESIS_TILT, THESIS_TILT_S
from controller.tools.scenarios.search import bisect, platform_limit_deg
from controller.tools.scenarios.whole_body import TILT_DIRECTIONS, PelvisPush, PlatformTilt, WholeBodyOptions, run_whole_body

MARKERS = ("<!-- whole-body-results -->", "<!-- /whole-body-results -->")
PAGE = "bip2000.md"                  # its results page (docs/results/)
SEARCH_TILT_S = 3.0          # s, quintic each way in a search run (the thesis' 7 s in the thesis tilt row)
PUSH_S = 0.1                 # s, the push's duration
MAX_PUSH_N = 1000.0          # N, the push search's upper bound
PUSHES = ("forward", "left")


def largest_tilt(direction: str, options: WholeBodyOptions, runs: int, say: Say = lambda _m: None) -> dict[str, Any]:
    """Bisection of the tilt amplitude (deg) in ``direction`` (TILT_DIRECTIONS)."""
    ka, kb = TILT_DIRECTIONS[direction]
    limit = platform_limit_deg(options)
    tag = f"{direction} on {options.support} support, {'stabilizer' if options.stabilizer else 'posture held'}"

    def make(a: float) -> PlatformTilt:
        return PlatformTilt(math.radians(ka * a), math.radians(kb * a), SEARCH_TILT_S)

    out = bisect(make, limit, runs, options, lambda m: say(f"{tag}: {m}"), run=run_whole_body)
    return {"direction": direction, "support": options.support, "stabilizer": options.stabilizer,
            "limit_deg": limit, "held_deg": out["held"], "fell_deg": out["fell"], "trials": out["trials"]}


def largest_push(direction: str, options: WholeBodyOptions, runs: int, say: Say = lambda _m: None) -> dict[str, Any]:
    """Bisection of the pelvis push force (N) for PUSH_S; reports the impulse (N s)."""
    tag = f"{direction} push, {'stabilizer' if options.stabilizer else 'posture held'}"
    out = bisect(lambda f: PelvisPush(f, direction, PUSH_S), MAX_PUSH_N, runs, options,
                 lambda m: say(f"{tag}: {m}"), run=run_whole_body)
    return {"direction": direction, "stabilizer": options.stabilizer, "held_N": out["held"], "fell_N": out["fell"],
            "impulse_Ns": round(out["held"] * PUSH_S, 4), "trials": out["trials"]}


def thesis_tilt(options: WholeBodyOptions, say: Say = lambda _m: None) -> dict[str, Any]:
    """The thesis' bench tilt (10°, 20°, 7 s each way) on both feet: fell, min CoG margin."""
    r = run_whole_body(PlatformTilt(*THESIS_TILT, THESIS_TILT_S), options, say)
    return {"stabilizer": options.stabilizer, "fell": r.fell, "fall_reason": r.fall_reason,
            "min_cog_margin_m": r.min_cog_margin_m, "aborted": r.aborted}


def collect(options: WholeBodyOptions = WholeBodyOptions(), runs: int = 4, say: Say = lambda _m: None,
            workers: int = 2) -> dict[str, Any]:
    """Every run of the table, ``workers`` benches at a time."""
    variants = [replace(options, stabilizer=s, support=sp) for sp in ("double", "left") for s in (True, False)]
    with ThreadPoolExecutor(workers) as pool:
        tilts = [pool.submit(largest_tilt, d, o, runs, say) for o in variants for d in TILT_DIRECTIONS]
        pushes = [pool.submit(largest_push, d, replace(options, stabilizer=s, support="double"), runs, say)
                  for s in (True, False) for d in PUSHES]
        thesis = [pool.submit(thesis_tilt, replace(options, stabilizer=s, support="double"), say) for s in (True, False)]
        return {"date": date.today().isoformat(), "machine": platform.processor() or platform.machine(),
                "runs_per_search": runs, "tilts": [f.result() for f in tilts],
                "pushes": [f.result() for f in pushes], "thesis_tilt": [f.result() for f in thesis]}


def _bracket(held: float, fell: float | None, unit: str) -> str:
    if fell is None:
        return f"≥ {held:.1f} {unit} (limit)"
    return f"< {fell:.1f} {unit} (falls there)" if held == 0.0 else f"{held:.1f} {unit} (falls at {fell:.1f})"


def _mm(x: float | None) -> str:
    return "n/a" if x is None else f"{1e3 * x:.1f} mm"


def markdown(res: dict[str, Any]) -> str:
    """The whole robot's table (docs/results/bip2000.md)."""
    rows = ["| figure | with the whole-robot stabilizer | without (posture held) |", "| --- | --- | --- |"]
    by = {(t["direction"], t["support"], t["stabilizer"]): t for t in res["tilts"]}
    for support, label in (("double", "both feet"), ("left", "left foot, right lifted")):
        for d in TILT_DIRECTIONS:
            cells = [_bracket(by[d, support, s]["held_deg"], by[d, support, s]["fell_deg"], "°") for s in (True, False)]
            rows.append(f"| largest tilt held, {label}, (α, β) ∝ ({d.replace('alpha', 'α').replace('beta', 'β')}) "
                        f"| {cells[0]} | {cells[1]} |")
    pb = {(p["direction"], p["stabilizer"]): p for p in res["pushes"]}
    for d in PUSHES:
        cells = [f"{pb[d, s]['impulse_Ns']:.1f} N s ({_bracket(pb[d, s]['held_N'], pb[d, s]['fell_N'], 'N')})"
                 for s in (True, False)]
        rows.append(f"| largest push survived, {d}, on the pelvis, {PUSH_S:g} s, both feet | {cells[0]} | {cells[1]} |")
    tb = {t["stabilizer"]: t for t in res["thesis_tilt"]}
    cells = [f"{'yes' if tb[s]['fell'] else 'no'} / {_mm(tb[s]['min_cog_margin_m'])}" for s in (True, False)]
    rows.append(f"| thesis tilt (10°, 20°, 7 s), both feet: fell / min CoG margin | {cells[0]} | {cells[1]} |")
    note = (f"\nMeasured {res['date']} on {res['machine']} by `bipd scenario results --part whole-body` "
            f"({res['runs_per_search']} runs per bisection up to the platform's 25°, {SEARCH_TILT_S:g} s quintics + 1 s "
            f"hold in the tilt searches; a diagonal tilts both angles by the amplitude; fell = the HIL's `fallen` "
            f"(pelvis 0.20 m down or tilted beyond 30°) or a standing sole lifted > 10 mm off the plate; the CoG "
            f"margin is the whole robot's CoG to the support polygon of the soles in contact, in the HIL's truth). "
            f"Stepped lock-step: verdicts and figures do not depend on the host's speed.")
    return "\n".join(rows) + "\n" + note + "\n"

