"""The warm-up (controller.daemon.loop.warmup): the real cycle run by a twin on a dry bus compiles every
kernel the cycle reaches before cycle 1, and leaves nothing the loop, its bus or its block can show;
the platform command is refused beyond control.platform_limit by the loop itself."""
from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from numba.core.registry import CPUDispatcher

from controller.daemon.codes import Error, State
from controller.daemon.loop.warmup import dry_run
from controller.daemon.shm import H, Cmd

from tests.controller.daemon.loop_harness import Harness

PACKAGES = ("controller.", "models.", "stabilizer.")


def signatures() -> dict[str, int]:
    """Compiled signatures of every Numba kernel in the controller's, models' and stabilizer's modules."""
    out = {}
    for name, mod in list(sys.modules.items()):
        if mod is None or not name.startswith(PACKAGES):
            continue
        for attr, obj in list(vars(mod).items()):
            if isinstance(obj, CPUDispatcher):
                out[f"{obj.py_func.__module__}.{attr}"] = len(obj.signatures)
    return out


@pytest.fixture(scope="module")
def h():
    harness = Harness()
    yield harness
    harness.close()


def test_the_warm_up_leaves_no_trace(h):
    """A dry run (again, the loop enabled and moving: whatever the twin did to the loop's own bus or
    block would show) changes no bus array, no byte of the shared block, no loop state."""
    loop, b = h.loop, h.bus
    assert h.command(Cmd.ENABLE, cycles=200)[0] and h.state == State.HOLD
    home = loop.q_ref.copy()
    assert h.command(Cmd.MOVE_JOINTS, 0.0, 0.2, -0.4, 0.2, 0.5, cycles=20)[0]
    bus_before = {k: getattr(b, k).copy() for k in ("position", "target_position", "target_velocity",
                                                    "torque_offset", "mode", "state")}
    intents = list(b.intent)
    block_before = {k: getattr(h.block, k).copy() for k in ("header", "ring", "events", "replies", "stats")}
    q_ref, state, cycle = loop.q_ref.copy(), loop.state, loop.cycle_count
    dry_run(loop)
    for k, v in bus_before.items():
        np.testing.assert_array_equal(getattr(b, k), v, err_msg=k)
    assert list(b.intent) == intents
    for k, v in block_before.items():
        np.testing.assert_array_equal(getattr(h.block, k), v, err_msg=k)
    np.testing.assert_array_equal(loop.q_ref, q_ref)
    assert (loop.state, loop.cycle_count) == (state, cycle)
    h.run(600, heartbeat_every=20, until=lambda: h.state == State.HOLD)
    assert h.command(Cmd.MOVE_JOINTS, *home, 0.5)[0]       # back home, for the next test
    h.run(600, heartbeat_every=20, until=lambda: h.state == State.HOLD)


def test_the_start_posts_only_the_boot_record():
    """The warm-up's twin writes nothing in the loop's ring: the one record before cycle 1 is the boot
    record (t = 0, cycle 0, state BOOT, the joints measured at boot)."""
    from controller.daemon.shm import read_record
    from controller.daemon.telemetry import RecordLayout

    fresh = Harness()
    try:
        assert int(fresh.block.header[H.RING_COUNT]) == 1
        rec = np.empty(fresh.block.layout.record_size)
        assert read_record(fresh.block, 0, rec)
        s = RecordLayout(fresh.loop.n).slices
        assert (rec[s["t"]][0], rec[s["cycle"]][0], rec[s["state"]][0]) == (0.0, 0.0, float(State.BOOT))
        np.testing.assert_array_equal(rec[s["q"]], fresh.loop.q)
    finally:
        fresh.close()


def test_every_kernel_is_compiled_before_the_first_cycle(h):
    """Through every state and generator (enable, move, stop, squat, a played file, the platform, the
    stabilizer, a fault, estop, reset) no kernel compiles a new signature."""
    before = signatures()
    assert h.state == State.HOLD
    assert h.command(Cmd.MOVE_JOINTS, 0.0, 0.2, -0.4, 0.2, 0.5, cycles=50)[0]
    assert h.command(Cmd.STOP, cycles=600)[0]
    h.run(600, heartbeat_every=20, until=lambda: h.state == State.HOLD)
    assert h.command(Cmd.RUN_SQUAT, cycles=50)[0], (State(h.state).name, h.loop.q_ref)
    assert h.command(Cmd.HOLD)[0]
    h.block.traj[:100] = h.loop.q_ref
    h.block.header[H.TRAJ_LEN] = 100
    assert h.command(Cmd.RUN_BUFFER, cycles=200)[0]
    h.run(600, heartbeat_every=20, until=lambda: h.state == State.HOLD)
    assert h.command(Cmd.PLATFORM, 0.05, 0.05, 0.2, cycles=20)[0]
    assert h.command(Cmd.STABILIZER, 1.0, cycles=50)[0]
    assert h.command(Cmd.HOLD)[0]
    h.bus.faults.drive_fault("knee", "over_temperature")
    h.run(20, until=lambda: h.state == State.FAULT)
    assert h.command(Cmd.ESTOP)[0] and h.command(Cmd.RESET, cycles=20)[0]
    grown = {k: (before.get(k, 0), v) for k, v in signatures().items() if v > before.get(k, 0)}
    assert not grown, grown


def test_the_loop_refuses_a_platform_tilt_beyond_its_limit(h):
    """control.platform_limit, enforced in the loop as on the I/O side: out_of_range, nothing moves."""
    lim = h.cfg.control.platform_limit
    if h.state != State.HOLD:
        h.command(Cmd.RESET, cycles=20)
        assert h.command(Cmd.ENABLE, cycles=200)[0]
    ref = h.loop.platform.plat_ref.copy()
    for alpha, beta in ((lim * 1.01, 0.0), (0.0, -lim * 1.01), (math.nan, 0.0)):
        assert h.command(Cmd.PLATFORM, alpha, beta, 0.5, cycles=10) == (False, Error.OUT_OF_RANGE)
        np.testing.assert_array_equal(h.loop.platform.plat_ref, ref)
    assert h.command(Cmd.PLATFORM, lim, -lim, 0.5, cycles=10) == (True, Error.OK)
