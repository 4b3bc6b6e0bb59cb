"""Typed errors of the models package.

Every error that reaches a user names what was wrong and where, in one sentence
(docs/conventions.md).
"""
from __future__ import annotations

import reprlib

QUOTE_CHARS = 100


def _bounded_repr() -> reprlib.Repr:
    r = reprlib.Repr()
    r.maxlevel, r.maxstring, r.maxlong, r.maxother = 2, 60, 40, 60
    r.maxtuple = r.maxlist = r.maxarray = r.maxdict = r.maxset = r.maxfrozenset = r.maxdeque = 4
    return r


_QUOTE = _bounded_repr()

def quote(value: object) -> str:
    """``repr(value)`` bounded in size and cost (at most :data:`QUOTE_CHARS` characters, long
    strings and lists elided with ``...``): every error message that quotes a user's value uses
    it, so one line stays one line even for a value built from many YAML aliases."""
    text = _QUOTE.repr(value)
    return text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS - 3] + "..."


class ModelError(Exception):
    """Base class of the errors raised by ``models``."""


class ConfigError(ModelError, ValueError):
    """A robot description (YAML) is invalid; the message names the file and the key."""

    def __init__(self, where: str, key: str, message: str) -> None:
        self.where = where
        self.key = key
        super().__init__(f"{where}: {key}: {message}")


class TransmissionFault(ModelError):
    """A transmission cannot be evaluated: a linkage cannot close (negative radicand,
    thesis eq. 12-14, 18-19) or the motor -> joint Newton iteration did not converge."""


class GeometryError(ModelError):
    """An impossible geometry was asked of a model (never ``abs()``-ed away)."""


class WorkspaceError(GeometryError):
    """A platform pose or a set of actuator lengths the rig cannot reach, or a singular
    configuration (a Stewart-Gough kernel's status other than OK, kept in ``status``)."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)
