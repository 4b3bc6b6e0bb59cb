"""Warm-up: the real cycle, run by a throwaway twin of the loop on a dry bus, before the first cycle.

The twin has its own robot, stabilizer, rig and shared block (a scratch one, unlinked after) and a
:class:`DryBus` holding copies of the bus' arrays whose drives obey at once and whose read, write and
exchange do nothing. It runs a few cycles in each state and with each reference generator
(``SCRIPT``), so every kernel the cycle reaches is compiled (or loaded from Numba's cache) with the
real argument types, while the loop itself, its bus and its block see nothing: no event, no record,
no state change, no frame on the bus.
"""
from __future__ import annotations

import numpy as np

from drivers.cia402 import State as DriveState
from drivers.health import health_buffer

from models.common.support import DOUBLE

from controller.daemon.codes import Reason, State
from controller.daemon.shm import Cmd, H, SharedBlock, post_command
from controller.daemon.loop.timing import LockstepClock

CYCLES = 3                 # cycles per step of the script
TRAJ = 8                   # samples of the dry played file


class DryAxis:
    """A drive that obeys at once (the twin's enable reaches HOLD in one cycle)."""

    __slots__ = ("bus", "index")

    def __init__(self, bus: DryBus, index: int) -> None:
        self.bus, self.index = bus, index

    def enable(self) -> None:
        self.bus.state[self.index] = DriveState.OPERATION_ENABLED

    def disable(self) -> None:
        self.bus.state[self.index] = DriveState.SWITCH_ON_DISABLED

    quick_stop = fault_reset = disable


class DryBus:
    """Copies of a bus' arrays (same dtypes and layouts, hence the same compiled kernels), no I/O."""

    ARRAYS = ("position", "velocity", "aux", "state", "fault_code", "mode", "target_position", "target_velocity",
              "torque_offset")

    def __init__(self, bus) -> None:
        for name in self.ARRAYS:
            setattr(self, name, getattr(bus, name).copy())
        self.config, self.axis_names = bus.config, bus.axis_names
        self.axes = {name: DryAxis(self, i) for i, name in enumerate(bus.axis_names)}
        self.health, self.health_views = health_buffer(len(bus.config.nodes), len(bus.axis_names))

    def boot(self) -> None:
        pass

    read = write = exchange = boot


def script(twin) -> list[tuple[Cmd, list[float]]]:
    """The commands the twin runs through, CYCLES cycles each: every state and reference generator."""
    here = [float(x) for x in twin.q_ref]
    return [(Cmd.ENABLE, []), (Cmd.SET_GAINS, [0.0, 1.0, 0.0, 0.0]), (Cmd.MOVE_JOINTS, here + [1.0]),
            (Cmd.STOP, []), (Cmd.HOLD, []), (Cmd.RUN_SQUAT, []), (Cmd.HOLD, []), (Cmd.RUN_BUFFER, []),
            (Cmd.STABILIZER, [1.0]), (Cmd.HOLD, []), (Cmd.PLATFORM, [0.0, 0.0, 1.0]), (Cmd.STABILIZER, [1.0]), (Cmd.HOLD, []),
            (Cmd.ESTOP, []), (Cmd.RESET, [])]


def dry_run(loop) -> None:
    """Compile the cycle of ``loop`` (a ControlLoop) by running its twin (module docstring)."""
    block = SharedBlock(loop.block.layout, create=True)
    try:
        bus = DryBus(loop.bus)
        stab = None if loop.stab is None else loop.cfg.stabilizer()
        twin = type(loop)(loop.cfg, block, bus, loop.cfg.robot(), stab, LockstepClock(loop.period))
        twin.stepped = False
        twin._measure()
        twin.q_ref[:] = twin.q
        twin.est.update()
        twin.sup.goto(State.DISABLED, Reason.BOOTED)
        twin.clock.start()
        token = 0
        for cmd, args in script(twin):
            if cmd == Cmd.RUN_BUFFER:                  # a file standing where the twin is
                block.traj[:TRAJ] = twin.q_ref
                if twin.sup.walk is not None:          # a gait in double support: the stabilized walk
                    block.support[:TRAJ] = DOUBLE
                block.header[H.TRAJ_LEN] = TRAJ
            token += 1
            post_command(block, token, cmd, np.array(args) if args else None)
            for _ in range(CYCLES):
                block.header[H.HEARTBEATS] += 1
                twin.run_cycle()
    finally:
        block.close()
