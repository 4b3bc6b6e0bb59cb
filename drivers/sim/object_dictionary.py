"""The object dictionary of a simulated CN (EPSG DS 301 §6.2 and §7.2, CiA 402 / IEC 61800-7-201
§6), as its SDO server reaches it: typed entries with their access, values encoded little-endian.

:func:`drive_dictionary` builds a two-axis drive's: the communication profile (0x1001/0x1003
error register and history, 0x1008 device name, 0x1400/0x1600 RPDO and
0x1800/0x1A00 TPDO communication and mapping parameters) and, per channel (index + 0x800 for the second), the CiA 402 objects with
the standard's types: positions in encoder increments, speeds in increments/s (0x6080 in rpm),
current and torque in per mille of the rated values 0x6075/0x6076, each channel scaled by the
row of factors its process data travels by (the drive's ``SCALE`` columns, filled by
:func:`drivers.powerlink.scaling.scale_table` from the axis' bus YAML), rounded and saturated as
the process data is (:func:`drivers.powerlink.scaling.quantize`): an SDO read of 0x6064 is the
TPDO's actual position.

:func:`identity_objects` and :func:`dll_objects` add the node's own (0x1000, 0x1018, 0x1020; 0x1006,
0x1C0B, 0x1C0D, 0x1C14). A mapping object accepts new entries only while its sub-index 0 is 0 (DS
301 §6.4.9.2), and each entry must name an object the dictionary holds; the simulated drives go on exchanging the mapping
:mod:`drivers.powerlink.pdo` declares, so what is written there is kept and read back, not applied.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from drivers.config import DriveParams
from drivers.identity import Identity
from drivers.powerlink import pdo
from drivers.powerlink.scaling import quantize
from drivers.powerlink.frames import PDO_VERSION
from drivers.powerlink.threshold import ThresholdCounter
from drivers.service_channel import (ABORT_GENERAL, ABORT_NO_OBJECT, ABORT_NO_SUBINDEX, ABORT_NOT_MAPPABLE, ABORT_READ_ONLY, ABORT_TYPE_MISMATCH,
                                     ABORT_UNSUPPORTED_ACCESS, ABORT_VALUE_RANGE, ABORT_VALUE_TOO_HIGH,
                                     ABORT_VALUE_TOO_LOW, ABORT_WRITE_ONLY, INTEGER8, INTEGER16, INTEGER32,
                                     INTEGER_RANGES, REAL32, REAL64, SIZES, UNSIGNED8, UNSIGNED16, UNSIGNED32, UNSIGNED64,
                                     VISIBLE_STRING, TypeMismatch, decode, encode)

DEVICE_NAME = "bipd simulated CiA 402 drive"
RO, RW, WO, CONST = "ro", "rw", "wo", "const"
_MAPPING_SLOTS = 32                   # entries a mapping object 0x1600/0x1A00 can hold


class Refused(Exception):
    """A setter's refusal, with the abort code that names why."""

    def __init__(self, code: int) -> None:
        super().__init__(f"0x{code:08X}")
        self.code = code


@dataclass
class Entry:
    """One sub-index: its data type, access and, for a fixed-size type, the allowed range."""

    data_type: int
    access: str
    get: Callable[[], object] | None = None
    set: Callable[[object], None] | None = None
    low: float = -math.inf
    high: float = math.inf


class ObjectDictionary:
    """(index, subindex) -> :class:`Entry`; the SDO server's :class:`~drivers.powerlink.sdo.server.Dictionary`."""

    def __init__(self) -> None:
        self.entries: dict[tuple[int, int], Entry] = {}
        self._indices: set[int] = set()

    def add(self, index: int, subindex: int, entry: Entry) -> None:
        if (entry.access in (RO, CONST, RW) and entry.get is None) or (entry.access in (RW, WO) and entry.set is None):
            raise ValueError(f"object 0x{index:04X}/{subindex} ({entry.access}) lacks its accessor")
        self.entries[(index, subindex)] = entry
        self._indices.add(index)

    def value(self, index: int, subindex: int) -> object:
        """The entry's current value (for the node itself and tests)."""
        return self.entries[(index, subindex)].get()

    def _find(self, index: int, subindex: int) -> tuple[int, Entry | None]:
        entry = self.entries.get((index, subindex))
        if entry is None:
            return (ABORT_NO_SUBINDEX if index in self._indices else ABORT_NO_OBJECT), None
        return 0, entry

    def read(self, index: int, subindex: int) -> tuple[int, bytes]:
        """(abort code or 0, the value's bytes)."""
        abort, entry = self._find(index, subindex)
        if entry is None:
            return abort, b""
        if entry.access == WO:
            return ABORT_WRITE_ONLY, b""
        try:
            return 0, encode(entry.data_type, entry.get())
        except TypeMismatch:                     # a value its own type cannot carry: the device's fault
            return ABORT_GENERAL, b""

    def write(self, index: int, subindex: int, data: bytes) -> int:
        """Abort code or 0 after writing ``data`` (the value's bytes)."""
        abort, entry = self._find(index, subindex)
        if entry is None:
            return abort
        if entry.access in (RO, CONST):
            return ABORT_READ_ONLY
        try:
            value = decode(entry.data_type, data)
        except TypeMismatch:
            return ABORT_TYPE_MISMATCH
        if entry.data_type in SIZES:
            if value > entry.high:
                return ABORT_VALUE_TOO_HIGH
            if value < entry.low or value != value:
                return ABORT_VALUE_TOO_LOW
        try:
            entry.set(value)
        except Refused as refusal:
            return refusal.code
        except ValueError:
            return ABORT_VALUE_RANGE
        return 0


def _constant(od: ObjectDictionary, index: int, subindex: int, data_type: int, value: object) -> None:
    od.add(index, subindex, Entry(data_type, CONST, lambda: value))


def _variable(od: ObjectDictionary, index: int, subindex: int, data_type: int, value: object) -> None:
    """A read-write entry holding its own value."""
    cell = [value]
    low, high = INTEGER_RANGES.get(data_type, (-math.inf, math.inf))
    od.add(index, subindex, Entry(data_type, RW, lambda: cell[0], lambda v: cell.__setitem__(0, v), low, high))


def mapping_entry(index: int, subindex: int, offset_bits: int, length_bits: int) -> int:
    """A PDO mapping entry (DS 301 §6.4.9.2, UNSIGNED64): length 63..48, offset 47..32, subindex
    23..16, index 15..0, all in bits of the PDO payload."""
    return length_bits << 48 | offset_bits << 32 | subindex << 16 | index


def _mapping(od: ObjectDictionary, comm: int, mapping: int, declared: pdo.PdoMapping) -> None:
    """Communication parameter ``comm`` (NodeID, MappingVersion) and mapping ``mapping`` of a
    declared PDO; entries are written only while sub-index 0 is 0, and must name existing objects."""
    _constant(od, comm, 0, UNSIGNED8, 2)
    _variable(od, comm, 1, UNSIGNED8, 0)                 # 0: PReq from the MN / PRes to everyone
    _variable(od, comm, 2, UNSIGNED8, PDO_VERSION)
    entries, bits = [], 0
    for _, index, subindex, name in declared.objects():
        length = 8 * _size(declared, name)
        entries.append(mapping_entry(index, subindex, bits, length))
        bits += length
    count = [len(entries)]

    def set_count(v: object) -> None:
        count[0] = v

    def entry_setter(k: int) -> Callable[[object], None]:
        def store(v: object) -> None:
            if count[0]:
                raise Refused(ABORT_UNSUPPORTED_ACCESS)          # write 0 to sub-index 0 first
            if v and (v & 0xFFFF, (v >> 16) & 0xFF) not in od.entries:
                raise Refused(ABORT_NOT_MAPPABLE)
            slots[k] = v
        return store

    slots = entries + [0] * (_MAPPING_SLOTS - len(entries))
    od.add(mapping, 0, Entry(UNSIGNED8, RW, lambda: count[0], set_count, 0, _MAPPING_SLOTS))
    for k in range(len(slots)):
        od.add(mapping, k + 1, Entry(UNSIGNED64, RW, lambda k=k: slots[k], entry_setter(k)))


def _size(declared: pdo.PdoMapping, name: str) -> int:
    return next(e.size for e in declared.entries if e.name == name)


DRIVE_COLUMNS = ("KP", "KV", "KI", "KT", "I_MAX", "V_MAX", "FE_LIMIT", "P_DEM", "CMD_POS", "CMD_VEL", "CMD_TORQUE",
                 "ACT_POS", "ACT_VEL", "ACT_CUR", "AUX", "FE_ACTUAL", "SCALE")


def identity_objects(od: ObjectDictionary, identity: Callable[[], Identity], update: Callable[..., None]) -> None:
    """0x1000 device type, 0x1018 identity and 0x1020 verify configuration of a node whose
    :class:`~drivers.identity.Identity` (what its IdentResponse reports) is ``identity()``; writing
    0x1020 calls ``update(configuration_date=...)`` or ``update(configuration_time=...)``."""
    od.add(0x1000, 0, Entry(UNSIGNED32, RO, lambda: identity().device_type))
    _constant(od, 0x1018, 0, UNSIGNED8, 4)
    for sub, name in enumerate(("vendor_id", "product_code", "revision", "serial"), 1):
        od.add(0x1018, sub, Entry(UNSIGNED32, RO, lambda n=name: getattr(identity(), n)))
    _constant(od, 0x1020, 0, UNSIGNED8, 2)
    for sub, name in ((1, "configuration_date"), (2, "configuration_time")):    # days since 1984, ms of the day
        od.add(0x1020, sub, Entry(UNSIGNED32, RW, lambda n=name: getattr(identity(), n),
                                  lambda v, n=name: update(**{n: v}), 0, 0xFFFF_FFFF))


def dll_objects(od: ObjectDictionary, loss_soc: ThresholdCounter, loss_preq: ThresholdCounter, cycle_us: int) -> None:
    """A CN's data link layer objects (DS 301 §4.7.8, as openPOWERLINK's CN holds them): 0x1006
    cycle length [µs]; 0x1C0B loss of SoC and 0x1C0D loss of PReq (1 cumulative count, 2 threshold
    count, 3 threshold: the counters ``loss_soc`` and ``loss_preq`` the node counts with); 0x1C14
    loss of SoC tolerance [ns], kept: a lock-step SoC is there or lost, never late."""
    _variable(od, 0x1006, 0, UNSIGNED32, cycle_us)
    for index, counter in ((0x1C0B, loss_soc), (0x1C0D, loss_preq)):
        _constant(od, index, 0, UNSIGNED8, 3)
        od.add(index, 1, Entry(UNSIGNED32, RW, lambda c=counter: c.cumulative,
                               lambda v, c=counter: setattr(c, "cumulative", v), 0, 0xFFFF_FFFF))
        od.add(index, 2, Entry(UNSIGNED32, RO, lambda c=counter: c.count))
        od.add(index, 3, Entry(UNSIGNED32, RW, lambda c=counter: c.threshold,
                               lambda v, c=counter: setattr(c, "threshold", v), 0, 0xFFFF_FFFF))
    _variable(od, 0x1C14, 0, UNSIGNED32, 100_000)     # openPOWERLINK's default, 100 µs


def drive_dictionary(drive, columns: dict[str, int], params: dict[int, DriveParams],
                     history_length: int) -> ObjectDictionary:
    """The dictionary of a simulated two-axis CiA 402 drive (:class:`drivers.sim.drive.Drive`),
    reading its state row ``drive.bank.x[row]`` at ``columns`` (the names :data:`DRIVE_COLUMNS`;
    ``SCALE`` the first of the :data:`drivers.powerlink.pdo.SCALES` factors), channel ``ch``
    reporting the rated values and encoder resolution of ``params[ch]``."""
    od = ObjectDictionary()
    od.add(0x1001, 0, Entry(UNSIGNED8, RO, lambda: drive.error_register))
    history = drive.history

    def clear_history(v: object) -> None:
        if v:
            raise Refused(ABORT_VALUE_RANGE)                   # only 0 may be written: clear
        history.clear()

    od.add(0x1003, 0, Entry(UNSIGNED8, RW, lambda: len(history), clear_history))
    for k in range(history_length):
        od.add(0x1003, k + 1, Entry(UNSIGNED32, RO, lambda k=k: history[k] if k < len(history) else 0))
    _constant(od, 0x1008, 0, VISIBLE_STRING, DEVICE_NAME)
    for ch in drive.slots:
        _axis(od, drive, columns, params[ch], ch, ch * pdo.AXIS_OFFSET)
    for mapping in (pdo.RPDO, pdo.TPDO):            # a channel without a motor: its mapped objects read 0
        for _, index, subindex, name in mapping.objects():
            if (index, subindex) not in od.entries:
                _constant(od, index, subindex, mapping.entry(name).data_type, 0)
    _mapping(od, 0x1400, 0x1600, pdo.RPDO)
    _mapping(od, 0x1800, 0x1A00, pdo.TPDO)
    return od


def _axis(od: ObjectDictionary, drive, c: dict[str, int], params: DriveParams, ch: int, off: int) -> None:
    """CiA 402 objects of channel ``ch`` at their index + ``off``, in the standard's types."""
    x, row = drive.bank.x, drive.rows[ch]
    position, velocity, torque, current = (c["SCALE"] + pdo.SCALES.index(s) for s in (
        "position", "velocity", "torque", "current"))
    per_rad = float(x[row, position])

    def scaled(data_type: int, col: int, unit: int, factor: Callable[[], float] = lambda: 1.0) -> Callable[[], int]:
        return lambda: _saturate(data_type, float(x[row, col]) * factor(), float(x[row, unit]))

    def store(col: int, scale: float) -> Callable[[object], None]:
        def put(v: object) -> None:
            if v <= 0:
                raise Refused(ABORT_VALUE_TOO_LOW)
            x[row, col] = v * scale
        return put

    od.add(0x603F + off, 0, Entry(UNSIGNED16, RO, lambda: drive.fault_code[ch]))
    od.add(0x6040 + off, 0, Entry(UNSIGNED16, RO, lambda: drive.last_cw[ch]))
    od.add(0x6041 + off, 0, Entry(UNSIGNED16, RO, lambda: drive.statusword(ch)))
    od.add(0x6060 + off, 0, Entry(INTEGER8, RO, lambda: drive.op_mode[ch]))
    od.add(0x6061 + off, 0, Entry(INTEGER8, RO, lambda: drive.op_mode[ch]))
    od.add(0x6062 + off, 0, Entry(INTEGER32, RO, scaled(INTEGER32, c["P_DEM"], position)))
    od.add(0x6064 + off, 0, Entry(INTEGER32, RO, scaled(INTEGER32, c["ACT_POS"], position)))
    od.add(0x606C + off, 0, Entry(INTEGER32, RO, scaled(INTEGER32, c["ACT_VEL"], velocity)))
    od.add(0x6075 + off, 0, Entry(UNSIGNED32, CONST, lambda: round(1000 * params.rated_current)))   # mA
    od.add(0x6076 + off, 0, Entry(UNSIGNED32, CONST, lambda: round(1000 * params.rated_torque)))    # mN·m
    od.add(0x608F + off, 1, Entry(UNSIGNED32, CONST, lambda: params.encoder_increments))          # per motor turn
    od.add(0x608F + off, 2, Entry(UNSIGNED32, CONST, lambda: 1))
    od.add(0x6077 + off, 0, Entry(INTEGER16, RO, scaled(INTEGER16, c["ACT_CUR"], torque,
                                                         lambda: float(x[row, c["KT"]]))))
    od.add(0x6078 + off, 0, Entry(INTEGER16, RO, scaled(INTEGER16, c["ACT_CUR"], current)))
    od.add(0x607A + off, 0, Entry(INTEGER32, RO, scaled(INTEGER32, c["CMD_POS"], position)))
    od.add(0x60FF + off, 0, Entry(INTEGER32, RO, scaled(INTEGER32, c["CMD_VEL"], velocity)))
    od.add(0x60B2 + off, 0, Entry(INTEGER16, RO, scaled(INTEGER16, c["CMD_TORQUE"], torque)))
    for sub in range(1, 4):                          # auxiliary input (manufacturer-specific), as the TPDO's
        od.add(0x2400 + off, sub, Entry(REAL32, RO, lambda k=c["AUX"] + sub - 1: float(x[row, k])))
    od.add(0x60F4 + off, 0, Entry(INTEGER32, RO, scaled(INTEGER32, c["FE_ACTUAL"], position)))
    od.add(0x60FC + off, 0, Entry(INTEGER32, RO, scaled(INTEGER32, c["P_DEM"], position)))
    od.add(0x6065 + off, 0, Entry(UNSIGNED32, RW, scaled(UNSIGNED32, c["FE_LIMIT"], position),
                                   store(c["FE_LIMIT"], 1 / per_rad), 0, 0xFFFF_FFFF))
    od.add(0x6073 + off, 0, Entry(UNSIGNED16, RW, scaled(UNSIGNED16, c["I_MAX"], current),
                                   store(c["I_MAX"], 1 / float(x[row, current])), 0, 0xFFFF))
    od.add(0x6080 + off, 0, Entry(UNSIGNED32, RW, lambda: round(x[row, c["V_MAX"]] * 60 / (2 * math.pi)),
                                   store(c["V_MAX"], 2 * math.pi / 60), 0, 0xFFFF_FFFF))
    for sub, col in enumerate((c["KP"], c["KV"], c["KI"], c["KT"]), 1):   # manufacturer: loop gains, SI
        od.add(0x2010 + off, sub, Entry(REAL64, RW, lambda c=col: float(x[row, c]), store(col, 1.0), 1e-9))


def _saturate(data_type: int, value: float, scale: float) -> int:
    """``value * scale`` rounded into the range of ``data_type`` as the process data is (NaN, an
    encoder that reads nothing: 0)."""
    low, high = INTEGER_RANGES[data_type]
    return int(quantize(value, scale, low, high)[0])
