"""Joint trajectory laws (Lammari 2012, ch. V; thesis §2.6.1 uses the quintic).

Every law moves all joints on one normalised profile r(t), q(t) = q_i + r(t) D with
D = q_f - q_i (Lammari 2012, eq. V.1), so a synchronised move is a straight line in
joint space and every joint starts and ends together. The laws, in normalised time
s = t / t_f (r(0) = 0, r(1) = 1):

  code law        r(s)                              max dr/ds   max d2r/ds2
  0    linear     s                          (V.3)  1           (impulses at the ends)
  1    cubic      3s² - 2s³                  (V.5)  3/2         6
  2    quintic    10s³ - 15s⁴ + 6s⁵          (V.6)  15/8        10/√3
  3    bang-bang  2s², then -1 + 4s - 2s²    (V.7)  2           4
  4    trapezoid  accelerate / cruise / decelerate, a = t_a/t_f  (V.8)
                                                    1/(1-a)     1/(a(1-a))

so the minimum time of one joint is max(c_v |D|/k_v, sqrt(c_a |D|/k_a)) with the peaks
above (Lammari 2012, §V.3.1-V.3.2); for the trapezoid, §V.3.3 (eq. V.8).
Kernels are ``@njit(cache=True)`` and allocation-free; :class:`JointMove` is the thin
preallocated shell the loop samples every cycle.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

SQUAT_DEG = {"ankle_sagittal": 16.0, "knee": -85.0, "hip": 70.0}   # thesis §2.6.1, from the start posture
SQUAT_DURATION_S = 7.0

LINEAR, CUBIC, QUINTIC, BANG_BANG, TRAPEZOID = 0, 1, 2, 3, 4
LAWS = {"linear": LINEAR, "cubic": CUBIC, "quintic": QUINTIC,
        "bang_bang": BANG_BANG, "trapezoid": TRAPEZOID}

# Peak |dr/ds| and |d2r/ds2| of the fixed-shape laws (Lammari 2012, §V.3.1-V.3.2);
# the linear law ignores the acceleration limit (Lammari 2012, eq. V.3: t_f = max D_j / Kv_j).
_PEAK_V = np.array([1.0, 1.5, 15.0 / 8.0, 2.0])
_PEAK_A = np.array([0.0, 6.0, 10.0 / math.sqrt(3.0), 4.0])


def quintic_scalar(s: float) -> tuple[float, float, float]:
    """Fifth-order law r(s) = 10 s^3 - 15 s^4 + 6 s^5 on s in [0, 1] with zero
    velocity and acceleration at both ends: (r, dr/ds, d2r/ds2)."""
    s = min(max(s, 0.0), 1.0)
    s2, s3 = s * s, s * s * s
    return (10 * s3 - 15 * s3 * s + 6 * s3 * s2,
            30 * s2 - 60 * s3 + 30 * s2 * s2,
            60 * s - 180 * s2 + 120 * s3)


def quintic(q0: np.ndarray, q1: np.ndarray, duration: float, t: float,
            out: np.ndarray) -> None:
    """Quintic interpolation q0 -> q1 in ``duration`` s: out = (q, qd, qdd) rows
    (3, n), preallocated."""
    r, dr, ddr = quintic_scalar(t / duration)
    dq = q1 - q0
    out[0] = q0 + r * dq
    out[1] = (dr / duration) * dq
    out[2] = (ddr / duration ** 2) * dq


def squat_excursion(joint_names: tuple[str, ...]) -> np.ndarray:
    """Joint excursion of the thesis squat (ankle 16°, knee 85°, hip 70°), added to the
    posture it starts from, in the sign convention of deploy/robots/bip_leg.yaml (knee
    flexion is negative)."""
    q = np.zeros(len(joint_names))
    for name, deg in SQUAT_DEG.items():
        if name not in joint_names:
            raise ValueError(f"the squat needs a joint named {name!r}; this robot has {list(joint_names)}")
        q[joint_names.index(name)] = np.radians(deg)
    return q


@njit(cache=True)
def law(kind: int, s: float, a: float) -> tuple[float, float, float]:
    """(r, dr/ds, d2r/ds2) of law ``kind`` at s (clamped to [0, 1]); ``a`` = t_a/t_f
    in (0, 1/2] is used by the trapezoid only (Lammari 2012, eq. V.3, V.5-V.8). At s = 0 and
    s = 1 derivatives are the one-sided values inside the move."""
    s = min(max(s, 0.0), 1.0)
    if kind == LINEAR:
        return s, 1.0, 0.0
    if kind == CUBIC:
        return s * s * (3.0 - 2.0 * s), 6.0 * s * (1.0 - s), 6.0 - 12.0 * s
    if kind == QUINTIC:
        s2 = s * s
        return (s2 * s * (10.0 - 15.0 * s + 6.0 * s2), 30.0 * s2 * (1.0 - s) * (1.0 - s),
                60.0 * s * (1.0 - s) * (1.0 - 2.0 * s))
    if kind == BANG_BANG:
        a = 0.5
    k = 1.0 / (a * (1.0 - a))
    if s < a:
        return 0.5 * k * s * s, k * s, k
    if s <= 1.0 - a:
        return (2.0 * s - a) / (2.0 * (1.0 - a)), 1.0 / (1.0 - a), 0.0
    u = 1.0 - s
    return 1.0 - 0.5 * k * u * u, k * u, -k


@njit(cache=True)
def min_time(kind: int, d: float, kv: float, ka: float) -> float:
    """Minimum duration of one joint's move of amplitude d under |q̇| <= kv, |q̈| <= ka:
    linear d/kv, cubic max(3d/2kv, sqrt(6d/ka)), quintic max(15d/8kv, sqrt(10d/(√3 ka))),
    bang-bang max(2d/kv, 2 sqrt(d/ka)) (Lammari 2012, §V.3.1-V.3.2), trapezoid
    d/kv + kv/ka if d >= kv²/ka else 2 sqrt(d/ka) (§V.3.3, one joint)."""
    d = abs(d)
    if kind == TRAPEZOID:
        if d * ka >= kv * kv:
            return d / kv + kv / ka
        return 2.0 * math.sqrt(d / ka)
    return max(_PEAK_V[kind] * d / kv, math.sqrt(_PEAK_A[kind] * d / ka))


@njit(cache=True)
def sync_time(kind: int, dq: np.ndarray, kv: np.ndarray, ka: np.ndarray) -> tuple[float, float]:
    """Common minimum duration t_f and ratio a = t_a/t_f of a synchronised move.

    Fixed-shape laws: t_f = max_j t_fj (Lammari 2012, §V.3.1). Trapezoid: one profile with
    a common t_a for all joints, Lammari 2012 §V.3.3 with Mrv = max |D_j|/kv_j and
    Mra = max |D_j|/ka_j: t_f = 2 sqrt(Mra) if sqrt(Mra) >= Mrv, else Mrv + Mra/Mrv. It
    can exceed max_j t_fj when different joints bind velocity and acceleration: joint
    j's peaks are |D_j|/(t_f - t_a) and |D_j|/(t_a (t_f - t_a)), one shared t_a."""
    if kind != TRAPEZOID:
        tf = 0.0
        for j in range(dq.size):
            tf = max(tf, min_time(kind, dq[j], kv[j], ka[j]))
        return tf, 0.5
    mrv = 0.0
    mra = 0.0
    for j in range(dq.size):
        mrv = max(mrv, abs(dq[j]) / kv[j])
        mra = max(mra, abs(dq[j]) / ka[j])
    if mra == 0.0:
        return 0.0, 0.5
    if math.sqrt(mra) >= mrv:
        return 2.0 * math.sqrt(mra), 0.5
    tf = mrv + mra / mrv
    return tf, (mra / mrv) / tf


@njit(cache=True)
def sample_move(kind: int, a: float, tf: float, q0: np.ndarray, q1: np.ndarray, t: float,
                out_q: np.ndarray, out_qd: np.ndarray, out_qdd: np.ndarray) -> None:
    """q, q̇, q̈ at time t of the move q0 -> q1 in tf s (Lammari 2012, eq. V.1): q0 at rest for
    t < 0, q1 at rest for t >= tf."""
    if t >= tf:
        for j in range(q0.size):
            out_q[j] = q1[j]
            out_qd[j] = 0.0
            out_qdd[j] = 0.0
        return
    if t < 0.0:
        for j in range(q0.size):
            out_q[j] = q0[j]
            out_qd[j] = 0.0
            out_qdd[j] = 0.0
        return
    r, dr, ddr = law(kind, t / tf, a)
    dr /= tf
    ddr /= tf * tf
    for j in range(q0.size):
        d = q1[j] - q0[j]
        out_q[j] = q0[j] + r * d
        out_qd[j] = dr * d
        out_qdd[j] = ddr * d


class JointMove:
    """A preallocated synchronised point-to-point move under per-joint velocity and
    acceleration limits ``kv``, ``ka`` (rad/s, rad/s²). ``start`` plans (no
    allocation), ``sample`` is called every cycle."""

    def __init__(self, kv: np.ndarray, ka: np.ndarray) -> None:
        kv = np.array(kv, dtype=np.float64)
        ka = np.array(ka, dtype=np.float64)
        if kv.ndim != 1 or kv.shape != ka.shape:
            raise ValueError(f"kv and ka must be vectors of one length, got shapes {kv.shape} and {ka.shape}")
        for name, v in (("kv", kv), ("ka", ka)):
            bad = np.flatnonzero(~(np.isfinite(v) & (v > 0.0)))
            if bad.size:
                raise ValueError(f"{name}[{bad[0]}] must be a finite number > 0, got {v[bad[0]]}")
        self.kv, self.ka = kv, ka
        self.q0 = np.zeros(kv.size)
        self.q1 = np.zeros(kv.size)
        self._dq = np.zeros(kv.size)
        self.kind = QUINTIC
        self.tf = 0.0
        self.ratio = 0.5

    def start(self, q0: np.ndarray, q1: np.ndarray, kind: int, duration: float = 0.0) -> float:
        """Plan q0 -> q1 by law ``kind``; the move lasts max(duration, minimum time):
        a longer duration stretches the minimum-time profile (peaks scale by
        t_min/t and (t_min/t)²). Returns the duration, which the caller compares with
        the one it asked for."""
        if not LINEAR <= kind <= TRAPEZOID:
            raise ValueError(f"unknown trajectory law {kind}; known: {LAWS}")
        self.q0[:] = q0
        self.q1[:] = q1
        np.subtract(self.q1, self.q0, out=self._dq)
        tf, self.ratio = sync_time(kind, self._dq, self.kv, self.ka)
        self.kind = kind
        self.tf = max(tf, duration)
        return self.tf

    def sample(self, t: float, out_q: np.ndarray, out_qd: np.ndarray, out_qdd: np.ndarray) -> None:
        """q, q̇, q̈ at t seconds after the start, into preallocated vectors."""
        sample_move(self.kind, self.ratio, self.tf, self.q0, self.q1, t, out_q, out_qd, out_qdd)


@njit(cache=True)
def squat_bottom(q_stand: np.ndarray, excursion: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                 out: np.ndarray) -> int:
    """out = q_stand + excursion, the bottom of the squat from q_stand; returns the first joint
    whose bottom leaves [lo, hi] (the soft position limits), -1 if none."""
    bad = -1
    for j in range(q_stand.shape[0]):
        out[j] = q_stand[j] + excursion[j]
        if bad < 0 and not lo[j] <= out[j] <= hi[j]:
            bad = j
    return bad


@njit(cache=True)
def squat_sample(t: float, q_stand: np.ndarray, q_bottom: np.ndarray,
                 out_q: np.ndarray, out_qd: np.ndarray, out_qdd: np.ndarray) -> None:
    """The thesis squat (§2.6.1): quintic q_stand -> q_bottom in SQUAT_DURATION_S s,
    then back up in as long; standing before t = 0 and after 2 SQUAT_DURATION_S."""
    if t < SQUAT_DURATION_S:
        sample_move(QUINTIC, 0.5, SQUAT_DURATION_S, q_stand, q_bottom, t, out_q, out_qd, out_qdd)
    else:
        sample_move(QUINTIC, 0.5, SQUAT_DURATION_S, q_bottom, q_stand, t - SQUAT_DURATION_S,
                    out_q, out_qd, out_qdd)
