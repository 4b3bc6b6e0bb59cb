"""Bus events: what the controller learns about nodes and axes, in a bounded deque (never silent)."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class EventKind(Enum):
    BOOT_COMPLETE = "boot complete"
    NODE_OPERATIONAL = "node operational"
    NODE_LEFT_OPERATIONAL = "node left Operational"
    THRESHOLD = "DS 301 error threshold reached"
    NODE_RESET = "node reset"
    NODE_STOPPED = "node stopped"
    IDENT_MISMATCH = "node identity mismatch"
    NODE_ERROR = "node error entry"
    AXIS_FAULT = "axis fault"
    SDO_ABORT = "SDO aborted"
    CONFIGURATION = "node configuration downloaded or up to date"
    SETPOINT_SATURATED = "setpoint outside its process data integer"


@dataclass(frozen=True)
class BusEvent:
    bus_cycle: int
    kind: EventKind
    node_id: int
    code: int = 0
    axis: str | None = None
    text: str = ""
