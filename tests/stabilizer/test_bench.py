"""The cycle path allocates nothing, and the benchmark reports the figures the
closing note needs (median/p99 of a step and of a whole stabilizing cycle, the
thesis' 273 us reference)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from numba import njit

from stabilizer import bench
from stabilizer.bench import stabilizing_cycle

from tests.nrt import assert_allocation_free
from tests.stabilizer.helpers import Q0, ROBOT, SimulatedClock, make

pytestmark = pytest.mark.bench


@njit
def _cycles(mbuf, dbuf, p, s, inp, out, gains, tau, count):
    for _ in range(count):
        stabilizing_cycle(mbuf, dbuf, p, s, inp, out, gains, tau)


@pytest.mark.slow
def test_cycle_is_allocation_free():
    """NRT allocations of 1 and of 1001 cycles inside one njit call are equal:
    the only ones are the call's own argument boxing (tests/nrt.py)."""
    st = make()
    st.reset(Q0)
    st.inputs[:4] = Q0
    st.inputs[4:6] = (0.1, 0.2)
    args = (ROBOT.model.buf, ROBOT.data.buf.copy(), st.params, st.state, st.inputs, st.out,
            np.zeros(12), np.zeros(4))
    assert_allocation_free(_cycles, *args)


def test_benchmark_figures_are_the_statistics_of_the_timed_calls(monkeypatch):
    """On a simulated clock the reported median, p99 and min of the step and of the cycle are
    those numpy computes from the intervals the clock handed out, every sample is timed once,
    and the ratios are to the thesis' 273 us average (Gastebois 2017, §2.6.3)."""
    samples = 301
    rng = np.random.default_rng(5)
    step_ns = rng.integers(1_000, 9_000, samples)
    cycle_ns = rng.integers(2_000, 30_000, samples)
    clock = SimulatedClock(np.concatenate([step_ns, cycle_ns]))
    monkeypatch.setattr(bench, "time", SimpleNamespace(perf_counter_ns=clock))
    res = bench.run_benchmark(samples=samples)
    assert next(clock.durations, None) is None                 # 2 x samples intervals, no more
    assert res["samples"] == samples
    for key, ns in (("step", step_ns), ("cycle", cycle_ns)):
        us = ns / 1e3
        assert res[key]["median_us"] == pytest.approx(np.median(us), rel=1e-12)
        assert res[key]["p99_us"] == pytest.approx(np.sort(us)[int(round(0.99 * (samples - 1)))], rel=1e-12)
        assert res[key]["min_us"] == pytest.approx(us.min(), rel=1e-12)
    assert res["thesis_bnr_stabilizer_avg_us"] == 273.0
    assert res["ratio_cycle_vs_thesis"] == pytest.approx(np.median(cycle_ns) / 1e3 / 273.0, rel=1e-12)
    assert res["cycle_under_target"] == (np.median(cycle_ns) / 1e3 < 10.0)
