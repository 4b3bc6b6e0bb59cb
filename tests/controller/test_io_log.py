"""Cycle log (chunked, crash-safe up to the last chunk) and `bipd plot` PNGs."""
from __future__ import annotations

import numpy as np
import pytest

from controller.io.log import CycleLogWriter, LogError, find_log, new_run_dir, read_log
from controller.io.plot import plot_log
from controller.telemetry import RecordLayout

NAMES = ("ankle_lateral", "ankle_sagittal", "knee", "hip")


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


def test_round_trip_in_chunks(tmp_path):
    layout = RecordLayout(4)
    recs = records(layout, 20)
    w = CycleLogWriter(tmp_path / "log", layout, NAMES, chunk_records=7, meta={"robot": "bip_leg"})
    for r in recs:
        w.append(r)
    w.close()
    assert sorted(p.name for p in (tmp_path / "log").iterdir()) == [
        "chunk_000000.npy", "chunk_000001.npy", "chunk_000002.npy", "header.json"]
    back = read_log(tmp_path / "log")
    np.testing.assert_array_equal(back.records, recs)
    assert back.joint_names == NAMES and back.header["meta"] == {"robot": "bip_leg"}
    np.testing.assert_array_equal(back.field("q")[:, 2], recs[:, layout.slices["q"]][:, 2])
    assert back.field("cycle").shape == (20,)


def test_crash_loses_at_most_the_last_chunk(tmp_path):
    layout = RecordLayout(4)
    recs = records(layout, 20)
    w = CycleLogWriter(tmp_path / "log", layout, NAMES, chunk_records=7)
    for r in recs:
        w.append(r)
    (tmp_path / "log" / "chunk_000002.npy.tmp").write_bytes(b"\x93NUMPY torn")   # killed mid-write
    back = read_log(tmp_path / "log")                                            # no close()
    np.testing.assert_array_equal(back.records, recs[:14])


def test_bad_logs_are_named(tmp_path):
    with pytest.raises(LogError, match="header.json is missing"):
        read_log(tmp_path)
    layout = RecordLayout(4)
    CycleLogWriter(tmp_path / "log", layout, NAMES).close()
    with pytest.raises(LogError, match="already holds a cycle log"):
        CycleLogWriter(tmp_path / "log", layout, NAMES)
    np.save(tmp_path / "log" / "chunk_000000.npy", np.zeros((3, 5)))
    with pytest.raises(LogError, match=r"shape \(3, 5\)"):
        read_log(tmp_path / "log")
    with pytest.raises(LogError, match="no complete chunk"):
        CycleLogWriter(tmp_path / "empty", layout, NAMES).close()
        plot_log(tmp_path / "empty", tmp_path / "png")


def test_plot_writes_pngs(tmp_path):
    layout = RecordLayout(4)
    w = CycleLogWriter(tmp_path / "log", layout, NAMES, chunk_records=500)
    for r in records(layout, 1200):
        w.append(r)
    w.close()
    paths = plot_log(tmp_path / "log", tmp_path / "png")
    assert [p.name for p in paths] == ["joint_tracking.png", "cog_margins.png", "cycle_times.png"]
    for p in paths:
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_stabilizer_flags_reach_the_log_header_and_the_margins_plot(tmp_path):
    from controller.io.plot import raised_flags
    from controller.telemetry import STAB_FLAGS, stab_bits

    layout = RecordLayout(4)
    rec = records(layout, 100)
    rec[40:60, layout.slices["stab_flags"]] = stab_bits(("cog_outside", "force_saturated"))
    w = CycleLogWriter(tmp_path / "log", layout, NAMES, chunk_records=50)
    for r in rec:
        w.append(r)
    w.close()
    log = read_log(tmp_path / "log")
    assert log.header["stab_flags"] == list(STAB_FLAGS)
    raised = raised_flags(log)
    assert list(raised) == ["cog_outside"]              # force saturation is routine, not marked
    assert np.flatnonzero(raised["cog_outside"]).tolist() == list(range(40, 60))


def test_each_run_gets_its_own_folder_and_the_parent_reads_the_latest(tmp_path):
    """A restarted daemon (same io.log_dir) must not meet the previous run's log."""
    layout = RecordLayout(4)
    runs = []
    for count in (300, 700):
        run = new_run_dir(tmp_path / "log")
        w = CycleLogWriter(run, layout, NAMES, chunk_records=500)
        for r in records(layout, count):
            w.append(r)
        w.close()
        runs.append(run)
    assert runs[0] != runs[1] and runs[0].parent == runs[1].parent == tmp_path / "log"
    assert sorted(runs) == runs                                  # names sort in start order
    assert find_log(tmp_path / "log") == runs[1] and find_log(runs[0]) == runs[0]
    assert len(read_log(tmp_path / "log").records) == 700
    assert len(read_log(runs[0]).records) == 300
    assert [p.parent for p in plot_log(tmp_path / "log", runs[1])] == [runs[1]] * 3
    with pytest.raises(LogError, match="header.json is missing"):
        find_log(tmp_path)
