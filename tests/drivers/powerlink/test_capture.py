"""The pcapng capture (drivers/powerlink/capture.py): what tshark reads back from a file is every
frame the managing node sent and received, byte for byte, with lock-step time stamps; the ring's
recording allocates nothing and drops (counted) instead of blocking."""
from __future__ import annotations

import copy
import json
import shutil
import subprocess
import tracemalloc

import pytest

from drivers.backends.sim import open_sim
from drivers.config import parse_bus_config
from drivers.powerlink import frames
from drivers.powerlink.capture import Capture
from tests.drivers.conftest import _BENCH
from tests.drivers.helpers import cycle
from tests.numpy_allocs import CountingHandler

TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (Debian package tshark; "
                                                           ".ci/run installs it)")


def tshark_frames(path) -> list[dict]:
    out = subprocess.run([TSHARK, "-r", str(path), "-T", "json", "-x"], capture_output=True, text=True, check=True,
                         timeout=300)
    return [f["_source"]["layers"] for f in json.loads(out.stdout)]


@needs_tshark
def test_the_file_holds_every_frame_of_the_wire_with_net_time_stamps(tmp_path):
    bus = open_sim(parse_bus_config(copy.deepcopy(_BENCH)), record_frames=True)
    path = tmp_path / "run.pcapng"
    bus.capture(str(path))
    bus.boot()
    cycle(bus, 4)
    wire = list(bus.link.link.frames)                     # the RecordingLink under the capture
    bus.close()
    read = tshark_frames(path)
    raw = [bytes.fromhex(f["frame_raw"][0]) for f in read]
    assert sorted(raw) == sorted(wire) and len(raw) > 100
    stamps = [int(f["frame"]["frame.time_epoch"].replace(".", "")) for f in read]       # ns, exactly
    assert all(a < b for a, b in zip(stamps, stamps[1:]))
    for f, data in zip(read, raw):                         # a SoC is stamped with its own NetTime
        if data[frames.MESSAGE_TYPE_AT] == frames.MessageType.SOC:
            s, ns = int.from_bytes(data[20:24], "little"), int.from_bytes(data[24:28], "little")
            assert f["frame"]["frame.time_epoch"] == f"{s}.{ns:09d}"
    outbound = {f["frame"]["frame.p2p_dir"] for f, d in zip(read, raw) if d[frames.SRC_NODE_AT] == frames.MN_NODE_ID}
    assert outbound == {"0"}                              # "sent": the MN's frames carry the outbound flag


def test_recording_allocates_nothing_and_a_full_ring_drops(tmp_path):
    capture = Capture(tmp_path / "ring.pcapng", slots=64, drain_s=3600.0)   # the test drains
    frame = memoryview(bytes(frames.pres_frame(3, 1400).seal()))
    capture.record(frame, 1, True)
    capture.drain()
    with CountingHandler() as arrays:
        tracemalloc.start()
        for k in range(60):
            capture.record(frame, k + 2, False)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert arrays.count == 0 and peak < 1024               # no copy of the frame (1428 bytes) on the way
    for k in range(10):                                    # 4 fit, 6 are dropped
        capture.record(frame, 100 + k, False)
    assert capture.dropped == 6
    assert capture.drain() == 64
    capture.close()
    if TSHARK:
        assert len(tshark_frames(tmp_path / "ring.pcapng")) == 65
