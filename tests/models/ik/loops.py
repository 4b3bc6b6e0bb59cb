"""The IK solver run ``count`` times in one njit call, for the allocation tests of both engines. The engine
comes in as an argument (an int64, as the solver's own call passes it): the module constant passed straight
in would be typed as a literal and compile the solver and its stages again for each engine."""
from __future__ import annotations

from numba import njit

from models.ik.numerical import solve


@njit
def solve_loop(engine, mbuf, dbuf, buf, q0, q, count):
    s = 0
    for _ in range(count):
        q[:] = q0
        s += solve(engine, mbuf, dbuf, buf, q)
    return s
