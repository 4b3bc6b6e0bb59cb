"""Layout of one telemetry record (float64 fields) in the shared ring.

Fields in order: t, cycle, state, fault, q[n], qd[n], q_ref[n], tau[n], com[3],
margins[W] (signed CoG margins to the support-polygon walls, NaN when unused),
force[3] (stabilizer field force), stab_flags, wake_us, task_us[len(TASKS)],
overruns, missed, platform[2] (alpha, beta).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

TASKS = ("bus_read", "models", "reference", "axes", "bus_write", "telemetry")
MAX_WALLS = 8


@dataclass(frozen=True)
class RecordLayout:
    n: int                        # joints of the leg
    slices: dict[str, slice] = field(init=False, repr=False, compare=False)
    size: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        spec = [("t", 1), ("cycle", 1), ("state", 1), ("fault", 1), ("q", self.n), ("qd", self.n),
                ("q_ref", self.n), ("tau", self.n), ("com", 3), ("margins", MAX_WALLS), ("force", 3),
                ("stab_flags", 1), ("wake_us", 1), ("task_us", len(TASKS)), ("overruns", 1),
                ("missed", 1), ("platform", 2)]
        slices, o = {}, 0
        for name, size in spec:
            slices[name] = slice(o, o + size)
            o += size
        object.__setattr__(self, "slices", slices)
        object.__setattr__(self, "size", o)

    def decode(self, rec: np.ndarray) -> dict:
        """A record as a JSON-ready dict (I/O side; allocates)."""
        out = {}
        for name, s in self.slices.items():
            v = rec[s]
            out[name] = float(v[0]) if s.stop - s.start == 1 else [float(x) for x in v]
        return out
