"""DS 301 SDO (drivers.powerlink.sdo): the client and server state machines against each other over a
lossy pipe, their bytes against openPOWERLINK's (the handshake observed on its CN, the command
layer of stack/include/oplk/frame.h), and the MN against the simulated CNs on the sim backend."""
from __future__ import annotations

import contextlib
import random
import struct
import subprocess
from xml.etree import ElementTree

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.backends.sim import open_in_process
from drivers.config import parse_bus_config
from drivers.events import EventKind
from drivers import pdo
from drivers.powerlink.sdo import RETRIES, RETRY_CYCLES, SdoClient, SdoServer
from drivers.powerlink.sdo import command as cmd
from drivers.service_channel import (DOMAIN, INTEGER8, INTEGER16, INTEGER32, INTEGER64, REAL32, REAL64, SDO_READ,
                                     SDO_WRITE, UNSIGNED8, UNSIGNED16, UNSIGNED32, UNSIGNED64, VISIBLE_STRING, SdoAbort,
                                     SdoRequest, TypeMismatch, abort_text)
from drivers.pdo import mapping_entry
from drivers.sim.object_dictionary import RO, RW, Entry, ObjectDictionary
from tests.drivers.helpers import enabled_bus
from tests.drivers.powerlink.test_tshark_conformance import OPTIONS, TSHARK


def _dictionary(objects: dict[tuple[int, int], tuple[int, object]], access: str = RW) -> ObjectDictionary:
    """An object dictionary holding ``objects`` ((index, sub) -> (type, value)), each read-write."""
    od = ObjectDictionary()
    for key, (data_type, value) in objects.items():
        cell = {"v": value}
        od.add(*key, Entry(data_type, access, lambda c=cell: c["v"], lambda v, c=cell: c.__setitem__("v", v)))
    return od


def _run(client: SdoClient, server: SdoServer, requests: list[SdoRequest], limit: int = 2000,
         lose=lambda direction, k: False) -> tuple[int, list[bytes], list[bytes]]:
    """Bus cycles until every request is done; one exchange per direction per cycle, the k-th payload
    of a direction lost when ``lose(direction, k)``. Returns the cycles and what each side sent."""
    sent = {"mn": [], "cn": []}
    for r in requests:
        client.request(r)
    for n in range(limit):
        if all(r.done for r in requests):
            return n, sent["mn"], sent["cn"]
        for direction, src, dst in (("mn", client, server), ("cn", server, client)):
            for payload in src.take():
                sent[direction].append(payload)
                if not lose(direction, len(sent[direction]) - 1):
                    dst.receive(payload)
        client.tick()
        server.tick()
    raise AssertionError(f"requests still pending after {limit} cycles: {[r for r in requests if not r.done]}")


def _pair(objects=None, access: str = RW) -> tuple[SdoClient, SdoServer, ObjectDictionary]:
    od = _dictionary(objects or {}, access)
    return SdoClient(RETRY_CYCLES, RETRIES), SdoServer(od, RETRY_CYCLES, RETRIES), od


def test_handshake_and_read_bytes_are_openpowerlinks():
    """The sequence-layer handshake as openPOWERLINK's CN answers it (MN 00 01, CN 01 01, MN 01 02,
    CN 02 02), then ReadByIndex 0x1018/1 expedited: sequence numbers 1 with the acknowledgements, the
    command layer's fixed header (frame.h tAsySdoCom), index/subindex and the value little-endian."""
    client, server, _ = _pair({(0x1018, 1): (UNSIGNED32, 0x12345678)})
    req = SdoRequest(3, SDO_READ, 0x1018, 1, data_type=UNSIGNED32)
    _, mn, cn = _run(client, server, [req])
    assert [p[:2].hex(" ") for p in mn[:2]] == ["00 01", "01 02"]
    assert [p[:2].hex(" ") for p in cn[:1]] == ["01 01"]
    assert cn[1][:2].hex(" ") == "02 02"
    assert mn[2].hex(" ") == "02 06 00 00 00 01 00 02 04 00 00 00 18 10 01 00"
    assert cn[2].hex(" ") == "06 06 00 00 00 01 80 02 04 00 00 00 78 56 34 12"
    assert req.result() == 0x12345678


# A session of SdoClient with openPOWERLINK V2.7.2's CN (demo_cn_console, CiA 401 object dictionary,
# node 1) over a veth pair, recorded on the MN's end: ASnd SDO payloads in wire order, the CN's with
# their trailing zero padding cut, the MN's first 16 bytes. The requests, in order, are OPLK_REQUESTS.
OPLK_SESSION = [
    ("mn", "00010000"), ("cn", "0101"), ("mn", "01020000"), ("cn", "0202"),
    ("mn", "02060000000100020400000000100000"), ("cn", "06060000000180020400000091010f"),
    ("mn", "060a0000000200020400000018100300"), ("cn", "0a0a00000002800204000000070002"),
    ("mn", "0a0e0000000300020400000008100000"),
    ("cn", "0e0e000000038002150000006f70656e504f5745524c494e4b20646576696365"),
    ("mn", "0e120000000400010800000006100000"), ("cn", "1212000000048001"),
    ("mn", "12160000000500020400000006100000"), ("cn", "161600000005800204000000d007"),
    ("mn", "161a0000000600020400000055550000"), ("cn", "1a1a00000006c0020400000000000206"),
    ("mn", "1a1e0000000700010800000000100000"), ("cn", "1e1e00000007c0010400000002000106"),
    ("mn", "1e220000000800020400000018100900"), ("cn", "222200000008c0020400000011000906"),
    ("mn", "22260000000900010500000006100000"), ("cn", "262600000009c0010400000010000706"),
    ("mn", "262a0000000a10010001000060020000"), ("mn", "262e0000000a200100010000f8f9fafb"),
    ("mn", "26320000000a300160000000f8f9fafb"), ("cn", "2a2a0000000ac0010400000010000706"),
]
OPLK_REQUESTS = [  # (command, index, subindex, value, type) -> the value read or the abort openPOWERLINK sent
    ((SDO_READ, 0x1000, 0, None, UNSIGNED32), 0x000F0191), ((SDO_READ, 0x1018, 3, None, UNSIGNED32), 0x00020007),
    ((SDO_READ, 0x1008, 0, None, VISIBLE_STRING), "openPOWERLINK device"),
    ((SDO_WRITE, 0x1006, 0, 2000, UNSIGNED32), 2000), ((SDO_READ, 0x1006, 0, None, UNSIGNED32), 2000),
    ((SDO_READ, 0x5555, 0, None, DOMAIN), 0x06020000), ((SDO_WRITE, 0x1000, 0, 1, UNSIGNED32), 0x06010002),
    ((SDO_READ, 0x1018, 9, None, UNSIGNED32), 0x06090011), ((SDO_WRITE, 0x1006, 0, 5, UNSIGNED8), 0x06070010),
    ((SDO_WRITE, 0x1006, 0, bytes(range(256)) * 2 + bytes(88), DOMAIN), 0x06070010),
]


def test_replays_a_session_with_openpowerlinks_cn():
    """The client sends, byte for byte, what it sent to openPOWERLINK's CN, and reads its answers as
    that session did: the handshake, expedited reads and writes, the CN's aborts, a segmented write
    (data size 608 = 600 + 8, as openPOWERLINK's own client counts it) aborted at its initiate."""
    client = SdoClient(RETRY_CYCLES, RETRIES)
    requests = [SdoRequest(1, c, i, s, v, DOMAIN if t is None else t) for (c, i, s, v, t), _ in OPLK_REQUESTS]
    for r in requests:
        client.request(r)
    sent: list[bytes] = []
    for direction, recorded in OPLK_SESSION:
        if direction == "mn":
            sent = sent or client.take()
            mine = sent.pop(0)
            assert mine[:16].hex() == recorded
        else:
            client.receive(bytes.fromhex(recorded).ljust(42, b"\0"))     # a 60-byte frame's ASnd payload
    for r, (_, expected) in zip(requests, OPLK_REQUESTS):
        assert r.done and (r.abort_code if r.abort_code else r.value) == expected, r


CASES = [(UNSIGNED8, 0), (UNSIGNED8, 255), (UNSIGNED16, 0xBEEF), (UNSIGNED32, 0xFFFF_FFFF), (UNSIGNED64, 2**64 - 1),
         (INTEGER8, -128), (INTEGER8, 127), (INTEGER16, -32768), (INTEGER32, -2**31), (INTEGER32, 2**31 - 1),
         (INTEGER64, -2**63), (INTEGER64, 2**63 - 1), (REAL32, 0.5), (REAL32, -1234.5), (REAL32, 2.0**100), (REAL64, -1e-300),
         (VISIBLE_STRING, "bipd"), (DOMAIN, bytes(range(7)))]


def _reference_bytes(data_type: int, value) -> bytes:
    """The value's wire bytes computed without the service channel's struct formats."""
    if data_type == VISIBLE_STRING:
        return value.encode()
    if data_type == DOMAIN:
        return value
    if data_type in (REAL32, REAL64):
        import numpy as np
        return np.array([value], "<f4" if data_type == REAL32 else "<f8").tobytes()
    size = {UNSIGNED8: 1, UNSIGNED16: 2, UNSIGNED32: 4, UNSIGNED64: 8, INTEGER8: 1, INTEGER16: 2, INTEGER32: 4,
            INTEGER64: 8}[data_type]
    return value.to_bytes(size, "little", signed=data_type in (INTEGER8, INTEGER16, INTEGER32, INTEGER64))


@pytest.mark.parametrize(("data_type", "value"), CASES)
def test_every_type_writes_and_reads_back_little_endian(data_type, value):
    client, server, od = _pair({(0x2000, 1): (data_type, 0 if data_type in (REAL32, REAL64) else
                                              "" if data_type == VISIBLE_STRING else b"" if data_type == DOMAIN else 0)})
    write = SdoRequest(5, SDO_WRITE, 0x2000, 1, value, data_type)
    read = SdoRequest(5, SDO_READ, 0x2000, 1, data_type=data_type)
    _, mn, cn = _run(client, server, [write, read])
    expected = _reference_bytes(data_type, value)
    write_cmd = cmd.parse(mn[2][4:])
    assert write_cmd[2] == cmd.WRITE_BY_INDEX and write_cmd[3] == bytes([0x00, 0x20, 0x01, 0x00]) + expected
    read_answer = [cmd.parse(p[4:]) for p in cn if len(p) > 4 and cmd.parse(p[4:])[2] == cmd.READ_BY_INDEX]
    assert read_answer[0][3] == expected and read_answer[0][1] == cmd.RESPONSE
    assert write.result() == value and read.result() == value and od.value(0x2000, 1) == value


@pytest.mark.parametrize("size", [251, 252, 253, 256, 1000, 4096])
def test_segmented_transfers_both_ways(size):
    """WriteByIndex of ``size`` bytes is expedited up to 252 (256 command bytes with the 4-byte
    address), else initiate + segments + complete, the initiate's data size counting the
    address and itself as openPOWERLINK's client does (size + 8); the read's response counts the
    data and itself (size + 4), segments of 256 bytes."""
    data = random.Random(size).randbytes(size)
    client, server, od = _pair({(0x2F00, 0): (DOMAIN, b"")})
    write = SdoRequest(5, SDO_WRITE, 0x2F00, 0, data, DOMAIN)
    read = SdoRequest(5, SDO_READ, 0x2F00, 0)
    _, mn, cn = _run(client, server, [write, read])
    assert od.value(0x2F00, 0) == data and read.result() == data
    writes = [cmd.parse(p[4:]) for p in mn if len(p) > 4 and cmd.parse(p[4:])[2] == cmd.WRITE_BY_INDEX]
    reads = [cmd.parse(p[4:]) for p in cn if len(p) > 4 and cmd.parse(p[4:])[2] == cmd.READ_BY_INDEX]
    for commands, body in ((writes, size + 4), (reads, size)):
        kinds = [flags & cmd.SEGMENTATION for _, flags, _, _ in commands]
        if body <= 256:
            assert kinds == [cmd.EXPEDITED]
            continue
        segments = -(-(body + 4) // 256)
        assert kinds == [cmd.INITIATE] + [cmd.SEGMENT] * (segments - 2) + [cmd.COMPLETE]
        assert int.from_bytes(commands[0][3][:4], "little") == body + 4
        assert [len(c[3]) for c in commands[:-1]] == [256] * (segments - 1)


def test_lost_frames_are_retransmitted_after_retry_cycles():
    """One payload in ten of either direction lost (seeded): the transfers still complete,
    intact, through retransmissions; without loss the same transfers need no retransmission."""
    rng = random.Random(7)
    data = random.Random(1).randbytes(3000)
    client, server, od = _pair({(0x2F00, 0): (DOMAIN, b""), (0x2000, 0): (UNSIGNED32, 7)})
    requests = [SdoRequest(5, SDO_WRITE, 0x2F00, 0, data, DOMAIN), SdoRequest(5, SDO_READ, 0x2F00, 0),
                SdoRequest(5, SDO_READ, 0x2000, 0, data_type=UNSIGNED32)]
    cycles, _, _ = _run(client, server, requests, limit=20_000, lose=lambda d, k: rng.random() < 0.1)
    assert [r.abort_code for r in requests] == [0, 0, 0]
    assert od.value(0x2F00, 0) == data and requests[1].result() == data and requests[2].result() == 7
    assert client.seq.retransmitted + server.seq.retransmitted > 0 and cycles >= RETRY_CYCLES
    clean_client, clean_server, _ = _pair({(0x2F00, 0): (DOMAIN, b"")})
    clean, _, _ = _run(clean_client, clean_server, [SdoRequest(5, SDO_WRITE, 0x2F00, 0, data, DOMAIN)])
    assert clean_client.seq.retransmitted == clean_server.seq.retransmitted == 0 and clean < 30


def test_a_gap_is_answered_by_an_error_response_and_resent_at_once():
    """The first segment of a burst lost, the rest arriving: the server's error response (rcon 3)
    has the client resend within the next exchanges, long before RETRY_CYCLES."""
    data = random.Random(3).randbytes(1200)
    client, server, od = _pair({(0x2F00, 0): (DOMAIN, b"")})
    write = SdoRequest(5, SDO_WRITE, 0x2F00, 0, data, DOMAIN)
    cycles, _, cn = _run(client, server, [write], lose=lambda d, k: (d, k) == ("mn", 2))
    assert od.value(0x2F00, 0) == data and cycles < 10 < RETRY_CYCLES
    assert any(p[0] & 3 == 3 for p in cn) and client.seq.retransmitted >= 1


def test_a_server_that_never_answers_times_out_after_the_retries():
    """The handshake's 00 01 goes out RETRIES + 1 times, RETRY_CYCLES cycles apart; then the
    transfer ends with 0x05040000, at cycle (RETRIES + 1) * RETRY_CYCLES exactly."""
    client = SdoClient(RETRY_CYCLES, RETRIES)
    req = SdoRequest(9, SDO_READ, 0x1000, 0, data_type=UNSIGNED32)
    client.request(req)
    sent, done_at = [], None
    for n in range(1, 10 * RETRY_CYCLES):
        sent += [(n, p[:2].hex(" ")) for p in client.take()]
        client.tick()
        if req.done:
            done_at = n
            break
    assert done_at == (RETRIES + 1) * RETRY_CYCLES
    assert sent == [(1 + k * RETRY_CYCLES, "00 01") for k in range(RETRIES + 1)]
    with pytest.raises(SdoAbort, match=r"^node 9: SDO read 0x1000/0 aborted: 0x05040000 SDO protocol timed out$"):
        req.result()


@pytest.mark.parametrize(("request_", "code"), [
    (SdoRequest(4, SDO_READ, 0x6041, 0), 0x06020000),                       # no such object
    (SdoRequest(4, SDO_READ, 0x2000, 7), 0x06090011),                       # no such subindex
    (SdoRequest(4, SDO_WRITE, 0x2001, 0, 5, UNSIGNED8), 0x06010002),         # read only
    (SdoRequest(4, SDO_WRITE, 0x2000, 0, 5, UNSIGNED8), 0x06070010),         # 1 byte to an UNSIGNED32
    (SdoRequest(4, SDO_READ, 0x2000, 0, data_type=UNSIGNED16), 0x06070010),  # 4 bytes read as UNSIGNED16
])
def test_abort_codes_reach_the_client_by_name(request_, code):
    od = _dictionary({(0x2000, 0): (UNSIGNED32, 1)})
    od.add(0x2001, 0, Entry(UNSIGNED8, RO, lambda: 3))
    client, server = SdoClient(RETRY_CYCLES, RETRIES), SdoServer(od, RETRY_CYCLES, RETRIES)
    _run(client, server, [request_])
    assert request_.abort_code == code
    with pytest.raises(SdoAbort, match=f"aborted: {abort_text(code)}$"):
        request_.result()


def test_abort_names_and_bad_values():
    assert abort_text(0x06020000) == "0x06020000 object does not exist in the object dictionary"
    assert abort_text(0x06090011) == "0x06090011 subindex does not exist"
    assert abort_text(0x06010002) == "0x06010002 attempt to write a read-only object"
    assert abort_text(0x05040000) == "0x05040000 SDO protocol timed out"
    client = SdoClient(RETRY_CYCLES, RETRIES)
    for value, data_type in ((256, UNSIGNED8), (-1, UNSIGNED32), (0.5, INTEGER16), ("x", REAL64), (b"x", VISIBLE_STRING)):
        with pytest.raises(TypeMismatch):
            client.request(SdoRequest(1, SDO_WRITE, 0x2000, 0, value, data_type))


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=1500), seed=st.integers(0, 2**32 - 1), loss=st.sampled_from([0.0, 0.1, 0.3]))
def test_random_payloads_arrive_intact_through_a_lossy_pipe(data, seed, loss):
    rng = random.Random(seed)
    client, server, od = _pair({(0x2F00, 0): (DOMAIN, b"")})
    write, read = SdoRequest(5, SDO_WRITE, 0x2F00, 0, data, DOMAIN), SdoRequest(5, SDO_READ, 0x2F00, 0)
    _run(client, server, [write, read], limit=200_000, lose=lambda d, k: rng.random() < loss)
    if write.abort_code or read.abort_code:          # a loss run long enough may time the connection out
        assert {write.abort_code, read.abort_code} <= {0, 0x05040000}
        return
    assert od.value(0x2F00, 0) == data and read.result() == data


@settings(max_examples=200, deadline=None)
@given(payloads=st.lists(st.binary(max_size=300), max_size=8))
def test_garbage_payloads_never_raise(payloads):
    client, server, _ = _pair({(0x2000, 0): (UNSIGNED32, 1)})
    client.request(SdoRequest(5, SDO_READ, 0x2000, 0, data_type=UNSIGNED32))
    for p in payloads:
        server.receive(p if len(p) >= 4 else p + bytes(4 - len(p)))
        client.receive(p if len(p) >= 4 else p + bytes(4 - len(p)))
        server.take(), client.take(), server.tick(), client.tick()


# -- the managing node and the simulated CNs (sim backend) -------------------------------------------
def test_mn_reads_identity_and_mapping_of_a_simulated_cn(bus):
    assert bus.complete(bus.sdo_read(2, 0x1000, 0, UNSIGNED32)) == 0x00020192
    assert bus.complete(bus.sdo_read(2, 0x1018, 0, UNSIGNED8)) == 4
    assert bus.complete(bus.sdo_read(2, 0x1018, 4, UNSIGNED32)) == 2                       # serial: node id
    assert bus.complete(bus.sdo_read(2, 0x1008, 0, VISIBLE_STRING)) == "bipd simulated CiA 402 drive"
    assert bus.complete(bus.sdo_write(2, 0x1020, 1, 15_000, UNSIGNED32)) == 15_000        # verify configuration
    assert bus.network.nodes[2].identity.configuration_date == 15_000                  # what IdentResponse reports
    count = bus.complete(bus.sdo_read(2, 0x1A00, 0, UNSIGNED8))
    mapped = [bus.complete(bus.sdo_read(2, 0x1A00, k, UNSIGNED64)) for k in range(1, count + 1)]
    bits, expected = 0, []
    for ch in range(pdo.TPDO.channels):                  # the declared mapping, entry by entry
        for e in pdo.TPDO.entries:
            expected.append(mapping_entry(e.index + ch * pdo.AXIS_OFFSET, e.subindex, bits, 8 * e.size))
            bits += 8 * e.size
    assert mapped == expected and bits == 8 * pdo.TPDO.size


def test_mapping_entries_change_only_while_disabled(bus):
    """DS 301 §6.4.9.2: 0x1600/0x1A00 entries are written after sub-index 0 is set to 0, and must
    name an object of the dictionary."""
    first = bus.complete(bus.sdo_read(2, 0x1A00, 1, UNSIGNED64))
    requests = [bus.sdo_write(2, 0x1A00, 1, first, UNSIGNED64), bus.sdo_write(2, 0x1A00, 0, 0, UNSIGNED8),
                bus.sdo_write(2, 0x1A00, 1, mapping_entry(0x5555, 0, 0, 16), UNSIGNED64),
                bus.sdo_write(2, 0x1A00, 1, mapping_entry(0x6041, 0, 0, 16), UNSIGNED64),
                bus.sdo_write(2, 0x1A00, 0, 1, UNSIGNED8)]
    for r in requests:
        with contextlib.suppress(SdoAbort):
            bus.complete(r)
    assert [r.abort_code for r in requests] == [0x06010000, 0, 0x06040041, 0, 0]
    assert bus.complete(bus.sdo_read(2, 0x1A00, 0, UNSIGNED8)) == 1


def test_mn_segmented_transfer_to_a_simulated_cn_through_rs_invites(bus):
    """64 kB written and read back through the MN: the CN's frames go out only when invited, and it
    asks with RS in its PRes; one frame per asynchronous phase, the transfer outlasts the answer
    timeout ((RETRIES + 1) * RETRY_CYCLES cycles) while every frame is acknowledged in time."""
    store = {"v": b""}
    objects = bus.network.nodes[2].drive.objects
    objects.add(0x2F00, 0, Entry(DOMAIN, RW, lambda: store["v"], lambda v: store.__setitem__("v", v)))
    data = random.Random(4).randbytes(65536)
    start = bus.mn.bus_cycle
    assert bus.complete(bus.sdo_write(2, 0x2F00, 0, data, DOMAIN), 1000) == data
    assert store["v"] == data and bus.mn.bus_cycle - start > (RETRIES + 1) * RETRY_CYCLES
    assert bus.complete(bus.sdo_read(2, 0x2F00, 0), 1000) == data
    assert not [e for e in bus.events if e.kind == EventKind.SDO_ABORT]


def test_a_deaf_node_times_out_with_an_event_naming_it(bus):
    """Node 2's SDO server hears nothing (the node stays Operational): the MN's read ends with
    0x05040000 in the (RETRIES + 1) * RETRY_CYCLES-th bus cycle from its first, in an SDO_ABORT event
    that names node, object and reason."""
    bus.network.nodes[2].sdo.receive = lambda payload: None
    start = bus.mn.bus_cycle
    req = bus.sdo_read(2, 0x6041, 0, UNSIGNED16)
    with pytest.raises(SdoAbort, match="node 2: SDO read 0x6041/0 aborted: 0x05040000"):
        bus.complete(req, 1000)
    (event,) = [e for e in bus.events if e.kind == EventKind.SDO_ABORT]
    assert event.node_id == 2 and event.code == 0x05040000
    assert event.bus_cycle - start + 1 == (RETRIES + 1) * RETRY_CYCLES     # the request's own cycle counts
    assert event.text == "node 2: SDO read 0x6041/0 aborted: 0x05040000 SDO protocol timed out"


# -- Wireshark's EPL dissector as the judge of the bytes ---------------------------------------------
def _dissect(path) -> list[dict[str, tuple[str, str, str]]]:
    """Per SDO frame of the capture, tshark's fields: name -> (show, showname, value)."""
    out = subprocess.run([TSHARK, *OPTIONS, "-r", str(path), "-Y", "epl.asnd.svid == 0x05", "-T", "pdml"],
                         capture_output=True, text=True, check=True, timeout=300).stdout
    packets = []
    for packet in ElementTree.fromstring(out).iter("packet"):
        packets.append({f.get("name"): (f.get("show"), f.get("showname"), f.get("value")) for f in packet.iter("field")})
    return packets


@pytest.mark.skipif(TSHARK is None, reason="tshark (Debian package tshark) is not installed")
def test_tshark_decodes_the_mn_and_sim_cn_sdo_as_meant(bench, tmp_path):
    """Every SDO ASnd between the MN and a simulated CN (handshake, expedited read and write,
    segmented write, an abort), decoded by Wireshark's EPL dissector: no malformed frame, no expert
    item, and index, subindex, data, data size and abort code as they were meant."""
    bus = enabled_bus(bench)
    bus.capture(str(tmp_path / "sdo.pcapng"))
    store = {"v": b""}
    bus.network.nodes[2].drive.objects.add(0x2F00, 0, Entry(DOMAIN, RW, lambda: store["v"],
                                                            lambda v: store.__setitem__("v", v)))
    blob = random.Random(2).randbytes(771)
    bus.complete(bus.sdo_read(2, 0x1018, 2, UNSIGNED32))
    bus.complete(bus.sdo_write(2, 0x6065, 0, 5215, UNSIGNED32))
    bus.complete(bus.sdo_write(2, 0x2F00, 0, blob, DOMAIN), 400)
    mapping = bus.complete(bus.sdo_read(2, 0x1A00, 3, UNSIGNED64))
    with pytest.raises(SdoAbort):
        bus.complete(bus.sdo_read(2, 0x5555, 0))
    bus.close()
    packets = _dissect(tmp_path / "sdo.pcapng")
    assert len(packets) > 20
    assert not [p for p in packets if "_ws.malformed" in p or "_ws.expert" in p]
    con = [(int(p["epl.asnd.sdo.seq.receive.con"][0]), int(p["epl.asnd.sdo.seq.send.con"][0])) for p in packets[:4]]
    assert con == [(0, 1), (1, 1), (1, 2), (2, 2)]
    requests = [(int(p["epl.asnd.sdo.cmd.command.id"][0]), int(p["epl.asnd.sdo.cmd.data.index"][0], 16),
                 int(p["epl.asnd.sdo.cmd.data.subindex"][0], 16))
                for p in packets if p["epl.src"][0] == "240" and "epl.asnd.sdo.cmd.data.index" in p]
    assert requests == [(2, 0x1018, 2), (1, 0x6065, 0), (1, 0x2F00, 0), (2, 0x1A00, 3), (2, 0x5555, 0)]
    write = next(p for p in packets if p.get("epl.asnd.sdo.cmd.data.index", ("",))[0] == "0x6065")
    assert write["epl.od.data.uint"][0] == "5215"
    initiate = next(p for p in packets if "epl.asnd.sdo.cmd.data.size" in p)
    assert int(initiate["epl.asnd.sdo.cmd.data.size"][0]) == len(blob) + 8
    reassembled = bytes.fromhex(next(p for p in packets if "epl.asnd.sdo.cmd.reassembled.data" in p)
                                ["epl.asnd.sdo.cmd.reassembled.data"][2])
    assert reassembled[:len(blob) + 8] == struct.pack("<IHBx", len(blob) + 8, 0x2F00, 0) + blob
    answers = [p for p in packets if p["epl.src"][0] == "2" and p.get("epl.asnd.sdo.cmd.command.id", ("",))[0] == "2"]
    assert bytes.fromhex(answers[-2]["data.data"][2]) == struct.pack("<Q", mapping)
    abort = answers[-1]["epl.asnd.sdo.cmd.abort.code"]
    assert abort[2] == "00000206" and "Object does not exist" in abort[1]


def test_sdo_over_the_udp_link_to_the_in_process_server(bench):
    """The same transfers through the ``udp`` backend's link and its server (the HIL's CN side)."""
    bus = open_in_process(parse_bus_config(bench))
    try:
        bus.boot()
        assert bus.complete(bus.sdo_read(2, 0x1018, 4, UNSIGNED32)) == 2
        assert bus.complete(bus.sdo_write(2, 0x6065, 0, 5215, UNSIGNED32)) == 5215
        assert bus.complete(bus.sdo_read(2, 0x6065, 0, UNSIGNED32)) == 5215
        with pytest.raises(SdoAbort, match="node 2: SDO read 0x5555/0 aborted: 0x06020000"):
            bus.complete(bus.sdo_read(2, 0x5555, 0))
    finally:
        bus.close()
