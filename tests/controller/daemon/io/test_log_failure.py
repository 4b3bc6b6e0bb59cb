"""A cycle log that cannot be written (a full disk) is never silent: the writer keeps exactly the
chunks on disk and counts only those, the I/O process publishes a LOG_FAILED warning, shows it in
``status`` and refuses new motions (``io.on_log_failure``), and a daemon on a full disk still
stops with exit 0. A robot without the rig logs no ``/rig`` channel and no empty ``/hil_truth``."""
from __future__ import annotations

import errno
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
import zmq
from mcap.reader import make_reader

import controller.daemon.io.log as log_module
from controller.cli import main
from controller.daemon.codes import State
from controller.daemon.io.log import RIG, TRUTH, CycleLogWriter, log_info, read_log
from controller.daemon.telemetry import RecordLayout
from controller.tools.client import Client, CommandError
from controller.tools.plot import plot_log
from controller.tools.ports import free_port
from tests.controller.test_cli_errors import config, run_error
from tests.controller.daemon_process import booted
from tests.controller.daemon.io.test_io_log import NAMES, START_NS, records, same
from tests.paths import DEPLOY, ROBOTS


class FullDisk(io.FileIO):
    """A file on a disk with ``room`` bytes left: a write beyond it writes what fits, then fails
    with ENOSPC (as a real full disk does)."""

    def __init__(self, path: str | Path, room: int) -> None:
        super().__init__(path, "x")
        self.room = room

    def write(self, b) -> int:
        if self.room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        data = bytes(b)[:self.room]
        self.room -= len(data)
        return super().write(data)


@pytest.fixture
def full_disk(monkeypatch):
    """The cycle log's files open on a :class:`FullDisk` of ``room`` bytes; yields the list of them."""
    opened: list[FullDisk] = []
    room = {"bytes": 1 << 40}

    def fake_open(path, mode, *args, **kw):
        if mode != "xb":                          # a reader
            return io.open(path, mode, *args, **kw)
        opened.append(FullDisk(path, room["bytes"]))
        return io.BufferedWriter(opened[-1])

    monkeypatch.setattr(log_module, "open", fake_open, raising=False)
    yield room, opened


def test_a_full_disk_keeps_the_chunks_on_disk_and_counts_only_those(tmp_path, full_disk):
    """Whatever byte the disk fills at (inside a chunk, inside a chunk's index, inside the summary
    at close), the file reads back as exactly the ``records`` counted, close never raises twice."""
    room, _ = full_disk
    layout = RecordLayout(4)
    recs = records(layout, 3000)
    whole = tmp_path / "whole.mcap"
    w = CycleLogWriter(whole, layout, NAMES, chunk_bytes=20_000, start_ns=START_NS)
    ends = []                                    # file size after each chunk
    for r in recs:
        w.append(r)
        if w.chunks > len(ends):
            ends.append(w._file.tell())
    w.close()
    size = whole.stat().st_size
    cuts = [ends[2] + 1, ends[4] - 3, (ends[5] + ends[6]) // 2, size - 10, size - 200]
    for k, cut in enumerate(cuts):
        room["bytes"] = cut
        path = tmp_path / f"full-{k}.mcap"
        w = CycleLogWriter(path, layout, NAMES, chunk_bytes=20_000, start_ns=START_NS)  # same bytes
        try:
            for r in recs:
                w.append(r)
            w.close()
        except OSError as e:
            assert e.errno == errno.ENOSPC
        else:
            raise AssertionError(f"a disk with {cut} bytes of room took the whole {size}-byte log")
        assert isinstance(w.error, OSError) and w.error.errno == errno.ENOSPC
        w.close()                                # nothing more to write, no second error
        back = read_log(path)
        assert 0 < w.records == len(back.records) == log_info(path)["records"], (cut, w.records)
        same(back.records, recs[:w.records])


def test_a_write_after_the_failure_is_refused_not_buffered(tmp_path, full_disk):
    room, _ = full_disk
    room["bytes"] = 30_000
    w = CycleLogWriter(tmp_path / "c.mcap", RecordLayout(4), NAMES, chunk_bytes=20_000)
    with pytest.raises(OSError):
        for r in records(RecordLayout(4), 3000):
            w.append(r)
    with pytest.raises(log_module.LogError, match="stopped on an earlier write error"):
        w.append(records(RecordLayout(4), 1)[0])


def test_a_log_without_the_rig_has_no_rig_channel_and_no_empty_truth(tmp_path, capsys):
    layout = RecordLayout(4)
    recs = records(layout, 500)
    recs[:, layout.slices["rig_ferr"]] = float("nan")           # a robot without the rig
    path = tmp_path / "leg.mcap"
    w = CycleLogWriter(path, layout, NAMES, chunk_bytes=20_000, rig=False)
    for r in recs:
        w.append(r)
    w.close()
    with open(path, "rb") as f:
        topics = {c.topic for c in make_reader(f).get_summary().channels.values()}
    assert RIG not in topics and TRUTH not in topics and "/joint_state" in topics
    info = log_info(path)
    assert RIG not in info["channels"] and TRUTH not in info["channels"] and info["records"] == 500
    same(read_log(path).records, recs)                           # rig_ferr reads NaN, as written
    assert main(["log", "info", str(path)]) == 0 and "500" in capsys.readouterr().out
    assert len(plot_log(path, tmp_path / "plots")) == 3

    with_truth = tmp_path / "truth.mcap"                        # HIL truth declares its channel
    w = CycleLogWriter(with_truth, layout, NAMES, rig=False)
    w.append(recs[0])
    w.truth({"t": 0.0, "platform": [0.0, 0.0]})
    w.append(recs[1])
    w.close()
    back = read_log(with_truth)
    assert len(back.records) == 2 and back.truth == [{"t": 0.0, "platform": [0.0, 0.0]}]
    assert log_info(with_truth)["channels"][TRUTH]["messages"] == 1


# ------------------------------------------------------------------ the I/O process (fake loop)

def event_subscriber(endpoint: str) -> zmq.Socket:
    """A SUB socket on the ``event`` frames of ``endpoint``, past its slow-joiner delay (zguide ch. 1)."""
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.linger = 0
    sub.subscribe(b"event")
    sub.connect(endpoint)
    time.sleep(0.2)
    return sub


def _failed_rig(rig_factory, tmp_path, full_disk, policy: str, stabilize: bool = False):
    """A rig in HOLD (STABILIZING with ``stabilize``) whose cycle log's disk fills once a subscriber
    listens; returns (rig, events)."""
    _, opened = full_disk
    log = CycleLogWriter(tmp_path / "cycles.mcap", RecordLayout(4), NAMES, chunk_bytes=4096)
    rig = rig_factory(server_kw={"log": log, "on_log_failure": policy})
    sub = event_subscriber(rig.server.telemetry_endpoint)
    try:
        rig.client.call("enable")
        rig.loop.wait_state(State.HOLD)
        if stabilize:
            rig.client.call("stabilizer", enable=True)
            rig.loop.wait_state(State.STABILIZING)
        assert rig.client.call("status")["log"]["ok"]
        opened[0].room = 0                              # the disk is full from now on
        events, end = [], time.monotonic() + 5.0
        while time.monotonic() < end and not any(e.get("reason") == "LOG_FAILED" for e in events):
            if sub.poll(100):
                events.append(json.loads(sub.recv_multipart()[1]))
    finally:
        sub.close()
    return rig, events


def test_a_log_failure_is_an_event_a_status_and_refuses_motions(rig_factory, tmp_path, full_disk):
    rig, events = _failed_rig(rig_factory, tmp_path, full_disk, "refuse_motions")
    failed = [e for e in events if e.get("reason") == "LOG_FAILED"]
    assert len(failed) == 1 and failed[0]["kind"] == "WARNING" and failed[0]["error"] == "ENOSPC", events
    status = rig.client.call("status")["log"]
    assert not status["ok"] and "No space left on device" in status["error"]
    assert status["on_failure"] == "refuse_motions" and rig.client.call("stats")["log"] == status
    for cmd, args in (("move_joints", {"q": [0.0, 0.0, -0.5, 0.3], "duration": 1.0}),
                      ("platform", {"alpha": 0.05, "beta": 0.0, "duration": 2.0}), ("stabilizer", {"enable": True})):
        with pytest.raises(CommandError) as e:
            rig.client.call(cmd, **args)
        assert e.value.code == "log_failed", (cmd, e.value)
        assert e.value.code == "log_failed" and "cycle log" in e.value.message and "estop" in e.value.message
    assert rig.state == State.HOLD                      # nothing moved
    rig.client.call("estop")                            # the way out is always open
    rig.loop.wait_state(State.ESTOP)
    rig.client.call("reset")
    # the count is what reached the disk: the file holds exactly those records
    assert 0 < status["records"] == len(read_log(tmp_path / "cycles.mcap").records)
    rig.stop.set()
    rig.thread.join(5)
    rig.server.close()                                  # closing a failed log raises nothing
    assert len(read_log(tmp_path / "cycles.mcap").records) == status["records"]


def test_continue_lets_motions_run_unlogged(rig_factory, tmp_path, full_disk):
    rig, events = _failed_rig(rig_factory, tmp_path, full_disk, "continue")
    assert any(e.get("reason") == "LOG_FAILED" for e in events)
    assert not rig.client.call("status")["log"]["ok"]
    assert rig.client.call("move_joints", q=[0.0, 0.0, -0.5, 0.3], duration=1.0)["accepted"]


def test_after_a_log_failure_the_stabilizer_can_still_be_switched_off(rig_factory, tmp_path, full_disk):
    rig, _ = _failed_rig(rig_factory, tmp_path, full_disk, "refuse_motions", stabilize=True)
    assert not rig.client.call("status")["log"]["ok"]
    rig.client.call("stabilizer", enable=False)
    rig.loop.wait_state(State.HOLD)
    with pytest.raises(CommandError) as e:
        rig.client.call("stabilizer", enable=True)
    assert e.value.code == "log_failed"


def test_a_log_failing_at_close_is_reported_not_raised(rig_factory, tmp_path, full_disk):
    _, opened = full_disk
    log = CycleLogWriter(tmp_path / "cycles.mcap", RecordLayout(4), NAMES, chunk_bytes=4096)
    rig = rig_factory(server_kw={"log": log})
    while log.chunks < 3:
        time.sleep(0.01)
    rig.stop.set()
    rig.thread.join(5)
    opened[0].room = 0                                  # the summary and footer no longer fit
    rig.server.close()
    assert "No space left on device" in rig.server.log_error
    assert 0 < log.records == len(read_log(tmp_path / "cycles.mcap").records)


def test_on_log_failure_is_validated_at_config_load(tmp_path, capsys):
    path = config(tmp_path, io={"on_log_failure": "ignore"})
    line = run_error(capsys, ["run", "--config", str(path)])
    assert f"{path}: io.on_log_failure: expected one of ('refuse_motions', 'continue'), got 'ignore'" in line


# ------------------------------------------------------------------ a real daemon on a full disk

@pytest.fixture
def tiny_disk(tmp_path):
    """A 256 KiB tmpfs (root only): the log's disk fills within a few seconds of cycles."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)]).returncode:
        pytest.skip("this host refuses to mount a tmpfs")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)])


@pytest.fixture
def full_disk_daemon(tmp_path, tiny_disk):
    """The leg daemon (stepped lock-step), its cycle log on the tiny disk."""
    doc = yaml.safe_load((DEPLOY / "bipd.yaml").read_text())
    doc["robot"] = str(ROBOTS / "bip_leg.yaml")
    doc["stabilizer"] = str(ROBOTS / "bip_leg_stabilizer.yaml")
    with booted(tmp_path, doc, clock="--stepped", boot_s=600.0, log=tiny_disk) as (proc, client, _):
        yield proc, client, tmp_path


def test_a_daemon_on_a_full_disk_refuses_motions_and_still_stops_with_exit_0(full_disk_daemon, tiny_disk):
    proc, client, _ = full_disk_daemon
    sub = event_subscriber(client.call("get_config")["telemetry_endpoint"])
    try:
        client.call("enable")
        for _ in range(120):                          # at most 60 s of cycles; 256 KiB fill in a few
            client.call("step", seconds=0.5)
            status = client.call("status")
            if not status["log"]["ok"]:
                break
        assert status["state"] == "HOLD" and not status["log"]["ok"], status["log"]
        assert "No space left on device" in status["log"]["error"]
        events = []
        while sub.poll(1000):
            events.append(json.loads(sub.recv_multipart()[1]))
        assert [e["error"] for e in events if e.get("reason") == "LOG_FAILED"] == ["ENOSPC"], events
        with pytest.raises(CommandError) as e:
            client.call("move_joints", q={"knee": -0.4}, duration=1.0)
        assert e.value.code == "log_failed" and "No space left on device" in e.value.message
        client.call("estop")
        client.call("step", seconds=0.1)
        assert client.call("status")["state"] == "ESTOP"
        records = client.call("stats")["log"]["records"]
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0 and "Traceback" not in out, out
        assert "the cycle log" in out and "stopped (exit 0)" in out
        log = next(tiny_disk.glob("run-*/cycles.mcap"))
        info = log_info(log)
        assert 0 < records == info["records"] == len(read_log(log).records)
        assert RIG not in info["channels"] and TRUTH not in info["channels"]    # the leg has no rig
    finally:
        sub.close()


@pytest.mark.parametrize("config_name,with_rig", [("bipd.yaml", False), ("bipd_rig.yaml", True)])
def test_the_daemons_log_declares_rig_only_with_the_rig(tmp_path, config_name, with_rig):
    from dataclasses import replace

    from controller.daemon.config import load_daemon_config
    from controller.daemon.run import _open_server, shared_layout
    from controller.daemon.shm import SharedBlock

    cfg = load_daemon_config(DEPLOY / config_name, backend="sim")
    cfg = replace(cfg, io=replace(cfg.io, command="tcp://127.0.0.1:*", telemetry="tcp://127.0.0.1:*",
                                  log_dir=str(tmp_path)))
    block = SharedBlock(shared_layout(cfg), create=True)
    try:
        server = _open_server(cfg, cfg.robot(), block)
        assert server.ctx.summary["rig"] is with_rig          # get_config says so (scenario --record)
        server.close()
    finally:
        block.close()
    info = log_info(tmp_path)
    assert (RIG in info["channels"]) is with_rig and TRUTH not in info["channels"]
