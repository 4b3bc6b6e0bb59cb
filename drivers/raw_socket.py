"""The AF_PACKET socket both ends of a raw Ethernet POWERLINK wire use: the managing node's link
(drivers.backends.raw) and the simulated nodes' server (drivers.sim.raw_server)."""
from __future__ import annotations

import errno
import socket

from drivers.hal import LinkError
from drivers.powerlink import frames

SOL_PACKET = 263                      # linux/socket.h
PACKET_IGNORE_OUTGOING = 23           # linux/if_packet.h: do not hand our own frames back to us
MIN_ETHERNET = frames.MIN_FRAME - frames.FCS_SIZE      # 60: what a NIC pads a frame to, FCS excluded


def open_socket(interface: str) -> socket.socket:
    """A non-blocking AF_PACKET socket on ``interface`` for EtherType 0x88AB; a :class:`LinkError`
    naming the problem (the CAP_NET_RAW capability, an unknown interface) when it cannot be opened."""
    try:
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(frames.ETHERTYPE))
    except PermissionError:
        raise LinkError(f"cannot open a raw Ethernet socket for bus.interface {interface!r}: the raw backend "
                        "needs root or the CAP_NET_RAW capability (systemd: AmbientCapabilities=CAP_NET_RAW, "
                        "deploy/INSTALL.md)") from None
    try:
        sock.bind((interface, frames.ETHERTYPE))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.ENODEV:
            raise LinkError(f"bus.interface {interface!r} is not a network interface of this host") from None
        raise LinkError(f"cannot bind a raw Ethernet socket to bus.interface {interface!r}: {exc.strerror}") from None
    try:
        sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    except OSError:
        pass                           # kernels before 4.20: own frames are filtered by source MAC below
    sock.setblocking(False)
    return sock
