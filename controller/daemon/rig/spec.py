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

A bad name, key or value is a :class:`~controller.daemon.rig.motions.MotionError` naming it. The daemon's
``rig_motion`` command takes the built-in kinds (:data:`COMMAND_KINDS`) as mailbox numbers
(:func:`motion_args`, :func:`motion_from_args`), and an earthquake file (:func:`file_motion`: ``FILE.csv``
or ``earthquake:file=FILE.csv,...``) loaded and checked by its I/O side, whose nodes reach the loop
through shared memory (controller.daemon.shm, ``rig``).
"""
from __future__ import annotations

import inspect
import math
from pathlib import Path

import numpy as np
import yaml

from models.rig.tilt import THESIS

from controller.daemon.rig.earthquake import load_earthquake
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


def _conventional(kind: str, convention: int) -> dict:
    """The ``convention`` argument of a kind that takes one (the tilt's), else none."""
    return {"convention": convention} if "convention" in inspect.signature(KINDS[kind]).parameters else {}


def build_motion(kind: str, params: dict, where: str, convention: int = THESIS) -> Motion:
    """The motion of ``kind`` with ``params`` (defaults as in this module's docstring); a tilt's (α, β)
    in the robot's ``convention`` (models.rig.tilt)."""
    if kind not in KINDS:
        raise MotionError(f"{where}: unknown motion kind {kind!r} (known: {', '.join(KINDS)})")
    make = KINDS[kind]
    defaults = DEFAULTS.get(kind, {})
    known = [k for k in inspect.signature(make).parameters if k != "convention"]
    for key in params:
        if key not in known:
            raise MotionError(f"{where}: {kind} has no key {key!r} (keys: {', '.join(known)})")
    try:
        return make(**{**defaults, **params}, **_conventional(kind, convention))
    except MotionError as exc:
        raise MotionError(f"{where}: {exc}") from None
    except TypeError as exc:
        raise MotionError(f"{where}: {kind}: {exc}") from None


def _value(text: str):
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def motion_from_spec(spec: str, convention: int = THESIS) -> Motion:
    """A motion from ``KIND[:k=v,...]``, a YAML file or an earthquake CSV (see the module); a tilt's
    (α, β) in the robot's ``convention`` (models.rig.tilt)."""
    path = Path(spec)
    if path.suffix.lower() == ".csv":
        return load_earthquake(path)
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise MotionError(f"{path}: cannot read the motion file ({exc.__class__.__name__})") from None
        if not isinstance(raw, dict) or "kind" not in raw:
            raise MotionError(f"{path}: a motion file is a mapping with a kind: key")
        raw = dict(raw)
        kind = raw.pop("kind")
        if kind == "earthquake" and "file" in raw:
            raw["file"] = str(path.parent / str(raw["file"]))
        return build_motion(kind, raw, str(path), convention)
    kind, _, rest = spec.partition(":")
    return build_motion(kind.strip(), _params(spec, rest), f"motion {spec!r}", convention)


def _params(spec: str, rest: str) -> dict:
    params = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise MotionError(f"motion {spec!r}: {item!r} is not key=value")
        params[key.strip()] = _value(value.strip())
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
            raise MotionError(f"motion {spec!r}: earthquake has no key {key!r} (keys: file, {', '.join(options)})")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and v > 0):
            raise MotionError(f"motion {spec!r}: {key} must be a finite number > 0, got {v!r}")
        options[key] = float(v)
    return file, options


COMMAND_KINDS = ("tilt", "sinusoid", "heave", "step", "ship_deck")   # the `rig_motion` command's (no files)


def _arguments(kind: str) -> list[str]:
    return [k for k in inspect.signature(KINDS[kind]).parameters if k not in ("points", "convention")]


def motion_args(spec: str) -> np.ndarray:
    """The mailbox arguments of ``KIND[:k=v,...]`` (a kind of :data:`COMMAND_KINDS`): its kind's
    index, then every parameter in its constructor's order, defaults filled, an axis as its index
    in :data:`~controller.daemon.rig.motions.DOFS`. The motion is built once here, so a bad one is refused."""
    kind = spec.partition(":")[0].strip()
    if kind not in COMMAND_KINDS:
        raise MotionError(f"motion {spec!r}: the rig_motion command plays {', '.join(COMMAND_KINDS)} "
                          f"(KIND or KIND:key=value,...), got {kind!r}")
    motion_from_spec(spec)
    _, _, rest = spec.partition(":")
    given = dict(item.partition("=")[::2] for item in filter(None, rest.split(",")))
    values = {**{k: v.default for k, v in inspect.signature(KINDS[kind]).parameters.items()},
              **DEFAULTS.get(kind, {}),
              **{k.strip(): _value(v.strip()) for k, v in given.items()}}
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
