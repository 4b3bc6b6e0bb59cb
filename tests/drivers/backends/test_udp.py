"""``udp`` backend: the same POWERLINK frames over loopback to a controlled-node server process."""
from __future__ import annotations

import multiprocessing
import socket
import threading
import time

import numpy as np
import pytest

from controller.tools.ports import free_port
from drivers.backends.udp import UdpLink, shutdown_server
from drivers.udp_protocol import DEFAULT_SPIN_S, SILENCE, spin_seconds
from drivers.sim.udp_server import serve_udp
from drivers.cia402 import State
from drivers.codes import FaultCode
from drivers.config import BusConfigError, UdpConfig, parse_bus_config
from drivers.fault_api import FaultError
from drivers.hal import BackendError, LinkError, open_bus
from drivers.sim.plant import InertiaPlant

from tests.drivers.helpers import boot_and_move, cycle


def _step(bus, k: int) -> None:
    bus.target_position[:] = bus.target_position + 0.002 * np.cos(0.1 * k)


def drive(bus) -> np.ndarray:
    boot_and_move(bus, 25, _step)
    return bus.position.copy()


def _wait_for_server(udp: UdpConfig, timeout_s: float = 300.0) -> None:
    """Until the forked server answers a control request (it binds its port after the fork and
    compiles its Numba path, ~8 s on a cold cache, minutes on a loaded machine)."""
    deadline = time.monotonic() + timeout_s
    while True:
        link = UdpLink(UdpConfig(udp.host, udp.port, 0.2))
        try:
            link.control({"op": "reset"})
            return
        except LinkError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
        finally:
            link.sock.close()


@pytest.fixture
def udp_bench(bench):
    bench["udp"]["port"] = free_port(socket.SOCK_DGRAM)
    server = multiprocessing.get_context("fork").Process(
        target=serve_udp, args=(bench,), kwargs={"idle_timeout_s": 20.0}, daemon=True)
    server.start()
    _wait_for_server(parse_bus_config(bench).udp)
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
    sent = bus.link.seq
    bus.exchange()
    assert bus.link.seq - sent == 2                      # steady state: a whole period, then its last SoA
    bus.faults.drop_pres(2, count=2)
    cycle(bus)
    assert bus.axis("knee").state == State.FAULT
    assert bus.axis("knee").fault_code == FaultCode.LOSS_PRES
    with pytest.raises(FaultError, match="no controlled node 7"):
        bus.faults.drop_soc(7)
    bus.close()


def test_missing_server_is_a_link_error(bench):
    bench["backend"] = "udp"
    bench["udp"]["port"] = free_port(socket.SOCK_DGRAM)
    bus = open_bus(bench)
    with pytest.raises(LinkError, match="no UDP controlled-node server at 127.0.0.1"):
        bus.boot()


class _PushablePlant(InertiaPlant):
    """An InertiaPlant with a plant-specific control op, as the HIL's MuJoCo plant."""

    def control(self, request: dict) -> dict:
        if request["op"] != "push":
            return {"error": f"unknown control op {request['op']!r}"}
        return {"ok": True, "force": request["force"]}


def _serve(bench, plant_class, **kwargs):
    config = parse_bus_config(dict(bench, udp={k: v for k, v in bench["udp"].items() if k != "spin_s"}))
    serve_udp(bench, plant_class.from_config(config) if plant_class else None, idle_timeout_s=20.0, **kwargs)


@pytest.mark.parametrize("pushable", [False, True])
def test_unknown_control_ops_go_to_the_plant(bench, pushable):
    """fault/reset/shutdown unchanged; other ops reach the plant's control() when it has one."""
    bench["udp"]["port"] = free_port(socket.SOCK_DGRAM)
    bench["udp"]["spin_s"] = 0.0                          # a raw bus: mapping may carry it
    server = multiprocessing.get_context("fork").Process(
        target=_serve, args=(bench, _PushablePlant if pushable else None), daemon=True)
    server.start()
    udp = UdpConfig("127.0.0.1", bench["udp"]["port"], 0.2)
    link = UdpLink(udp)
    try:
        for _ in range(100):
            try:
                assert link.control({"op": "reset"}) == {"ok": True}
                break
            except LinkError:
                time.sleep(0.05)
        answer = link.control({"op": "push", "body": "hip", "force": [1.0, 2.0, 3.0], "duration": 0.1})
        if pushable:
            assert answer == {"ok": True, "force": [1.0, 2.0, 3.0]}
            assert "unknown control op 'kick'" in link.control({"op": "kick"})["error"]
        else:
            assert "unknown control op 'push'" in answer["error"]
        assert "no controlled node 7" in link.control({"op": "fault", "name": "drop_soc", "args": {"node_id": 7}})["error"]
    finally:
        link.sock.close()
        shutdown_server(udp)
        server.join(timeout=5)
    assert server.exitcode == 0


def test_spin_option_and_timeout(bench):
    """spin_s: argument, else bus.udp.spin_s, else the default; bounded. A silent peer is a
    SILENCE after timeout_s, spin or not."""
    udp = UdpConfig()
    assert spin_seconds(udp) == DEFAULT_SPIN_S
    assert spin_seconds(udp, 0.0) == 0.0
    assert spin_seconds(udp, 2e-4) == 2e-4
    assert spin_seconds(UdpConfig(spin_s=5e-4)) == 5e-4                  # bus.udp.spin_s
    bench["udp"] = dict(bench["udp"], spin_s=0.5)
    with pytest.raises(BusConfigError, match="bus.udp.spin_s must be at most 0.01"):
        parse_bus_config(bench)
    bench["udp"]["spin_s"] = 1e-4
    assert parse_bus_config(bench).udp.spin_s == 1e-4
    bench["backend"] = "udp"
    with pytest.raises(BackendError, match=r"spin_s must be a number of seconds in \[0, 0.01\]"):
        open_bus(bench, spin_s=1.0)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:
        silent.bind(("127.0.0.1", 0))
        for spin in (0.0, 5e-4):
            link = UdpLink(UdpConfig("127.0.0.1", silent.getsockname()[1], 0.02), spin)
            link._send(1, b"", 0)
            t = time.perf_counter()
            assert link._receive() == (SILENCE, 0)
            assert 0.02 <= time.perf_counter() - t < 0.2
            assert link.waiter.sleeps == 1 and link.waiter.hits == 0
            link.sock.close()


def test_a_closed_link_never_spins_on_its_socket():
    """A receive on a closed link raises LinkError("link closed") at once, and a waiter whose
    socket was closed under it (POLLNVAL) does too, within the link's timeout."""
    from drivers.udp_protocol import Waiter

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:
        silent.bind(("127.0.0.1", 0))
        link = UdpLink(UdpConfig("127.0.0.1", silent.getsockname()[1], 0.02), 5e-4)
        link.close(reset=False)
        with pytest.raises(LinkError, match="link closed"):
            link._receive()
        with pytest.raises(LinkError, match="link closed"):
            link.control({"op": "reset"})
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    waiter = Waiter(sock, 5e-4)
    sock.close()                                     # behind the waiter's back
    t = time.perf_counter()
    with pytest.raises(LinkError, match="link closed"):
        waiter.wait(0.05)
    assert time.perf_counter() - t < 5.0             # generous: the point is that it returns


def test_in_process_link_without_an_answer_is_silence_not_a_spin(bench):
    """The in-process server answers a datagram with its send or never: a receive with no answer
    pending returns SILENCE within the link's timeout (it used to poll a closed socket forever)."""
    import threading

    from drivers.backends.sim import open_in_process

    bus = open_in_process(parse_bus_config(dict(bench, backend="udp")))
    link = bus.link
    link.sock.send(b"not a bipd datagram")           # nothing answers it
    out = []
    worker = threading.Thread(target=lambda: out.append(link._receive()), daemon=True)
    worker.start()
    worker.join(5.0)                                 # generous: a spinning receive never returns
    assert out == [(SILENCE, 0)]
    link.sock.close()
    with pytest.raises(LinkError, match="link closed"):
        link._receive()


def test_lockstep_waits_for_a_late_answer_and_a_silent_server_is_a_link_error(monkeypatch):
    """Lock-step: an answer later than timeout_s is still the answer (no wall-clock loss); a server
    silent for LOCKSTEP_STALL_S is a LinkError naming it. Real time: the late answer is SILENCE."""
    from drivers.backends import udp as backend
    from drivers import udp_protocol as protocol

    monkeypatch.setattr(backend, "LOCKSTEP_STALL_S", 0.5)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as server:
        server.bind(("127.0.0.1", 0))
        server.settimeout(5.0)
        config = UdpConfig("127.0.0.1", server.getsockname()[1], 0.02)
        for lockstep in (True, False):
            link = UdpLink(config, 0.0, lockstep=lockstep)
            link._send(protocol.FRAMES, b"", 0)
            data, peer = server.recvfrom(64)
            answer = bytes(data[:protocol.HEADER.size])            # same sequence: the answer to it

            def late() -> None:
                time.sleep(0.1)                                   # 5 x timeout_s
                server.sendto(answer, peer)
            sender = threading.Thread(target=late)
            sender.start()
            kind, size = link._receive()
            sender.join()
            assert (kind, size) == ((protocol.FRAMES, protocol.HEADER.size) if lockstep else (SILENCE, 0))
            link.sock.close()
        link = UdpLink(config, 0.0, lockstep=True)
        link._send(protocol.FRAMES, b"", 0)
        with pytest.raises(LinkError, match=rf"the UDP server at 127.0.0.1:{config.port} answered nothing for 0.5 s"):
            link._receive()
        link.sock.close()
