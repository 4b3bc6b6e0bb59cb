"""The floating base: a virtual passive 6-DOF robot between the world and the
tree's base body (Gastebois 2017, ch. 4 conclusion), coupled to the tree as the
carrier of a composite robot (Gastebois 2017, Theorems 2, 3, 7, 10 and 12: the
carried robot's Jacobians, inertia, Coriolis and gravity terms are those of the
fixed-base tree, the carrier's rows add the coupling).

The virtual robot is 3 prismatic joints along the world axes x, y, z, then 3
revolute joints: roll about world x, pitch about the rolled y, yaw about the
base body's z, so the base pose is

    T_base = Trans(x, y, z) . Rx(roll) . Ry(pitch) . Rz(yaw)

and its angular velocity (world axes) w = E(roll, pitch) (roll, pitch, yaw)'
with E = [[1, 0, s_p], [0, c_r, -s_r c_p], [0, s_r, c_r c_p]], det E = c_p: the
one singularity is |pitch| = 90 deg, the base's z axis horizontal (the robot
lying on the floor). Euler angles rather than a quaternion, because then the
virtual robot is an ordinary serial chain (MDH, massless bodies) and the tree's
recursive engine (:mod:`models.tree.dynamics`) computes the floating model
unchanged; the estimator holds the orientation as a rotation matrix and converts
to angles only for the model (:func:`euler_xyz`).

Pinocchio's free flyer uses q = (p, quaternion) and v = (R' pdot, R' w) (the
base's spatial velocity in its own axes); with our base rates qd_b = (pdot,
roll', pitch', yaw'), v = T(q) qd_b, T = blockdiag(R', R' E): the kinetic
energies match, so A = T' A_pin T, G = T' G_pin and tau = T' rnea_pin(q, T qd,
T qdd + Tdot qd) (docs/models.md, floating base).
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from numba import njit

from models.chain.config import MDH, Body, Joint
from models.tree.config import TreeDescription, TreeJoint
from models.tree.robot import TreeRobot

WORLD = "world"
BASE_JOINTS = ("base_x", "base_y", "base_z", "base_roll", "base_pitch", "base_yaw")
NB = len(BASE_JOINTS)
_MASSLESS = Body(0.0, (0.0, 0.0, 0.0), ((0.0,) * 3,) * 3)
_Z_TO_X = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])   # Ry(pi/2): z -> x
_Z_TO_Y = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])   # Rx(-pi/2): z -> y
# each virtual joint's axis frame relative to the previous body's frame (the joint frames of the
# prismatic x, y and of the roll, pitch joints turn z onto the world axis they move along)
_PRE = (_Z_TO_X, _Z_TO_X.T @ _Z_TO_Y, _Z_TO_Y.T, _Z_TO_X, _Z_TO_X.T @ _Z_TO_Y, _Z_TO_Y.T)


def _zxz(R: np.ndarray) -> tuple[float, float, float]:
    """(gamma, alpha, theta) with R = RotZ(gamma) RotX(alpha) RotZ(theta): the MDH
    rotation of a joint frame whose origin does not move."""
    alpha = math.acos(max(-1.0, min(1.0, R[2, 2])))
    if abs(math.sin(alpha)) < 1e-12:
        return 0.0, alpha, math.atan2(R[1, 0], R[0, 0]) * (1.0 if R[2, 2] > 0 else -1.0)
    return math.atan2(R[0, 2], -R[1, 2]), alpha, math.atan2(R[2, 0], R[2, 1])


def floating_description(desc: TreeDescription) -> TreeDescription:
    """``desc`` carried by the virtual robot: a massless world body, the six
    passive base joints (massless bodies, no friction, no torque), then the
    description's base and joints unchanged; rooted at the world only."""
    joints, parent = [], WORLD
    for k, (name, pre) in enumerate(zip(BASE_JOINTS, _PRE)):
        gamma, alpha, theta = _zxz(pre)
        child = desc.base if k == NB - 1 else f"{name}_link"
        linear = k < 3
        joint = Joint(name=name, type="prismatic" if linear else "revolute", mdh=MDH(alpha, 0.0, theta, 0.0),
                      position_limits=(-math.inf, math.inf) if linear else (-math.pi, math.pi),
                      velocity_limit=math.inf, torque_limit=0.0, armature=0.0, viscous=0.0, coulomb=0.0,
                      body=desc.bodies[desc.base] if child == desc.base else _MASSLESS)
        joints.append(TreeJoint(joint, parent, child, gamma, 0.0))
        parent = child
    bodies = {WORLD: _MASSLESS}
    bodies.update((j.child, j.joint.body) for j in joints)
    bodies.update(desc.bodies)
    return replace(desc, name=f"{desc.name} (floating)", base=WORLD, bodies=bodies,
                   joints=tuple(joints) + desc.joints, roots=(WORLD,), transmission=None)


@njit(cache=True)
def euler_xyz(R, out):
    """(roll, pitch, yaw) of R = Rx(roll) Ry(pitch) Rz(yaw) into ``out`` (3,)."""
    out[0] = math.atan2(-R[1, 2], R[2, 2])
    out[1] = math.atan2(R[0, 2], math.sqrt(R[1, 2] * R[1, 2] + R[2, 2] * R[2, 2]))
    out[2] = math.atan2(-R[0, 1], R[0, 0])


@njit(cache=True)
def euler_rates(angles, w, out):
    """Euler rates (roll', pitch', yaw') giving the angular velocity w (world
    axes) at ``angles``: the solution of E(roll, pitch) rates = w (module
    docstring); singular at |pitch| = 90 deg."""
    sr, cr = math.sin(angles[0]), math.cos(angles[0])
    sp, cp = math.sin(angles[1]), math.cos(angles[1])
    yaw = (cr * w[2] - sr * w[1]) / cp
    out[2] = yaw
    out[1] = cr * w[1] + sr * w[2]
    out[0] = w[0] - sp * yaw


def rotation_xyz(angles) -> np.ndarray:
    """R = Rx(roll) Ry(pitch) Rz(yaw) of ``angles`` (3,): the inverse of :func:`euler_xyz` (allocates)."""
    return _rx(angles[0]) @ _ry(angles[1]) @ _rz(angles[2])


def velocity_map(q: np.ndarray) -> np.ndarray:
    """T(q) (6, 6): Pinocchio's free-flyer velocity v = (R' pdot, R' w) from our
    base rates (pdot, roll', pitch', yaw'); setup and tests (allocates)."""
    r, p = q[3], q[4]
    R = rotation_xyz(q[3:6])
    E = np.array([[1.0, 0.0, math.sin(p)], [0.0, math.cos(r), -math.sin(r) * math.cos(p)],
                  [0.0, math.sin(r), math.cos(r) * math.cos(p)]])
    T = np.zeros((6, 6))
    T[:3, :3], T[3:, 3:] = R.T, R.T @ E
    return T


def velocity_map_rate(q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Tdot qd (6,): what Pinocchio's free-flyer acceleration holds besides T qdd
    at base rates qd, d/dt (R' pdot) = R' pddot - [w_b] R' pdot and d/dt (R' w) =
    R' wdot with wdot = E qdd + roll' x_w x (Rx y pitch') + (roll' x + pitch' Rx y) x
    (Rx Ry z yaw')."""
    r, p = q[3], q[4]
    R = rotation_xyz(q[3:6])
    a1, a2 = _rx(r)[:, 1], (_rx(r) @ _ry(p))[:, 2]
    x = np.array([1.0, 0.0, 0.0])
    w = x * qd[3] + a1 * qd[4] + a2 * qd[5]
    wb = R.T @ w
    out = np.zeros(6)
    out[:3] = -np.cross(wb, R.T @ qd[:3])
    out[3:] = R.T @ (np.cross(x * qd[3], a1 * qd[4]) + np.cross(x * qd[3] + a1 * qd[4], a2 * qd[5]))
    return out


def _rx(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _ry(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _rz(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


class FloatingRobot(TreeRobot):
    """A tree on a floating base: q = (x, y, z, roll, pitch, yaw, the tree's
    joints), the same kernels and Data as :class:`TreeRobot` with n = 6 + the
    tree's joints; ``FloatingRobot(desc)`` or ``FloatingRobot.from_yaml(path)``."""

    def __init__(self, desc: TreeDescription) -> None:
        self.fixed = desc
        super().__init__(floating_description(desc))

    @classmethod
    def from_yaml(cls, path) -> "FloatingRobot":
        from models.tree.config import load_tree
        return cls(load_tree(path))
