"""The AF_PACKET socket both ends of a raw Ethernet POWERLINK wire use: the managing node's link
(drivers.backends.raw) and the simulated nodes' servers (drivers.sim.raw_server, drivers.sim.hil.wire).

In lock-step (a simulated far end, the HIL) a frame a CN leaves unanswered is declared by a
*silence* frame of the IEEE 802 local experimental EtherType 0x88B5 (IEEE Std 802 §9.2.4), never
by a wall-clock timeout: its payload is the node id that stayed silent. It never carries
POWERLINK, and a real node never sends it."""
from __future__ import annotations

import errno
import socket

from drivers.hal import LinkError
from drivers.powerlink import frames

SOL_PACKET = 263                      # linux/socket.h
PACKET_IGNORE_OUTGOING = 23           # linux/if_packet.h: do not hand our own frames back to us
MIN_ETHERNET = frames.MIN_FRAME - frames.FCS_SIZE      # 60: what a NIC pads a frame to, FCS excluded
SILENCE_ETHERTYPE = 0x88B5            # IEEE 802 local experimental EtherType 1: lock-step silence (docstring)
SILENCE_NODE_AT = frames.ETHERTYPE_AT + 2                 # the silent node's id, first payload byte


def open_socket(interface: str, ethertype: int = frames.ETHERTYPE) -> socket.socket:
    """A non-blocking AF_PACKET socket on ``interface`` for ``ethertype`` (POWERLINK's 0x88AB); a
    :class:`LinkError` naming the problem (the CAP_NET_RAW capability, an unknown interface) when
    it cannot be opened."""
    try:
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ethertype))
    except PermissionError:
        raise LinkError(f"cannot open a raw Ethernet socket for bus.interface {interface!r}: the raw backend "
                        "needs root or the CAP_NET_RAW capability (systemd: AmbientCapabilities=CAP_NET_RAW, "
                        "deploy/INSTALL.md)") from None
    try:
        sock.bind((interface, ethertype))
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


def silence_frame(buf: bytearray, mac: bytes, node: int) -> memoryview:
    """The lock-step silence frame for ``node`` (module docstring) in ``buf``, broadcast from ``mac``."""
    buf[:frames.SRC_MAC_AT] = b"\xff" * frames.SRC_MAC_AT
    buf[frames.SRC_MAC_AT:frames.ETHERTYPE_AT] = mac
    buf[frames.ETHERTYPE_AT:SILENCE_NODE_AT] = SILENCE_ETHERTYPE.to_bytes(2, "big")
    buf[SILENCE_NODE_AT:MIN_ETHERNET] = bytes(MIN_ETHERNET - SILENCE_NODE_AT)
    buf[SILENCE_NODE_AT] = node
    return memoryview(buf)[:MIN_ETHERNET]
