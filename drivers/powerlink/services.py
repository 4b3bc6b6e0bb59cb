"""ASnd service payloads (EPSG DS 301 §7.3): IdentResponse and NMTCommand (SDO: :mod:`drivers.powerlink.sdo`).

Layouts (little-endian, payload offset 0 = frame byte 18)::

    IdentResponse  0 flags1 | 1 flags2 | 2 NMTStatus | 3 ident flags | 4 EPL profile version | 5 res
                   | 6 FeatureFlags u32 | 10 MTU u16 | 12 PollInSize u16 | 14 PollOutSize u16
                   | 16 ResponseTime u32 | 20 res u16 | 22 DeviceType u32 | 26 VendorId u32
                   | 30 ProductCode u32                                                 (34 bytes)
    NMTCommand     0 NMTCommandId | 1 res | 2 command data (32 bytes, unused here)     (34 bytes)
"""
from __future__ import annotations

import struct

from drivers.powerlink import frames
from drivers.powerlink.frames import InconsistentFrame, TruncatedFrame
from drivers.powerlink.nmt import NMT_COMMAND_CODES, NMT_STATE_CODES

IDENT = struct.Struct("<BBBBBxIHHHIxxIII")
NMT_COMMAND = struct.Struct("<BB32x")

DEVICE_TYPE_SERVO_402 = 0x00020192
VENDOR_ID = 0x0000_0000
PRODUCT_CODE = 0x0000_8056


def _room(data, size: int, what: str, fcs: bool) -> None:
    room = len(data) - frames.ASND_OFFSET - frames.FCS_SIZE * fcs
    if room < size:
        raise TruncatedFrame(f"{what} needs {size} payload bytes, the ASnd carries {room}")


def write_ident(buf: bytearray, nmt_status: int, poll_in: int, poll_out: int) -> None:
    IDENT.pack_into(buf, frames.ASND_OFFSET, 0, 0, nmt_status, 0, frames.EPL_VERSION, 0, 1500,
                    poll_in, poll_out, 0, DEVICE_TYPE_SERVO_402, VENDOR_ID, PRODUCT_CODE)


def read_ident(data, fcs: bool = True) -> tuple[int, int]:
    """(NMTStatus, DeviceType) of a validated IdentResponse ASnd."""
    _room(data, IDENT.size, "IdentResponse", fcs)
    fields = IDENT.unpack_from(data, frames.ASND_OFFSET)
    if fields[2] not in NMT_STATE_CODES:
        raise InconsistentFrame(f"IdentResponse NMTStatus 0x{fields[2]:02X} is not an NMT state")
    return fields[2], fields[10]


def write_nmt_command(buf: bytearray, command: int) -> None:
    NMT_COMMAND.pack_into(buf, frames.ASND_OFFSET, command, 0)


def read_nmt_command(data, fcs: bool = True) -> int:
    """The NMTCommandId of a validated NMTCommand ASnd."""
    _room(data, NMT_COMMAND.size, "NMTCommand", fcs)
    command = data[frames.ASND_OFFSET]
    if command not in NMT_COMMAND_CODES:
        raise InconsistentFrame(f"NMTCommandId 0x{command:02X} is not an NMT state command")
    return command
