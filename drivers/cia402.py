"""CiA 402 drive state machine (IEC 61800-7-201 §6.2): controlword, statusword, transition table.

Quick stop option code 2: Quick Stop Active brakes and then goes to Switch On Disabled by itself
(transition 12), so transition 16 (back to Operation Enabled) is not offered.
"""
from __future__ import annotations

from enum import IntEnum


class State(IntEnum):
    NOT_READY_TO_SWITCH_ON = 0
    SWITCH_ON_DISABLED = 1
    READY_TO_SWITCH_ON = 2
    SWITCHED_ON = 3
    OPERATION_ENABLED = 4
    QUICK_STOP_ACTIVE = 5
    FAULT_REACTION_ACTIVE = 6
    FAULT = 7


class Command(IntEnum):
    DISABLE_VOLTAGE = 0
    QUICK_STOP = 1
    SHUTDOWN = 2
    SWITCH_ON = 3            # also "disable operation" (0x07)
    ENABLE_OPERATION = 4     # "switch on + enable operation" (0x0F)
    FAULT_RESET = 5          # rising edge of bit 7


class Mode(IntEnum):
    """Modes of operation 0x6060 supported by the drive."""

    CSP = 8
    CSV = 9
    CST = 10


MODES = frozenset(int(m) for m in Mode)

# controlword 0x6040 bits
CW_SWITCH_ON = 0x0001
CW_ENABLE_VOLTAGE = 0x0002
CW_QUICK_STOP = 0x0004
CW_ENABLE_OPERATION = 0x0008
CW_FAULT_RESET = 0x0080

# statusword 0x6041 bits
SW_READY_TO_SWITCH_ON = 0x0001
SW_SWITCHED_ON = 0x0002
SW_OPERATION_ENABLED = 0x0004
SW_FAULT = 0x0008
SW_VOLTAGE_ENABLED = 0x0010
SW_QUICK_STOP = 0x0020
SW_SWITCH_ON_DISABLED = 0x0040
SW_REMOTE = 0x0200
SW_INTERNAL_LIMIT = 0x0800
SW_FOLLOWS_COMMAND = 0x1000
SW_FOLLOWING_ERROR = 0x2000

STATUSWORD = {
    State.NOT_READY_TO_SWITCH_ON: 0x0000,
    State.SWITCH_ON_DISABLED: 0x0040,
    State.READY_TO_SWITCH_ON: 0x0021,
    State.SWITCHED_ON: 0x0033,
    State.OPERATION_ENABLED: 0x0037,
    State.QUICK_STOP_ACTIVE: 0x0017,
    State.FAULT_REACTION_ACTIVE: 0x000F,
    State.FAULT: 0x0008,
}

# (state, command) -> next state; the comment is the CiA 402 transition number.
TRANSITIONS: dict[tuple[State, Command], State] = {
    (State.SWITCH_ON_DISABLED, Command.SHUTDOWN): State.READY_TO_SWITCH_ON,          # 2
    (State.READY_TO_SWITCH_ON, Command.SWITCH_ON): State.SWITCHED_ON,                # 3
    (State.READY_TO_SWITCH_ON, Command.ENABLE_OPERATION): State.SWITCHED_ON,         # 3 (then 4)
    (State.SWITCHED_ON, Command.ENABLE_OPERATION): State.OPERATION_ENABLED,          # 4
    (State.OPERATION_ENABLED, Command.SWITCH_ON): State.SWITCHED_ON,                 # 5
    (State.SWITCHED_ON, Command.SHUTDOWN): State.READY_TO_SWITCH_ON,                 # 6
    (State.READY_TO_SWITCH_ON, Command.DISABLE_VOLTAGE): State.SWITCH_ON_DISABLED,   # 7
    (State.READY_TO_SWITCH_ON, Command.QUICK_STOP): State.SWITCH_ON_DISABLED,        # 7
    (State.OPERATION_ENABLED, Command.SHUTDOWN): State.READY_TO_SWITCH_ON,           # 8
    (State.OPERATION_ENABLED, Command.DISABLE_VOLTAGE): State.SWITCH_ON_DISABLED,    # 9
    (State.SWITCHED_ON, Command.DISABLE_VOLTAGE): State.SWITCH_ON_DISABLED,          # 10
    (State.SWITCHED_ON, Command.QUICK_STOP): State.SWITCH_ON_DISABLED,               # 10
    (State.OPERATION_ENABLED, Command.QUICK_STOP): State.QUICK_STOP_ACTIVE,          # 11
    (State.QUICK_STOP_ACTIVE, Command.DISABLE_VOLTAGE): State.SWITCH_ON_DISABLED,    # 12
    (State.FAULT, Command.FAULT_RESET): State.SWITCH_ON_DISABLED,                    # 15
}
# Internal transitions: 0+1 power-up -> SWITCH_ON_DISABLED, 12 quick stop done, 13 fault detected
# -> FAULT_REACTION_ACTIVE, 14 reaction done -> FAULT. They are driven by the drive, not commands.

# Table index: low nibble of the controlword -> command (bit 7 edges are handled separately).
_COMMAND_OF_NIBBLE = tuple(
    Command.DISABLE_VOLTAGE if not n & CW_ENABLE_VOLTAGE
    else Command.QUICK_STOP if not n & CW_QUICK_STOP
    else Command.SHUTDOWN if not n & CW_SWITCH_ON
    else Command.ENABLE_OPERATION if n & CW_ENABLE_OPERATION
    else Command.SWITCH_ON
    for n in range(16)
)

# Table index: statusword & 0x6F -> state.
_STATE_OF_BITS = [State.NOT_READY_TO_SWITCH_ON] * 0x70
for _bits in range(0x70):
    if _bits & 0x4F == 0x40:
        _STATE_OF_BITS[_bits] = State.SWITCH_ON_DISABLED
    elif _bits & 0x4F == 0x0F:
        _STATE_OF_BITS[_bits] = State.FAULT_REACTION_ACTIVE
    elif _bits & 0x4F == 0x08:
        _STATE_OF_BITS[_bits] = State.FAULT
    else:
        _STATE_OF_BITS[_bits] = {0x21: State.READY_TO_SWITCH_ON, 0x23: State.SWITCHED_ON,
                                 0x27: State.OPERATION_ENABLED, 0x07: State.QUICK_STOP_ACTIVE
                                 }.get(_bits, State.NOT_READY_TO_SWITCH_ON)
_STATE_OF_BITS = tuple(_STATE_OF_BITS)


def decode_command(controlword: int, previous: int) -> Command:
    """The command a controlword gives, ``previous`` being the controlword of the last cycle."""
    if controlword & CW_FAULT_RESET and not previous & CW_FAULT_RESET:
        return Command.FAULT_RESET
    return _COMMAND_OF_NIBBLE[controlword & 0x0F]


NEXT_STATE: tuple[tuple[State, ...], ...] = tuple(
    tuple(TRANSITIONS.get((s, c), s) for c in Command) for s in State)
"""NEXT_STATE[state][command]: :data:`TRANSITIONS` as a dense table (illegal: unchanged)."""


def next_state(state: State, command: Command) -> State:
    """The state after ``command``; commands not legal in ``state`` leave it unchanged."""
    return NEXT_STATE[state][command]


def decode_state(statusword: int) -> State:
    """The state a statusword reports; patterns outside the standard read as Not Ready."""
    return _STATE_OF_BITS[statusword & 0x6F]


# Master side: the controlword that walks a drive towards the wanted behaviour.
CW_DISABLE_VOLTAGE = 0x0000
CW_QUICK_STOP_CMD = 0x0002
CW_SHUTDOWN = 0x0006
CW_ENABLE = 0x000F


def enable_controlword(state: State) -> int:
    """Controlword for the next step of the enable sequence 2 -> 3 -> 4 from ``state``."""
    if state == State.SWITCH_ON_DISABLED:
        return CW_SHUTDOWN
    if state in (State.READY_TO_SWITCH_ON, State.SWITCHED_ON, State.OPERATION_ENABLED):
        return CW_ENABLE
    if state == State.QUICK_STOP_ACTIVE:
        return CW_QUICK_STOP_CMD
    return CW_DISABLE_VOLTAGE
