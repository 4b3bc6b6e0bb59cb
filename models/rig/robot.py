"""Convenience API of the Stewart-Gough rig (copies results; the cycle path calls the
kernels of :mod:`models.rig.stewart` and :mod:`models.rig.dynamics` on preallocated buffers)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from models.common.errors import GeometryError, WorkspaceError
from models.rig.stewart import (OK, STATUS_NAMES, StewartData, StewartModel, forward_kinematics,
                      inverse_kinematics)
from models.rig.dynamics import inverse_dynamics


class StewartRig:
    """A Stewart-Gough rig loaded from YAML: inverse kinematics, forward kinematics and
    actuator forces; any status other than OK is a :class:`WorkspaceError` naming it."""

    def __init__(self, model: StewartModel) -> None:
        self.model = model
        self.data = StewartData()
        self.home = np.array([0.0, 0.0, model.desc.h, 0.0, 0.0, 0.0])

    @classmethod
    def from_yaml(cls, path: str | Path) -> "StewartRig":
        return cls(StewartModel.from_yaml(path))

    def _check(self, status: int, what: str) -> None:
        if status != OK:
            raise WorkspaceError(int(status), f"{self.model.name}: {what}: {STATUS_NAMES[int(status)]}")

    def inverse_kinematics(self, x, xd=None, xdd=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Leg joints q, q', q'' [6 legs, (phi1, phi2, lambda, phi4, phi5, phi6)] for a
        platform pose x = (x, y, z, alpha1, alpha2, alpha3) and its derivatives."""
        x, xd, xdd = (_vec6(v, n) for v, n in ((x, "x"), (xd, "xd"), (xdd, "xdd")))
        self._check(inverse_kinematics(self.model.buf, self.data.buf, x, xd, xdd),
                    f"inverse kinematics at x = {x.tolist()}")
        return self.data.q.copy(), self.data.qd.copy(), self.data.qdd.copy()

    def forward_kinematics(self, lengths, guess=None) -> np.ndarray:
        """Platform pose for six actuator displacements lambda_32 (Newton from ``guess``,
        by default the pose at t = 0)."""
        lam = _vec6(lengths, "lengths")
        x = self.home.copy() if guess is None else _vec6(guess, "guess").copy()
        self._check(forward_kinematics(self.model.buf, self.data.buf, lam, x),
                    f"forward kinematics for lengths {lam.tolist()}")
        return x

    def forces(self, x, xd=None, xdd=None) -> np.ndarray:
        """Actuator forces f_32 (N) for a platform motion (Staicu 2008, eq. 19-20)."""
        x, xd, xdd = (_vec6(v, n) for v, n in ((x, "x"), (xd, "xd"), (xdd, "xdd")))
        self._check(inverse_dynamics(self.model.buf, self.data.buf, x, xd, xdd),
                    f"inverse dynamics at x = {x.tolist()}")
        return self.data.force.copy()


def _vec6(v, name: str) -> np.ndarray:
    a = np.zeros(6) if v is None else np.ascontiguousarray(v, dtype=np.float64)
    if a.shape != (6,):
        raise GeometryError(f"{name} must have shape (6,), got {a.shape}")
    return a
