"""The service channel as the HAL sees it: CANopen data types (DS 301 §6.1.4, Table 48 / CiA 301
§7.1), SDO abort codes (DS 301 §6.3.2.4.2 Table 64 / CiA 301 §7.2.4.3.17) and the handle of one
transfer, completed by later bus cycles."""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

# CANopen data type codes (the object dictionary's entries 0x0001..0x001B)
INTEGER8 = 0x0002
INTEGER16 = 0x0003
INTEGER32 = 0x0004
UNSIGNED8 = 0x0005
UNSIGNED16 = 0x0006
UNSIGNED32 = 0x0007
REAL32 = 0x0008
VISIBLE_STRING = 0x0009
DOMAIN = 0x000F
REAL64 = 0x0011
INTEGER64 = 0x0015
UNSIGNED64 = 0x001B

# Fixed-size types, little-endian (DS 301 §6.1.4.1: "transmitted least significant byte first").
FORMATS = {INTEGER8: "<b", INTEGER16: "<h", INTEGER32: "<i", INTEGER64: "<q", UNSIGNED8: "<B",
           UNSIGNED16: "<H", UNSIGNED32: "<I", UNSIGNED64: "<Q", REAL32: "<f", REAL64: "<d"}
SIZES = {code: struct.calcsize(fmt) for code, fmt in FORMATS.items()}
INTEGER_RANGES = {code: ((-1 << (8 * SIZES[code] - 1), (1 << (8 * SIZES[code] - 1)) - 1) if fmt[1].islower()
                         else (0, (1 << (8 * SIZES[code])) - 1))
                  for code, fmt in FORMATS.items() if fmt[1] not in "fd"}
TYPE_NAMES = {INTEGER8: "i8", INTEGER16: "i16", INTEGER32: "i32", INTEGER64: "i64", UNSIGNED8: "u8",
              UNSIGNED16: "u16", UNSIGNED32: "u32", UNSIGNED64: "u64", REAL32: "real32", REAL64: "real64",
              VISIBLE_STRING: "string", DOMAIN: "domain"}
TYPE_CODES = {name: code for code, name in TYPE_NAMES.items()}


class TypeMismatch(ValueError):
    """A value that the data type cannot carry (out of range, wrong kind, wrong length)."""


def encode(data_type: int, value) -> bytes:
    """``value`` as the bytes of ``data_type`` on the wire."""
    if data_type == VISIBLE_STRING:
        if not isinstance(value, str):
            raise TypeMismatch(f"a VISIBLE_STRING takes a str, not {type(value).__name__}")
        return value.encode("ascii")
    if data_type == DOMAIN:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeMismatch(f"a DOMAIN takes bytes, not {type(value).__name__}")
        return bytes(value)
    fmt = FORMATS.get(data_type)
    if fmt is None:
        raise TypeMismatch(f"data type 0x{data_type:04X} is not one this service channel carries")
    bounds = INTEGER_RANGES.get(data_type)
    if bounds is not None:
        if isinstance(value, bool) or int(value) != value:
            raise TypeMismatch(f"{TYPE_NAMES[data_type]} takes an integer, not {value!r}")
        if not bounds[0] <= value <= bounds[1]:
            raise TypeMismatch(f"{value} is outside {TYPE_NAMES[data_type]}'s range {bounds[0]}..{bounds[1]}")
        return struct.pack(fmt, int(value))
    try:
        return struct.pack(fmt, float(value))
    except (OverflowError, TypeError, ValueError) as exc:
        raise TypeMismatch(f"{TYPE_NAMES[data_type]} cannot carry {value!r}") from exc


def decode(data_type: int, data: bytes):
    """The value of ``data_type`` carried by ``data`` (its length must match a fixed-size type)."""
    if data_type == VISIBLE_STRING:
        return bytes(data).split(b"\0", 1)[0].decode("ascii", "replace")
    if data_type == DOMAIN:
        return bytes(data)
    fmt = FORMATS.get(data_type)
    if fmt is None:
        raise TypeMismatch(f"data type 0x{data_type:04X} is not one this service channel carries")
    if len(data) != SIZES[data_type]:
        raise TypeMismatch(f"{TYPE_NAMES[data_type]} is {SIZES[data_type]} bytes, got {len(data)}")
    return struct.unpack(fmt, data)[0]


ABORT_TIMEOUT = 0x0504_0000
ABORT_UNKNOWN_COMMAND = 0x0504_0001
ABORT_BLOCK_SIZE = 0x0504_0002
ABORT_SEQUENCE_NUMBER = 0x0504_0003
ABORT_OUT_OF_MEMORY = 0x0504_0005
ABORT_UNSUPPORTED_ACCESS = 0x0601_0000
ABORT_WRITE_ONLY = 0x0601_0001
ABORT_READ_ONLY = 0x0601_0002
ABORT_NO_OBJECT = 0x0602_0000
ABORT_NOT_MAPPABLE = 0x0604_0041
ABORT_TYPE_MISMATCH = 0x0607_0010
ABORT_TYPE_TOO_LONG = 0x0607_0012
ABORT_TYPE_TOO_SHORT = 0x0607_0013
ABORT_NO_SUBINDEX = 0x0609_0011
ABORT_VALUE_RANGE = 0x0609_0030
ABORT_VALUE_TOO_HIGH = 0x0609_0031
ABORT_VALUE_TOO_LOW = 0x0609_0032
ABORT_GENERAL = 0x0800_0000
ABORT_DEVICE_STATE = 0x0800_0022

# DS 301 §6.3.2.4.2 Table 64 (the SDO abort codes it shares with CiA 301).
ABORT_TEXT = {
    ABORT_TIMEOUT: "SDO protocol timed out",
    ABORT_UNKNOWN_COMMAND: "command identifier not valid or unknown",
    ABORT_BLOCK_SIZE: "invalid block size",
    ABORT_SEQUENCE_NUMBER: "invalid sequence number",
    0x0504_0004: "CRC error",
    ABORT_OUT_OF_MEMORY: "out of memory",
    ABORT_UNSUPPORTED_ACCESS: "unsupported access to an object",
    ABORT_WRITE_ONLY: "attempt to read a write-only object",
    ABORT_READ_ONLY: "attempt to write a read-only object",
    ABORT_NO_OBJECT: "object does not exist in the object dictionary",
    ABORT_NOT_MAPPABLE: "object cannot be mapped to the PDO",
    0x0604_0042: "the number and length of the objects to be mapped would exceed the PDO length",
    0x0604_0043: "general parameter incompatibility",
    0x0604_0047: "general internal incompatibility in the device",
    0x0606_0000: "access failed due to a hardware error",
    ABORT_TYPE_MISMATCH: "data type does not match, length of service parameter does not match",
    ABORT_TYPE_TOO_LONG: "data type does not match, length of service parameter too high",
    ABORT_TYPE_TOO_SHORT: "data type does not match, length of service parameter too low",
    ABORT_NO_SUBINDEX: "subindex does not exist",
    ABORT_VALUE_RANGE: "value range of parameter exceeded",
    ABORT_VALUE_TOO_HIGH: "value of parameter written too high",
    ABORT_VALUE_TOO_LOW: "value of parameter written too low",
    0x0609_0036: "maximum value is less than minimum value",
    ABORT_GENERAL: "general error",
    0x0800_0020: "data cannot be transferred or stored to the application",
    0x0800_0021: "data cannot be transferred or stored because of local control",
    ABORT_DEVICE_STATE: "data cannot be transferred or stored because of the present device state",
    0x0800_0023: "object dictionary dynamic generation failed or no object dictionary present",
    0x0800_0024: "EDS, DCF or concise DCF data set empty",
}


def abort_text(code: int) -> str:
    """``0x06020000 object does not exist in the object dictionary`` (DS 301's name for ``code``)."""
    return f"0x{code:08X} {ABORT_TEXT.get(code, 'unknown abort code')}"


class SdoAbort(RuntimeError):
    """An SDO transfer that the server aborted (or that timed out)."""

    def __init__(self, node_id: int, index: int, subindex: int, code: int, write: bool = False) -> None:
        self.node_id, self.index, self.subindex, self.code = node_id, index, subindex, code
        super().__init__(f"node {node_id}: SDO {'write' if write else 'read'} 0x{index:04X}/{subindex} "
                         f"aborted: {abort_text(code)}")


SDO_WRITE = 0x01        # command layer WriteByIndex
SDO_READ = 0x02         # command layer ReadByIndex


@dataclass
class SdoRequest:
    """Handle of one SDO transfer; completed by the managing node during later bus cycles.

    A write carries ``value`` encoded as ``data_type``; a read returns the bytes the server sent,
    decoded as ``data_type`` when one is given (else: the raw bytes, a DOMAIN)."""

    node_id: int
    command: int
    index: int
    subindex: int
    value: object = None
    data_type: int = DOMAIN
    done: bool = False
    abort_code: int = 0
    data: bytes = field(default=b"", repr=False)

    @property
    def write(self) -> bool:
        return self.command == SDO_WRITE

    def describe(self) -> str:
        """``node 3: SDO read 0x6041/0``: what the transfer was, for messages."""
        return f"node {self.node_id}: SDO {'write' if self.write else 'read'} 0x{self.index:04X}/{self.subindex}"

    def result(self):
        """The value read (or written); raises :class:`SdoAbort` if aborted, RuntimeError if pending."""
        if not self.done:
            raise RuntimeError(f"{self.describe()} is still pending: run more bus cycles")
        if self.abort_code:
            raise SdoAbort(self.node_id, self.index, self.subindex, self.abort_code, self.write)
        return self.value
