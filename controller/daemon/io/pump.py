"""The I/O process's shared memory -> ZMQ side: events, telemetry, the cycle log, the live view.

Each pass drains the events ring (``event`` frames) and then the telemetry ring (cycle log,
``telemetry`` frames every ``decimation`` records) up to the record count read first, so a
cycle's events are published before its telemetry frame, at most ``RING_SLICE`` records a pass: a
backlog (a stepped loop running a long step) is worked off between looks at the command socket,
never ahead of the requests. A cycle log write that fails (a full disk) is a WARNING event (reason
LOG_FAILED) and ``status.log``; ``on_log_failure`` says whether new motions are then refused
(docs/logs.md).
"""
from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
import zmq

from controller.daemon.codes import Event
from controller.daemon.io.live import LiveView
from controller.daemon.io.log import CycleLogWriter
from controller.daemon.io.messages import Names, event_message, log_failed_message, telemetry_message
from controller.daemon.shm import H, SharedBlock, read_events, read_record
from controller.daemon.telemetry import RecordLayout

RING_SLICE = 256
"""Telemetry records handled per pass, between two looks at the command socket."""


@dataclass
class IoCounters:
    """What the I/O side counts (reported by ``stats``)."""
    requests: int = 0
    rejected: int = 0
    busy: int = 0
    timeouts: int = 0
    late_replies: int = 0
    internal_errors: int = 0
    retries: int = 0          # repeated requests answered with their first reply (io.recent)
    heartbeats: int = 0
    records: int = 0
    ring_drops: int = 0
    events: int = 0
    event_drops: int = 0
    pub_sent: int = 0
    pub_drops: int = 0


class Publisher:
    """Publishes ``block``'s events and records on the PUB socket ``pub`` (counted in ``counters``),
    writes them to ``log`` and offers them to ``live`` (either set after construction), and keeps
    what ``status`` and ``stats`` report of them: the last record, the recent faults and
    transition, a window of ``stats_window`` wake and task times."""

    def __init__(self, block: SharedBlock, layout: RecordLayout, names: Names, pub: zmq.Socket,
                 counters: IoCounters, decimation: int, stats_window: int, on_log_failure: str,
                 log: CycleLogWriter | None = None) -> None:
        self.block, self.layout, self.names, self.decimation = block, layout, names, decimation
        self.counters = counters
        self.log = log
        self.live: LiveView | None = None        # the Foxglove live view, if enabled (see controller.daemon.io.live)
        self.log_error: str | None = None       # the cycle log's failure, once it failed
        self.on_log_failure = on_log_failure
        self._pub = pub
        self._rec = np.empty(layout.size)
        self.last = np.full(layout.size, np.nan)
        self.have_last = False
        self.wake = np.full(stats_window, np.nan)
        self.tasks = np.full((stats_window, layout.slices["task_us"].stop - layout.slices["task_us"].start), np.nan)
        self._window_i = 0
        self.ring_next = max(0, int(block.header[H.RING_COUNT]) - block.layout.ring_slots)
        self.backlog = False          # the last pass left records in the ring (RING_SLICE)
        self._ev_next = 0
        self.faults: deque[dict[str, Any]] = deque(maxlen=16)
        self.last_transition: dict[str, Any] | None = None
        self.telemetry_t: float | None = None         # t of the last telemetry frame published

    def drain(self) -> None:
        """Events, then the records completed before them: the loop posts a cycle's events
        before it completes the cycle's record, so an event never follows its cycle's frame."""
        count = int(self.block.header[H.RING_COUNT])
        self._read_events()
        self._read_ring(count)

    def _read_ring(self, count: int) -> None:
        """The records up to ``count``, at most ``RING_SLICE`` of them (``backlog`` if more are left)."""
        slots = self.block.layout.ring_slots
        if count - self.ring_next > slots:
            self.counters.ring_drops += count - slots - self.ring_next
            self.ring_next = count - slots
        end = min(count, self.ring_next + RING_SLICE)
        self.backlog = end < count
        while self.ring_next < end:
            i = self.ring_next
            self.ring_next += 1
            if not read_record(self.block, i, self._rec):
                self.counters.ring_drops += 1
                continue
            self._on_record(i, self._rec)

    def _on_record(self, index: int, rec: np.ndarray) -> None:
        s = self.layout.slices
        self.counters.records += 1
        self.last[:] = rec
        self.have_last = True
        w = self._window_i % len(self.wake)
        self.wake[w] = rec[s["wake_us"]][0]
        self.tasks[w] = rec[s["task_us"]]
        self._window_i += 1
        self._to_log("append", rec)
        if self.live is not None:
            self.live.offer(rec)
        if index % self.decimation == 0:
            self.publish(b"telemetry", telemetry_message(self.layout, rec, self.names))
            self.telemetry_t = float(rec[s["t"]][0])

    def _read_events(self) -> None:
        events, self._ev_next, dropped = read_events(self.block, self._ev_next)
        self.counters.event_drops += dropped
        for cycle, code, a, b in events:
            self.counters.events += 1
            msg = event_message(cycle, code, a, b, self.names)
            if code == Event.FAULT:
                self.faults.append(msg)
            elif code == Event.TRANSITION:
                self.last_transition = msg
            self.publish(b"event", msg)
            self._to_log("event", msg)

    def _to_log(self, kind: str, item: Any) -> None:
        """A record (``append``) or an event into the cycle log, until a write fails."""
        if self.log is not None and self.log_error is None:
            try:
                getattr(self.log, kind)(item)
            except OSError as e:
                self._log_failed(e)

    def close_log(self) -> None:
        """Close the log (writing its last chunk; a failure is published)."""
        if self.log is not None and self.log_error is None:
            try:
                self.log.close()
            except OSError as e:
                self._log_failed(e)

    def _log_failed(self, e: OSError) -> None:
        """The cycle log's first failure: said in ``status`` and ``stats`` and published as a WARNING
        event (reason LOG_FAILED); under ``refuse_motions`` new motions are refused from now on."""
        self.log_error = (f"the cycle log {self.log.path.name} failed after {self.log.records} records on disk "
                          f"({e.strerror or e})")
        self.publish(b"event", log_failed_message(int(self.block.header[H.LOOP_CYCLE]), self.log_error, e,
                                                  self.log.records))

    def refuses_motions(self) -> bool:
        """New motions are refused: the cycle log failed under ``on_log_failure: refuse_motions``."""
        return self.log_error is not None and self.on_log_failure == "refuse_motions"

    def log_status(self) -> dict[str, Any] | None:
        """The cycle log: ``records`` and ``chunks`` on disk, ``ok`` False once it failed (``error``)."""
        if self.log is None:
            return None
        return {"ok": self.log_error is None, "path": str(self.log.path), "records": self.log.records,
                "chunks": self.log.chunks, "error": self.log_error, "on_failure": self.on_log_failure}

    def publish(self, topic: bytes, msg: dict[str, Any]) -> None:
        data = json.dumps(msg, allow_nan=False, separators=(",", ":")).encode()
        try:
            self._pub.send_multipart([topic, data], zmq.NOBLOCK)
            self.counters.pub_sent += 1
        except zmq.Again:
            self.counters.pub_drops += 1
