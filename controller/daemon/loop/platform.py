"""The tilting platform the robot stands on, behind one interface: the two hinges (one CSP axis
each, ``control.platform_ratio`` motor rad per rad) or the Stewart–Gough rig (docs/rig.md).

Each cycle: ``measure(plat)`` the platform's (alpha, beta) from the bus, ``reference(t, powered)``
its setpoints (a quintic ramp for the hinges, the rig player's for the rig; following the measured
pose while unpowered), ``write()`` them to the bus. Commands: ``tilt`` (the ``platform`` command,
refused beyond ``control.platform_limit`` as the I/O side does: the loop is the final authority),
``play`` and ``play_buffer`` (the rig's motions). ``platform_room`` picks the kind once.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from drivers.hal import Bus

from controller.daemon.codes import Error
from controller.daemon.shm import H, SharedBlock
from controller.daemon.telemetry import RIG_ACTUATORS
from controller.daemon.trajectories import QUINTIC, sample_move
from controller.daemon.rig.loop_side import RigLoop, rig_player
from controller.daemon.rig.motions import SplineMotion
from controller.daemon.rig.spec import motion_from_args



@njit(cache=True)
def hinge_angles(position, idx, ratio, plat):
    """The hinges' angles: motor angle / ratio."""
    for k in range(idx.shape[0]):
        plat[k] = position[idx[k]] / ratio


@njit(cache=True)
def place(position, velocity, idx, scale, target_position, target_velocity):
    """Platform setpoints on the bus, scaled (motor rad per platform unit)."""
    for k in range(idx.shape[0]):
        target_position[idx[k]] = scale * position[k]
    for k in range(idx.shape[0]):
        target_velocity[idx[k]] = scale * velocity[k]


class Platform:
    """What both platforms share: the measured tilt ``plat`` (alpha, beta), the bus axes, the limit."""

    def __init__(self, bus: Bus, idx: np.ndarray, limit: float) -> None:
        self.bus, self.idx, self.limit = bus, idx, limit
        self.plat = np.zeros(2)
        self.rig: RigLoop | None = None
        self.no_ferr = np.full(RIG_ACTUATORS, np.nan)

    def refuse(self, alpha: float, beta: float) -> tuple[bool, int] | None:
        """The ``platform`` command's checks: a platform on the bus, |alpha|, |beta| within the limit."""
        if self.idx.size == 0:                     # no tilting platform on this robot's bus
            return False, Error.NOT_SUPPORTED
        if not (abs(alpha) <= self.limit and abs(beta) <= self.limit):
            return False, Error.OUT_OF_RANGE
        return None

    def play(self, a: np.ndarray, nargs: int, t: float) -> tuple[bool, int] | None:
        return False, Error.NOT_SUPPORTED

    def play_buffer(self, a: np.ndarray, t: float) -> tuple[bool, int] | None:
        return False, Error.NOT_SUPPORTED

    def following_error(self, powered: bool) -> np.ndarray:
        return self.no_ferr


class Hinges(Platform):
    """The two-hinge platform: a quintic ramp of (alpha, beta) per ``platform`` command."""

    def __init__(self, bus: Bus, idx: np.ndarray, limit: float, ratio: float, period: float) -> None:
        super().__init__(bus, idx, limit)
        self.ratio, self.period = ratio, period
        self.plat_ref, self.plat_from, self.plat_to = np.zeros(2), np.zeros(2), np.zeros(2)
        self.plat_v, self.plat_a = np.zeros(2), np.zeros(2)
        self.plat_t, self.plat_T = 0.0, 0.0

    def measure(self) -> None:
        hinge_angles(self.bus.position, self.idx, self.ratio, self.plat)

    def reference(self, t: float, powered: bool) -> None:
        if powered:
            if self.plat_T > 0.0:
                self.plat_t += self.period
                sample_move(QUINTIC, 0.5, self.plat_T, self.plat_from, self.plat_to,
                            self.plat_t, self.plat_ref, self.plat_v, self.plat_a)
                if self.plat_t >= self.plat_T:
                    self.plat_T = 0.0
        else:
            self.plat_ref[:] = self.plat
            self.plat_v.fill(0.0)

    def write(self) -> None:
        b = self.bus
        place(self.plat_ref, self.plat_v, self.idx, self.ratio, b.target_position, b.target_velocity)

    def tilt(self, alpha: float, beta: float, duration: float, t: float) -> tuple[bool, int] | None:
        refused = self.refuse(alpha, beta)
        if refused is not None:
            return refused
        self.plat_from[:] = self.plat_ref
        self.plat_to[0], self.plat_to[1] = alpha, beta
        self.plat_t = 0.0
        self.plat_T = max(duration, self.period)
        return None


class Rig(Platform):
    """The Stewart–Gough rig (controller.daemon.rig.loop_side): six CSP actuators."""

    def __init__(self, bus: Bus, idx: np.ndarray, limit: float, rig: RigLoop, block: SharedBlock) -> None:
        super().__init__(bus, idx, limit)
        self.rig, self.block = rig, block
        self.support_acc = rig.support_acc

    def measure(self) -> None:
        b = self.bus                               # NaN tilt if its forward kinematics fails (TILT_INPUT)
        self.rig.measure_bus(b.position, b.velocity, b.target_position, self.idx, self.plat)

    def reference(self, t: float, powered: bool) -> None:
        self.rig.reference(t, powered)
        if self.block.header[H.RIG_BUSY] and self.rig.player.motion is None:
            self.block.header[H.RIG_BUSY] = 0        # the recorded motion is over: the I/O side may refill

    def write(self) -> None:
        b = self.bus
        place(self.rig.position, self.rig.velocity, self.idx, 1.0, b.target_position, b.target_velocity)

    def tilt(self, alpha: float, beta: float, duration: float, t: float) -> tuple[bool, int] | None:
        refused = self.refuse(alpha, beta)
        if refused is not None:
            return refused
        return None if self.rig.tilt(alpha, beta, duration, t) else (False, Error.OUT_OF_RANGE)

    def play(self, a: np.ndarray, nargs: int, t: float) -> tuple[bool, int] | None:
        if not self.rig.play(motion_from_args(a[:nargs], self.rig.player.convention), t):
            return False, Error.NOT_ALLOWED
        return None

    def play_buffer(self, a: np.ndarray, t: float) -> tuple[bool, int] | None:
        """Play the recorded motion the I/O side checked into the rig buffer (``a[0]``: its nodes'
        spacing); the buffer is the motion's (H.RIG_BUSY) until it ends."""
        n, rig = int(self.block.header[H.RIG_LEN]), self.block.rig
        if not (2 <= n <= rig.shape[1] and math.isfinite(a[0]) and a[0] > 0.0):
            return False, Error.BAD_ARGS
        motion = SplineMotion(a[0], rig[0, :n], rig[1, :n], rig[2, :n], name="recorded rig motion")
        if not self.rig.play(motion, t):
            return False, Error.NOT_ALLOWED
        self.block.header[H.RIG_BUSY] = 1
        return None

    def following_error(self, powered: bool) -> np.ndarray:
        return self.rig.following_error if powered else self.no_ferr


def platform_room(cfg, bus: Bus, idx: np.ndarray, block: SharedBlock, period: float) -> Hinges | Rig:
    """The platform of ``cfg.control`` (hinges, or the rig of ``control.platform``), chosen once."""
    ctl = cfg.control
    rig = rig_player(ctl.rig, period)
    if rig is None:
        return Hinges(bus, idx, ctl.platform_limit, ctl.platform_ratio, period)
    return Rig(bus, idx, ctl.platform_limit, rig, block)
