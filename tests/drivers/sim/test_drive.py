"""Two-axis drive: set-value interpolation (thesis Figure 13), cascade limits, faults, SDO channel."""
from __future__ import annotations

import math

import numpy as np
import pytest

from drivers import cia402
from drivers.cia402 import State
from drivers.codes import FaultCode
from drivers.config import parse_bus_config
from drivers.sim.drive import ACT_CUR, ACT_POS, CMD_POS, CMD_TORQUE, LOOP_POSITION, LOOP_TORQUE, FE_ACTUAL, FE_LIMIT, P_DEM
from drivers.events import EventKind
from drivers.fault_api import FaultError
from drivers import pdo
from drivers.powerlink import frames
from drivers.service_channel import UNSIGNED8, UNSIGNED16, UNSIGNED32, SdoAbort
from drivers.sim.nodes import SimulatedNodes

from tests.drivers.helpers import cycle, enabled_bus


def test_position_set_values_interpolate_at_each_400us_sub_step(bench):
    config = parse_bus_config(bench)
    bank = SimulatedNodes(config).bank
    row = config.axis("knee").index
    bank.mode[row] = LOOP_POSITION
    demands = []
    for target in (0.01, 0.02, 0.02):
        bank.x[row, CMD_POS] = target
        for phase in range(5):
            bank.step(phase)
            demands.append(bank.x[row, P_DEM])
    assert demands == pytest.approx([0.002, 0.004, 0.006, 0.008, 0.010,
                                     0.012, 0.014, 0.016, 0.018, 0.020,
                                     0.020, 0.020, 0.020, 0.020, 0.020], abs=1e-15)


def test_torque_set_values_interpolate_and_current_follows(bench):
    config = parse_bus_config(bench)
    bank = SimulatedNodes(config).bank
    row = config.axis("hip").index
    bank.mode[row] = LOOP_TORQUE
    bank.x[row, CMD_TORQUE] = 0.5                 # N·m, kt = 0.1 N·m/A
    currents = []
    for phase in range(5):
        bank.step(phase)
        currents.append(bank.x[row, ACT_CUR])
    assert currents == pytest.approx([1.0, 2.0, 3.0, 4.0, 5.0])
    assert bank.torque[row] == pytest.approx(0.5)


def test_current_limit_clamps_and_sets_internal_limit_bit(bus):
    hip = bus.axis("hip")
    hip.mode = cia402.Mode.CST
    hip.torque_offset = 5.0                       # 50 A requested, limit 10 A
    cycle(bus, 3)
    assert hip.current == pytest.approx(10.0)
    assert hip.statusword & cia402.SW_INTERNAL_LIMIT


def test_speed_limit_clamps_csv(bench):
    bench["nodes"][1]["axes"][0]["drive"] = {"speed_limit": 50.0}
    from tests.drivers.helpers import enabled_bus
    bus = enabled_bus(bench)
    knee = bus.axis("knee")
    knee.mode = cia402.Mode.CSV
    knee.target_velocity = 200.0
    cycle(bus, 60)
    assert knee.velocity == pytest.approx(50.0, abs=0.5)


def test_following_error_faults_with_code_history_and_register(bus):
    knee = bus.axis("knee")
    knee.target_position = knee.position + 2.0    # 0.4 rad per sub-step: cannot follow (limit 0.5 rad)
    cycle(bus, 3)
    assert knee.state == State.FAULT_REACTION_ACTIVE          # braking to standstill (transition 13)
    assert knee.fault_code == FaultCode.FOLLOWING_ERROR == 0x8611
    cycle(bus, 20)
    assert knee.state == State.FAULT                          # transition 14
    assert bus.axis("hip").state == State.OPERATION_ENABLED
    faults = [e for e in bus.events if e.kind == EventKind.AXIS_FAULT]
    assert [(e.axis, e.code) for e in faults] == [("knee", 0x8611)]
    assert bus.complete(bus.sdo_read(2, 0x1003, 0, UNSIGNED8)) == 1
    assert bus.complete(bus.sdo_read(2, 0x1003, 1, UNSIGNED32)) == 0x8611
    assert bus.complete(bus.sdo_read(2, 0x1001, 0, UNSIGNED8)) == 0x21         # generic + device profile
    knee.target_position = knee.position
    knee.fault_reset()
    cycle(bus, 2)
    assert knee.state == State.SWITCH_ON_DISABLED and knee.fault_code == 0
    assert bus.complete(bus.sdo_read(2, 0x1003, 1, UNSIGNED32)) == 0x8611       # history survives the reset


def test_encoder_nan_glitch_is_an_encoder_fault(bus):
    bus.faults.encoder_glitch("hip", "nan")
    cycle(bus, 2)
    assert bus.axis("hip").state == State.FAULT
    assert bus.axis("hip").fault_code == FaultCode.ENCODER


def test_encoder_jump_trips_following_error(bus):
    bus.faults.encoder_glitch("ankle_1", "jump", value=1.0, cycles=2)
    cycle(bus, 2)
    assert bus.axis("ankle_1").fault_code == FaultCode.FOLLOWING_ERROR


def test_over_temperature_cannot_be_reset_while_hot(bus):
    ankle = bus.axis("ankle_2")
    bus.faults.drive_fault("ankle_2", "over_temperature", duration_s=0.02)
    cycle(bus, 2)
    assert (ankle.state, ankle.fault_code) == (State.FAULT, FaultCode.OVER_TEMPERATURE)
    ankle.fault_reset()
    cycle(bus, 3)
    assert ankle.state == State.FAULT                          # 6 ms < 20 ms: still too hot
    cycle(bus, 10)
    assert ankle.state == State.SWITCH_ON_DISABLED


def test_sdo_parameters_read_write_and_aborts(bus):
    """The drive parameters in the standard's types and units (2^17 increments per revolution, rated
    5 A and 0.5 N·m by default): 0x6065 UNSIGNED32 increments, 0x6073 UNSIGNED16 per mille of the rated
    current, 0x6080 UNSIGNED32 rpm; DS 301's aborts for a wrong access, object, range or type."""
    per_rad = 2**17 / (2 * math.pi)
    assert bus.complete(bus.sdo_write(2, 0x6065, 0, 5215, UNSIGNED32)) == 5215
    assert bus.complete(bus.sdo_read(2, 0x6065, 0, UNSIGNED32)) == 5215
    assert bus.complete(bus.sdo_read(2, 0x6865, 0, UNSIGNED32)) == round(0.5 * per_rad)   # hip: default 0.5 rad
    assert bus.network.bank.x[bus.axis("knee").index, FE_LIMIT] == pytest.approx(5215 / per_rad, rel=1e-15)
    assert bus.complete(bus.sdo_read(2, 0x6073, 0, UNSIGNED16)) == 2000                   # 10 A of 5 A
    assert bus.complete(bus.sdo_read(2, 0x6080, 0, UNSIGNED32)) == round(300 * 60 / (2 * math.pi))  # 2865 rpm
    assert [bus.complete(bus.sdo_read(2, index, sub, UNSIGNED32)) for index, sub in ((0x6075, 0), (0x6076, 0), (0x608F, 1))] \
        == [5000, 500, 2 ** 17]                                                           # mA, mN·m, increments/rev
    for request, code, text in ((bus.sdo_write(2, 0x1000, 0, 1, UNSIGNED32), 0x06010002, "write 0x1000/0"),
                                (bus.sdo_read(2, 0x5555, 0), 0x06020000, "read 0x5555/0"),
                                (bus.sdo_read(2, 0x1018, 9), 0x06090011, "read 0x1018/9"),
                                (bus.sdo_write(2, 0x6073, 0, 0, UNSIGNED16), 0x06090032, "write 0x6073/0"),
                                (bus.sdo_write(2, 0x6073, 0, 1, UNSIGNED32), 0x06070010, "write 0x6073/0")):
        with pytest.raises(SdoAbort, match=f"node 2: SDO {text} aborted: 0x{code:08X}"):
            bus.complete(request)
    aborts = [e for e in bus.events if e.kind == EventKind.SDO_ABORT]
    assert [e.code for e in aborts] == [0x06010002, 0x06020000, 0x06090011, 0x06090032, 0x06070010]
    assert aborts[1].text == "node 2: SDO read 0x5555/0 aborted: 0x06020000 object does not exist in the object dictionary"


def test_fault_injection_rejects_unknown_names_and_arguments(bus):
    with pytest.raises(FaultError, match="unknown fault 'melt'"):
        bus.faults.apply("melt")
    with pytest.raises(FaultError, match="no controlled node 9"):
        bus.faults.drop_pres(9)
    with pytest.raises(FaultError, match="no axis named 'elbow'"):
        bus.faults.drive_fault("elbow", "over_temperature")
    with pytest.raises(FaultError, match="drive fault kind 'smoke'"):
        bus.faults.drive_fault("knee", "smoke")
    with pytest.raises(FaultError, match="bad arguments for fault 'drop_soc'"):
        bus.faults.apply("drop_soc", node=1)


def test_following_error_object_and_its_peak_follow_the_csp_demand(bench):
    """Object 0x60F4 is this bus cycle's CSP demand − actual (motor rad); the peak taken by the
    test bench is the largest |0x60F4| since it was last taken, then starts again from 0."""
    config = parse_bus_config(bench)
    bank = SimulatedNodes(config).bank
    row = config.axis("knee").index
    bank.mode[row] = LOOP_POSITION
    errors = []
    for target in (0.05, 0.1, 0.1, 0.1):          # a ramp the plant lags, then a hold it catches up with
        bank.x[row, CMD_POS] = target
        for phase in range(5):
            bank.step(phase)
            errors.append(bank.x[row, P_DEM] - bank.x[row, ACT_POS])
            assert bank.x[row, FE_ACTUAL] == errors[-1]
    peak = np.zeros(len(config.axes))
    bank.take_following_peak(peak)
    assert peak[row] == max(abs(e) for e in errors) > 0.01
    assert np.count_nonzero(peak) == 1                     # the other axes are not in CSP
    bank.step(0)
    bank.take_following_peak(peak)
    assert peak[row] == abs(bank.x[row, P_DEM] - bank.x[row, ACT_POS]) < max(abs(e) for e in errors)


def test_following_error_object_in_the_object_dictionary(bus):
    """0x60F4 (channel 0, knee) and 0x68F4 (channel 1, hip) of node 2 are the drive's own demand −
    actual of the last bus cycle."""
    bus.axis("knee").target_position = bus.axis("knee").position + 0.2     # a visible lag, under the limit
    bus.axis("hip").target_position = bus.axis("hip").position - 0.1
    cycle(bus, 1)
    x, objects = bus.network.bank.x, bus.network.nodes[2].drive.objects
    for name, index in (("knee", 0x60F4), ("hip", 0x68F4)):
        row = bus.axis(name).index
        per_rad = bus.scales[row, 0]                       # INTEGER32 increments
        value = objects.value(index, 0)
        assert value == round((x[row, P_DEM] - x[row, ACT_POS]) * per_rad) and abs(value) > 1e-3 * per_rad
        assert objects.value(index + 0x62 - 0xF4, 0) == objects.value(index + 0xFC - 0xF4, 0) \
            == round(x[row, P_DEM] * per_rad)              # 0x6062 = 0x60FC: no factor group


def test_the_object_dictionary_reports_what_the_process_data_carries(bench):
    """0x6064/0x606C/0x6078 as the SDO server reads them are the integers the drive's TPDO carries
    in the same cycle, and 0x608F/0x6075/0x6076 read over the wire the scaling of the bus YAML (here
    not the defaults): one scaling for the object dictionary and the process data."""
    bench["drive_defaults"].update(encoder_increments=10_000, rated_current=2.5, rated_torque=0.25)
    bus = enabled_bus(bench)
    try:
        bus.axis("knee").target_position = bus.axis("knee").position + 0.3
        cycle(bus, 10)
        drive = bus.network.nodes[2].drive
        tpdo = dict(zip([f"{e.name}/{ch}" for ch in range(pdo.TPDO.channels) for e in pdo.TPDO.entries],
                        pdo.TPDO.struct.unpack_from(drive.pres_buffer, frames.PDO_OFFSET)))
        frozen = {(name, ch): (drive.objects.value(pdo.TPDO.entry(name).index + ch * pdo.AXIS_OFFSET, 0),
                               tpdo[f"{name}/{ch}"])
                  for name in ("position_actual", "velocity_actual", "current_actual") for ch in drive.slots}
        assert all(od == pd for od, pd in frozen.values()), frozen
        knee = bus.axis("knee").channel
        assert all(abs(frozen[name, knee][0]) > 100 for name in ("position_actual", "velocity_actual", "current_actual"))
        assert [bus.complete(bus.sdo_read(2, index, sub, UNSIGNED32)) for index, sub in ((0x608F, 1), (0x6075, 0),
                                                                                         (0x6076, 0))] == [10_000, 2500, 250]
        row = bus.axis("knee").index
        assert drive.objects.value(0x6064 + knee * pdo.AXIS_OFFSET, 0) == round(bus.network.bank.x[row, ACT_POS] * 10_000 / (2 * math.pi))
    finally:
        bus.close()
