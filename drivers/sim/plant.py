"""The plant interface the simulated drives step, and a built-in plant of independent motor inertias.

A plant owns preallocated ``motor_position`` / ``motor_velocity`` arrays (rad, rad/s), updated in
place by :meth:`Plant.step` and never rebound, so drives can hold references to them. Motor ``i``
is the bus axis ``i`` (``BusConfig.axes`` order). The leg plant (models/) and the MuJoCo plant
(HIL) implement the same interface.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from numba import njit

from drivers.config import SENSORS, BusConfig


class Plant(ABC):
    """Physics driven by motor torques (N·m); ``sensors`` holds optional extra arrays by name."""

    n_motors: int
    motor_position: np.ndarray
    motor_velocity: np.ndarray
    sensors: dict[str, np.ndarray]

    @abstractmethod
    def reset(self) -> None:
        """Return to the initial state."""

    @abstractmethod
    def step(self, dt: float, motor_torque: np.ndarray) -> None:
        """Advance the physics by ``dt`` seconds under ``motor_torque`` (held constant)."""

    def idle(self) -> None:
        """The bus is waiting for the managing node: a moment for work that can wait (the UDP
        server calls it after answering a datagram)."""


@njit(cache=True)
def _integrate(position, velocity, torque, inertia, friction, load, dt):
    for i in range(position.shape[0]):
        velocity[i] += dt * (torque[i] - friction[i] * velocity[i] - load[i]) / inertia[i]
        position[i] += dt * velocity[i]


class InertiaPlant(Plant):
    """Independent motor axes: J·v̇ = τ − b·v − τ_load, semi-implicit Euler."""

    def __init__(self, inertia, friction, load_torque=0.0, position0=0.0) -> None:
        self.inertia = np.array(inertia, dtype=np.float64, ndmin=1)
        self.n_motors = self.inertia.shape[0]
        self.friction = np.broadcast_to(np.asarray(friction, np.float64), self.n_motors).copy()
        self.load_torque = np.broadcast_to(np.asarray(load_torque, np.float64), self.n_motors).copy()
        self.position0 = np.broadcast_to(np.asarray(position0, np.float64), self.n_motors).copy()
        if np.any(self.inertia <= 0) or np.any(self.friction < 0):
            raise ValueError("InertiaPlant needs inertia > 0 and friction >= 0 on every motor")
        self.motor_position = self.position0.copy()
        self.motor_velocity = np.zeros(self.n_motors)
        self.sensors = {}

    @classmethod
    def from_config(cls, config: BusConfig, nan_sensors: bool = False) -> InertiaPlant:
        """One motor per configured axis, with the axis' ``plant:`` values. It simulates no sensor: a
        bus declaring one (drivers.config.SENSORS) is refused, or with ``nan_sensors`` reads NaN there,
        nothing measured, as an unwired input."""
        plant = cls([a.plant.inertia for a in config.axes], [a.plant.friction for a in config.axes],
                    [a.plant.load_torque for a in config.axes])
        for name, spec in SENSORS.items():
            if nan_sensors and config.sensor_axes(name):
                size = max(spec.first + spec.size, plant.sensors.get(spec.plant, np.empty(0)).size)
                plant.sensors[spec.plant] = np.full(size, np.nan)
        return plant

    def reset(self) -> None:
        self.motor_position[:] = self.position0
        self.motor_velocity[:] = 0.0

    def step(self, dt: float, motor_torque: np.ndarray) -> None:
        _integrate(self.motor_position, self.motor_velocity, motor_torque, self.inertia,
                   self.friction, self.load_torque, dt)
