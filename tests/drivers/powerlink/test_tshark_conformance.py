"""Wireshark's EPL dissector (Debian ``tshark``) judges the frames of a sim-backend run captured by
``bus.capture``: boot (IdentRequest/IdentResponse; node 1, whose YAML identity reports a verify
configuration of its own, gets its configuration download by SDO and NMTResetConfiguration), cycles, NMT commands, a drive fault (EN, then
StatusRequest/StatusResponse), an explicit StatusRequest, NMTStopNode and NMTResetNode with the node's
second boot. Every frame must decode as POWERLINK with a good FCS, no malformed frame and no
error-level expert item per frame type, and the decoded fields must be what the MN and the CNs meant.

The frame type x count x malformed x expert table is printed (``pytest -s``). The run checks every
FCS and disables Wireshark's openSAFETY heuristic (:data:`OPTIONS`).
"""
from __future__ import annotations

import copy
import json
import shutil
import subprocess
from collections import Counter
from datetime import datetime, timezone

import pytest

from drivers.codes import FaultCode
from drivers.hal import open_bus
from drivers.powerlink.nmt import NmtCommand, NmtState
from drivers.powerlink.status import PRIORITY_GENERIC, PROFILE_CIA402
from tests.drivers.helpers import cycle

TSHARK = shutil.which("tshark")
pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (Debian package tshark; "
                                                         ".ci/run installs it)")
EPOCH = "2026-03-01T12:00:00Z"
EPOCH_S = 1_772_366_400
IDENTITY = {"vendor_id": 0x0000_0ABC, "product_code": 0x0402_0001, "revision": 0x0002_0007,
            "serial": 0xCAFE_0001, "configuration_date": 15_310, "configuration_time": 43_200_000,
            "ip_address": "192.168.100.31", "subnet_mask": "255.255.0.0", "default_gateway": "192.168.100.1",
            "host_name": "left-ankle", "response_time_ns": 12_000}
ERROR_SEVERITY = 0x00800000          # Wireshark's PI_ERROR
# FCS checked; openSAFETY off: its heuristic reads PDO payloads as openSAFETY frames (bipd's PDOs are not
# openSAFETY, and a payload that happens to look like one shows "Malformed Packet: openSAFETY")
OPTIONS = ("-o", "eth.check_fcs:TRUE", "--disable-protocol", "opensafety")
SERVICES = {"1": "IdentRequest", "2": "StatusRequest", "3": "NMTRequestInvite", "0": "NoService",
            "255": "UnspecifiedInvite"}
ASND = {"0x01": "IdentResponse", "0x02": "StatusResponse", "0x03": "NMTRequest", "0x04": "NMTCommand",
        "0x05": "SDO"}


@pytest.fixture(scope="module")
def run(tmp_path_factory, request):
    """The capture of the scenario (module docstring), tshark's JSON of it and the bus' records."""
    from tests.drivers.conftest import _BENCH
    section = copy.deepcopy(_BENCH)
    section["net_time_epoch"] = EPOCH
    section["nodes"][0]["identity"] = dict(IDENTITY)
    path = tmp_path_factory.mktemp("capture") / "boot.pcapng"
    bus = open_bus(section)
    bus.capture(str(path))
    bus.boot()
    for axis in bus.axes.values():
        axis.enable()
    cycle(bus, 5)
    bus.faults.apply("drive_fault", axis="knee", kind="over_temperature")
    cycle(bus, 5)
    bus.mn.request_status(3)
    cycle(bus, 2)
    bus.sdo_read(2, 0x1001, 0)                             # its answer waits at the CN: RS and PR
    cycle(bus, 2)
    bus.stop_node(3)
    cycle(bus, 3)
    bus.reset_node(3)
    cycle(bus, 30)
    records = {n: (r.ident, r.status, r.stamp) for n, r in bus.mn.records.items()}
    bus.close()
    out = subprocess.run([TSHARK, *OPTIONS, "-r", str(path), "-T", "json", "-V"],
                         capture_output=True, text=True, check=True, timeout=300)
    return [f["_source"]["layers"] for f in json.loads(out.stdout)], records


def kind(layers: dict) -> str:
    """The frame's type as the dissector decoded it: message type, and the service for SoA and ASnd."""
    epl = layers.get("epl", {})
    mtyp = epl.get("epl.mtyp")
    if mtyp == "5":
        return "SoA " + SERVICES.get(epl.get("epl.soa.svid"), "?")
    if mtyp == "6":
        return "ASnd " + ASND.get(epl.get("epl.asnd.svid"), "?")
    return {"1": "SoC", "3": "PReq", "4": "PRes"}.get(mtyp, f"not EPL ({layers['frame']['frame.protocols']})")


def _walk(tree):
    """Every (key, value) of a tshark JSON tree."""
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield k, v
            yield from _walk(v)
    elif isinstance(tree, list):
        for v in tree:
            yield from _walk(v)


def problems(layers: dict) -> tuple[int, int]:
    """(malformed, error-level expert items) of one frame."""
    malformed = sum(k == "_ws.malformed" for k, _ in _walk(layers))
    errors = sum(k == "_ws.expert.severity" and int(v) >= ERROR_SEVERITY for k, v in _walk(layers))
    return int(malformed > 0), errors


def net_time_ns(text: str) -> int:
    """A tshark absolute time ("Mar  1, 2026 12:00:00.001200000 UTC") as ns since 1970."""
    stamp, fraction = text.rsplit(".", 1)
    t = datetime.strptime(" ".join(stamp.split()), "%b %d, %Y %H:%M:%S").replace(tzinfo=timezone.utc)
    return int(t.timestamp()) * 1_000_000_000 + int(fraction.split()[0])


def test_every_frame_type_decodes_without_malformed_frames_or_errors(run):
    frames, _ = run
    table: dict[str, list[int]] = {}
    for layers in frames:
        row = table.setdefault(kind(layers), [0, 0, 0, 0])
        malformed, errors = problems(layers)
        row[0] += 1
        row[1] += malformed
        row[2] += errors
        row[3] += layers["eth"].get("eth.fcs.status") != "1"
    print(f"\n{'frame type':26} {'count':>6} {'malformed':>9} {'expert errors':>13} {'bad FCS':>7}")
    for name, (count, malformed, errors, fcs) in sorted(table.items()):
        print(f"{name:26} {count:6d} {malformed:9d} {errors:13d} {fcs:7d}")
    assert {"SoC", "PReq", "PRes", "SoA NoService", "SoA IdentRequest", "SoA StatusRequest", "SoA UnspecifiedInvite",
            "SoA NMTRequestInvite", "ASnd IdentResponse", "ASnd StatusResponse", "ASnd NMTCommand"} <= set(table)
    assert table["SoA NMTRequestInvite"][0] == table["ASnd NMTCommand"][0]      # the MN invites its own NMT queue
    assert not [name for name in table if name.startswith("not EPL") or name.endswith("?")]
    assert {name: row[1:] for name, row in table.items() if any(row[1:])} == {}


def test_ident_response_carries_the_yaml_identity_to_broadcast(run):
    frames, records = run
    idents = [f for f in frames if kind(f) == "ASnd IdentResponse"]
    # node 1 reports a 0x1020 of its own: it is configured, then identifies again; node 3 booted twice
    assert sorted(int(f["epl"]["epl.src"]) for f in idents) == [1, 1, 2, 3, 3]
    verify = iter([(15_310, 43_200_000), records[1][2]])     # node 1's: the YAML's, then its download's stamp
    for f in idents:
        epl = f["epl"]
        node = int(epl["epl.src"])
        assert epl["epl.dest"] == "255" and f["eth"]["eth.src"] == f"02:00:00:00:00:{node:02x}"
        assert epl["epl.asnd.ires.features_tree"]["epl.asnd.ires.features.bit0"] == "1"      # isochronous
        assert (epl["epl.asnd.ires.devicetype"], epl["epl.asnd.ires.devicetype.add"]) == ("0x0192", "2")
        assert int(epl["epl.asnd.ires.state"], 16) == NmtState.PRE_OPERATIONAL_1
        if node == 1:
            date, time = next(verify)
            assert {"vendorid": int(epl["epl.asnd.ires.vendorid"]), "productcode": int(epl["epl.asnd.ires.productcode"]),
                    "revision": int(epl["epl.asnd.ires.revisionno"]), "serial": int(epl["epl.asnd.ires.serialno"]),
                    "date": int(epl["epl.asnd.ires.confdate"]), "time": int(epl["epl.asnd.ires.conftime"]),
                    "ip": epl["epl.asnd.ires.ip"], "subnet": epl["epl.asnd.ires.subnet"],
                    "gateway": epl["epl.asnd.ires.gateway"], "host": epl["epl.asnd.ires.hostname"],
                    "response": int(epl["epl.asnd.ires.resptime"])} == {
                "vendorid": 0xABC, "productcode": 0x0402_0001, "revision": 0x0002_0007, "serial": 0xCAFE_0001,
                "date": date, "time": time, "ip": "192.168.100.31", "subnet": "255.255.0.0",
                "gateway": "192.168.100.1", "host": "left-ankle", "response": 12_000}
        else:                                              # the documented defaults
            assert (epl["epl.asnd.ires.ip"], epl["epl.asnd.ires.hostname"], epl["epl.asnd.ires.serialno"]) == (
                f"192.168.100.{node}", f"cn{node}", str(node))
    ident = records[1][0]                                  # the MN's record of the same frame
    assert (ident.vendor_id, ident.serial, ident.host_name, ident.ip_address, ident.mac) == (
        0xABC, 0xCAFE_0001, "left-ankle", "192.168.100.31", "02:00:00:00:00:01")


def test_preq_goes_to_the_mac_learned_from_the_ident_response(run):
    frames, _ = run
    learned = {f["epl"]["epl.src"]: f["eth"]["eth.src"] for f in frames if kind(f) == "ASnd IdentResponse"}
    preqs = [f for f in frames if kind(f) == "PReq"]
    assert preqs and all(f["eth"]["eth.dst"] == learned[f["epl"]["epl.dest"]] for f in preqs)


def test_nmt_commands_and_states_are_those_meant(run):
    frames, _ = run
    commands = [(int(f["epl"]["epl.dest"]), int(f["epl"]["epl.asnd.nmtcommand.cid"], 16))
                for f in frames if kind(f) == "ASnd NMTCommand"]
    boot = [(n, NmtCommand.ENABLE_READY_TO_OPERATE) for n in (1, 2, 3)] + [(n, NmtCommand.START_NODE) for n in (1, 2, 3)]
    assert commands[0] == (1, NmtCommand.RESET_CONFIGURATION)      # node 1's download applied in PreOp1
    assert sorted(commands[1:7]) == sorted(boot)
    assert commands[7:] == [(3, NmtCommand.STOP_NODE), (3, NmtCommand.RESET_NODE),
                            (3, NmtCommand.ENABLE_READY_TO_OPERATE), (3, NmtCommand.START_NODE)]
    last = {}
    for f in frames:
        if kind(f) == "PRes":
            last[f["epl"]["epl.src"]] = int(f["epl"]["epl.pres.stat"], 16)
    assert last == {"1": NmtState.OPERATIONAL, "2": NmtState.OPERATIONAL, "3": NmtState.OPERATIONAL}


def test_soc_net_time_is_the_epoch_plus_the_relative_time(run):
    frames, _ = run
    socs = [f["epl"] for f in frames if kind(f) == "SoC"]
    assert socs
    for epl in socs:
        assert net_time_ns(epl["epl.soc.nettime"]) == EPOCH_S * 1_000_000_000 + int(epl["epl.soc.relativetime"]) * 1000


def test_a_drive_fault_is_signalled_by_en_and_reported_in_the_status_response(run):
    frames, records = run
    en_at = next(k for k, f in enumerate(frames) if kind(f) == "PRes" and f["epl"]["epl.src"] == "2"
                 and f["epl"]["epl.pres.flags_tree"]["epl.pres.en"] == "1")
    request = next(k for k, f in enumerate(frames[en_at:], en_at) if kind(f) == "SoA StatusRequest")
    assert frames[request]["epl"]["epl.soa.svtg"] == "2"
    response = frames[request + 1]["epl"]
    assert kind(frames[request + 1]) == "ASnd StatusResponse" and response["epl.asnd.sres.en"] == "1"
    entries = [e for name, e in response["ErrorCodeList: 13 entries"].items()
               if e["epl.asnd.sres.el.entry.type"] != "0x0000"]
    types = [(e["epl.asnd.sres.el.entry.type_tree"]["epl.asnd.sres.el.entry.type.bit15"],
              e["epl.asnd.sres.el.entry.type_tree"]["epl.asnd.sres.el.entry.type.mode"],
              int(e["epl.asnd.sres.el.entry.type_tree"]["epl.asnd.sres.el.entry.type.profile"]),
              int(e["epl.asnd.sres.el.entry.code"])) for e in entries]
    assert types == [("1", "1", PROFILE_CIA402, FaultCode.OVER_TEMPERATURE),       # active now
                     ("0", "3", PROFILE_CIA402, FaultCode.OVER_TEMPERATURE)]       # in the history
    assert response["StaticErrorBitfield"]["epl.asnd.res.seb.bit3"] == "1"       # temperature
    stamp = net_time_ns(entries[0]["epl.asnd.sres.el.entry.time"])
    assert EPOCH_S * 1_000_000_000 < stamp < net_time_ns(next(f["epl"]["epl.soc.nettime"] for f in frames[request:]
                                                              if kind(f) == "SoC"))
    # the MN acknowledges: every later PReq to node 2 carries EA = EN
    later = [f["epl"]["epl.preq.flags_tree"]["epl.preq.ea"] for f in frames[request:]
             if kind(f) == "PReq" and f["epl"]["epl.dest"] == "2"]
    assert later and set(later) == {"1"}
    assert [e.code for e in records[2][1].entries] == [FaultCode.OVER_TEMPERATURE] * 2


def test_pres_with_pending_requests_carries_their_priority(run):
    frames, _ = run
    pending = [f["epl"] for f in frames if kind(f) in ("PRes", "ASnd IdentResponse", "ASnd StatusResponse")]
    flags = Counter()
    for epl in pending:
        rs = next((v for k, v in _walk(epl) if k.endswith(".rs")), "0")
        pr = next((v for k, v in _walk(epl) if k.endswith(".pr")), "0")
        flags[(rs, pr)] += 1
    assert set(flags) == {("0", "0"), ("1", str(PRIORITY_GENERIC))}, flags       # the SDO answer waits once


def _signalling(frames: list, node: str) -> list[tuple[str, str]]:
    """Node ``node``'s StatusRequest SoAs and StatusResponses in order: ("ER", bit) and ("EC", bit)."""
    out = []
    for f in frames:
        epl = f["epl"]
        if kind(f) == "SoA StatusRequest" and epl["epl.soa.svtg"] == node:
            out.append(("ER", epl["epl.soa.er"]))
        elif kind(f) == "ASnd StatusResponse" and epl["epl.src"] == node:
            out.append(("EC", epl["epl.asnd.sres.ec"]))
    return out


def test_each_boot_resets_the_error_signalling_before_en_counts(run):
    """openPOWERLINK's MN handshake (dllkframe.c handleErrorSignaling) as the dissector reads it: StatusRequests
    with ER until an answer to the second or a later one shows EC, then ER = 0 until EC clears; the sim CN
    answers with its new flags at once, so each boot takes exactly three (ER 1, 1, 0; EC 1, 1, 0). Node 3
    booted twice: the handshake ran twice, and ER is never set outside it."""
    frames, _ = run
    handshake = [("ER", "1"), ("EC", "1"), ("ER", "1"), ("EC", "1"), ("ER", "0"), ("EC", "0")]
    for node in ("1", "2", "3"):
        seen = _signalling(frames, node)
        boots = 2 if node == "3" else 1
        starts = [k for k, step in enumerate(seen) if step == ("ER", "1") and (k == 0 or seen[k - 2] != ("ER", "1"))]
        assert len(starts) == boots, (node, seen)
        for k in starts:
            assert seen[k:k + len(handshake)] == handshake, (node, seen)
        assert sum(step == ("ER", "1") for step in seen) == 2 * boots, (node, seen)
    # the drive fault's request (node 2) came after its handshake, with ER = 0 and EC = 0
    assert _signalling(frames, "2")[len(handshake):][:2] == [("ER", "0"), ("EC", "0")]
