"""``bipd bench log``: what the cycle log costs the I/O process, per record, and on disk, per second.

The records of a cycle log (a run of ``bipd run --lockstep --demo squat``, say) are written again,
in this process, through :class:`~controller.daemon.io.log.CycleLogWriter` as the I/O process writes
them (``append`` per record, chunks written, flushed and fsynced), to a temporary file, with the
3-D scene of the robot of ``--config`` (``/tf``, ``/scene``) when it is the log's serial chain.
Reported: CPU µs per record (process time: fsync's wait excluded), wall µs per record, bytes per
record and per second of loop time. Reference measured in the same run, rounds interleaved: the
I/O process's other per-record work, one ``telemetry`` frame of the record
(:func:`~controller.daemon.io.messages.telemetry_message` and its JSON), and the ratio to it.
"""
from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from controller.daemon.io.log import CycleLogWriter, read_log
from controller.daemon.io.messages import Names, telemetry_message
from controller.daemon.io.scene import Ground, Scene
from controller.daemon.telemetry import RecordLayout


def _timed(work: Callable[[], None]) -> tuple[float, float]:
    """(CPU s, wall s) of ``work()``."""
    c0, w0 = time.process_time(), time.perf_counter()
    work()
    return time.process_time() - c0, time.perf_counter() - w0


def run(log_path: str | Path, config: str | Path | None = None, rounds: int = 5,
        say: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """The writer's and the telemetry frame's cost per record over ``rounds`` interleaved rounds
    (medians), and the size of the log written."""
    log = read_log(log_path)
    recs, names = log.records, log.joint_names
    period = float(log.header["period"])
    layout = RecordLayout(len(names))
    scene = None
    if config is not None:
        from controller.daemon.config import load_daemon_config
        from models.chain.robot import Robot
        cfg = load_daemon_config(Path(config))
        robot = cfg.robot()
        if isinstance(robot, Robot) and tuple(robot.joint_names) == names:
            scene = Scene(robot, Ground.of(robot, cfg.stabilizer_path))
    frame_names = Names(names)
    writer_s, frame_s, size = [], [], 0
    with tempfile.TemporaryDirectory(prefix="bipd-log-bench-") as tmp:
        for k in range(rounds):
            path = Path(tmp) / f"round-{k}.mcap"
            w = CycleLogWriter(path, layout, names, period=period, scene=scene)

            def write() -> None:
                for r in recs:
                    w.append(r)
                for e in log.events:
                    w.event({key: v for key, v in e.items() if key != "t"})
                w.close()
            writer_s.append(_timed(write))
            size = path.stat().st_size
            path.unlink()
            frame_s.append(_timed(lambda: [json.dumps(telemetry_message(layout, r, frame_names)) for r in recs]))
            say(f"round {k + 1}/{rounds}: writer {1e6 * writer_s[-1][0] / len(recs):.1f} us CPU per record")
    count = len(recs)
    seconds = float(recs[-1, 0] - recs[0, 0]) + period if count else 0.0
    cpu = statistics.median(c for c, _ in writer_s) / count * 1e6
    wall = statistics.median(w for _, w in writer_s) / count * 1e6
    ref = statistics.median(c for c, _ in frame_s) / count * 1e6
    return {"log": str(log_path), "records": count, "events": len(log.events), "loop_seconds": seconds,
            "scene": scene is not None, "rounds": rounds,
            "writer_cpu_us_per_record": cpu, "writer_wall_us_per_record": wall,
            "telemetry_frame_cpu_us_per_record": ref, "ratio_writer_to_frame": cpu / ref,
            "core_share_at_period": cpu * 1e-6 / period,
            "bytes": size, "bytes_per_record": size / count, "bytes_per_second": size / seconds}


def print_report(res: dict[str, Any]) -> None:
    print(f"cycle log writer on {res['records']} records + {res['events']} events of {res['log']} "
          f"({res['loop_seconds']:.2f} s of loop time, scene {'on' if res['scene'] else 'off'}), "
          f"median of {res['rounds']} rounds:")
    print(f"  writer:          {res['writer_cpu_us_per_record']:8.1f} us CPU / record "
          f"({res['writer_wall_us_per_record']:.1f} us wall, fsync included); "
          f"{100 * res['core_share_at_period']:.1f} % of a core at the log's period")
    print(f"  telemetry frame: {res['telemetry_frame_cpu_us_per_record']:8.1f} us CPU / record (reference, same run)")
    print(f"  ratio writer / frame: {res['ratio_writer_to_frame']:.2f}")
    print(f"  size: {res['bytes']} bytes, {res['bytes_per_record']:.0f} bytes / record, "
          f"{res['bytes_per_second'] / 1e3:.1f} kB / s of loop time")
