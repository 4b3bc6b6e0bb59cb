"""Fault injection over the raw wire: the HIL's controlled nodes on the far end of a veth pair
(drivers.sim.hil.wire) take the fault from their control channel, and in lock-step the bus goes
through exactly what it goes through over ``udp`` (the in-process server, same plant): the cheapest
fault that trips, two lost PRes of node 2, gives the same events at the same bus cycles and the same
axis verdicts (needs root: a network namespace, a veth pair, AF_PACKET sockets)."""
from __future__ import annotations

import copy
import socket
import threading
import time

import pytest

from controller.tools.ports import free_port
from controller.tools.veth import Veth, unique_name, wire_capable
from drivers.backends.sim import open_in_process
from drivers.config import parse_bus_config
from drivers.hal import open_bus
from drivers.sim.hil.wire import serve_wire
from drivers.sim.plant import InertiaPlant
from drivers.udp_protocol import control_request

from tests.drivers.conftest import _BENCH
from tests.drivers.helpers import cycle

pytestmark = pytest.mark.skipif(not wire_capable(), reason="a network namespace, a veth pair and AF_PACKET "
                                                           "sockets need root (or CAP_NET_ADMIN and CAP_NET_RAW)")


def _verdict(bus) -> tuple[list, dict]:
    """Boot, enable, 5 periods, two lost PRes of node 2, 10 periods: the events (bus cycle, kind, node,
    code, axis) and each axis' CiA 402 state and fault code."""
    bus.boot()
    for axis in bus.axes.values():
        axis.enable()
    cycle(bus, 5)
    bus.faults.drop_pres(2, count=2)
    cycle(bus, 10)
    events = [(e.bus_cycle, e.kind.name, e.node_id, e.code, e.axis) for e in bus.events]
    return events, {name: (a.state.name, a.fault_code) for name, a in bus.axes.items()}


def test_two_lost_pres_injected_at_the_far_end_give_the_udp_verdict():
    section = copy.deepcopy(_BENCH) | {"udp": {"host": "127.0.0.1", "port": free_port(socket.SOCK_DGRAM)}}
    config = parse_bus_config(section)
    bus = open_in_process(config, InertiaPlant.from_config(config))
    try:
        udp = _verdict(bus)
    finally:
        bus.close()
    with Veth(unique_name("bsf")) as veth:
        far = threading.Thread(target=serve_wire, args=(config, InertiaPlant.from_config(config), veth.cn, veth.name),
                               kwargs={"idle_timeout_s": 60.0}, daemon=True)
        far.start()
        deadline = time.monotonic() + 120.0           # its wire socket is open once its control channel answers
        while control_request(config.udp.host, config.udp.port, {"op": "ping"}, 0.5) is None:
            assert far.is_alive() and time.monotonic() < deadline, "the far end did not start"
        bus = open_bus(section | {"backend": "raw", "interface": veth.mn}, lockstep=True)
        try:
            raw = _verdict(bus)
        finally:
            bus.close()
            control_request(config.udp.host, config.udp.port, {"op": "shutdown"}, 5.0)
            far.join(10)
    assert ("THRESHOLD", 2, 0x8243) in [e[1:4] for e in udp[0]]        # LOSS_PRES tripped on node 2
    assert udp[1]["knee"] == ("FAULT", 0x8243)
    assert raw == udp
