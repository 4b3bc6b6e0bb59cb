"""SI values <-> the integers of the CiA 402 process data (IEC 61800-7-201), in Numba.

Each axis has one row of scale factors (:func:`scale_table`, columns in the order of
:data:`drivers.pdo.SCALES`) from its bus YAML drive parameters: a value ``v`` in SI
travels as ``rint(v * scale)``, saturated to its data type's range. A field is described by the
row of a field table (:meth:`drivers.pdo.PdoMapping.table`: offset, size, lowest,
highest, scale column), so the kernels here serve any integer type the mapping declares; a field
the mapping does not carry (offset -1) reads NaN and is not written. Nothing is allocated.
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numba import njit

from drivers.config import AxisConfig
from drivers.powerlink.checks import le, put_le
from drivers.pdo import FIELD_COLUMNS, SCALES

OFFSET, SIZE, LOW, HIGH, COLUMN = (FIELD_COLUMNS.index(n) for n in ("offset", "size", "low", "high", "scale"))


def scale_table(axes: Iterable[AxisConfig]) -> np.ndarray:
    """One row per axis: increments per rad (positions and velocities), per mille per N·m of the
    rated torque, per mille per A of the rated current (the columns of ``SCALES``)."""
    factors = {"position": lambda d: d.increments_per_rad, "velocity": lambda d: d.increments_per_rad,
               "torque": lambda d: 1000.0 / d.rated_torque, "current": lambda d: 1000.0 / d.rated_current}
    return np.array([[factors[s](a.drive) for s in SCALES] for a in axes], np.float64).reshape(-1, len(SCALES))


@njit(cache=True)
def quantize(value, scale, low, high):
    """(integer, clamped) of ``value * scale`` rounded to nearest and saturated into
    [``low``, ``high``]; a NaN gives (0, True): never an integer the caller did not mean."""
    v = value * scale
    if v != v:
        return np.int64(0), True
    if v > high:
        return np.int64(high), True
    if v < low:
        return np.int64(low), True
    return np.int64(np.rint(v)), False


@njit(cache=True)
def put_scaled(row, at, field, value, scales):
    """``value`` (SI) as the integer ``field`` at ``row[at + offset]``; True when it did not fit (it
    is then saturated, and a NaN leaves the bytes of the last value in place)."""
    if field[OFFSET] < 0:
        return False
    q, clamped = quantize(value, scales[field[COLUMN]], field[LOW], field[HIGH])
    if value == value:
        put_le(row, at + field[OFFSET], q, field[SIZE])
    return clamped


@njit(cache=True)
def get_integer(row, at, field):
    """The integer ``field`` at ``row[at + offset]`` (sign-extended when its type is signed)."""
    size = field[SIZE]
    v = le(row, at + field[OFFSET], size)
    if field[LOW] < 0 and v > field[HIGH]:
        v -= np.int64(1) << np.int64(8 * size)
    return v


@njit(cache=True)
def get_scaled(row, at, field, scales):
    """The integer ``field`` at ``row[at + offset]`` back in SI (NaN: not mapped)."""
    if field[OFFSET] < 0:
        return np.nan
    return get_integer(row, at, field) / scales[field[COLUMN]]
