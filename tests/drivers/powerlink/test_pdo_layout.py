"""The PDO fast paths and the declared mappings (drivers/pdo.py, DS 301 §6.4) agree:
each side encodes with one and decodes with the other, every field a distinct value."""
from __future__ import annotations

import math

import numpy as np
import pytest

from drivers.cia402 import State
from drivers.hal import Intent
from drivers import pdo
from drivers.powerlink import frames
from drivers.pdo import RPDO, TPDO
from drivers.powerlink.process_image import write_rpdo
from drivers.sim import drive, isochronous
from tests.drivers.helpers import decode_tpdo

# Per axis: increments per rad (2^17 per revolution), per mille per N·m (rated 0.5 N·m), per mille per A (rated 5 A).
SCALES = np.array([[2 ** 17 / (2 * math.pi)] * 2 + [2000.0, 200.0]] * 2)
# Distinct per field and channel, the scaled ones as the integers they travel as (AUX exact in REAL32);
# the statusword reports Operation Enabled.
TPDO_VALUES = [(0x1237 + 0x100 * ch, -8 - ch, 123456 + ch, -654321 - ch, -1234 + ch, 0x4310 + ch, 5.5 + ch, -6.75 - ch,
                7.125 + ch) for ch in range(TPDO.channels)]
RPDO_VALUES = [(0x000F + 0x80 * ch, 9 + ch, -2_000_000_000 - ch, 4_500_000 + ch, -32768 + ch) for ch in range(RPDO.channels)]
TFIELDS = np.stack([TPDO.table(ch) for ch in range(TPDO.channels)])     # axis a on channel a
RFIELDS = np.stack([RPDO.table(ch) for ch in range(RPDO.channels)])
# IEC 61800-7-201 (CiA 402) data type of each mapped object, and the CiA 301 size of each type (bytes).
STANDARD_TYPES = {0x6040: pdo.UNSIGNED16, 0x6041: pdo.UNSIGNED16, 0x6060: pdo.INTEGER8, 0x6061: pdo.INTEGER8,
                  0x607A: pdo.INTEGER32, 0x6064: pdo.INTEGER32, 0x60FF: pdo.INTEGER32, 0x606C: pdo.INTEGER32,
                  0x60B2: pdo.INTEGER16, 0x6078: pdo.INTEGER16, 0x603F: pdo.UNSIGNED16, 0x2400: pdo.REAL32}
TYPE_SIZES = {pdo.INTEGER8: 1, pdo.INTEGER16: 2, pdo.INTEGER32: 4, pdo.UNSIGNED8: 1, pdo.UNSIGNED16: 2,
              pdo.UNSIGNED32: 4, pdo.REAL32: 4, pdo.REAL64: 8}


def test_offsets_follow_the_declared_order_and_types():
    """Each field's type is the standard's, its size that of its type, its offset the sum of the
    sizes before it, as ``struct`` lays the channel out; the integer fields' ranges are their types'."""
    for mapping in (RPDO, TPDO):
        at = 0
        for entry in mapping.entries:
            assert entry.data_type == STANDARD_TYPES[entry.index], hex(entry.index)
            assert entry.size == TYPE_SIZES[entry.data_type]
            assert mapping.offset(entry.name) == at
            fields = pdo.RPDO_FIELDS if mapping is RPDO else pdo.TPDO_FIELDS
            for ch in range(mapping.channels):          # the field table: channel 1 after channel 0
                row = mapping.table(ch)[fields.index(entry.name)]
                assert row[:2].tolist() == [ch * mapping.channel_struct.size + at, entry.size]
                if entry.scale is not None:
                    bits = 8 * entry.size
                    assert row[2:].tolist() == [-2 ** (bits - 1), 2 ** (bits - 1) - 1, pdo.SCALES.index(entry.scale)]
            at += entry.size
        assert at == mapping.channel_struct.size and mapping.size == at * mapping.channels
    assert (RPDO.table(0)[pdo.R_TARGET_POSITION, 0], TPDO.table(1)[pdo.T_CURRENT, 0]) == (3, 38)  # 2 + 1; 27 + 2 + 1 + 4 + 4
    assert (TPDO.table(0)[pdo.T_TORQUE] == -1).all()        # 0x6077 is not in the default TPDO
    with pytest.raises(KeyError, match="maps no field 'torque'"):
        RPDO.offset("torque")


def test_the_drive_kernel_writes_the_declared_tpdo():
    """drive._write_tpdo (the drive's TPDO into its PRes) decodes with TPDO.struct to what it wrote,
    the SI values as the integers that scale to them."""
    pres = np.zeros((1, 96), np.uint8)
    x = np.zeros((TPDO.channels, drive.N_COLUMNS))
    flags = np.zeros((TPDO.channels, drive.N_FLAGS), np.int64)
    for a, v in enumerate(TPDO_VALUES):
        flags[a, drive.CHANNEL] = a
        flags[a, drive.SW_BASE], flags[a, drive.MODE_DISPLAY], flags[a, drive.ERROR_CODE] = v[0], v[1], v[5]
        x[a, drive.SCALE:drive.SCALE + len(pdo.SCALES)] = SCALES[a]
        x[a, drive.ACT_POS], x[a, drive.ACT_VEL], x[a, drive.ACT_CUR] = v[2] / SCALES[a, 0], v[3] / SCALES[a, 1], \
            v[4] / SCALES[a, 3]
        x[a, drive.AUX:drive.AUX + 3] = v[6:]
        drive._write_tpdo(pres, x, flags, TFIELDS, a)
    assert TPDO.struct.unpack_from(pres[0], frames.PDO_OFFSET) == sum(TPDO_VALUES, ())


def test_the_bus_reads_the_declared_tpdo():
    """process_image.read_tpdo decodes a payload TPDO.struct packed, field by field, into SI."""
    tpdo = np.zeros(TPDO.size, np.uint8)
    TPDO.struct.pack_into(tpdo, 0, *sum(TPDO_VALUES, ()))
    got = decode_tpdo(tpdo, TFIELDS, SCALES)
    for ch, v in enumerate(TPDO_VALUES):
        assert (got["statusword"][ch], got["mode_display"][ch], got["position"][ch] * SCALES[ch, 0],
                got["velocity"][ch] * SCALES[ch, 1], got["current"][ch] * SCALES[ch, 3], got["fault_code"][ch],
                *got["aux"][ch]) == pytest.approx(v, rel=1e-12)
        assert got["state"][ch] == State.OPERATION_ENABLED


def test_the_bus_writes_the_declared_rpdo_and_the_drive_applies_it():
    """process_image.write_rpdo packs what RPDO.struct unpacks (the SI setpoints as the integers
    that scale to them), and the CN's Numba path (isochronous._apply) reads those setpoints back."""
    n = RPDO.channels
    preq = np.zeros((1, frames.pdo_frame_length(RPDO.size)), np.uint8)
    cw = np.array([v[0] for v in RPDO_VALUES], np.int64)
    columns = [np.array([v[k] for v in RPDO_VALUES], float) / scale for k, scale in
               ((1, 1.0), (2, SCALES[:, 0]), (3, SCALES[:, 1]), (4, SCALES[:, 2]))]
    saturated, saturations = np.zeros(n, np.int64), np.zeros(n, np.int64)
    assert write_rpdo(np.full(n, int(Intent.FAULT_RESET), np.int64), np.zeros(n, np.int64), cw,
                      columns[0].astype(np.int64), *columns[1:], preq, np.array([preq.shape[1]]), np.zeros(n, np.int64),
                      RFIELDS, SCALES,
                      saturated, saturations, np.zeros(n, np.int64), True) == (0, 0)
    assert RPDO.struct.unpack_from(preq[0], frames.PDO_OFFSET) == sum(RPDO_VALUES, ())
    assert not saturated.any() and not saturations.any()
    # the same PReq through the CN's fast path: a valid frame whose controlword and mode change nothing
    frame = frames.preq_frame(1, RPDO.size)
    frame.buf[18] = frames.FLAG1_RD
    frame.buf[frames.PDO_OFFSET:frames.PDO_OFFSET + RPDO.size] = bytes(preq[0, frames.PDO_OFFSET:
                                                                           frames.PDO_OFFSET + RPDO.size])
    rx = np.frombuffer(bytes(frame.seal()), np.uint8)
    x = np.zeros((n, drive.N_COLUMNS))
    x[:, drive.SCALE:drive.SCALE + len(pdo.SCALES)] = SCALES
    flags = np.zeros((n, drive.N_FLAGS), np.int64)
    flags[:, drive.IDEM_CW], flags[:, drive.MODE_DISPLAY] = cw, columns[0]
    node = np.zeros(isochronous.N_NODE_COLUMNS, np.int64)
    node[[isochronous.NODE_ID, isochronous.ELIGIBLE, isochronous.PRES_ROW, isochronous.FLAGS1,
          isochronous.RPDO_SIZE]] = 1, 1, 0, 1, RPDO.size
    node[isochronous.CHANNEL_ROWS:] = np.arange(n)        # axis rows 0 and 1
    assert isochronous._apply(rx, 0, rx.shape[0], node, x, flags, RFIELDS)
    for a, v in enumerate(RPDO_VALUES):
        assert (x[a, drive.CMD_POS], x[a, drive.CMD_VEL], x[a, drive.CMD_TORQUE]) == pytest.approx(
            (columns[1][a], columns[2][a], columns[3][a]), rel=1e-15)
