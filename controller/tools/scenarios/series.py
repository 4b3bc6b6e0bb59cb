"""What a scenario records: daemon telemetry frames, HIL ground-truth frames, loop events."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

TELEMETRY_KEYS = ("t", "q", "q_ref", "qd", "tau", "com", "margins", "platform", "overruns", "rig_ferr", "tilt",
                  "feet_load", "contact", "pelvis_pos", "pelvis_vel", "pelvis_rpy", "stance", "ground_slope", "edge")
TRUTH_KEYS = ("t", "platform", "cop", "foot_tilt", "foot_lift", "hip_height", "com_world", "support_margin")


def _array(rows: list[Any]) -> np.ndarray:
    """Numbers or lists of numbers, ``None`` (JSON null) as NaN."""
    return np.array([[np.nan if x is None else x for x in r] if isinstance(r, list) else (np.nan if r is None else r)
                     for r in rows], dtype=float)


@dataclass
class Series:
    """Frames as they arrive (thread-safe appends); :meth:`arrays` turns them into numpy columns.
    ``truth_keys``: the HIL truth fields kept (the leg bench's by default)."""
    truth_keys: tuple[str, ...] = TRUTH_KEYS
    telemetry: dict[str, list] = field(default_factory=lambda: {k: [] for k in TELEMETRY_KEYS})
    states: list[str] = field(default_factory=list)
    truth: dict[str, list] = field(default_factory=dict)
    events: list[dict] = field(default_factory=list)
    last_telemetry: dict | None = None
    last_truth: dict | None = None
    start: tuple[int, int] = (0, 0)          # (telemetry, truth) frames before the measured part
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.truth = self.truth or {k: [] for k in self.truth_keys}

    def add_telemetry(self, msg: dict) -> None:
        with self.lock:
            for k in TELEMETRY_KEYS:
                self.telemetry[k].append(msg[k])
            self.states.append(msg["state_name"])
            self.last_telemetry = msg

    def add_truth(self, msg: dict) -> None:
        with self.lock:
            for k in self.truth_keys:
                self.truth[k].append(msg[k])
            self.last_truth = msg

    def add_event(self, msg: dict) -> None:
        with self.lock:
            self.events.append(msg)

    def mark(self) -> None:
        """The measured part starts now: :meth:`arrays` leaves out the frames before."""
        with self.lock:
            self.start = (len(self.states), len(self.truth["t"]))

    def arrays(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """(telemetry, truth) columns of the measured part; telemetry also has ``state`` (names)."""
        with self.lock:
            a, b = self.start
            tel = {k: _array(v[a:]) for k, v in self.telemetry.items()}
            tel["state"] = np.array(self.states[a:], dtype=object)
            tru = {k: _array(v[b:]) for k, v in self.truth.items()}
        return tel, tru
