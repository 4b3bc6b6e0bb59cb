"""ZMP preview control of the linear inverted pendulum (cart-table model), Kajita et al. 2003.

Per horizontal axis, state x = (c, ċ, c̈), input the jerk u, output the ZMP
p = c − (z_c/g) c̈ (Kajita et al. 2003, the cart-table model, discretised with period T).
The gains come from the optimal preview servo with an integrator (Kajita et al. 2003, the preview
controller after Katayama et al.): u(k) = −G_i Σ(p − p_ref) − G_x x(k) − Σ_{j=1..N_L} G_p(j) p_ref(k + j).
The Riccati equation is solved by fixed-point iteration (no SciPy in the product).
"""
from __future__ import annotations

import numpy as np


def cart_table(period: float, z_c: float, g: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A, B, C) of the discrete cart-table model (Kajita et al. 2003)."""
    T = period
    A = np.array([[1.0, T, T * T / 2.0], [0.0, 1.0, T], [0.0, 0.0, 1.0]])
    B = np.array([[T ** 3 / 6.0], [T * T / 2.0], [T]])
    C = np.array([[1.0, 0.0, -z_c / g]])
    return A, B, C


def _dare(A: np.ndarray, B: np.ndarray, Q: np.ndarray, R: float, tol: float = 1e-12,
          max_iter: int = 200000) -> np.ndarray:
    """P = Q + AᵀPA − AᵀPB (R + BᵀPB)⁻¹ BᵀPA by iteration to a fixed point."""
    P = Q.copy()
    for _ in range(max_iter):
        BtP = B.T @ P
        P_new = Q + A.T @ P @ A - (A.T @ P @ B) @ np.linalg.solve(R + BtP @ B, BtP @ A)
        if np.abs(P_new - P).max() <= tol * max(1.0, np.abs(P_new).max()):
            return P_new
        P = P_new
    raise ArithmeticError("the preview-control Riccati iteration did not converge")


class PreviewController:
    """Gains of the preview servo for one period, CoG height and preview horizon (s)."""

    def __init__(self, period: float, z_c: float, g: float = 9.81, horizon: float = 1.6,
                 q_e: float = 1.0, r: float = 1e-6) -> None:
        self.period, self.z_c, self.g = period, z_c, g
        A, B, C = cart_table(period, z_c, g)
        self.A, self.B, self.C = A, B, C
        At = np.block([[np.eye(1), C @ A], [np.zeros((3, 1)), A]])      # the augmented system (error, state)
        Bt = np.vstack([C @ B, B])
        Q = np.zeros((4, 4))
        Q[0, 0] = q_e
        P = _dare(At, Bt, Q, r)
        S = r + (Bt.T @ P @ Bt)[0, 0]
        K = (Bt.T @ P @ At)[0] / S
        self.G_i, self.G_x = K[0], K[1:]
        Ac = At - Bt @ K[None, :]
        self.preview = max(1, int(round(horizon / period)))
        G_p = np.empty(self.preview)
        X = -Ac.T @ P @ np.array([1.0, 0.0, 0.0, 0.0])
        G_p[0] = -self.G_i
        for j in range(1, self.preview):
            G_p[j] = (Bt[:, 0] @ X) / S
            X = Ac.T @ X
        self.G_p = G_p

    def zmp(self, states: np.ndarray) -> np.ndarray:
        """The cart-table's ZMP p = c − (z_c/g) c̈ of CoG states (k, 3)."""
        return states @ self.C[0]

    def run(self, p_ref: np.ndarray, x0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """CoG states (k, 3) and ZMP (k,) tracking p_ref (k,) from x0 (default at rest over
        p_ref[0]); the reference is held at its last value beyond its end."""
        k_n = len(p_ref)
        ref = np.concatenate([p_ref, np.full(self.preview, p_ref[-1])])
        x = np.array([p_ref[0], 0.0, 0.0]) if x0 is None else np.asarray(x0, dtype=float).copy()
        states = np.empty((k_n, 3))
        zmp = np.empty(k_n)
        err = 0.0
        A, B, C = self.A, self.B[:, 0], self.C[0]
        for k in range(k_n):
            states[k] = x
            zmp[k] = C @ x
            err += zmp[k] - ref[k]
            u = -self.G_i * err - self.G_x @ x - self.G_p @ ref[k + 1:k + 1 + self.preview]
            x = A @ x + B * u
        return states, zmp
