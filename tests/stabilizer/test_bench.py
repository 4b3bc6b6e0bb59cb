"""The cycle path allocates nothing, and the benchmark reports the figures the
closing note needs (median/p99 of a step and of a whole stabilizing cycle, the
thesis' 273 us reference)."""
from __future__ import annotations

import numpy as np
from numba import njit
from numba.core.runtime import _nrt_python, rtsys

from stabilizer.bench import THESIS_STABILIZER_AVG_US, run_benchmark, stabilizing_cycle

from .helpers import Q0, ROBOT, make


@njit
def _cycles(mbuf, dbuf, p, s, inp, out, gains, tau, count):
    for _ in range(count):
        stabilizing_cycle(mbuf, dbuf, p, s, inp, out, gains, tau)


def test_cycle_is_allocation_free():
    """NRT allocations of 1 and of 1001 cycles inside one njit call are equal:
    the only ones are the call's own argument boxing."""
    st = make()
    st.reset(Q0)
    st.inputs[:4] = Q0
    st.inputs[4:6] = (0.1, 0.2)
    args = (ROBOT.model.buf, ROBOT.data.buf.copy(), st.params, st.state, st.inputs, st.out,
            np.zeros(12), np.zeros(4))
    _cycles(*args, 1)
    _nrt_python.memsys_enable_stats()
    try:
        counts = []
        for count in (1, 1001):
            before = rtsys.get_allocation_stats().alloc
            _cycles(*args, count)
            counts.append(rtsys.get_allocation_stats().alloc - before)
    finally:
        _nrt_python.memsys_disable_stats()
    assert 0 < counts[0] == counts[1]          # stats are on (the boxing counts), the loop adds none


def test_benchmark_reports_step_and_cycle():
    res = run_benchmark(samples=500)
    for key in ("step", "cycle"):
        assert 0 < res[key]["median_us"] <= res[key]["p99_us"]
    assert res["thesis_bnr_stabilizer_avg_us"] == THESIS_STABILIZER_AVG_US
    assert res["ratio_cycle_vs_thesis"] == res["cycle"]["median_us"] / THESIS_STABILIZER_AVG_US
