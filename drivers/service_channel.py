"""The service channel as the HAL sees it: CANopen data types (DS 301 Table 48 / CiA 301), SDO
abort codes (CiA 301 §7.2.4.3.17) and the handle of one transfer, completed by later bus cycles."""
from __future__ import annotations

from dataclasses import dataclass, field

# CANopen data type codes
INTEGER8 = 0x0002
INTEGER16 = 0x0003
INTEGER32 = 0x0004
UNSIGNED8 = 0x0005
UNSIGNED16 = 0x0006
UNSIGNED32 = 0x0007
REAL32 = 0x0008
REAL64 = 0x0011

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

INTEGER_RANGES = {INTEGER8: (-128, 127), INTEGER16: (-0x8000, 0x7FFF), INTEGER32: (-0x8000_0000, 0x7FFF_FFFF),
                  UNSIGNED8: (0, 0xFF), UNSIGNED16: (0, 0xFFFF),
                  UNSIGNED32: (0, 0xFFFF_FFFF)}


class SdoAbort(RuntimeError):
    """An SDO transfer that the server aborted (or that timed out)."""

    def __init__(self, node_id: int, index: int, subindex: int, code: int) -> None:
        self.node_id, self.index, self.subindex, self.code = node_id, index, subindex, code
        text = ABORT_TEXT.get(code, "unknown abort code")
        super().__init__(f"SDO 0x{index:04X}/{subindex} on node {node_id} aborted: "
                         f"0x{code:08X} {text}")


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
        if self.data_type in INTEGER_RANGES:
            return int(self.value)
        return self.value
