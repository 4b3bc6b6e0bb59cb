"""A recorded earthquake as a rig motion: a CSV of ground accelerations turned into a drift-free
platform displacement.

File: one row per sample, ``t, ax, ay, az`` (s, m/s²; rig axes: x, y horizontal, z up), times
strictly increasing; an optional header row ``t,ax,ay,az`` and ``#`` comment lines. A bad row is
refused naming the file, the line and the problem.

Processing (the usual shaking-table practice): the accelerations resampled every ``dt`` s (linear),
their least-squares line removed (baseline correction), tapered over ``fade`` s at both ends, zero-padded to at least twice their length, high-passed in the frequency domain by a zero-phase
fourth-order Butterworth magnitude |H|² = (f/fc)⁸ / (1 + (f/fc)⁸) and integrated twice there
(X = −A |H|² / ω², no DC, hence no drift); the displacement is then faded in and out over
``fade`` s (quintic, so it starts and ends at rest at home) and played as the natural cubic spline
through it (:meth:`~controller.daemon.rig.motions.SplineMotion.from_displacement`): the acceleration the
rig makes is that spline's, close to the record's band above ``fc`` (``EarthquakeMotion.rms_error``
says how close). Before it is played, :func:`controller.daemon.rig.stroke.check_motion` refuses it if the
rig's stroke cannot hold it, naming the time and the leg.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from controller.daemon.trajectories import quintic_scalar
from controller.daemon.rig.motions import MotionError, SplineMotion

HEADER = ("t", "ax", "ay", "az")
MAX_BYTES = 16 * 1024 * 1024
MAX_DURATION_S = 600.0


class EarthquakeMotion(SplineMotion):
    """The played spline, with ``rms_error`` (m/s²): RMS over the record of the played accelerations
    minus the record's after its baseline correction and taper (what the high-pass takes away)."""

    rms_error = 0.0


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def read_csv(path: str | Path, max_bytes: int = MAX_BYTES) -> tuple[np.ndarray, np.ndarray]:
    """(t (N,), a (N, 3)) of an earthquake CSV; :class:`MotionError` names the file, line and problem."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise MotionError(f"{path}: the file has {size} bytes, more than the {max_bytes} allowed")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MotionError(f"{path}: cannot read the earthquake file ({exc.__class__.__name__}: {exc})") from None
    rows: list[tuple[float, ...]] = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        cells = [c.strip() for c in line.split(",")]
        if not rows and tuple(c.lower() for c in cells) == HEADER:
            continue
        if len(cells) != 4:
            raise MotionError(f"{path}: line {n}: expected 4 columns (t, ax, ay, az), got {len(cells)}")
        try:
            row = tuple(float(c) for c in cells)
        except ValueError:      # the column is named, the file's text never quoted
            bad = next(k for k, c in enumerate(cells) if not _is_number(c))
            raise MotionError(f"{path}: line {n}: column {HEADER[bad]!r} is not a number") from None
        if not all(math.isfinite(v) for v in row):
            raise MotionError(f"{path}: line {n}: a value is not finite")
        if rows and row[0] <= rows[-1][0]:
            raise MotionError(f"{path}: line {n}: time {row[0]:g} s does not increase (previous {rows[-1][0]:g} s)")
        rows.append(row)
    if len(rows) < 2:
        raise MotionError(f"{path}: needs at least 2 samples, got {len(rows)}")
    data = np.array(rows)
    if data[-1, 0] - data[0, 0] > MAX_DURATION_S:
        raise MotionError(f"{path}: the record lasts {data[-1, 0] - data[0, 0]:g} s, more than {MAX_DURATION_S:g} s")
    return data[:, 0] - data[0, 0], data[:, 1:]


def earthquake_motion(t: np.ndarray, acc: np.ndarray, *, highpass: float = 0.1, fade: float = 1.0,
                      dt: float = 0.002, name: str = "earthquake") -> EarthquakeMotion:
    """The drift-free rig motion of accelerations ``acc`` (N, 3) sampled at times ``t``."""
    for key, v in (("highpass", highpass), ("fade", fade), ("dt", dt)):
        if not (math.isfinite(v) and v > 0):
            raise MotionError(f"{name}: {key} must be a finite number > 0, got {v!r}")
    duration = float(t[-1])
    if duration < 2.0 * fade:
        raise MotionError(f"{name}: the record ({duration:g} s) is shorter than its two fades (2 x {fade:g} s)")
    n = int(duration / dt) + 1
    grid = np.arange(n) * dt
    a = np.column_stack([np.interp(grid, t, acc[:, i]) for i in range(3)])
    a -= np.polynomial.polynomial.polyval(grid, np.polynomial.polynomial.polyfit(grid, a, 1)).T   # baseline
    w = np.ones(n)
    k = int(fade / dt)
    for i in range(k + 1):
        w[i] = w[n - 1 - i] = quintic_scalar(i / k)[0]
    a *= w[:, None]
    m = 1 << int(math.ceil(math.log2(2 * n)))
    spec = np.fft.rfft(a, n=m, axis=0)
    f = np.fft.rfftfreq(m, dt)
    r = (f / highpass) ** 8
    gain = np.zeros_like(f)
    gain[1:] = -(r[1:] / (1.0 + r[1:])) / (2.0 * math.pi * f[1:]) ** 2
    disp = np.fft.irfft(spec * gain[:, None], n=m, axis=0)[:n]
    x = np.zeros((n, 6))
    x[:, :3] = disp * w[:, None]
    motion = EarthquakeMotion.from_displacement(dt, x, name=name)
    motion.rms_error = float(np.sqrt(np.mean((motion.a[:, :3] - a) ** 2)))
    return motion


def load_earthquake(path: str | Path, **options) -> EarthquakeMotion:
    """:func:`read_csv` then :func:`earthquake_motion` (keyword options as there)."""
    t, acc = read_csv(path)
    return earthquake_motion(t, acc, name=f"earthquake {Path(path).name}", **options)


def kanai_tajimi(duration: float = 12.0, dt: float = 0.01, *, pga: tuple[float, float, float] = (0.8, 1.0, 0.5),
                 omega_g: float = 15.6, zeta_g: float = 0.6, rise: float = 2.0, strong: float = 6.0,
                 decay: float = 0.8, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A synthetic ground record (t (N,), a (N, 3) m/s²): seeded white noise through the
    Kanai–Tajimi filter H(ω) = (ωg² + 2iζg ωg ω) / (ωg² − ω² + 2iζg ωg ω) (Kanai 1957, Tajimi 1960;
    firm soil ωg = 15.6 rad/s, ζg = 0.6), times the Jennings–Housner–Tsai envelope ((t/rise)² to
    ``rise`` s, 1 for ``strong`` s more, then exp(−decay (t − rise − strong))), each axis scaled to
    its peak ``pga``. Not a recorded earthquake: a representative one for the rig's checks."""
    n = int(round(duration / dt)) + 1
    t = np.arange(n) * dt
    rng = np.random.default_rng(seed)
    w = 2.0 * math.pi * np.fft.rfftfreq(n, dt)
    h = (omega_g ** 2 + 2j * zeta_g * omega_g * w) / (omega_g ** 2 - w ** 2 + 2j * zeta_g * omega_g * w)
    env = np.where(t < rise, (t / rise) ** 2, np.where(t < rise + strong, 1.0, np.exp(-decay * (t - rise - strong))))
    a = np.fft.irfft(np.fft.rfft(rng.standard_normal((n, 3)), axis=0) * h[:, None], n=n, axis=0) * env[:, None]
    return t, a * (np.asarray(pga) / np.abs(a).max(axis=0))


def write_csv(path: str | Path, t: np.ndarray, acc: np.ndarray, comment: str = "") -> None:
    """An earthquake CSV :func:`read_csv` reads (``#`` comment lines, header, ``t,ax,ay,az`` rows)."""
    lines = [f"# {c}" for c in comment.splitlines()] + [",".join(HEADER)]
    lines += [f"{ti:.4f},{a[0]:.6f},{a[1]:.6f},{a[2]:.6f}" for ti, a in zip(t, acc)]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
