"""Checks of one request argument, each refusing bad input with a one-sentence :class:`Reject`.

Shared by the command registry's validators (:mod:`controller.daemon.commands`) and the
protocol's parser (:mod:`controller.daemon.io.protocol`); pure, no I/O (docs/conventions.md).
"""
from __future__ import annotations

import math
from typing import Any

from controller.daemon.codes import Error


class Reject(Exception):
    """A refused request: a stable error code and a one-sentence message naming the problem."""

    def __init__(self, code: Error, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def kind_of(v: Any) -> str:
    """A JSON value as a message shows it (strings cut at 40 characters)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f"the string {v[:40]!r}"
    if isinstance(v, list):
        return f"a list of {len(v)}"
    if isinstance(v, dict):
        return "an object"
    return repr(v)


def number(where: str, v: Any, unit: str) -> float:
    """A finite JSON number (not a boolean) as a float."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise Reject(Error.BAD_ARGS, f"{where} must be a number{f' in {unit}' if unit else ''}, got {kind_of(v)}.")
    try:
        x = float(v)
    except OverflowError:
        raise Reject(Error.OUT_OF_RANGE, f"{where} is an integer too large for a float.") from None
    if not math.isfinite(x):
        raise Reject(Error.NOT_FINITE, f"{where} = {x} is not a finite number.")
    return x


def within(where: str, x: float, lo: float, hi: float, unit: str) -> float:
    """``x`` in [lo, hi], bounds inclusive."""
    u = f" {unit}" if unit else ""
    if not lo <= x <= hi:
        raise Reject(Error.OUT_OF_RANGE, f"{where} = {x:g}{u} is outside [{lo:g}, {hi:g}]{u}.")
    return x


def duration(where: str, v: Any, max_duration: float) -> float:
    """A duration in (0, max_duration] s."""
    x = number(where, v, "s")
    if not 0.0 < x <= max_duration:
        raise Reject(Error.OUT_OF_RANGE, f"{where} = {x:g} s is outside (0, {max_duration:g}] s.")
    return x


def boolean(where: str, v: Any) -> bool:
    """A JSON ``true`` or ``false``."""
    if not isinstance(v, bool):
        raise Reject(Error.BAD_ARGS, f"{where} must be true or false, got {kind_of(v)}.")
    return v


def integer(where: str, v: Any, lo: int, hi: int) -> int:
    """A JSON integer (not a boolean) in lo..hi."""
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise Reject(Error.BAD_ARGS, f"{where} must be an integer in {lo}..{hi}, got {kind_of(v)}.")
    return v
