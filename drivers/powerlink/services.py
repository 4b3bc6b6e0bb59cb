"""ASnd service payloads (EPSG DS 301 §7.3): NMTCommand (IdentResponse: :mod:`~drivers.powerlink.ident`,
StatusResponse: :mod:`~drivers.powerlink.status`, SDO: :mod:`drivers.powerlink.sdo`).

Layouts (little-endian, payload offset 0 = frame byte 18)::

    NMTCommand     0 NMTCommandId | 1 res | 2 command data (32 bytes, unused here)     (34 bytes)
"""
from __future__ import annotations

import struct

from drivers.powerlink import frames
from drivers.powerlink.frames import InconsistentFrame, TruncatedFrame
from drivers.powerlink.nmt import NMT_COMMAND_CODES

NMT_COMMAND = struct.Struct("<BB32x")



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
