"""The ``sim`` backend's bench leg on the Stewart–Gough rig: the leg plant (:mod:`drivers.sim.plant_leg`,
the foot clamped to the plate) whose platform angles are the rig's plate tilt, and the rig's six
actuators as motor inertias that their drives' CSP loops move. Each step: the rig's motors advance
under their torques; the forward kinematics of their lengths (Staicu 2008, eq. 10, Newton from the
last pose) gives the plate's pose and its hinge-equivalent tilt (α, β) (:mod:`models.rig.tilt`);
the leg plant takes that tilt (and its rate over the step) for its gravity. The rig's own dynamics
(legs, platform, the leg's weight on the actuators) and the support's acceleration are the MuJoCo
HIL's (:mod:`drivers.sim.hil.stewart_mjcf`), not this plant's.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from models import Robot
from models.rig.stewart import OK, STATUS_NAMES, StewartData, StewartModel, forward_kinematics, leg_lengths
from models.rig.tilt import hinge_angles

from drivers.config import BusConfig, BusConfigError
from drivers.sim.plant import InertiaPlant, Plant
from drivers.sim.plant_leg import AXES, N_LEG, LegPlant


class RigPlantError(RuntimeError):
    """The rig's actuator lengths fit no platform pose (forward kinematics failed)."""


class RigLegPlant(Plant):
    """Motors in bus order (``axes``): the leg's four of ``drivers.sim.plant_leg.AXES`` and the rig's six
    (``rig_axes``, legs A-F), each rig motor turning ``gear`` rad per metre of its actuator."""

    def __init__(self, robot: Robot, rig: StewartModel, gear: float, axes: Sequence[str], rig_axes: Sequence[str],
                 rig_inertia: Sequence[float], rig_friction: Sequence[float], q0: Sequence[float] | None = None) -> None:
        leg_axes = AXES[:N_LEG]
        if sorted(axes) != sorted(list(leg_axes) + list(rig_axes)) or len(rig_axes) != 6:
            raise BusConfigError(f"bus axes {list(axes)} do not match the leg on the rig's motors "
                                 f"{list(leg_axes) + list(rig_axes)}")
        self.rig, self.gear = rig, float(gear)
        self._gear = np.array(self.gear)      # 0-d: a Python float divisor makes a temporary array each step
        self.leg = LegPlant(robot, q0=q0)
        self.leg_idx = np.array([list(axes).index(a) for a in leg_axes], np.int64)
        self.rig_idx = np.array([list(axes).index(a) for a in rig_axes], np.int64)
        home = np.array([0.0, 0.0, rig.desc.h, 0.0, 0.0, 0.0])
        lam0 = np.zeros(6)
        leg_lengths(rig.buf, home, lam0, np.zeros((6, 6)))
        self.motors = InertiaPlant(rig_inertia, rig_friction, 0.0, self.gear * lam0)
        self.n_motors = N_LEG + 6
        self.motor_position, self.motor_velocity = np.zeros(self.n_motors), np.zeros(self.n_motors)
        self.sensors = self.leg.sensors
        self._home, self._data = home, StewartData()
        self._pose, self._lam, self._tilt, self._last = home.copy(), np.zeros(6), np.zeros(2), np.zeros(2)
        self._leg_tau, self._rig_tau = np.zeros(len(AXES)), np.zeros(6)
        self.reset()

    @classmethod
    def from_config(cls, config: BusConfig, robot: Robot, rig: StewartModel, gear: float,
                    rig_axes: Sequence[str], q0: Sequence[float] | None = None) -> RigLegPlant:
        """On the bus axes of ``config``; the rig's motors take their axes' ``plant:`` inertia and friction."""
        params = [config.axis(name).plant for name in rig_axes]
        return cls(robot, rig, gear, [a.name for a in config.axes], rig_axes,
                   [p.inertia for p in params], [p.friction for p in params], q0)

    def reset(self) -> None:
        self.motors.reset()
        self._pose[:] = self._home
        self._tilt.fill(0.0)
        self._last.fill(0.0)
        self.leg.set_platform(0.0, 0.0, 0.0, 0.0)
        self.leg.reset()
        self._publish()

    def step(self, dt: float, motor_torque: np.ndarray) -> None:
        np.take(motor_torque, self.rig_idx, out=self._rig_tau, mode="clip")   # mode raise would buffer (allocate)
        self.motors.step(dt, self._rig_tau)
        np.divide(self.motors.motor_position, self._gear, out=self._lam)
        status = forward_kinematics(self.rig.buf, self._data.buf, self._lam, self._pose)
        if status != OK:
            raise RigPlantError(f"rig plant: actuator lengths {np.round(self._lam, 4).tolist()} m: "
                                f"{STATUS_NAMES[int(status)]}")
        self._last[:] = self._tilt
        hinge_angles(self._pose, self._tilt)
        self.leg.set_platform(self._tilt[0], self._tilt[1], (self._tilt[0] - self._last[0]) / dt,
                              (self._tilt[1] - self._last[1]) / dt)
        np.take(motor_torque, self.leg_idx, out=self._leg_tau[:N_LEG], mode="clip")   # mode raise would buffer (allocate)
        self.leg.step(dt, self._leg_tau)
        self._publish()

    def _publish(self) -> None:
        self.motor_position[self.leg_idx] = self.leg.motor_position[:N_LEG]
        self.motor_velocity[self.leg_idx] = self.leg.motor_velocity[:N_LEG]
        self.motor_position[self.rig_idx] = self.motors.motor_position
        self.motor_velocity[self.rig_idx] = self.motors.motor_velocity

