"""Axis tasks: per-joint PID with feed-forward (CST) or drive-side position loop (CSP).

CST (CiA 402 mode 10): the controller closes the position loop, joint torque
    u = kp e + I + kd (q̇_ref - ẏ_f) + τ_ff,   e = q_ref - q,   τ = sat(u, ±umax),
    I ← I + h (ki e + kaw (τ - u))        (back-calculation anti-windup, kaw = 0: none)
with the derivative on the measurement (no kick on reference steps): ẏ_f is the
measured rate through a first-order filter of time constant tf (backward Euler of
tf ẏ_f' + ẏ_f = ẏ). I is kept in torque units, so changing ki is bumpless.
CSP (CiA 402 mode 8): the drive closes the loop (the thesis' setting); the axis task
passes on the interpolated q_ref, q̇_ref and τ_ff (clamped to ±umax).
τ_ff = G(q), or A(q) q̈_ref + C(q, q̇) q̇ + G(q) (thesis dynamics notation, docs/conventions.md):
:func:`feedforward` from the model Data, plus the rotors' and the friction's share
(:func:`drive_feedforward`). :func:`motor_setpoints` maps the joint
setpoints to the motors with the transmission kernels (thesis eq. 12-32).

Gains are rows of a params array; :meth:`AxisTasks.set_gains` validates and stages,
:meth:`AxisTasks.apply_staged` switches at a cycle boundary.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from drivers.cia402 import Mode
from models.chain.dynamics import joint_friction
from models.transmission import OK, joint_to_motor, motor_torque, motor_velocity, reflected_friction, rotor_torque

CSP, CST = int(Mode.CSP), int(Mode.CST)    # CiA 402 modes of operation, as the kernels compare them
MODES = {"csp": CSP, "cst": CST}

# Columns of the params array (one row per axis).
KP, KI, KD, TF, KAW, UMAX = range(6)
GAINS = ("kp", "ki", "kd", "tf", "kaw", "umax")
# Columns of the state array.
INTEGRAL, RATE, PREV = range(3)


@njit(cache=True)
def pid_step(params: np.ndarray, state: np.ndarray, q_ref: np.ndarray, qd_ref: np.ndarray,
             q: np.ndarray, tau_ff: np.ndarray, h: float, tau: np.ndarray) -> int:
    """One PID cycle of every axis (module docstring) into ``tau``; returns the bitmask
    of axes whose output saturated."""
    saturated = 0
    for j in range(q.size):
        p = params[j]
        rate = state[j, RATE] + h / (p[TF] + h) * ((q[j] - state[j, PREV]) / h - state[j, RATE])
        e = q_ref[j] - q[j]
        u = p[KP] * e + state[j, INTEGRAL] + p[KD] * (qd_ref[j] - rate) + tau_ff[j]
        out = min(max(u, -p[UMAX]), p[UMAX])
        if out != u:
            saturated |= 1 << j
        state[j, INTEGRAL] += h * (p[KI] * e + p[KAW] * (out - u))
        state[j, RATE] = rate
        state[j, PREV] = q[j]
        tau[j] = out
    return saturated


@njit(cache=True)
def pid_reset(state: np.ndarray, q: np.ndarray) -> None:
    """Bumpless start from the measurement q: no integral, zero rate."""
    for j in range(q.size):
        state[j, INTEGRAL] = 0.0
        state[j, RATE] = 0.0
        state[j, PREV] = q[j]


@njit(cache=True)
def feedforward(A: np.ndarray, h: np.ndarray, G: np.ndarray, qdd_ref: np.ndarray,
                dynamics: bool, out: np.ndarray) -> None:
    """τ_ff = G(q), or A(q) q̈_ref + h with h = C(q, q̇) q̇ + G(q) (Data.A, Data.h, Data.G)."""
    for i in range(G.size):
        if dynamics:
            s = h[i]
            for k in range(G.size):
                s += A[i, k] * qdd_ref[k]
            out[i] = s
        else:
            out[i] = G[i]


@njit(cache=True)
def drive_feedforward(P: np.ndarray, Jp: np.ndarray, bias: np.ndarray, fv: np.ndarray, fs: np.ndarray,
                      vs: float, qdd_ref: np.ndarray, qd_ref: np.ndarray, scratch: np.ndarray,
                      out: np.ndarray) -> None:
    """Adds to ``out`` what the drives take beyond the rigid-body A q̈ + C q̇ + G (the
    plants' model, Lammari 2012 eq. IV.10 through the transmission, thesis eq. 30-32):
    the rotors J_pᵀ J_m (J_p q̈_ref + J̇_p q̇) (``bias`` = J̇_p q̇), the motor friction
    J_pᵀ f_m(J_p q̇_ref) and the joint friction f_j(q̇_ref) (``fv``, ``fs`` of the model).
    Friction follows the reference velocity, its Coulomb sign smoothed as tanh(q̇_ref / v_s)
    (``vs``, control.coulomb_velocity_rad_s; models.friction): at rest it adds nothing, and a
    reference hovering about zero does not flip ±F_c from cycle to cycle."""
    rotor_torque(P, Jp, bias, qdd_ref, scratch)
    for j in range(out.size):
        out[j] += scratch[j]
    reflected_friction(P, Jp, qd_ref, vs, scratch)
    for j in range(out.size):
        out[j] += scratch[j]
    joint_friction(fv, fs, qd_ref, vs, scratch)
    for j in range(out.size):
        out[j] += scratch[j]


@njit(cache=True)
def motor_setpoints(mode: int, P: np.ndarray, Jp: np.ndarray, q_ref: np.ndarray,
                    qd_ref: np.ndarray, tau: np.ndarray, qm: np.ndarray, qmd: np.ndarray,
                    tau_m: np.ndarray) -> int:
    """Joint setpoints -> motor setpoints through the transmission (P its params,
    Jp = J_p(q)): motor torque τ_m = J_p^-T τ always; in CSP also the motor angle of
    q_ref and q̇_m = J_p q̇_ref (qm, qmd untouched in CST). Returns the transmission
    status (0 ok, see models.transmission.status_message)."""
    if mode == CSP:
        status = joint_to_motor(P, q_ref, qm)
        if status != OK:
            return status
        motor_velocity(Jp, qd_ref, qmd)
    return motor_torque(Jp, tau, tau_m)


@njit(cache=True)
def _clamp_torque(params: np.ndarray, tau_ff: np.ndarray, tau: np.ndarray) -> int:
    """τ = τ_ff clamped to ±umax (CSP); returns the bitmask of clamped axes."""
    saturated = 0
    for j in range(tau.size):
        u = params[j, UMAX]
        tau[j] = min(max(tau_ff[j], -u), u)
        if tau[j] != tau_ff[j]:
            saturated |= 1 << j
    return saturated


def _check_gain(name: str, value: float, label: str) -> float:
    """``value`` as a float if it is a valid gain ``name`` (label names it in the error)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = math.nan
    if not math.isfinite(v) or v < 0.0 or (name == "umax" and v == 0.0):
        bound = "> 0" if name == "umax" else ">= 0"
        raise ValueError(f"gain {label} must be a finite number {bound}, got {value!r}")
    return v


class AxisTasks:
    """The axis tasks of n joints in one mode ('cst' or 'csp'), cycle period ``period``
    (s). Gains are per-axis vectors (or scalars): kp N·m/rad, ki N·m/(rad·s),
    kd N·m·s/rad, tf s (derivative filter), kaw 1/s (back-calculation), umax N·m.
    Outputs, preallocated: ``q_cmd``, ``qd_cmd`` (CSP), ``tau`` (CST torque or CSP
    feed-forward)."""

    def __init__(self, n: int, mode: str, period: float, kp, ki, kd, tf, kaw, umax) -> None:
        if mode not in MODES:
            raise ValueError(f"axis mode must be one of {sorted(MODES)}, got {mode!r}")
        if not (math.isfinite(period) and period > 0.0):
            raise ValueError(f"the cycle period must be a finite number > 0 s, got {period!r}")
        self.n, self.mode, self.period = n, MODES[mode], float(period)
        self.params = np.zeros((n, len(GAINS)))
        for col, (name, value) in enumerate(zip(GAINS, (kp, ki, kd, tf, kaw, umax))):
            column = np.broadcast_to(np.asarray(value, dtype=np.float64), (n,))
            for j in range(n):
                self.params[j, col] = _check_gain(name, column[j].item(), f"{name}[{j}]")
        self.staged = self.params.copy()
        self.pending = False
        self.state = np.zeros((n, 3))
        self.q_cmd = np.zeros(n)
        self.qd_cmd = np.zeros(n)
        self.tau = np.zeros(n)

    def set_gains(self, axis: int, **gains: float) -> None:
        """Validate and stage new gains of one axis (names in GAINS); they take effect
        at the next :meth:`apply_staged`. Raises ValueError naming the bad gain."""
        if not (isinstance(axis, (int, np.integer)) and 0 <= axis < self.n):
            raise ValueError(f"axis must be an integer in [0, {self.n - 1}], got {axis!r}")
        for name, value in gains.items():
            if name not in GAINS:
                raise ValueError(f"unknown gain {name!r}; known gains: {', '.join(GAINS)}")
            _check_gain(name, value, f"{name} of axis {axis}")
        for name, value in gains.items():
            self.staged[axis, GAINS.index(name)] = float(value)
        self.pending = True

    def apply_staged(self) -> bool:
        """At a cycle boundary: switch to the staged gains; True if some were staged."""
        if not self.pending:
            return False
        self.params[:] = self.staged
        self.pending = False
        return True

    def reset(self, q: np.ndarray) -> None:
        """Bumpless (re)start from the measured q (enable, leaving HOLD, after a fault)."""
        pid_reset(self.state, q)

    def step(self, q_ref: np.ndarray, qd_ref: np.ndarray, q: np.ndarray, tau_ff: np.ndarray) -> int:
        """One cycle: CST runs the PID into ``tau``; CSP copies q_ref, q̇_ref into
        ``q_cmd``, ``qd_cmd`` and the clamped τ_ff into ``tau``. Returns the bitmask of
        saturated axes."""
        self.q_cmd[:] = q_ref
        self.qd_cmd[:] = qd_ref
        if self.mode == CST:
            return pid_step(self.params, self.state, q_ref, qd_ref, q, tau_ff, self.period, self.tau)
        return _clamp_torque(self.params, tau_ff, self.tau)

