"""The loop's command dispatch table: each command's states are the state machine's table
(controller.daemon.loop.states.ALLOWED), and a command outside them is refused with not_allowed,
changes nothing and posts no COMMAND event, in every state the simulated bench reaches."""
from __future__ import annotations

import pytest

from controller.daemon.codes import Error, Event, State
from controller.daemon.loop.states import ALLOWED
from controller.daemon.shm import Cmd

from tests.controller.daemon.loop_harness import Harness

# arguments that would be valid where the command is allowed (so only the state refuses it)
ARGS = {Cmd.MOVE_JOINTS: (0.0, 0.1, -0.3, 0.2, 1.0), Cmd.STABILIZER: (1.0,), Cmd.PLATFORM: (0.0, 0.0, 1.0),
        Cmd.SET_GAINS: (0.0, 100.0), Cmd.INJECT_FAULT: (0.0, 1.0, 1.0, 0.0)}


@pytest.fixture
def h():
    harness = Harness()
    yield harness
    harness.close()


def refused_everywhere_else(h: Harness, state: State) -> None:
    assert h.state == state
    gen = h.loop.gen
    h.events()
    for cmd in Cmd:
        if cmd in ALLOWED[state]:
            continue
        assert h.command(cmd, *ARGS.get(cmd, ())) == (False, Error.NOT_ALLOWED), cmd.name
        assert h.state == state and h.loop.gen is gen, cmd.name      # nothing started or stopped
    assert not [e for e in h.events() if e[1] == Event.COMMAND]


def test_the_loop_table_is_the_state_machine_table(h):
    for cmd in Cmd:
        _, states = h.loop.commands[cmd]
        assert states == frozenset(s for s in State if cmd in ALLOWED[s]), cmd.name


def test_commands_outside_their_states_are_refused(h):
    refused_everywhere_else(h, State.DISABLED)
    assert h.command(Cmd.ENABLE) == (True, Error.OK)
    h.run(200, until=lambda: h.state == State.HOLD)
    refused_everywhere_else(h, State.HOLD)
    assert h.command(Cmd.MOVE_JOINTS, *ARGS[Cmd.MOVE_JOINTS]) == (True, Error.OK)
    refused_everywhere_else(h, State.MOVING)
    h.bus.faults.drive_fault("knee", "over_temperature")
    h.run(20, until=lambda: h.state == State.FAULT)
    refused_everywhere_else(h, State.FAULT)
    assert h.command(Cmd.ESTOP) == (True, Error.OK)
    refused_everywhere_else(h, State.ESTOP)
