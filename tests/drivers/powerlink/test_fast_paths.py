"""The hot-path shortcuts keep the strict checks: FCS residue, header keys, the CN's last-RPDO memo."""
from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.backends.sim import open_in_process
from drivers.sim import udp_server
from drivers.cia402 import Mode, State
from drivers.config import parse_bus_config
from drivers.sim.drive import ACT_CUR, ACT_POS, ACT_VEL, AUX, CMD_POS, SCALE
from drivers.powerlink import frames
from drivers.powerlink.frames import ChecksumError, InconsistentFrame
from drivers.powerlink.checks import steady_pres
from drivers.pdo import RPDO, SCALES, TPDO

from tests.drivers.helpers import cycle


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
    per_rad = bus.scales[0, 0]                            # the setpoint travels in whole increments
    bus.target_position[0] = before + 0.125
    bus.write()
    node.on_preq(rec.preq.view)
    assert node.drive.bank.x[0, CMD_POS] == round((before + 0.125) * per_rad) / per_rad
    assert RPDO.struct.unpack_from(node._rpdo_seen, frames.PDO_OFFSET)[2] == round((before + 0.125) * per_rad)


def _expected_tpdo(drive) -> bytes:
    """The TPDO as struct packs it from the drive's CiA 402 state and the bank's actual values, these
    rounded to increments, increments/s and per mille of the rated current."""
    x = drive.bank.x
    values = []
    for ch in range(TPDO.channels):
        row = drive.rows[ch]
        k = x[row, SCALE:SCALE + len(SCALES)]
        values += [drive.statusword(ch), drive.op_mode[ch], round(x[row, ACT_POS] * k[0]), round(x[row, ACT_VEL] * k[1]),
                   round(x[row, ACT_CUR] * k[3]), drive.fault_code[ch], *x[row, AUX:AUX + 3]]
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
    status, *_, code, _, _, _ = TPDO.channel_struct.unpack_from(pres, frames.PDO_OFFSET + TPDO.channel_struct.size)
    assert code == 0x4310 and status & 0x0008                # error code and the Fault bit, this PRes


class _TwinSocket:
    """Two in-process servers behind one MN link, one with the Numba isochronous path and one
    without: every datagram goes to both and their answers must agree."""

    def __init__(self, config) -> None:
        self.servers = [udp_server.InProcessServer(config, fast=fast) for fast in (True, False)]
        self.sent: list[bytes] = []
        self.python_frames = [0, 0]
        for k, server in enumerate(self.servers):
            server.network.transfer = self._counting(server.network.transfer, k)

    def _counting(self, transfer, k):
        def counted(frame):
            self.python_frames[k] += 1
            return transfer(frame)
        return counted

    def send(self, data) -> None:
        self.sent.append(bytes(data))
        for server in self.servers:
            server.send(data)
        reply = self.servers[1].reply()
        assert self.servers[0].reply() == reply
        if reply:
            self.servers[1].recv_into(bytearray(len(reply)))      # consumed, as the MN reads the first

    def recv_into(self, buf) -> int:
        return self.servers[0].recv_into(buf)

    @property
    def closed(self) -> bool:
        return self.servers[0].closed

    def wait(self, timeout_s: float | None) -> bool:
        return self.servers[0].wait(timeout_s)

    def close(self) -> None:
        for server in self.servers:
            server.close()


def _scripted_run(bench, mn_numba: bool):
    """Boot, motion, state changes, a mode change, drive and bus faults (lost, late and corrupted
    PRes) and an SDO over a UdpLink on twin servers; ``mn_numba``: the MN may queue a period and
    check its PRes in Numba. Returns the twin socket, the bus and what the bus reported after
    every period."""
    config = parse_bus_config(dict(bench, backend="udp"))
    twin = _TwinSocket(config)
    bus = open_in_process(config, fast=mn_numba, server=twin)
    absorbed = [0]
    absorb = bus.mn._absorb
    bus.mn._absorb = lambda *a: (absorbed.__setitem__(0, absorbed[0] + 1), absorb(*a))[1]
    bus.boot()
    for axis in bus.axes.values():
        axis.enable()
    start = bus.target_position.copy()
    knee, ankle, hip = bus.axis("knee"), bus.axis("ankle_1"), bus.axis("hip")
    script = {40: knee.disable, 45: knee.enable, 60: ankle.quick_stop, 70: ankle.fault_reset, 75: ankle.enable,
              90: lambda: setattr(knee, "mode", Mode.CSV), 100: lambda: setattr(knee, "mode", Mode.CSP),
              110: lambda: bus.faults.encoder_glitch("hip", "nan"), 115: hip.fault_reset, 118: hip.enable,
              125: lambda: bus.faults.drop_pres(2), 130: lambda: bus.faults.delay_pres(1, 1e-3),
              140: lambda: bus.faults.drive_fault("knee", "over_temperature"), 175: knee.fault_reset,
              180: knee.enable, 185: lambda: bus.sdo_read(1, 0x1001, 0), 200: lambda: bus.faults.corrupt_pres(3)}
    reported = []
    for k in range(260):
        bus.read()
        reported.append((bus.position.tobytes(), bus.velocity.tobytes(), bus.statusword.tobytes(),
                         bus.fault_code.tobytes(), len(bus.events)))
        bus.target_position[:] = start + 0.2 * np.sin(0.05 * k)
        bus.target_velocity[:] = 0.01 * np.cos(0.05 * k)
        bus.torque_offset[:] = 0.05 * np.sin(0.07 * k)
        if k in script:
            script[k]()
        bus.write()
        bus.exchange()
    counters = [(r.loss.cumulative, r.late.cumulative, r.malformed.cumulative) for r in bus.mn.records.values()]
    return twin, bus, (reported, list(bus.events), counters, bus.mn.bus_cycle, absorbed[0])


def test_the_numba_isochronous_path_answers_as_the_python_path(bench):
    """The same datagrams, served with and without drivers.sim.isochronous: identical answers after
    every datagram and identical drive, PRes and node state at the end; the fast path took most
    frames."""
    twin, bus, _ = _scripted_run(bench, mn_numba=True)
    fast, slow = twin.servers[0].network, twin.servers[1].network
    for name in ("x", "flags", "pres", "torque"):
        assert getattr(fast.bank, name).tobytes() == getattr(slow.bank, name).tobytes(), name
    assert fast.phase == slow.phase and fast.rx_errors == slow.rx_errors
    for node_id, node in fast.nodes.items():
        other = slow.nodes[node_id]
        assert (node.nmt, node.soc_seen, node.loss_soc.count) == (other.nmt, other.soc_seen, other.loss_soc.count)
        assert (node.drive.state, node.drive.history) == (other.drive.state, other.drive.history)
    assert [(a.state, a.fault_code) for a in bus.axes.values()] == [(State.OPERATION_ENABLED, 0)] * len(bus.axes)
    assert twin.python_frames[0] < twin.python_frames[1] / 10      # nearly every frame went through Numba


def test_the_managing_nodes_numba_paths_send_and_report_as_the_python_path(bench):
    """The same run with and without UdpLink.queue_period and checks.steady_pres on the MN side:
    byte-identical datagrams; the bus reports the same values, states, fault codes and events
    after every period, the same error counts (the lost, late and corrupted PRes are each counted
    once), and most periods skipped _absorb."""
    numba, *_, checked = _scripted_run(bench, mn_numba=True)
    python, *_, unchecked = _scripted_run(bench, mn_numba=False)
    assert len(numba.sent) == len(python.sent) > 500 and numba.sent == python.sent
    assert checked[:4] == unchecked[:4]
    assert unchecked[2] == [(0, 1, 0), (1, 0, 0), (0, 0, 1)]
    assert checked[4] < unchecked[4] / 3


def _pres(node_id: int, nmt: int = 0xFD, size: int = TPDO.size, pdo_version: int = frames.PDO_VERSION) -> bytes:
    f = frames.pres_frame(node_id, size, pdo_version)
    frames.set_pres_status(f.buf, nmt, 0, 0)
    return bytes(f.seal())


SIZES = np.full(2, TPDO.size, np.int64)      # the TPDO size each of nodes 1 and 2 maps


@pytest.mark.parametrize("spoil", ["none", "lost", "late", "fcs", "other node", "pre-operational", "pdo size",
                                   "pdo version", "short datagram"])
def test_steady_pres_accepts_only_valid_operational_pres_in_time(spoil):
    """One answer spoiled among two periods of two nodes is enough to send the period to Python."""
    answers = [_pres(1), _pres(2), _pres(1), _pres(2)]
    delays = [10_000] * 4
    if spoil == "lost":
        answers[3] = b""
    elif spoil == "late":
        delays[2] = 60_000                                # pres_timeout 50 us
    elif spoil == "fcs":
        answers[1] = answers[1][:-1] + bytes([answers[1][-1] ^ 1])
    elif spoil == "other node":
        answers[2] = _pres(2)
    elif spoil == "pre-operational":
        answers[0] = _pres(1, 0x5D)
    elif spoil == "pdo size":
        answers[1] = _pres(2, size=TPDO.size - 2)
    elif spoil == "pdo version":
        answers[3] = _pres(2, pdo_version=0x11)
    elif spoil == "short datagram":
        answers[3] = answers[3][:frames.MIN_FRAME - 1]
    buf = np.frombuffer(b"".join(answers), np.uint8)
    lengths = np.array([len(a) for a in answers], np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    ok = steady_pres(buf, offsets, lengths, np.array(delays, np.int64), 4, np.array([1, 2], np.int64), np.zeros(2, np.int64), SIZES, 5e-5, True)
    assert ok == (spoil == "none")


@pytest.mark.parametrize("cut", [0, 1], ids=["exact", "one-byte-short"])
def test_steady_pres_takes_socket_frames_without_fcs(cut):
    """A raw socket's PRes: no FCS, maybe padded; the frame's Size decides (frames.py)."""
    answers = [bytes(frames.without_fcs(_pres(n)))[:frames.PDO_OFFSET + TPDO.size - cut] for n in (1, 2)]
    buf = np.frombuffer(b"".join(answers), np.uint8)
    lengths = np.array([len(a) for a in answers], np.int64)
    offsets = np.array([0, lengths[0]], np.int64)
    ok = steady_pres(buf, offsets, lengths, np.zeros(2, np.int64), 2, np.array([1, 2], np.int64), np.zeros(2, np.int64), SIZES, 5e-5, False)
    assert ok == (cut == 0)
    assert not steady_pres(buf, offsets, lengths, np.zeros(2, np.int64), 2, np.array([1, 2], np.int64), np.zeros(2, np.int64), SIZES, 5e-5, True)
