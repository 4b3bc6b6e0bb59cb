"""Cycle log: MCAP channels read by mcap's own reader, crash-safe up to the last chunk (a
writer killed with SIGKILL), `bipd plot` PNGs,
`bipd log info`."""
from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from mcap.reader import make_reader

from controller.cli import main
from controller.daemon.io.log import (CHANNELS, EVENTS, JOINT_STATES, TRUTH, CycleLogWriter, LogError, find_log, log_info,
                               new_run_dir, read_log)
from controller.tools.plot import plot_log
from controller.daemon.telemetry import RecordLayout
from tests.paths import ROOT

NAMES = ("ankle_lateral", "ankle_sagittal", "knee", "hip")
START_NS = 1_795_000_000_123_456_789            # 2026-11-18, a start with every digit used


def records(layout: RecordLayout, count: int) -> np.ndarray:
    s = layout.slices
    out = np.zeros((count, layout.size))
    t = np.arange(count) * 0.002
    out[:, s["t"]] = t[:, None]
    out[:, s["cycle"]] = np.arange(count)[:, None]
    q = np.stack([0.1 * np.sin(t), 0.2 * np.sin(t), -0.5 * (1 - np.cos(t)), 0.4 * (1 - np.cos(t))], axis=1)
    out[:, s["q"]] = q
    out[:, s["q_ref"]] = q + 0.001
    out[:, s["margins"]] = np.nan
    out[:, s["margins"].start:s["margins"].start + 4] = 0.03 + 0.01 * np.sin(t)[:, None]
    out[:, s["wake_us"]] = np.random.default_rng(0).gamma(2.0, 3.0, count)[:, None]
    out[:, s["task_us"]] = [10.0, 20.0, 5.0, 8.0, 3.0, 1.0]
    return out


def write(path: Path, recs: np.ndarray, **kw) -> CycleLogWriter:
    w = CycleLogWriter(path, RecordLayout(4), NAMES, **kw)
    for r in recs:
        w.append(r)
    w.close()
    return w


def same(a: np.ndarray, b: np.ndarray) -> None:
    np.testing.assert_array_equal(a, b)          # NaN == NaN here


def test_every_record_field_is_on_exactly_one_channel():
    layout = RecordLayout(4)
    fields = [name for ch in CHANNELS for _, name in ch.fields]
    assert sorted(fields + ["t"]) == sorted(layout.slices)


@pytest.mark.slow
def test_round_trip_and_mcap_reader(tmp_path):
    """Records come back bit for bit (NaN margins included); mcap's own reader sees one
    jsonschema/json channel per kind with the loop's t as log time, and the events."""
    layout = RecordLayout(4)
    recs = records(layout, 2000)
    w = CycleLogWriter(tmp_path / "c.mcap", layout, NAMES, chunk_bytes=50_000, meta={"robot": "bip_leg"},
                       start_ns=START_NS)
    for r in recs:
        w.append(r)
    w.event({"cycle": 100, "kind": "TRANSITION", "from_state": "ENABLED", "reason": "COMMAND"})
    w.truth({"t": 0.25, "foot_tilt": 0.01})
    w.close()
    assert w.chunks > 3
    back = read_log(tmp_path / "c.mcap")
    same(back.records, recs)
    assert back.joint_names == NAMES and back.header["meta"] == {"robot": "bip_leg"} and back.header["complete"]
    assert back.events[0]["t"] == pytest.approx(0.2) and back.truth == [{"t": 0.25, "foot_tilt": 0.01}]
    with open(tmp_path / "c.mcap", "rb") as f:
        reader = make_reader(f)
        summary = reader.get_summary()
        topics = {c.topic: (c.message_encoding, summary.schemas[c.schema_id].encoding)
                  for c in summary.channels.values()}
        assert topics == ({t: ("json", "jsonschema") for t in [c.topic for c in CHANNELS] + [EVENTS, TRUTH]}
                          | {JOINT_STATES: ("cdr", "ros2msg")})
        counts = {summary.channels[k].topic: v for k, v in summary.statistics.channel_message_counts.items()}
        assert all(counts[c.topic] == 2000 for c in CHANNELS)
        for schema, channel, message in reader.iter_messages(topics=["/joint_state"]):
            msg = json.loads(message.data)
            assert message.log_time == START_NS + round(msg["t"] * 1e9)
            assert msg["name"] == list(NAMES) and len(msg["position"]) == len(msg["velocity"]) == 4
            props = json.loads(schema.data)["properties"]
            assert set(msg) == set(props) and props["position"]["type"] == "array"
        cog = json.loads(next(reader.iter_messages(topics=["/cog"]))[2].data)
        assert cog["margins"][4:] == [None] * 4                    # NaN is null, valid JSON


KILLED_WRITER = """
import sys
from controller.daemon.io.log import CycleLogWriter
from controller.daemon.telemetry import RecordLayout
from tests.controller.daemon.io.test_io_log import NAMES, records
recs = records(RecordLayout(4), 200_000)
w = CycleLogWriter(sys.argv[1], RecordLayout(4), NAMES, chunk_bytes=20_000)
chunks = 0
for r in recs:
    w.append(r)
    if w.chunks != chunks:
        chunks = w.chunks
        print(w.records, flush=True)
"""


@pytest.mark.slow
def test_sigkill_mid_run_loses_at_most_the_last_chunk(tmp_path):
    """The writer is killed without a chance to close: every record of the chunks it had
    reported flushed is read back (by mcap's stream reader, without summary or footer)."""
    path = tmp_path / "killed.mcap"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    child = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(path)], stdout=subprocess.PIPE,
                             text=True, env=env, cwd=ROOT)
    try:
        flushed = [int(child.stdout.readline()) for _ in range(3)]
        os.kill(child.pid, signal.SIGKILL)
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL and flushed[0] < flushed[1] < flushed[2]
    back = read_log(path)
    assert not back.header["complete"]
    assert flushed[2] <= len(back.records) < 200_000
    same(back.records, records(RecordLayout(4), len(back.records)))
    info = log_info(path)
    assert not info["complete"] and info["records"] == len(back.records)


@pytest.mark.slow
def test_a_file_torn_at_any_byte_reads_as_a_prefix(tmp_path):
    """Cut anywhere (a write interrupted mid-record), the reader returns the records of the
    complete chunks before the cut, never a wrong value; more bytes never give fewer records."""
    layout = RecordLayout(4)
    recs = records(layout, 400)                          # 9 chunks of 20 kB: as many chunk boundaries as needed
    w = CycleLogWriter(tmp_path / "full.mcap", layout, NAMES, chunk_bytes=20_000)
    start = (tmp_path / "full.mcap").stat().st_size      # header, schemas, channels, metadata
    for r in recs:
        w.append(r)
    w.flush()                                            # no close: no summary, no footer
    data = (tmp_path / "full.mcap").read_bytes()
    counts = []
    for cut in list(range(start, len(data), 4999)) + [len(data) - 1, len(data)]:   # ~4 cuts per 20 kB chunk
        (tmp_path / "torn.mcap").write_bytes(data[:cut])
        back = read_log(tmp_path / "torn.mcap")
        same(back.records, recs[:len(back.records)])
        counts.append(len(back.records))
    assert counts == sorted(counts) and counts[0] == 0 and counts[-1] == len(recs) and len(set(counts)) > 5


def test_bad_logs_are_named(tmp_path):
    with pytest.raises(LogError, match="is not a cycle log"):
        read_log(tmp_path)
    layout = RecordLayout(4)
    write(tmp_path / "c.mcap", [])
    with pytest.raises(LogError, match="already exists"):
        CycleLogWriter(tmp_path / "c.mcap", layout, NAMES)
    with pytest.raises(LogError, match="no complete chunk"):
        plot_log(tmp_path / "c.mcap", tmp_path / "png")
    (tmp_path / "text.mcap").write_text("not a log")
    with pytest.raises(LogError, match="text.mcap is not an MCAP file"):
        read_log(tmp_path / "text.mcap")


@pytest.mark.slow
def test_plot_writes_pngs(tmp_path):
    write(tmp_path / "c.mcap", records(RecordLayout(4), 1200))
    paths = plot_log(tmp_path / "c.mcap", tmp_path / "png")
    assert [p.name for p in paths] == ["joint_tracking.png", "cog_margins.png", "cycle_times.png"]
    for p in paths:
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_stabilizer_flags_reach_the_log_and_the_margins_plot(tmp_path):
    from controller.tools.plot import raised_flags
    from controller.daemon.telemetry import STAB_FLAGS, stab_bits

    layout = RecordLayout(4)
    rec = records(layout, 100)
    rec[40:60, layout.slices["stab_flags"]] = stab_bits(("cog_outside", "force_saturated"))
    write(tmp_path / "c.mcap", rec, chunk_bytes=5000)
    log = read_log(tmp_path / "c.mcap")
    assert log.header["stab_flags"] == list(STAB_FLAGS)
    raised = raised_flags(log)
    assert list(raised) == ["cog_outside"]              # force saturation is routine, not marked
    assert np.flatnonzero(raised["cog_outside"]).tolist() == list(range(40, 60))
    with open(tmp_path / "c.mcap", "rb") as f:
        names = [json.loads(m.data)["flag_names"] for _, _, m in make_reader(f).iter_messages(topics=["/stabilizer"])]
    assert names[39] == [] and sorted(names[40]) == ["cog_outside", "force_saturated"]


def test_each_run_gets_its_own_folder_and_the_parent_reads_the_latest(tmp_path):
    """A restarted daemon (same io.log_dir) must not meet the previous run's log."""
    layout = RecordLayout(4)
    runs = []
    for count in (300, 700):
        run = new_run_dir(tmp_path / "log")
        write(run / "cycles.mcap", records(layout, count))
        runs.append(run)
    assert runs[0] != runs[1] and runs[0].parent == runs[1].parent == tmp_path / "log"
    assert sorted(runs) == runs                                  # names sort in start order
    assert find_log(tmp_path / "log") == runs[1] / "cycles.mcap" and find_log(runs[0]) == runs[0] / "cycles.mcap"
    assert len(read_log(tmp_path / "log").records) == 700
    assert len(read_log(runs[0]).records) == 300
    with pytest.raises(LogError, match="is not a cycle log"):
        find_log(tmp_path)


def test_log_info(tmp_path, capsys):
    w = CycleLogWriter(tmp_path / "c.mcap", RecordLayout(4), NAMES, start_ns=START_NS)
    for r in records(RecordLayout(4), 501):
        w.append(r)
    w.event({"cycle": 3, "kind": "COMMAND"})
    w.close()
    assert main(["log", "info", str(tmp_path / "c.mcap"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["records"] == 501 and info["complete"] and info["t"] == [0.0, 1.0]
    assert info["start_ns"] == START_NS and info["start"] == "2026-11-18T11:06:40.123456+00:00"
    assert info["channels"]["/joint_state"] == {"type": "joint_state", "encoding": "json", "messages": 501,
                                                "t": [0.0, 1.0]}
    assert info["channels"][JOINT_STATES] == {"type": "sensor_msgs/msg/JointState", "encoding": "cdr",
                                              "messages": 501, "t": [0.0, 1.0]}
    assert info["channels"][EVENTS] == {"type": "events", "encoding": "json", "messages": 1, "t": [0.006, 0.006]}
    assert main(["log", "info", str(tmp_path / "c.mcap")]) == 0
    out = capsys.readouterr().out
    assert "501 records, t 0.000 .. 1.000 s (1.000 s), started 2026-11-18T11:06:40.123456+00:00" in out
    assert "/joint_states" in out and "sensor_msgs/msg/JointState (cdr)" in out
    assert main(["log", "info", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.startswith(f"bipd log: error: {tmp_path / 'none'} is not a cycle log")


@contextmanager
def address_space_cap(extra: int = 2 ** 31):
    """This process may map at most ``extra`` more bytes: an allocation a damaged length field asks for
    (tens of GB) fails here as it would on a small controller PC, whatever this host overcommits."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (vm + extra, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def chunk_length_at(data: bytes) -> int:
    """Offset of the first Chunk record's compressed-records length (MCAP: opcode 0x06, then a u64 record
    length; its body: start and end times u64, uncompressed size u64, CRC u32, compression string, the
    records' u64 length)."""
    at = 8                                              # the magic
    while data[at] != 0x06:
        at += 9 + int.from_bytes(data[at + 1:at + 9], "little")
    body = at + 9 + 8 + 8 + 8 + 4
    return body + 4 + int.from_bytes(data[body:body + 4], "little")


def test_a_bit_flipped_anywhere_reads_as_a_prefix_or_one_named_error(tmp_path, capsys):
    """A corrupted file (a bit flipped on the disk or in a copy) is read up to the damage, as a torn
    one is, or refused with one line; never a traceback (zstd's error used to escape ``bipd log info``; a
    chunk's length with a high bit flipped, 64 GB, was read as asked: a MemoryError on a host that does
    not overcommit; the reads run under an address-space cap)."""
    layout = RecordLayout(4)
    recs = records(layout, 200)                          # 5 chunks: header, chunks, summary and footer all hit
    write(tmp_path / "full.mcap", recs, chunk_bytes=20_000)
    data = (tmp_path / "full.mcap").read_bytes()
    bad = tmp_path / "bad.mcap"
    refused = prefixes = 0
    for at in [*range(0, len(data), max(1, len(data) // 60)), chunk_length_at(data) + 4]:   # and bit 36 of a length
        flipped = bytearray(data)
        flipped[at] ^= 0x10
        bad.write_bytes(bytes(flipped))
        with address_space_cap():
            try:
                back = read_log(bad)
            except LogError:
                refused += 1
            else:
                assert len(back.records) <= len(recs)
                prefixes += 1
            code = main(["log", "info", str(bad)])
        out, err = capsys.readouterr()
        assert code in (0, 2) and "Traceback" not in out + err, (at, out, err)
    assert refused and prefixes
