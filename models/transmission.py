"""Joint transmissions: the BIP screw-and-linkage drives (thesis §2.3.3, eq. 12-32) and gears.

A transmission maps the n joint angles q to n motor angles q_m (motor i drives joint i) block
by block. Kinds of block:

* ``ankle``: a cardan driven by two screws and linkages (eq. 12-17), 2 joints (q1 lateral,
  q2 sagittal in the linkage's own convention, Figure 10);
* ``knee`` / ``hip``: a slider-crank (eq. 18-23 / 24-29), 1 joint;
* ``gear``: a reduction, q_m = ratio q, 1 joint.

Each screw turns its motor by q_m = 2π/p (l(q) - l(0)) (eq. 16, 21, 27, with the motor zero at
q = 0). A block reads its joints through a per-joint sign, x = s q, so a robot whose joint
convention differs from the linkage's (e.g. BIP 2000's legs, hung from the pelvis) uses the
same equations. The transmission Jacobian J_p = ∂q_m/∂q (eq. 30-32) is block diagonal up to the
joints' order: J_p[i, j] ≠ 0 only for joints i, j of one block.

Kernels are ``@njit(cache=True)``, allocation-free and write into preallocated outputs; P is
``Transmission.params`` (layout below). Those that can fail return an int status: 0 ok,
otherwise ``reason + 4 * j`` with j the first (lowest) joint of the failing block and reason
1 linkage cannot close (negative radicand), 2 Newton did not converge, 3 singular J_p (see
:func:`status_message`).

Errata handled (docs/errata.md): the thesis wraps the square roots of eq. 12-14,
18-19, 24-25 in |·|; a negative radicand is a fault here, never abs()-ed away.
Eq. 30 prints 2π/p_g for the hip; it is 2π/p_h (eq. 32).
"""
from __future__ import annotations

import math
from dataclasses import astuple, dataclass, field, replace
from typing import Any

import numpy as np
from numba import njit

from models.common.validation import Section
from models.common.errors import ConfigError, TransmissionFault
from models.friction import coulomb_sign

# Layout of the flat parameter array ``Transmission.params`` for n joints and nb blocks:
# [n, nb], then per joint (n each) ROTOR, VISCOUS, COULOMB, GAIN, ZERO, SIGN, then per block
# BLOCK_FIELDS entries (kind, first joint, second joint or -1, offset of its linkage
# parameters in P), then the linkage parameters.
ROTOR = 2              # rotor inertia of motor i (kg m^2) at P[ROTOR + i]
_VISCOUS, _COULOMB, _GAIN, _ZERO, _SIGN, _TABLE = 1, 2, 3, 4, 5, 6   # multiples of n after ROTOR
BLOCK_FIELDS = 4
KINDS = ("ankle", "knee", "hip", "gear")
K_ANKLE, K_KNEE, K_HIP, K_GEAR = range(4)
LINKAGE_SIZE = (7, 5, 5, 0)        # b c d h e L gamma | r e L gamma phi | (ratio is the gain)
LEG_N_PARAMS = ROTOR + _TABLE * 4 + BLOCK_FIELDS * 3 + 7 + 5 + 5
"""Size of the bench leg's ``params`` (4 joints; ankle, knee and hip blocks): the leg plants
embed it in their flat buffers."""

# Status reasons (a nonzero status is reason + 4 * first joint of the block).
OK = 0
CANNOT_CLOSE = 1
NO_CONVERGENCE = 2
SINGULAR = 3
REASONS = ("ok", "linkage cannot close (negative radicand)",
           "motor -> joint Newton iteration did not converge",
           "transmission Jacobian J_p is singular (dead point)")
LEG_LABELS = ("ankle (q1, q2)", "ankle (q1, q2)", "knee (q3)", "hip (q4)")
"""Block label of each joint of the bench leg (its transmission's joint order)."""

MIN_GAIN = 1e-3          # smallest singular value of a J_p block (motor rad / joint rad)
NEWTON_TOL = 1e-9        # motor-angle residual (rad)
NEWTON_MAX_ITER = 30
NEWTON_MAX_HALVINGS = 30
BIAS_STEP = 1e-6         # rad, joint step of the central difference of motor_bias
TWO_PI = 2.0 * math.pi


def status_message(status: int, labels: tuple[str, ...] = LEG_LABELS) -> str:
    """Human-readable block and reason of a kernel status; ``labels[j]`` names the block
    of joint j (:attr:`Transmission.labels`; default: the bench leg's)."""
    if status == OK:
        return "ok"
    j = status >> 2
    where = labels[j] if 0 <= j < len(labels) else f"joint #{j}"
    return f"{where}: {REASONS[status & 3]}"


# --------------------------------------------------------------------- scalar kernels


@njit(cache=True)
def _ankle_linkage(P, o, sd, q1, q2):
    """One ankle linkage, eq. 12-14 (sd = +1: l2', sd = -1: l2''), parameters at P[o:]:
    (ok, l, ∂l/∂q1, ∂l/∂q2)."""
    b = P[o]
    c = P[o + 1]
    d = sd * P[o + 2]
    h = sd * P[o + 3]
    e = P[o + 4]
    L = P[o + 5]
    c1 = math.cos(q1)
    s1 = math.sin(q1)
    ct = math.cos(q2 + P[o + 6])
    st = math.sin(q2 + P[o + 6])
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
def _sizes(P):
    """(n joints, n blocks)."""
    return int(P[0]), int(P[1])


@njit(cache=True)
def _block(P, blk):
    """Block ``blk``: (kind, first joint, second joint or -1, size, linkage offset, status
    joint = the lower of its joints)."""
    n = int(P[0])
    t = ROTOR + _TABLE * n + BLOCK_FIELDS * blk
    kind, i1, i2, o = int(P[t]), int(P[t + 1]), int(P[t + 2]), int(P[t + 3])
    if i2 < 0:
        return kind, i1, i2, 1, o, i1
    return kind, i1, i2, 2, o, min(i1, i2)


@njit(cache=True)
def _get(x, i1, i2):
    """(x[i1], x[i2] or 0 when the block has one joint)."""
    return x[i1], (x[i2] if i2 >= 0 else 0.0)


@njit(cache=True)
def _put(x, i1, i2, x1, x2):
    """x[i1] = x1 and, when the block has two joints, x[i2] = x2 (the inverse of _get)."""
    x[i1] = x1
    if i2 >= 0:
        x[i2] = x2


@njit(cache=True)
def _carriage(P, kind, o, x1, x2):
    """Carriage positions (or the geared angle) and their derivatives in the linkage's own
    joint convention (eq. 12-14, 18-19, 24-25): (ok, l1, l2, a11, a12, a21, a22)."""
    if kind == K_ANKLE:
        ok1, l1, a11, a12 = _ankle_linkage(P, o, 1.0, x1, x2)
        ok2, l2, a21, a22 = _ankle_linkage(P, o, -1.0, x1, x2)
        return ok1 and ok2, l1, l2, a11, a12, a21, a22
    if kind == K_KNEE:
        ok, l1, a11 = _crank_linkage(P, o, 1.0, x1)
    elif kind == K_HIP:
        ok, l1, a11 = _crank_linkage(P, o, -1.0, x1)
    else:
        ok, l1, a11 = True, x1, 1.0
    return ok, l1, 0.0, a11, 0.0, 0.0, 0.0


@njit(cache=True)
def _motor(P, blk, q1, q2):
    """Motor angles and J_p block at joint angles (q1, q2) of block ``blk`` (eq. 16-17, 22, 28,
    30-32, the signs applied): (ok, m1, m2, j11, j12, j21, j22)."""
    n = int(P[0])
    kind, i1, i2, size, o, _ = _block(P, blk)
    s1, s2 = _get(P[ROTOR + _SIGN * n:], i1, i2)
    ok, l1, l2, a11, a12, a21, a22 = _carriage(P, kind, o, s1 * q1, s2 * q2)
    k1, k2 = _get(P[ROTOR + _GAIN * n:], i1, i2)
    z1, z2 = _get(P[ROTOR + _ZERO * n:], i1, i2)
    return (ok, k1 * (l1 - z1), k2 * (l2 - z2), k1 * a11 * s1, k1 * a12 * s2,
            k2 * a21 * s1, k2 * a22 * s2)


@njit(cache=True)
def _motor_at(P, blk, q):
    """_motor of block ``blk`` at the joint angles q: (status, i1, i2, m1, m2, j11, j12, j21,
    j22), status CANNOT_CLOSE + 4 × the block's status joint when its linkage cannot close."""
    kind, i1, i2, size, o, j = _block(P, blk)
    q1, q2 = _get(q, i1, i2)
    ok, m1, m2, j11, j12, j21, j22 = _motor(P, blk, q1, q2)
    return (OK if ok else CANNOT_CLOSE + 4 * j), i1, i2, m1, m2, j11, j12, j21, j22


@njit(cache=True)
def motor_friction(P, i):
    """(viscous, Coulomb) friction of motor i on the motor side."""
    n = int(P[0])
    return P[ROTOR + _VISCOUS * n + i], P[ROTOR + _COULOMB * n + i]


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
    n = _block(P, blk)[3]
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
def _partner(Jp, i):
    """The other joint of i's block, read off J_p's pattern (J_p[i, j] or J_p[j, i] ≠ 0,
    j ≠ i), or -1. Joints whose coupling entries happen to be 0 are decoupled there, so
    treating them as two 1×1 blocks is exact."""
    for j in range(Jp.shape[0]):
        if j != i and (Jp[i, j] != 0.0 or Jp[j, i] != 0.0):
            return j
    return -1


@njit(cache=True)
def _entries(Jp, i1, i2, transpose):
    """Block of J_p (or of J_p^T) on joints (i1, i2 or -1): (size, j11, j12, j21, j22)."""
    if i2 < 0:
        return 1, Jp[i1, i1], 0.0, 0.0, 0.0
    if transpose:
        return 2, Jp[i1, i1], Jp[i2, i1], Jp[i1, i2], Jp[i2, i2]
    return 2, Jp[i1, i1], Jp[i1, i2], Jp[i2, i1], Jp[i2, i2]


@njit(cache=True)
def _block_matvec(Jp, x, out, transpose):
    """out = J_p x (or J_p^T x), block by block; out may alias x."""
    for i1 in range(Jp.shape[0]):
        i2 = _partner(Jp, i1)
        if 0 <= i2 < i1:
            continue                       # done with its partner
        _, j11, j12, j21, j22 = _entries(Jp, i1, i2, transpose)
        x1, x2 = _get(x, i1, i2)
        _put(out, i1, i2, j11 * x1 + j12 * x2, j21 * x1 + j22 * x2)


@njit(cache=True)
def _block_solve(Jp, rhs, out, transpose):
    """out = J_p^-1 rhs (or J_p^-T rhs), block by block; out may alias rhs. On a
    singular block, the blocks before it are already written."""
    for i1 in range(Jp.shape[0]):
        i2 = _partner(Jp, i1)
        if 0 <= i2 < i1:
            continue
        n, j11, j12, j21, j22 = _entries(Jp, i1, i2, transpose)
        r1, r2 = _get(rhs, i1, i2)
        ok, x1, x2 = _solve(n, j11, j12, j21, j22, r1, r2)
        if not ok:
            return SINGULAR + 4 * i1
        _put(out, i1, i2, x1, x2)
    return OK


# --------------------------------------------------------------------- public kernels


@njit(cache=True)
def carriage_positions(P, q, l):
    """Carriage positions l(q) (m; rad for a gear) of every motor, eq. 12, 18, 24."""
    n, nb = _sizes(P)
    for blk in range(nb):
        kind, i1, i2, _, o, j = _block(P, blk)
        q1, q2 = _get(q, i1, i2)
        s1, s2 = _get(P[ROTOR + _SIGN * n:], i1, i2)
        ok, l1, l2, a11, a12, a21, a22 = _carriage(P, kind, o, s1 * q1, s2 * q2)
        if not ok:
            return CANNOT_CLOSE + 4 * j
        _put(l, i1, i2, l1, l2)
    return OK


@njit(cache=True)
def transmission_jacobian(P, q, Jp):
    """J_p(q) = diag(2π/p) ∂l/∂q (n×n, block diagonal up to the joints' order), eq. 13-14,
    19, 25, 30-32."""
    Jp[:, :] = 0.0
    for blk in range(int(P[1])):
        status, i1, i2, m1, m2, j11, j12, j21, j22 = _motor_at(P, blk, q)
        if status != OK:
            return status
        Jp[i1, i1] = j11
        if i2 >= 0:
            Jp[i1, i2] = j12
            Jp[i2, i1] = j21
            Jp[i2, i2] = j22
    return OK


@njit(cache=True)
def joint_to_motor(P, q, qm):
    """Motor angles q_m = 2π/p (l(q) - l(0)) (rad), eq. 12, 16, 18, 21, 24, 27; ratio × q
    for a gear."""
    for blk in range(int(P[1])):
        status, i1, i2, m1, m2, j11, j12, j21, j22 = _motor_at(P, blk, q)
        if status != OK:
            return status
        _put(qm, i1, i2, m1, m2)
    return OK


@njit(cache=True)
def motor_to_joint(P, qm, q):
    """Joint angles from motor angles by damped Newton (J_p of eq. 32), bounded
    iterations. On entry q holds the guess (e.g. the previous cycle), on exit the
    solution; the entries of a failing block keep their guess."""
    for blk in range(int(P[1])):
        kind, i1, i2, size, o, j = _block(P, blk)
        t1, t2 = _get(qm, i1, i2)
        x1, x2 = _get(q, i1, i2)
        status, x1, x2 = _newton(P, blk, t1, t2, x1, x2)
        if status != OK:
            return status + 4 * j
        _put(q, i1, i2, x1, x2)
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
    """Rotor inertia seen at the joints, J_p^T diag(J_m) J_p (n×n, exactly symmetric)."""
    n = Jp.shape[0]
    for a in range(n):
        for b in range(a + 1):
            s = 0.0
            for i in range(n):
                s += Jp[i, a] * P[ROTOR + i] * Jp[i, b]
            out[a, b] = s
            out[b, a] = s


@njit(cache=True)
def reflected_friction(P, Jp, qd, vs, tau):
    """Motor-side friction seen at the joints, J_p^T (F_v q̇_m + F_c sign(q̇_m)) with
    q̇_m = J_p q̇: the joint torque spent against it. tau may alias qd. ``vs`` > 0 (rad/s of the
    joints) smooths each motor's sign over v_s |row of J_p| (models.friction.coulomb_sign: the motor
    speed a joint speed v_s along that row gives), vs = 0 keeps it exact."""
    n = Jp.shape[0]
    for i1 in range(n):
        i2 = _partner(Jp, i1)
        if 0 <= i2 < i1:
            continue
        _, j11, j12, j21, j22 = _entries(Jp, i1, i2, False)
        x1, x2 = _get(qd, i1, i2)
        v1 = j11 * x1 + j12 * x2
        v2 = j21 * x1 + j22 * x2
        fv1, fv2 = _get(P[ROTOR + _VISCOUS * n:], i1, i2)
        fc1, fc2 = _get(P[ROTOR + _COULOMB * n:], i1, i2)
        f1 = fv1 * v1 + fc1 * coulomb_sign(v1, vs * math.sqrt(j11 * j11 + j12 * j12))
        f2 = fv2 * v2 + fc2 * coulomb_sign(v2, vs * math.sqrt(j21 * j21 + j22 * j22))
        _put(tau, i1, i2, j11 * f1 + j21 * f2, j12 * f1 + j22 * f2)


@njit(cache=True)
def motor_bias(P, q, qd, jp2, qt, a, b):
    """a = J̇_p q̇ (the motor acceleration at q̈ = 0), a central difference of J_p q̇ along q̇ with a
    joint step of BIAS_STEP; b, qt, jp2 are scratch. Returns a transmission status. (The rotor
    bias of the MuJoCo plant and of the controller's feed-forward; the leg plant differences J_p
    across its hold intervals.)"""
    n = int(P[0])
    speed = 0.0
    for j in range(n):
        speed = max(speed, abs(qd[j]))
    if speed == 0.0:
        a[:] = 0.0
        return 0
    eps = BIAS_STEP / speed
    for sign in (1.0, -1.0):
        for j in range(n):
            qt[j] = q[j] + sign * eps * qd[j]
        status = transmission_jacobian(P, qt, jp2)
        if status != 0:
            return status
        motor_velocity(jp2, qd, a if sign > 0.0 else b)
    for i in range(n):
        a[i] = (a[i] - b[i]) / (2.0 * eps)
    return 0


@njit(cache=True)
def rotor_torque(P, Jp, bias, qdd, tau):
    """Joint torque the rotors take, τ = J_pᵀ J_m (J_p q̈ + J̇_p q̇): the reflected inertia
    J_pᵀ J_m J_p q̈ plus the bias J_pᵀ J_m J̇_p q̇, ``bias`` = J̇_p q̇ (:func:`motor_bias`)."""
    n = int(P[0])
    for j in range(n):
        tau[j] = 0.0
    for i in range(n):
        a = bias[i]
        for j in range(n):
            a += Jp[i, j] * qdd[j]
        a *= P[ROTOR + i]
        for j in range(n):
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
class Gear:
    """A reduction: the motor turns ``ratio`` times the joint (q_m = ratio q)."""

    ratio: float


Linkage = AnkleLinkages | CrankLinkage | Gear


@dataclass(frozen=True)
class Motors:
    """Per-motor rotor inertia (kg m^2), viscous (N m s/rad) and Coulomb (N m) friction on the
    motor side, in motor order."""

    rotor_inertia: tuple[float, ...]
    viscous: tuple[float, ...]
    coulomb: tuple[float, ...]


@dataclass(frozen=True)
class Block:
    """One block: its kind (``KINDS``), joints (indices in the robot's order, the linkage's
    q1 first), the sign reading each joint in the linkage's convention, its geometry and, per
    motor, the rotor inertia (kg m^2), viscous (N m s/rad) and Coulomb (N m) friction on the
    motor side. ``key`` is where it came from in the YAML, ``label`` how errors name it."""

    kind: str
    joints: tuple[int, ...]
    signs: tuple[float, ...]
    linkage: Linkage
    rotor_inertia: tuple[float, ...]
    viscous: tuple[float, ...]
    coulomb: tuple[float, ...]
    key: str
    label: str
    names: tuple[str, ...] = ()        # the joints' names (errors); empty: q1..qn by index

    def gains(self) -> tuple[float, ...]:
        """Motor rad per carriage m (2π/p) or per joint rad (the ratio)."""
        if isinstance(self.linkage, Gear):
            return (self.linkage.ratio,)
        return (TWO_PI / self.linkage.pitch,) * len(self.joints)


@dataclass(frozen=True)
class Transmission:
    """Immutable transmission of n joints: its blocks and the flat kernel array ``params``
    (layout: module constants). The methods are allocating conveniences that raise
    :class:`TransmissionFault`; the cycle calls the kernels."""

    blocks: tuple[Block, ...]
    n: int
    params: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        n, nb = self.n, len(self.blocks)
        per_joint = np.zeros((_TABLE, n))              # rotor, viscous, coulomb, gain, zero, sign
        table, linkages = [], []
        offset = ROTOR + _TABLE * n + BLOCK_FIELDS * nb
        seen: list[int] = []
        for b in self.blocks:
            seen += b.joints
            for k, j in enumerate(b.joints):
                per_joint[:, j] = (b.rotor_inertia[k], b.viscous[k], b.coulomb[k], b.gains()[k], 0.0,
                                   b.signs[k])
            values = () if isinstance(b.linkage, Gear) else astuple(b.linkage)[:-1]   # pitch -> gain
            table += [KINDS.index(b.kind), b.joints[0], b.joints[1] if len(b.joints) == 2 else -1, offset]
            linkages += values
            offset += len(values)
        if sorted(seen) != list(range(n)):
            raise ValueError(f"transmission blocks must drive each of the {n} joints once, got {sorted(seen)}")
        p = np.array([n, nb, *per_joint.ravel(), *table, *linkages], dtype=np.float64)
        p.flags.writeable = False       # one (read-only) array type for every kernel call
        zero, l0 = np.zeros(n), np.empty(n)
        self._raise(carriage_positions(p, zero, l0), zero, "at the motor zero")
        p = p.copy()
        p[ROTOR + _ZERO * n:ROTOR + (_ZERO + 1) * n] = l0
        p.flags.writeable = False
        object.__setattr__(self, "params", p)

    @property
    def labels(self) -> tuple[str, ...]:
        """The label of each joint's block (for :func:`status_message`)."""
        out = [""] * self.n
        for b in self.blocks:
            for j in b.joints:
                out[j] = b.label
        return tuple(out)

    def block(self, key: str) -> Block:
        """The block from YAML key ``key`` (e.g. ``knee``, ``blocks[3]``)."""
        for b in self.blocks:
            if b.key == key:
                return b
        raise KeyError(key)

    def replace_block(self, key: str, **linkage: float) -> "Transmission":
        """A copy with block ``key``'s geometry changed (what-if studies, tests)."""
        blocks = tuple(replace(b, linkage=replace(b.linkage, **linkage)) if b.key == key else b
                       for b in self.blocks)
        return Transmission(blocks, self.n)

    def _raise(self, status: int, q: np.ndarray, what: str) -> None:
        if status != OK:
            labels = self.labels if all(b.label for b in self.blocks) else LEG_LABELS
            raise TransmissionFault(f"{status_message(status, labels)} {what}, q = {np.round(q, 6).tolist()} rad")

    def _q(self, q) -> np.ndarray:
        return np.asarray(q, dtype=np.float64)

    def _jacobian(self, q) -> tuple[np.ndarray, np.ndarray]:
        q = self._q(q)
        jp = np.empty((self.n, self.n))
        self._raise(transmission_jacobian(self.params, q, jp), q, "in J_p")
        return q, jp

    def carriages(self, q) -> np.ndarray:
        """Carriage positions l(q) (m; the joint angle for a gear), eq. 12, 18, 24."""
        q = self._q(q)
        out = np.empty(self.n)
        self._raise(carriage_positions(self.params, q, out), q, "in l(q)")
        return out

    def jacobian(self, q) -> np.ndarray:
        """J_p(q), eq. 30-32."""
        return self._jacobian(q)[1]

    def to_motor(self, q) -> np.ndarray:
        """Motor angles (rad) of joint angles q."""
        q = self._q(q)
        out = np.empty(self.n)
        self._raise(joint_to_motor(self.params, q, out), q, "in joint -> motor")
        return out

    def to_joint(self, qm, guess=None) -> np.ndarray:
        """Joint angles of motor angles qm by Newton from ``guess`` (default q = 0)."""
        qm = self._q(qm)
        q = np.zeros(self.n) if guess is None else np.array(guess, dtype=np.float64)
        start = q.copy()
        status = motor_to_joint(self.params, qm, q)
        self._raise(status, start, f"for motor angles {np.round(qm, 6).tolist()} from the guess")
        return q

    def velocity_to_motor(self, q, qd) -> np.ndarray:
        """q̇_m = J_p(q) q̇."""
        _, jp = self._jacobian(q)
        out = np.empty(self.n)
        motor_velocity(jp, self._q(qd), out)
        return out

    def velocity_to_joint(self, q, qmd) -> np.ndarray:
        """q̇ = J_p(q)^-1 q̇_m."""
        q, jp = self._jacobian(q)
        out = np.empty(self.n)
        self._raise(joint_velocity(jp, self._q(qmd), out), q, "in q̇ = J_p^-1 q̇_m")
        return out

    def torque_to_motor(self, q, tau) -> np.ndarray:
        """τ_m = J_p(q)^-T τ."""
        q, jp = self._jacobian(q)
        out = np.empty(self.n)
        self._raise(motor_torque(jp, self._q(tau), out), q, "in τ_m = J_p^-T τ")
        return out

    def torque_to_joint(self, q, tau_m) -> np.ndarray:
        """τ = J_p(q)^T τ_m."""
        _, jp = self._jacobian(q)
        out = np.empty(self.n)
        joint_torque(jp, self._q(tau_m), out)
        return out

    def rotor_inertia(self, q) -> np.ndarray:
        """J_p^T diag(J_m) J_p (kg m^2), to add to A(q)."""
        _, jp = self._jacobian(q)
        out = np.empty((self.n, self.n))
        reflected_inertia(self.params, jp, out)
        return out

    def friction(self, q, qd) -> np.ndarray:
        """Motor-side friction torque seen at the joints (N m)."""
        _, jp = self._jacobian(q)
        out = np.empty(self.n)
        reflected_friction(self.params, jp, self._q(qd), 0.0, out)
        return out

    @property
    def motors(self) -> Motors:
        """The motors' rotor inertia and friction, in motor (= joint) order."""
        n, p = self.n, self.params
        row = lambda k: tuple(float(x) for x in p[ROTOR + k * n:ROTOR + (k + 1) * n])  # noqa: E731
        return Motors(row(0), row(_VISCOUS), row(_COULOMB))


# --------------------------------------------------------------------- YAML


def _ankle(sec: Section) -> AnkleLinkages:
    a = AnkleLinkages(b=sec.number("b"), c=sec.number("c"), d=sec.number("d"), h=sec.number("h"),
                      e=sec.number("e"), L=sec.number("L", positive=True), gamma=sec.angle("gamma"),
                      pitch=sec.number("pitch", positive=True))
    return a


def _crank(sec: Section) -> CrankLinkage:
    return CrankLinkage(r=sec.number("r", positive=True), e=sec.number("e"),
                        L=sec.number("L", positive=True), gamma=sec.angle("gamma"),
                        phi=sec.angle("phi"), pitch=sec.number("pitch", positive=True))


def _per_motor(sec: Section, name: str, size: int, positive: bool) -> tuple[float, ...]:
    v = sec.vector(name, size) if size > 1 or isinstance(sec.raw(name, None), list) else (sec.number(name),)
    for i, x in enumerate(v):
        if x < 0.0 or (positive and x == 0.0):
            key = f"{sec.path(name)}[{i}]" if size > 1 else sec.path(name)
            raise ConfigError(sec.where, key, f"must be {'>' if positive else '>='} 0, got {x}")
    return v


def _check_box(tr: Transmission, where: str, qmin: np.ndarray, qmax: np.ndarray, npts: int) -> None:
    """Every linkage closes and J_p keeps a sign-constant, non-singular block over a
    grid of the joint-limit box (no dead point between the limits)."""
    P = tr.params
    for blk, b in enumerate(tr.blocks):
        n = len(b.joints)
        axes = [np.linspace(qmin[j], qmax[j], npts) for j in b.joints]
        sign = 0.0
        for x in np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, n):
            ok, _, _, j11, j12, j21, j22 = _motor(P, blk, x[0], x[n - 1])
            at = ", ".join(f"{_qname(b, k)} = {v:.4f}" for k, v in enumerate(x))
            if not ok:
                raise ConfigError(where, f"transmission.{b.key}",
                                  f"{b.label} linkage cannot close at {at} rad inside the joint "
                                  "limits (negative radicand, thesis eq. 12, 18, 24)")
            det = j11 if n == 1 else j11 * j22 - j12 * j21
            sign = sign or float(np.sign(det))
            if _sigma_min(n, j11, j12, j21, j22) < MIN_GAIN or np.sign(det) != sign:
                raise ConfigError(where, f"transmission.{b.key}",
                                  f"{b.label} passes a dead point (J_p singular) near {at} rad "
                                  "inside the joint limits")


def _qname(b: Block, k: int) -> str:
    """How errors name joint k of block b: its name, or ``q<index + 1>`` (the thesis' q1..q4
    on the bench leg)."""
    return b.names[k] if b.names else f"q{b.joints[k] + 1}"


def _build(blocks: list[Block], n: int, where: str, qmin, qmax, npts: int) -> Transmission:
    try:
        tr = Transmission(tuple(blocks), n)
    except TransmissionFault as e:
        raise ConfigError(where, "transmission", str(e)) from None
    _check_box(tr, where, np.asarray(qmin, dtype=np.float64), np.asarray(qmax, dtype=np.float64), npts)
    return tr


def parse_transmission(section: Any, where: str, qmin, qmax, npts: int = 41) -> Transmission:
    """The bench leg's ``transmission:`` YAML section (ankle, knee, hip, motors: the joint
    order ankle_lateral, ankle_sagittal, knee, hip), validated against the joint limits
    ``qmin, qmax`` (4 each, rad)."""
    s = Section(where, "transmission", section)
    a = s.sub("ankle")
    ankle = _ankle(a)
    a.done()
    k, h = s.sub("knee"), s.sub("hip")
    knee, hip = _crank(k), _crank(h)
    k.done()
    h.done()
    m = s.sub("motors")
    per = [_per_motor(m, name, 4, positive) for name, positive in
           (("rotor_inertia", True), ("viscous", False), ("coulomb", False))]
    m.done()
    s.done()
    if np.shape(qmin) != (4,) or np.shape(qmax) != (4,):
        raise ConfigError(where, "joints", f"the BIP leg transmission drives 4 joints, got limits of shape {np.shape(qmin)}")
    spans = (("ankle", (0, 1), ankle), ("knee", (2,), knee), ("hip", (3,), hip))
    blocks = [Block(kind, joints, (1.0,) * len(joints), link, *(tuple(p[j] for j in joints) for p in per),
                    key=kind, label=LEG_LABELS[joints[0]]) for kind, joints, link in spans]
    return _build(blocks, 4, where, qmin, qmax, npts)


def parse_blocks(section: Any, where: str, joint_names: tuple[str, ...], qmin, qmax,
                 npts: int = 41) -> Transmission:
    """A ``transmission: {blocks: [...]}`` section for any robot: each block names its
    ``kind`` (ankle, knee, hip, gear), its ``joints`` (two for an ankle, linkage q1 first) or
    ``joint``, optional ``signs``/``sign`` (±1, default +1: joint angle in the linkage's
    convention), its geometry (ankle: b c d h e L gamma pitch; knee/hip: r e L gamma phi pitch;
    gear: ratio) and its motors' ``rotor_inertia``, ``viscous``, ``coulomb``."""
    s = Section(where, "transmission", section)
    raw = s.raw("blocks")
    s.done()
    if not isinstance(raw, list) or not raw:
        raise ConfigError(where, "transmission.blocks", "expected a non-empty list of blocks")
    blocks, owner = [], {}
    for i, item in enumerate(raw):
        key = f"blocks[{i}]"
        b = Section(where, f"transmission.{key}", item)
        kind = b.raw("kind")
        if kind not in KINDS:
            raise ConfigError(where, b.path("kind"), f"expected one of {list(KINDS)}, got {kind!r}")
        size = 2 if kind == "ankle" else 1
        names = b.raw("joints") if size == 2 else [b.raw("joint")]
        if not isinstance(names, list) or len(names) != size:
            raise ConfigError(where, b.path("joints"), f"an ankle block drives 2 joints, got {names!r}")
        idx = []
        for name in names:
            if name not in joint_names:
                raise ConfigError(where, b.path("joints" if size == 2 else "joint"), f"unknown joint {name!r}")
            if name in owner:
                raise ConfigError(where, b.path("joints" if size == 2 else "joint"),
                                  f"joint {name!r} is already driven by transmission.{owner[name]}")
            owner[name] = key
            idx.append(joint_names.index(name))
        signs = b.vector("signs", 2, (1.0, 1.0)) if size == 2 else (b.number("sign", 1.0),)
        for k, sg in enumerate(signs):
            if sg not in (1.0, -1.0):
                raise ConfigError(where, b.path("signs" if size == 2 else "sign"), f"must be +1 or -1, got {sg}")
        if kind == "ankle":
            link: Linkage = _ankle(b)
        elif kind == "gear":
            link = Gear(b.number("ratio", positive=True))
        else:
            link = _crank(b)
        per = [_per_motor(b, name, size, positive) for name, positive in
               (("rotor_inertia", True), ("viscous", False), ("coulomb", False))]
        b.done()
        label = f"{kind} ({', '.join(names)})"
        blocks.append(Block(kind, tuple(idx), tuple(signs), link, *per, key=key, label=label, names=tuple(names)))
    missing = [n for n in joint_names if n not in owner]
    if missing:
        raise ConfigError(where, "transmission.blocks", f"no block drives joint(s) {missing}")
    return _build(blocks, len(joint_names), where, qmin, qmax, npts)
