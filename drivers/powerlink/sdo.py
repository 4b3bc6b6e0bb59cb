"""SDO-like service channel: object dictionary, abort codes (CiA 301 §7.2.4.3.17), request handles."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from drivers.powerlink.pdo import INTEGER8, REAL32, REAL64, UNSIGNED8, UNSIGNED16, UNSIGNED32

ABORT_TIMEOUT = 0x0504_0000
ABORT_READ_ONLY = 0x0601_0002
ABORT_NO_OBJECT = 0x0602_0000
ABORT_VALUE_RANGE = 0x0609_0030
ABORT_GENERAL = 0x0800_0000

ABORT_TEXT = {
    ABORT_TIMEOUT: "SDO protocol timed out",
    ABORT_READ_ONLY: "attempt to write a read-only object",
    ABORT_NO_OBJECT: "object does not exist in the object dictionary",
    ABORT_VALUE_RANGE: "value range of parameter exceeded",
    ABORT_GENERAL: "general error",
}

_INTEGER_RANGES = {INTEGER8: (-128, 127), UNSIGNED8: (0, 0xFF), UNSIGNED16: (0, 0xFFFF),
                   UNSIGNED32: (0, 0xFFFF_FFFF)}


class SdoAbort(RuntimeError):
    """An SDO transfer that the server aborted (or that timed out)."""

    def __init__(self, node_id: int, index: int, subindex: int, code: int) -> None:
        self.node_id, self.index, self.subindex, self.code = node_id, index, subindex, code
        text = ABORT_TEXT.get(code, "unknown abort code")
        super().__init__(f"SDO 0x{index:04X}/{subindex} on node {node_id} aborted: "
                         f"0x{code:08X} {text}")


@dataclass
class ObjectEntry:
    data_type: int
    read: Callable[[], float]
    write: Callable[[float], None] | None = None
    minimum: float = -math.inf
    maximum: float = math.inf


class ObjectDictionary:
    """(index, subindex) -> typed entry; returns abort codes instead of raising (server side)."""

    def __init__(self) -> None:
        self.entries: dict[tuple[int, int], ObjectEntry] = {}

    def add(self, index: int, subindex: int, entry: ObjectEntry) -> None:
        self.entries[(index, subindex)] = entry

    def read(self, index: int, subindex: int) -> tuple[int, int, float]:
        """(abort code or 0, data type, value)."""
        entry = self.entries.get((index, subindex))
        if entry is None:
            return ABORT_NO_OBJECT, 0, 0.0
        return 0, entry.data_type, float(entry.read())

    def write(self, index: int, subindex: int, value: float) -> tuple[int, int]:
        """(abort code or 0, data type)."""
        entry = self.entries.get((index, subindex))
        if entry is None:
            return ABORT_NO_OBJECT, 0
        if entry.write is None:
            return ABORT_READ_ONLY, entry.data_type
        low, high = _INTEGER_RANGES.get(entry.data_type, (entry.minimum, entry.maximum))
        low, high = max(low, entry.minimum), min(high, entry.maximum)
        integral = entry.data_type not in (REAL32, REAL64)
        if not (low <= value <= high) or (integral and value != int(value)):
            return ABORT_VALUE_RANGE, entry.data_type
        entry.write(int(value) if integral else value)
        return 0, entry.data_type


@dataclass
class SdoRequest:
    """Handle of one SDO transfer; completed by the managing node during later bus cycles."""

    node_id: int
    command: int
    index: int
    subindex: int
    value: float = 0.0
    data_type: int = 0
    done: bool = False
    abort_code: int = 0
    deadline_cycle: int = 0
    transaction: int = field(default=0, repr=False)

    def result(self) -> float | int:
        """The value read (or written); raises :class:`SdoAbort` if aborted, RuntimeError if pending."""
        if not self.done:
            raise RuntimeError(f"SDO 0x{self.index:04X}/{self.subindex} on node {self.node_id} "
                               "is still pending: run more bus cycles")
        if self.abort_code:
            raise SdoAbort(self.node_id, self.index, self.subindex, self.abort_code)
        if self.data_type in _INTEGER_RANGES:
            return int(self.value)
        return self.value
