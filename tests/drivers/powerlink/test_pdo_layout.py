"""The PDO fast paths and the declared mappings (drivers/powerlink/pdo.py, DS 301 §6.4) agree:
each side encodes with one and decodes with the other, every field a distinct value."""
from __future__ import annotations

import numpy as np
import pytest

from drivers.cia402 import State
from drivers.hal import Intent
from drivers.powerlink import frames, pdo
from drivers.powerlink.managing_node import PREQ_LENGTH
from drivers.powerlink.pdo import RPDO, TPDO, PdoLayoutError
from drivers.powerlink.process_image import read_tpdo, write_rpdo
from drivers.sim import drive, isochronous

# Distinct per field and channel, exact in REAL32; the statusword reports Operation Enabled.
TPDO_VALUES = [(0x1237 + 0x100 * ch, -8 - ch, 1.25 + ch, -2.5 - ch, 0.375 + ch, 0x4310 + ch, 5.5 + ch, -6.75 - ch,
                7.125 + ch) for ch in range(TPDO.channels)]
RPDO_VALUES = [(0x000F + 0x80 * ch, 9 + ch, -0.3125 - ch, 4.5 + ch, -1.0625 - ch) for ch in range(RPDO.channels)]


def test_offsets_follow_the_declared_order_and_types():
    """Each field's offset is the sum of the sizes before it, as ``struct`` lays the channel out."""
    at = 0
    for entry in TPDO.entries:
        assert TPDO.offset(entry.name) == at
        at += entry.size
    assert at == TPDO.channel_struct.size
    with pytest.raises(KeyError, match="maps no field 'torque'"):
        RPDO.offset("torque")
    with pytest.raises(PdoLayoutError, match="controlword"):
        RPDO.require("a test", controlword=pdo.REAL32)


def test_the_drive_kernel_writes_the_declared_tpdo():
    """drive._write_tpdo (the drive's TPDO into its PRes) decodes with TPDO.struct to what it wrote."""
    pres = np.zeros((1, 96), np.uint8)
    x = np.zeros((TPDO.channels, drive.N_COLUMNS))
    flags = np.zeros((TPDO.channels, drive.N_FLAGS), np.int64)
    for a, v in enumerate(TPDO_VALUES):
        flags[a, drive.CHANNEL] = a
        flags[a, drive.SW_BASE], flags[a, drive.MODE_DISPLAY], flags[a, drive.ERROR_CODE] = v[0], v[1], v[5]
        x[a, drive.ACT_POS], x[a, drive.ACT_VEL], x[a, drive.ACT_CUR] = v[2], v[3], v[4]
        x[a, drive.AUX:drive.AUX + 3] = v[6:]
        drive._write_tpdo(pres, x, flags, a)
    assert TPDO.struct.unpack_from(pres[0], frames.PDO_OFFSET) == sum(TPDO_VALUES, ())


def test_the_bus_reads_the_declared_tpdo():
    """process_image.read_tpdo decodes a payload TPDO.struct packed, field by field."""
    tpdo = np.zeros((1, TPDO.size), np.uint8)
    TPDO.struct.pack_into(tpdo[0], 0, *sum(TPDO_VALUES, ()))
    n = TPDO.channels
    ints = [np.zeros(n, np.int64) for _ in range(5)]
    latched, statusword, mode, state, code = ints
    floats = [np.zeros(n) for _ in range(3)]
    aux = np.zeros((n, 3))
    read_tpdo(tpdo, np.zeros(1, np.int64), np.zeros(n, np.int64), np.arange(n), latched, statusword, mode, *floats,
              aux, state, code, np.zeros(n, np.int64))
    for ch, v in enumerate(TPDO_VALUES):
        got = (statusword[ch], mode[ch], floats[0][ch], floats[1][ch], floats[2][ch], code[ch], *aux[ch])
        assert got == v
        assert state[ch] == State.OPERATION_ENABLED


def test_the_bus_writes_the_declared_rpdo_and_the_drive_applies_it():
    """process_image.write_rpdo packs what RPDO.struct unpacks, and the CN's Numba path
    (isochronous._apply) reads those setpoints back."""
    n = RPDO.channels
    preq = np.zeros((1, PREQ_LENGTH), np.uint8)
    cw = np.array([v[0] for v in RPDO_VALUES], np.int64)
    columns = [np.array([v[k] for v in RPDO_VALUES]) for k in range(1, 5)]
    write_rpdo(np.full(n, int(Intent.FAULT_RESET), np.int64), np.zeros(n, np.int64), cw, columns[0].astype(np.int64),
               *columns[1:], preq, np.zeros(n, np.int64), np.arange(n), True)
    assert RPDO.struct.unpack_from(preq[0], frames.PDO_OFFSET) == sum(RPDO_VALUES, ())
    # the same PReq through the CN's fast path: a valid frame whose controlword and mode change nothing
    frame = frames.preq_frame(1, RPDO.size)
    frame.buf[18] = frames.FLAG1_RD
    frame.buf[frames.PDO_OFFSET:frames.PDO_OFFSET + RPDO.size] = bytes(preq[0, frames.PDO_OFFSET:
                                                                           frames.PDO_OFFSET + RPDO.size])
    rx = np.frombuffer(bytes(frame.seal()), np.uint8)
    x = np.zeros((n, drive.N_COLUMNS))
    flags = np.zeros((n, drive.N_FLAGS), np.int64)
    flags[:, drive.IDEM_CW], flags[:, drive.MODE_DISPLAY] = cw, columns[0]
    node = np.zeros(isochronous.N_NODE_COLUMNS, np.int64)
    node[[isochronous.NODE_ID, isochronous.ELIGIBLE, isochronous.PRES_ROW, isochronous.FLAGS1]] = 1, 1, 0, 1
    node[isochronous.CHANNEL_ROWS:] = np.arange(n)        # axis rows 0 and 1
    assert isochronous._apply(rx, 0, rx.shape[0], node, x, flags)
    for a, v in enumerate(RPDO_VALUES):
        assert (x[a, drive.CMD_POS], x[a, drive.CMD_VEL], x[a, drive.CMD_TORQUE]) == v[2:]
