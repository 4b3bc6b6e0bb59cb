"""POWERLINK frames (EPSG DS 301 §4.6): exact bytes, round trips, typed errors, decoder fuzz."""
from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.powerlink import frames
from drivers.powerlink.frames import (
    ASnd,
    ChecksumError,
    FrameError,
    InconsistentFrame,
    OversizedFrame,
    PReq,
    PRes,
    RequestedService,
    ServiceId,
    SoA,
    Soc,
    TruncatedFrame,
    decode,
    encode,
)
from drivers.powerlink.nmt import NmtState
from drivers.powerlink.pdo import RPDO, TPDO


def refcs(data: bytes) -> bytes:
    """``data`` with its FCS recomputed (to reach the checks behind the checksum)."""
    body = data[:-4]
    return body + struct.pack("<I", zlib.crc32(body))


def test_soc_exact_bytes():
    raw = encode(Soc(net_time_s=1, net_time_ns=2000, relative_time_us=400))
    assert len(raw) == 64
    assert raw[0:6] == bytes.fromhex("01111e000001")            # SoC multicast MAC
    assert raw[6:12] == bytes.fromhex("0200000000f0")           # MN, node 240
    assert raw[12:14] == b"\x88\xab"                            # EtherType, big-endian
    assert raw[14:17] == bytes([0x01, 0xFF, 0xF0])              # SoC, broadcast, from MN
    assert raw[20:36] == struct.pack("<IIQ", 1, 2000, 400)
    assert raw[36:60] == bytes(24)                              # padding
    assert raw[60:] == struct.pack("<I", zlib.crc32(raw[:60]))


def test_pres_exact_header():
    raw = encode(PRes(src=3, nmt_status=NmtState.OPERATIONAL, payload=b"\x01\x02", flags1=frames.FLAG1_RD,
                      flags2=2))
    assert raw[14:24] == bytes([0x04, 0xFF, 0x03, 0xFD, 0x01, 0x02, 0x10, 0x00, 0x02, 0x00])
    assert raw[24:26] == b"\x01\x02"


@pytest.mark.parametrize("frame", [
    Soc(5, 999_999_999, 123456, frames.FLAG1_MC, 0),
    PReq(7, bytes(range(RPDO.size)), frames.FLAG1_RD),
    PRes(7, NmtState.PRE_OPERATIONAL_2, bytes(range(100, 100 + TPDO.size)), frames.FLAG1_RD, 0x0B),
    PRes(239, NmtState.OPERATIONAL, bytes(1400)),
    SoA(NmtState.OPERATIONAL, RequestedService.IDENT_REQUEST, 12),
    SoA(NmtState.PRE_OPERATIONAL_1),
])
def test_round_trip(frame):
    assert decode(encode(frame)) == frame


def test_asnd_round_trip_keeps_padding():
    frame = ASnd(dst=240, src=2, service_id=ServiceId.SDO, payload=b"abc")
    back = decode(encode(frame))
    assert (back.dst, back.src, back.service_id) == (240, 2, ServiceId.SDO)
    assert back.payload == b"abc" + bytes(64 - 4 - 18 - 3)


def test_pdo_mappings_declare_sizes_and_objects():
    assert RPDO.size == 2 * (2 + 1 + 8 + 4 + 4)
    assert TPDO.size == 2 * (2 + 1 + 8 + 4 + 4 + 2 + 3 * 4)
    assert TPDO.struct.format == "<HbdffHfffHbdffHfff"
    assert [o for o in TPDO.objects() if o[1] in (0x2400, 0x2C00)] == [
        (0, 0x2400, 1, "aux_input_x"), (0, 0x2400, 2, "aux_input_y"), (0, 0x2400, 3, "aux_input_z"),
        (1, 0x2C00, 1, "aux_input_x"), (1, 0x2C00, 2, "aux_input_y"), (1, 0x2C00, 3, "aux_input_z")]
    assert RPDO.struct.format == "<HbdffHbdff"
    assert (1, 0x607A + 0x800, 0, "target_position") in RPDO.objects()


GOOD = encode(PRes(2, NmtState.OPERATIONAL, bytes(TPDO.size)))


@pytest.mark.parametrize("data, error, words", [
    (GOOD[:63], TruncatedFrame, "shorter than the 64-byte"),
    (GOOD + bytes(1500), OversizedFrame, "exceeds the 1518-byte"),
    (GOOD[:30] + bytes([GOOD[30] ^ 1]) + GOOD[31:], ChecksumError, "FCS mismatch"),
    (refcs(GOOD[:12] + b"\x08\x00" + GOOD[14:]), InconsistentFrame, "EtherType 0x0800"),
    (refcs(GOOD[:14] + b"\x02" + GOOD[15:]), InconsistentFrame, "MessageType 0x02"),
    (refcs(GOOD[:17] + b"\x42" + GOOD[18:]), InconsistentFrame, "NMTStatus 0x42"),
    (refcs(GOOD[:22] + struct.pack("<H", 200) + GOOD[24:]), TruncatedFrame, "declares 200 payload bytes"),
    (refcs(GOOD[:15] + b"\x05" + GOOD[16:]), InconsistentFrame, "destination node id 5"),
])
def test_malformed_frames_raise_typed_errors(data, error, words):
    with pytest.raises(error, match=words):
        decode(data)


def test_reader_rejects_other_frame_type():
    with pytest.raises(InconsistentFrame, match="expected a PRES frame, got SOC"):
        frames.read_pres(encode(Soc()))


def test_encoder_rejects_bad_values():
    with pytest.raises(InconsistentFrame):
        encode(PReq(240, b""))
    with pytest.raises(OversizedFrame):
        encode(PRes(1, NmtState.OPERATIONAL, bytes(1500)))
    with pytest.raises(InconsistentFrame):
        encode(SoA(0x42))


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=0, max_size=1600))
def test_fuzz_random_bytes_raise_only_frame_errors(data):
    try:
        decode(data)
    except FrameError:
        pass


VALID = [GOOD] + [encode(f) for f in (Soc(1, 2, 3), PReq(4, bytes(RPDO.size)), SoA(NmtState.OPERATIONAL),
                             ASnd(240, 1, ServiceId.NMT_COMMAND, bytes(34)))]


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
        decode(data)
    except FrameError:
        pass
    try:
        frames.read_pres(data, PRES_TPDO)                 # the MN's one-unpack reader of PRes + TPDO
    except FrameError:
        pass


PRES_TPDO = frames.pres_header(TPDO.struct)


def test_the_one_unpack_pres_reader_equals_read_pres_then_the_payload():
    payload = TPDO.struct.pack(*([0x237, 8, 1.25, 2.5, -3.0, 0, 9.75, -0.5, 0.25] * TPDO.channels))
    data = encode(PRes(3, NmtState.OPERATIONAL, payload, frames.FLAG1_RD, 2))
    fields = frames.read_pres(data, PRES_TPDO)
    assert fields[:6] == frames.read_pres(data)
    assert fields[6:] == TPDO.struct.unpack(payload)
    with pytest.raises(TruncatedFrame, match="header and payload"):
        frames.read_pres(encode(PRes(3, NmtState.OPERATIONAL, b"")), PRES_TPDO)
