"""POWERLINK frames (EPSG DS 301 §4.6): exact bytes, round trips, typed errors, decoder fuzz."""
from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.powerlink import frames
from drivers.powerlink.frames import (
    ChecksumError,
    FrameError,
    InconsistentFrame,
    MessageType,
    OversizedFrame,
    RequestedService,
    ServiceId,
    TruncatedFrame,
)
from drivers.powerlink.nmt import NmtState
from drivers.pdo import RPDO, TPDO


def soc(s: int = 0, ns: int = 0, rel: int = 0, flags1: int = 0, flags2: int = 0) -> bytes:
    f = frames.soc_frame()
    f.buf[18], f.buf[19] = flags1, flags2
    frames.set_soc_time(f.buf, s, ns, rel)
    return bytes(f.seal())


def preq(dst: int, payload: bytes, flags1: int = 0, pdo_version: int = frames.PDO_VERSION) -> bytes:
    f = frames.preq_frame(dst, len(payload), pdo_version)
    f.buf[18] = flags1
    f.buf[frames.PDO_OFFSET:frames.PDO_OFFSET + len(payload)] = payload
    return bytes(f.seal())


def pres(src: int, nmt: int, payload: bytes, flags1: int = 0, flags2: int = 0,
         pdo_version: int = frames.PDO_VERSION) -> bytes:
    f = frames.pres_frame(src, len(payload), pdo_version)
    frames.set_pres_status(f.buf, nmt, flags1, flags2)
    f.buf[frames.PDO_OFFSET:frames.PDO_OFFSET + len(payload)] = payload
    return bytes(f.seal())


def soa(nmt: int, service: int = RequestedService.NO_SERVICE, target: int = frames.INVALID_NODE_ID,
        flags1: int = 0) -> bytes:
    f = frames.soa_frame()
    frames.set_soa(f.buf, nmt, flags1, service, target)
    return bytes(f.seal())


def asnd(dst: int, src: int, service_id: int, payload: bytes) -> bytes:
    f = frames.asnd_frame(dst, src, service_id, len(payload))
    f.buf[frames.ASND_OFFSET:frames.ASND_OFFSET + len(payload)] = payload
    return bytes(f.seal())


READERS = {MessageType.SOC: frames.read_soc, MessageType.PREQ: frames.read_preq,
           MessageType.PRES: frames.read_pres, MessageType.SOA: frames.read_soa,
           MessageType.ASND: frames.read_asnd}


def read(data) -> tuple:
    """What a node does with a frame off the wire: check it, then read it by its type."""
    return READERS[frames.check_frame(data)](data)


def refcs(data: bytes) -> bytes:
    """``data`` with its FCS recomputed (to reach the checks behind the checksum)."""
    body = data[:-4]
    return body + struct.pack("<I", zlib.crc32(body))


def test_soc_exact_bytes():
    raw = soc(1, 2000, 400)
    assert len(raw) == 64
    assert raw[0:6] == bytes.fromhex("01111e000001")            # SoC multicast MAC
    assert raw[6:12] == bytes.fromhex("0200000000f0")           # MN, node 240
    assert raw[12:14] == b"\x88\xab"                            # EtherType, big-endian
    assert raw[14:17] == bytes([0x01, 0xFF, 0xF0])              # SoC, broadcast, from MN
    assert raw[20:36] == struct.pack("<IIQ", 1, 2000, 400)
    assert raw[36:60] == bytes(24)                              # padding
    assert raw[60:] == struct.pack("<I", zlib.crc32(raw[:60]))


def test_pres_exact_header():
    raw = pres(3, NmtState.OPERATIONAL, b"\x01\x02", frames.FLAG1_RD, 2)
    assert raw[14:24] == bytes([0x04, 0xFF, 0x03, 0xFD, 0x01, 0x02, 0x10, 0x00, 0x02, 0x00])
    assert raw[24:26] == b"\x01\x02"


@pytest.mark.parametrize("raw, fields, payload", [
    (soc(5, 999_999_999, 123456, frames.FLAG1_MC, 0), (frames.FLAG1_MC, 0, 5, 999_999_999, 123456), None),
    (preq(7, bytes(range(RPDO.size)), frames.FLAG1_RD), (7, frames.FLAG1_RD, frames.PDO_VERSION, RPDO.size),
     bytes(range(RPDO.size))),
    (pres(7, NmtState.PRE_OPERATIONAL_2, bytes(range(100, 100 + TPDO.size)), frames.FLAG1_RD, 0x0B),
     (7, NmtState.PRE_OPERATIONAL_2, frames.FLAG1_RD, 0x0B, frames.PDO_VERSION, TPDO.size),
     bytes(range(100, 100 + TPDO.size))),
    (pres(239, NmtState.OPERATIONAL, bytes(1400)),
     (239, NmtState.OPERATIONAL, 0, 0, frames.PDO_VERSION, 1400), bytes(1400)),
    (soa(NmtState.OPERATIONAL, RequestedService.IDENT_REQUEST, 12),
     (NmtState.OPERATIONAL, 0, RequestedService.IDENT_REQUEST, 12, frames.EPL_VERSION), None),
    (soa(NmtState.PRE_OPERATIONAL_1),
     (NmtState.PRE_OPERATIONAL_1, 0, RequestedService.NO_SERVICE, 0, frames.EPL_VERSION), None),
], ids=["soc", "preq", "pres", "pres-1400-bytes", "soa-ident-request", "soa"])
def test_round_trip(raw, fields, payload):
    assert read(raw) == fields
    if payload is not None:
        assert raw[frames.PDO_OFFSET:frames.PDO_OFFSET + len(payload)] == payload


def test_asnd_round_trip_keeps_padding():
    raw = asnd(240, 2, ServiceId.SDO, b"abc")
    assert read(raw) == (240, 2, ServiceId.SDO)
    assert raw[frames.ASND_OFFSET:-frames.FCS_SIZE] == b"abc" + bytes(64 - 4 - 18 - 3)


def test_pdo_mappings_declare_sizes_and_objects():
    assert RPDO.size == 2 * (2 + 1 + 4 + 4 + 2)
    assert TPDO.size == 2 * (2 + 1 + 4 + 4 + 2 + 2 + 3 * 4)
    assert TPDO.struct.format == "<HbiihHfffHbiihHfff"
    assert [o for o in TPDO.objects() if o[1] in (0x2400, 0x2C00)] == [
        (0, 0x2400, 1, "aux_input_x"), (0, 0x2400, 2, "aux_input_y"), (0, 0x2400, 3, "aux_input_z"),
        (1, 0x2C00, 1, "aux_input_x"), (1, 0x2C00, 2, "aux_input_y"), (1, 0x2C00, 3, "aux_input_z")]
    assert RPDO.struct.format == "<HbiihHbiih"
    assert (1, 0x607A + 0x800, 0, "target_position") in RPDO.objects()


GOOD = pres(2, NmtState.OPERATIONAL, bytes(TPDO.size))


@pytest.mark.parametrize("data, error, words", [
    (GOOD[:63], TruncatedFrame, "shorter than the 64-byte"),
    (GOOD + bytes(1500), OversizedFrame, "exceeds the 1518-byte"),
    (GOOD[:30] + bytes([GOOD[30] ^ 1]) + GOOD[31:], ChecksumError, "FCS mismatch"),
    (refcs(GOOD[:12] + b"\x08\x00" + GOOD[14:]), InconsistentFrame, "EtherType 0x0800"),
    (refcs(GOOD[:14] + b"\x02" + GOOD[15:]), InconsistentFrame, "MessageType 0x02"),
    (refcs(GOOD[:17] + b"\x42" + GOOD[18:]), InconsistentFrame, "NMTStatus 0x42"),
    (refcs(GOOD[:22] + struct.pack("<H", 200) + GOOD[24:]), TruncatedFrame, "declares 200 payload bytes"),
    (refcs(GOOD[:15] + b"\x05" + GOOD[16:]), InconsistentFrame, "destination node id 5"),
    (soa(0x42), InconsistentFrame, "SoA NMTStatus 0x42"),
], ids=["short", "long", "fcs", "ethertype", "message-type", "pres-nmt", "pdo-size", "pres-dst", "soa-nmt"])
def test_malformed_frames_raise_typed_errors(data, error, words):
    with pytest.raises(error, match=words):
        read(data)


def test_reader_rejects_other_frame_type():
    with pytest.raises(InconsistentFrame, match="expected a PRES frame, got SOC"):
        frames.read_pres(soc())


def test_encoder_rejects_bad_values():
    with pytest.raises(InconsistentFrame, match="PReq destination node id 240"):
        frames.preq_frame(240, 0)
    with pytest.raises(OversizedFrame, match="payload of 1500 bytes"):
        frames.pres_frame(1, 1500)
    with pytest.raises(InconsistentFrame, match="source node id 0"):
        frames.asnd_frame(240, 0, ServiceId.SDO, 0)


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=0, max_size=1600))
def test_fuzz_random_bytes_raise_only_frame_errors(data):
    try:
        read(data)
    except FrameError:
        pass


VALID = [GOOD, soc(1, 2, 3), preq(4, bytes(RPDO.size)), soa(NmtState.OPERATIONAL),
         asnd(240, 1, ServiceId.NMT_COMMAND, bytes(34))]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(VALID), st.lists(st.tuples(st.integers(0, 1600), st.integers(0, 255)), max_size=6),
       st.integers(-8, 8))
def test_fuzz_mutated_frames_with_valid_fcs(frame, edits, resize):
    """Mutations behind a correct FCS reach the field checks: still only FrameError."""
    body = bytearray(frame[:-4])
    for pos, value in edits:
        if body:
            body[pos % len(body)] = value
    body = body[:max(0, len(body) + resize)] if resize < 0 else body + bytes(resize)
    data = bytes(body) + struct.pack("<I", zlib.crc32(bytes(body)))
    try:
        read(data)
    except FrameError:
        pass
    try:
        frames.read_pres(data, PRES_TPDO)                 # the MN's one-unpack reader of PRes + TPDO
    except FrameError:
        pass


PRES_TPDO = frames.pres_header(TPDO.struct)


def test_the_one_unpack_pres_reader_equals_read_pres_then_the_payload():
    payload = TPDO.struct.pack(*([0x237, 8, 125, -250, -300, 0, 9.75, -0.5, 0.25] * TPDO.channels))
    data = pres(3, NmtState.OPERATIONAL, payload, frames.FLAG1_RD, 2)
    fields = frames.read_pres(data, PRES_TPDO)
    assert fields[:6] == frames.read_pres(data)
    assert fields[6:] == TPDO.struct.unpack(payload)
    with pytest.raises(TruncatedFrame, match="header and payload"):
        frames.read_pres(pres(3, NmtState.OPERATIONAL, b""), PRES_TPDO)


def test_named_header_offsets_are_where_the_decoders_read() -> None:
    """The Numba readers (checks.py, drivers.sim.isochronous) index frames by frames.py's named
    offsets: each holds the field the struct-based decoders read."""
    b = pres(7, int(NmtState.OPERATIONAL), b"\x00" * 8, flags1=frames.FLAG1_RD, flags2=0x0A)
    src, nmt, flags1, flags2, version, size = frames.read_pres(b)[:6]
    le = lambda at, n: int.from_bytes(b[at:at + n], "little")    # noqa: E731
    assert b[frames.DST_MAC_AT:frames.DST_MAC_AT + 6] == frames.PRES_MAC
    assert b[frames.SRC_MAC_AT:frames.SRC_MAC_AT + 6] == frames.node_mac(7)
    assert int.from_bytes(b[frames.ETHERTYPE_AT:frames.ETHERTYPE_AT + 2], "big") == frames.ETHERTYPE
    assert (b[frames.MESSAGE_TYPE_AT], b[frames.DST_NODE_AT], b[frames.SRC_NODE_AT]) == (
        MessageType.PRES, frames.BROADCAST_NODE_ID, src)
    assert (b[frames.NMT_STATUS_AT], b[frames.FLAGS1_AT], b[frames.FLAGS2_AT]) == (nmt, flags1, flags2)
    assert (b[frames.PDO_VERSION_AT], le(frames.SIZE_AT, 2)) == (version, size) == (frames.PDO_VERSION, 8)
    b = soc(s=5, ns=6, rel=7)
    assert frames.read_soc(b)[2:] == (le(frames.NET_TIME_AT, 4), le(frames.NET_TIME_NS_AT, 4),
                                      le(frames.RELATIVE_TIME_AT, 8)) == (5, 6, 7)
    f = frames.soa_frame()
    frames.set_soa(f.buf, int(NmtState.OPERATIONAL), 0, int(RequestedService.STATUS_REQUEST), 9)
    b = bytes(f.seal())
    assert frames.read_soa(b) == (b[frames.NMT_STATUS_AT], 0, b[frames.SERVICE_AT], b[frames.SERVICE_TARGET_AT],
                                  b[frames.EPL_VERSION_AT]) == (int(NmtState.OPERATIONAL), 0, 2, 9, frames.EPL_VERSION)


def socket_forms(raw: bytes, content: int) -> list[bytes]:
    """``raw`` as a socket delivers it: no FCS, cut to its ``content`` bytes (a veth delivers what
    was sent), or padded to the 60-byte minimum with non-zero bytes (a NIC pads; padding is ignored)."""
    body = raw[:content]
    return [body, body + b"\xa5" * (60 - len(body))]


@pytest.mark.parametrize("raw, content", [
    (soc(5, 999_999_999, 123456, frames.FLAG1_MC, 0), frames.RELATIVE_TIME_AT + 8),
    (preq(7, b"\x01\x02\x03", frames.FLAG1_RD), frames.PDO_OFFSET + 3),
    (pres(7, NmtState.OPERATIONAL, b"\x09\x08", frames.FLAG1_RD, 0x0B), frames.PDO_OFFSET + 2),
    (soa(NmtState.OPERATIONAL, RequestedService.STATUS_REQUEST, 12), frames.EPL_VERSION_AT + 1),
    (asnd(240, 2, ServiceId.NMT_COMMAND, bytes(34)), frames.ASND_OFFSET + 34),
], ids=["soc", "preq", "pres", "soa", "asnd"])
def test_frames_without_fcs_and_padded_decode_as_with_it(raw, content):
    kind = frames.check_frame(raw)
    for data in socket_forms(raw, content):
        assert frames.check_frame(data, fcs=False) == kind
        assert READERS[kind](data, fcs=False) == READERS[kind](raw)
    assert bytes(frames.without_fcs(raw)) == raw[:-4] and len(raw) - 4 >= 60    # what a socket sends


def test_frames_without_fcs_are_still_checked_by_their_own_lengths():
    raw = pres(7, NmtState.OPERATIONAL, b"\x09\x08\x07\x06")
    with pytest.raises(TruncatedFrame, match="declares 4 payload bytes but carries 3"):
        frames.read_pres(raw[:frames.PDO_OFFSET + 3], fcs=False)
    with pytest.raises(TruncatedFrame, match="shorter than its"):
        frames.read_soa(soa(NmtState.OPERATIONAL)[:frames.EPL_VERSION_AT], fcs=False)
    with pytest.raises(OversizedFrame, match="1514-byte"):
        frames.check_frame(pres(7, NmtState.OPERATIONAL, bytes(1490)) + bytes(1), fcs=False)
    with pytest.raises(TruncatedFrame, match="64-byte"):       # with an FCS, the Ethernet minimum holds
        frames.check_frame(raw[:60])


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=0, max_size=1600))
def test_fuzz_random_bytes_without_fcs_raise_only_frame_errors(data):
    try:
        READERS[frames.check_frame(data, fcs=False)](data, fcs=False)
    except FrameError:
        pass
