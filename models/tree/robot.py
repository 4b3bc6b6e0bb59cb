"""Convenience API over TreeModel/TreeData for tools, tests and outside checks.

These methods copy their results out (they allocate); the real-time path calls
:func:`models.tree.dynamics.set_root` and :func:`models.tree.dynamics.update` on
preallocated buffers.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from models.tree import dynamics as td
from models.common.errors import GeometryError
from models.tree.model import TreeData, TreeModel
from models.tree.config import TreeDescription, load_tree


class TreeRobot:
    """A kinematic tree with its compiled models: ``TreeRobot.from_yaml(path)``."""

    def __init__(self, desc: TreeDescription) -> None:
        self.description = desc
        self.model = TreeModel(desc)
        self.data = TreeData(self.model)
        self.n = self.model.n
        self._zero = np.zeros(self.n)

    @classmethod
    def from_yaml(cls, path: str | Path) -> "TreeRobot":
        return cls(load_tree(path))

    @property
    def root(self) -> str:
        return self.model.root_names[int(self.data.root[0])]

    def set_root(self, name: str) -> None:
        """Root the model at ``name`` (one of the description's ``roots``)."""
        if name not in self.model.root_names:
            raise GeometryError(f"unknown root {name!r} (roots: {list(self.model.root_names)})")
        td.set_root(self.model.buf, self.data.buf, self.model.root_names.index(name))

    def _vec(self, x, name: str) -> np.ndarray:
        v = np.ascontiguousarray(x, dtype=np.float64)
        if v.shape != (self.n,) or not np.all(np.isfinite(v)):
            raise GeometryError(f"{name} must be {self.n} finite numbers, got {np.shape(v)}")
        return v

    def _gravity(self, g) -> np.ndarray:
        """``g`` checked, as a copy of the array type of the model's own gravity (the default): the
        kernels take one array type whichever is given, not a twin compiled again."""
        if g is None:
            return self.model.gravity
        g = np.array(g, dtype=np.float64)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise GeometryError(f"gravity must be 3 finite numbers, got {np.shape(g)}")
        g.flags.writeable = self.model.gravity.flags.writeable
        return g

    def update(self, q, qd=None, g=None) -> TreeData:
        """One full update (the cycle's kernel) at (q, qd) under gravity g."""
        qd = self._zero if qd is None else self._vec(qd, "qd")
        td.update(self.model.buf, self.data.buf, self._vec(q, "q"), qd, self._gravity(g))
        return self.data

    def kinematics(self, q) -> TreeData:
        td.kinematics(self.model.buf, self.data.buf, self._vec(q, "q"))
        return self.data

    def frame(self, q, name: str) -> np.ndarray:
        """Base -> operational frame ``name`` (4, 4)."""
        return self.kinematics(q).Tf[self.model.index("frame", name)].copy()

    def frame_jacobian(self, q, name: str) -> np.ndarray:
        """Geometric Jacobian (6, n) of the origin of frame ``name``, rows [v; w]."""
        return self.kinematics(q).Jf[self.model.index("frame", name)].copy()

    def point_jacobian(self, q, body: str, point) -> np.ndarray:
        """Geometric Jacobian (6, n) of a point given in body ``body``'s frame."""
        b = self.model.index("body", body)
        T = self.kinematics(q).Tb[b]
        p = T[:3, :3] @ np.asarray(point, dtype=float) + T[:3, 3]
        J = np.zeros((6, self.n))
        td.point_jacobian(self.data.S, self.model.support[int(self.data.root[0]), b], p, J)
        return J

    def com(self, q, group: str = "robot") -> np.ndarray:
        """CoG (3,) of the robot or of a sub-tree (``subtrees`` of the description)."""
        return self.kinematics(q).com[self.model.index("group", group)].copy()

    def com_jacobian(self, q, group: str = "robot") -> np.ndarray:
        """Jacobian (3, n) of that CoG."""
        return self.kinematics(q).Jcom[self.model.index("group", group)].copy()

    def inertia(self, q) -> np.ndarray:
        """A(q) (n, n), rotor inertia (armature) included."""
        return self.update(q).A.copy()

    def nonlinear(self, q, qd, g=None) -> np.ndarray:
        """C(q, qd) qd + G(q) (n,)."""
        return self.update(q, qd, g).h.copy()

    def gravity(self, q, g=None) -> np.ndarray:
        """G(q) (n,) under gravity g (default: the description's)."""
        return self.update(q, None, g).G.copy()

    def rnea(self, q, qd, qdd, g=None) -> np.ndarray:
        """A qdd + C qd + G + Fv qd + Fs sign(qd) (n,) by recursive Newton-Euler."""
        tau = np.zeros(self.n)
        td.rnea(self.model.buf, self.data.buf, self._vec(q, "q"), self._vec(qd, "qd"),
                self._vec(qdd, "qdd"), self._gravity(g), tau)
        return tau

    def __repr__(self) -> str:
        return f"TreeRobot({self.model.name!r}, n={self.n}, root={self.root!r})"
