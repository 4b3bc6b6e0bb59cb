"""Trials: the parameter sets a search proposes, their keys, and one trial run on a fresh bench.

A trial is a dict of parameters (dotted key -> value). Its key is a hash of everything that
decides its result (scenario, fixed fields, parameters, bisection, daemon YAML path), so a re-run
of the same spec finds it done and a changed spec does not reuse a stale result.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
from typing import Any

from controller.tools.campaign.spec import Range, Spec


def trial_key(spec: Spec, params: dict[str, Any]) -> str:
    doc = {"scenario": spec.scenario, "fixed": spec.fixed, "params": params,
           "largest_tilt": spec.largest_tilt, "config": str(spec.config)}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:16]


def grid(spec: Spec) -> list[dict[str, Any]]:
    """Every combination of the parameters' lists, the first key varying slowest."""
    keys = list(spec.parameters)
    return [dict(zip(keys, values)) for values in itertools.product(*(spec.parameters[k] for k in keys))]


def draw(rng: random.Random, choices: list[Any] | Range) -> Any:
    if isinstance(choices, list):
        return rng.choice(choices)
    if choices.log:
        return round(math.exp(rng.uniform(math.log(choices.low), math.log(choices.high))), 6)
    return round(rng.uniform(choices.low, choices.high), 6)


def random_trials(spec: Spec) -> list[dict[str, Any]]:
    """``spec.n`` draws from a generator seeded with ``spec.seed`` (the same list on every re-run)."""
    rng = random.Random(spec.seed)
    return [{k: draw(rng, v) for k, v in spec.parameters.items()} for _ in range(spec.n or 0)]


def scenario_of(spec: Spec, params: dict[str, Any]):
    """The controller.tools.scenarios object of a trial (angles converted from degrees)."""
    from controller.tools.scenarios.scenarios import Push, Tilt

    f = dict(spec.fixed, **{k[len("scenario."):]: v for k, v in params.items() if k.startswith("scenario.")})
    if spec.scenario == "tilt":
        return Tilt(math.radians(f["alpha_deg"]), math.radians(f["beta_deg"]), float(f["duration_s"]),
                    float(f["hold_s"]))
    return Push(float(f["force_n"]), float(f["duration_s"]), str(f["direction"]))


def stabilizer_set(params: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple((k, v) for k, v in sorted(params.items()) if not k.startswith("scenario."))


METRIC_KEYS = ("fell", "aborted", "min_cog_margin_m", "min_cop_margin_m", "max_tracking_error_deg",
               "max_foot_tilt_deg", "max_foot_lift_m", "min_hip_height_m", "sim_s", "wall_s")


def run_trial(spec: Spec, params: dict[str, Any]) -> dict[str, Any]:
    """One lock-step HIL scenario (and the bisection, if the spec asks) with the trial's
    stabilizer values in its own YAML copy, on its own ports; the metrics (spec.METRICS)."""
    from controller.tools.scenarios.runner import Options, run_scenario
    from controller.tools.scenarios.search import largest_tilt

    options = Options(config=spec.config, stabilizer_set=stabilizer_set(params))
    res = run_scenario(scenario_of(spec, params), options).to_dict()
    out = {k: res.get(k) for k in METRIC_KEYS}
    if spec.largest_tilt is not None:
        lt = spec.largest_tilt
        found = largest_tilt(lt["axis"], options, runs=lt["runs"], duration=lt["duration_s"])
        out["largest_tilt_deg"] = found["held_deg"]
    return out
