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

Error signalling (DS 301 §6.5.2, as openPOWERLINK's MN runs it, ``dllkframe.c``
``handleErrorSignaling``): a CN starts with EC set (so that the MN sees it rebooted). The MN first
resets the CN's signalling: its StatusRequest SoA carries ER until a StatusResponse with EC set
answers a request sent with ER (at least one more than the first, whose answer may predate it), then
ER = 0 until a StatusResponse clears EC (the CN saw ER fall; after more than :data:`EC0_RETRIES`
answers still with EC, the reset starts over). From then on (:class:`ErrorSignalling` READY) the CN
toggles EN in its PRes (and StatusResponse) when it adds an entry; the MN, seeing EN differ from the
EA it last sent in the PReq, asks for a StatusResponse and then echoes EN as EA. A StatusResponse with
EC set while READY means the CN rebooted: the reset starts over.
"""
from __future__ import annotations

import struct
from enum import IntEnum
from typing import NamedTuple

from drivers.powerlink import frames
from drivers.powerlink.frames import InconsistentFrame, TruncatedFrame
from drivers.powerlink.nmt import NMT_STATE_CODES

FLAG1_EC = 0x08
EC0_RETRIES = 10                        # openPOWERLINK's ERRSIG_WAIT_EC0_TIMEOUT_CNT
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


class Signalling(IntEnum):
    """The MN's error-signalling state for one CN (openPOWERLINK's ``STATE_MN_ERRSIG_INIT_*``)."""

    WAIT_EC1 = 0        # StatusRequests carry ER until the CN answers with EC
    WAIT_EC0 = 1        # ER = 0 until the CN answers with EC cleared
    READY = 2           # EN/EA signalling runs


class ErrorSignalling:
    """The MN's side of one CN's exception signalling (module docstring): the ER flag its
    StatusRequest SoA carries and the state after each StatusResponse."""

    __slots__ = ("answers", "state")

    def __init__(self) -> None:
        self.restart()

    def restart(self) -> None:
        """Reset the CN's signalling from the next StatusRequest on (its boot, or EC seen while READY)."""
        self.state = Signalling.WAIT_EC1
        self.answers = 0

    @property
    def er(self) -> int:
        """The ER bit of the next StatusRequest SoA to this CN."""
        return frames.FLAG1_ER if self.state == Signalling.WAIT_EC1 else 0

    def response(self, flags1: int) -> bool:
        """Take a StatusResponse's ``flags1``; whether another StatusRequest is needed."""
        ec = bool(flags1 & FLAG1_EC)
        if self.state == Signalling.WAIT_EC1:
            if ec and self.answers:
                self.state, self.answers = Signalling.WAIT_EC0, 0
            else:
                self.answers += 1
            return True
        if self.state == Signalling.WAIT_EC0:
            if not ec:
                self.state = Signalling.READY
                return False
            if self.answers > EC0_RETRIES:
                self.restart()
            else:
                self.answers += 1
            return True
        if ec:
            self.restart()
            return True
        return False


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
