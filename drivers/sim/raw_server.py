"""The simulated controlled nodes on a real wire: :class:`~drivers.sim.nodes.SimulatedNodes`
answering a ``raw``-backend managing node over an AF_PACKET socket, in real time, frame by frame.

Run it on the far end of a veth pair, in a network namespace of its own (``bipd bench wire``
does), so that the managing node's many-node runs need no hardware::

    ip netns exec NS python -m drivers.sim.raw_server --config BUS.yaml --interface IF [--priority N]

A socket carries frames without FCS: the simulated nodes take and give them so
(``SimulatedNodes(fcs=False)``). Each simulated
node answers from its own MAC address (``02:00:00:00:00:<node id>``), which the managing node
learns from its IdentResponse and sends its PReqs to (a veth delivers every frame to the packet
socket whatever its destination). Only the managing node's frames (source node 240) are served.
Buffers are allocated once.
"""
from __future__ import annotations

import argparse
import os
import socket
import sys

from drivers.raw_socket import open_socket
from drivers.config import BusConfig, parse_bus_config
from drivers.powerlink import frames
from drivers.sim.nodes import SimulatedNodes
from models.common.validation import read_yaml

POLL_S = 0.5              # s: how often a blocked receive checks whether to stop


def serve_raw(config: BusConfig, interface: str, stop=lambda: False) -> int:
    """Answer the managing node's frames on ``interface`` until ``stop()``; the frames served."""
    sock = open_socket(interface)
    sock.setblocking(True)
    sock.settimeout(POLL_S)
    network = SimulatedNodes(config, fcs=False)
    rx = bytearray(frames.MAX_FRAME)
    rxv = memoryview(rx)
    served = 0
    try:
        while not stop():
            try:
                n = sock.recv_into(rx)
            except socket.timeout:
                continue
            if n <= frames.SRC_NODE_AT or rx[frames.SRC_NODE_AT] != frames.MN_NODE_ID:
                continue
            reply = network.transfer(rxv[:n])
            served += 1
            if reply is not None:
                sock.send(reply)
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
