"""The rig in the daemon's loop (``control.platform: {kind: stewart}``): the six actuators' bus
axes to and from :class:`~controller.daemon.rig.player.RigPlayer`, and the ``platform`` command as the
hinge-equivalent tilt of the plate (docs/rig.md)."""
from __future__ import annotations

import math

import numpy as np

from models.rig.stewart import OK, StewartModel, leg_lengths

from models.rig.tilt import THESIS, euler_to_hinge

from controller.daemon.rig.motions import Motion, TiltSequence
from controller.daemon.rig.player import RigPlayer, following_errors

TILT_PATH_POINTS = 21          # poses of a `platform` tilt checked against the stroke before it starts
# m, rad: a rig_motion starts within this of home. The plate sinks under BIP 2000 while its drives are off, by
# how long the boot took before the enable (1.3 mm, 2.7 mm once the boot ran the ER/EC handshake): the held
# pose is where the enable found it, and the stroke check from home stays valid within these few mm.
HOME_TOLERANCE = 5e-3


class RigLoop:
    """The loop's rig: ``measure_bus`` fills the platform's tilt (α, β) from the drives (NaN when
    forward kinematics fails: the loop's tilt input then warns and keeps its last gravity),
    ``reference`` the actuators' setpoints (following the measured pose while unpowered), ``tilt``
    starts a ``platform`` command's tilt from the current one. ``following_error`` (mm of stroke,
    legs A-F): each drive's setpoint on the bus (the one it follows) minus its measured position."""

    def __init__(self, model: StewartModel, gear: float, period: float, accel_filter: float,
                 convention: int = THESIS) -> None:
        self.player = p = RigPlayer(model, gear, period, accel_filter, convention)
        self.model = model
        self.position, self.velocity, self.support_acc = p.position, p.velocity, p.support_acc
        self.motor_pos, self.motor_vel, self.following_error = np.zeros(6), np.zeros(6), np.zeros(6)
        following_errors(self.motor_pos, self.motor_vel, np.arange(6), p.gear, self.following_error)   # compiled
        self._lam, self._S, self._x, self._xd = np.zeros(6), np.zeros((6, 6)), np.zeros(6), np.zeros(6)

    def measure_bus(self, position: np.ndarray, velocity: np.ndarray, target: np.ndarray, idx: np.ndarray,
                    plat: np.ndarray) -> int:
        np.take(position, idx, out=self.motor_pos, mode="clip")   # mode raise would buffer (allocate)
        np.take(velocity, idx, out=self.motor_vel, mode="clip")   # mode raise would buffer (allocate)
        following_errors(target, position, idx, self.player.gear, self.following_error)
        status = self.player.measure(self.motor_pos, self.motor_vel)
        if status == OK:
            plat[0], plat[1] = self.player.tilt[0], self.player.tilt[1]
        else:
            plat.fill(math.nan)
        return status

    def reference(self, t: float, powered: bool) -> None:
        p = self.player
        if not powered:                             # follow the platform where it is
            p.stop()
            p.pose_ref[:] = p.pose
        p.reference(t)

    def tilt(self, alpha: float, beta: float, duration: float, t: float) -> bool:
        """Tilt the plate from its current reference tilt to (α, β) in ``duration`` s (quintic),
        as the hinge platform's ``platform`` command; False (nothing moves) if the rig is playing a
        motion or an actuator would leave its stroke on the way (checked at TILT_PATH_POINTS poses)."""
        p = self.player
        if p.motion is not None and not isinstance(p.motion, TiltSequence):
            return False
        start = euler_to_hinge(*p.pose_ref[3:], p.convention)
        motion = TiltSequence([(alpha, beta, max(duration, p.period))], start=start, end_level=False,
                              convention=p.convention)
        lo, hi = self.model.desc.stroke
        for k in range(TILT_PATH_POINTS):
            motion.at(motion.duration * k / (TILT_PATH_POINTS - 1), self._x, self._xd, self._xd)
            np.add(p.home, self._x, out=self._x)
            leg_lengths(self.model.buf, self._x, self._lam, self._S)
            if np.any(self._lam < lo) or np.any(self._lam > hi):
                return False
        p.stop()
        self._x[:3], self._x[3:] = p.pose_ref[:3], 0.0     # the held position; the tilt's angles are absolute
        p.start(motion, t, self._x)
        return True


    def play(self, motion: Motion, t: float) -> bool:
        """Start the ``rig_motion`` command's motion (checked against the stroke on the I/O side
        from home) where the plate is held; False if the rig is moving or more than
        ``HOME_TOLERANCE`` from home (a ``platform`` tilt left it tilted)."""
        p = self.player
        if p.motion is not None or np.any(np.abs(p.pose_ref - p.home) > HOME_TOLERANCE):
            return False
        p.start(motion, t)
        return True


def rig_player(cfg, period: float) -> RigLoop | None:
    """The loop's rig of ``control.platform`` (a :class:`controller.daemon.config.RigConfig`), None for the hinges."""
    if cfg is None:
        return None
    return RigLoop(StewartModel.from_yaml(cfg.rig_path), 2.0 * math.pi / cfg.screw_lead, period, cfg.accel_filter,
                   cfg.convention)
