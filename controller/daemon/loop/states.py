"""The controller's state machine (docs/cycle.md), as tables.

BOOT (network boot) -> DISABLED -> ``enable`` -> HOLD -> MOVING (trajectory) or
STABILIZING (stabilizer) -> HOLD. Any state -> FAULT on a drive or bus fault, a hard
limit, a non-finite value or the transmission; ``reset`` -> DISABLED. ``estop`` from
anywhere: quick stop then voltage off. The loop is the final authority; the I/O side
checks the same table before it posts a command, for a fast, precise error reply.
Inside a state, a reference generator (``controller.daemon.loop.references``) that finishes names
its outcome, and ``AFTER`` says where that leads.
"""
from __future__ import annotations

from enum import IntEnum

from controller.daemon.codes import Reason, State
from controller.daemon.shm import Cmd

S = State

#: commands each state accepts (anything else is refused with ``not_allowed``)
ALLOWED: dict[State, frozenset[Cmd]] = {
    S.BOOT: frozenset({Cmd.ESTOP, Cmd.SHUTDOWN}),
    S.DISABLED: frozenset({Cmd.ENABLE, Cmd.ESTOP, Cmd.SET_GAINS, Cmd.SHUTDOWN,
                           Cmd.DISABLE, Cmd.INJECT_FAULT}),
    S.HOLD: frozenset({Cmd.DISABLE, Cmd.ESTOP, Cmd.STOP, Cmd.HOLD, Cmd.MOVE_JOINTS,
                       Cmd.RUN_SQUAT, Cmd.RUN_BUFFER, Cmd.STABILIZER, Cmd.PLATFORM, Cmd.SET_GAINS,
                       Cmd.SHUTDOWN, Cmd.INJECT_FAULT, Cmd.RIG_MOTION, Cmd.RIG_BUFFER}),
    S.MOVING: frozenset({Cmd.ESTOP, Cmd.STOP, Cmd.HOLD, Cmd.SET_GAINS, Cmd.SHUTDOWN,
                         Cmd.INJECT_FAULT}),
    S.STABILIZING: frozenset({Cmd.ESTOP, Cmd.STOP, Cmd.HOLD, Cmd.STABILIZER,
                              Cmd.PLATFORM, Cmd.SET_GAINS, Cmd.SHUTDOWN, Cmd.INJECT_FAULT, Cmd.RIG_MOTION,
                              Cmd.RIG_BUFFER}),
    S.FAULT: frozenset({Cmd.RESET, Cmd.ESTOP, Cmd.SET_GAINS, Cmd.SHUTDOWN,
                        Cmd.INJECT_FAULT}),
    S.ESTOP: frozenset({Cmd.RESET, Cmd.SHUTDOWN}),
}

#: the states each command is allowed in (the loop's dispatch table reads this side of ALLOWED)
ALLOWED_IN: dict[Cmd, frozenset[State]] = {c: frozenset(s for s in S if c in ALLOWED[s]) for c in Cmd}

#: commands accepted while the drives are being enabled (any other waits for HOLD: not_allowed)
WHILE_ENABLING = frozenset({Cmd.ESTOP, Cmd.DISABLE, Cmd.SHUTDOWN})

#: states in which the drives are (or are being) powered
POWERED = frozenset({S.HOLD, S.MOVING, S.STABILIZING})


class Outcome(IntEnum):
    """What a reference generator's ``sample`` returns: RUNNING (0), or how it finished."""
    RUNNING = 0
    TRAJECTORY_DONE = 1       # a move, a squat or a played file reached its end
    APPROACHED = 2            # the move to a played file's first sample is there
    STOP_DONE = 3             # a soft stop is at rest
    STABILIZER_FAILED = 4     # control.stabilizer_failure_cycles non-OK stabilizer steps in a row


#: (state, outcome) -> (next state, reason of the transition); reason None: the finished
#: generator's own (a soft stop's: STOP_DONE after ``stop``, WATCHDOG after a silent client).
#: MOVING -> MOVING continues the motion with the next generator (the approach: the file).
AFTER: dict[tuple[State, Outcome], tuple[State, Reason | None]] = {
    (S.MOVING, Outcome.TRAJECTORY_DONE): (S.HOLD, Reason.TRAJECTORY_DONE),
    (S.MOVING, Outcome.APPROACHED): (S.MOVING, None),
    (S.MOVING, Outcome.STOP_DONE): (S.HOLD, None),
    (S.STABILIZING, Outcome.STABILIZER_FAILED): (S.HOLD, Reason.STABILIZER_FAILED),
}
