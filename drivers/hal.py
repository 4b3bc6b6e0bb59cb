"""Hardware abstraction layer: one Bus API for the controller; backends chosen by name.

Like python-can's ``interface=``, ``bus.backend`` in the YAML picks the implementation from
:data:`BACKENDS` ("sim": in-process simulated POWERLINK, lock-step; "udp": the same frames over
UDP to a controlled-node process; "raw": POWERLINK on a real Ethernet wire, ``bus.interface``).

One control cycle (docs/cycle.md)::

    bus.read()        # actual values of the last PRes into position/velocity/current/state/...
    ...               # controller fills target_position / target_velocity / torque_offset / mode
    bus.write()       # setpoints and CiA 402 controlwords into the next PReq payloads
    bus.exchange()    # one control period on the bus (five 400 µs POWERLINK cycles)

Arrays are preallocated numpy vectors in ``bus.axis_names`` order; :class:`Axis` is a named view.
Faults are never silent: a drive fault or a bus error shows as ``state == FAULT`` with a
``fault_code`` on the axis and a :class:`~drivers.events.BusEvent` in ``bus.events``.
"""
from __future__ import annotations

import importlib
import inspect
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Mapping
from enum import IntEnum
from typing import Self

import numpy as np

from drivers import cia402
from drivers.cia402 import State
from drivers.codes import FaultCode
from drivers.config import AxisConfig, BusConfig, parse_bus_config
from drivers.events import BusEvent, EventKind
from drivers.fault_api import FaultApi
from drivers.health import health_buffer
from drivers.service_channel import DOMAIN, SdoRequest

BACKENDS: dict[str, str] = {
    "sim": "drivers.backends.sim:open_sim",
    "udp": "drivers.backends.udp:open_udp",
    "raw": "drivers.backends.raw:open_raw",
}


class BusError(RuntimeError):
    """Base of the bus errors."""


class BackendError(BusError):
    """Unknown backend name or options the backend does not take."""


class BusStateError(BusError):
    """A call that the bus cannot serve in its current state."""


class LinkError(BusError):
    """The transport to the controlled nodes failed."""


def open_bus(section: Mapping, **options) -> Bus:
    """Open the bus described by a ``bus:`` YAML mapping; ``options`` go to the backend factory
    (``sim``: ``plant=``, ``record_frames=``, ``commissioned=``)."""
    config = parse_bus_config(section)
    target = BACKENDS.get(config.backend)
    if target is None:
        raise BackendError(f"unknown bus backend {config.backend!r} (known: {', '.join(sorted(BACKENDS))})")
    module, name = target.split(":")
    factory = getattr(importlib.import_module(module), name)
    try:
        inspect.signature(factory).bind(config, **options)
    except TypeError as exc:
        raise BackendError(f"backend {config.backend!r} does not accept these options: {exc}") from None
    return factory(config, **options)


class Intent(IntEnum):
    DISABLED = 0
    ENABLED = 1
    QUICK_STOP = 2
    FAULT_RESET = 3


_FAULTED = (State.FAULT, State.FAULT_REACTION_ACTIVE)


class Axis:
    """A named view on one axis of a :class:`Bus` (SI units: rad, rad/s, A, N·m)."""

    __slots__ = ("bus", "channel", "index", "name", "node_id")

    def __init__(self, bus: Bus, config: AxisConfig) -> None:
        self.bus = bus
        self.index = config.index
        self.name = config.name
        self.node_id = config.node_id
        self.channel = config.channel

    position = property(lambda self: float(self.bus.position[self.index]))
    velocity = property(lambda self: float(self.bus.velocity[self.index]))
    current = property(lambda self: float(self.bus.current[self.index]))
    statusword = property(lambda self: int(self.bus.statusword[self.index]))
    state = property(lambda self: State(int(self.bus.state[self.index])))
    fault_code = property(lambda self: int(self.bus.fault_code[self.index]))

    @property
    def target_position(self) -> float:
        return float(self.bus.target_position[self.index])

    @target_position.setter
    def target_position(self, value: float) -> None:
        self.bus.target_position[self.index] = value

    @property
    def target_velocity(self) -> float:
        return float(self.bus.target_velocity[self.index])

    @target_velocity.setter
    def target_velocity(self, value: float) -> None:
        self.bus.target_velocity[self.index] = value

    @property
    def torque_offset(self) -> float:
        return float(self.bus.torque_offset[self.index])

    @torque_offset.setter
    def torque_offset(self, value: float) -> None:
        self.bus.torque_offset[self.index] = value

    @property
    def mode(self) -> cia402.Mode:
        return cia402.Mode(int(self.bus.mode[self.index]))

    @mode.setter
    def mode(self, value: cia402.Mode) -> None:
        self.bus.mode[self.index] = cia402.Mode(value)

    def enable(self) -> None:
        """Walk the drive to Operation Enabled (transitions 2, 3, 4) over the next cycles."""
        self.bus.intent[self.index] = Intent.ENABLED

    def disable(self) -> None:
        """Disable voltage: torque off (transitions 7, 9, 10, 12)."""
        self.bus.intent[self.index] = Intent.DISABLED

    def quick_stop(self) -> None:
        """Quick stop (transition 11): brake, then Switch On Disabled."""
        self.bus.intent[self.index] = Intent.QUICK_STOP

    def fault_reset(self) -> None:
        """Clear the fault (transition 15) once its cause is gone; ends in Switch On Disabled."""
        self.bus.intent[self.index] = Intent.FAULT_RESET

    def __repr__(self) -> str:
        return f"Axis({self.name!r}, node {self.node_id} ch {self.channel}, {self.state.name})"


class Bus(ABC):
    """The controller's view of the drive network (see the module docstring for the cycle)."""

    faults: FaultApi

    def __init__(self, config: BusConfig) -> None:
        n = len(config.axes)
        self.config = config
        self.axis_names = tuple(a.name for a in config.axes)
        self.position = np.zeros(n)
        self.velocity = np.zeros(n)
        self.current = np.zeros(n)
        self.statusword = np.zeros(n, np.int64)
        self.state = np.full(n, int(State.NOT_READY_TO_SWITCH_ON), np.int64)
        self.fault_code = np.zeros(n, np.int64)
        self.mode_display = np.zeros(n, np.int64)
        self.aux = np.full((n, 3), np.nan)       # auxiliary sensor input per axis (TPDO 0x2400; the foot IMU)
        self.target_position = np.zeros(n)
        self.target_velocity = np.zeros(n)
        self.torque_offset = np.zeros(n)
        self.mode = np.full(n, int(cia402.Mode.CSP), np.int64)
        self.intent = np.full(n, int(Intent.DISABLED), np.int64)
        # what the bus has gone through (drivers.health), written as it happens
        self.health, self.health_views = health_buffer(len(config.nodes), n)
        # setpoints that did not fit their process data integer, saturated (drivers.powerlink.process_image):
        # the fields of the last write (bits), the writes so far that saturated one
        self.saturated = np.zeros(n, np.int64)
        self.saturations = self.health_views.saturations
        self.events: deque[BusEvent] = deque(maxlen=config.events_max)
        self.axes = {a.name: Axis(self, a) for a in config.axes}
        self.control_cycle = 0
        self._node_of = [a.node_id for a in config.axes]
        self._latched = np.zeros(n, np.int64)     # a node-level error's code, latched on the axis until reset
        self._controlword = np.zeros(n, np.int64)  # the controlword sent last
        self._closed = False

    def axis(self, name: str) -> Axis:
        try:
            return self.axes[name]
        except KeyError:
            raise KeyError(f"no axis named {name!r} (axes: {', '.join(self.axis_names)})") from None

    @abstractmethod
    def boot(self) -> None:
        """Boot the network; returns when cyclic control can start (targets = actual positions)."""

    @abstractmethod
    def read(self) -> None:
        """Copy the latest actual values into the arrays and emit axis fault events."""

    @abstractmethod
    def write(self) -> None:
        """Send the setpoint arrays and the controlwords the axis intents call for."""

    @abstractmethod
    def exchange(self) -> None:
        """Run one control period on the bus."""

    @abstractmethod
    def node_operational(self, node_id: int) -> bool:
        """True when ``node_id`` takes part in cyclic control."""

    @abstractmethod
    def sdo_read(self, node_id: int, index: int, subindex: int, data_type: int = DOMAIN) -> SdoRequest:
        """Start reading an object of a node's dictionary (e.g. 0x1001 error register, 0x1003
        history), its value decoded as ``data_type`` (a :mod:`drivers.service_channel` type code)."""

    @abstractmethod
    def sdo_write(self, node_id: int, index: int, subindex: int, value: object, data_type: int) -> SdoRequest:
        """Start writing ``value`` as ``data_type`` to an object (e.g. 0x6065 following error window, UNSIGNED32)."""

    @abstractmethod
    def stop_node(self, node_id: int) -> None:
        """NMT StopNode: the node leaves cyclic control; its axes report a communication fault."""

    @abstractmethod
    def reset_node(self, node_id: int) -> None:
        """NMT ResetNode: the node reboots and rejoins cyclic control."""

    @abstractmethod
    def _close(self) -> None:
        """Release the backend's resources."""

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._close()

    def complete(self, request: SdoRequest, max_cycles: int = 200) -> object:
        """Run control cycles (outside real time) until ``request`` is done; its result."""
        for _ in range(max_cycles):
            if request.done:
                break
            self.write()
            self.exchange()
            self.read()
        return request.result()

    def _check_open(self) -> None:
        if self._closed:
            raise BusStateError("the bus is closed")

    def _axis_faulted(self, i: int) -> None:
        """Axis ``i`` has just entered FAULT (or its reaction): the AXIS_FAULT event (the code a
        node-level error latched is the managing node's :class:`~drivers.codes.FaultCode`)."""
        name, code = self.axis_names[i], int(self.fault_code[i])
        if self._latched[i]:
            code = FaultCode(code)
        self.events.append(BusEvent(self.control_cycle, EventKind.AXIS_FAULT, self._node_of[i], code, name,
                                    f"axis {name} fault 0x{code:04X}"))

    def _fault_reset_word(self, i: int) -> int:
        if self._latched[i] and self.node_operational(self._node_of[i]):
            self._latched[i] = 0
        if cia402.decode_state(int(self.statusword[i])) in _FAULTED:
            return 0 if self._controlword[i] & cia402.CW_FAULT_RESET else cia402.CW_FAULT_RESET
        if not self._latched[i]:
            self.intent[i] = Intent.DISABLED
        return cia402.CW_DISABLE_VOLTAGE

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
