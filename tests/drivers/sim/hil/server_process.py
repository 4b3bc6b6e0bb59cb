"""A real ``bipd hil`` process (drivers.sim.hil.server) for the tests, with a SUB socket on its truth frames."""
from __future__ import annotations

import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import zmq

from controller.tools.ports import free_port
from drivers.backends.udp import UdpLink, shutdown_server
from drivers.config import UdpConfig, parse_bus_config
from drivers.hal import LinkError
from tests.paths import ROOT


def wait_for_server(udp: UdpConfig, proc: subprocess.Popen, timeout_s: float = 30.0) -> None:
    """Until the server answers a ``reset`` on its control channel (it fails if the process ends first)."""
    link = UdpLink(UdpConfig(udp.host, udp.port, 0.2))
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            assert proc.poll() is None, proc.stderr.read().decode()
            try:
                link.control({"op": "reset"})
                return
            except LinkError:
                assert time.monotonic() < deadline, "the HIL server did not come up"
                time.sleep(0.1)
    finally:
        link.sock.close()


@contextmanager
def hil_server(config: Path, bus: dict, flags: list[str]) -> Iterator[tuple[subprocess.Popen, zmq.Socket, dict]]:
    """``bipd hil --config config`` on a free UDP port (truth every 5 steps on a free TCP port), up and
    answering: yields (process, SUB socket on its truth frames, ``bus`` pointed at that port); after, shut
    down through the control channel, exit 0 asserted."""
    udp_port, truth = free_port(socket.SOCK_DGRAM), f"tcp://127.0.0.1:{free_port()}"
    section = dict(bus, udp=dict(bus["udp"], port=udp_port))
    udp = parse_bus_config(section).udp
    proc = subprocess.Popen([sys.executable, "-m", "drivers.sim.hil.server", "--config", str(config), "--udp-port",
                             str(udp_port), "--truth", truth, "--truth-every", "5", "--idle-timeout", "30"] + flags,
                            cwd=ROOT, stderr=subprocess.PIPE)
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    try:
        sub.connect(truth)
        sub.setsockopt(zmq.SUBSCRIBE, b"truth")
        wait_for_server(udp, proc)
        yield proc, sub, section
    finally:
        sub.close()
        shutdown_server(udp)
        assert proc.wait(timeout=10) == 0


def truth_frames(sub: zmq.Socket, bus, cycles: int) -> list:
    """Run ``cycles`` bus cycles, then the truth frames received (waiting up to 2 s for the first)."""
    for _ in range(cycles):
        bus.read()
        bus.write()
        bus.exchange()
    frames = []
    while sub.poll(2000 if not frames else 0):
        frames.append(sub.recv_multipart())
    return frames
