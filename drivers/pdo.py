"""PDO mappings of a two-axis CiA 402 drive (DS 301 §6.4 PDO payload, §6.4.9 mapping parameters).

A drive's PDO channel is a list of CiA 402 objects taken from :data:`CATALOG` (IEC 61800-7-201
data types: controlword and statusword UNSIGNED16, modes INTEGER8, positions INTEGER32 in encoder
increments, velocities INTEGER32 in increments/s, the torque offset 0x60B2 and the actual torque
0x6077 INTEGER16 per mille of the rated torque 0x6076, the actual current INTEGER16 per mille of
the rated current 0x6075; the manufacturer-specific auxiliary input 0x2400/1..3, three REAL32: the
foot IMU's specific force on the channel its bus YAML axis declares ``sensor: imu``, NaN where
nothing is wired). Channel 1 maps the same objects at index + 0x800 (CiA 402 multi-axis offset);
the payload is the channels' entries back to back, little-endian. An entry's ``scale`` names the
per-axis factor (:data:`SCALES`, :func:`drivers.powerlink.scaling.scale_table`) that turns the SI
value of the HAL (motor rad, rad/s, N·m, A) into its integer.

Each CiA 402 node has one :class:`PdoMapping` per direction (:data:`RPDO`, :data:`TPDO` by
default, or the bus YAML's ``mapping:``, :func:`drive_mapping`). It is the one source of the
mapping entries the managing node downloads (0x1600/0x1A00, :mod:`drivers.powerlink.configuration`)
and of the field tables the Numba kernels read (:meth:`PdoMapping.table`); a simulated drive
builds the same tables from the entries in its object dictionary (:func:`field_table`).

A field table has one row per name of :data:`RPDO_FIELDS` / :data:`TPDO_FIELDS` (the rows the
kernels read by the ``R_*`` / ``T_*`` constants) and the columns of :data:`FIELD_COLUMNS`: byte
offset in the payload, size, lowest and highest integer, scale column (-1: carried as is). An
object the mapping does not carry has offset -1.
"""
from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from drivers.service_channel import (FORMATS, INTEGER8, INTEGER16, INTEGER32, INTEGER_RANGES, REAL32, REAL64,
                                     SIZES, TYPE_NAMES, UNSIGNED8, UNSIGNED16, UNSIGNED32)

AXIS_OFFSET = 0x800

__all__ = ["INTEGER8", "INTEGER16", "INTEGER32", "REAL32", "REAL64", "UNSIGNED8", "UNSIGNED16", "UNSIGNED32",
           "SCALES", "CATALOG", "PdoEntry", "PdoMappingError", "PdoMapping", "Mapped", "RPDO", "TPDO",
           "RPDO_FIELDS", "TPDO_FIELDS", "REQUIRED", "drive_mapping", "field_table"]

SCALES = ("position", "velocity", "torque", "current")
"""The per-axis scale factors, by column of the scale table: increments per motor rad (positions),
increments/s per rad/s (velocities), per mille per N·m of the rated torque, per mille per A of
the rated current."""


class PdoMappingError(ValueError):
    """A PDO mapping a CiA 402 drive cannot exchange (one sentence naming the object)."""


@dataclass(frozen=True)
class PdoEntry:
    name: str
    index: int
    subindex: int
    data_type: int
    scale: str | None = None      # the SCALES factor from the SI value to the integer; None: carried as is
    direction: str = "tpdo"       # "rpdo" (PReq, MN -> drive) or "tpdo" (PRes, drive -> MN)

    @property
    def fmt(self) -> str:
        return FORMATS[self.data_type][1:]        # without the byte order: the mapping's format has it

    @property
    def size(self) -> int:
        """Bytes on the wire."""
        return SIZES[self.data_type]

    @property
    def address(self) -> str:
        return f"0x{self.index:04X}/{self.subindex}"


CATALOG = {e.name: e for e in (
    PdoEntry("controlword", 0x6040, 0, UNSIGNED16, direction="rpdo"),
    PdoEntry("modes_of_operation", 0x6060, 0, INTEGER8, direction="rpdo"),
    PdoEntry("target_position", 0x607A, 0, INTEGER32, "position", "rpdo"),
    PdoEntry("target_velocity", 0x60FF, 0, INTEGER32, "velocity", "rpdo"),
    PdoEntry("torque_offset", 0x60B2, 0, INTEGER16, "torque", "rpdo"),
    PdoEntry("statusword", 0x6041, 0, UNSIGNED16),
    PdoEntry("modes_of_operation_display", 0x6061, 0, INTEGER8),
    PdoEntry("position_actual", 0x6064, 0, INTEGER32, "position"),
    PdoEntry("velocity_actual", 0x606C, 0, INTEGER32, "velocity"),
    PdoEntry("current_actual", 0x6078, 0, INTEGER16, "current"),
    PdoEntry("torque_actual", 0x6077, 0, INTEGER16, "torque"),
    PdoEntry("error_code", 0x603F, 0, UNSIGNED16),
    PdoEntry("aux_input_x", 0x2400, 1, REAL32),
    PdoEntry("aux_input_y", 0x2400, 2, REAL32),
    PdoEntry("aux_input_z", 0x2400, 3, REAL32),
)}
"""The CiA 402 objects of one channel a drive's PDO may map (channel 0's index), by name."""
_BY_ADDRESS = {(e.index, e.subindex): e for e in CATALOG.values()}

RPDO_FIELDS = tuple(n for n, e in CATALOG.items() if e.direction == "rpdo")
TPDO_FIELDS = tuple(n for n, e in CATALOG.items() if e.direction == "tpdo")
"""The rows of a field table, in this order (read by name through the constants below)."""
R_CONTROLWORD, R_MODE, R_TARGET_POSITION, R_TARGET_VELOCITY, R_TORQUE_OFFSET = (RPDO_FIELDS.index(n) for n in (
    "controlword", "modes_of_operation", "target_position", "target_velocity", "torque_offset"))
T_STATUSWORD, T_MODE_DISPLAY, T_POSITION, T_VELOCITY, T_CURRENT, T_TORQUE, T_ERROR_CODE = (TPDO_FIELDS.index(n) for n in (
    "statusword", "modes_of_operation_display", "position_actual", "velocity_actual", "current_actual",
    "torque_actual", "error_code"))
AUX_INPUTS = ("aux_input_x", "aux_input_y", "aux_input_z")
T_AUX = tuple(TPDO_FIELDS.index(n) for n in AUX_INPUTS)
FIELD_COLUMNS = ("offset", "size", "low", "high", "scale")
"""The columns of a field table (drivers.powerlink.scaling.OFFSET... name them for the kernels)."""

REQUIRED = {"rpdo": ("controlword", "modes_of_operation", "target_position"),
            "tpdo": ("statusword", "modes_of_operation_display", "position_actual")}
"""What the control needs in each direction; every other object is optional: a TPDO without
velocity_actual, current_actual or an aux input reads NaN there, without error_code 0; an RPDO
without target_velocity or torque_offset does not send it (the drive keeps its last value, 0)."""


class Mapped(NamedTuple):
    """One mapped object where the payload carries it (DS 301 §6.4.9.2 mapping entry, in bytes)."""

    index: int
    subindex: int
    offset: int          # [byte] in the payload
    data_type: int


def mapping_entry(index: int, subindex: int, offset_bits: int, length_bits: int) -> int:
    """A PDO mapping entry (DS 301 §6.4.9.2, UNSIGNED64): length in bits 63..48, offset in bits
    47..32, subindex 23..16, index 15..0 (offset and length in bits of the payload). What the managing
    node writes and what a controlled node reads back: :func:`unpack_mapping_entry`."""
    return length_bits << 48 | offset_bits << 32 | subindex << 16 | index


def unpack_mapping_entry(value: int) -> tuple[int, int, int, int]:
    """(index, subindex, offset_bits, length_bits) of a mapping entry (:func:`mapping_entry`)."""
    return value & 0xFFFF, (value >> 16) & 0xFF, (value >> 32) & 0xFFFF, value >> 48


def field_table(mapped: Iterable[Mapped], fields: Sequence[str], channel: int) -> np.ndarray:
    """The field table (module docstring) of channel ``channel`` for the catalog objects of ``fields``
    that ``mapped`` carries with their catalog type; the rest -1."""
    table = np.full((len(fields), len(FIELD_COLUMNS)), -1, np.int64)
    for m in mapped:
        entry = _BY_ADDRESS.get((m.index - channel * AXIS_OFFSET, m.subindex))
        if entry is None or entry.name not in fields or entry.data_type != m.data_type:
            continue
        low, high = INTEGER_RANGES.get(entry.data_type, (0, 0))
        column = -1 if entry.scale is None else SCALES.index(entry.scale)
        table[fields.index(entry.name)] = (m.offset, entry.size, low, high, column)
    return table


class PdoMapping:
    """A drive's PDO mapping in one direction: ``entries`` repeated for ``channels`` axes, packed
    with one Struct (``channel_struct``: the entries of one channel)."""

    def __init__(self, name: str, entries: tuple[PdoEntry, ...], channels: int = 2) -> None:
        self.name = name
        self.entries = entries
        self.channels = channels
        self.direction = entries[0].direction if entries else "tpdo"
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

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PdoMapping) and (self.entries, self.channels) == (other.entries, other.channels)

    def __hash__(self) -> int:
        return hash((self.entries, self.channels))

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

    def mapped(self) -> tuple[Mapped, ...]:
        """Every mapped object of both channels where the payload carries it, in payload order:
        what the mapping object's entries say (drivers.powerlink.configuration)."""
        size = self.channel_struct.size
        return tuple(Mapped(index, subindex, ch * size + self.offset(name), self.entry(name).data_type)
                     for ch, index, subindex, name in self.objects())

    def table(self, channel: int) -> np.ndarray:
        """The field table of channel ``channel`` (module docstring)."""
        return field_table(self.mapped(), RPDO_FIELDS if self.direction == "rpdo" else TPDO_FIELDS, channel)

    def objects(self) -> list[tuple[int, int, int, str]]:
        """(channel, index, subindex, name) of every mapped object in payload order."""
        return [(ch, e.index + ch * AXIS_OFFSET, e.subindex, e.name)
                for ch in range(self.channels) for e in self.entries]


def _catalog_entry(item: object, direction: str) -> PdoEntry:
    """The catalog object ``item`` names: a name, or ``"0xINDEX[/SUB] [TYPE]"``."""
    text = str(item).strip()
    entry = CATALOG.get(text)
    if entry is None:
        parts = text.split()
        try:
            index, _, sub = parts[0].partition("/")
            address = (int(index, 0), int(sub or "0", 0))
        except (IndexError, ValueError):
            raise PdoMappingError(f"{text!r} is neither a CiA 402 object name ({', '.join(CATALOG)}) "
                                  "nor \"0xINDEX/SUB [TYPE]\"") from None
        entry = _BY_ADDRESS.get(address)
        if entry is None:
            raise PdoMappingError(f"0x{address[0]:04X}/{address[1]} is not a mappable CiA 402 object of channel 0 "
                                  f"(known: {', '.join(f'{e.address} {e.name}' for e in CATALOG.values())})")
        if len(parts) > 2 or (len(parts) == 2 and parts[1] != TYPE_NAMES[entry.data_type]):
            raise PdoMappingError(f"{entry.address} ({entry.name}) is {TYPE_NAMES[entry.data_type]} in CiA 402, "
                                  f"not {' '.join(parts[1:])!r}")
    if entry.direction != direction:
        raise PdoMappingError(f"{entry.address} ({entry.name}) belongs in the {entry.direction}, not the {direction}")
    return entry


def drive_mapping(items: object, direction: str, limit: int | None = None) -> PdoMapping:
    """The two-channel mapping a bus YAML ``mapping.rpdo`` / ``mapping.tpdo`` list declares (each item a
    :data:`CATALOG` name or ``"0xINDEX/SUB [TYPE]"`` of channel 0), checked: known objects of that
    direction with their CiA 402 type, each once, the :data:`REQUIRED` ones present, a payload of
    at most ``limit`` bytes (None: the catalog cannot fill a frame, 2 x 31 bytes at most)."""
    if not isinstance(items, list) or not items:
        raise PdoMappingError(f"{direction} must be a non-empty list of CiA 402 objects")
    entries: list[PdoEntry] = []
    for item in items:
        entry = _catalog_entry(item, direction)
        if entry in entries:
            raise PdoMappingError(f"{entry.address} ({entry.name}) is mapped twice")
        entries.append(entry)
    missing = [n for n in REQUIRED[direction] if CATALOG[n] not in entries]
    if missing:
        raise PdoMappingError(f"the control needs {', '.join(f'{CATALOG[n].address} ({n})' for n in missing)} "
                              f"in the {direction}")
    mapping = PdoMapping(f"{direction.upper()} ({'PReq, MN -> drive' if direction == 'rpdo' else 'PRes, drive -> MN'})",
                         tuple(entries))
    if limit is not None and mapping.size > limit:
        raise PdoMappingError(f"the {direction} carries {mapping.size} bytes for two channels, over the node's "
                              f"{'PReq' if direction == 'rpdo' else 'PRes'} payload limit of {limit} bytes")
    return mapping


RPDO = PdoMapping("RPDO (PReq, MN -> drive)", tuple(CATALOG[n] for n in (
    "controlword", "modes_of_operation", "target_position", "target_velocity", "torque_offset")))
TPDO = PdoMapping("TPDO (PRes, drive -> MN)", tuple(CATALOG[n] for n in (
    "statusword", "modes_of_operation_display", "position_actual", "velocity_actual", "current_actual",
    "error_code", "aux_input_x", "aux_input_y", "aux_input_z")))
"""The default mappings: a node without ``mapping:`` in its bus YAML, and a factory-fresh simulated drive."""
