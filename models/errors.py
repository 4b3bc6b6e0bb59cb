"""Typed errors of the models package.

Every error that reaches a user names what was wrong and where, in one sentence
(docs/conventions.md).
"""
from __future__ import annotations


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
