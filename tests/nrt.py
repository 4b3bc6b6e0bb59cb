"""Allocation-free checks of Numba kernels through the Numba runtime's (NRT) statistics.

A kernel under test runs inside one njit ``loop(*args, count)``; it is allocation-free when
1001 runs allocate exactly as much as one (the call's own argument boxing). The counter is
first shown to count: a loop that allocates one array per run must report 1000 more
allocations in 1001 runs than in one, otherwise the check could not fail.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit
from numba.core.runtime import _nrt_python, rtsys


@njit
def _allocating(count):
    total = 0.0
    for k in range(count):
        a = np.zeros(3)
        a[k % 3] = 1.0
        total += a[0]
    return total


def allocations(loop: Callable, *args) -> int:
    """NRT allocations made by ``loop(*args)`` (compile it first)."""
    _nrt_python.memsys_enable_stats()
    try:
        before = rtsys.get_allocation_stats().alloc
        loop(*args)
        return rtsys.get_allocation_stats().alloc - before
    finally:
        _nrt_python.memsys_disable_stats()


def assert_allocation_free(loop: Callable, *args) -> None:
    """``loop(*args, count)`` runs the kernel under test ``count`` times in one njit call."""
    _allocating(1)
    counted = allocations(_allocating, 1001) - allocations(_allocating, 1)
    assert counted == 1000, f"the NRT counter saw {counted} of 1000 deliberate allocations"
    loop(*args, 1)
    extra = allocations(loop, *args, 1001) - allocations(loop, *args, 1)
    assert extra == 0, f"{extra} allocations in 1000 more runs of the kernel"
