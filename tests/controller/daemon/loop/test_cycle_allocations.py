"""A whole control cycle allocates no array in any state, with every reference generator:
NumPy's buffer allocations counted through its memory handler (tests/numpy_allocs.py) over
steady cycles (heartbeats only, no command), in lock-step on the simulated bus."""
from __future__ import annotations

import numpy as np
import pytest

from controller.daemon.codes import State
from controller.daemon.shm import H, Cmd

from tests.numpy_allocs import CountingHandler
from tests.controller.daemon.loop_harness import Harness

CYCLES = 20


@pytest.fixture(scope="module")
def h():
    harness = Harness()
    yield harness
    harness.close()


def steady(h: Harness, state: State, gen) -> int:
    """Array buffers allocated by CYCLES cycles that stay in ``state`` with ``gen`` active."""
    h.run(1)
    with CountingHandler() as counter:
        h.run(CYCLES, heartbeat_every=1)
    assert h.state == state and h.loop.gen is gen, (State(h.state).name, type(h.loop.gen).__name__)
    return counter.count


def test_the_counter_counts():
    """Ten new arrays count ten; writing into one counts nothing."""
    a = np.zeros(3)
    with CountingHandler() as counter:
        for _ in range(10):
            np.zeros(3)
        a.fill(1.0)
    assert counter.count == 10


def test_no_cycle_allocates_in_any_state(h):
    loop = h.loop
    counts = {"DISABLED": steady(h, State.DISABLED, loop.follow)}
    assert h.command(Cmd.ENABLE)[0]
    h.run(200, until=lambda: h.state == State.HOLD)
    counts["HOLD"] = steady(h, State.HOLD, loop.hold)
    assert h.command(Cmd.MOVE_JOINTS, 0, 0.0, -0.05, 0.0, 1.0)[0]
    counts["move"] = steady(h, State.MOVING, loop.move)
    assert h.command(Cmd.STOP)[0]
    counts["stop"] = steady(h, State.MOVING, loop.stopping)
    h.run(2000, heartbeat_every=50, until=lambda: h.state == State.HOLD)
    assert h.command(Cmd.RUN_SQUAT)[0]
    counts["squat"] = steady(h, State.MOVING, loop.squat)
    assert h.command(Cmd.HOLD)[0]
    h.block.traj[:200] = loop.q_ref + np.array([0.0, 0.02, -0.02, 0.02])
    h.block.header[H.TRAJ_LEN] = 200
    assert h.command(Cmd.RUN_BUFFER)[0]
    counts["approach"] = steady(h, State.MOVING, loop.move)
    h.run(2000, heartbeat_every=50, until=lambda: loop.gen is loop.playback)
    counts["playback"] = steady(h, State.MOVING, loop.playback)
    h.run(2000, heartbeat_every=50, until=lambda: h.state == State.HOLD)
    assert h.command(Cmd.STABILIZER, 1.0)[0]
    counts["STABILIZING"] = steady(h, State.STABILIZING, loop.stabilize)
    h.bus.faults.drive_fault("knee", "over_temperature")
    h.run(20, until=lambda: h.state == State.FAULT)
    counts["FAULT"] = steady(h, State.FAULT, loop.follow)
    assert h.command(Cmd.ESTOP)[0]
    counts["ESTOP"] = steady(h, State.ESTOP, loop.follow)
    assert counts == dict.fromkeys(counts, 0)
