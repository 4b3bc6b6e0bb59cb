"""Safety checks run on every setpoint (docs/cycle.md): hard limits fault, soft limits clamp.

Per joint, with margin m, tolerance t and factor f (``Limits``):
  hard (fault, nothing reaches a drive): a non-finite value anywhere in q, q̇, q_ref,
    q̇_ref, τ; q or q_ref outside [qmin - t, qmax + t]; |q̇| or |q̇_ref| > f vmax;
    |τ| > f τmax;
  soft (clamp in place, warning event): q_ref into [qmin + m, qmax - m], q̇_ref into
    ±vmax, τ into ±τmax.
The cycle calls check_hard on the raw measurement and setpoints, then clamp_soft on
the setpoints. Kernels return codes, never raise, and do not allocate. :class:`Watchdog` is the
command-client heartbeat watchdog of a motion.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from controller.daemon.codes import Reason

# Fault codes of check_hard (the index returned with them is the joint).
OK = 0
NONFINITE_Q, NONFINITE_QD, NONFINITE_Q_REF, NONFINITE_QD_REF, NONFINITE_TAU = 1, 2, 3, 4, 5
HARD_Q, HARD_QD, HARD_Q_REF, HARD_QD_REF, HARD_TAU = 6, 7, 8, 9, 10
FAULTS = ("ok", "non-finite q", "non-finite q̇", "non-finite q_ref", "non-finite q̇_ref",
          "non-finite τ", "q beyond its hard limit", "|q̇| beyond its hard limit",
          "q_ref beyond its hard limit", "|q̇_ref| beyond its hard limit", "|τ| beyond its hard limit")

# Flag bits of clamp_soft.
SOFT_Q, SOFT_QD, SOFT_TAU = 1, 2, 4

# Rows of the limits table (one column per joint).
QMIN, QMAX, VMAX, TMAX, MARGIN, TOL, FACTOR = range(7)


@njit(cache=True)
def first_nonfinite(x: np.ndarray) -> int:
    """Index of the first non-finite value of ``x``, -1 if none."""
    for j in range(x.size):
        if not math.isfinite(x[j]):
            return j
    return -1


@njit(cache=True)
def check_hard(lim: np.ndarray, q: np.ndarray, qd: np.ndarray, q_ref: np.ndarray,
               qd_ref: np.ndarray, tau: np.ndarray) -> tuple[int, int]:
    """First hard-limit violation as (fault code, joint), (OK, -1) if none. Non-finite
    values are checked first, in the order q, q̇, q_ref, q̇_ref, τ."""
    j = first_nonfinite(q)
    if j >= 0:
        return NONFINITE_Q, j
    j = first_nonfinite(qd)
    if j >= 0:
        return NONFINITE_QD, j
    j = first_nonfinite(q_ref)
    if j >= 0:
        return NONFINITE_Q_REF, j
    j = first_nonfinite(qd_ref)
    if j >= 0:
        return NONFINITE_QD_REF, j
    j = first_nonfinite(tau)
    if j >= 0:
        return NONFINITE_TAU, j
    for j in range(q.size):
        lo = lim[QMIN, j] - lim[TOL, j]
        hi = lim[QMAX, j] + lim[TOL, j]
        vmax = lim[FACTOR, j] * lim[VMAX, j]
        if q[j] < lo or q[j] > hi:
            return HARD_Q, j
        if abs(qd[j]) > vmax:
            return HARD_QD, j
        if q_ref[j] < lo or q_ref[j] > hi:
            return HARD_Q_REF, j
        if abs(qd_ref[j]) > vmax:
            return HARD_QD_REF, j
        if abs(tau[j]) > lim[FACTOR, j] * lim[TMAX, j]:
            return HARD_TAU, j
    return OK, -1


@njit(cache=True)
def clamp_soft(lim: np.ndarray, q_ref: np.ndarray, qd_ref: np.ndarray,
               tau: np.ndarray) -> tuple[int, int]:
    """Clamp the setpoints in place to the soft limits; returns (flags, first clamped
    joint or -1), flags an OR of SOFT_Q, SOFT_QD, SOFT_TAU."""
    flags = 0
    first = -1
    for j in range(q_ref.size):
        f = 0
        lo = lim[QMIN, j] + lim[MARGIN, j]
        hi = lim[QMAX, j] - lim[MARGIN, j]
        if q_ref[j] < lo or q_ref[j] > hi:
            q_ref[j] = min(max(q_ref[j], lo), hi)
            f |= SOFT_Q
        if abs(qd_ref[j]) > lim[VMAX, j]:
            qd_ref[j] = math.copysign(lim[VMAX, j], qd_ref[j])
            f |= SOFT_QD
        if abs(tau[j]) > lim[TMAX, j]:
            tau[j] = math.copysign(lim[TMAX, j], tau[j])
            f |= SOFT_TAU
        if f and first < 0:
            first = j
        flags |= f
    return flags, first


def reason(code: int) -> Reason:
    """The event reason of a check_hard fault code."""
    return Reason.NON_FINITE if code <= NONFINITE_TAU else Reason.HARD_LIMIT


def check_name(code: int) -> str:
    """What a check_hard fault code found."""
    return FAULTS[code] if 0 <= code < len(FAULTS) else f"safety check {code}"


def describe(code: int, joint: int, joint_names: tuple[str, ...]) -> str:
    """One sentence for a check_hard fault (I/O side, logs): which limit, on which joint."""
    return f"{check_name(code)} on {joint_names[joint]}" if 0 <= joint < len(joint_names) else check_name(code)


class Limits:
    """Per-joint limits (rad, rad/s, N·m) as the kernels' table ``lim`` (7, n).
    ``margin`` (rad) shrinks the soft position range, ``tol`` (rad) widens the hard
    one, ``factor`` (> 1) scales vmax and τmax into hard limits."""

    def __init__(self, qmin, qmax, vmax, tau_max, margin=0.02, tol=0.05, factor=1.5) -> None:
        rows = (qmin, qmax, vmax, tau_max, margin, tol, factor)
        n = np.asarray(qmin).size
        self.lim = np.empty((7, n))
        for k, (name, value) in enumerate(zip(("qmin", "qmax", "vmax", "tau_max", "margin", "tol", "factor"), rows)):
            v = np.broadcast_to(np.asarray(value, dtype=np.float64), (n,))
            bad = np.flatnonzero(~np.isfinite(v))
            if bad.size:
                raise ValueError(f"limit {name}[{bad[0]}] must be finite, got {v[bad[0]]}")
            self.lim[k] = v
        checks = ((self.lim[VMAX] > 0.0, "vmax must be > 0"), (self.lim[TMAX] > 0.0, "tau_max must be > 0"),
                  (self.lim[MARGIN] >= 0.0, "margin must be >= 0"), (self.lim[TOL] >= 0.0, "tol must be >= 0"),
                  (self.lim[FACTOR] >= 1.0, "factor must be >= 1"),
                  (self.lim[QMIN] + self.lim[MARGIN] < self.lim[QMAX] - self.lim[MARGIN],
                   "qmin + margin must be below qmax - margin"))
        for ok, what in checks:
            bad = np.flatnonzero(~ok)
            if bad.size:
                raise ValueError(f"joint {bad[0]}: {what}, got limits {self.lim[:, bad[0]].tolist()} "
                                 "(qmin, qmax, vmax, tau_max, margin, tol, factor)")
        self.lim.flags.writeable = False

    def check(self, q: np.ndarray, qd: np.ndarray, q_ref: np.ndarray, qd_ref: np.ndarray,
              tau: np.ndarray) -> tuple[int, int]:
        """:func:`check_hard` on this table."""
        return check_hard(self.lim, q, qd, q_ref, qd_ref, tau)

    def clamp(self, q_ref: np.ndarray, qd_ref: np.ndarray, tau: np.ndarray) -> tuple[int, int]:
        """:func:`clamp_soft` on this table."""
        return clamp_soft(self.lim, q_ref, qd_ref, tau)


class Watchdog:
    """Command-client heartbeat watchdog of a motion: armed by :meth:`arm`, fed by
    every heartbeat, expired when no heartbeat came for more than ``timeout`` s
    (the loop then soft-stops). Times come from the caller's monotonic clock."""

    def __init__(self, timeout: float) -> None:
        if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0.0):
            raise ValueError(f"watchdog timeout must be a finite number > 0 s, got {timeout!r}")
        self.timeout = float(timeout)
        self.armed = False
        self.last = 0.0

    def arm(self, now: float) -> None:
        """Start watching (a motion starts), counting from ``now``."""
        self.armed = True
        self.last = now

    def disarm(self) -> None:
        """Stop watching (the motion ended)."""
        self.armed = False

    def feed(self, now: float) -> None:
        """A heartbeat arrived at ``now``."""
        self.last = now

    def expired(self, now: float) -> bool:
        """True if armed and the last heartbeat is older than the timeout."""
        return self.armed and now - self.last > self.timeout
