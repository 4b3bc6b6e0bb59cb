"""The raw backend against openPOWERLINK's controlled node over a veth pair (a judge nobody here
wrote): identification, boot to Operational, real-time cycles, loss of the node and its return."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

from drivers.codes import FaultCode
from drivers.events import EventKind
from drivers.hal import LinkError, open_bus
from drivers.powerlink.managing_node import BootTimeoutError
from drivers.powerlink.nmt import NmtCommand, NmtState
from drivers.powerlink.status import Signalling
from drivers.service_channel import SDO_WRITE, UNSIGNED8, UNSIGNED32
from controller.tools.oplk import CN_DEVICE_TYPE, node_section
from tests.paths import ROOT

CYCLE_S = 0.002


def oplk_bus(cn, **node):
    """A raw bus with the openPOWERLINK CN as its io node 1 (2 ms cycle, PRes late after 1.5 ms), its
    inputs and outputs mapped unless its 0x1020 says it holds that configuration (the CN keeps it
    across managing-node sessions). The CN counts a SoC lost 20 ms past its cycle: a Python MN on a
    shared machine stalls for milliseconds, and the CN's own loss of SoC is not what is judged here."""
    return open_bus({"backend": "raw", "interface": cn.interface, "cycle_time_s": CYCLE_S,
                     "control_period_s": CYCLE_S, "pres_timeout_s": 0.0015, "boot_timeout_s": 5.0,
                     "soc_tolerance_s": 0.02, "nodes": [node_section(1) | node]})


def _events(bus, kind: EventKind) -> list:
    return [e for e in bus.events if e.kind == kind]


def _loss_trips(bus, since: int) -> list:
    return [e for e in _events(bus, EventKind.THRESHOLD) if e.code == FaultCode.LOSS_PRES and e.bus_cycle >= since]


def test_boots_the_openpowerlink_cn_and_cycles_10_s(oplk_cn, realtime):
    bus = oplk_bus(oplk_cn)
    try:
        bus.boot()
        rec = bus.mn.records[1]
        assert rec.device_type == CN_DEVICE_TYPE
        assert rec.nmt == NmtState.OPERATIONAL and bus.node_operational(1)
        assert rec.ident.mac == oplk_cn.mac.hex(":")          # learned, not derived from the node id,
        assert bytes(rec.preq.buf[:6]) == oplk_cn.mac          # and where its PReqs go
        cycles = round(10.0 / CYCLE_S)
        sent = bus.link.cycles
        for _ in range(cycles):
            bus.exchange()
        timing = bus.link.timing()
        rt = timing["round_trip_ns"][-cycles:] / 1e3
        wake = timing["wakeup_ns"][-cycles:] / 1e3
        print(f"\nopenPOWERLINK CN, {cycles} cycles at {CYCLE_S * 1e3:g} ms: lost {rec.loss.cumulative}, late "
              f"{rec.late.cumulative}, overruns {bus.link.overruns}; PReq->PRes median {np.median(rt):.1f} µs, "
              f"p99 {np.percentile(rt, 99):.1f} µs, max {rt.max():.1f} µs; wake-up p99.9 "
              f"{np.percentile(wake, 99.9):.1f} µs")
        assert bus.link.cycles - sent == cycles
        # A stalled MN finds the PRes waiting in its socket (late, not lost): only a silent CN loses one.
        # The CN is a process too: on a shared 2-core machine it was seen silent for 4 ms (two cycles,
        # its PRes then came together), which trips the loss counter and resets it; a CI box cannot
        # promise 0, so a few per mille are accepted and every reset node must come back.
        assert rec.loss.cumulative <= cycles // 200
        while not bus.node_operational(1):
            bus.mn.cycle()
        assert len(_events(bus, EventKind.NODE_RESET)) <= rec.loss.cumulative // 2 + rec.late.cumulative // 2
        assert not _events(bus, EventKind.IDENT_MISMATCH)
    finally:
        bus.close()


def _sdo(bus, index: int, subindex: int) -> int:
    """A u8 read by SDO, cycling the bus until it completes."""
    req = bus.sdo_read(1, index, subindex, UNSIGNED8)
    while not req.done:
        bus.mn.cycle()
    return req.result()


def test_the_mapping_download_puts_process_data_in_both_directions(oplk_cn, realtime):
    """0x6000/1..4 mapped into its PRes and 0x6200/1..4 into its PReq at boot (then
    NMTResetConfiguration and identification again); an output sent in the PReq reads back by SDO.
    (The demo CN links only subindex 1 of 0x6000 and 0x6200 to its application: the others share
    one storage in its object dictionary, so only /1 is compared.)"""
    bus = oplk_bus(oplk_cn)
    try:
        bus.boot()
        mn = bus.mn
        assert mn.records[1].last_command == NmtCommand.START_NODE
        for first in (0x11, 0x5A):                          # two values: not a leftover that happens to match
            mn.records[1].set_outputs(bytes((first, 0x22, 0x33, 0x44)))
            for _ in range(20):
                bus.exchange()
            while not bus.node_operational(1):              # back from a late-PRes reset, reconfigured
                mn.cycle()
            for _ in range(5):
                bus.exchange()
            assert _sdo(bus, 0x6200, 1) == first
        # the PRes carries what the CN's object dictionary holds for the mapped inputs
        assert mn.records[1].pres_size == 4 and _sdo(bus, 0x1A00, 0) == 4 and _sdo(bus, 0x1600, 0) == 4
        assert int(mn.records[1].tpdo[0]) == _sdo(bus, 0x6000, 1)
        assert any(e.kind == EventKind.BOOT_COMPLETE for e in bus.events)
    finally:
        bus.close()


def test_the_second_boot_of_the_same_cn_skips_its_download(oplk_cn, realtime):
    """openPOWERLINK's CN reports the 0x1020 it was written in its IdentResponse (after
    NMTResetConfiguration): a first boot with this configuration (a CRC threshold 0x1C0F/3 no other
    test writes) downloads it, 0x1020 last; a second managing-node session finds it there and
    writes nothing; the CN holds what was written (cycle length 0x1006 in µs, 0x1C0F/3, 0x1C14 in ns)."""
    crc_threshold = {"index": 0x1C0F, "subindex": 3, "type": "u32", "value": 31}
    for expected, downloads in (("objects written, 0x1020 last", True), ("download skipped", False)):
        bus = oplk_bus(oplk_cn, objects=[crc_threshold])
        sent = []
        bus.mn.sdo = lambda *request, _sdo=bus.mn.sdo, **kw: sent.append(request[:4]) or _sdo(*request, **kw)
        try:
            bus.boot()
            rec = bus.mn.records[1]
            (event,) = _events(bus, EventKind.CONFIGURATION)
            assert expected in event.text
            print(f"\nopenPOWERLINK CN boot, {expected}: {bus.mn.bus_cycle} cycles ({bus.mn.bus_cycle * CYCLE_S:.2f} s)")
            if downloads:       # 2 mappings of 4 objects (7 writes each), 0x1006, 0x1C0B/3, 0x1C0D/3, 0x1C14, 0x1C0F/3, 0x1020
                assert len(sent) == 21 and sent[-2:] == [(1, SDO_WRITE, 0x1020, 1), (1, SDO_WRITE, 0x1020, 2)]
            else:
                assert not sent
            assert (rec.ident.configuration_date, rec.ident.configuration_time) == rec.stamp
            for index, subindex, value in ((0x1006, 0, 2000), (0x1C0F, 3, 31), (0x1C14, 0, 20_000_000),
                                           (0x1A00, 0, 4)):
                req = bus.sdo_read(1, index, subindex, UNSIGNED32 if index != 0x1A00 else UNSIGNED8)
                while not req.done:
                    bus.mn.cycle()
                assert req.result() == value, hex(index)
        finally:
            bus.close()
        # Without SoC the CN counts them lost and falls back to PreOperational1 by itself (two
        # losses, 2 x (2 ms + 20 ms)); a session that found it still Operational would send it
        # NMTResetNode, which reloads its defaults, 0x1020 included, and download again.
        time.sleep(0.5)


def test_a_wrong_identity_is_a_boot_error_naming_node_and_device_type(oplk_cn):
    bus = oplk_bus(oplk_cn, identity={"device_type": 0x00020192})
    try:
        with pytest.raises(BootTimeoutError, match=r"node 1 reports device type 0x000F0191, expected 0x00020192"):
            bus.boot()
    finally:
        bus.close()


def test_the_cn_killed_mid_cycle_trips_the_loss_counter_and_boots_again(oplk_cn, realtime):
    bus = oplk_bus(oplk_cn)
    try:
        bus.boot()
        for _ in range(50):
            bus.exchange()
        while not bus.node_operational(1):          # a scheduling stall may have made it late twice: back first
            bus.mn.cycle()
        rec = bus.mn.records[1]
        lost, killed = rec.loss.cumulative, bus.mn.bus_cycle
        oplk_cn.kill()
        for _ in range(100):
            bus.mn.cycle()
            if _loss_trips(bus, killed):
                break
        trip = _loss_trips(bus, killed)
        assert trip and trip[0].node_id == 1 and "LOSS_PRES threshold 15 reached on node 1" in trip[0].text
        assert rec.loss.cumulative - lost == 2                  # DS 301: 8 + 8 reaches threshold 15
        assert not bus.node_operational(1)
        starting = oplk_cn.start(background=True)
        deadline = time.monotonic() + 15.0
        while not _events(bus, EventKind.NODE_OPERATIONAL) and time.monotonic() < deadline:
            bus.mn.cycle()
        assert starting.wait(10) == 0
        assert bus.node_operational(1), oplk_cn.log[-2000:]
        assert bytes(bus.mn.records[1].preq.buf[:6]) == oplk_cn.mac
    finally:
        bus.close()


def test_the_error_signalling_reset_runs_as_openpowerlinks_cn_answers(oplk_cn, tmp_path):
    """The MN's StatusRequests carry ER until the CN answers one after the first with EC, then ER = 0
    until EC clears (openPOWERLINK's own MN handshake, dllkframe.c handleErrorSignaling). Its CN answers
    each StatusRequest with the flags it had before (it updates them afterwards): ER 1 (answered with EC 1
    after its start, EC 0 when an earlier managing node finished the handshake), 1, then 0 at least twice,
    as tshark decodes the capture."""
    tshark = shutil.which("tshark")
    if tshark is None:
        pytest.skip("tshark is not installed (Debian package tshark)")
    bus = oplk_bus(oplk_cn)
    path = tmp_path / "signalling.pcapng"
    try:
        bus.capture(str(path))
        bus.boot()
        for _ in range(20):
            bus.exchange()
        assert bus.mn.records[1].signalling.state == Signalling.READY
    finally:
        bus.close()
    out = subprocess.run([tshark, "-r", str(path), "-Y", "epl.soa.svid == 2 || epl.asnd.svid == 2", "-T", "fields",
                          "-e", "epl.soa.er", "-e", "epl.asnd.sres.ec"], capture_output=True, text=True, check=True)
    rows = (line.split("\t") for line in out.stdout.splitlines())
    steps = " ".join(f"ER{er}" if er else f"EC{ec}" for er, ec in rows)
    assert re.fullmatch(r"ER1 EC[01] (ER1 EC1 )+(ER0 EC1 )+ER0 EC0", steps), steps


def test_an_unknown_interface_is_named():
    if os.geteuid() != 0:
        pytest.skip("opening an AF_PACKET socket needs root")
    with pytest.raises(LinkError, match="bus.interface 'rwnosuch0' is not a network interface"):
        open_bus({"backend": "raw", "interface": "rwnosuch0", "nodes": [{"node_id": 1, "axes": [
            {"name": "a", "channel": 0}]}]})


def test_without_cap_net_raw_the_error_names_the_capability():
    """The socket opened by a process without CAP_NET_RAW (setpriv drops it from root's sets)."""
    if os.geteuid() != 0:
        pytest.skip("dropping a capability in a child needs to start with it (root)")
    code = ("from drivers.raw_socket import open_socket\n"
            "try:\n    open_socket('lo')\nexcept Exception as exc:\n    print(type(exc).__name__, exc)\n")
    out = subprocess.run(["setpriv", "--inh-caps=-net_raw", "--bounding-set=-net_raw", sys.executable, "-c", code],
                         capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), check=True)
    assert out.stdout.startswith("LinkError") and "CAP_NET_RAW" in out.stdout, out.stdout + out.stderr
