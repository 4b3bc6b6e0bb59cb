"""What the managing node writes into a node before it may join the cycle, and when it may skip it
(EPSG DS 301 §6.4.9 PDO mapping, §7.4.2.2 configuration in PreOperational1 followed by
NMTResetConfiguration, §6.2.1 verify configuration 0x1020).

The download, in order:

1. the PDO mappings: an io node's from the bus YAML's ``inputs`` (into its PRes: TPDO mapping
   0x1A00) and ``outputs`` (from its PReq: RPDO mapping 0x1600); a CiA 402 drive's from the
   mappings its process image uses (:data:`~drivers.powerlink.pdo.TPDO`, :data:`~drivers.powerlink.pdo.RPDO`);
2. the data link layer: the cycle length 0x1006 (``bus.cycle_time_s`` in µs), the node's loss of
   SoC and loss of PReq thresholds 0x1C0B/3, 0x1C0D/3 (``bus.threshold``, what the managing node's
   own counters use) and its loss of SoC tolerance 0x1C14 (``bus.soc_tolerance_s`` in ns);
3. the node's own ``objects:`` (drive parameters such as 0x6065 or 0x6072), in YAML order;
4. last, and only once everything before succeeded, the verify configuration 0x1020/1 (date) and
   0x1020/2 (time) of :func:`stamp`: a download interrupted midway never leaves a node whose
   0x1020 claims the configuration.

A mapping entry is an UNSIGNED64::

    bits  0..15 index | 16..23 subindex | 24..31 reserved | 32..47 offset in the payload [bit] | 48..63 length [bit]

The communication parameters' mapping version (0x1400/2, 0x1800/2) is set to the PDO version
the managing node's PReq carries (:data:`~drivers.powerlink.frames.PDO_VERSION`): a node ignores a
PReq payload whose version differs from its mapping's; it refuses that write while the mapping
is in use (a node a previous session configured). A mapping is written with subindex 0 (the entry count) at 0 first and at the count last, so a
node never applies half a mapping. The node applies it on NMTResetConfiguration.

The date and time of 0x1020 are derived from what is written, not declared: the first 8 bytes of
the SHA-256 of the writes (index, subindex, type, value, in order), as an integer h, give the
time ``h mod 86 400 000`` (ms after midnight) and the date ``1 + (h div 86 400 000) mod 65 535``
(days since 1984-01-01, never 0: a node that was never configured reports 0). Any change to a
written object, the cycle time or the mapping changes them, so a node whose IdentResponse reports
the stamp holds exactly this configuration and its download is skipped; nobody has to remember to
bump a date in the YAML.
"""
from __future__ import annotations

import hashlib
import struct
from typing import NamedTuple

from drivers.config import BusConfig, NodeConfig, PdoObject
from drivers.powerlink import frames, pdo
from drivers.service_channel import FORMATS, TYPE_NAMES, UNSIGNED8, UNSIGNED32, UNSIGNED64

TPDO_MAPPING = 0x1A00          # the node's PRes payload
RPDO_MAPPING = 0x1600          # the node's PReq payload
TPDO_COMMUNICATION = 0x1800    # subindex 2: the mapping version its PRes carries
RPDO_COMMUNICATION = 0x1400    # subindex 2: the mapping version its PReq must carry (else it ignores the payload)
MAPPING_VERSION = 2
CYCLE_LENGTH = 0x1006          # NMT_CycleLen_U32 [µs]
LOSS_SOC = 0x1C0B              # DLL_CNLossSoC_REC: 1 cumulative count, 2 threshold count, 3 threshold
LOSS_PREQ = 0x1C0D             # DLL_CNLossPReq_REC: the same three
THRESHOLD = 3
SOC_TOLERANCE = 0x1C14         # DLL_LossOfFrameTolerance_U32 [ns]
VERIFY_CONFIGURATION = 0x1020  # CFM_VerifyConfiguration_REC: 1 ConfDate (days since 1984), 2 ConfTime (ms)
MS_PER_DAY = 86_400_000
DAYS = 65_535                  # dates 1..65535: what a 16-bit day count (DS 301 TIME_OF_DAY) can say


class Write(NamedTuple):
    """One object the configuration writes."""

    index: int
    subindex: int
    data_type: int
    value: int | float

    def describe(self) -> str:
        return f"0x{self.index:04X}/{self.subindex}"


def mapping_entry(obj: PdoObject, offset_bits: int) -> int:
    """The UNSIGNED64 mapping entry of ``obj`` at ``offset_bits`` (module docstring)."""
    return obj.index | obj.subindex << 16 | offset_bits << 32 | (8 * obj.size) << 48


def mapping_writes(mapping: int, communication: int, objects: tuple[PdoObject, ...]) -> list[Write]:
    """The writes that map ``objects``, in order, through mapping object ``mapping``: the mapping
    emptied, its version set in ``communication``/2, the entries, then their count."""
    writes = [Write(mapping, 0, UNSIGNED8, 0), Write(communication, MAPPING_VERSION, UNSIGNED8, frames.PDO_VERSION)]
    offset = 0
    for k, obj in enumerate(objects, 1):
        writes.append(Write(mapping, k, UNSIGNED64, mapping_entry(obj, offset)))
        offset += 8 * obj.size
    writes.append(Write(mapping, 0, UNSIGNED8, len(objects)))
    return writes


def drive_objects(mapping: pdo.PdoMapping) -> tuple[PdoObject, ...]:
    """The objects a CiA 402 drive's ``mapping`` carries, both channels, in payload order."""
    return tuple(PdoObject(index, subindex, TYPE_NAMES[mapping.entry(name).data_type])
                 for _, index, subindex, name in mapping.objects())


def download(node: NodeConfig, bus: BusConfig) -> list[Write]:
    """What the managing node writes into ``node`` at boot before 0x1020 (module docstring, steps 1-3)."""
    if node.profile == "io":
        inputs, outputs = node.inputs, node.outputs
    else:
        inputs, outputs = drive_objects(pdo.TPDO), drive_objects(pdo.RPDO)
    writes = []
    if inputs or outputs:
        writes += (mapping_writes(TPDO_MAPPING, TPDO_COMMUNICATION, inputs)
                   + mapping_writes(RPDO_MAPPING, RPDO_COMMUNICATION, outputs))
    writes += [Write(CYCLE_LENGTH, 0, UNSIGNED32, bus.cycle_us),
               Write(LOSS_SOC, THRESHOLD, UNSIGNED32, bus.threshold),
               Write(LOSS_PREQ, THRESHOLD, UNSIGNED32, bus.threshold),
               Write(SOC_TOLERANCE, 0, UNSIGNED32, bus.soc_tolerance_ns)]
    writes += [Write(o.index, o.subindex, o.data_type, o.value) for o in node.objects]
    return writes


def stamp(writes: list[Write]) -> tuple[int, int]:
    """The verify configuration (date, time) of ``writes`` (module docstring): never (0, 0)."""
    digest = hashlib.sha256()
    for w in writes:
        digest.update(struct.pack("<HBH", w.index, w.subindex, w.data_type) + struct.pack(FORMATS[w.data_type], w.value))
    h = int.from_bytes(digest.digest()[:8], "little")
    return 1 + (h // MS_PER_DAY) % DAYS, h % MS_PER_DAY


def stamp_writes(date_time: tuple[int, int]) -> list[Write]:
    """The two writes of 0x1020 that close a download (step 4)."""
    return [Write(VERIFY_CONFIGURATION, 1, UNSIGNED32, date_time[0]),
            Write(VERIFY_CONFIGURATION, 2, UNSIGNED32, date_time[1])]
