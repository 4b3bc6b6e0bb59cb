"""POWERLINK NMT: node states, NMT commands and the controlled-node state table (EPSG DS 301 §7).

Every CN boots NotActive -> PreOp1 -> PreOp2 -> ReadyToOperate -> Operational (:data:`BOOT_SEQUENCE`).
Reset states (Initialising, ResetApplication, ResetCommunication, ResetConfiguration) are collapsed:
a reset command takes the node straight back to NotActive.
"""
from __future__ import annotations

from enum import Enum, IntEnum


class NmtState(IntEnum):
    """NMT state codes as carried in the NMTStatus byte of PRes, SoA and IdentResponse."""

    NOT_ACTIVE = 0x1C
    PRE_OPERATIONAL_1 = 0x1D
    PRE_OPERATIONAL_2 = 0x5D
    READY_TO_OPERATE = 0x6D
    OPERATIONAL = 0xFD
    STOPPED = 0x4D


NMT_STATE_CODES = frozenset(int(s) for s in NmtState)

BOOT_SEQUENCE = (
    NmtState.NOT_ACTIVE,
    NmtState.PRE_OPERATIONAL_1,
    NmtState.PRE_OPERATIONAL_2,
    NmtState.READY_TO_OPERATE,
    NmtState.OPERATIONAL,
)


class NmtCommand(IntEnum):
    """NMT state command ids carried by an ASnd NMTCommand (DS 301 §7.3.1.2)."""

    START_NODE = 0x21
    STOP_NODE = 0x22
    ENTER_PRE_OPERATIONAL_2 = 0x23
    ENABLE_READY_TO_OPERATE = 0x24
    RESET_NODE = 0x28
    RESET_COMMUNICATION = 0x29
    RESET_CONFIGURATION = 0x2A
    SW_RESET = 0x2B


NMT_COMMAND_CODES = frozenset(int(c) for c in NmtCommand)


class NmtEvent(Enum):
    """Non-command events that move a CN: traffic seen on the wire and DLL error thresholds."""

    SOC = "SoC received"
    SOA = "SoA received"
    DLL_ERROR = "DLL error threshold reached"


_RESETS = (NmtCommand.RESET_NODE, NmtCommand.RESET_COMMUNICATION,
           NmtCommand.RESET_CONFIGURATION, NmtCommand.SW_RESET)
_CYCLIC = (NmtState.PRE_OPERATIONAL_2, NmtState.READY_TO_OPERATE, NmtState.OPERATIONAL)

CN_TRANSITIONS: dict[tuple[NmtState, NmtCommand | NmtEvent], NmtState] = {
    (NmtState.NOT_ACTIVE, NmtEvent.SOA): NmtState.PRE_OPERATIONAL_1,
    (NmtState.NOT_ACTIVE, NmtEvent.SOC): NmtState.PRE_OPERATIONAL_1,
    (NmtState.PRE_OPERATIONAL_1, NmtEvent.SOC): NmtState.PRE_OPERATIONAL_2,
    (NmtState.PRE_OPERATIONAL_2, NmtCommand.ENABLE_READY_TO_OPERATE): NmtState.READY_TO_OPERATE,
    (NmtState.READY_TO_OPERATE, NmtCommand.START_NODE): NmtState.OPERATIONAL,
    (NmtState.READY_TO_OPERATE, NmtCommand.ENTER_PRE_OPERATIONAL_2): NmtState.PRE_OPERATIONAL_2,
    (NmtState.OPERATIONAL, NmtCommand.ENTER_PRE_OPERATIONAL_2): NmtState.PRE_OPERATIONAL_2,
    (NmtState.STOPPED, NmtCommand.ENTER_PRE_OPERATIONAL_2): NmtState.PRE_OPERATIONAL_2,
    **{(s, NmtCommand.STOP_NODE): NmtState.STOPPED for s in _CYCLIC},
    **{(s, NmtEvent.DLL_ERROR): NmtState.PRE_OPERATIONAL_1 for s in _CYCLIC},
    **{(s, c): NmtState.NOT_ACTIVE for s in NmtState for c in _RESETS},
}


def cn_next_state(state: NmtState, event: NmtCommand | NmtEvent) -> NmtState:
    """The CN state after ``event``; events that are not legal in ``state`` leave it unchanged."""
    return CN_TRANSITIONS.get((state, event), state)
