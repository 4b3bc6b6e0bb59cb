"""The SDO command layer's frame (EPSG DS 301 §6.3.2.4.1) and its segmentation.

After the 4-byte sequence-layer header, every command carries an 8-byte fixed header::

    0  reserved
    1  transaction id (the client changes it with every new command; the response repeats it)
    2  flags: 0x80 response, 0x40 abort, segmentation << 4 (0 expedited, 1 initiate, 2 segment,
       3 complete)
    3  command id: 0x01 WriteByIndex, 0x02 ReadByIndex
    4  segment size u16: the command data bytes after this header
    6  reserved (2 bytes)
    8  command data: initiate segments begin with the data size u32 (every command-data byte of
       the transfer, this field included, as openPOWERLINK counts it)

WriteByIndex's command data is index u16, subindex u8, reserved u8, then the value; ReadByIndex's
request is the same 4 bytes, its response the value. An abort carries the abort code u32.
"""
from __future__ import annotations

import struct

HEADER = struct.Struct("<xBBBHxx")
HEADER_SIZE = HEADER.size
ADDRESS = struct.Struct("<HBx")             # index, subindex, reserved
DATA_SIZE = struct.Struct("<I")
ABORT_CODE = struct.Struct("<I")

NIL = 0x00
WRITE_BY_INDEX = 0x01
READ_BY_INDEX = 0x02
COMMANDS = {WRITE_BY_INDEX: "WriteByIndex", READ_BY_INDEX: "ReadByIndex"}

RESPONSE = 0x80
ABORT = 0x40
SEGMENTATION = 0x30
EXPEDITED, INITIATE, SEGMENT, COMPLETE = 0x00, 0x10, 0x20, 0x30

SEGMENT_SIZE = 256      # command data per frame (openPOWERLINK: a 314-byte frame less 58 header bytes)


def command(transaction: int, flags: int, command_id: int, data: bytes) -> bytes:
    return HEADER.pack(transaction, flags, command_id, len(data)) + data


def parse(payload: bytes) -> tuple[int, int, int, bytes]:
    """(transaction id, flags, command id, command data) of a command-layer payload (padding cut
    by the segment size)."""
    if len(payload) < HEADER_SIZE:
        raise ValueError(f"an SDO command needs its {HEADER_SIZE}-byte header, got {len(payload)} bytes")
    transaction, flags, command_id, size = HEADER.unpack_from(payload)
    if HEADER_SIZE + size > len(payload):
        raise ValueError(f"SDO segment size {size} exceeds the {len(payload) - HEADER_SIZE} bytes carried")
    return transaction, flags, command_id, bytes(payload[HEADER_SIZE:HEADER_SIZE + size])


def segments(transaction: int, flags: int, command_id: int, data: bytes) -> list[bytes]:
    """The commands carrying ``data``: one expedited, or initiate (with the data size), segments
    and complete when it exceeds :data:`SEGMENT_SIZE`."""
    if len(data) <= SEGMENT_SIZE:
        return [command(transaction, flags | EXPEDITED, command_id, data)]
    first = SEGMENT_SIZE - DATA_SIZE.size
    out = [command(transaction, flags | INITIATE, command_id, DATA_SIZE.pack(len(data) + DATA_SIZE.size) + data[:first])]
    for at in range(first, len(data), SEGMENT_SIZE):
        last = at + SEGMENT_SIZE >= len(data)
        out.append(command(transaction, flags | (COMPLETE if last else SEGMENT), command_id,
                           data[at:at + SEGMENT_SIZE]))
    return out


class Reassembly:
    """The command data of one transfer, from its expedited command or its segments."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.expected = -1

    def add(self, flags: int, data: bytes) -> bytes | None:
        """The whole command data once the last segment arrives, else None; ValueError when the
        segments do not add up to the announced data size."""
        kind = flags & SEGMENTATION
        if kind == EXPEDITED:
            self.parts, self.expected = [], -1
            return data
        if kind == INITIATE:
            if len(data) < DATA_SIZE.size:
                raise ValueError("an initiate segment lacks its data size")
            self.expected = DATA_SIZE.unpack_from(data)[0] - DATA_SIZE.size
            self.parts = [data[DATA_SIZE.size:]]
            return None
        if self.expected < 0:
            raise ValueError("an SDO segment arrived without its initiate segment")
        self.parts.append(data)
        if kind == SEGMENT:
            return None
        whole = b"".join(self.parts)
        expected, self.parts, self.expected = self.expected, [], -1
        if len(whole) != expected:
            raise ValueError(f"SDO segments carried {len(whole)} bytes, the initiate announced {expected}")
        return whole
