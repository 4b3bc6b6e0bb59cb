"""Joint-trajectory files for playback, e.g. an offline walking trajectory.

Format: CSV, header ``t,<joint>,<joint>,...`` then one row per knot: time (s) and joint
positions (rad). Columns may come in any order but every joint of the robot must be
present: the I/O process that loads the file does not know where the robot stands, so
it cannot fill a missing joint with "its current position", and a file that names every
joint says explicitly what each one does. Lines starting with ``#`` and blank lines are
ignored (line numbers in errors count them). An optional ``support`` column names the
support phase of each row (``left``, ``right`` or ``double``, as ``bipd gait`` writes it):
the joints ignore it; ``load_trajectory(..., with_support=True)`` carries it, resampled as
the phase of the last row at or before each sample.

Validation (no message quotes the file's text, so that an error says nothing about a file
it should not have read; it names the line and the joint, or the column by number when the
header names no joint of the robot): readable UTF-8 file; known, unique, complete joint columns
(an unknown name or a wrong count is refused with the robot's joints); at least two rows, each
with as many fields as the header; every value a finite number; strictly increasing time;
positions within [qmin, qmax]; the jump of each joint between consecutive rows at most vmax times
their time step; a support value, when the column is there, one of the phases. The knots are then
resampled to the cycle period by linear interpolation from the first time to the last
(the last sample is the last row): a linear interpolant stays between its knots, so
the position and velocity checks above hold for every resampled sample too (a cubic
spline could overshoot both). The acceleration is not bounded by the knots: the resampled
samples are then checked as the loop will play them (q̇, q̈ central differences): |q̈| within
each joint's declared acceleration limit (``limits.acceleration``) and the torque the loop's
feed-forward will ask, τ = A q̈ + C q̇ + G + rotors and friction along the file
(:mod:`controller.daemon.io.effort`), within τmax; a refusal names the joint, the row and its
time, and the limit.
"""
from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from models.common.support import SUPPORT_NAMES as SUPPORT_PHASES

SUPPORT_COLUMN = "support"


class TrajectoryFileError(ValueError):
    """A trajectory file that cannot be played; the message names file and line."""


def _read_rows(path: Path) -> list[tuple[int, list[str]]]:
    """(line number, fields) of the non-comment, non-blank lines."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise TrajectoryFileError(f"{path}: cannot read the trajectory file ({e})") from None
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip() and not line.lstrip().startswith("#"):
            rows.append((number, [f.strip() for f in next(csv.reader([line]))]))
    return rows


def _columns(path: Path, line: int, header: list[str], joint_names: tuple[str, ...]) -> list[int]:
    """For each joint, its column in the file."""
    if not header or header[0] != "t":
        raise TrajectoryFileError(f"{path}, line {line}: the header must start with 't' (time, s)")
    names = header[1:]
    for name in names:
        if names.count(name) > 1 and (name in joint_names or name == SUPPORT_COLUMN):
            raise TrajectoryFileError(f"{path}, line {line}: column {name!r} appears twice")
    unknown = [i + 2 for i, name in enumerate(names) if name not in joint_names and name != SUPPORT_COLUMN]
    missing = [j for j in joint_names if j not in names]
    if unknown or missing:
        found = len(names) - names.count(SUPPORT_COLUMN)
        problems = ([f"header column(s) {unknown} are not joints of this robot"] if unknown else []) + (
            [f"joint column(s) {missing} are missing"] if missing else [])
        raise TrajectoryFileError(f"{path}, line {line}: {' and '.join(problems)}; the header names {found} "
                                  f"joint columns, this robot has {len(joint_names)} joints {list(joint_names)} "
                                  "and every one must be given")
    return [header.index(j) for j in joint_names]


def _number(path: Path, line: int, column: str, field: str) -> float:
    try:
        v = float(field)
    except ValueError:
        v = math.nan
    if not math.isfinite(v):
        raise TrajectoryFileError(f"{path}, line {line}, column {column!r}: expected a finite number")
    return v


def load_trajectory(path: str | Path, joint_names: tuple[str, ...], qmin: np.ndarray, qmax: np.ndarray,
                    vmax: np.ndarray, period: float, with_support: bool = False, max_samples: int | None = None,
                    amax: np.ndarray | None = None, torques=None):
    """Validate a trajectory file (module docstring) and resample it to ``period`` s:
    an array (samples, n) of joint positions in the order of ``joint_names``, sample k
    at time t0 + k·period; with ``with_support``, also the support phase per sample (an
    int array indexing :data:`SUPPORT_PHASES`, None when the file has no such column).
    A file that would resample to more than ``max_samples`` (the trajectory buffer) is refused
    before anything is resampled. With ``amax``, the resampled acceleration is checked; with
    ``torques`` (a :class:`controller.daemon.io.effort.TrajectoryTorques`), the joint torques
    (module docstring). Raises :class:`TrajectoryFileError`."""
    path = Path(path)
    if not (math.isfinite(period) and period > 0.0):
        raise ValueError(f"the resampling period must be a finite number > 0 s, got {period!r}")
    rows = _read_rows(path)
    if not rows:
        raise TrajectoryFileError(f"{path}: the trajectory file is empty")
    head_line, header = rows[0]
    cols = _columns(path, head_line, header, tuple(joint_names))
    if len(rows) < 3:
        raise TrajectoryFileError(f"{path}, line {rows[-1][0]}: a trajectory needs at least 2 rows after "
                                  f"the header, got {len(rows) - 1}")
    n = len(cols)
    lines = [line for line, _ in rows[1:]]
    sc = header.index(SUPPORT_COLUMN) if SUPPORT_COLUMN in header else None
    support = np.zeros(len(lines), dtype=np.int64)
    t = np.empty(len(lines))
    q = np.empty((len(lines), n))
    for i, (line, fields) in enumerate(rows[1:]):
        if len(fields) != len(header):
            where = (f"no value for column {header[len(fields)]!r}" if len(fields) < len(header)
                     else f"a value after the last column {header[-1]!r}")
            raise TrajectoryFileError(f"{path}, line {line}: expected {len(header)} fields like the header, "
                                      f"got {len(fields)} ({where})")
        t[i] = _number(path, line, "t", fields[0])
        for j, c in enumerate(cols):
            q[i, j] = _number(path, line, joint_names[j], fields[c])
        if sc is not None:
            if fields[sc] not in SUPPORT_PHASES:
                raise TrajectoryFileError(f"{path}, line {line}, column {SUPPORT_COLUMN!r}: expected one of "
                                          f"{list(SUPPORT_PHASES)}")
            support[i] = SUPPORT_PHASES.index(fields[sc])
        if i and not t[i] > t[i - 1]:
            raise TrajectoryFileError(f"{path}, line {line}: time must increase strictly, "
                                      f"got {t[i]} s after {t[i - 1]} s")
        for j in range(n):
            if not qmin[j] <= q[i, j] <= qmax[j]:
                limit = qmin[j] if q[i, j] < qmin[j] else qmax[j]
                raise TrajectoryFileError(f"{path}, line {line}: joint {joint_names[j]!r} at {q[i, j]} rad "
                                          f"is beyond its limit {limit} rad")
        if i:
            dt = t[i] - t[i - 1]
            for j in range(n):
                jump = abs(q[i, j] - q[i - 1, j])
                if jump / dt > vmax[j]:
                    raise TrajectoryFileError(
                        f"{path}, line {line}: joint {joint_names[j]!r} jumps {jump:.6g} rad in {dt:.6g} s from "
                        f"line {lines[i - 1]} ({jump / dt:.6g} rad/s), more than its velocity limit {vmax[j]} "
                        f"rad/s allows ({vmax[j] * dt:.6g} rad)")
    seconds = float(t[-1]) - float(t[0])                # inf when t spans more than a float holds
    span = seconds / period
    if max_samples is not None and not span - 1e-9 <= max_samples - 1:
        raise TrajectoryFileError(f"{path}: its {seconds:g} s resample to more than {max_samples} samples of "
                                  f"{period:g} s, the trajectory buffer's limit ({(max_samples - 1) * period:g} s)")
    steps = math.ceil(span - 1e-9)
    ts = np.minimum(t[0] + period * np.arange(steps + 1), t[-1])
    qs = np.column_stack([np.interp(ts, t, q[:, j]) for j in range(n)])
    phases = None if sc is None else support[np.searchsorted(t, ts, side="right") - 1]
    if amax is not None:
        _check_acceleration(path, qs, period, joint_names, np.asarray(amax, dtype=float), t, ts, lines)
    if torques is not None:
        _check_torque(path, qs, phases, period, joint_names, torques, t, ts, lines)
    if not with_support:
        return qs
    return qs, phases


def _row(t: np.ndarray, ts: np.ndarray, k: int, lines: list[int]) -> str:
    """Sample k's time and the file's row nearest to it, as an error names them."""
    i = int(np.argmin(np.abs(t - ts[k])))
    return f"line {lines[i]} (t = {ts[k]:.6g} s)"


def _check_acceleration(path: Path, qs: np.ndarray, period: float, joint_names: tuple[str, ...],
                        amax: np.ndarray, t: np.ndarray, ts: np.ndarray, lines: list[int]) -> None:
    """|q̈| within amax at every inner sample, q̈ the loop's central difference of the samples
    (controller.daemon.loop.references.playback): a corner of the knots is a velocity step there."""
    if len(qs) < 3:
        return
    qdd = np.abs(qs[2:] - 2.0 * qs[1:-1] + qs[:-2]) / (period * period)
    k, j = np.unravel_index(int(np.argmax(qdd / amax)), qdd.shape)
    if qdd[k, j] > amax[j]:
        raise TrajectoryFileError(f"{path}, {_row(t, ts, k + 1, lines)}: joint {joint_names[j]!r} accelerates at "
                                  f"{qdd[k, j]:.6g} rad/s² there, more than its acceleration limit {amax[j]:g} "
                                  "rad/s² (limits.acceleration)")


def _check_torque(path: Path, qs: np.ndarray, phases: np.ndarray | None, period: float,
                  joint_names: tuple[str, ...], torques, t: np.ndarray, ts: np.ndarray, lines: list[int]) -> None:
    """|τ| within τmax at every sample, τ the inverse dynamics the loop's feed-forward computes
    (``torques``: controller.daemon.io.effort.TrajectoryTorques)."""
    tau, bad = torques(qs, phases, period)
    if bad >= 0:
        raise TrajectoryFileError(f"{path}, {_row(t, ts, bad, lines)}: the transmission cannot reach this posture")
    ratio = np.abs(tau) / torques.taumax
    k, j = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    if ratio[k, j] > 1.0:
        raise TrajectoryFileError(f"{path}, {_row(t, ts, k, lines)}: joint {joint_names[j]!r} would need "
                                  f"{tau[k, j]:+.6g} N·m there (inverse dynamics with gravity), more than its torque "
                                  f"limit {torques.taumax[j]:g} N·m")
