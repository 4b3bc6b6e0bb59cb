"""StatusResponse and error signalling (EPSG DS 301 §7.3.3.3 StatusResponse, §6.5 error signalling).

A CN answers a StatusRequest (SoA service 2) with an ASnd (ServiceID 2) to the MN. Payload from
frame byte 18, little-endian::

      0  1 flags1: EN 0x10 (exception new), EC 0x08 (exception clear)
      1  1 flags2: PR << 3 | RS
      2  1 NMTStatus
      3  3 reserved
      6  8 StaticErrorBitField: byte 0 the error register 0x1001, byte 1 reserved, 2..7 device specific
     14 20 x ENTRIES error entries: type u16, code u16, time stamp (NetTime s u32, ns u32), info u64

An entry's type holds its kind (bit 15: 1 status = an error active now, 0 history = one that
occurred), its mode (bits 12-13: 1 active, 2 cleared, 3 occurred) and its profile (bits 0-11:
2 POWERLINK communication, 0x192 = 402 the CiA 402 drive profile); status entries come first, and
an entry of type 0 ends the list.

Error signalling: the CN toggles EN in its PRes (and StatusResponse) when it adds an entry; the MN,
seeing EN differ from the EA it last sent in the PReq, asks for a StatusResponse and then echoes
EN as EA. ER in a SoA addressed to the CN resets its signalling: the CN clears EN and answers EC.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from drivers.powerlink import frames
from drivers.powerlink.frames import InconsistentFrame, TruncatedFrame
from drivers.powerlink.nmt import NMT_STATE_CODES

FLAG1_EC = 0x08
HEAD = struct.Struct("<BBB3xQ")
ENTRY = struct.Struct("<HHIIQ")
ENTRIES = 13
SIZE = HEAD.size + ENTRIES * ENTRY.size
TYPE_STATUS = 0x8000
MODE_ACTIVE = 0x1000
MODE_OCCURRED = 0x3000
MODE_MASK = 0x3000
PROFILE_MASK = 0x0FFF
PROFILE_POWERLINK = 0x002
PROFILE_CIA402 = 0x192
PRIORITY_GENERIC = 3                    # flags2 PR of a generic asynchronous request (DS 301 §4.2.4.1.2)
PRIORITY_NMT = 7


class ErrorEntry(NamedTuple):
    """One error entry: its type word, error code, NetTime (s, ns) and additional information."""

    type: int
    code: int
    seconds: int
    nanoseconds: int
    info: int = 0

    @property
    def active(self) -> bool:
        return bool(self.type & TYPE_STATUS)


class StatusResponse(NamedTuple):
    flags1: int
    flags2: int
    nmt_status: int
    static_errors: int
    entries: tuple[ErrorEntry, ...]


def profile_of(code: int) -> int:
    """The profile of an error ``code``: POWERLINK's DLL errors (0x8100-0x82FF) or the CiA 402 drive's."""
    return PROFILE_POWERLINK if 0x8100 <= code < 0x8300 else PROFILE_CIA402


def status_frame(node_id: int) -> frames.TxFrame:
    """The ASnd a CN answers a StatusRequest with: to the MN, from ``node_id``."""
    return frames.asnd_frame(frames.MN_NODE_ID, node_id, frames.ServiceId.STATUS_RESPONSE, SIZE)


def write_status(buf: bytearray, flags1: int, flags2: int, nmt_status: int, static_errors: int,
                 entries) -> None:
    """A StatusResponse payload: at most :data:`ENTRIES` ``entries`` (status ones first), the rest zero."""
    HEAD.pack_into(buf, frames.ASND_OFFSET, flags1, flags2, nmt_status, static_errors)
    at = frames.ASND_OFFSET + HEAD.size
    for k in range(ENTRIES):
        values = entries[k] if k < len(entries) else (0, 0, 0, 0, 0)
        ENTRY.pack_into(buf, at + k * ENTRY.size, *values)


def read_status(data, fcs: bool = True) -> StatusResponse:
    """The :class:`StatusResponse` of an ASnd that :func:`~drivers.powerlink.frames.read_asnd` validated."""
    room = frames.asnd_room(data, fcs)
    if room < HEAD.size:
        raise TruncatedFrame(f"StatusResponse needs at least {HEAD.size} payload bytes, the ASnd carries {room}")
    flags1, flags2, nmt, static = HEAD.unpack_from(data, frames.ASND_OFFSET)
    if nmt not in NMT_STATE_CODES:
        raise InconsistentFrame(f"StatusResponse NMTStatus 0x{nmt:02X} is not an NMT state")
    entries = []
    at = frames.ASND_OFFSET + HEAD.size
    for k in range(min(ENTRIES, (room - HEAD.size) // ENTRY.size)):
        entry = ErrorEntry(*ENTRY.unpack_from(data, at + k * ENTRY.size))
        if not entry.type:
            break
        if entry.nanoseconds >= 1_000_000_000:
            raise InconsistentFrame(f"StatusResponse error entry {k} time stamp has {entry.nanoseconds} ns")
        entries.append(entry)
    return StatusResponse(flags1, flags2, nmt, static, tuple(entries))
