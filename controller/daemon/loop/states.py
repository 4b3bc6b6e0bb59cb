"""The controller's state machine (docs/cycle.md), as tables.

BOOT (network boot) -> DISABLED -> ``enable`` -> HOLD -> MOVING (trajectory, a played file optionally
under the whole-robot stabilizer) or STABILIZING (stabilizer) -> HOLD. Any state -> FAULT on a drive or bus fault, a hard
limit, a non-finite value or the transmission; ``reset`` -> DISABLED. ``estop`` from
anywhere: quick stop then voltage off. The loop is the final authority; the I/O side
checks the same table (from the command registry) before it posts a command, for a fast, precise error reply.
Inside a state, a reference generator (``controller.daemon.loop.references``) that finishes names
its outcome, and ``AFTER`` says where that leads.
"""
from __future__ import annotations

from enum import IntEnum

from controller.daemon.codes import Reason, State
from controller.daemon.commands import CODES
from controller.daemon.shm import Cmd

S = State

#: commands each state accepts (anything else is refused with ``not_allowed``): each command's
#: record in the registry (controller.daemon.commands) names its states
ALLOWED: dict[State, frozenset[Cmd]] = {s: frozenset(Cmd[k.name] for c, k in CODES if s in c.states) for s in S}

#: commands accepted while the drives are being enabled (any other waits for HOLD: not_allowed)
WHILE_ENABLING = frozenset(Cmd[k.name] for c, k in CODES if c.while_enabling)

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
    (S.MOVING, Outcome.STABILIZER_FAILED): (S.HOLD, Reason.STABILIZER_FAILED),   # a stabilized walk
}
