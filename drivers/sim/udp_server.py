"""The ``udp`` backend's controlled-node server: the simulated nodes, drives and plant
(:class:`~drivers.sim.nodes.SimulatedNodes`) answering the managing node's datagrams
(:mod:`drivers.udp_protocol`), in another process (:func:`serve_udp`) or in this one
(:class:`InProcessServer`, for benchmarks and tests).

Each datagram goes to :meth:`SimulatedNodes.serve_isochronous
<drivers.sim.nodes.SimulatedNodes.serve_isochronous>` (SoC, PReq and idle SoA of Operational
nodes, :mod:`drivers.sim.isochronous`), the frames it leaves to the Python path.

Run a server from a shell: ``python -m drivers.sim.udp_server robot.yaml`` (the ``bus:`` section).
"""
from __future__ import annotations

import argparse
import json
import socket
from collections.abc import Callable, Mapping

import numpy as np

from models import ConfigError
from models.common.validation import read_yaml

from drivers.udp_protocol import (ANSWER, ANSWERS, CONTROL, CONTROL_REPLY, DATAGRAM, ENTRY, FRAMES, HEADER,
                                           MAGIC, Waiter, spin_seconds)
from drivers.config import BusConfig, BusConfigError, parse_bus_config
from drivers.fault_api import FaultError
from drivers.hal import LinkError
from drivers.powerlink.frames import MESSAGE_TYPE_AT, MessageType
from drivers.sim import isochronous
from drivers.sim.nodes import SimulatedNodes
from drivers.sim.plant import InertiaPlant, Plant

_ENTRY_SIZE, _ANSWER_SIZE = ENTRY.size, ANSWER.size
_SOA = int(MessageType.SOA)


class _DeferredPlant(Plant):
    """The server's plant behind the drives: ``step`` only records the torques; :meth:`flush` runs
    the step after the SoA's answer has been sent, so the plant integrates while the managing node
    goes on (its next answered frame is read only after the flush: same frames, same physics)."""

    def __init__(self, plant: Plant) -> None:
        self.plant = plant
        self.n_motors = plant.n_motors
        self.motor_position = plant.motor_position
        self.motor_velocity = plant.motor_velocity
        self.sensors = plant.sensors
        self._torque = np.zeros(plant.n_motors)
        self._dt: float | None = None

    def reset(self) -> None:
        self._dt = None
        self.plant.reset()

    def step(self, dt: float, motor_torque: np.ndarray) -> None:
        self.flush()
        self._torque[:] = motor_torque
        self._dt = dt

    @property
    def pending(self) -> bool:
        """A step is waiting for :meth:`flush`."""
        return self._dt is not None

    def flush(self) -> None:
        dt = self._dt
        if dt is not None:
            self._dt = None
            self.plant.step(dt, self._torque)

    def idle(self) -> None:
        self.plant.idle()

    def __getattr__(self, name: str):
        return getattr(self.plant, name)        # control(), time, ... of the served plant


def serve_udp(config: BusConfig | Mapping, plant: Plant | None = None, *,
              idle_timeout_s: float | None = None, spin_s: float | None = None,
              on_network: Callable[[SimulatedNodes], None] | None = None) -> None:
    """Play the controlled nodes of ``config`` (a BusConfig or ``bus:`` mapping; a mapping may hold
    ``udp.spin_s``) on ``bus.udp.host:port`` until a shutdown request, or ``idle_timeout_s`` without
    traffic; ``spin_s``: the busy-poll bound of the waits (module docstring); ``on_network`` gets
    the simulated nodes (their drives) before the first frame."""
    if not isinstance(config, BusConfig):
        udp = config.get("udp") if isinstance(config, Mapping) else None
        if isinstance(udp, Mapping) and "spin_s" in udp:
            raw = dict(udp)
            if spin_s is None:
                spin_s = raw["spin_s"]
            del raw["spin_s"]
            config = dict(config, udp=raw)
        config = parse_bus_config(config)
    spin = spin_seconds(config.udp, spin_s)
    deferred = _DeferredPlant(plant if plant is not None else InertiaPlant.from_config(config))
    flush, idle = deferred.flush, deferred.idle
    network = SimulatedNodes(config, deferred)
    if on_network is not None:
        on_network(network)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((config.udp.host, config.udp.port))
    sock.setblocking(False)
    wait = Waiter(sock, spin).wait
    recvfrom_into = sock.recvfrom_into
    d = Datagrams()
    rx, tx_view = d.rx, d.tx_view
    network.serve_isochronous(d.rx_array, d.tx_array, d.io)    # compiles (or loads) the Numba path now
    try:
        while True:
            try:
                size, peer = recvfrom_into(rx)
            except BlockingIOError:
                if idle_timeout_s is None:
                    wait(None)
                elif not wait(idle_timeout_s):
                    return
                continue
            out, stop = answer_datagram(network, d, size)
            if out:
                sock.sendto(tx_view[:out], peer)
            flush()                         # the SoA's plant step, once the answers are on their way
            idle()
            if stop:
                return
    finally:
        sock.close()


class Datagrams:
    """The server's receive and transmit buffers, as bytes (memoryviews) and as numpy arrays for
    the Numba fast path, with its ``io`` offsets (drivers.sim.isochronous)."""

    def __init__(self) -> None:
        self.rx = bytearray(DATAGRAM)
        self.rx_view = memoryview(self.rx)
        self.rx_array = np.frombuffer(self.rx, np.uint8)
        self.tx = bytearray(DATAGRAM)
        self.tx_view = memoryview(self.tx)
        self.tx_array = np.frombuffer(self.tx, np.uint8)
        self.io = np.zeros(isochronous.N_IO, np.int64)


def answer_datagram(network: SimulatedNodes, d: Datagrams, size: int, fast: bool = True) -> tuple[int, bool]:
    """The server's answer to the datagram of ``size`` bytes in ``d.rx``: its length in ``d.tx``
    (0: nothing to send) and whether it was a shutdown request. ``network.plant`` is the server's
    :class:`_DeferredPlant`: its ``flush()`` then ``idle()`` are the caller's, once the answer is
    sent. ``fast``: see :func:`_serve_frames`."""
    if size < HEADER.size:
        return 0, False
    magic, kind, seq, _ = HEADER.unpack_from(d.rx)
    if magic != MAGIC:
        return 0, False
    if kind == FRAMES:
        out = _serve_frames(network, network.plant.flush, d, size, fast)
        if out:
            HEADER.pack_into(d.tx, 0, MAGIC, ANSWERS, seq, 0)
        return out, False
    if kind == CONTROL:
        answer, stop = _control(network, bytes(d.rx_view[HEADER.size:size]))
        payload = json.dumps(answer).encode()
        HEADER.pack_into(d.tx, 0, MAGIC, CONTROL_REPLY, seq, 0)
        d.tx_view[HEADER.size:HEADER.size + len(payload)] = payload
        return HEADER.size + len(payload), stop
    return 0, False


def _serve_frames(network: SimulatedNodes, flush, d: Datagrams, size: int, fast: bool = True) -> int:
    """Deliver the frames of a FRAMES datagram (``size`` bytes in ``d.rx``) in order and write the
    answers wanted into ``d.tx`` after the header; their end, or 0 when none was wanted. A
    truncated entry ends the datagram. ``flush`` runs the pending plant step before a SoA: its
    drive step reads the plant. With ``fast``, the network's Numba path takes every run of frames
    it can (:meth:`SimulatedNodes.serve_isochronous`) and this loop the frames it leaves; the
    plant step of a SoA it stepped runs at once when another SoA follows, else after the answer
    (the network's plant is the server's :class:`_DeferredPlant`)."""
    rx, rx_view, tx, tx_view, io = d.rx, d.rx_view, d.tx, d.tx_view, d.io
    at = HEADER.size
    out = HEADER.size
    wanted = False
    transfer = network.transfer
    unpack_entry, pack_answer = ENTRY.unpack_from, ANSWER.pack_into
    io[isochronous.SIZE] = size
    while at + _ENTRY_SIZE <= size:
        if fast:
            io[isochronous.AT] = at
            io[isochronous.OUT] = out
            io[isochronous.WANTED] = 0
            io[isochronous.PENDING] = network.plant.pending
            network.serve_isochronous(d.rx_array, d.tx_array, io)
            at = int(io[isochronous.AT])
            out = int(io[isochronous.OUT])
            wanted = wanted or bool(io[isochronous.WANTED])
            if io[isochronous.STEPPED]:
                if io[isochronous.MORE_SOA]:
                    flush()
                continue
            if at + _ENTRY_SIZE > size:
                break
        n, answer = unpack_entry(rx, at)
        at += _ENTRY_SIZE
        end = at + n
        if end > size:
            network.rx_errors += 1
            break
        if n > MESSAGE_TYPE_AT and rx[at + MESSAGE_TYPE_AT] == _SOA:
            flush()
        reply = transfer(rx_view[at:end])
        at = end
        if answer:
            wanted = True
            if reply is None:
                pack_answer(tx, out, 0, 0)
                out += _ANSWER_SIZE
                continue
            m = len(reply)
            delay = network.reply_delay_s
            pack_answer(tx, out, m, round(delay * 1e9) if delay else 0)
            out += _ANSWER_SIZE
            tx_view[out:out + m] = reply
            out += m
    return out if wanted else 0


def _control(network: SimulatedNodes, payload: bytes) -> tuple[dict, bool]:
    """(answer, stop) for one control request; ops other than fault, reset and shutdown go to
    ``network.plant.control(request)`` when the plant has that method."""
    try:
        request = json.loads(payload)
        op = request["op"]
        if op == "fault":
            network.faults.apply(request["name"], **request.get("args", {}))
        elif op == "reset":
            network.reset()
        elif op != "shutdown":
            hook = getattr(network.plant, "control", None)
            if hook is None:
                return {"error": f"unknown control op {op!r} (known: fault, reset, shutdown)"}, False
            answer = hook(request)
            return (answer if isinstance(answer, dict) else {"error": f"control op {op!r}: no answer"}), False
        return {"ok": True}, op == "shutdown"
    except FaultError as exc:
        return {"error": str(exc)}, False
    except (ValueError, KeyError, TypeError) as exc:
        return {"error": f"malformed control request: {exc}"}, False


class InProcessServer:
    """A stand-in for a :class:`UdpLink`'s socket that answers each datagram in this process with
    the server's code (:func:`answer_datagram`, then the plant's flush and idle): the same
    datagrams and code paths as :func:`serve_udp` behind a real socket, without the second process
    or the kernel's UDP (benchmarks, tests). ``fast``: the server's Numba path."""

    def __init__(self, config: BusConfig, plant: Plant | None = None, fast: bool = True) -> None:
        self.plant = _DeferredPlant(plant if plant is not None else InertiaPlant.from_config(config))
        self.network = SimulatedNodes(config, self.plant)
        self.datagrams = Datagrams()
        self.fast = fast
        self._reply = 0
        self.closed = False

    def send(self, data) -> None:
        d = self.datagrams
        size = len(data)
        d.rx[:size] = data
        self._reply, _ = answer_datagram(self.network, d, size, self.fast)
        self.plant.flush()
        self.plant.idle()

    def reply(self) -> bytes:
        """The answer to the last datagram (b"": none)."""
        return bytes(self.datagrams.tx[:self._reply])

    def recv_into(self, buf) -> int:
        n = self._reply
        if not n:
            raise BlockingIOError
        buf[:n] = self.datagrams.tx[:n]
        self._reply = 0
        return n

    def wait(self, timeout_s: float | None) -> bool:
        """Whether an answer is pending (the link's waiter): the answer to a datagram comes
        with its send or never, so this never waits."""
        if self.closed:
            raise LinkError("link closed")
        return self._reply > 0

    def close(self) -> None:
        """Nothing to release; later waits raise ``LinkError("link closed")``."""
        self.closed = True


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the simulated POWERLINK controlled nodes over UDP.")
    parser.add_argument("config", help="YAML file with a bus: section")
    parser.add_argument("--idle-timeout", type=float, default=None, help="stop after this many idle seconds")
    args = parser.parse_args(argv)
    try:
        document = read_yaml(args.config)
        serve_udp(document["bus"] if isinstance(document, dict) and "bus" in document else document,
                  idle_timeout_s=args.idle_timeout)
    except ConfigError as e:
        parser.exit(2, f"{parser.prog}: error: {e}\n")
    except BusConfigError as e:
        parser.exit(2, f"{parser.prog}: error: {args.config}: {e}\n")


if __name__ == "__main__":
    main()
