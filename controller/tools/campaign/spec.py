"""A campaign spec: the scenario, the parameters varied, the search, the objectives, the results folder.

Every problem is one :class:`SpecError` sentence ``file: key: problem``. Paths in the spec are
relative to the spec file. Parameter keys are either ``scenario.<field>`` (a field of the scenario
below) or a dotted key of the stabilizer YAML (``walls.gain``, ``admittance.damping``: the key must
exist in the daemon's stabilizer YAML); values are a list (grid axis,
or the choices of a random/optuna draw) or a range ``{low, high, log}`` (random and optuna only).
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from models.common.errors import ConfigError
from models.common.validation import read_yaml

SCENARIOS: dict[str, dict[str, Any]] = {
    "tilt": {"alpha_deg": 10.0, "beta_deg": 20.0, "duration_s": 7.0, "hold_s": 1.0},
    "push": {"force_n": 100.0, "duration_s": 0.1, "direction": "forward"},
}
"""The scenarios a campaign can run and their fields with defaults (the CLI's units: deg, s, N)."""
METHODS = ("grid", "random", "optuna")
MAX_TRIALS = 10_000
"""Most trials a campaign runs (a grid's combinations or n): checked before any is built, each a
HIL run of seconds to minutes."""
MAX_BISECTION_RUNS = 20
"""Most runs of a largest-tilt bisection (each halves the interval: 20 runs resolve it to 1e-6)."""
METRIC_LABELS = {"min_cog_margin_m": "lowest CoG margin (m)", "min_cop_margin_m": "lowest CoP margin (m)",
                 "max_tracking_error_deg": "largest tracking error (deg)", "max_foot_tilt_deg": "largest foot tilt (deg)",
                 "max_foot_lift_m": "largest foot lift (m)", "min_hip_height_m": "lowest hip height (m)",
                 "largest_tilt_deg": "largest platform tilt held (deg)"}
"""Objectives, with their names in plots: a scenario's figures (controller.tools.scenarios.metrics)
and, with ``largest_tilt``, the bisection's largest tilt held."""
METRICS = tuple(METRIC_LABELS)
SENSES = ("minimize", "maximize")
BETTER = {"minimize": "↓ better", "maximize": "↑ better"}   # a plot axis's direction of improvement
DEFAULT_CONFIG = Path(__file__).resolve().parents[3] / "deploy" / "bipd.yaml"
DEFAULT_TIMEOUT_S = 1800.0


class SpecError(ValueError):
    """A campaign spec that cannot run: ``file: key: problem``."""


@dataclass(frozen=True)
class Range:
    low: float
    high: float
    log: bool = False


@dataclass(frozen=True)
class Spec:
    path: Path
    scenario: str                              # a key of SCENARIOS
    fixed: dict[str, Any]                      # the scenario's fields not varied
    parameters: dict[str, list[Any] | Range]   # dotted key -> choices or range
    method: str
    n: int | None
    seed: int
    objectives: dict[str, str]                 # metric -> minimize | maximize; the first sorts
    largest_tilt: dict[str, Any] | None        # {axis, runs, duration_s} or None
    config: Path
    results: Path
    timeout_s: float

    @property
    def name(self) -> str:
        return self.path.stem


def _mapping(doc: Any, where: str, fail) -> dict[str, Any]:
    if not isinstance(doc, dict):
        fail(where, "must be a mapping")
    return doc


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _stabilizer_yaml(config: Path) -> Path:
    """The stabilizer YAML a daemon YAML names."""
    return (config.parent / read_yaml(config)["stabilizer"]).resolve()


def _known(doc: dict[str, Any], key: str) -> bool:
    """The dotted key names a value of the stabilizer YAML (an optional section absent from it,
    such as ``attractor``, must be written into the YAML first)."""
    for name in key.split("."):
        if not isinstance(doc, dict) or name not in doc:
            return False
        doc = doc[name]
    return True


def _check_values(stab: dict[str, Any], stab_path: Path, key: str, values: list[Any] | Range, fail) -> None:
    """Each value (a range: both ends) set alone into the stabilizer YAML must pass its validation."""
    from models.common.errors import ConfigError
    from stabilizer.config import config_from_dict

    from controller.tools.scenarios.runner import set_dotted

    for v in (values.low, values.high) if isinstance(values, Range) else values:
        doc = copy.deepcopy(stab)
        set_dotted(doc, key, v)
        try:
            config_from_dict(doc, str(stab_path))
        except ConfigError as e:
            fail(f"the value {v!r} is refused by the stabilizer ({e})")


def load_spec(path: Path) -> Spec:
    """Read and check a campaign spec (every key; the stabilizer keys against the daemon's YAML)."""
    path = Path(path)

    def fail(key: str, problem: str):
        raise SpecError(f"{path}: {key}: {problem}")

    try:
        doc = read_yaml(path)                  # bounded: at most 1 MiB, UTF-8, no aliases
    except ConfigError as e:
        raise SpecError(str(e)) from None
    doc = _mapping(doc, "(top level)", fail)
    unknown = set(doc) - {"scenario", "parameters", "search", "objectives", "largest_tilt", "config",
                          "results", "timeout_s"}
    if unknown:
        fail(sorted(unknown)[0], "unknown key (known: scenario, parameters, search, objectives, largest_tilt, "
                                 "config, results, timeout_s)")
    base = path.resolve().parent

    sc = _mapping(doc.get("scenario"), "scenario", fail)
    name = sc.get("name")
    if name not in SCENARIOS:
        fail("scenario.name", f"must be one of {', '.join(SCENARIOS)} (got {name!r})")
    fields = SCENARIOS[name]
    fixed = dict(fields)
    for k, v in sc.items():
        if k == "name":
            continue
        if k not in fields:
            fail(f"scenario.{k}", f"not a field of {name} (fields: {', '.join(fields)})")
        if type(v) is not type(fields[k]) and not (_number(v) and _number(fields[k])):
            fail(f"scenario.{k}", f"must be a {type(fields[k]).__name__} (got {v!r})")
        fixed[k] = v

    config = base / doc["config"] if "config" in doc else DEFAULT_CONFIG
    if not config.is_file():
        fail("config", f"no such daemon YAML: {config}")
    stab_path = _stabilizer_yaml(config)
    stab = read_yaml(stab_path)

    params = _mapping(doc.get("parameters"), "parameters", fail)
    if not params:
        fail("parameters", "names no parameter to vary")
    raw_search = doc.get("search")
    if not isinstance(raw_search, dict) or raw_search.get("method", "grid") == "grid":   # sized before any check
        size = math.prod(len(v) for v in params.values() if isinstance(v, list))
        if size > MAX_TRIALS:
            fail("parameters", f"the grid has {size:,} combinations; a campaign runs at most {MAX_TRIALS:,} trials")
    parameters: dict[str, list[Any] | Range] = {}
    for key, val in params.items():
        where = f"parameters.{key}"
        if key.startswith("scenario."):
            if key[len("scenario."):] not in fields:
                fail(where, f"not a field of {name} (fields: {', '.join(fields)})")
        elif not _known(stab, key):
            fail(where, f"not a key of the stabilizer YAML {stab_path}")
        if isinstance(val, list):
            if not val:
                fail(where, "an empty list of values")
            parameters[key] = val
        elif isinstance(val, dict):
            if set(val) - {"low", "high", "log"} or not (_number(val.get("low")) and _number(val.get("high"))):
                fail(where, "a range is {low: number, high: number, log: true|false}")
            if not val["low"] < val["high"] or (val.get("log") and val["low"] <= 0):
                fail(where, "a range needs low < high (and low > 0 with log: true)")
            parameters[key] = Range(float(val["low"]), float(val["high"]), bool(val.get("log", False)))
        else:
            fail(where, "must be a list of values or a range {low, high, log}")
        if key.startswith("scenario."):
            fixed.pop(key[len("scenario."):])
        else:
            _check_values(stab, stab_path, key, parameters[key], lambda problem: fail(where, problem))

    search = _mapping(doc.get("search", {"method": "grid"}), "search", fail)
    method = search.get("method")
    if method not in METHODS:
        fail("search.method", f"must be one of {', '.join(METHODS)} (got {method!r})")
    if set(search) - {"method", "n", "seed"}:
        fail(f"search.{sorted(set(search) - {'method', 'n', 'seed'})[0]}", "unknown key (known: method, n, seed)")
    n = search.get("n")
    if method == "grid":
        if n is not None:
            fail("search.n", "a grid runs every combination: n is for random and optuna")
        ranged = [k for k, v in parameters.items() if isinstance(v, Range)]
        if ranged:
            fail(f"parameters.{ranged[0]}", "a grid needs a list of values, not a range")
    elif not (isinstance(n, int) and not isinstance(n, bool) and 0 < n <= MAX_TRIALS):
        fail("search.n", f"the number of trials, an integer from 1 to {MAX_TRIALS:,} (got {n!r})")
    seed = search.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        fail("search.seed", f"must be an integer (got {seed!r})")

    largest = doc.get("largest_tilt")
    if largest is not None:
        from controller.tools.scenarios.search import TILT_AXES

        largest = _mapping(largest, "largest_tilt", fail)
        if set(largest) - {"axis", "runs", "duration_s"}:
            fail("largest_tilt", "known keys: axis, runs, duration_s")
        if largest.get("axis") not in TILT_AXES:
            fail("largest_tilt.axis", f"must be one of {', '.join(TILT_AXES)} (got {largest.get('axis')!r})")
        runs = largest.setdefault("runs", 4)
        if not isinstance(runs, int) or isinstance(runs, bool) or not 1 <= runs <= MAX_BISECTION_RUNS:
            fail("largest_tilt.runs", f"an integer from 1 to {MAX_BISECTION_RUNS} (got {runs!r})")
        if not _number(largest.setdefault("duration_s", 3.0)) or largest["duration_s"] <= 0:
            fail("largest_tilt.duration_s", "a positive number of seconds")

    objectives = _mapping(doc.get("objectives"), "objectives", fail)
    if not objectives:
        fail("objectives", "names no metric")
    for metric, sense in objectives.items():
        if metric not in METRICS:
            fail(f"objectives.{metric}", f"not a metric (metrics: {', '.join(METRICS)})")
        if metric == "largest_tilt_deg" and largest is None:
            fail(f"objectives.{metric}", "needs a largest_tilt section (the bisection that measures it)")
        if sense not in SENSES:
            fail(f"objectives.{metric}", f"must be minimize or maximize (got {sense!r})")

    if not isinstance(doc.get("results"), str):
        fail("results", "the results folder, a path relative to the spec, is missing")
    timeout = doc.get("timeout_s", DEFAULT_TIMEOUT_S)
    if not _number(timeout) or timeout <= 0:
        fail("timeout_s", f"wall seconds a trial may take, a positive number (got {timeout!r})")
    return Spec(path, name, fixed, parameters, method, n, seed, dict(objectives), largest, config.resolve(),
                (base / doc["results"]).resolve(), float(timeout))
