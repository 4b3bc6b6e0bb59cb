"""HAL: backends by name, bus: YAML validation, axis views, lock-step determinism."""
from __future__ import annotations

import numpy as np
import pytest

from drivers.cia402 import State
from drivers.config import BusConfigError, parse_bus_config
from drivers.hal import BackendError, BusStateError, open_bus

from tests.drivers.helpers import cycle, enabled_bus


def test_bench_yaml_maps_axes_to_nodes_and_channels(bench):
    config = parse_bus_config(bench)
    assert [(a.name, a.node_id, a.channel, a.index) for a in config.axes] == [
        ("ankle_1", 1, 0, 0), ("ankle_2", 1, 1, 1), ("knee", 2, 0, 2), ("hip", 2, 1, 3),
        ("platform_alpha", 3, 0, 4), ("platform_beta", 3, 1, 5)]
    assert config.cycles_per_control == 5 and config.cycle_us == 400
    assert config.axis("platform_beta").plant.inertia == 4e-4
    assert config.axis("knee").drive.following_error_limit == 0.5


def test_unknown_backend_names_itself_and_the_known_ones(bench):
    bench["backend"] = "ethercat"
    with pytest.raises(BackendError, match=r"unknown bus backend 'ethercat' \(known: raw, sim, udp\)"):
        open_bus(bench)


def test_backend_options_are_checked(bench):
    with pytest.raises(BackendError, match="backend 'sim' does not accept"):
        open_bus(bench, port=3)


@pytest.mark.parametrize("edit, message", [
    (lambda b: b.pop("backend"), r"bus\.backend is missing"),
    (lambda b: b.update(cycle_time_s=-1), r"bus\.cycle_time_s must be > 0"),
    (lambda b: b.update(control_period_s=0.0025), r"bus\.control_period_s \(0\.0025\) must be a whole multiple"),
    (lambda b: b.update(colour="red"), r"bus\.colour is not a known key"),
    (lambda b: b["nodes"][1].update(node_id=1), r"bus\.nodes\[1\]\.node_id 1 is used by another node"),
    (lambda b: b["nodes"][0].update(node_id=240), r"bus\.nodes\[0\]\.node_id must be an integer in 1\.\.239"),
    (lambda b: b["nodes"][0]["axes"][1].update(channel=2), r"bus\.nodes\[0\]\.axes\[1\]\.channel must be"),
    (lambda b: b["nodes"][2]["axes"][0].update(name="knee"), r"name 'knee' is used by another axis"),
    (lambda b: b["drive_defaults"].update(kp_sped=1.0), r"bus\.drive_defaults\.kp_sped is not a known key"),
    (lambda b: b["nodes"][0]["axes"][0].update(drive={"current_limit": "high"}),
     r"bus\.nodes\[0\]\.axes\[0\]\.drive\.current_limit must be a finite number"),
    (lambda b: b["udp"].update(port=70000), r"bus\.udp\.port must be an integer in 1\.\.65535"),
    (lambda b: b.update(nodes=[]), r"bus\.nodes must be a non-empty list"),
    (lambda b: b["nodes"][0].update(identity={"ip_address": "192.168.300.1"}),
     r"bus\.nodes\[0\]\.identity\.ip_address must be a dotted IPv4 address, got '192\.168\.300\.1'"),
    (lambda b: b["nodes"][0].update(identity={"host_name": "x" * 33}),
     r"bus\.nodes\[0\]\.identity\.host_name must be ASCII text of at most 32 characters"),
    (lambda b: b["nodes"][0].update(identity={"serial": -1}),
     r"bus\.nodes\[0\]\.identity\.serial must be an integer in 0\.\.4294967295"),
    (lambda b: b["nodes"][0].update(identity={"vendor": 1}), r"bus\.nodes\[0\]\.identity\.vendor is not a known key"),
    (lambda b: b.update(net_time_epoch="yesterday"),
     r"bus\.net_time_epoch must be seconds since 1970 or an ISO 8601 date-time, got 'yesterday'"),
])
def test_config_errors_name_the_key(bench, edit, message):
    edit(bench)
    with pytest.raises(BusConfigError, match=message):
        parse_bus_config(bench)


def test_axis_views_and_arrays_agree(bus):
    knee = bus.axis("knee")
    knee.target_position = 0.05
    assert bus.target_position[2] == 0.05
    cycle(bus, 100)
    assert knee.position == pytest.approx(0.05, abs=1e-4)
    assert bus.position[2] == knee.position
    with pytest.raises(KeyError, match="no axis named 'elbow'"):
        bus.axis("elbow")


def test_closed_bus_refuses_exchange(bench):
    bus = enabled_bus(bench)
    bus.close()
    with pytest.raises(BusStateError, match="closed"):
        bus.exchange()


def _run(bench):
    bus = enabled_bus(bench, record_frames=True)
    for k in range(40):
        bus.read()
        bus.target_position[:] = 0.1 * np.sin(0.05 * k)
        bus.target_position[3] = 0.3 if k > 20 else 0.0
        bus.write()
        bus.exchange()
    bus.faults.drop_pres(3, 1)
    cycle(bus, 3)
    return bus.link.frames, bus.position.copy()


def test_lock_step_runs_are_byte_identical(bench):
    frames_a, pos_a = _run(bench)
    frames_b, pos_b = _run(bench)
    assert len(frames_a) > 1000
    assert frames_a == frames_b
    assert pos_a.tobytes() == pos_b.tobytes()


@pytest.mark.parametrize("layout", [
    [{"name": "solo", "channel": 1}],                                   # one axis, on channel 1
    [{"name": "second", "channel": 1}, {"name": "first", "channel": 0}],  # listed 1 then 0
])
def test_pdo_slot_is_the_configured_channel(bench, layout):
    """Each axis uses the PDO slot of its configured channel on both sides of the bus,
    whatever its position in the YAML list (a single axis on channel 1 enables)."""
    bench["nodes"] = [{"node_id": 1, "axes": layout}]
    bus = enabled_bus(bench)
    try:
        for a in layout:
            assert bus.axis(a["name"]).state == State.OPERATION_ENABLED
        name = layout[0]["name"]
        bus.axis(name).target_position = bus.axis(name).position + 0.2
        cycle(bus, 100)
        assert abs(bus.axis(name).position - bus.axis(name).target_position) < 1e-3
        for other in layout[1:]:
            assert abs(bus.axis(other["name"]).position) < 1e-6          # untouched
    finally:
        bus.close()
