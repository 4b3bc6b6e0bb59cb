"""Rig motions by name or file: ``KIND`` or ``KIND:key=value,key=value`` (e.g.
``sinusoid:axis=x,amplitude=0.05,frequency=1``), a YAML file ``{kind: KIND, key: value, ...}`` or an
earthquake CSV (``.csv``, :mod:`controller.daemon.rig.earthquake`). Kinds and their keys (defaults):

- ``tilt``: ``alpha_deg`` (10), ``beta_deg`` (20), ``duration`` (7 s each way): the thesis' tilt,
  level → (α, β) → level (Gastebois 2017, §2.6.3), or ``points`` [[α, β, duration], ...] (rad, s);
- ``sinusoid``: ``axis`` (x), ``amplitude`` (0.05 m), ``frequency`` (1 Hz), ``cycles`` (5),
  ``ramp_cycles`` (1); ``heave``: the same along z;
- ``step``: ``axis`` (x), ``accel`` (2 m/s²), ``hold`` (0.2 s), ``edge`` (0.02 s), ``brake_ratio``
  (0.5), ``rest`` (1 s);
- ``ship_deck``: ``hs`` (0.4 m), ``tp`` (4 s), ``duration`` (60 s), ``seed`` (0), ``components``
  (24), ``roll_gain`` (1), ``pitch_gain`` (0.5), ``ramp`` (5 s);
- ``earthquake``: ``file`` (a CSV), ``highpass`` (0.1 Hz), ``fade`` (1 s).

Every key has a type and a range (:data:`PARAMS`, docs/rig.md's table is generated from it), checked
before any motion is built, and a whole motion lasts at most :data:`MAX_MOTION_S`; a ``k=v`` value and a
motion file are read by the strict YAML reader (:mod:`models.common.validation`: ``1e7`` is a number,
no aliases, no duplicate keys). A bad name, key or value is a
:class:`~controller.daemon.rig.motions.MotionError` naming it. The daemon's
``rig_motion`` command takes the built-in kinds (:data:`COMMAND_KINDS`) as mailbox numbers
(:func:`motion_args`, :func:`motion_from_args`), and an earthquake file (:func:`file_motion`: ``FILE.csv``
or ``earthquake:file=FILE.csv,...``) loaded and checked by its I/O side, whose nodes reach the loop
through shared memory (controller.daemon.shm, ``rig``).
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from models.common.errors import ConfigError, quote
from models.common.validation import parse_yaml, read_yaml
from models.rig.tilt import THESIS

from controller.daemon.rig.earthquake import MAX_DURATION_S, load_earthquake
from controller.daemon.rig.motions import DOFS, Motion, MotionError, TiltSequence, acceleration_step, heave, ship_deck, sinusoid


def tilt(alpha_deg: float = 10.0, beta_deg: float = 20.0, duration: float = 7.0,
         points: list | None = None, convention: int = THESIS) -> TiltSequence:
    """The thesis' tilt there and back, or the given points; (α, β) in the robot's ``convention``
    (models.rig.tilt: the rig's, never a key of the spec)."""
    if points is None:
        points = [(math.radians(alpha_deg), math.radians(beta_deg), duration), (0.0, 0.0, duration)]
    return TiltSequence(points, convention=convention)


def earthquake(file: str, highpass: float = 0.1, fade: float = 1.0) -> Motion:
    return load_earthquake(file, highpass=highpass, fade=fade)


KINDS = {"tilt": tilt, "sinusoid": sinusoid, "heave": heave, "step": acceleration_step,
         "ship_deck": ship_deck, "earthquake": earthquake}
DEFAULTS = {"step": {"axis": "x", "accel": 2.0}, "sinusoid": {"axis": "x", "amplitude": 0.05, "frequency": 1.0},
            "heave": {"amplitude": 0.05, "frequency": 0.5}}
"""Defaults of the keys a kind's constructor requires."""

MAX_MOTION_S = MAX_DURATION_S
"""The longest motion (s), built-in or recorded: the stroke check samples all of it."""


@dataclass(frozen=True)
class Param:
    """One key of a motion: its type (``number``, ``integer``, ``axis``: one of
    :data:`~controller.daemon.rig.motions.DOFS`, ``file``: a name, ``points``: at most ``hi`` triples),
    its range [lo, hi] (``(lo, hi]`` with ``open_lo``) and its unit."""
    type: str
    lo: float = -math.inf
    hi: float = math.inf
    unit: str = ""
    open_lo: bool = False

    @property
    def range(self) -> str:
        if self.type == "axis":
            return ", ".join(DOFS)
        if self.type == "points":
            return f"at most {self.hi:g} [alpha, beta, duration] triples (rad, rad, s)"
        if self.type == "file":
            return "a CSV file"
        if self.type == "integer":
            return f"{self.lo:.0f}..{self.hi:.0f}"
        return f"{'(' if self.open_lo else '['}{self.lo:g}, {self.hi:g}]"

    def check(self, where: str, key: str, v: Any) -> Any:
        """``v`` if it has this type and lies in this range, else a :class:`MotionError` naming ``key``."""
        if self.type == "axis":
            ok = isinstance(v, str) and v in DOFS
        elif self.type == "file":
            ok = isinstance(v, str) and bool(v)
        elif self.type == "points":
            ok = isinstance(v, list) and len(v) <= self.hi and all(
                isinstance(p, list) and len(p) == 3 and all(map(_finite, p)) for p in v)
        elif self.type == "integer":
            ok = isinstance(v, int) and not isinstance(v, bool) and self.lo <= v <= self.hi
        else:
            ok = _finite(v) and (self.lo < v <= self.hi if self.open_lo else self.lo <= v <= self.hi)
        if not ok:
            noun = {"number": "a number in ", "integer": "an integer in ", "axis": "one of "}.get(self.type, "")
            unit = f" {self.unit}" if self.unit else ""
            raise MotionError(f"{where}: {key} must be {noun}{self.range}{unit}, got {quote(v)}")
        return v


def _finite(v: Any) -> bool:
    """A finite number (not a boolean; an integer too large for a float is not finite)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def _seconds(lo: float, hi: float) -> Param:
    return Param("number", lo, hi, "s")


_SINE = {"amplitude": Param("number", 0.0, 1.0, "m or rad", True), "frequency": Param("number", 1e-3, 50.0, "Hz"),
         "cycles": Param("number", 0.0, 1e4, "", True), "ramp_cycles": Param("number", 0.1, 5e3)}
PARAMS: dict[str, dict[str, Param]] = {
    "tilt": {"alpha_deg": Param("number", -90.0, 90.0, "deg"), "beta_deg": Param("number", -90.0, 90.0, "deg"),
             "duration": _seconds(0.01, MAX_MOTION_S / 2.0), "points": Param("points", hi=100)},
    "sinusoid": {"axis": Param("axis"), **_SINE},
    "heave": _SINE,
    "step": {"axis": Param("axis"), "accel": Param("number", -50.0, 50.0, "m/s2"), "hold": _seconds(1e-3, 5.0),
             "edge": _seconds(1e-3, 1.0), "brake_ratio": Param("number", 0.05, 10.0), "rest": _seconds(0.0, 60.0),
             "back": _seconds(0.01, 60.0), "dt": _seconds(5e-4, 0.01)},
    "ship_deck": {"hs": Param("number", 0.0, 20.0, "m", True), "tp": _seconds(1.0, 30.0),
                  "duration": _seconds(1.0, MAX_MOTION_S), "seed": Param("integer", 0, 2 ** 32 - 1),
                  "components": Param("integer", 1, 100), "roll_gain": Param("number", 0.0, 10.0),
                  "pitch_gain": Param("number", 0.0, 10.0), "ramp": _seconds(0.1, MAX_MOTION_S / 2.0)},
    "earthquake": {"file": Param("file"), "highpass": Param("number", 0.01, 10.0, "Hz"), "fade": _seconds(0.01, 60.0)},
}
"""Every key of every kind: its type, range and unit (docs/rig.md). A whole motion also lasts at most
:data:`MAX_MOTION_S` (``cycles / frequency`` of a sinusoid, the sum of a tilt's points)."""


def _conventional(kind: str, convention: int) -> dict:
    """The ``convention`` argument of a kind that takes one (the tilt's), else none."""
    return {"convention": convention} if "convention" in inspect.signature(KINDS[kind]).parameters else {}


def build_motion(kind: str, params: dict, where: str, convention: int = THESIS) -> Motion:
    """The motion of ``kind`` with ``params`` (defaults as in this module's docstring); a tilt's (α, β)
    in the robot's ``convention`` (models.rig.tilt)."""
    if kind not in KINDS:
        raise MotionError(f"{where}: unknown motion kind {kind!r} (known: {', '.join(KINDS)})")
    make, schema = KINDS[kind], PARAMS[kind]
    for key, v in params.items():
        if key not in schema:
            raise MotionError(f"{where}: {kind} has no key {quote(key)} (keys: {', '.join(schema)})")
        schema[key].check(f"{where}: {kind}", key, v)
    try:
        motion = make(**{**DEFAULTS.get(kind, {}), **params}, **_conventional(kind, convention))
    except MotionError as exc:
        raise MotionError(f"{where}: {exc}") from None
    if motion.duration > MAX_MOTION_S:
        raise MotionError(f"{where}: the {kind} lasts {motion.duration:g} s, more than {MAX_MOTION_S:g} s")
    return motion


def _value(spec: str, key: str, text: str) -> Any:
    """A ``k=v`` value read by the strict YAML reader (``1e7`` a number, ``x`` a string)."""
    try:
        return parse_yaml(text, f"motion {spec!r}: {key}")
    except ConfigError as exc:
        raise MotionError(str(exc)) from None


def motion_from_spec(spec: str, convention: int = THESIS) -> Motion:
    """A motion from ``KIND[:k=v,...]``, a YAML file or an earthquake CSV (see the module); a tilt's
    (α, β) in the robot's ``convention`` (models.rig.tilt)."""
    path = Path(spec)
    if path.suffix.lower() == ".csv":
        return load_earthquake(path)
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            raw = read_yaml(path)
        except ConfigError as exc:
            raise MotionError(str(exc)) from None
        if not isinstance(raw, dict) or "kind" not in raw:
            raise MotionError(f"{path}: a motion file is a mapping with a kind: key")
        raw = dict(raw)
        kind = raw.pop("kind")
        if kind == "earthquake" and isinstance(raw.get("file"), str):
            raw["file"] = str(path.parent / str(raw["file"]))
        return build_motion(kind, raw, str(path), convention)
    kind, _, rest = spec.partition(":")
    return build_motion(kind.strip(), _params(spec, rest), f"motion {spec!r}", convention)


def _params(spec: str, rest: str) -> dict:
    """The ``key=value`` pairs after ``KIND:``, each key once, each value read as YAML."""
    params = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq:
            raise MotionError(f"motion {spec!r}: {item!r} is not key=value")
        if key in params:
            raise MotionError(f"motion {spec!r}: {key} is given twice")
        params[key] = _value(spec, key, value.strip())
    return params


def file_motion(spec: str) -> tuple[str, dict[str, float]] | None:
    """(file, {highpass, fade}) of a ``rig_motion`` that names an earthquake file, ``FILE.csv`` or
    ``earthquake:file=FILE.csv[,highpass=Hz][,fade=s]`` (defaults as :func:`earthquake`); None for
    the built-in kinds. A bad key or value is a :class:`MotionError`."""
    kind, _, rest = spec.partition(":")
    options = {k: p.default for k, p in inspect.signature(earthquake).parameters.items() if k != "file"}
    if not rest and Path(spec.strip()).suffix.lower() == ".csv":
        return spec.strip(), options
    if kind.strip() != "earthquake":
        return None
    params = _params(spec, rest)
    file = params.pop("file", None)
    if not isinstance(file, str) or not file:
        raise MotionError(f"motion {spec!r}: earthquake needs file=NAME.csv")
    for key, v in params.items():
        if key not in options:
            raise MotionError(f"motion {spec!r}: earthquake has no key {quote(key)} (keys: file, {', '.join(options)})")
        options[key] = float(PARAMS["earthquake"][key].check(f"motion {spec!r}: earthquake", key, v))
    return file, options


COMMAND_KINDS = ("tilt", "sinusoid", "heave", "step", "ship_deck")   # the `rig_motion` command's (no files)


def _arguments(kind: str) -> list[str]:
    return [k for k in inspect.signature(KINDS[kind]).parameters if k not in ("points", "convention")]


def motion_args(spec: str) -> np.ndarray:
    """The mailbox arguments of ``KIND[:k=v,...]`` (a kind of :data:`COMMAND_KINDS`): its kind's
    index, then every parameter in its constructor's order, defaults filled, an axis as its index
    in :data:`~controller.daemon.rig.motions.DOFS`. The motion is built once here, so a bad one is refused."""
    kind, _, rest = spec.partition(":")
    kind = kind.strip()
    if kind not in COMMAND_KINDS:
        raise MotionError(f"motion {spec!r}: the rig_motion command plays {', '.join(COMMAND_KINDS)} "
                          f"(KIND or KIND:key=value,...), got {quote(kind)}")
    params = _params(spec, rest)
    keys = _arguments(kind)
    for key in params:
        if key not in keys:
            raise MotionError(f"motion {spec!r}: the rig_motion command's {kind} has no key {quote(key)} "
                              f"(keys: {', '.join(keys)})")
    build_motion(kind, params, f"motion {spec!r}")       # every value checked, the motion built once
    values = {**{k: v.default for k, v in inspect.signature(KINDS[kind]).parameters.items()},
              **DEFAULTS.get(kind, {}), **params}
    out = [float(COMMAND_KINDS.index(kind))]
    for key in _arguments(kind):
        v = values[key]
        out.append(float(DOFS.index(v)) if key == "axis" else float(v))
    return np.array(out)


def motion_from_args(args: np.ndarray, convention: int = THESIS) -> Motion:
    """The motion :func:`motion_args` encoded; a tilt's (α, β) in the robot's ``convention``."""
    kind = COMMAND_KINDS[int(args[0])]
    params = {}
    for key, v in zip(_arguments(kind), args[1:]):
        params[key] = DOFS[int(v)] if key == "axis" else (int(v) if key in ("seed", "components") else float(v))
    return KINDS[kind](**params, **_conventional(kind, convention))


def markdown_table() -> str:
    """docs/rig.md's table of the motions' keys (regenerate with ``python -m controller.daemon.rig.spec``)."""
    lines = ["| kind | key | type | default | range | unit |", "|---|---|---|---|---|---|"]
    for kind, schema in PARAMS.items():
        defaults = {**{k: p.default for k, p in inspect.signature(KINDS[kind]).parameters.items()},
                    **DEFAULTS.get(kind, {})}
        for key, p in schema.items():
            default = defaults.get(key, inspect.Parameter.empty)
            shown = "—" if default in (inspect.Parameter.empty, None) else f"{default:g}" \
                if isinstance(default, float) else str(default)
            lines.append(f"| `{kind}` | `{key}` | {p.type} | {shown} | {p.range} | {p.unit or '—'} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
