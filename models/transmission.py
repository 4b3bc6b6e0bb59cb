"""Screw-and-linkage transmissions of the BIP leg (thesis §2.3.3, eq. 12-32).

Each motor turns a roller screw that moves a carriage; a link of fixed length joins
the carriage to the driven segment. Joint angles q -> carriage positions l(q)
(eq. 12, 18, 24) -> motor angles q_m = 2π/p (l(q) - l(0)) (eq. 16, 21, 27, with the
motor zero at q = 0). The transmission Jacobian J_p = ∂q_m/∂q (eq. 30-32) is block
diagonal: a 2×2 ankle block (cardan driven by two linkages), the knee, the hip.

Kernels are ``@njit(cache=True)``, allocation-free and write into preallocated
outputs; P is ``Transmission.params``. Those that can fail return an int status:
0 ok, otherwise ``reason + 4 * block`` with reason
1 linkage cannot close (negative radicand), 2 Newton did not converge, 3 singular
J_p, and block 0 ankle, 1 knee, 2 hip (see :func:`status_message`).

Errata handled (docs/errata.md): the thesis wraps the square roots of eq. 12-14,
18-19, 24-25 in |·|; a negative radicand is a fault here, never abs()-ed away.
Eq. 30 prints 2π/p_g for the hip; it is 2π/p_h (eq. 32).
"""
from __future__ import annotations

import math
from dataclasses import astuple, dataclass, field
from typing import Any

import numpy as np
from numba import njit

from .validation import Section
from .errors import ConfigError, TransmissionFault

# Layout of the flat parameter array ``Transmission.params``.
ANKLE = 0      # b_c c_c d_c h_c e_c L_c gamma_c p_c
KNEE = 8       # r_g e_g L_g gamma_g phi_g p_g
HIP = 14       # r_h e_h L_h gamma_h phi_h p_h
ROTOR = 20     # rotor inertia of motors 1..4 (kg m^2)
VISCOUS = 24   # motor-side viscous friction (N m s/rad)
COULOMB = 28   # motor-side Coulomb friction (N m)
GAIN = 32      # 2π/p per motor (rad of motor per m of carriage)
ZERO = 36      # carriage positions l(0), the motor zeros (m)
N_PARAMS = 40

# Status reasons (a nonzero status is reason + 4 * block).
OK = 0
CANNOT_CLOSE = 1
NO_CONVERGENCE = 2
SINGULAR = 3
BLOCKS = ("ankle (q1, q2)", "knee (q3)", "hip (q4)")
REASONS = ("ok", "linkage cannot close (negative radicand)",
           "motor -> joint Newton iteration did not converge",
           "transmission Jacobian J_p is singular (dead point)")

MIN_GAIN = 1e-3          # smallest singular value of a J_p block (motor rad / joint rad)
NEWTON_TOL = 1e-9        # motor-angle residual (rad)
NEWTON_MAX_ITER = 30
NEWTON_MAX_HALVINGS = 30
BIAS_STEP = 1e-6         # rad, joint step of the central difference of motor_bias
TWO_PI = 2.0 * math.pi


def status_message(status: int) -> str:
    """Human-readable joint and reason of a kernel status."""
    if status == OK:
        return "ok"
    return f"{BLOCKS[status >> 2]}: {REASONS[status & 3]}"


# --------------------------------------------------------------------- scalar kernels


@njit(cache=True)
def _ankle_linkage(P, sd, q1, q2):
    """One ankle linkage, eq. 12-14 (sd = +1: l2', sd = -1: l2''): (ok, l, ∂l/∂q1, ∂l/∂q2)."""
    b = P[ANKLE]
    c = P[ANKLE + 1]
    d = sd * P[ANKLE + 2]
    h = sd * P[ANKLE + 3]
    e = P[ANKLE + 4]
    L = P[ANKLE + 5]
    c1 = math.cos(q1)
    s1 = math.sin(q1)
    ct = math.cos(q2 + P[ANKLE + 6])
    st = math.sin(q2 + P[ANKLE + 6])
    u = c1 * b + s1 * d          # = ∂y/∂q1
    du = -s1 * b + c1 * d
    x = -ct * u - st * c         # pin coordinate along the screw
    y = s1 * b - c1 * d + h      # pin - carriage, across the screw
    z = st * u - ct * c + e
    rad = L * L - y * y - z * z
    if not rad > 0.0:
        return False, 0.0, 0.0, 0.0
    beta = math.sqrt(rad)
    return True, x - beta, -ct * du + (y * u + z * st * du) / beta, (z - e) - z * x / beta


@njit(cache=True)
def _crank_linkage(P, base, sigma, q):
    """Slider-crank of the knee (sigma = +1, eq. 18-19) or the hip (sigma = -1,
    eq. 24-25) with parameters r e L gamma phi at P[base:]: (ok, l, dl/dq)."""
    r = P[base]
    e = P[base + 1]
    L = P[base + 2]
    th = q + P[base + 3] - P[base + 4]
    ct = math.cos(th)
    st = math.sin(th)
    w = r * st + sigma * e
    rad = L * L - w * w
    if not rad > 0.0:
        return False, 0.0, 0.0
    beta = math.sqrt(rad)
    return True, sigma * (r * ct - beta), sigma * (-r * st + w * r * ct / beta)


@njit(cache=True)
def _span(blk):
    """First joint (= motor) index and size of a block."""
    if blk == 0:
        return 0, 2
    return blk + 1, 1


@njit(cache=True)
def _pair(x, i, n):
    """The entries of a block of size n at x[i:]: (x[i], x[i + 1] or 0)."""
    if n == 2:
        return x[i], x[i + 1]
    return x[i], 0.0


@njit(cache=True)
def _carriage(P, blk, x1, x2):
    """Carriage positions and ∂l/∂q of a block (eq. 12-14, 18-19, 24-25):
    (ok, l1, l2, a11, a12, a21, a22); unused entries of a 1-DOF block are 0."""
    if blk == 0:
        ok1, l1, a11, a12 = _ankle_linkage(P, 1.0, x1, x2)
        ok2, l2, a21, a22 = _ankle_linkage(P, -1.0, x1, x2)
        return ok1 and ok2, l1, l2, a11, a12, a21, a22
    if blk == 1:
        ok, l1, a11 = _crank_linkage(P, KNEE, 1.0, x1)
    else:
        ok, l1, a11 = _crank_linkage(P, HIP, -1.0, x1)
    return ok, l1, 0.0, a11, 0.0, 0.0, 0.0


@njit(cache=True)
def _motor(P, blk, x1, x2):
    """Motor angles and J_p block (eq. 16-17, 22, 28, 30-32): (ok, m1, m2, j11, j12, j21, j22)."""
    i, n = _span(blk)
    ok, l1, l2, a11, a12, a21, a22 = _carriage(P, blk, x1, x2)
    k1, k2 = _pair(P, GAIN + i, n)
    z1, z2 = _pair(P, ZERO + i, n)
    return ok, k1 * (l1 - z1), k2 * (l2 - z2), k1 * a11, k1 * a12, k2 * a21, k2 * a22


@njit(cache=True)
def _sigma_min(n, j11, j12, j21, j22):
    """Smallest singular value of the n×n (n = 1, 2) block."""
    if n == 1:
        return abs(j11)
    s = j11 * j11 + j12 * j12 + j21 * j21 + j22 * j22
    det = j11 * j22 - j12 * j21
    disc = math.sqrt(max(s * s - 4.0 * det * det, 0.0))
    return math.sqrt(2.0 * det * det / (s + disc)) if s > 0.0 else 0.0


@njit(cache=True)
def _solve(n, j11, j12, j21, j22, r1, r2):
    """Solve the n×n block system J x = r: (ok, x1, x2); ok is False if J is singular."""
    if not _sigma_min(n, j11, j12, j21, j22) >= MIN_GAIN:
        return False, 0.0, 0.0
    if n == 1:
        return True, r1 / j11, 0.0
    det = j11 * j22 - j12 * j21
    return True, (j22 * r1 - j12 * r2) / det, (j11 * r2 - j21 * r1) / det


@njit(cache=True)
def _newton(P, blk, t1, t2, x1, x2):
    """Damped Newton on one block: joint angles whose motor angles are (t1, t2),
    from the guess (x1, x2). Steps are halved until the residual decreases."""
    n = _span(blk)[1]
    ok, m1, m2, j11, j12, j21, j22 = _motor(P, blk, x1, x2)
    if not ok:
        return CANNOT_CLOSE, x1, x2
    r1 = m1 - t1
    r2 = m2 - t2
    norm = max(abs(r1), abs(r2))
    for _ in range(NEWTON_MAX_ITER):
        if norm <= NEWTON_TOL:
            return OK, x1, x2
        ok, d1, d2 = _solve(n, j11, j12, j21, j22, r1, r2)
        if not ok:
            return SINGULAR, x1, x2
        step = 1.0
        accepted = False
        for _ in range(NEWTON_MAX_HALVINGS):
            y1 = x1 - step * d1
            y2 = x2 - step * d2
            ok, m1, m2, k11, k12, k21, k22 = _motor(P, blk, y1, y2)
            s1 = m1 - t1
            s2 = m2 - t2
            new = max(abs(s1), abs(s2))
            if ok and new <= (1.0 - 1e-4 * step) * norm:
                accepted = True
                break
            step *= 0.5
        if not accepted:
            return NO_CONVERGENCE, x1, x2
        x1, x2, r1, r2, norm = y1, y2, s1, s2, new
        j11, j12, j21, j22 = k11, k12, k21, k22
    return (OK if norm <= NEWTON_TOL else NO_CONVERGENCE), x1, x2


@njit(cache=True)
def _entries(Jp, blk, transpose):
    """Block of J_p (or of J_p^T): (first index, size, j11, j12, j21, j22)."""
    i, n = _span(blk)
    if n == 1:
        return i, n, Jp[i, i], 0.0, 0.0, 0.0
    if transpose:
        return i, n, Jp[i, i], Jp[i + 1, i], Jp[i, i + 1], Jp[i + 1, i + 1]
    return i, n, Jp[i, i], Jp[i, i + 1], Jp[i + 1, i], Jp[i + 1, i + 1]


@njit(cache=True)
def _block_matvec(Jp, x, out, transpose):
    """out = J_p x (or J_p^T x), block by block; out may alias x."""
    for blk in range(3):
        i, n, j11, j12, j21, j22 = _entries(Jp, blk, transpose)
        x1, x2 = _pair(x, i, n)
        out[i] = j11 * x1 + j12 * x2
        if n == 2:
            out[i + 1] = j21 * x1 + j22 * x2


@njit(cache=True)
def _block_solve(Jp, rhs, out, transpose):
    """out = J_p^-1 rhs (or J_p^-T rhs), block by block; out may alias rhs. On a
    singular block, the blocks before it are already written."""
    for blk in range(3):
        i, n, j11, j12, j21, j22 = _entries(Jp, blk, transpose)
        r1, r2 = _pair(rhs, i, n)
        ok, x1, x2 = _solve(n, j11, j12, j21, j22, r1, r2)
        if not ok:
            return SINGULAR + 4 * blk
        out[i] = x1
        if n == 2:
            out[i + 1] = x2
    return OK


# --------------------------------------------------------------------- public kernels


@njit(cache=True)
def carriage_positions(P, q, l):
    """Carriage positions l(q) (m) of the four screws, eq. 12, 18, 24."""
    for blk in range(3):
        i, n = _span(blk)
        x1, x2 = _pair(q, i, n)
        ok, l1, l2, a11, a12, a21, a22 = _carriage(P, blk, x1, x2)
        if not ok:
            return CANNOT_CLOSE + 4 * blk
        l[i] = l1
        if n == 2:
            l[i + 1] = l2
    return OK


@njit(cache=True)
def transmission_jacobian(P, q, Jp):
    """J_p(q) = diag(2π/p) ∂l/∂q (4×4, block diagonal), eq. 13-14, 19, 25, 30-32."""
    Jp[:, :] = 0.0
    for blk in range(3):
        i, n = _span(blk)
        x1, x2 = _pair(q, i, n)
        ok, m1, m2, j11, j12, j21, j22 = _motor(P, blk, x1, x2)
        if not ok:
            return CANNOT_CLOSE + 4 * blk
        Jp[i, i] = j11
        if n == 2:
            Jp[i, i + 1] = j12
            Jp[i + 1, i] = j21
            Jp[i + 1, i + 1] = j22
    return OK


@njit(cache=True)
def joint_to_motor(P, q, qm):
    """Motor angles q_m = 2π/p (l(q) - l(0)) (rad), eq. 12, 16, 18, 21, 24, 27."""
    for blk in range(3):
        i, n = _span(blk)
        x1, x2 = _pair(q, i, n)
        ok, m1, m2, j11, j12, j21, j22 = _motor(P, blk, x1, x2)
        if not ok:
            return CANNOT_CLOSE + 4 * blk
        qm[i] = m1
        if n == 2:
            qm[i + 1] = m2
    return OK


@njit(cache=True)
def motor_to_joint(P, qm, q):
    """Joint angles from motor angles by damped Newton (J_p of eq. 32), bounded
    iterations. On entry q holds the guess (e.g. the previous cycle), on exit the
    solution; the entries of a failing block keep their guess."""
    for blk in range(3):
        i, n = _span(blk)
        t1, t2 = _pair(qm, i, n)
        x1, x2 = _pair(q, i, n)
        status, x1, x2 = _newton(P, blk, t1, t2, x1, x2)
        if status != OK:
            return status + 4 * blk
        q[i] = x1
        if n == 2:
            q[i + 1] = x2
    return OK


@njit(cache=True)
def motor_velocity(Jp, qd, qmd):
    """q̇_m = J_p q̇, eq. 31."""
    _block_matvec(Jp, qd, qmd, False)


@njit(cache=True)
def joint_velocity(Jp, qmd, qd):
    """q̇ = J_p^-1 q̇_m, eq. 23, 29 and the ankle block of eq. 17."""
    return _block_solve(Jp, qmd, qd, False)


@njit(cache=True)
def motor_torque(Jp, tau, tau_m):
    """τ_m = J_p^-T τ (virtual work: τ_m^T q̇_m = τ^T q̇)."""
    return _block_solve(Jp, tau, tau_m, True)


@njit(cache=True)
def joint_torque(Jp, tau_m, tau):
    """τ = J_p^T τ_m."""
    _block_matvec(Jp, tau_m, tau, True)


@njit(cache=True)
def reflected_inertia(P, Jp, out):
    """Rotor inertia seen at the joints, J_p^T diag(J_m) J_p (4×4, exactly symmetric)."""
    for a in range(4):
        for b in range(a + 1):
            s = 0.0
            for i in range(4):
                s += Jp[i, a] * P[ROTOR + i] * Jp[i, b]
            out[a, b] = s
            out[b, a] = s


@njit(cache=True)
def reflected_friction(P, Jp, qd, tau):
    """Motor-side friction seen at the joints, J_p^T (F_v q̇_m + F_c sign(q̇_m)) with
    q̇_m = J_p q̇: the joint torque spent against it. tau may alias qd."""
    for blk in range(3):
        i, n, j11, j12, j21, j22 = _entries(Jp, blk, False)
        x1, x2 = _pair(qd, i, n)
        v1 = j11 * x1 + j12 * x2
        v2 = j21 * x1 + j22 * x2
        fv1, fv2 = _pair(P, VISCOUS + i, n)
        fc1, fc2 = _pair(P, COULOMB + i, n)
        f1 = fv1 * v1 + fc1 * np.sign(v1)
        f2 = fv2 * v2 + fc2 * np.sign(v2)
        tau[i] = j11 * f1 + j21 * f2
        if n == 2:
            tau[i + 1] = j12 * f1 + j22 * f2


@njit(cache=True)
def motor_bias(P, q, qd, jp2, qt, a, b):
    """a = J̇_p q̇ (the motor acceleration at q̈ = 0), a central difference of J_p q̇ along q̇ with a
    joint step of BIAS_STEP; b, qt, jp2 are scratch. Returns a transmission status. (The rotor
    bias of the MuJoCo plant and of the controller's feed-forward; the leg plant differences J_p
    across its hold intervals.)"""
    speed = 0.0
    for j in range(4):
        speed = max(speed, abs(qd[j]))
    if speed == 0.0:
        a[:] = 0.0
        return 0
    eps = BIAS_STEP / speed
    for sign in (1.0, -1.0):
        for j in range(4):
            qt[j] = q[j] + sign * eps * qd[j]
        status = transmission_jacobian(P, qt, jp2)
        if status != 0:
            return status
        motor_velocity(jp2, qd, a if sign > 0.0 else b)
    for i in range(4):
        a[i] = (a[i] - b[i]) / (2.0 * eps)
    return 0


@njit(cache=True)
def rotor_torque(P, Jp, bias, qdd, tau):
    """Joint torque the rotors take, τ = J_pᵀ J_m (J_p q̈ + J̇_p q̇): the reflected inertia
    J_pᵀ J_m J_p q̈ plus the bias J_pᵀ J_m J̇_p q̇, ``bias`` = J̇_p q̇ (:func:`motor_bias`)."""
    for j in range(4):
        tau[j] = 0.0
    for i in range(4):
        a = bias[i]
        for j in range(4):
            a += Jp[i, j] * qdd[j]
        a *= P[ROTOR + i]
        for j in range(4):
            tau[j] += Jp[i, j] * a


# --------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class AnkleLinkages:
    """Ankle cardan driven by two mirrored linkages (thesis Figure 10, eq. 12-17).

    In the shank frame (origin at the cardan centre, x along the screws towards the
    foot, y the shank-fixed cardan axis q2) the foot-side pins sit at
    (-b, ∓d, -c) when q = 0 and gamma = 0; the carriages run on screws at (·, ∓h, -e);
    L is the link length, gamma the angular offset of the pins about the q2 axis,
    pitch the screw lead (m/rev)."""

    b: float
    c: float
    d: float
    h: float
    e: float
    L: float
    gamma: float
    pitch: float


@dataclass(frozen=True)
class CrankLinkage:
    """Slider-crank of the knee (Figure 11, eq. 18-23) or the hip (Figure 12, eq. 24-29).

    A crank of radius r on the driven segment at angle gamma from its axis; the screw
    axis runs at angle phi from the driving segment's axis, offset e from the joint
    axis; L is the link length and pitch the screw lead (m/rev). The crank angle
    from the screw axis is q + gamma - phi."""

    r: float
    e: float
    L: float
    gamma: float
    phi: float
    pitch: float


@dataclass(frozen=True)
class Motors:
    """Per-motor rotor inertia (kg m^2), viscous (N m s/rad) and Coulomb (N m)
    friction on the motor side; motors 1, 2 ankle, 3 knee, 4 hip."""

    rotor_inertia: tuple[float, float, float, float]
    viscous: tuple[float, float, float, float]
    coulomb: tuple[float, float, float, float]


@dataclass(frozen=True)
class Transmission:
    """Immutable transmission parameters: named attributes and the flat kernel array
    ``params`` (layout: module constants ANKLE .. ZERO). The methods are allocating
    conveniences that raise :class:`TransmissionFault`; the cycle calls the kernels."""

    ankle: AnkleLinkages
    knee: CrankLinkage
    hip: CrankLinkage
    motors: Motors
    params: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        m = self.motors
        p = np.array([*astuple(self.ankle), *astuple(self.knee), *astuple(self.hip),
                      *m.rotor_inertia, *m.viscous, *m.coulomb,
                      *(TWO_PI / x for x in (self.ankle.pitch, self.ankle.pitch,
                                             self.knee.pitch, self.hip.pitch)),
                      0.0, 0.0, 0.0, 0.0], dtype=np.float64)
        if p.shape != (N_PARAMS,):
            raise ValueError(f"transmission parameter array has {p.size} entries, expected {N_PARAMS}")
        p.flags.writeable = False       # one (read-only) array type for every kernel call
        zero, l0 = np.zeros(4), np.empty(4)
        self._raise(carriage_positions(p, zero, l0), zero, "at the motor zero")
        p = p.copy()
        p[ZERO:] = l0
        p.flags.writeable = False
        object.__setattr__(self, "params", p)

    @staticmethod
    def _raise(status: int, q: np.ndarray, what: str) -> None:
        if status != OK:
            raise TransmissionFault(f"{status_message(status)} {what}, q = {np.round(q, 6).tolist()} rad")

    def _jacobian(self, q) -> tuple[np.ndarray, np.ndarray]:
        q = np.asarray(q, dtype=np.float64)
        jp = np.empty((4, 4))
        self._raise(transmission_jacobian(self.params, q, jp), q, "in J_p")
        return q, jp

    def carriages(self, q) -> np.ndarray:
        """Carriage positions l(q) (m), eq. 12, 18, 24."""
        q = np.asarray(q, dtype=np.float64)
        out = np.empty(4)
        self._raise(carriage_positions(self.params, q, out), q, "in l(q)")
        return out

    def jacobian(self, q) -> np.ndarray:
        """J_p(q), eq. 30-32."""
        return self._jacobian(q)[1]

    def to_motor(self, q) -> np.ndarray:
        """Motor angles (rad) of joint angles q."""
        q = np.asarray(q, dtype=np.float64)
        out = np.empty(4)
        self._raise(joint_to_motor(self.params, q, out), q, "in joint -> motor")
        return out

    def to_joint(self, qm, guess=None) -> np.ndarray:
        """Joint angles of motor angles qm by Newton from ``guess`` (default q = 0)."""
        qm = np.asarray(qm, dtype=np.float64)
        q = np.zeros(4) if guess is None else np.array(guess, dtype=np.float64)
        start = q.copy()
        status = motor_to_joint(self.params, qm, q)
        self._raise(status, start, f"for motor angles {np.round(qm, 6).tolist()} from the guess")
        return q

    def velocity_to_motor(self, q, qd) -> np.ndarray:
        """q̇_m = J_p(q) q̇."""
        _, jp = self._jacobian(q)
        out = np.empty(4)
        motor_velocity(jp, np.asarray(qd, dtype=np.float64), out)
        return out

    def velocity_to_joint(self, q, qmd) -> np.ndarray:
        """q̇ = J_p(q)^-1 q̇_m."""
        q, jp = self._jacobian(q)
        out = np.empty(4)
        self._raise(joint_velocity(jp, np.asarray(qmd, dtype=np.float64), out), q, "in q̇ = J_p^-1 q̇_m")
        return out

    def torque_to_motor(self, q, tau) -> np.ndarray:
        """τ_m = J_p(q)^-T τ."""
        q, jp = self._jacobian(q)
        out = np.empty(4)
        self._raise(motor_torque(jp, np.asarray(tau, dtype=np.float64), out), q, "in τ_m = J_p^-T τ")
        return out

    def torque_to_joint(self, q, tau_m) -> np.ndarray:
        """τ = J_p(q)^T τ_m."""
        _, jp = self._jacobian(q)
        out = np.empty(4)
        joint_torque(jp, np.asarray(tau_m, dtype=np.float64), out)
        return out

    def rotor_inertia(self, q) -> np.ndarray:
        """J_p^T diag(J_m) J_p (kg m^2), to add to A(q)."""
        _, jp = self._jacobian(q)
        out = np.empty((4, 4))
        reflected_inertia(self.params, jp, out)
        return out

    def friction(self, q, qd) -> np.ndarray:
        """Motor-side friction torque seen at the joints (N m)."""
        _, jp = self._jacobian(q)
        out = np.empty(4)
        reflected_friction(self.params, jp, np.asarray(qd, dtype=np.float64), out)
        return out


# --------------------------------------------------------------------- YAML


def _crank(sec: Section) -> CrankLinkage:
    c = CrankLinkage(r=sec.number("r", positive=True), e=sec.number("e"),
                     L=sec.number("L", positive=True), gamma=sec.angle("gamma"),
                     phi=sec.angle("phi"), pitch=sec.number("pitch", positive=True))
    sec.done()
    return c


def _per_motor(sec: Section, name: str, positive: bool) -> tuple[float, float, float, float]:
    v = sec.vector(name, 4)
    for i, x in enumerate(v):
        if x < 0.0 or (positive and x == 0.0):
            raise ConfigError(sec.where, f"{sec.path(name)}[{i}]", f"must be {'>' if positive else '>='} 0, got {x}")
    return v


def _check_box(tr: Transmission, where: str, qmin: np.ndarray, qmax: np.ndarray, npts: int) -> None:
    """Every linkage closes and J_p keeps a sign-constant, non-singular block over a
    grid of the joint-limit box (no dead point between the limits)."""
    P = tr.params
    for blk, key in enumerate(("ankle", "knee", "hip")):
        i, n = _span(blk)
        axes = [np.linspace(qmin[j], qmax[j], npts) for j in range(i, i + n)]
        sign = 0.0
        for x in np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, n):
            x1, x2 = x[0], x[n - 1]
            ok, _, _, j11, j12, j21, j22 = _motor(P, blk, x1, x2)
            at = ", ".join(f"q{j + 1} = {v:.4f}" for j, v in zip(range(i, i + n), x))
            if not ok:
                raise ConfigError(where, f"transmission.{key}",
                                  f"{BLOCKS[blk]} linkage cannot close at {at} rad inside the joint "
                                  "limits (negative radicand, thesis eq. 12, 18, 24)")
            det = j11 if n == 1 else j11 * j22 - j12 * j21
            sign = sign or float(np.sign(det))
            if _sigma_min(n, j11, j12, j21, j22) < MIN_GAIN or np.sign(det) != sign:
                raise ConfigError(where, f"transmission.{key}",
                                  f"{BLOCKS[blk]} passes a dead point (J_p singular) near {at} rad "
                                  "inside the joint limits")


def parse_transmission(section: Any, where: str, qmin, qmax, npts: int = 41) -> Transmission:
    """Validate the ``transmission:`` YAML section against the joint limits
    ``qmin, qmax`` (4 each, rad) and build the :class:`Transmission`."""
    s = Section(where, "transmission", section)
    a = s.sub("ankle")
    ankle = AnkleLinkages(b=a.number("b"), c=a.number("c"), d=a.number("d"), h=a.number("h"),
                          e=a.number("e"), L=a.number("L", positive=True), gamma=a.angle("gamma"),
                          pitch=a.number("pitch", positive=True))
    a.done()
    knee = _crank(s.sub("knee"))
    hip = _crank(s.sub("hip"))
    m = s.sub("motors")
    motors = Motors(rotor_inertia=_per_motor(m, "rotor_inertia", True),
                    viscous=_per_motor(m, "viscous", False), coulomb=_per_motor(m, "coulomb", False))
    m.done()
    s.done()
    qmin = np.asarray(qmin, dtype=np.float64)
    qmax = np.asarray(qmax, dtype=np.float64)
    if qmin.shape != (4,) or qmax.shape != (4,):
        raise ConfigError(where, "joints", f"the BIP leg transmission drives 4 joints, got limits of shape {qmin.shape}")
    try:
        tr = Transmission(ankle, knee, hip, motors)
    except TransmissionFault as e:
        raise ConfigError(where, "transmission", str(e)) from None
    _check_box(tr, where, qmin, qmax, npts)
    return tr
