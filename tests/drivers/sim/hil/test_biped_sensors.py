"""BIP 2000's pelvis IMU and feet load cells travel over the simulated POWERLINK bus (deploy/bip2000.yaml):
the biped plant's specific force at the pelvis (pelvis axes) on trunk_pitch's auxiliary input, its rate gyro
on trunk_roll's, each foot's
four load cells on both channels of its ankle node (cells 1-3 on the first, cell 4 and NaN on the second,
REAL32), the same bytes on the sim and the udp backend; a four-value sensor declared on one axis only is
refused naming it."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from drivers.backends.sim import open_in_process
from drivers.config import SENSORS, BusConfigError, parse_bus_config
from drivers.hal import open_bus
from drivers.sim.plant import InertiaPlant
from models.common.validation import read_yaml

from tests.drivers.helpers import cycle
from tests.paths import DEPLOY, ROBOTS

pytest.importorskip("mujoco", reason="the biped plant needs the sim extra: pip install 'bipd[sim]'")

SECTION = read_yaml(DEPLOY / "bip2000.yaml")["bus"]


def bus_values(bus, name: str) -> np.ndarray:
    """A sensor's values as the managing node reads them: its axes' auxiliary inputs in bus order."""
    rows = bus.config.sensor_axes(name)
    return bus.aux[list(rows)].ravel()[:SENSORS[name].size]


@pytest.mark.parametrize("backend", ["sim", "udp"])
def test_the_pelvis_imu_and_the_feet_loads_reach_the_managing_node(backend):
    from drivers.sim.hil.plant_biped import BipedPlant
    from models.tree.config import load_tree

    config = parse_bus_config(SECTION)
    plant = BipedPlant.from_config(config, load_tree(ROBOTS / "bip2000.yaml"))
    history, step = [], plant.step

    def recording_step(dt, torque):                          # the sensors each bus cycle's PRes can carry
        history.append({k: plant.sensors[k].copy() for k in ("imu_gravity", "imu_rate", "foot_forces")})
        step(dt, torque)
    plant.step = recording_step
    bus = (open_bus(dict(SECTION, backend="sim"), plant=plant) if backend == "sim"
           else open_in_process(config, plant=plant))
    try:
        bus.boot()
        for n in range(25):                                  # the robot sags under its brakes: loads move
            cycle(bus)
            lag = [k for k in range(1, 7) if np.allclose(bus_values(bus, "pelvis_imu"), history[-k]["imu_gravity"],
                                                         rtol=1e-6, atol=1e-5)]
            assert lag, n                                    # the IMU of one recent bus cycle, to REAL32
            s = history[-lag[0]]                             # and the loads of that same cycle
            np.testing.assert_allclose(bus_values(bus, "pelvis_imu"), s["imu_gravity"], rtol=1e-6, atol=1e-5)
            np.testing.assert_allclose(bus_values(bus, "pelvis_gyro"), s["imu_rate"], rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(bus_values(bus, "left_loads"), s["foot_forces"][:4], rtol=1e-6, atol=1e-4)
            np.testing.assert_allclose(bus_values(bus, "right_loads"), s["foot_forces"][4:], rtol=1e-6, atol=1e-4)
        # standing: the eight cells carry the robot's weight (105 kg), the IMU reads about +g up
        total = bus_values(bus, "left_loads").sum() + bus_values(bus, "right_loads").sum()
        assert total == pytest.approx(105.0 * 9.81, rel=0.05), total
        assert bus_values(bus, "pelvis_imu")[2] == pytest.approx(9.81, rel=0.05)
        wired = {r for name in ("pelvis_imu", "pelvis_gyro", "left_loads", "right_loads")
                 for r in bus.config.sensor_axes(name)}
        second = bus.config.sensor_axes("left_loads")[1]
        assert np.isnan(bus.aux[second, 1:]).all()           # cell 4 and padding
        assert np.isnan(np.delete(bus.aux, sorted(wired), axis=0)).all()
    finally:
        bus.close()


def _declared(section: dict, *pairs: tuple[str, str | None]) -> dict:
    out = copy.deepcopy(section)
    for axis, sensor in pairs:
        for node in out["nodes"]:
            for a in node["axes"]:
                if a["name"] == axis:
                    a.pop("sensor", None)
                    if sensor is not None:
                        a["sensor"] = sensor
    return out


def test_a_four_value_sensor_on_one_axis_only_is_refused():
    with pytest.raises(BusConfigError, match=r"sensor 'left_loads' carries 4 values, 3 per auxiliary input: "
                                             r"declare it on 2 axes, not only on l_ankle_sagittal"):
        parse_bus_config(_declared(SECTION, ("l_ankle_lateral", None)))
    with pytest.raises(BusConfigError,
                       match=r"bus.nodes\[2\].axes\[1\].sensor 'left_loads' is already wired to 2 axes"):
        parse_bus_config(_declared(SECTION, ("l_hip_yaw", "left_loads")))


def test_the_daemons_inertia_plant_measures_nothing_on_declared_sensors():
    config = parse_bus_config(SECTION)
    bus = open_bus(dict(SECTION, backend="sim", plant="inertia"),
                   plant=InertiaPlant.from_config(config, nan_sensors=True))
    try:
        bus.boot()
        cycle(bus, 2)
        assert np.isnan(bus.aux).all()
    finally:
        bus.close()
