"""The controller's state machine (docs/cycle.md), as tables.

BOOT (network boot) -> DISABLED -> ``enable`` -> HOLD -> MOVING (trajectory) or
STABILIZING (stabilizer) -> HOLD. Any state -> FAULT on a drive or bus fault, a hard
limit, a non-finite value or the transmission; ``reset`` -> DISABLED. ``estop`` from
anywhere: quick stop then voltage off. The loop is the final authority; the I/O side
checks the same table before it posts a command, for a fast, precise error reply.
"""
from __future__ import annotations

from ..codes import State
from ..shm import Cmd

S = State

#: commands each state accepts (anything else is refused with ``not_allowed``)
ALLOWED: dict[State, frozenset[Cmd]] = {
    S.BOOT: frozenset({Cmd.ESTOP, Cmd.SHUTDOWN}),
    S.DISABLED: frozenset({Cmd.ENABLE, Cmd.ESTOP, Cmd.SET_GAINS, Cmd.SHUTDOWN,
                           Cmd.DISABLE, Cmd.INJECT_FAULT}),
    S.HOLD: frozenset({Cmd.DISABLE, Cmd.ESTOP, Cmd.STOP, Cmd.HOLD, Cmd.MOVE_JOINTS,
                       Cmd.RUN_SQUAT, Cmd.RUN_BUFFER, Cmd.STABILIZER, Cmd.PLATFORM, Cmd.SET_GAINS,
                       Cmd.SHUTDOWN, Cmd.INJECT_FAULT}),
    S.MOVING: frozenset({Cmd.ESTOP, Cmd.STOP, Cmd.HOLD, Cmd.SET_GAINS, Cmd.SHUTDOWN,
                         Cmd.INJECT_FAULT}),
    S.STABILIZING: frozenset({Cmd.ESTOP, Cmd.STOP, Cmd.HOLD, Cmd.STABILIZER,
                              Cmd.PLATFORM, Cmd.SET_GAINS, Cmd.SHUTDOWN, Cmd.INJECT_FAULT}),
    S.FAULT: frozenset({Cmd.RESET, Cmd.ESTOP, Cmd.SET_GAINS, Cmd.SHUTDOWN,
                        Cmd.INJECT_FAULT}),
    S.ESTOP: frozenset({Cmd.RESET, Cmd.SHUTDOWN}),
}

#: states in which the drives are (or are being) powered
POWERED = frozenset({S.HOLD, S.MOVING, S.STABILIZING})
