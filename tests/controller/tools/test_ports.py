"""controller.tools.ports: the benches' ports are drawn below the kernel's ephemeral range, where no
outgoing connection can take them between the pick and the bind."""
from __future__ import annotations

import socket

import pytest

from controller.tools import ports


@pytest.mark.parametrize("kind", [socket.SOCK_STREAM, socket.SOCK_DGRAM], ids=["tcp", "udp"])
def test_a_port_is_free_and_below_the_ephemeral_range(kind):
    low = ports._ephemeral_low()
    picked = {ports.free_port(kind) for _ in range(20)}
    assert all(ports.LOWEST <= p < low for p in picked), sorted(picked)
    assert len(picked) > 1                                  # drawn, not a fixed port
    for p in picked:
        with socket.socket(socket.AF_INET, kind) as s:
            s.bind(("127.0.0.1", p))


def test_a_taken_port_is_never_returned(monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        busy = taken.getsockname()[1]
        draws = iter([busy - ports.LOWEST, 7])
        monkeypatch.setattr(ports.secrets, "randbelow", lambda _n: next(draws))
        monkeypatch.setattr(ports, "_ephemeral_low", lambda: busy + 1)
        assert ports.free_port() == ports.LOWEST + 7


def test_without_room_below_the_range_the_kernel_picks(monkeypatch):
    monkeypatch.setattr(ports, "_ephemeral_low", lambda: ports.LOWEST + 10)
    p = ports.free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", p))


def test_a_port_is_handed_out_once_per_process(monkeypatch):
    """Sessions started together draw before any binds: the same free port drawn twice would meet at
    the bind or at the daemon's instance lock ("is in use")."""
    monkeypatch.setattr(ports, "_given", set())
    draws = iter([5, 5, 5, 9])
    monkeypatch.setattr(ports.secrets, "randbelow", lambda _n: next(draws))
    assert (ports.free_port(), ports.free_port()) == (ports.LOWEST + 5, ports.LOWEST + 9)
