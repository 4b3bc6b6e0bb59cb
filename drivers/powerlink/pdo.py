"""Declared PDO mappings of the two-axis drive (CiA 402 objects, DS 301 §6.4 PDO payload).

Each channel maps the same CiA 402 objects; channel 1 uses the object index + 0x800 (CiA 402
multi-axis offset). Positions travel as REAL64 radians and speeds/currents/torques as REAL32
SI values (an SI choice made for this project instead of vendor increments). Each TPDO channel also
carries the drive's auxiliary sensor input (manufacturer-specific object 0x2400, three REAL32: the
foot IMU's specific force in R0 axes, m/s², on the channel its bus YAML axis declares ``sensor: imu``;
NaN where nothing is wired). The payload is the
channels' entries back to back, little-endian, described by one ``struct`` format.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

AXIS_OFFSET = 0x800

# CANopen data type codes (DS 301 Table 48 / CiA 301)
INTEGER8 = 0x0002
UNSIGNED8 = 0x0005
UNSIGNED16 = 0x0006
UNSIGNED32 = 0x0007
REAL32 = 0x0008
REAL64 = 0x0011

_FORMATS = {INTEGER8: "b", UNSIGNED8: "B", UNSIGNED16: "H", UNSIGNED32: "I", REAL32: "f", REAL64: "d"}


@dataclass(frozen=True)
class PdoEntry:
    name: str
    index: int
    subindex: int
    data_type: int

    @property
    def fmt(self) -> str:
        return _FORMATS[self.data_type]


class PdoMapping:
    """A PDO mapping: ``entries`` repeated for ``channels`` axes, packed with one Struct
    (``channel_struct``: the entries of one channel)."""

    def __init__(self, name: str, entries: tuple[PdoEntry, ...], channels: int = 2) -> None:
        self.name = name
        self.entries = entries
        self.channels = channels
        self.channel_struct = struct.Struct("<" + "".join(e.fmt for e in entries))
        self.struct = struct.Struct("<" + self.channel_struct.format[1:] * channels)
        self.size = self.struct.size
        self.per_channel = len(entries)

    def objects(self) -> list[tuple[int, int, int, str]]:
        """(channel, index, subindex, name) of every mapped object in payload order."""
        return [(ch, e.index + ch * AXIS_OFFSET, e.subindex, e.name)
                for ch in range(self.channels) for e in self.entries]


RPDO = PdoMapping("RPDO (PReq, MN -> drive)", (
    PdoEntry("controlword", 0x6040, 0, UNSIGNED16),
    PdoEntry("modes_of_operation", 0x6060, 0, INTEGER8),
    PdoEntry("target_position", 0x607A, 0, REAL64),
    PdoEntry("target_velocity", 0x60FF, 0, REAL32),
    PdoEntry("torque_offset", 0x60B2, 0, REAL32),
))

TPDO = PdoMapping("TPDO (PRes, drive -> MN)", (
    PdoEntry("statusword", 0x6041, 0, UNSIGNED16),
    PdoEntry("modes_of_operation_display", 0x6061, 0, INTEGER8),
    PdoEntry("position_actual", 0x6064, 0, REAL64),
    PdoEntry("velocity_actual", 0x606C, 0, REAL32),
    PdoEntry("current_actual", 0x6078, 0, REAL32),
    PdoEntry("error_code", 0x603F, 0, UNSIGNED16),
    PdoEntry("aux_input_x", 0x2400, 1, REAL32),
    PdoEntry("aux_input_y", 0x2400, 2, REAL32),
    PdoEntry("aux_input_z", 0x2400, 3, REAL32),
))
