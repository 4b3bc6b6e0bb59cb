"""Convenience API over Model/Data for tools, tests and outside checks.

These methods copy their results out (they allocate); the real-time path calls
:func:`models.chain.dynamics.update` on a preallocated :class:`~models.chain.model.Data`.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from models.chain.config import RobotDescription, load_description
from models.chain.dynamics import rnea, rnea_work_size, update
from models.common.errors import GeometryError
from models.chain.kinematics import kinematics, point_jacobian
from models.chain.model import Data, Model


class Robot:
    """A robot description with its compiled models: ``Robot.from_yaml(path)``."""

    def __init__(self, desc: RobotDescription) -> None:
        self.description = desc
        self.model = Model(desc)
        self.data = Data(self.model)
        self.n = self.model.n
        self.transmission = desc.transmission
        self._qd0 = np.zeros(self.n)
        self._T = np.zeros((self.n + 2, 4, 4))
        self._rnea_work = np.zeros(rnea_work_size(self.n))

    @classmethod
    def from_yaml(cls, path: str | Path) -> "Robot":
        return cls(load_description(path))

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.model.joint_names

    # ------------------------------------------------------------------ inputs
    def _vec(self, x, name: str) -> np.ndarray:
        v = np.ascontiguousarray(x, dtype=np.float64)
        if v.shape != (self.n,):
            raise GeometryError(f"{name} must have shape ({self.n},), got {v.shape}")
        if not np.all(np.isfinite(v)):
            raise GeometryError(f"{name} contains a non-finite value: {v.tolist()}")
        return v

    def _kin(self, q) -> Data:
        kinematics(self.model.buf, self.data.buf, self._vec(q, "q"))
        return self.data

    def _gravity(self, g) -> np.ndarray:
        """``g`` (3, base axes) checked, or the robot's level-floor gravity; a given ``g`` as a copy of
        the model's own gravity's array type: the kernels take one array type either way, not a twin
        compiled again."""
        if g is None:
            return self.model.gravity
        v = np.array(g, dtype=np.float64)
        if v.shape != (3,) or not np.all(np.isfinite(v)):
            raise GeometryError(f"g must be 3 finite numbers, got {v.tolist()}")
        v.flags.writeable = self.model.gravity.flags.writeable
        return v

    def _dyn(self, q, qd=None, g=None) -> Data:
        qd = self._qd0 if qd is None else self._vec(qd, "qd")
        self.data.gravity[:] = self._gravity(g)
        update(self.model.buf, self.data.buf, self._vec(q, "q"), qd)
        return self.data

    # ------------------------------------------------------------------ geometry
    def fk(self, q) -> np.ndarray:
        """Base -> tool homogeneous transform (4, 4)."""
        return self._kin(q).T[self.n + 1].copy()

    def frame(self, q, i: int) -> np.ndarray:
        """Base -> frame i (0..n) homogeneous transform (4, 4)."""
        if not 0 <= i <= self.n:
            raise GeometryError(f"frame index must be in 0..{self.n}, got {i}")
        return self._kin(q).T[i].copy()

    def jacobian(self, q) -> np.ndarray:
        """Geometric Jacobian (6, n) of the tool origin, base coordinates, rows [v; w]."""
        return self._kin(q).J.copy()

    def frame_jacobian(self, q, i: int) -> np.ndarray:
        """Geometric Jacobian (6, n) of the origin of frame i (0..n)."""
        T = self.frame(q, i)
        J = np.zeros((6, self.n))
        point_jacobian(self.data.T, self.model.jtype, i, T[:3, 3].copy(), J)
        return J

    def point_jacobian(self, q, body: int, point) -> np.ndarray:
        """Geometric Jacobian (6, n) of a point given in the coordinates of frame
        ``body`` (1..n) and rigidly attached to it."""
        if not 1 <= body <= self.n:
            raise GeometryError(f"body index must be in 1..{self.n}, got {body}")
        T = self.frame(q, body)
        p = T[:3, :3] @ np.asarray(point, dtype=float) + T[:3, 3]
        J = np.zeros((6, self.n))
        point_jacobian(self.data.T, self.model.jtype, body, p, J)
        return J

    def body_com_jacobians(self, q) -> np.ndarray:
        """CoG Jacobians (n, 6, n) of every body (thesis eq. 9-11 for the leg)."""
        return self._kin(q).Jb.copy()

    def com(self, q) -> np.ndarray:
        """Centre of gravity of the chain (3,), base coordinates."""
        return self._kin(q).com.copy()

    def com_jacobian(self, q) -> np.ndarray:
        """Jacobian (3, n) of the centre of gravity."""
        return self._kin(q).Jcom.copy()

    # ------------------------------------------------------------------ dynamics
    def inertia(self, q) -> np.ndarray:
        """Inertia matrix A(q) (n, n), rotor inertia (armature) included."""
        return self._dyn(q).A.copy()

    def coriolis(self, q, qd) -> np.ndarray:
        """Coriolis/centrifugal matrix C(q, qd) (n, n), Christoffel form."""
        return self._dyn(q, qd).C.copy()

    def gravity(self, q, g=None) -> np.ndarray:
        """Gravity torque G(q) (n,) under ``g`` (3, base axes; default: the robot's
        level-floor gravity; a tilted floor: :func:`models.tilt.tilted_gravity`)."""
        return self._dyn(q, g=g).G.copy()

    def rnea(self, q, qd, qdd, g=None) -> np.ndarray:
        """Inverse dynamics A qdd + C qd + G + Fv qd + Fs sign(qd) (n,) by
        recursive Newton-Euler (Lammari 2012, eq. IV.7-IV.10), under ``g`` as in :meth:`gravity`."""
        tau = np.zeros(self.n)
        rnea(self.model.buf, self._vec(q, "q"), self._vec(qd, "qd"), self._vec(qdd, "qdd"),
             self._gravity(g), self._T, self._rnea_work, tau)
        return tau

    def __repr__(self) -> str:
        return f"Robot({self.model.name!r}, n={self.n})"
