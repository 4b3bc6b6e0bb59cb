"""Motor holding brake (DriveParams.holding_brake_torque): holds a disabled axis, slips above its
torque, releases on Operation Enabled; 0 (default) changes nothing."""
from __future__ import annotations

import numpy as np
import pytest

from drivers import cia402
from drivers.cia402 import State
from drivers.config import BusConfigError, parse_bus_config
from drivers.sim.drive import ACT_CUR, BRAKE_ON, BRAKE_POS, HOLD_TORQUE, LOOP_OFF
from drivers.hal import open_bus
from drivers.sim.plant import InertiaPlant

from tests.drivers.helpers import cycle

KNEE = 2                         # bench.yaml axis index of the knee
K_B = 75.0 * 0.6 * 0.1           # kp_position · kp_speed · kt [N·m/rad] with the bench's gains


def _bench(bench, *, brake=None, load=0.0):
    if brake is not None:
        bench["drive_defaults"]["holding_brake_torque"] = brake
    bench["nodes"][1]["axes"][0]["plant"] = {"load_torque": load}
    return bench


def _booted(section):
    bus = open_bus(section)
    bus.boot()
    return bus


def _positions(bus, n):
    out = []
    for _ in range(n):
        cycle(bus)
        out.append(bus.axis("knee").position)
    return np.array(out)


def test_config_accepts_zero_and_per_axis_brakes_and_rejects_negative(bench):
    assert parse_bus_config(bench).axis("knee").drive.holding_brake_torque == 0.0
    bench["drive_defaults"]["holding_brake_torque"] = 2.0
    bench["nodes"][1]["axes"][1]["drive"] = {"holding_brake_torque": 0.0}
    config = parse_bus_config(bench)
    assert config.axis("knee").drive.holding_brake_torque == 2.0
    assert config.axis("hip").drive.holding_brake_torque == 0.0
    bench["drive_defaults"]["holding_brake_torque"] = -1.0
    with pytest.raises(BusConfigError, match="holding_brake_torque"):
        parse_bus_config(bench)


def test_disabled_axis_holds_a_load_below_the_brake_torque(bench):
    load = 0.5
    bus = _booted(_bench(bench, brake=1.0, load=load))
    knee = bus.axis("knee")
    assert knee.state == State.SWITCH_ON_DISABLED
    q = _positions(bus, 500)                                  # 1 s
    # static deflection load / K_b, critically damped (no overshoot), then at rest
    assert np.abs(q).max() <= load / K_B * 1.01
    assert q[-1] == pytest.approx(-load / K_B, rel=1e-3)
    assert abs(knee.velocity) < 1e-6
    # mechanical brake: the drive reports no current while the brake carries the load
    assert knee.current == 0.0
    assert bus.network.bank.torque[KNEE] == pytest.approx(load, rel=1e-6)   # J v̇ = τ − τ_load
    bus.close()


def test_a_load_above_the_brake_torque_slips(bench):
    load, brake = 1.5, 1.0
    bus = _booted(_bench(bench, brake=brake, load=load))
    q = _positions(bus, 100)                                  # 0.2 s
    knee = bus.axis("knee")
    assert q[-1] < -5.0 and knee.velocity < -100.0            # falling, not held
    # slipping: the brake gives its full torque against the motion, no more
    assert bus.network.bank.torque[KNEE] == pytest.approx(brake)
    assert knee.current == 0.0
    bus.close()


def test_no_brake_by_default_the_disabled_axis_falls_as_before(bench):
    load = 0.5
    bus = _booted(_bench(bench, load=load))
    bank = bus.network.bank
    plant = InertiaPlant(2.0e-4, 1.0e-3, load)
    plant.motor_position[0] = bank.plant.motor_position[KNEE]
    plant.motor_velocity[0] = bank.plant.motor_velocity[KNEE]
    for _ in range(100):
        cycle(bus)
        assert bank.torque[KNEE] == 0.0
    for _ in range(500):
        plant.step(0.0004, np.zeros(1))
    # exactly the free InertiaPlant under the load: zero drive torque in every bus cycle
    assert bank.plant.motor_position[KNEE] == plant.motor_position[0] < -5.0
    assert bank.x[KNEE, HOLD_TORQUE] == 0.0 and bank.flags[KNEE, BRAKE_ON] == 0
    bus.close()


def test_default_zero_and_explicit_zero_are_identical(bench):
    a = _booted(_bench(bench, load=0.3))
    b = _booted(_bench(parse_bench_copy(bench), brake=0.0, load=0.3))
    for bus in (a, b):
        for axis in bus.axes.values():
            axis.enable()
        bus.axis("knee").target_position = 0.2
    np.testing.assert_array_equal(_positions(a, 200), _positions(b, 200))
    a.close()
    b.close()


def parse_bench_copy(bench):
    import copy
    return copy.deepcopy(bench)


def test_enabling_releases_the_brake_and_tracks_as_without_it(bench):
    braked = _booted(_bench(parse_bench_copy(bench), brake=1.0, load=0.3))
    plain = _booted(_bench(parse_bench_copy(bench), load=0.3))
    cycle(braked, 50)                                         # held by the brake meanwhile
    assert abs(braked.axis("knee").position) < 0.3 / K_B * 1.01
    for bus in (braked, plain):
        knee = bus.axis("knee")
        knee.target_position = knee.position
        knee.enable()
    cycle(plain, 1)
    cycle(braked, 1)
    for bus in (braked, plain):
        cycle(bus, 5)
        assert bus.axis("knee").state == State.OPERATION_ENABLED
    bank = braked.network.bank
    assert bank.flags[KNEE, BRAKE_ON] == 0
    errors = []
    for k in range(300):                                      # 0.6 s ramp to +1 rad
        for bus in (braked, plain):
            bus.axis("knee").target_position = min(1.0, k / 150)
            cycle(bus)
        errors.append(braked.axis("knee").position - min(1.0, k / 150))
        # released: the plant gets exactly the drive's torque kt · i
        assert bank.torque[KNEE] == 0.1 * bank.x[KNEE, ACT_CUR]
    assert braked.axis("knee").position == pytest.approx(1.0, abs=2e-3)
    assert max(abs(e) for e in errors) < 0.1              # velocity lag ~ 3.3 rad/s / kp_position
    # once released, the braked axis tracks like the one that never had a brake
    assert braked.axis("knee").position == pytest.approx(plain.axis("knee").position, abs=1e-3)
    braked.close()
    plain.close()


def test_brake_engages_where_the_axis_is_disabled_and_after_a_quick_stop(bench):
    bus = _booted(_bench(bench, brake=1.0, load=0.3))
    knee = bus.axis("knee")
    knee.target_position = knee.position
    knee.enable()
    cycle(bus, 5)
    for k in range(100):
        knee.target_position = min(0.5, k / 100)
        cycle(bus)
    cycle(bus, 50)
    at = knee.position
    knee.disable()
    cycle(bus, 250)
    bank = bus.network.bank
    assert bank.mode[KNEE] == LOOP_OFF and bank.flags[KNEE, BRAKE_ON] == 1
    assert knee.position == pytest.approx(at, abs=0.3 / K_B * 1.05)
    # a quick stop while moving in CSV: braked to standstill by the drive, then held by the brake
    knee.enable()
    cycle(bus, 5)
    knee.mode = cia402.Mode.CSV
    knee.target_velocity = 20.0
    cycle(bus, 50)
    knee.quick_stop()
    cycle(bus, 150)
    assert knee.state != State.OPERATION_ENABLED and bank.mode[KNEE] == LOOP_OFF
    held = bank.x[KNEE, BRAKE_POS]
    q = _positions(bus, 250)
    assert np.abs(q - held).max() < 0.3 / K_B * 1.05 + 0.01
    assert abs(knee.velocity) < 1e-3
    bus.close()
