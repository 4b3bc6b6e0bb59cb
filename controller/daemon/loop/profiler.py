"""Per-cycle profiler (thesis Figures 35, 37): one Numba call per cycle updates the
task statistics and the wake-latency histogram in the shared stats array
(layout in :mod:`controller.daemon.telemetry`)."""
from __future__ import annotations

from numba import njit

from controller.daemon.telemetry import HIST_BINS, ST_CYCLES, ST_HIST, ST_MAX_LATENCY, ST_MISSED, ST_OVERRUNS, TASK_FIELDS


@njit(cache=True)
def profile_cycle(stats, marks, latency_ns, missed, overrun):
    """marks[0] = cycle start, marks[k+1] = end of task k (monotonic ns). Net time
    of task k = marks[k+1] - marks[k]; a task not run this cycle has marks equal."""
    for k in range(marks.shape[0] - 1):
        dt = marks[k + 1] - marks[k]
        o = k * TASK_FIELDS
        if dt < stats[o]:
            stats[o] = dt
        if dt > stats[o + 1]:
            stats[o + 1] = dt
        stats[o + 2] += dt
        stats[o + 3] += 1.0
    b = latency_ns // 1000
    if b >= HIST_BINS:
        b = HIST_BINS - 1
    stats[ST_HIST + b] += 1.0
    if latency_ns > stats[ST_MAX_LATENCY]:
        stats[ST_MAX_LATENCY] = latency_ns
    stats[ST_CYCLES] += 1.0
    stats[ST_MISSED] += missed
    if overrun:
        stats[ST_OVERRUNS] += 1.0
