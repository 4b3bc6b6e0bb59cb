"""``udp`` backend: the POWERLINK frames over UDP on loopback to a controlled-node process.

The MN side (:func:`open_udp`) sends every frame in one datagram to the server
(:func:`serve_udp`, run in another process: the hardware-in-the-loop side), which plays the
controlled nodes, their drives and the plant through :class:`~drivers.sim_nodes.SimulatedNodes`.
The exchange stays lock-step: the server answers every PReq and SoA with exactly one datagram.

Datagram = 12-byte transport header + payload::

    0 magic b"PL" | 2 kind u8 | 3 res | 4 sequence u32 | 8 simulated wire delay ns u32
    kind 1 FRAME (payload: one Ethernet frame with FCS), 2 SILENCE (nothing came back on the
    wire), 3 CONTROL (payload: JSON request), 4 CONTROL_REPLY (payload: JSON answer)

The delay field carries the simulated propagation delay of a PRes, so timing faults are judged
against ``bus.pres_timeout_s`` regardless of loopback jitter. Control requests:
``{"op": "fault", "name": ..., "args": {...}}`` (fault injection), ``{"op": "reset"}`` (reset
every node for the next MN session), ``{"op": "shutdown"}``.

Run a server from a shell: ``python -m drivers.backends.udp robot.yaml`` (the ``bus:`` section).
"""
from __future__ import annotations

import argparse
import json
import socket
import struct
from collections.abc import Mapping

import yaml

from ..config import BusConfig, UdpConfig, parse_bus_config
from ..faults import FaultApi, FaultError
from ..hal import LinkError
from ..plant import Plant
from ..powerlink import frames
from ..powerlink.bus import PowerlinkBus
from ..powerlink.frames import MessageType
from ..sim_nodes import SimulatedNodes

HEADER = struct.Struct("<2sBxII")
MAGIC = b"PL"
FRAME, SILENCE, CONTROL, CONTROL_REPLY = 1, 2, 3, 4
_ANSWERED = (MessageType.PREQ, MessageType.SOA)
_DATAGRAM = HEADER.size + frames.MAX_FRAME + 1


class UdpLink:
    """MN side of the UDP transport."""

    def __init__(self, config: UdpConfig) -> None:
        self.address = (config.host, config.port)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.connect(self.address)
        self.sock.settimeout(config.timeout_s)
        self.reply_delay_s = 0.0
        self.seq = 0
        self.stale = 0
        self._tx = bytearray(_DATAGRAM)
        self._tx_view = memoryview(self._tx)
        self._rx = bytearray(_DATAGRAM)
        self._rx_view = memoryview(self._rx)

    def transfer(self, frame: memoryview) -> memoryview | None:
        n = len(frame)
        self._send(FRAME, frame, n)
        if frame[14] not in _ANSWERED:
            return None
        kind, size = self._receive()
        if kind == FRAME:
            return self._rx_view[HEADER.size:size]
        return None

    def control(self, request: dict) -> dict:
        """Send a control request and return the server's JSON answer."""
        payload = json.dumps(request).encode()
        self._send(CONTROL, payload, len(payload))
        kind, size = self._receive()
        if kind != CONTROL_REPLY:
            raise LinkError(f"the UDP server at {self.address[0]}:{self.address[1]} did not answer "
                            f"control request {request.get('op')!r}")
        return json.loads(bytes(self._rx_view[HEADER.size:size]))

    def close(self) -> None:
        try:
            self.control({"op": "reset"})
        except (LinkError, OSError):
            pass
        self.sock.close()

    def _send(self, kind: int, payload, n: int) -> None:
        self.seq = (self.seq + 1) & 0xFFFF_FFFF
        HEADER.pack_into(self._tx, 0, MAGIC, kind, self.seq, 0)
        self._tx_view[HEADER.size:HEADER.size + n] = payload
        try:
            self.sock.send(self._tx_view[:HEADER.size + n])
        except OSError as exc:
            raise LinkError(f"cannot send to the UDP server at {self.address[0]}:{self.address[1]}: "
                            f"{exc}") from None

    def _receive(self) -> tuple[int, int]:
        """(kind, datagram size) of the answer to the last datagram; (SILENCE, 0) on timeout."""
        while True:
            try:
                size = self.sock.recv_into(self._rx)
            except TimeoutError:
                return SILENCE, 0
            except ConnectionRefusedError:
                raise LinkError(f"no UDP controlled-node server at {self.address[0]}:{self.address[1]}"
                                ) from None
            if size >= HEADER.size:
                magic, kind, seq, delay_ns = HEADER.unpack_from(self._rx)
                if magic == MAGIC and seq == self.seq:
                    self.reply_delay_s = delay_ns * 1e-9
                    return kind, size
            self.stale += 1


class RemoteFaults(FaultApi):
    """Fault injection forwarded to the UDP server."""

    def __init__(self, link: UdpLink) -> None:
        self.link = link

    def apply(self, name: str, **args) -> None:
        answer = self.link.control({"op": "fault", "name": name, "args": args})
        if "error" in answer:
            raise FaultError(answer["error"])


def open_udp(config: BusConfig) -> PowerlinkBus:
    """A bus whose controlled nodes are served by :func:`serve_udp` at ``bus.udp.host:port``."""
    link = UdpLink(config.udp)
    return PowerlinkBus(config, link, RemoteFaults(link))


def serve_udp(config: BusConfig | Mapping, plant: Plant | None = None, *,
              idle_timeout_s: float | None = None) -> None:
    """Play the controlled nodes of ``config`` (a BusConfig or ``bus:`` mapping) on
    ``bus.udp.host:port`` until a shutdown request, or ``idle_timeout_s`` without traffic."""
    if not isinstance(config, BusConfig):
        config = parse_bus_config(config)
    network = SimulatedNodes(config, plant)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((config.udp.host, config.udp.port))
    sock.settimeout(idle_timeout_s)
    rx = bytearray(_DATAGRAM)
    rx_view = memoryview(rx)
    tx = bytearray(_DATAGRAM)
    tx_view = memoryview(tx)
    try:
        while True:
            try:
                size, peer = sock.recvfrom_into(rx)
            except TimeoutError:
                return
            if size < HEADER.size:
                continue
            magic, kind, seq, _ = HEADER.unpack_from(rx)
            if magic != MAGIC:
                continue
            if kind == FRAME:
                frame = rx_view[HEADER.size:size]
                reply = network.transfer(frame)
                if len(frame) > 14 and frame[14] in _ANSWERED:
                    n = 0 if reply is None else len(reply)
                    HEADER.pack_into(tx, 0, MAGIC, SILENCE if reply is None else FRAME, seq,
                                     round(network.reply_delay_s * 1e9))
                    if reply is not None:
                        tx_view[HEADER.size:HEADER.size + n] = reply
                    sock.sendto(tx_view[:HEADER.size + n], peer)
            elif kind == CONTROL:
                answer, stop = _control(network, bytes(rx_view[HEADER.size:size]))
                payload = json.dumps(answer).encode()
                HEADER.pack_into(tx, 0, MAGIC, CONTROL_REPLY, seq, 0)
                tx_view[HEADER.size:HEADER.size + len(payload)] = payload
                sock.sendto(tx_view[:HEADER.size + len(payload)], peer)
                if stop:
                    return
    finally:
        sock.close()


def _control(network: SimulatedNodes, payload: bytes) -> tuple[dict, bool]:
    """(answer, stop) for one control request."""
    try:
        request = json.loads(payload)
        op = request["op"]
        if op == "fault":
            network.faults.apply(request["name"], **request.get("args", {}))
        elif op == "reset":
            network.reset()
        elif op != "shutdown":
            return {"error": f"unknown control op {op!r} (known: fault, reset, shutdown)"}, False
        return {"ok": True}, op == "shutdown"
    except FaultError as exc:
        return {"error": str(exc)}, False
    except (ValueError, KeyError, TypeError) as exc:
        return {"error": f"malformed control request: {exc}"}, False


def shutdown_server(config: UdpConfig, timeout_s: float = 1.0) -> None:
    """Ask the server at ``config.host:port`` to stop."""
    link = UdpLink(UdpConfig(config.host, config.port, timeout_s))
    try:
        link.control({"op": "shutdown"})
    finally:
        link.sock.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the simulated POWERLINK controlled nodes over UDP.")
    parser.add_argument("config", help="YAML file with a bus: section")
    parser.add_argument("--idle-timeout", type=float, default=None, help="stop after this many idle seconds")
    args = parser.parse_args(argv)
    with open(args.config, encoding="utf-8") as f:
        document = yaml.safe_load(f)
    serve_udp(document["bus"] if isinstance(document, dict) and "bus" in document else document,
              idle_timeout_s=args.idle_timeout)


if __name__ == "__main__":
    main()
