"""What the loop needs from a robot's models, for either kind of robot: one adapter each.

The loop (controller.daemon.loop.loop) is written once against this interface:

* ``update(q, qd)``  the cycle's models under ``gravity`` (base axes, written by the loop from
  the measured tilt): A, h = C q̇ + G, G and the CoG, allocation-free, one Numba call;
* ``A``, ``h``, ``G``, ``com``  views of the results (the Data arrays, never rebound);
* ``gravity``        the gravity input (3,), ``level`` the robot's level-floor vector;
* ``tilted_gravity(alpha, beta, level, gravity)`` the kernel turning ``level`` into the base axes of
  a robot on a platform tilted by (alpha, beta): the thesis' eq. 46 for the leg (x up), the whole-robot
  stabilizer's RotX(alpha) RotY(beta) for a tree standing on its soles (z up);
* ``apparent_tilt(source, use_acceleration, g0, tilt, acc, R, out)`` the kernel folding the support's
  acceleration into that (alpha, beta) (Gastebois 2017, §2.5.4): stabilizer.ground's apparent_tilt
  for the leg (thesis axes), its sole_apparent_tilt for a tree (world x forward, y left);
* ``set_root(r)``    the rooting the next update uses (one number; a chain has one root);
* ``imu_gravity(frame, f, g0, tilt)``  (a tree) the gravity input from the specific force ``f`` an IMU
  at operational frame ``frame`` measures in its axes, over the last update's frames;
* ``contact(other, w, lo, hi, qd, qdd, tau)``  subtracts from the feed-forward ``tau`` the share ``w``
  (blended with the ZMP's place between the soles, within [lo, hi]: the feet's cells) of the ground wrench that rooting
  ``other``'s frame (the other sole) carries in double support (models.tree.dynamics.contact_share;
  a chain has no second foot);
* ``joint_names``, ``model`` (its arrays qmin, qmax, vmax, taumax, viscous, coulomb),
  ``transmission`` (:class:`models.transmission.Transmission`), ``roots`` (the rootings' names),
  ``base`` (the root of a robot hung by its base: the pelvis on the gantry), ``foot``.

:class:`ChainModels` wraps the bench leg's :class:`models.chain.robot.Robot` (MDH chain, closed-form
dynamics of models.chain.dynamics); :class:`TreeModels` a :class:`models.tree.robot.TreeRobot` (the
whole BIP 2000, rooted at the pelvis or a sole: Khalil & Dombre, tree structures), whose cycle
variant computes h by Newton-Euler (models.tree.dynamics.update_cycle).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from models.chain.dynamics import update as chain_update
from models.chain.robot import Robot
from models.tilt import sole_gravity, tilted_gravity
from models.tree.dynamics import contact_share
from models.tree.dynamics import set_root as tree_set_root
from models.tree.dynamics import update_cycle as tree_update
from models.tree.robot import TreeRobot
from stabilizer.ground import apparent_tilt, sole_apparent_tilt


@njit(cache=True)
def imu_gravity(Tf, frame, f, g0, gravity, tilt):
    """gravity = −g0 u, u = R f / |f| the apparent up, R the rotation of operational frame ``frame`` in
    the root's axes (Tf, the last update's frames): at rest an accelerometer reads the specific force −g
    in its axes (the equivalence principle of Gastebois 2017 §2.5.4 folds a slow acceleration in); tilt
    = the root's (alpha, beta) under it, u = RotY(beta)ᵀ RotX(alpha)ᵀ z (models.tilt.sole_gravity's
    convention). False, both untouched, for a non-finite or zero f."""
    n2 = f[0] * f[0] + f[1] * f[1] + f[2] * f[2]
    if not (math.isfinite(n2) and n2 > 1e-12):
        return False
    k = 1.0 / math.sqrt(n2)
    u0 = k * (Tf[frame, 0, 0] * f[0] + Tf[frame, 0, 1] * f[1] + Tf[frame, 0, 2] * f[2])
    u1 = k * (Tf[frame, 1, 0] * f[0] + Tf[frame, 1, 1] * f[1] + Tf[frame, 1, 2] * f[2])
    u2 = k * (Tf[frame, 2, 0] * f[0] + Tf[frame, 2, 1] * f[1] + Tf[frame, 2, 2] * f[2])
    gravity[0], gravity[1], gravity[2] = -g0 * u0, -g0 * u1, -g0 * u2
    tilt[0] = math.atan2(u1, math.sqrt(u0 * u0 + u2 * u2))     # u = (-ca sb, sa, ca cb)
    tilt[1] = math.atan2(-u0, u2)
    return True


class ChainModels:
    """A serial chain: :func:`models.chain.dynamics.update` on the robot's Model / Data."""

    kind = "chain"

    def __init__(self, robot: Robot) -> None:
        self.robot, self.model = robot, robot.model
        d = robot.data
        self.mbuf, self.dbuf = robot.model.buf, d.buf
        self.A, self.h, self.G, self.com = d.A, d.h, d.G, d.com
        self.gravity, self.level = d.gravity, robot.model.gravity
        self.tilted_gravity = tilted_gravity
        self.apparent_tilt = apparent_tilt
        self.joint_names = robot.joint_names
        self.transmission = robot.transmission
        self.roots: tuple[str, ...] = ("base",)
        self.base = "base"
        self.foot = robot.description.foot

    def update(self, q: np.ndarray, qd: np.ndarray) -> None:
        chain_update(self.mbuf, self.dbuf, q, qd)

    def set_root(self, r: int) -> None:
        """A chain has its base only."""

    def contact(self, other: int, w: float, lo: float, hi: float, qd: np.ndarray, qdd: np.ndarray,
                tau: np.ndarray) -> None:
        """A chain has one foot: nothing to share."""


class TreeModels:
    """A kinematic tree: :func:`models.tree.dynamics.update_cycle` (A, h by Newton-Euler, G,
    the CoGs, the root frames) in the rooting ``set_root`` selected; the robot's CoG is group 0."""

    kind = "tree"

    def __init__(self, robot: TreeRobot) -> None:
        self.robot, self.model = robot, robot.model
        d = robot.data
        self.mbuf, self.dbuf = robot.model.buf, d.buf
        self.A, self.h, self.G, self.com = d.A, d.h, d.G, d.com[0]
        self.level = robot.model.gravity
        self.gravity = self.level.copy()
        self.tilted_gravity = sole_gravity
        self.apparent_tilt = sole_apparent_tilt
        self.joint_names = robot.model.joint_names
        self.transmission = robot.description.transmission
        self.roots = robot.model.root_names
        self.base = robot.description.base
        self.foot = None
        self.rootf = robot.model.rootf
        self.scratch = np.zeros(robot.n)
        self.frames = d.Tf                                     # the operational frames in root axes

    def update(self, q: np.ndarray, qd: np.ndarray) -> None:
        tree_update(self.mbuf, self.dbuf, q, qd, self.gravity)

    def set_root(self, r: int) -> None:
        tree_set_root(self.mbuf, self.dbuf, r)

    def imu_gravity(self, frame: int, f: np.ndarray, g0: float, tilt: np.ndarray) -> bool:
        """The gravity input, and the root's tilt into ``tilt``, from an IMU's specific force (module
        docstring; :func:`imu_gravity`)."""
        return imu_gravity(self.frames, frame, f, g0, self.gravity, tilt)

    def contact(self, other: int, w: float, lo: float, hi: float, qd: np.ndarray, qdd: np.ndarray,
                tau: np.ndarray) -> None:
        """tau -= J_cᵀ f_c, the share of the ground wrench at rooting ``other``'s frame (the ramp ``w`` blended
        with the ZMP's, within [lo, hi]), over the last update (its rooting)."""
        contact_share(self.mbuf, self.dbuf, qd, qdd, self.gravity, int(self.rootf[other]), w, lo, hi, self.scratch,
                      tau)


def robot_models(robot: Robot | TreeRobot) -> ChainModels | TreeModels:
    """The adapter of ``robot``'s kind."""
    return TreeModels(robot) if isinstance(robot, TreeRobot) else ChainModels(robot)
