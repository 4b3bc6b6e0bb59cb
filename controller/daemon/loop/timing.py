"""Real-time setup and the cycle clocks of the loop process.

:class:`DeadlineClock` releases cycles on absolute deadlines of the monotonic clock
(k * period from the start, never "period after the last wake-up", so errors do not
accumulate): it sleeps until ``spin`` before the deadline, then spins (docs/cycle.md:
sleep-then-spin measured p50 0.3 us / p99 30 us with SCHED_FIFO on this kind of
machine). A cycle that ends after the next release is an overrun; the releases it
missed are skipped and counted, never run late in a burst.
:class:`LockstepClock` runs the same loop back to back in simulated time, so tests
never depend on the wall clock.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import time

MCL_CURRENT, MCL_FUTURE = 1, 2


def setup_realtime(priority: int, cpus: tuple[int, ...] | None, lock_memory: bool) -> list[str]:
    """SCHED_FIFO at ``priority``, CPU affinity, mlockall, garbage collector frozen
    and disabled. Returns one warning per thing the process was not permitted to do
    (the loop still runs, with worse latency)."""
    warnings = []
    if priority > 0:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        except (PermissionError, OSError) as e:
            warnings.append(f"SCHED_FIFO priority {priority} not permitted ({e.strerror or e}); "
                            "running SCHED_OTHER: give the service CAP_SYS_NICE or run it from the "
                            "systemd unit in deploy/")
    if cpus:
        try:
            os.sched_setaffinity(0, cpus)
        except OSError as e:
            warnings.append(f"CPU affinity {list(cpus)} not applied ({e.strerror or e})")
    if lock_memory:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        if libc.mlockall(MCL_CURRENT | MCL_FUTURE) != 0:
            err = ctypes.get_errno()
            warnings.append(f"mlockall failed ({os.strerror(err)}); pages may fault during cycles: "
                            "set LimitMEMLOCK=infinity (deploy/bipd.service)")
    gc.collect()
    gc.freeze()
    gc.disable()
    return warnings


class DeadlineClock:
    """Absolute-deadline releases every ``period`` s on CLOCK_MONOTONIC."""

    lockstep = False

    def __init__(self, period: float, spin: float = 150e-6) -> None:
        self.period_ns = int(round(period * 1e9))
        self.spin_ns = int(round(spin * 1e9))
        self.release_ns = 0
        self.start_ns = 0
        self.cycle = 0

    def start(self) -> None:
        self.start_ns = time.monotonic_ns()
        self.release_ns = self.start_ns + self.period_ns
        self.cycle = 0

    def now_s(self) -> float:
        """Seconds since :meth:`start`."""
        return (time.monotonic_ns() - self.start_ns) * 1e-9

    def wait(self) -> tuple[int, int]:
        """Wait for the next release; returns (wake latency ns, releases missed)."""
        clock = time.monotonic_ns
        release = self.release_ns
        now = clock()
        missed = 0
        if now > release:                 # the last cycle overran: run the latest release now,
            missed = (now - release) // self.period_ns      # skip (and count) the older ones
            release += missed * self.period_ns
        remaining = release - now - self.spin_ns
        if remaining > 0:
            time.sleep(remaining * 1e-9)
        while clock() < release:
            pass
        latency = clock() - release
        self.release_ns = release + self.period_ns
        self.cycle += 1 + missed
        return latency, missed

    def end_of_cycle_overrun(self) -> bool:
        """True when the cycle ended after the next release (an overrun)."""
        return time.monotonic_ns() > self.release_ns


class LockstepClock:
    """Simulated time: every ``wait`` returns at once and advances one period."""

    lockstep = True

    def __init__(self, period: float) -> None:
        self.period_ns = int(round(period * 1e9))
        self.cycle = 0

    def start(self) -> None:
        self.cycle = 0

    def now_s(self) -> float:
        return self.cycle * self.period_ns * 1e-9

    def wait(self) -> tuple[int, int]:
        self.cycle += 1
        return 0, 0

    def end_of_cycle_overrun(self) -> bool:
        return False
