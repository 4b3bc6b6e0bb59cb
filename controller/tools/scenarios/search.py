"""Largest tilt held and largest push survived: bisection over the amplitude, a bounded number of runs.

The tilt amplitude A (deg) is the larger platform angle: pitch (α, β) = (0, A), roll (A, 0),
combined (A/2, A) (the thesis' direction, 10° : 20°). The first run tries the platform's limit;
then each run halves the bracket [largest held, smallest fallen]: ``runs`` runs resolve
limit / 2^(runs-1). Every run is a fresh bench (HIL + daemon) so one fall cannot affect the next.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from models.common.validation import read_yaml

from controller.tools.scenarios.runner import Options, Say, Scenario, run_scenario
from controller.tools.scenarios.scenarios import HOLD_S, Push, Tilt

TILT_AXES = {"pitch": (0.0, 1.0), "roll": (1.0, 0.0), "combined": (0.5, 1.0)}
SEARCH_TILT_S = 3.0           # quintic each way in a search run (the thesis uses 7 s)


def platform_limit_deg(options: Options) -> float:
    doc = read_yaml(options.config)
    return float(doc.get("control", {}).get("platform_limit_deg", 25.0))


def bisect(make: Callable[[float], Scenario], hi: float, runs: int, options: Any, say: Say,
           run: Callable[..., Any] = run_scenario) -> dict[str, Any]:
    """Largest amplitude in (0, hi] whose scenario neither falls nor faults, within ``runs`` runs of
    ``run(scenario, options, say)`` (a result with ``fell``, ``aborted``, ``min_cog_margin_m``:
    the leg bench's :func:`run_scenario` by default)."""
    held, fell = 0.0, None
    trials = []
    x = hi
    for _ in range(runs):
        res = run(make(x), options, say)
        trials.append({"amplitude": round(x, 4), "fell": res.fell, "min_cog_margin_m": res.min_cog_margin_m,
                       "aborted": res.aborted})
        lost = res.fell or res.aborted is not None          # a FAULT holds nothing either
        say(f"  amplitude {x:.3g}: {'held' if not lost else 'FELL' if res.fell else res.aborted}")
        if lost:
            fell = x
        else:
            held = x
        if fell is None:
            break
        x = 0.5 * (held + fell)
    return {"held": round(held, 4), "fell": None if fell is None else round(fell, 4), "trials": trials}


def largest_tilt(axis: str, options: Options, runs: int = 5, duration: float = SEARCH_TILT_S,
                 say: Say = lambda _m: None) -> dict[str, Any]:
    """Bisection of the tilt amplitude (deg) along ``axis``, stabilizer as in ``options``."""
    ka, kb = TILT_AXES[axis]
    limit = platform_limit_deg(options)
    tag = f"{axis} tilt {'with' if options.stabilizer else 'without'} the stabilizer"
    say(f"largest {tag}, {runs} runs at most, {duration:g} s quintics")

    def make(a: float) -> Tilt:
        return Tilt(math.radians(ka * a), math.radians(kb * a), duration, HOLD_S)

    out = bisect(make, limit, runs, replace(options, plot_dir=None), lambda m: say(f"{tag}: {m}"))
    return {"axis": axis, "stabilizer": options.stabilizer, "limit_deg": limit, "duration_s": duration,
            "held_deg": out["held"], "fell_deg": out["fell"], "trials": out["trials"]}


def largest_push(direction: str, options: Options, runs: int = 5, duration: float = 0.1,
                 max_force: float = 250.0, say: Say = lambda _m: None) -> dict[str, Any]:
    """Bisection of the push force (N) on the hip for ``duration`` s; reports the impulse (N s)."""
    say(f"largest {direction} push of {duration:g} s, {runs} runs at most")
    out = bisect(lambda f: Push(force=f, duration=duration, direction=direction), max_force, runs,
                 replace(options, plot_dir=None), lambda m: say(f"{direction} push: {m}"))
    return {"direction": direction, "duration_s": duration, "stabilizer": options.stabilizer,
            "held_N": out["held"], "fell_N": out["fell"], "impulse_Ns": round(out["held"] * duration, 4),
            "trials": out["trials"]}
