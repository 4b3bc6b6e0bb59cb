"""SDO-like service channel, server side: the object dictionary (abort codes and request handles:
drivers.service_channel)."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from drivers.service_channel import ABORT_NO_OBJECT, ABORT_READ_ONLY, ABORT_VALUE_RANGE, INTEGER_RANGES, REAL32, REAL64

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
        low, high = INTEGER_RANGES.get(entry.data_type, (entry.minimum, entry.maximum))
        low, high = max(low, entry.minimum), min(high, entry.maximum)
        integral = entry.data_type not in (REAL32, REAL64)
        if not (low <= value <= high) or (integral and value != int(value)):
            return ABORT_VALUE_RANGE, entry.data_type
        entry.write(int(value) if integral else value)
        return 0, entry.data_type
