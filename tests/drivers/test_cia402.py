"""CiA 402 state machine (IEC 61800-7-201 §6.2): every legal and illegal transition, table-driven."""
from __future__ import annotations

import itertools

import pytest

from drivers import cia402
from drivers.cia402 import Command, State
from drivers.hal import open_bus

from tests.drivers.helpers import cycle, enabled_bus

S = State
# The standard's transitions by number (quick stop option code 2, so no transition 16).
LEGAL = {
    (S.SWITCH_ON_DISABLED, Command.SHUTDOWN): S.READY_TO_SWITCH_ON,              # 2
    (S.READY_TO_SWITCH_ON, Command.SWITCH_ON): S.SWITCHED_ON,                    # 3
    (S.READY_TO_SWITCH_ON, Command.ENABLE_OPERATION): S.SWITCHED_ON,             # 3 (+4 next cycle)
    (S.SWITCHED_ON, Command.ENABLE_OPERATION): S.OPERATION_ENABLED,              # 4
    (S.OPERATION_ENABLED, Command.SWITCH_ON): S.SWITCHED_ON,                     # 5
    (S.SWITCHED_ON, Command.SHUTDOWN): S.READY_TO_SWITCH_ON,                     # 6
    (S.READY_TO_SWITCH_ON, Command.DISABLE_VOLTAGE): S.SWITCH_ON_DISABLED,       # 7
    (S.READY_TO_SWITCH_ON, Command.QUICK_STOP): S.SWITCH_ON_DISABLED,            # 7
    (S.OPERATION_ENABLED, Command.SHUTDOWN): S.READY_TO_SWITCH_ON,               # 8
    (S.OPERATION_ENABLED, Command.DISABLE_VOLTAGE): S.SWITCH_ON_DISABLED,        # 9
    (S.SWITCHED_ON, Command.DISABLE_VOLTAGE): S.SWITCH_ON_DISABLED,              # 10
    (S.SWITCHED_ON, Command.QUICK_STOP): S.SWITCH_ON_DISABLED,                   # 10
    (S.OPERATION_ENABLED, Command.QUICK_STOP): S.QUICK_STOP_ACTIVE,              # 11
    (S.QUICK_STOP_ACTIVE, Command.DISABLE_VOLTAGE): S.SWITCH_ON_DISABLED,        # 12
    (S.FAULT, Command.FAULT_RESET): S.SWITCH_ON_DISABLED,                        # 15
}


@pytest.mark.parametrize("state, command", list(itertools.product(State, Command)))
def test_every_state_command_pair(state, command):
    """Legal pairs move as the standard says; every other pair leaves the state unchanged."""
    assert cia402.next_state(state, command) == LEGAL.get((state, command), state)


@pytest.mark.parametrize("word, previous, command", [
    (0x0000, 0, Command.DISABLE_VOLTAGE), (0x0004, 0, Command.DISABLE_VOLTAGE),
    (0x0002, 0, Command.QUICK_STOP), (0x000B, 0, Command.QUICK_STOP),
    (0x0006, 0, Command.SHUTDOWN), (0x000E, 0, Command.SHUTDOWN),
    (0x0007, 0, Command.SWITCH_ON), (0x000F, 0, Command.ENABLE_OPERATION),
    (0x0080, 0x0000, Command.FAULT_RESET), (0x0080, 0x0080, Command.DISABLE_VOLTAGE),
    (0x008F, 0x000F, Command.FAULT_RESET),
])
def test_controlword_commands(word, previous, command):
    assert cia402.decode_command(word, previous) == command


@pytest.mark.parametrize("state", list(State))
def test_statusword_round_trip(state):
    extra = cia402.SW_REMOTE | cia402.SW_INTERNAL_LIMIT | cia402.SW_FOLLOWING_ERROR
    assert cia402.decode_state(cia402.STATUSWORD[state] | extra) == state


def test_enable_sequence_through_the_bus(bench):
    """Axis.enable: shutdown (2), then 0x0F does 3 and 4 within one control period; disable is 9."""
    bus = open_bus(bench)
    bus.boot()
    knee = bus.axis("knee")
    assert knee.state == S.SWITCH_ON_DISABLED
    knee.enable()
    seen = []
    for _ in range(3):
        cycle(bus)
        seen.append(knee.state)
    assert seen == [S.READY_TO_SWITCH_ON, S.OPERATION_ENABLED, S.OPERATION_ENABLED]
    assert knee.statusword & 0x6F == 0x27 and knee.statusword & cia402.SW_FOLLOWS_COMMAND
    assert bus.axis("hip").state == S.SWITCH_ON_DISABLED
    knee.disable()
    cycle(bus)
    assert knee.state == S.SWITCH_ON_DISABLED


def test_quick_stop_brakes_then_switch_on_disabled(bench):
    bus = enabled_bus(bench)
    knee = bus.axis("knee")
    knee.mode = cia402.Mode.CSV
    knee.target_velocity = 20.0
    cycle(bus, 30)
    assert knee.velocity == pytest.approx(20.0, abs=0.5)
    knee.quick_stop()
    cycle(bus)
    assert knee.state == S.QUICK_STOP_ACTIVE
    cycle(bus, 40)
    assert knee.state == S.SWITCH_ON_DISABLED
    assert abs(knee.velocity) < 0.5
