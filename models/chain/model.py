"""Model / Data split, as in Pinocchio.

:class:`Model` holds the immutable parameters of a serial MDH chain packed in ONE
flat float64 array; :class:`Data` holds every workspace and result of a cycle in
ONE preallocated flat float64 array. Both layouts are declared once, as field lists
(:data:`MODEL`, :data:`DATA`, :mod:`models.common.layout`). Kernels take these flat
buffers (a Numba call costs ~0.1 us per array argument, so few arguments keep a
cycle cheap) and read named views with :func:`model_views` / :func:`data_views`,
which slice without allocating. The Python classes expose the same views as
attributes.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from models.chain.config import RobotDescription
from models.common.layout import Field, Layout

REVOLUTE = 0.0
PRISMATIC = 1.0


@njit(cache=True)
def check_buffers(mbuf, dbuf, q):
    """Kernel views trust the buffer sizes: refuse mismatched buffers outright."""
    n = q.shape[0]
    if mbuf.shape[0] < 1 or int(mbuf[_N]) != n or mbuf.shape[0] != model_size(n):
        raise ValueError("model buffer does not match the joint vector")
    if dbuf.shape[0] != data_size(n):
        raise ValueError("data buffer does not match the model")


# mdh[n, 4] = alpha a theta d; tool[4, 4]; gravity[3] the level-floor default
MODEL = Layout("chain model", [
    Field("n"), Field("mdh", ("n", 4)), Field("jtype", ("n",)), Field("mass", ("n",)),
    Field("com", ("n", 3)), Field("inertia", ("n", 3, 3)), Field("tool", (4, 4)), Field("gravity", (3,)),
    Field("armature", ("n",)), Field("viscous", ("n",)), Field("coulomb", ("n",)), Field("qmin", ("n",)),
    Field("qmax", ("n",)), Field("vmax", ("n",)), Field("taumax", ("n",))], sizes=("n",))
# T[n+2,4,4] frames 0..n then the tool, pc body CoGs, Iw body inertias in base axes, J tool
# Jacobian, Jb CoG Jacobians, dA[k] = dA/dq_k, h = C qd + G, tau_f friction torque, work scratch,
# gravity the gravity of the update in base axes: the Model's level-floor vector by default
# (Data()), set per call for a tilted ground (models.tilt)
DATA = Layout("chain data", [
    Field("T", ("n + 2", 4, 4)), Field("pc", ("n", 3)), Field("Iw", ("n", 3, 3)), Field("J", (6, "n")),
    Field("Jb", ("n", 6, "n")), Field("com", (3,)), Field("Jcom", (3, "n")), Field("A", ("n", "n")),
    Field("dA", ("n", "n", "n")), Field("C", ("n", "n")), Field("G", ("n",)), Field("h", ("n",)),
    Field("tau_f", ("n",)), Field("work", ("9 * n + 9",)), Field("gravity", (3,))], sizes=("n",))
_N = MODEL.offset("n")
_model_views, _data_views = MODEL.kernel_views, DATA.kernel_views
_model_size, _data_size = MODEL.kernel_size, DATA.kernel_size


@njit(cache=True)
def model_views(buf):
    """Named views of a model buffer (:data:`MODEL`)."""
    return _model_views(buf, int(buf[_N]))[0]


@njit(cache=True)
def model_size(n: int) -> int:
    return _model_size(n)


@njit(cache=True)
def data_views(buf, n):
    """Named views of a data buffer (:data:`DATA`)."""
    return _data_views(buf, n)[0]


@njit(cache=True)
def data_size(n: int) -> int:
    return _data_size(n)


class Model:
    """Immutable parameters of a serial MDH chain (thesis eq. 1-5)."""

    def __init__(self, desc: RobotDescription) -> None:
        n = desc.n
        self.n = n
        self.name = desc.name
        self.joint_names = tuple(j.name for j in desc.joints)
        self.buf = np.zeros(MODEL.size(n=n))
        self.buf[MODEL.offset("n")] = n
        v = MODEL.views(self.buf, n=n)._asdict()
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
        for name, arr in MODEL.views(self.buf, n=n)._asdict().items():
            setattr(self, name, arr)

    def __repr__(self) -> str:
        return f"Model({self.name!r}, n={self.n}, joints={list(self.joint_names)})"


class Data:
    """Preallocated workspace and results of one model update for a given Model."""

    def __init__(self, model: Model) -> None:
        self.n = model.n
        self.buf = np.zeros(DATA.size(n=model.n))
        for name, arr in DATA.views(self.buf, n=model.n)._asdict().items():
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
