"""SI <-> the CiA 402 integers (drivers/powerlink/scaling.py, process_image.write_rpdo): rounded to
nearest as ``struct`` packs Python's round(), saturated at the type's range (never wrapped, never
inf), a NaN keeps the last value; every saturated write counted and the first one reported."""
from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from drivers.config import BusConfigError, parse_bus_config
from drivers.events import EventKind
from drivers.hal import Intent, open_bus
from drivers import pdo
from drivers.powerlink import frames
from drivers.pdo import RPDO
from drivers.powerlink.process_image import SATURATION_BITS, write_rpdo
from drivers.powerlink.scaling import get_scaled, put_scaled, scale_table
from drivers.sim import drive as sim_drive

INC_PER_RAD = 2 ** 17 / (2 * math.pi)
SCALES = np.array([[INC_PER_RAD, INC_PER_RAD, 2000.0, 200.0]])
BUS = {"backend": "sim", "nodes": [{"node_id": 1, "axes": [{"name": "a", "channel": 0}, {"name": "b", "channel": 1}]}]}


def _reference(value: float, scale: float, fmt: str) -> bytes:
    """The integer a value travels as: Python's round() of value * scale, clipped to ``fmt``'s range."""
    bits = 8 * struct.calcsize(fmt)
    low, high = -2 ** (bits - 1), 2 ** (bits - 1) - 1
    v = value * scale
    return struct.pack("<" + fmt, low if v < low else high if v > high else round(v))


@pytest.mark.parametrize("name", ["target_position", "target_velocity", "torque_offset"])
def test_put_scaled_rounds_and_saturates_as_the_reference(name):
    field = RPDO.table(0)[pdo.RPDO_FIELDS.index(name)]
    entry = RPDO.entry(name)
    scale = SCALES[0, field[4]]
    rng = np.random.default_rng(7)
    limit = (2 ** (8 * entry.size - 1)) / scale
    values = np.concatenate([rng.uniform(-3, 3, 200) / scale, rng.uniform(-1.5, 1.5, 200) * limit,
                             [0.5 / scale, 1.5 / scale, -0.5 / scale, limit, -limit, 1e39, -1e39, math.inf, -math.inf]])
    row = np.zeros(16, np.uint8)
    for v in values:
        clamped = put_scaled(row, 0, field, v, SCALES[0])
        expected = _reference(float(v), scale, entry.fmt)
        assert bytes(row[field[0]:field[0] + entry.size]) == expected, v
        assert clamped == (abs(v * scale) > 2 ** (8 * entry.size - 1) - (0 if v < 0 else 1)), v
        assert get_scaled(row, 0, field, SCALES[0]) == struct.unpack("<" + entry.fmt, expected)[0] / scale


def test_write_rpdo_saturates_counts_and_reports_once():
    """1e39 and -inf saturate at INTEGER32's ends (REAL32 made them inf), a NaN keeps the last value;
    the axis' bits name the fields, its count grows every saturated write, the first one reports it."""
    n = 2
    preq = np.zeros((1, frames.pdo_frame_length(RPDO.size)), np.uint8)
    saturated, saturations, newly = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
    position, velocity, torque = np.array([0.25, 0.0]), np.zeros(n), np.array([0.0, 0.1])
    scales = np.repeat(SCALES, n, axis=0)

    def write():
        return write_rpdo(np.full(n, int(Intent.DISABLED), np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64),
                          np.full(n, 8, np.int64), position, velocity, torque, preq, np.array([preq.shape[1]]),
                          np.zeros(n, np.int64), np.stack([RPDO.table(ch) for ch in range(n)]), scales, saturated,
                          saturations, newly, False)

    def sent(ch):
        return RPDO.struct.unpack_from(preq[0], frames.PDO_OFFSET)[ch * RPDO.per_channel + 2:(ch + 1) * RPDO.per_channel]

    assert write() == (0, 0) and sent(1) == (0, 0, 200)
    position[0], velocity[0], torque[1] = 1e39, -math.inf, math.nan
    assert write() == (0, 2) and list(newly) == [0, 1]
    assert sent(0) == (2 ** 31 - 1, -2 ** 31, 0) and sent(1) == (0, 0, 200)        # the NaN kept 200 per mille
    assert list(saturated) == [SATURATION_BITS["target_position"] | SATURATION_BITS["target_velocity"],
                               SATURATION_BITS["torque_offset"]]
    assert write() == (0, 0) and list(saturations) == [2, 2]                         # counted, reported once
    position[0], velocity[0], torque[1] = 0.0, 0.0, 0.0
    assert write() == (0, 0) and list(saturated) == [0, 0] and list(saturations) == [2, 2]
    torque[1] = -1e6
    assert write() == (0, 1) and newly[0] == 1 and sent(1) == (0, 0, -2 ** 15)


def test_the_bus_reports_a_saturated_setpoint_and_the_drive_gets_the_end_of_the_range():
    bus = open_bus(BUS)
    try:
        bus.boot()
        bus.target_position[0] = 1e12                                   # ~2e16 increments
        bus.write()
        bus.exchange()
        events = [e for e in bus.events if e.kind is EventKind.SETPOINT_SATURATED]
        assert len(events) == 1 and events[0].axis == "a" and "0x607A" in events[0].text
        drive = bus.network.nodes[1].drive
        assert drive.bank.x[0, sim_drive.CMD_POS] == pytest.approx((2 ** 31 - 1) / INC_PER_RAD)
        assert bus.saturations[0] == 1 and bus.saturations[1] == 0
    finally:
        bus.close()


def test_the_drive_reports_whole_increments_and_per_mille():
    """The simulated drive's actual position is its encoder's whole increments (floor); in CST a
    0.1234 N·m torque offset arrives as 247 per mille of 0.5 N·m, drives 1.235 A (kt 0.1 N·m/A),
    reported as 247 per mille of the rated 5 A."""
    bus = open_bus(BUS)
    try:
        bus.boot()
        plant = bus.network.nodes[1].drive.bank.plant
        plant.motor_position[:] = [2575.8 / INC_PER_RAD, -0.3 / INC_PER_RAD]
        bus.write()
        bus.exchange()
        bus.read()
        assert bus.position * INC_PER_RAD == pytest.approx([2575, -1], rel=0, abs=1e-6)      # floor, not round
        axis = bus.axis("b")
        axis.mode, axis.torque_offset = 10, 0.1234
        axis.enable()
        for _ in range(4):
            bus.write()
            bus.exchange()
            bus.read()
        assert axis.state.name == "OPERATION_ENABLED"
        assert bus.current[1] * 200.0 == pytest.approx(247.0, rel=0, abs=1e-9)
    finally:
        bus.close()


def test_scale_table_follows_the_yaml():
    config = parse_bus_config({**BUS, "drive_defaults": {"encoder_increments": 2 ** 20, "rated_torque": 2.0,
                                                         "rated_current": 20.0, "current_limit": 40.0}})
    assert scale_table(config.axes)[0] == pytest.approx([2 ** 20 / (2 * math.pi)] * 2 + [500.0, 50.0])
    assert tuple(pdo.SCALES) == ("position", "velocity", "torque", "current")


@pytest.mark.parametrize("drive, message", [
    ({"encoder_increments": 1000.5}, "encoder_increments must be an integer in 4..2147483647"),
    ({"encoder_increments": 2}, "encoder_increments must be an integer"),
    ({"rated_current": 0.001}, "current_limit 10.0 A is 10000000 per mille of rated_current"),
    ({"rated_torque": 0.01}, "beyond the INTEGER16 torque 0x60B2"),
    ({"rated_current": -1.0}, "rated_current must be > 0"),
    ({"encoder_increments": 2 ** 30, "speed_limit": 300.0}, "speed_limit 300.0 is 5.13e\\+10 increments"),
])
def test_bad_scaling_is_named(drive, message):
    with pytest.raises(BusConfigError, match=message):
        parse_bus_config({**BUS, "nodes": [{"node_id": 1, "axes": [{"name": "a", "channel": 0, "drive": drive}]}]})
