"""Model / Data split, as in Pinocchio.

:class:`Model` holds the immutable parameters of a serial MDH chain packed in ONE
flat float64 array; :class:`Data` holds every workspace and result of a cycle in
ONE preallocated flat float64 array. Kernels take these flat buffers (a Numba call
costs ~0.1 us per array argument, so few arguments keep a cycle cheap) and unpack
named views with :func:`model_views` / :func:`data_views`, which slice without
allocating. The Python classes expose the same views as attributes.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .config import RobotDescription

REVOLUTE = 0.0
PRISMATIC = 1.0


@njit(cache=True)
def model_views(buf):
    """Named views of a model buffer: (mdh[n,4] = alpha a theta d, jtype[n],
    mass[n], com[n,3], inertia[n,3,3], tool[4,4], gravity[3], armature[n],
    viscous[n], coulomb[n], qmin[n], qmax[n], vmax[n], taumax[n])."""
    n = int(buf[0])
    o = 1
    mdh = buf[o:o + 4 * n].reshape((n, 4)); o += 4 * n
    jtype = buf[o:o + n]; o += n
    mass = buf[o:o + n]; o += n
    com = buf[o:o + 3 * n].reshape((n, 3)); o += 3 * n
    inertia = buf[o:o + 9 * n].reshape((n, 3, 3)); o += 9 * n
    tool = buf[o:o + 16].reshape((4, 4)); o += 16
    gravity = buf[o:o + 3]; o += 3
    armature = buf[o:o + n]; o += n
    viscous = buf[o:o + n]; o += n
    coulomb = buf[o:o + n]; o += n
    qmin = buf[o:o + n]; o += n
    qmax = buf[o:o + n]; o += n
    vmax = buf[o:o + n]; o += n
    taumax = buf[o:o + n]; o += n
    return (mdh, jtype, mass, com, inertia, tool, gravity, armature, viscous,
            coulomb, qmin, qmax, vmax, taumax)


def model_size(n: int) -> int:
    return 1 + n * (4 + 1 + 1 + 3 + 9 + 7) + 16 + 3


@njit(cache=True)
def data_views(buf, n):
    """Named views of a data buffer: (T[n+2,4,4] frames 0..n then the tool,
    pc[n,3] body CoGs, Iw[n,3,3] body inertias in base axes, J[6,n] tool Jacobian,
    Jb[n,6,n] CoG Jacobians, com[3], Jcom[3,n], A[n,n], dA[n,n,n] (dA[k] = dA/dq_k),
    C[n,n], G[n], h[n] = C qd + G, tau_f[n] friction torque, work[9n+9] scratch)."""
    o = 0
    T = buf[o:o + 16 * (n + 2)].reshape((n + 2, 4, 4)); o += 16 * (n + 2)
    pc = buf[o:o + 3 * n].reshape((n, 3)); o += 3 * n
    Iw = buf[o:o + 9 * n].reshape((n, 3, 3)); o += 9 * n
    J = buf[o:o + 6 * n].reshape((6, n)); o += 6 * n
    Jb = buf[o:o + 6 * n * n].reshape((n, 6, n)); o += 6 * n * n
    com = buf[o:o + 3]; o += 3
    Jcom = buf[o:o + 3 * n].reshape((3, n)); o += 3 * n
    A = buf[o:o + n * n].reshape((n, n)); o += n * n
    dA = buf[o:o + n * n * n].reshape((n, n, n)); o += n * n * n
    C = buf[o:o + n * n].reshape((n, n)); o += n * n
    G = buf[o:o + n]; o += n
    h = buf[o:o + n]; o += n
    tau_f = buf[o:o + n]; o += n
    work = buf[o:o + 9 * n + 9]
    return T, pc, Iw, J, Jb, com, Jcom, A, dA, C, G, h, tau_f, work


def data_size(n: int) -> int:
    return 16 * (n + 2) + n * (3 + 9 + 6 + 3 + 1 + 1 + 1) + 6 * n * n + 3 + 2 * n * n + n ** 3 + 9 * n + 9


_MODEL_FIELDS = ("mdh", "jtype", "mass", "com", "inertia", "tool", "gravity", "armature",
                 "viscous", "coulomb", "qmin", "qmax", "vmax", "taumax")
_DATA_FIELDS = ("T", "pc", "Iw", "J", "Jb", "com", "Jcom", "A", "dA", "C", "G", "h", "tau_f", "work")


class Model:
    """Immutable parameters of a serial MDH chain (thesis eq. 1-5)."""

    def __init__(self, desc: RobotDescription) -> None:
        n = desc.n
        self.n = n
        self.name = desc.name
        self.joint_names = tuple(j.name for j in desc.joints)
        self.buf = np.zeros(model_size(n))
        self.buf[0] = n
        v = dict(zip(_MODEL_FIELDS, model_views(self.buf)))
        for i, j in enumerate(desc.joints):
            v["mdh"][i] = (j.mdh.alpha, j.mdh.a, j.mdh.theta, j.mdh.d)
            v["jtype"][i] = PRISMATIC if j.type == "prismatic" else REVOLUTE
            v["mass"][i] = j.body.mass
            v["com"][i] = j.body.com
            v["inertia"][i] = j.body.inertia
            v["armature"][i] = j.armature
            v["viscous"][i] = j.viscous
            v["coulomb"][i] = j.coulomb
            v["qmin"][i], v["qmax"][i] = j.position_limits
            v["vmax"][i] = j.velocity_limit
            v["taumax"][i] = j.torque_limit
        t = desc.tool
        v["tool"][:] = mdh_matrix(t.alpha, t.a, t.theta, t.d)
        v["gravity"][:] = desc.gravity
        self.total_mass = float(v["mass"].sum())
        self.buf.flags.writeable = False
        for name, arr in zip(_MODEL_FIELDS, model_views(self.buf)):
            setattr(self, name, arr)

    def __repr__(self) -> str:
        return f"Model({self.name!r}, n={self.n}, joints={list(self.joint_names)})"


class Data:
    """Preallocated workspace and results of one model update for a given Model."""

    def __init__(self, model: Model) -> None:
        self.n = model.n
        self.buf = np.zeros(data_size(model.n))
        for name, arr in zip(_DATA_FIELDS, data_views(self.buf, model.n)):
            setattr(self, name, arr)


def mdh_matrix(alpha: float, a: float, theta: float, d: float) -> np.ndarray:
    """T(i-1,i) of thesis eq. 4 for constant parameters (setup only, allocates)."""
    ca, sa, ct, st = np.cos(alpha), np.sin(alpha), np.cos(theta), np.sin(theta)
    return np.array([[ct, -st, 0.0, a],
                     [ca * st, ca * ct, -sa, -d * sa],
                     [sa * st, sa * ct, ca, d * ca],
                     [0.0, 0.0, 0.0, 1.0]])
