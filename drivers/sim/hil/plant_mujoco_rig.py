"""The BIP leg standing free on the Stewart–Gough rig's plate, simulated by MuJoCo (the HIL plant of
a daemon YAML with ``control.platform: {kind: stewart}``).

The scene is :func:`drivers.sim.hil.mjcf.build_mjcf` with the rig of :mod:`drivers.sim.hil.stewart_mjcf`
in place of the two hinges: the foot stands on the rig's plate (body and geom ``platform``), whose
top face is M at the home pose. Motors in bus order (``axes``): the leg's four (as
:class:`~drivers.sim.hil.plant_mujoco.MujocoPlant`: tendons through J_p(q)) and the rig's six
(``rig_axes``, legs A-F): each motor torque drives its actuator through the screw (force 2π/lead ×
torque), motor angle = 2π/lead × actuator displacement. ``sensors`` as the hinge plant's, with
``platform`` the plate's hinge-equivalent tilt (α, β) (:mod:`models.rig.tilt`).

The hinge plant's kernels run unchanged on the leg: its two platform-motor slots carry the rig's
actuators A and B (their controls), its platform coordinates read the plate's free joint (x, y,
overwritten here); the other four actuators' controls and all six encoders are this class'.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import mujoco
import numpy as np

from models import Robot
from models.rig.stewart import StewartModel
from models.rig.tilt import matrix_hinge_angles

from drivers.config import BusConfig, BusConfigError
from drivers.sim.plant_leg import AXES, N_LEG
from drivers.sim.hil.mjcf import PLATFORM, build_mjcf
from drivers.sim.hil.plant_mujoco import MujocoPlant
from drivers.sim.hil.stewart_mjcf import ACTUATORS, RigState, gear, rig_params


class MujocoRigPlant(MujocoPlant):
    """The leg on the rig: ten motors in bus order ``axes`` (the leg's four of ``AXES`` and
    ``rig_axes``, the rig's six for legs A-F); ``rig_options`` overrides
    :data:`drivers.sim.hil.stewart_mjcf.RIG_DEFAULTS` (``screw_lead``, rotor inertia and friction)."""

    def __init__(self, robot: Robot, rig: StewartModel, axes: Sequence[str], rig_axes: Sequence[str],
                 rig_options: Mapping | None = None, platform: Mapping | None = None,
                 q0: Sequence[float] | None = None, *, timestep: float = 4.0e-4, bolt_foot: bool = False) -> None:
        leg = AXES[:N_LEG]
        if len(rig_axes) != 6 or sorted(axes) != sorted([*leg, *rig_axes]):
            raise BusConfigError(f"bus axes {list(axes)} do not match the leg on the rig's motors "
                                 f"{[*leg, *rig_axes]}")
        self.rig, self._rig_p = rig, rig_params(rig_options)
        self.gear = gear(self._rig_p)
        self._ready = False
        super().__init__(robot, platform, q0, timestep=timestep, axes=AXES, bolt_foot=bolt_foot)
        m, d = self.mj_model, self.mj_data
        state = RigState(m)
        self._slide_q, self._slide_v = state.qadr[:, 2].copy(), state.dadr[:, 2].copy()
        names = list(axes)
        self._leg_bus = np.array([names.index(a) for a in leg], np.int64)
        self._rig_bus = np.array([names.index(a) for a in rig_axes], np.int64)
        self._internal = np.concatenate([self._leg_bus, self._rig_bus[:2]])   # the hinge plant's six controls
        first = m.actuator(ACTUATORS[2]).id
        assert list(m.actuator_trnid[first:first + 4, 0]) == [m.joint(a).id for a in ACTUATORS[2:]]
        self._rest_ctrl = d.ctrl[first:first + 4]                # actuators C-F
        self._tau = np.zeros(len(AXES))
        self._plate = d.xmat[m.body(PLATFORM).id].reshape((3, 3))
        self._hinge_position, self._hinge_velocity = self.motor_position, self.motor_velocity   # internal order
        self.axes = tuple(axes)
        self.n_motors = len(names)
        self.motor_position, self.motor_velocity = np.zeros(self.n_motors), np.zeros(self.n_motors)
        self._ready = True
        self._publish()

    def _scene(self, robot: Robot, foot: Mapping[str, float], platform: Mapping | None, timestep: float) -> str:
        return build_mjcf(robot, foot, platform, bolted=self.bolt_foot, timestep=timestep, rig=self.rig,
                          rig_params=self._rig_p)

    def _platform_coordinates(self, m: mujoco.MjModel) -> tuple[float, int, int]:
        free = m.joint("rig_platform").id
        return 1.0, m.jnt_qposadr[free], m.jnt_dofadr[free]

    @classmethod
    def from_config(cls, config: BusConfig, robot: Robot, rig: StewartModel, rig_axes: Sequence[str],
                    screw_lead: float, q0: Sequence[float] | None = None, **options) -> MujocoRigPlant:
        """On the bus axes of ``config``; the rig's rotors take their axes' ``plant:`` inertia and
        friction (the same value on the six)."""
        params = [config.axis(name).plant for name in rig_axes]
        rig_options = {"screw_lead": screw_lead, "motor_inertia": params[0].inertia,
                       "motor_friction": params[0].friction}
        return cls(robot, rig, [a.name for a in config.axes], rig_axes, rig_options, q0=q0, **options)

    def reset(self) -> None:
        super().reset()
        if self._ready:
            self._publish()

    def step(self, dt: float, motor_torque: np.ndarray) -> None:
        np.take(motor_torque, self._internal, out=self._tau, mode="clip")   # mode raise would buffer (allocate)
        np.take(motor_torque, self._rig_bus[2:], out=self._rest_ctrl, mode="clip")   # mode raise would buffer (allocate)
        super().step(dt, self._tau)
        self._publish()

    def _publish(self) -> None:
        d = self.mj_data
        self.motor_position[self._leg_bus] = self._hinge_position[:N_LEG]
        self.motor_velocity[self._leg_bus] = self._hinge_velocity[:N_LEG]
        self.motor_position[self._rig_bus] = self.gear * d.qpos[self._slide_q]
        self.motor_velocity[self._rig_bus] = self.gear * d.qvel[self._slide_v]
        matrix_hinge_angles(self._plate, self.sensors["platform"])
