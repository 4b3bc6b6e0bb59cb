"""Built-in InertiaPlant (semi-implicit Euler) and a load held by feed-forward vs falling."""
from __future__ import annotations

import numpy as np
import pytest

from drivers.sim.plant import InertiaPlant

from tests.drivers.helpers import cycle, enabled_bus


def test_semi_implicit_euler_matches_closed_form():
    plant = InertiaPlant([2.0, 4.0], friction=0.0)
    tau = np.array([1.0, -2.0])
    dt, n = 1e-3, 100
    for _ in range(n):
        plant.step(dt, tau)
    accel = tau / plant.inertia
    np.testing.assert_allclose(plant.motor_velocity, accel * n * dt, rtol=1e-12)
    np.testing.assert_allclose(plant.motor_position, accel * dt * dt * n * (n + 1) / 2, rtol=1e-12)
    plant.reset()
    assert not plant.motor_position.any() and not plant.motor_velocity.any()


def test_friction_settles_at_torque_over_b():
    plant = InertiaPlant([1e-4], friction=[1e-2], load_torque=[0.0])
    for _ in range(2000):
        plant.step(4e-4, np.array([0.5]))
    assert plant.motor_velocity[0] == pytest.approx(50.0, rel=1e-6)


def test_platform_load_falls_without_compensation_and_holds_with_it(bench):
    bench["nodes"][2]["axes"][0]["plant"] = {"inertia": 4e-4, "load_torque": 0.3}
    bus = enabled_bus(bench)
    alpha = bus.axis("platform_alpha")
    alpha.torque_offset = 0.3                      # CSP hold with the load as torque feed-forward
    cycle(bus, 100)
    target = alpha.target_position
    assert alpha.position == pytest.approx(target, abs=1e-4)
    cycle(bus, 100)
    assert alpha.position == pytest.approx(target, abs=1e-4)
    assert abs(alpha.velocity) < 1e-3
    alpha.disable()                                # torque off: the load pulls it down
    cycle(bus, 100)
    assert alpha.position < target - 1.0
    assert alpha.velocity < 0
