"""The hot-path shortcuts keep the strict checks: FCS residue, header keys, the CN's last-RPDO memo."""
from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.drive import ACT_CUR, ACT_POS, ACT_VEL, CMD_POS
from drivers.powerlink import frames
from drivers.powerlink.frames import ChecksumError, InconsistentFrame
from drivers.powerlink.pdo import RPDO, TPDO

from .helpers import cycle


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=60, max_size=200), st.integers(0, 8 * 204 - 1))
def test_fcs_residue_accepts_exactly_the_matching_fcs(body, bit):
    """The decoders check crc32(frame) against the CRC-32 residue instead of recomputing the FCS."""
    frame = bytearray(body + struct.pack("<I", zlib.crc32(body)))
    assert zlib.crc32(frame) == frames._FCS_RESIDUE
    frame[bit // 8 % len(frame)] ^= 1 << bit % 8
    assert zlib.crc32(frame) != frames._FCS_RESIDUE


def _resealed(frame, offset: int, value: int) -> bytes:
    body = bytearray(frame[:-4])
    body[offset] = value
    return bytes(body) + struct.pack("<I", zlib.crc32(body))


def test_an_unchanged_preq_is_answered_and_a_changed_one_is_validated_again(bus):
    node = bus.network.nodes[2]
    preq = bytes(bus.mn.records[2].preq.view)
    first = bytes(node.on_preq(preq))
    assert bytes(node.on_preq(preq)) == first           # the memoised frame: same PRes, nothing re-applied
    with pytest.raises(InconsistentFrame, match="EtherType"):
        node.on_preq(_resealed(preq, 12, 0x08))           # one header byte off, FCS valid
    with pytest.raises(InconsistentFrame, match="PDO version 0x11"):
        node.on_preq(_resealed(preq, 20, 0x11))
    corrupt = bytearray(preq)
    corrupt[frames.PDO_OFFSET] ^= 0xFF
    with pytest.raises(ChecksumError):
        node.on_preq(bytes(corrupt))
    assert bytes(node.on_preq(preq)) == first


def test_a_changed_setpoint_is_applied_once_the_memo_differs(bus):
    node = bus.network.nodes[1]
    rec = bus.mn.records[1]
    bus.write()
    node.on_preq(rec.preq.view)
    before = node.drive.bank.x[0, CMD_POS]                # ankle_1
    bus.target_position[0] = before + 0.125
    bus.write()
    node.on_preq(rec.preq.view)
    assert node.drive.bank.x[0, CMD_POS] == before + 0.125
    assert RPDO.struct.unpack_from(node._rpdo_seen, frames.PDO_OFFSET)[2] == before + 0.125


def _expected_tpdo(drive) -> bytes:
    """The TPDO as struct packs it from the drive's CiA 402 state and the bank's actual values."""
    x = drive.bank.x
    values = []
    for ch in range(TPDO.channels):
        row = drive.rows[ch]
        values += [drive.statusword(ch), drive.op_mode[ch], x[row, ACT_POS], x[row, ACT_VEL], x[row, ACT_CUR],
                   drive.fault_code[ch]]
    return TPDO.struct.pack(*values)


def test_the_drive_kernel_maps_the_tpdo_as_struct_packs_it(bus):
    """step_axes writes each channel into the PRes bytes itself; they must equal the declared mapping,
    after motion, and at once after a state change between two bus cycles (no stale statusword)."""
    bus.target_position[:] += 0.05
    cycle(bus, 4)
    payload = slice(frames.PDO_OFFSET, frames.PDO_OFFSET + TPDO.size)
    for node_id, node in bus.network.nodes.items():
        pres = node.on_preq(bus.mn.records[node_id].preq.view)
        assert bytes(pres[payload]) == _expected_tpdo(node.drive)
        assert zlib.crc32(pres) == frames._FCS_RESIDUE
    node = bus.network.nodes[2]
    node.drive.raise_fault(1, 0x4310)                       # between two steps: over-temperature on the hip
    pres = node.on_preq(bus.mn.records[2].preq.view)
    assert bytes(pres[payload]) == _expected_tpdo(node.drive)
    status, *_, code = TPDO.channel_struct.unpack_from(pres, frames.PDO_OFFSET + TPDO.channel_struct.size)
    assert code == 0x4310 and status & 0x0008                # error code and the Fault bit, this PRes
