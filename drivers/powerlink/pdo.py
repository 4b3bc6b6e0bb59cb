"""Declared PDO mappings of the two-axis drive (CiA 402 objects, DS 301 §6.4 PDO payload).

Each channel maps the same CiA 402 objects; channel 1 uses the object index + 0x800 (CiA 402
multi-axis offset). The objects carry the data types of IEC 61800-7-201 (CiA 402): controlword
and statusword UNSIGNED16, modes INTEGER8, positions INTEGER32 in encoder increments, velocities
INTEGER32 in increments/s, the torque offset INTEGER16 per mille of the rated torque (0x6076),
the actual current INTEGER16 per mille of the rated current (0x6075). An entry's ``scale`` names
the per-axis factor (:data:`SCALES`, :func:`drivers.powerlink.scaling.scale_table`) that turns the
SI value of the HAL (motor rad, rad/s, N·m, A) into its integer. Each TPDO channel also carries
the drive's auxiliary sensor input (manufacturer-specific object 0x2400, three REAL32: the foot
IMU's specific force in R0 axes, m/s², on the channel its bus YAML axis declares ``sensor: imu``;
NaN where nothing is wired). The payload is the channels' entries back to back, little-endian,
described by one ``struct`` format.

The mappings below are the one declaration of the payload layout: the ``struct`` formats, each
field's byte offset, size and integer range within its channel (:meth:`PdoMapping.offset`,
:meth:`PdoMapping.field`, exported as the ``RPDO_*`` / ``TPDO_*`` constants the Numba fast paths
use) and the object list all derive from them.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from drivers.service_channel import (FORMATS, INTEGER8, INTEGER16, INTEGER32, INTEGER_RANGES, REAL32, REAL64,
                                     SIZES, UNSIGNED8, UNSIGNED16, UNSIGNED32)

AXIS_OFFSET = 0x800

__all__ = ["INTEGER8", "INTEGER16", "INTEGER32", "REAL32", "REAL64", "UNSIGNED8", "UNSIGNED16", "UNSIGNED32",
           "SCALES", "PdoEntry", "PdoLayoutError", "PdoMapping", "RPDO", "TPDO"]

SCALES = ("position", "velocity", "torque", "current")
"""The per-axis scale factors, by column of the scale table: increments per motor rad (positions),
increments/s per rad/s (velocities), per mille per N·m of the rated torque, per mille per A of
the rated current."""


@dataclass(frozen=True)
class PdoEntry:
    name: str
    index: int
    subindex: int
    data_type: int
    scale: str | None = None      # the SCALES factor from the SI value to the integer; None: carried as is

    def __post_init__(self) -> None:
        if self.scale is not None and (self.scale not in SCALES or self.data_type not in INTEGER_RANGES):
            raise PdoLayoutError(f"{self.name}: a scaled entry needs an integer data type and one of "
                                 f"{', '.join(SCALES)}, got 0x{self.data_type:04X} scaled by {self.scale!r}")

    @property
    def fmt(self) -> str:
        return FORMATS[self.data_type][1:]        # without the byte order: the mapping's format has it

    @property
    def size(self) -> int:
        """Bytes on the wire."""
        return SIZES[self.data_type]


class PdoLayoutError(ImportError):
    """A fast path assumes a field type that the declared mapping does not have."""


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
        self._entries = {e.name: e for e in entries}
        self._offsets: dict[str, int] = {}
        at = 0
        for e in entries:
            self._offsets[e.name] = at
            at += e.size

    def offset(self, name: str) -> int:
        """Byte offset of field ``name`` within one channel's payload."""
        try:
            return self._offsets[name]
        except KeyError:
            raise KeyError(f"{self.name} maps no field {name!r} (fields: {', '.join(self._offsets)})") from None

    def entry(self, name: str) -> PdoEntry:
        """The entry of field ``name``."""
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"{self.name} maps no field {name!r} (fields: {', '.join(self._offsets)})") from None

    def field(self, name: str) -> tuple[int, int, int, int, int]:
        """(offset, size, lowest, highest, scale column) of the integer field ``name``: where a
        Numba kernel finds it in a channel, the range it saturates to and the column of the scale
        table it is scaled by (-1: none)."""
        entry = self._entries.get(name)
        if entry is None or entry.data_type not in INTEGER_RANGES:
            raise PdoLayoutError(f"{self.name} maps no integer field {name!r}")
        low, high = INTEGER_RANGES[entry.data_type]
        column = -1 if entry.scale is None else SCALES.index(entry.scale)
        return self.offset(name), entry.size, low, high, column

    def require(self, user: str, **types: int) -> None:
        """Raise :class:`PdoLayoutError` unless each named field has the given data type (what
        ``user``, a fast path that reads or writes the fields by offset, assumes)."""
        for name, data_type in types.items():
            entry = self._entries.get(name)
            if entry is None or entry.data_type != data_type:
                raise PdoLayoutError(f"{user} assumes {self.name} field {name!r} of data type 0x{data_type:04X}; "
                                     f"the mapping declares {'no such field' if entry is None else hex(entry.data_type)}")

    def objects(self) -> list[tuple[int, int, int, str]]:
        """(channel, index, subindex, name) of every mapped object in payload order."""
        return [(ch, e.index + ch * AXIS_OFFSET, e.subindex, e.name)
                for ch in range(self.channels) for e in self.entries]


RPDO = PdoMapping("RPDO (PReq, MN -> drive)", (
    PdoEntry("controlword", 0x6040, 0, UNSIGNED16),
    PdoEntry("modes_of_operation", 0x6060, 0, INTEGER8),
    PdoEntry("target_position", 0x607A, 0, INTEGER32, "position"),
    PdoEntry("target_velocity", 0x60FF, 0, INTEGER32, "velocity"),
    PdoEntry("torque_offset", 0x60B2, 0, INTEGER16, "torque"),
))

TPDO = PdoMapping("TPDO (PRes, drive -> MN)", (
    PdoEntry("statusword", 0x6041, 0, UNSIGNED16),
    PdoEntry("modes_of_operation_display", 0x6061, 0, INTEGER8),
    PdoEntry("position_actual", 0x6064, 0, INTEGER32, "position"),
    PdoEntry("velocity_actual", 0x606C, 0, INTEGER32, "velocity"),
    PdoEntry("current_actual", 0x6078, 0, INTEGER16, "current"),
    PdoEntry("error_code", 0x603F, 0, UNSIGNED16),
    PdoEntry("aux_input_x", 0x2400, 1, REAL32),
    PdoEntry("aux_input_y", 0x2400, 2, REAL32),
    PdoEntry("aux_input_z", 0x2400, 3, REAL32),
))

# Fields within one channel (DS 301 §6.4 payload), derived from the declarations above: byte
# offsets of the unscaled ones, (offset, size, lowest, highest, scale column) of the scaled ones.
RPDO_CONTROLWORD = RPDO.offset("controlword")
RPDO_MODE = RPDO.offset("modes_of_operation")
RPDO_TARGET_POSITION = RPDO.field("target_position")
RPDO_TARGET_VELOCITY = RPDO.field("target_velocity")
RPDO_TORQUE_OFFSET = RPDO.field("torque_offset")
TPDO_STATUSWORD = TPDO.offset("statusword")
TPDO_MODE_DISPLAY = TPDO.offset("modes_of_operation_display")
TPDO_POSITION = TPDO.field("position_actual")
TPDO_VELOCITY = TPDO.field("velocity_actual")
TPDO_CURRENT = TPDO.field("current_actual")
TPDO_ERROR_CODE = TPDO.offset("error_code")
AUX_INPUTS = ("aux_input_x", "aux_input_y", "aux_input_z")
TPDO_AUX = tuple(TPDO.offset(n) for n in AUX_INPUTS)
