"""Chunked cycle log: every telemetry record the I/O process reads, on disk.

A log is a folder: ``header.json`` (record layout, joint names, stab_flags bit names, chunk
size) and ``chunk_000000.npy``, ``chunk_000001.npy``, ... each a float64 array ``(records, size)``.
A chunk is written to a temporary file, synced and renamed when it is full, so a crash
loses at most the chunk being filled (mc_rtc-style binary logs with a reader beside them).
The daemon writes each run into a new folder under ``io.log_dir`` (:func:`new_run_dir`), so
a restart never meets the previous run's log; the reader takes a run folder or that parent
(its latest run, :func:`find_log`).
"""
from __future__ import annotations

import json
import os
import time
from datetime import datetime
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from controller.telemetry import STAB_FLAGS, TASKS, RecordLayout

FORMAT = "bipd-cycle-log"
VERSION = 1


class LogError(ValueError):
    """A folder that is not a readable cycle log."""


def new_run_dir(log_dir: str | Path) -> Path:
    """Create and return a new, empty run folder ``run-<local time to the µs>-<pid>`` under
    ``log_dir``; the names sort in start order."""
    parent = Path(log_dir)
    parent.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%dT%H%M%S.%f")
    for attempt in range(100):
        d = parent / f"run-{stamp}-{os.getpid()}{f'-{attempt}' if attempt else ''}"
        try:
            d.mkdir()
        except FileExistsError:
            continue
        return d
    raise LogError(f"{parent}: could not create a new run folder (100 names taken)")


def find_log(path: str | Path) -> Path:
    """``path`` if it holds a log (``header.json``), else its latest run folder."""
    d = Path(path)
    if (d / "header.json").is_file():
        return d
    runs = sorted(r for r in d.glob("run-*") if (r / "header.json").is_file()) if d.is_dir() else []
    if not runs:
        raise LogError(f"{d} is not a cycle log: header.json is missing (and no run-* folder holds one)")
    return runs[-1]


class CycleLogWriter:
    """Appends records to a new log folder, one ``.npy`` file per ``chunk_records`` records."""

    def __init__(self, log_dir: str | Path, layout: RecordLayout, joint_names: tuple[str, ...],
                 chunk_records: int = 5000, period: float = 0.002, meta: dict[str, Any] | None = None) -> None:
        if chunk_records < 1:
            raise ValueError(f"chunk_records must be at least 1, got {chunk_records}")
        self.dir = Path(log_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        if (self.dir / "header.json").exists():
            raise LogError(f"{self.dir} already holds a cycle log; choose a new folder")
        self.layout = layout
        self._buf = np.empty((chunk_records, layout.size))
        self._fill = 0
        self.chunks = 0
        self.records = 0
        header = {"format": FORMAT, "version": VERSION, "n": layout.n, "record_size": layout.size,
                  "fields": {k: [s.start, s.stop] for k, s in layout.slices.items()},
                  "joint_names": list(joint_names), "tasks": list(TASKS), "stab_flags": list(STAB_FLAGS),
                  "chunk_records": chunk_records,
                  "period": period, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "meta": meta or {}}
        self._write_atomic(self.dir / "header.json", json.dumps(header, indent=1).encode())

    @staticmethod
    def _write_atomic(path: Path, data: bytes) -> None:
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    def append(self, rec: np.ndarray) -> None:
        """Copy one record; writes a chunk when it is full."""
        self._buf[self._fill] = rec
        self._fill += 1
        self.records += 1
        if self._fill == len(self._buf):
            self.flush()

    def flush(self) -> None:
        """Write the records buffered so far as a chunk (a partial one if not full)."""
        if self._fill == 0:
            return
        path = self.dir / f"chunk_{self.chunks:06d}.npy"
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            np.save(f, self._buf[:self._fill])
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        self.chunks += 1
        self._fill = 0

    def close(self) -> None:
        """Write the last partial chunk."""
        self.flush()


@dataclass
class CycleLog:
    """A log read back: ``records`` is ``(N, size)``; :meth:`field` slices one field."""
    layout: RecordLayout
    joint_names: tuple[str, ...]
    records: np.ndarray
    header: dict[str, Any]

    def field(self, name: str) -> np.ndarray:
        """``(N,)`` for a scalar field, ``(N, k)`` for a vector one."""
        s = self.layout.slices[name]
        col = self.records[:, s]
        return col[:, 0] if s.stop - s.start == 1 else col


def read_log(log_dir: str | Path) -> CycleLog:
    """Read every complete chunk of a log folder, or of the latest run under it
    (:func:`find_log`); leftover ``.tmp`` files are ignored."""
    d = find_log(log_dir)
    try:
        header = json.loads((d / "header.json").read_text())
    except json.JSONDecodeError as e:
        raise LogError(f"{d / 'header.json'} is not valid JSON: {e.msg} at line {e.lineno}") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise LogError(f"{d / 'header.json'} is not a {FORMAT} header")
    layout = RecordLayout(int(header["n"]))
    fields = {k: [s.start, s.stop] for k, s in layout.slices.items()}
    if layout.size != header["record_size"] or fields != header["fields"]:
        raise LogError(f"{d} was written with a different record layout than this version reads")
    chunks = []
    for path in sorted(d.glob("chunk_*.npy")):
        try:
            a = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise LogError(f"{path} is not a readable chunk: {e}") from None
        if a.ndim != 2 or a.shape[1] != layout.size:
            raise LogError(f"{path} holds shape {a.shape}, expected (records, {layout.size})")
        chunks.append(a)
    records = np.concatenate(chunks) if chunks else np.empty((0, layout.size))
    return CycleLog(layout, tuple(header["joint_names"]), records, header)
