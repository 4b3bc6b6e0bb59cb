"""Platform motions of the Stewart–Gough rig, as offsets from its home pose.

A motion is an object with ``start(t)``, ``sample(t, x, xd, xdd) -> done`` and ``done``: it writes
the platform pose offset x = (x, y, z, α1, α2, α3) from the home pose (0, 0, h, 0, 0, 0), and its
first two time derivatives, into preallocated arrays (Staicu 2008, eq. 5–7: frame 0 z up, the
platform orientation R = Rx(α1) Ry(α2) Rz(α3)). Sampling allocates nothing: scalar arithmetic on
arrays built at construction. Before a motion is played, :func:`controller.daemon.rig.stroke.check_motion`
runs the rig's inverse kinematics over all of it and refuses what the actuators cannot make.

The bench leg stands on the plate with its thesis world axes (x_g up, Gastebois 2017, eq. 45–47)
on the rig's as y_g → x, z_g → y, x_g → z (as the hinge bench's MuJoCo scene,
``drivers.sim.hil.mjcf.WORLD_FROM_G``); the hinge platform's R_M→O0 = Rz_g(α) Ry_g(−β) is then
Ry(α) Rx(−β) in rig axes (:mod:`models.rig.tilt`).

Motions: :class:`TiltSequence` (quintic moves of the hinge angles, as the two-hinge platform),
:class:`SineSum` (:func:`sinusoid`, :func:`heave`, :func:`ship_deck`: sums of sinusoids under a
smooth envelope), :class:`SplineMotion` (a cubic spline of the pose: :func:`acceleration_step`,
and the recorded earthquakes of :mod:`controller.daemon.rig.earthquake`).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from models.rig.tilt import THESIS, hinge_to_euler

from controller.daemon.trajectories import quintic_scalar

DOFS = ("x", "y", "z", "roll", "pitch", "yaw")   # pose offset components (m, m, m, rad, rad, rad)
G = 9.81


class MotionError(ValueError):
    """A motion's parameters are invalid, or the rig cannot make it; the message names what and where."""


class Motion:
    """Base of the motions: ``at(tau, x, xd, xdd)`` fills the offset at ``tau`` s into the motion
    (clamped to [0, duration]); ``sample`` is ``at`` from the start time, and says when it is over."""

    name = "motion"

    def __init__(self, duration: float) -> None:
        if not (math.isfinite(duration) and duration > 0.0):
            raise MotionError(f"{self.name}: duration must be a finite number > 0 s, got {duration!r}")
        self.duration = float(duration)
        self.t0 = 0.0
        self.done = False

    @property
    def shortest_period(self) -> float:
        """s, the period of the motion's fastest component (inf: none given); its checks sample finer."""
        return math.inf

    def start(self, t: float) -> None:
        self.t0 = t
        self.done = False

    def sample(self, t: float, x: np.ndarray, xd: np.ndarray, xdd: np.ndarray) -> bool:
        tau = t - self.t0
        self.at(min(max(tau, 0.0), self.duration), x, xd, xdd)
        self.done = tau >= self.duration
        return self.done

    def at(self, tau: float, x: np.ndarray, xd: np.ndarray, xdd: np.ndarray) -> None:
        raise NotImplementedError

    def sample_many(self, taus: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(x, ẋ, ẍ) at every τ of ``taus`` (each (N, 6)), for checks off the loop; the motions
        that are sums or tables override it with array arithmetic."""
        out = np.zeros((3, len(taus), 6))
        for k, tau in enumerate(taus):
            self.at(float(tau), out[0, k], out[1, k], out[2, k])
        return out[0], out[1], out[2]


class TiltSequence(Motion):
    """Quintic moves of the hinge angles (α, β) through ``points`` [(α, β, duration s), ...] from
    ``start`` (level), as the two-hinge platform's ``platform`` command (Gastebois 2017, §2.6.3:
    α 0→10°, β 0→20°, 7 s each way). A motion ends level (``end_level``, every rig motion starts
    and ends at home) unless it is the ``platform`` command's tilt, which stays. The Euler rates
    come from a central difference of :func:`hinge_to_euler` over ``H`` s (the quintic is smooth:
    the error is O(H²), below 1e-6 of the rates). (α, β) are the robot's (``convention``,
    :mod:`models.rig.tilt`): the bench leg's hinges, or a tree's roll then pitch."""

    name = "tilt"
    H = 1.0e-3

    def __init__(self, points: Sequence[Sequence[float]], start: Sequence[float] = (0.0, 0.0),
                 end_level: bool = True, convention: int = THESIS) -> None:
        pts = np.asarray(points, dtype=np.float64)
        if pts.ndim != 2 or pts.shape[1] != 3 or len(pts) == 0 or not np.all(np.isfinite(pts)):
            raise MotionError(f"tilt: points must be finite [alpha, beta, duration] triples, got {points!r}")
        if np.any(pts[:, 2] <= 0.0):
            raise MotionError(f"tilt: every duration must be > 0 s, got {pts[:, 2].tolist()}")
        if end_level and (pts[-1, 0] != 0.0 or pts[-1, 1] != 0.0):
            raise MotionError(f"tilt: the last point must be level (0, 0): every rig motion starts and ends at "
                              f"home, got {pts[-1, :2].tolist()}")
        self.targets = np.vstack([np.asarray(start, dtype=np.float64), pts[:, :2]])
        self.ends = np.cumsum(pts[:, 2])
        self.lengths = pts[:, 2].copy()
        self._e = np.zeros((3, 3))
        self.convention = convention
        super().__init__(float(self.ends[-1]))

    def _angles(self, tau: float, out: np.ndarray) -> None:
        k = 0
        while k < len(self.ends) - 1 and tau > self.ends[k]:
            k += 1
        r = quintic_scalar((tau - (self.ends[k] - self.lengths[k])) / self.lengths[k])[0]
        a0, a1 = self.targets[k], self.targets[k + 1]
        hinge_to_euler(a0[0] + r * (a1[0] - a0[0]), a0[1] + r * (a1[1] - a0[1]), out, self.convention)

    def at(self, tau: float, x: np.ndarray, xd: np.ndarray, xdd: np.ndarray) -> None:
        h, e = self.H, self._e
        self._angles(tau - h, e[0])
        self._angles(tau, e[1])
        self._angles(tau + h, e[2])
        for i in range(3):
            x[i] = xd[i] = xdd[i] = 0.0
            x[3 + i] = e[1, i]
            xd[3 + i] = (e[2, i] - e[0, i]) / (2.0 * h)
            xdd[3 + i] = (e[2, i] - 2.0 * e[1, i] + e[0, i]) / (h * h)


# --- sums of sinusoids --------------------------------------------------------------------------

def _envelope(tau: float, duration: float, ramp: float) -> tuple[float, float, float]:
    """(w, w', w'') of a quintic fade-in over ``ramp`` s and fade-out over the last ``ramp`` s."""
    if ramp <= 0.0:
        return 1.0, 0.0, 0.0
    if tau < ramp:
        r, dr, ddr = quintic_scalar(tau / ramp)
        return r, dr / ramp, ddr / ramp ** 2
    if tau > duration - ramp:
        r, dr, ddr = quintic_scalar((duration - tau) / ramp)
        return r, -dr / ramp, ddr / ramp ** 2
    return 1.0, 0.0, 0.0


class SineSum(Motion):
    """x_d(τ) = w(τ) Σ_k A_k sin(ω_k τ + φ_k) over the components k of dof d (:data:`DOFS`), under
    the envelope w (quintic fade-in and fade-out over ``ramp`` s), so the motion starts and ends at
    rest at home; derivatives by the product rule."""

    name = "sine sum"

    def __init__(self, dof: Sequence[int], amplitude: Sequence[float], omega: Sequence[float],
                 phase: Sequence[float], duration: float, ramp: float, name: str = "sine sum") -> None:
        self.name = name
        super().__init__(duration)
        self.dof = np.asarray(dof, dtype=np.int64)
        self.amp, self.omega, self.phase = (np.asarray(v, dtype=np.float64) for v in (amplitude, omega, phase))
        if not (self.dof.shape == self.amp.shape == self.omega.shape == self.phase.shape and self.dof.ndim == 1):
            raise MotionError(f"{name}: dof, amplitude, omega and phase must be equally long lists")
        if np.any((self.dof < 0) | (self.dof >= 6)):
            raise MotionError(f"{name}: a component's dof must be one of 0..5 ({', '.join(DOFS)})")
        for what, v in (("amplitude", self.amp), ("omega", self.omega), ("phase", self.phase)):
            if not np.all(np.isfinite(v)):
                raise MotionError(f"{name}: every {what} must be finite, got {v.tolist()}")
        if not (math.isfinite(ramp) and 0.0 <= ramp <= self.duration / 2.0):
            raise MotionError(f"{name}: the ramp must be between 0 and half the duration "
                              f"({self.duration / 2.0:g} s), got {ramp!r}")
        self.ramp = float(ramp)

    @property
    def shortest_period(self) -> float:
        top = float(np.abs(self.omega).max()) if self.omega.size else 0.0
        return 2.0 * math.pi / top if top > 0.0 else math.inf

    def sample_many(self, taus: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        env = np.array([_envelope(float(t), self.duration, self.ramp) for t in taus])
        arg = np.outer(taus, self.omega) + self.phase
        f, fd = self.amp * np.sin(arg), self.amp * self.omega * np.cos(arg)
        fdd = -self.omega ** 2 * f
        out = np.zeros((3, len(taus), 6))
        w, dw, ddw = env[:, :1], env[:, 1:2], env[:, 2:3]
        for k, d in enumerate(self.dof):
            out[0, :, d] += (w * f[:, k:k + 1])[:, 0]
            out[1, :, d] += (dw * f[:, k:k + 1] + w * fd[:, k:k + 1])[:, 0]
            out[2, :, d] += (ddw * f[:, k:k + 1] + 2.0 * dw * fd[:, k:k + 1] + w * fdd[:, k:k + 1])[:, 0]
        return out[0], out[1], out[2]

    def at(self, tau: float, x: np.ndarray, xd: np.ndarray, xdd: np.ndarray) -> None:
        x.fill(0.0)
        xd.fill(0.0)
        xdd.fill(0.0)
        w, dw, ddw = _envelope(tau, self.duration, self.ramp)
        for k in range(self.dof.shape[0]):
            d, a, om = self.dof[k], self.amp[k], self.omega[k]
            s, c = math.sin(om * tau + self.phase[k]), math.cos(om * tau + self.phase[k])
            f, fd, fdd = a * s, a * om * c, -a * om * om * s
            x[d] += w * f
            xd[d] += dw * f + w * fd
            xdd[d] += ddw * f + 2.0 * dw * fd + w * fdd


def _dof(axis: str) -> int:
    if axis not in DOFS:
        raise MotionError(f"axis must be one of {', '.join(DOFS)}, got {axis!r}")
    return DOFS.index(axis)


def _positive(name: str, **values: float) -> None:
    for key, v in values.items():
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise MotionError(f"{name}: {key} must be a finite number > 0, got {v!r}")


def sinusoid(axis: str, amplitude: float, frequency: float, cycles: float = 5.0,
             ramp_cycles: float = 1.0) -> SineSum:
    """A sinusoid of ``amplitude`` (m or rad) at ``frequency`` Hz along ``axis`` for ``cycles``
    periods, faded in and out over ``ramp_cycles`` periods (peak acceleration A (2π f)²)."""
    _positive("sinusoid", amplitude=amplitude, frequency=frequency, cycles=cycles)
    om = 2.0 * math.pi * frequency
    return SineSum([_dof(axis)], [amplitude], [om], [0.0], cycles / frequency, ramp_cycles / frequency,
                   name=f"sinusoid {axis} {amplitude:g} @ {frequency:g} Hz")


def heave(amplitude: float, frequency: float, cycles: float = 5.0, ramp_cycles: float = 1.0) -> SineSum:
    """A vertical sinusoid (:func:`sinusoid` along z)."""
    return sinusoid("z", amplitude, frequency, cycles, ramp_cycles)


def pierson_moskowitz(omega: np.ndarray, hs: float, tp: float) -> np.ndarray:
    """Wave elevation spectrum S(ω) (m² s) of a fully developed sea, two-parameter
    Pierson–Moskowitz (Bretschneider) form: S = 5/16 Hs² ωp⁴ ω⁻⁵ exp(−5/4 (ωp/ω)⁴), ωp = 2π/Tp
    (Pierson & Moskowitz 1964; ITTC 1978). Its zeroth moment is Hs²/16."""
    wp = 2.0 * math.pi / tp
    return 5.0 / 16.0 * hs ** 2 * wp ** 4 / omega ** 5 * np.exp(-1.25 * (wp / omega) ** 4)


def ship_deck(hs: float = 0.4, tp: float = 4.0, duration: float = 60.0, seed: int = 0,
              components: int = 24, roll_gain: float = 1.0, pitch_gain: float = 0.5,
              ramp: float = 5.0) -> SineSum:
    """A ship's deck at sea: heave, roll and pitch as sums of ``components`` sinusoids drawn from
    the Pierson–Moskowitz spectrum of significant height ``hs`` (m) and peak period ``tp`` (s)
    over 0.5 ωp … 3 ωp, one frequency drawn uniformly in each equal band and one phase per
    component and dof (``seed``: the same seed, the same deck). Heave amplitude √(2 S(ω) Δω);
    roll and pitch are the wave slope k A (deep water, k = ω²/g) times ``roll_gain`` and
    ``pitch_gain``. REPRESENTATIVE: the deck follows the sea surface (unit response amplitude
    operators); a ship's own would filter it."""
    _positive("ship_deck", hs=hs, tp=tp, duration=duration, components=components)
    for key, v in (("roll_gain", roll_gain), ("pitch_gain", pitch_gain)):
        if not (math.isfinite(v) and v >= 0):
            raise MotionError(f"ship_deck: {key} must be a finite number >= 0, got {v!r}")
    rng = np.random.default_rng(seed)
    wp = 2.0 * math.pi / tp
    edges = np.linspace(0.5 * wp, 3.0 * wp, int(components) + 1)
    dw = edges[1] - edges[0]
    om = edges[:-1] + rng.uniform(0.0, dw, int(components))
    a = np.sqrt(2.0 * pierson_moskowitz(om, hs, tp) * dw)
    slope = om ** 2 / G * a
    dof = np.repeat([2, 3, 4], len(om))
    amp = np.concatenate([a, roll_gain * slope, pitch_gain * slope])
    phase = rng.uniform(0.0, 2.0 * math.pi, 3 * len(om))
    return SineSum(dof, amp, np.tile(om, 3), phase, duration, min(ramp, duration / 2.0),
                   name=f"ship deck Hs {hs:g} m Tp {tp:g} s seed {seed}")


# --- cubic splines of the pose ------------------------------------------------------------------

class SplineMotion(Motion):
    """A pose offset given at nodes every ``dt`` s with its velocity and acceleration, the
    acceleration linear between nodes (a cubic spline of the pose): between nodes k and k+1, at
    s s past node k, a = a_k + Δa s/dt, v = v_k + a_k s + Δa s²/(2dt), x = x_k + v_k s + a_k s²/2 +
    Δa s³/(6dt), so x, v and a are consistent at every instant, not only at the nodes."""

    name = "spline"

    def __init__(self, dt: float, x: np.ndarray, v: np.ndarray, a: np.ndarray, name: str = "spline") -> None:
        self.name = name
        if not (math.isfinite(dt) and dt > 0):
            raise MotionError(f"{name}: dt must be a finite number > 0, got {dt!r}")
        self.x, self.v, self.a = (np.ascontiguousarray(m, dtype=np.float64) for m in (x, v, a))
        if self.x.ndim != 2 or self.x.shape[1] != 6 or self.x.shape[0] < 2 or \
                not self.x.shape == self.v.shape == self.a.shape:
            raise MotionError(f"{name}: x, v and a must be (N >= 2, 6) arrays of one shape")
        self.dt = float(dt)
        super().__init__(self.dt * (self.x.shape[0] - 1))

    @classmethod
    def from_acceleration(cls, dt: float, a: np.ndarray, name: str = "spline") -> "SplineMotion":
        """Integrate a piecewise-linear acceleration (N, 6) exactly from rest at home."""
        a = np.asarray(a, dtype=np.float64)
        da = np.diff(a, axis=0)
        dv = a[:-1] * dt + da * dt / 2.0
        v = np.vstack([np.zeros((1, 6)), np.cumsum(dv, axis=0)])
        dx = v[:-1] * dt + a[:-1] * dt ** 2 / 2.0 + da * dt ** 2 / 6.0
        x = np.vstack([np.zeros((1, 6)), np.cumsum(dx, axis=0)])
        return cls(dt, x, v, a, name)

    @classmethod
    def from_displacement(cls, dt: float, x: np.ndarray, name: str = "spline") -> "SplineMotion":
        """The natural cubic spline (zero end accelerations) through the poses x (N, 6):
        a_{k-1} + 4 a_k + a_{k+1} = 6 (x_{k+1} − 2 x_k + x_{k-1}) / dt² (Thomas algorithm)."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        n = x.shape[0]
        a = np.zeros_like(x)
        if n > 2:
            rhs = 6.0 * (x[2:] - 2.0 * x[1:-1] + x[:-2]) / dt ** 2
            c, d = np.zeros(n - 2), np.zeros_like(rhs)
            c[0], d[0] = 0.25, rhs[0] / 4.0
            for k in range(1, n - 2):
                m = 4.0 - c[k - 1]
                c[k] = 1.0 / m
                d[k] = (rhs[k] - d[k - 1]) / m
            a[n - 2] = d[-1]
            for k in range(n - 4, -1, -1):
                a[k + 1] = d[k] - c[k] * a[k + 2]
        v = np.empty_like(x)
        v[:-1] = (x[1:] - x[:-1]) / dt - dt * (2.0 * a[:-1] + a[1:]) / 6.0
        v[-1] = v[-2] + dt * (a[-2] + a[-1]) / 2.0
        return cls(dt, x, v, a, name)

    def sample_many(self, taus: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        dt = self.dt
        k = np.minimum((taus / dt).astype(np.int64), self.x.shape[0] - 2)
        s = (taus - k * dt)[:, None]
        a0, j = self.a[k], (self.a[k + 1] - self.a[k]) / dt
        return (self.x[k] + self.v[k] * s + a0 * s * s / 2.0 + j * s ** 3 / 6.0,
                self.v[k] + a0 * s + j * s * s / 2.0, a0 + j * s)

    def at(self, tau: float, x: np.ndarray, xd: np.ndarray, xdd: np.ndarray) -> None:
        dt = self.dt
        k = min(int(tau / dt), self.x.shape[0] - 2)
        s = tau - k * dt
        X, V, A = self.x, self.v, self.a
        for i in range(6):
            a0 = A[k, i]
            j = (A[k + 1, i] - a0) / dt
            xdd[i] = a0 + j * s
            xd[i] = V[k, i] + a0 * s + j * s * s / 2.0
            x[i] = X[k, i] + V[k, i] * s + a0 * s * s / 2.0 + j * s * s * s / 6.0


def _edge(tau: np.ndarray, width: float) -> np.ndarray:
    """Raised-cosine edge 0 → 1 over ``width`` s from τ = 0."""
    return 0.5 * (1.0 - np.cos(math.pi * np.clip(tau / width, 0.0, 1.0)))


def acceleration_step(axis: str, accel: float, hold: float = 0.2, edge: float = 0.02,
                      brake_ratio: float = 0.5, rest: float = 1.0, back: float = 4.0,
                      dt: float = 1.0e-3) -> SplineMotion:
    """A step of horizontal acceleration ``accel`` (m/s², signed) along ``axis`` held ``hold`` s
    (its impulse accel × hold), with raised-cosine edges of ``edge`` s (jerk ≤ π |accel| / (2 edge)),
    then braked back to rest at ``brake_ratio`` × accel (the same impulse, opposite sign, a longer
    and gentler step), ``rest`` s at rest, and a quintic back home in ``back`` s: the leg meets the
    sharp step first. The stroke check tells whether the rig can make it."""
    _positive("acceleration_step", hold=hold, edge=edge, brake_ratio=brake_ratio, back=back, dt=dt)
    if not (math.isfinite(accel) and accel != 0.0):
        raise MotionError(f"acceleration_step: accel must be a finite non-zero number, got {accel!r}")
    if not (math.isfinite(rest) and rest >= 0):
        raise MotionError(f"acceleration_step: rest must be a finite number >= 0, got {rest!r}")
    d = _dof(axis)
    brake_at, brake_len = hold + edge + 0.1, hold / brake_ratio
    n_back = int(math.ceil(back / dt))
    t = np.arange(int(math.ceil((brake_at + brake_len + edge + rest) / dt)) + 1) * dt
    a = np.zeros((len(t) + n_back, 6))
    a[:len(t), d] = accel * (_edge(t, edge) - _edge(t - hold, edge)) \
        - accel * brake_ratio * (_edge(t - brake_at, edge) - _edge(t - brake_at - brake_len, edge))
    out = SplineMotion.from_acceleration(dt, a[:len(t)]).x[-1, d]      # where the step leaves the platform
    b, s = n_back * dt, np.arange(n_back + 1) / n_back
    a[len(t) - 1:, d] = -out * (60.0 * s - 180.0 * s ** 2 + 120.0 * s ** 3) / b ** 2    # the quintic's r''(s)
    return SplineMotion.from_acceleration(dt, a, name=f"acceleration step {axis} {accel:g} m/s2")
