"""What the managing node writes into a node before it may join the cycle (EPSG DS 301 §6.4.9
PDO mapping, §7.4.2.2 configuration in PreOperational1 followed by NMTResetConfiguration).

An io node's mapping comes from the bus YAML's ``inputs`` (into its PRes: TPDO mapping 0x1A00)
and ``outputs`` (from its PReq: RPDO mapping 0x1600). A mapping entry is an UNSIGNED64::

    bits  0..15 index | 16..23 subindex | 24..31 reserved | 32..47 offset in the payload [bit] | 48..63 length [bit]

The communication parameters' mapping version (0x1400/2, 0x1800/2) is set to the PDO version
the managing node's PReq carries (:data:`~drivers.powerlink.frames.PDO_VERSION`): a node ignores a
PReq payload whose version differs from its mapping's; it refuses that write while the mapping
is in use (a node a previous session configured). A mapping is written with subindex 0 (the entry count) at 0 first and at the count last, so a
node never applies half a mapping. The node applies it on NMTResetConfiguration.
"""
from __future__ import annotations

from typing import NamedTuple

from drivers.config import NodeConfig, PdoObject
from drivers.powerlink import frames
from drivers.service_channel import UNSIGNED8, UNSIGNED64

TPDO_MAPPING = 0x1A00          # the node's PRes payload
RPDO_MAPPING = 0x1600          # the node's PReq payload
TPDO_COMMUNICATION = 0x1800    # subindex 2: the mapping version its PRes carries
RPDO_COMMUNICATION = 0x1400    # subindex 2: the mapping version its PReq must carry (else it ignores the payload)
MAPPING_VERSION = 2


class Write(NamedTuple):
    """One object the configuration writes."""

    index: int
    subindex: int
    data_type: int
    value: int


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


def download(node: NodeConfig) -> list[Write]:
    """What the managing node writes into ``node`` at boot: an io node's two mappings, when it maps
    anything; nothing for a CiA 402 node (its mapping is the drive's default, drivers.powerlink.pdo)."""
    if node.profile != "io" or not (node.inputs or node.outputs):
        return []
    return (mapping_writes(TPDO_MAPPING, TPDO_COMMUNICATION, node.inputs)
            + mapping_writes(RPDO_MAPPING, RPDO_COMMUNICATION, node.outputs))
