"""Model / Data split, as in Pinocchio.

:class:`Model` holds the immutable parameters of a serial MDH chain packed in ONE
flat float64 array; :class:`Data` holds every workspace and result of a cycle in
ONE preallocated flat float64 array. Kernels take these flat buffers (a Numba call
costs ~0.1 us per array argument, so few arguments keep a cycle cheap) and unpack
named views with :func:`model_views` / :func:`data_views`, which slice without
allocating. The Python classes expose the same views as attributes.

Inside kernels the views are ``carray`` views on the buffer's address: unlike
``slice().reshape()`` (~30 ns each in Numba) they cost nothing, and they never
leave a kernel; Python gets ordinary numpy views (:func:`python_views`) whose
``base`` keeps the buffer alive.
"""
from __future__ import annotations

import numpy as np
from numba import carray, njit, types
from numba.extending import intrinsic

from models.chain.config import RobotDescription

REVOLUTE = 0.0
PRISMATIC = 1.0


@intrinsic
def _f64_pointer(typingctx, address):
    """uintp address -> float64* (for carray views on a live buffer)."""
    sig = types.CPointer(types.float64)(types.uintp)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(types.CPointer(types.float64)))

    return sig, codegen


@njit(cache=True, inline="always")
def _at(buf, offset):
    return _f64_pointer(buf.ctypes.data + 8 * offset)


@njit(cache=True)
def check_buffers(mbuf, dbuf, q):
    """Kernel views trust the buffer sizes: refuse mismatched buffers outright."""
    n = q.shape[0]
    if mbuf.shape[0] < 1 or int(mbuf[0]) != n or mbuf.shape[0] != model_size(n):
        raise ValueError("model buffer does not match the joint vector")
    if dbuf.shape[0] != data_size(n):
        raise ValueError("data buffer does not match the model")


@njit(cache=True)
def model_views(buf):
    """Named views of a model buffer: (mdh[n,4] = alpha a theta d, jtype[n],
    mass[n], com[n,3], inertia[n,3,3], tool[4,4], gravity[3], armature[n],
    viscous[n], coulomb[n], qmin[n], qmax[n], vmax[n], taumax[n])."""
    n = int(buf[0])
    o = 1
    mdh = carray(_at(buf, o), (n, 4)); o += 4 * n
    jtype = carray(_at(buf, o), (n,)); o += n
    mass = carray(_at(buf, o), (n,)); o += n
    com = carray(_at(buf, o), (n, 3)); o += 3 * n
    inertia = carray(_at(buf, o), (n, 3, 3)); o += 9 * n
    tool = carray(_at(buf, o), (4, 4)); o += 16
    gravity = carray(_at(buf, o), (3,)); o += 3
    armature = carray(_at(buf, o), (n,)); o += n
    viscous = carray(_at(buf, o), (n,)); o += n
    coulomb = carray(_at(buf, o), (n,)); o += n
    qmin = carray(_at(buf, o), (n,)); o += n
    qmax = carray(_at(buf, o), (n,)); o += n
    vmax = carray(_at(buf, o), (n,)); o += n
    taumax = carray(_at(buf, o), (n,)); o += n
    return (mdh, jtype, mass, com, inertia, tool, gravity, armature, viscous,
            coulomb, qmin, qmax, vmax, taumax)


@njit(cache=True)
def model_size(n: int) -> int:
    return 1 + n * (4 + 1 + 1 + 3 + 9 + 7) + 16 + 3


@njit(cache=True)
def data_views(buf, n):
    """Named views of a data buffer: (T[n+2,4,4] frames 0..n then the tool,
    pc[n,3] body CoGs, Iw[n,3,3] body inertias in base axes, J[6,n] tool Jacobian,
    Jb[n,6,n] CoG Jacobians, com[3], Jcom[3,n], A[n,n], dA[n,n,n] (dA[k] = dA/dq_k),
    C[n,n], G[n], h[n] = C qd + G, tau_f[n] friction torque, work[9n+9] scratch,
    gravity[3] the gravity of the update in base axes: the Model's level-floor vector
    by default (Data()), set per call for a tilted ground, models.tilt)."""
    o = 0
    T = carray(_at(buf, o), (n + 2, 4, 4)); o += 16 * (n + 2)
    pc = carray(_at(buf, o), (n, 3)); o += 3 * n
    Iw = carray(_at(buf, o), (n, 3, 3)); o += 9 * n
    J = carray(_at(buf, o), (6, n)); o += 6 * n
    Jb = carray(_at(buf, o), (n, 6, n)); o += 6 * n * n
    com = carray(_at(buf, o), (3,)); o += 3
    Jcom = carray(_at(buf, o), (3, n)); o += 3 * n
    A = carray(_at(buf, o), (n, n)); o += n * n
    dA = carray(_at(buf, o), (n, n, n)); o += n * n * n
    C = carray(_at(buf, o), (n, n)); o += n * n
    G = carray(_at(buf, o), (n,)); o += n
    h = carray(_at(buf, o), (n,)); o += n
    tau_f = carray(_at(buf, o), (n,)); o += n
    work = carray(_at(buf, o), (9 * n + 9,)); o += 9 * n + 9
    gravity = carray(_at(buf, o), (3,))
    return T, pc, Iw, J, Jb, com, Jcom, A, dA, C, G, h, tau_f, work, gravity


@njit(cache=True)
def data_size(n: int) -> int:
    return 16 * (n + 2) + n * (3 + 9 + 6 + 3 + 1 + 1 + 1) + 6 * n * n + 3 + 2 * n * n + n ** 3 + 9 * n + 9 + 3


_MODEL_FIELDS = ("mdh", "jtype", "mass", "com", "inertia", "tool", "gravity", "armature",
                 "viscous", "coulomb", "qmin", "qmax", "vmax", "taumax")
_DATA_FIELDS = ("T", "pc", "Iw", "J", "Jb", "com", "Jcom", "A", "dA", "C", "G", "h", "tau_f", "work",
                "gravity")


class Model:
    """Immutable parameters of a serial MDH chain (thesis eq. 1-5)."""

    def __init__(self, desc: RobotDescription) -> None:
        n = desc.n
        self.n = n
        self.name = desc.name
        self.joint_names = tuple(j.name for j in desc.joints)
        self.buf = np.zeros(model_size(n))
        self.buf[0] = n
        v = dict(zip(_MODEL_FIELDS, python_views(self.buf, model_views(self.buf))))
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
        for name, arr in zip(_MODEL_FIELDS, python_views(self.buf, model_views(self.buf))):
            setattr(self, name, arr)

    def __repr__(self) -> str:
        return f"Model({self.name!r}, n={self.n}, joints={list(self.joint_names)})"


class Data:
    """Preallocated workspace and results of one model update for a given Model."""

    def __init__(self, model: Model) -> None:
        self.n = model.n
        self.buf = np.zeros(data_size(model.n))
        for name, arr in zip(_DATA_FIELDS, python_views(self.buf, data_views(self.buf, model.n))):
            setattr(self, name, arr)
        self.gravity[:] = model.gravity


def python_views(buf: np.ndarray, views: tuple) -> tuple[np.ndarray, ...]:
    """Numpy views of ``buf`` with the shapes and offsets of kernel views (which
    must not outlive a kernel call: they do not own a reference to ``buf``)."""
    base = buf.ctypes.data
    return tuple(np.ndarray(v.shape, np.float64, buffer=buf, offset=v.ctypes.data - base)
                 for v in views)


def mdh_matrix(alpha: float, a: float, theta: float, d: float) -> np.ndarray:
    """T(i-1,i) of thesis eq. 4 for constant parameters (setup only, allocates)."""
    ca, sa, ct, st = np.cos(alpha), np.sin(alpha), np.cos(theta), np.sin(theta)
    return np.array([[ct, -st, 0.0, a],
                     [ca * st, ca * ct, -sa, -d * sa],
                     [sa * st, sa * ct, ca, d * ca],
                     [0.0, 0.0, 0.0, 1.0]])
