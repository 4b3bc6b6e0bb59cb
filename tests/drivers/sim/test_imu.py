"""The foot IMU travels over the simulated POWERLINK bus like any sensor: the plant's specific force
(R0 axes) on the auxiliary input (TPDO 0x2400:1..3, REAL32) of the drive channel its bus YAML axis
declares ``sensor: imu``, the same bytes on the sim and the udp backend; NaN where nothing is wired."""
from __future__ import annotations

import numpy as np
import pytest

from drivers.backends.sim import open_in_process
from drivers.config import BusConfigError, parse_bus_config
from drivers.hal import open_bus
from drivers.sim.plant_leg import LegPlant
from models import Robot

from tests.drivers.helpers import cycle
from tests.drivers.sim.test_plant_leg import LEG_YAML, POSTURES, base_gravity

TILT = (np.radians(10.0), np.radians(20.0))


def with_imu(bench: dict, axis: str = "ankle_1", sensor: str = "imu") -> dict:
    for node in bench["nodes"]:
        for a in node["axes"]:
            if a["name"] == axis:
                a["sensor"] = sensor
    return bench


@pytest.mark.parametrize("backend", ["sim", "udp"])
def test_the_bus_carries_the_plants_imu_on_the_declared_axis(bench, backend):
    """While the platform tilts, the IMU read over the bus is the plant's quasi-static specific force
    −R_M→O0ᵀ g at the platform angles read over the bus in the same PRes (thesis eq. 46)."""
    config = parse_bus_config(with_imu(bench))
    plant = LegPlant.from_config(config, Robot.from_yaml(LEG_YAML), q0=POSTURES[1], platform0=TILT)
    bus = (open_bus(dict(bench, backend="sim"), plant=plant) if backend == "sim"
           else open_in_process(config, plant=plant))
    try:
        bus.boot()
        k = bus.axis_names.index("ankle_1")
        plat = [bus.axis_names.index(a) for a in ("platform_alpha", "platform_beta")]
        np.testing.assert_allclose(plant.sensors["imu_gravity"], -base_gravity(*TILT), atol=1e-9)
        for name in ("platform_alpha", "platform_beta"):
            bus.axis(name).enable()
        cycle(bus, 3)
        start = bus.position[plat].copy()
        seen = []
        for n in range(60):                                   # the platform turns back towards level
            bus.target_position[plat] = start * (1.0 - n / 60.0)
            cycle(bus)
            angles = bus.position[plat] / 50.0
            np.testing.assert_allclose(bus.aux[k], -base_gravity(*angles), rtol=0, atol=1e-5, err_msg=str(n))   # REAL32
            seen.append(angles.copy())
        assert np.ptp(np.array(seen), axis=0).min() > 5e-4  # it turned (rad): a one-cycle lag would show
        assert np.isnan(np.delete(bus.aux, k, axis=0)).all()
    finally:
        bus.close()


def test_sensor_key_is_checked(bench):
    assert parse_bus_config(bench).imu_axis is None
    assert parse_bus_config(with_imu(bench, "knee")).imu_axis == parse_bus_config(bench).axes[2].index
    with pytest.raises(BusConfigError, match=r"bus.nodes\[0\].axes\[0\].sensor must be one of imu, sole, pelvis_imu, pelvis_gyro, "
                                             r"left_loads, right_loads, got 'gps'"):
        bench["nodes"][0]["axes"][0]["sensor"] = "gps"
        parse_bus_config(bench)
    bench["nodes"][0]["axes"][0]["sensor"] = "imu"
    with pytest.raises(BusConfigError, match="sensor 'imu' is already wired to another axis"):
        parse_bus_config(with_imu(bench, "knee"))


def test_a_plant_without_imu_is_refused_when_an_axis_declares_one(bench):
    with pytest.raises(ValueError, match="bus axis 'ankle_1' declares sensor: imu but the plant InertiaPlant has no "
                                         "imu_gravity sensor"):
        open_bus(with_imu(bench))


@pytest.mark.parametrize("backend", ["sim", "udp"])
def test_the_sole_travels_beside_the_imu_each_on_its_axis(bench, backend):
    """Two sensors wired (``imu`` on ankle_1, ``sole`` on ankle_2): each axis carries its own plant
    sensor (the clamped leg plant's sole: its weight at the sole's centre), every other axis NaN."""
    config = parse_bus_config(with_imu(with_imu(bench), "ankle_2", "sole"))
    plant = LegPlant.from_config(config, Robot.from_yaml(LEG_YAML), q0=POSTURES[1], platform0=TILT)
    bus = (open_bus(dict(bench, backend="sim"), plant=plant) if backend == "sim"
           else open_in_process(config, plant=plant))
    try:
        bus.boot()
        assert plant.sensors["sole"][0] > 250.0              # the leg's weight (31 kg)
        plant.sensors["sole"][:] = (123.0, 0.01, -0.02)      # the cells' reading changes: carried next cycle
        cycle(bus, 3)
        imu, sole = config.sensor_axis("imu"), config.sensor_axis("sole")
        assert (imu, sole) == (bus.axis_names.index("ankle_1"), bus.axis_names.index("ankle_2"))
        np.testing.assert_allclose(bus.aux[imu], plant.sensors["imu_gravity"], rtol=1e-6)    # REAL32
        np.testing.assert_allclose(bus.aux[sole], (123.0, 0.01, -0.02), rtol=1e-6)
        plant.sensors["sole"][:] = (45.0, -0.03, 0.05)
        cycle(bus, 3)
        np.testing.assert_allclose(bus.aux[sole], (45.0, -0.03, 0.05), rtol=1e-6)
        assert np.isnan(np.delete(bus.aux, [imu, sole], axis=0)).all()
    finally:
        bus.close()
