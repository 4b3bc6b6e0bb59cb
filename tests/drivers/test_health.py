"""The bus' health (drivers/health.py) against what happened: the faults injected, the managing node's own
DS 301 threshold counters, the abort code the simulated CN's SDO server sent (DS 301 Table 64) and the
StatusResponse entry the CN wrote."""
from __future__ import annotations

from controller.daemon.io.messages import bus_health as describe
from drivers.codes import FaultCode
from drivers.health import BusFlag, flag_names
from drivers.powerlink.status import MODE_ACTIVE, PROFILE_CIA402, TYPE_STATUS
from drivers.service_channel import ABORT_TEXT

from tests.drivers.helpers import cycle

ABORT_NO_OBJECT = 0x0602_0000       # DS 301 Table 64: object does not exist in the object dictionary


def _period(bus) -> list[str]:
    """One control period (write, exchange); the flags it raised, read before the next ``read()`` clears them."""
    bus.write()
    bus.exchange()
    return flag_names(bus.health_views.flags[0])


def _describe(bus) -> dict:
    return describe(bus.health, tuple(n.node_id for n in bus.config.nodes), bus.axis_names)


def test_lost_and_late_pres_are_counted_per_node_as_the_threshold_counters_count_them(bus):
    bus.faults.drop_pres(2, count=1)
    bus.read()
    assert _period(bus) == ["pres_lost"]
    bus.read()
    assert _period(bus) == []                          # the flags say what the last period went through
    bus.faults.delay_pres(3, 2.0e-4, count=1)
    bus.read()
    assert _period(bus) == ["pres_late"]
    cycle(bus, 3)
    health = _describe(bus)
    mn = bus.mn.records
    assert (mn[2].loss.cumulative, mn[3].late.cumulative) == (1, 1)      # the MN's own DS 301 counters
    assert health["pres_lost"] == {"2": 1} and health["pres_late"] == {"3": 1}
    assert health["last_sdo_abort"] is None and health["last_node_error"] is None


def test_an_sdo_abort_is_kept_with_its_node_object_and_abort_name(bus):
    req = bus.sdo_read(2, 0x2FFF, 7)
    bus.read()
    flags = set()
    for _ in range(50):
        flags |= set(_period(bus))
        bus.read()
        if req.done:
            break
    assert req.abort_code == ABORT_NO_OBJECT                       # what the CN's SDO server answered
    assert "sdo_abort" in flags
    assert _describe(bus)["last_sdo_abort"] == {
        "node": 2, "index": 0x2FFF, "subindex": 7, "object": "0x2FFF/7", "access": "read", "code": ABORT_NO_OBJECT,
        "name": ABORT_TEXT[ABORT_NO_OBJECT]}


def test_a_drive_fault_leaves_the_status_response_entry_the_cn_sent(bus):
    bus.faults.drive_fault("hip", "over_temperature")
    flags = set()
    for _ in range(10):
        bus.read()
        flags |= set(_period(bus))
    bus.read()
    node = bus.network.nodes[2]
    first = node._entries()[0]                                      # what the CN puts first in its StatusResponse
    assert (first.code, first.type, first.info) == (FaultCode.OVER_TEMPERATURE, TYPE_STATUS | MODE_ACTIVE
                                                    | PROFILE_CIA402, 1)     # active, CiA 402, the hip's channel
    assert "node_error" in flags
    assert _describe(bus)["last_node_error"] == {"node": 2, "code": FaultCode.OVER_TEMPERATURE, "type": first.type,
                                                 "active": True, "info": 1, "profile": "CiA 402"}


def test_a_saturated_setpoint_raises_its_flag_each_period_and_counts_each_write(bus):
    knee = bus.axis_names.index("knee")
    bus.read()
    bus.target_position[knee] = 1e12                                # far beyond an INTEGER32 of increments
    assert _period(bus) == ["setpoint_saturated"]
    assert int(bus.health_views.flags[0]) == 1 << BusFlag.SETPOINT_SATURATED
    bus.read()
    bus.target_position[knee] = 1e12                                # (the drive follows into a following error)
    assert "setpoint_saturated" in _period(bus)
    bus.read()
    bus.target_position[knee] = bus.position[knee]
    assert "setpoint_saturated" not in _period(bus)                 # a setpoint that fits again
    assert _describe(bus)["saturations"] == {"knee": 2}
