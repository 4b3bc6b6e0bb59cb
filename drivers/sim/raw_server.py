"""The simulated controlled nodes on a real wire: :class:`~drivers.sim.nodes.SimulatedNodes`
answering a ``raw``-backend managing node over an AF_PACKET socket, in real time, frame by frame.

Run it on the far end of a veth pair, in a network namespace of its own (``bipd bench wire``
does), so that the managing node's many-node runs need no hardware::

    ip netns exec NS python -m drivers.sim.raw_server --config BUS.yaml --interface IF [--priority N]

A received frame has no FCS (the kernel strips it): the server appends one for the simulated
nodes, which check it as on the other links, and sends their answer without it. Each simulated
node answers from its own MAC address (``02:00:00:00:00:<node id>``), which the managing node
learns from its IdentResponse and sends its PReqs to (a veth delivers every frame to the packet
socket whatever its destination). Only the managing node's frames (source node 240) are served.
Buffers are allocated once.
"""
from __future__ import annotations

import argparse
import os
import socket
import struct
import sys
from zlib import crc32

from drivers.raw_socket import MIN_ETHERNET, open_socket
from drivers.config import BusConfig, parse_bus_config
from drivers.powerlink import frames
from drivers.sim.nodes import SimulatedNodes
from models.common.validation import read_yaml

_FCS = struct.Struct("<I")
POLL_S = 0.5              # s: how often a blocked receive checks whether to stop


def serve_raw(config: BusConfig, interface: str, stop=lambda: False) -> int:
    """Answer the managing node's frames on ``interface`` until ``stop()``; the frames served."""
    sock = open_socket(interface)
    sock.setblocking(True)
    sock.settimeout(POLL_S)
    network = SimulatedNodes(config)
    rx = bytearray(frames.MAX_FRAME)
    rxv = memoryview(rx)
    served = 0
    try:
        while not stop():
            try:
                n = sock.recv_into(rxv[:frames.MAX_FRAME - frames.FCS_SIZE])
            except socket.timeout:
                continue
            if n <= frames.SRC_NODE_AT or rx[frames.SRC_NODE_AT] != frames.MN_NODE_ID:
                continue
            if n < MIN_ETHERNET:                     # a veth does not pad: do what a NIC would
                rx[n:MIN_ETHERNET] = bytes(MIN_ETHERNET - n)
                n = MIN_ETHERNET
            _FCS.pack_into(rx, n, crc32(rxv[:n]))
            reply = network.transfer(rxv[:n + frames.FCS_SIZE])
            served += 1
            if reply is None:
                continue
            sock.send(reply[:len(reply) - frames.FCS_SIZE])
    finally:
        sock.close()
    return served


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m drivers.sim.raw_server",
                                description="Simulated POWERLINK controlled nodes on a raw Ethernet interface.")
    p.add_argument("--config", required=True, help="YAML with a bus: section (its nodes are simulated)")
    p.add_argument("--interface", required=True)
    p.add_argument("--priority", type=int, default=0, help="SCHED_FIFO priority (default 0: none)")
    args = p.parse_args(argv)
    doc = read_yaml(args.config)
    config = parse_bus_config(doc.get("bus", doc))
    if args.priority:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(args.priority))
    print(f"serving {len(config.nodes)} simulated node(s) on {args.interface}", flush=True)
    try:
        serve_raw(config, args.interface)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
