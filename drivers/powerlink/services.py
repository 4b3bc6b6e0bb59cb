"""ASnd service payloads (EPSG DS 301 §7.3): NMTCommand and an SDO-like channel (IdentResponse:
:mod:`~drivers.powerlink.ident`, StatusResponse: :mod:`~drivers.powerlink.status`).

Layouts (little-endian, payload offset 0 = frame byte 18)::

    NMTCommand     0 NMTCommandId | 1 res | 2 command data (32 bytes, unused here)     (34 bytes)
    SDO            0 transaction id | 1 command (0x01 write, 0x02 read by index) | 2 flags
                   (0x80 response, 0x40 abort) | 3 data type | 4 index u16 | 6 subindex | 7 res
                   | 8 abort code u32 | 12 value REAL64                                 (20 bytes)

The SDO channel is "SDO-like": one expedited request/response per transaction, without the
sequence layer of DS 301 §6.3; values travel as REAL64 with their CANopen data type code.
"""
from __future__ import annotations

import struct

from drivers.identity import DEVICE_TYPE_SERVO_402  # noqa: F401 (drivers.sim.drive reads it here)
from drivers.powerlink import frames
from drivers.powerlink.frames import InconsistentFrame, TruncatedFrame
from drivers.powerlink.nmt import NMT_COMMAND_CODES

NMT_COMMAND = struct.Struct("<BB32x")
SDO = struct.Struct("<BBBBHBxId")

SDO_WRITE = 0x01
SDO_READ = 0x02
SDO_RESPONSE = 0x80
SDO_ABORT = 0x40



def _room(data, size: int, what: str, fcs: bool) -> None:
    room = frames.asnd_room(data, fcs)
    if room < size:
        raise TruncatedFrame(f"{what} needs {size} payload bytes, the ASnd carries {room}")


def write_nmt_command(buf: bytearray, command: int) -> None:
    NMT_COMMAND.pack_into(buf, frames.ASND_OFFSET, command, 0)


def read_nmt_command(data, fcs: bool = True) -> int:
    """The NMTCommandId of a validated NMTCommand ASnd."""
    _room(data, NMT_COMMAND.size, "NMTCommand", fcs)
    command = data[frames.ASND_OFFSET]
    if command not in NMT_COMMAND_CODES:
        raise InconsistentFrame(f"NMTCommandId 0x{command:02X} is not an NMT state command")
    return command


def write_sdo(buf: bytearray, transaction: int, command: int, flags: int, data_type: int,
              index: int, subindex: int, abort: int, value: float) -> None:
    SDO.pack_into(buf, frames.ASND_OFFSET, transaction, command, flags, data_type, index, subindex,
                  abort, value)


def read_sdo(data, fcs: bool = True) -> tuple[int, int, int, int, int, int, int, float]:
    """(transaction, command, flags, data type, index, subindex, abort code, value) of an SDO ASnd."""
    _room(data, SDO.size, "SDO", fcs)
    fields = SDO.unpack_from(data, frames.ASND_OFFSET)
    if fields[1] not in (SDO_READ, SDO_WRITE):
        raise InconsistentFrame(f"SDO command 0x{fields[1]:02X} is neither read (0x02) nor write (0x01)")
    return fields
