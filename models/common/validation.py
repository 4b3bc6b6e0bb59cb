"""Validation of YAML sections: typed values with errors naming file and key.

Shared by every loader of robot and controller configuration so that keys,
``*_deg`` angles and error wording are the same everywhere (docs/conventions.md).
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import yaml

from models.common.errors import ConfigError, quote

MAX_YAML_BYTES = 1 << 20
"""Largest configuration or robot file read (1 MiB: the deploy files are a few KiB)."""


MAX_YAML_DEPTH = 64
"""Deepest nesting of mappings and lists accepted (the deploy files nest 4 deep)."""

_FLOAT = re.compile(r"""^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$""")


class _StrictLoader(yaml.SafeLoader):
    """A safe loader for bipd's files:
    - anchors and aliases are refused: a few KiB of nested aliases expand to gigabytes
      (a "billion laughs" document), and no bipd file needs them;
    - a key given twice in one mapping is refused (YAML 1.2 forbids it; PyYAML keeps the last);
    - ``1e7`` and ``2e-05`` are numbers, as in YAML 1.2 and JSON (PyYAML's 1.1 resolver wants a dot);
    - nesting deeper than :data:`MAX_YAML_DEPTH` is refused before it can exhaust the stack."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()            # an alias needs an anchor: refusing anchors refuses both
        if getattr(event, "anchor", None) is not None:
            raise yaml.composer.ComposerError(None, None, "anchors and aliases (&name, *name) are not accepted",
                                              event.start_mark)
        self._depth += 1
        if self._depth > MAX_YAML_DEPTH:
            raise yaml.composer.ComposerError(None, None, f"nested deeper than {MAX_YAML_DEPTH} levels",
                                              event.start_mark)
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:                # an unhashable key: the base class says so
                break
            if first is not key_node:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {quote(key)} given twice (first on line {first.start_mark.line + 1})",
                    key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


_StrictLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))


class Section:
    """A mapping being validated, remembering where it lives (file and key path)."""

    def __init__(self, where: str, key: str, value: Any) -> None:
        if not isinstance(value, dict):
            raise ConfigError(where, key or "<top>", f"expected a mapping, got {type(value).__name__}")
        self.where, self.key, self.value = where, key, value
        self._used: set[str] = set()

    def path(self, name: str) -> str:
        return f"{self.key}.{name}" if self.key else name

    def has(self, name: str) -> bool:
        return name in self.value

    def raw(self, name: str, default: Any = ...) -> Any:
        if name not in self.value:
            if default is ...:
                raise ConfigError(self.where, self.path(name), "missing required key")
            return default
        self._used.add(name)
        return self.value[name]

    def number(self, name: str, default: Any = ..., *, positive: bool = False,
               nonnegative: bool = False) -> float:
        v = self.raw(name, default)
        return number(self.where, self.path(name), v, positive=positive, nonnegative=nonnegative)

    def angle(self, name: str, default: float | None = None) -> float:
        """An angle given as ``name`` (rad) or ``name_deg`` (degrees), not both."""
        deg = f"{name}_deg"
        if name in self.value and deg in self.value:
            raise ConfigError(self.where, self.path(name), f"give either {name} or {deg}, not both")
        if deg in self.value:
            return math.radians(self.number(deg))
        return self.number(name, ... if default is None else default)

    def sub(self, name: str, default: Any = ...) -> "Section":
        return Section(self.where, self.path(name), self.raw(name, default))

    def vector(self, name: str, size: int, default: Any = ...) -> tuple[float, ...]:
        return vector(self.where, self.path(name), self.raw(name, default), size)

    def done(self) -> None:
        extra = sorted(set(self.value) - self._used, key=str)
        if extra:
            name = extra[0] if isinstance(extra[0], str) and len(extra[0]) <= 60 else quote(extra[0])
            raise ConfigError(self.where, self.path(name), "unknown key")


def number(where: str, key: str, v: Any, *, positive: bool = False,
            nonnegative: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConfigError(where, key, f"expected a number, got {type(v).__name__} {quote(v)}")
    v = float(v)
    if not math.isfinite(v):
        raise ConfigError(where, key, f"must be finite, got {v}")
    if positive and v <= 0.0:
        raise ConfigError(where, key, f"must be > 0, got {v}")
    if nonnegative and v < 0.0:
        raise ConfigError(where, key, f"must be >= 0, got {v}")
    return v


def vector(where: str, key: str, v: Any, size: int) -> tuple[float, ...]:
    if not isinstance(v, (list, tuple)) or len(v) != size:
        raise ConfigError(where, key, f"expected a list of {size} numbers, got {quote(v)}")
    return tuple(number(where, f"{key}[{i}]", x) for i, x in enumerate(v))


def read_yaml(path: str | Path) -> Any:
    """Parse a YAML file of at most :data:`MAX_YAML_BYTES`, UTF-8, without aliases; an
    unreadable, oversized or non-UTF-8 file or bad YAML is a ConfigError naming the file
    (and the line)."""
    p = Path(path)
    try:
        with open(p, "rb") as f:
            data = f.read(MAX_YAML_BYTES + 1)
    except OSError as e:
        raise ConfigError(str(p), "<file>", f"cannot read the file ({e.strerror})") from None
    if len(data) > MAX_YAML_BYTES:
        raise ConfigError(str(p), "<file>", f"the file is larger than {MAX_YAML_BYTES} bytes (1 MiB); "
                          "is it the right file?")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise ConfigError(str(p), f"line {line}", f"the file is not UTF-8 text (byte {e.start})") from None
    return parse_yaml(text, str(p))


def parse_yaml(text: str, where: str) -> Any:
    """Parse YAML ``text`` with the strict loader (:class:`_StrictLoader`: no aliases, no duplicate
    keys, ``1e7`` a number, bounded nesting); bad YAML is a ConfigError naming ``where`` (and the line)."""
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f"line {mark.line + 1}" if mark is not None else "<yaml>"
        raise ConfigError(where, at, f"invalid YAML ({getattr(e, 'problem', e)})") from None
    except ValueError as e:              # a constructor's: an integer of 5000 digits, a 13th month
        raise ConfigError(where, "<yaml>", f"invalid YAML value ({str(e).partition(':')[0]})") from None
