"""The HIL over a real wire: the MuJoCo plant's controlled nodes answering a ``raw``-backend
managing node frame by frame on one end of a veth pair, from inside a network namespace.

Only the AF_PACKET socket lives in the namespace (the process enters it with setns(2) to open
the socket, then returns, Linux ``setns(2)``, ``network_namespaces(7)``): the control channel
(``truth``, ``push``, ``fault``, ``reset``, ``shutdown``: :func:`drivers.sim.udp_server.answer_datagram`)
stays on ``bus.udp.host:port`` and the truth frames on their ZMQ endpoint, on this host's loopback.

Each MN frame (source node 240) goes to :meth:`SimulatedNodes.transfer
<drivers.sim.nodes.SimulatedNodes.transfer>` (frames without FCS); its answer goes back at once,
then the plant's pending work runs (``idle``: a truth frame). A frame a CN may answer
(:func:`drivers.udp_protocol.answered`) that it leaves unanswered is followed, in lock-step, by a
silence frame (:func:`drivers.raw_socket.silence_frame`): the managing node then knows the answer
is lost without a wall-clock timeout, so the pair stays deterministic. Frames are served before
any control datagram that came with them, so a ``truth`` request sees every frame sent before it.
"""
from __future__ import annotations

import ctypes
import os
import select
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from drivers.config import BusConfig
from drivers.hal import LinkError
from drivers.powerlink import frames
from drivers.raw_socket import open_socket, silence_frame
from drivers.sim.nodes import SimulatedNodes
from drivers.sim.plant import Plant
from drivers.sim.udp_server import Datagrams, answer_datagram
from drivers.udp_protocol import answered

CLONE_NEWNET = 0x40000000           # linux/sched.h
NETNS_DIR = "/run/netns"            # where ip-netns(8) keeps the namespaces it names
_SOA = int(frames.MessageType.SOA)


@contextmanager
def inside(netns: str | None) -> Iterator[None]:
    """This thread in network namespace ``netns`` (ip-netns(8)'s name) for the block; None: stay."""
    if netns is None:
        yield
        return
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        target = os.open(os.path.join(NETNS_DIR, netns), os.O_RDONLY)
    except FileNotFoundError:
        raise LinkError(f"network namespace {netns!r} does not exist (ip netns list)") from None
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    try:
        if libc.setns(target, CLONE_NEWNET) != 0:
            raise LinkError(f"cannot enter network namespace {netns!r}: {os.strerror(ctypes.get_errno())} "
                            "(needs root or CAP_SYS_ADMIN)")
        try:
            yield
        finally:
            libc.setns(home, CLONE_NEWNET)
    finally:
        os.close(target)
        os.close(home)


def serve_wire(config: BusConfig, plant: Plant, interface: str, netns: str | None = None, *,
               idle_timeout_s: float | None = None,
               on_network: Callable[[SimulatedNodes], None] | None = None) -> None:
    """Play the controlled nodes of ``config`` on raw Ethernet ``interface`` (in ``netns``) with
    ``plant`` behind their drives, and answer control datagrams on ``bus.udp.host:port``, until a
    shutdown request or ``idle_timeout_s`` without traffic (module docstring)."""
    network = SimulatedNodes(config, plant, fcs=False)
    if on_network is not None:
        on_network(network)
    with inside(netns):
        wire = open_socket(interface)
    mac = bytes(wire.getsockname()[4][:frames.ETHERTYPE_AT - frames.SRC_MAC_AT])
    control = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    control.bind((config.udp.host, config.udp.port))
    control.setblocking(False)
    poll = select.poll()
    poll.register(wire.fileno(), select.POLLIN)
    poll.register(control.fileno(), select.POLLIN)
    rx = bytearray(frames.MAX_FRAME)
    rxv = memoryview(rx)
    silence = bytearray(frames.MAX_FRAME)
    d = Datagrams()
    timeout_ms = None if idle_timeout_s is None else round(idle_timeout_s * 1e3)
    try:
        while True:
            if not poll.poll(timeout_ms):
                return
            while True:                              # every frame first (module docstring)
                try:
                    n = wire.recv_into(rx)
                except BlockingIOError:
                    break
                if n <= frames.SRC_NODE_AT or rx[frames.SRC_NODE_AT] != frames.MN_NODE_ID:
                    continue
                frame = rxv[:n]
                reply = network.transfer(frame)
                if reply is not None:
                    wire.send(reply)
                elif answered(frame):
                    target = frame[frames.DST_NODE_AT if frame[frames.MESSAGE_TYPE_AT] != _SOA
                                   else frames.SERVICE_TARGET_AT]
                    wire.send(silence_frame(silence, mac, target))
                plant.idle()
            try:
                size, peer = control.recvfrom_into(d.rx)
            except BlockingIOError:
                continue
            out, stop = answer_datagram(network, d, size)
            if out:
                control.sendto(d.tx_view[:out], peer)
            if stop:
                return
    finally:
        wire.close()
        control.close()

