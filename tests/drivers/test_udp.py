"""``udp`` backend: the same POWERLINK frames over loopback to a controlled-node server process."""
from __future__ import annotations

import multiprocessing
import socket

import numpy as np
import pytest

from drivers.backends.udp import serve_udp, shutdown_server
from drivers.cia402 import State
from drivers.codes import FaultCode
from drivers.config import parse_bus_config
from drivers.faults import FaultError
from drivers.hal import LinkError, open_bus

from .helpers import cycle


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def drive(bus) -> np.ndarray:
    bus.boot()
    for axis in bus.axes.values():
        axis.enable()
    for k in range(25):
        bus.read()
        bus.target_position[:] = bus.target_position + 0.002 * np.cos(0.1 * k)
        bus.write()
        bus.exchange()
    bus.read()
    return bus.position.copy()


@pytest.fixture
def udp_bench(bench):
    bench["udp"]["port"] = free_udp_port()
    server = multiprocessing.get_context("fork").Process(
        target=serve_udp, args=(bench,), kwargs={"idle_timeout_s": 20.0}, daemon=True)
    server.start()
    bench["backend"] = "udp"
    yield bench
    shutdown_server(parse_bus_config(bench).udp)
    server.join(timeout=5)
    assert server.exitcode == 0


def test_udp_matches_sim_and_carries_fault_injection(bench, udp_bench):
    sim = dict(udp_bench, backend="sim")
    expected = drive(open_bus(sim))
    bus = open_bus(udp_bench)
    got = drive(bus)
    assert got.tobytes() == expected.tobytes()           # same frames, same physics, other process
    bus.faults.drop_pres(2, count=2)
    cycle(bus)
    assert bus.axis("knee").state == State.FAULT
    assert bus.axis("knee").fault_code == FaultCode.LOSS_PRES
    with pytest.raises(FaultError, match="no controlled node 7"):
        bus.faults.drop_soc(7)
    bus.close()


def test_missing_server_is_a_link_error(bench):
    bench["backend"] = "udp"
    bench["udp"]["port"] = free_udp_port()
    bus = open_bus(bench)
    with pytest.raises(LinkError, match="no UDP controlled-node server at 127.0.0.1"):
        bus.boot()
