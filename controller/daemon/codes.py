"""Codes shared by the loop and the I/O side: states, events, reasons, error codes.

The loop writes numbers into shared memory; the I/O side turns them into names for
replies, telemetry and logs. One table, so the two sides cannot drift.
"""
from __future__ import annotations

from enum import IntEnum


class State(IntEnum):
    """Controller states (docs/cycle.md): BOOT -> DISABLED -> HOLD -> MOVING | STABILIZING."""
    BOOT = 0
    DISABLED = 1
    HOLD = 2
    MOVING = 3
    STABILIZING = 4
    FAULT = 5
    ESTOP = 6


class Event(IntEnum):
    """Event kinds in the events ring ``[cycle, kind, a, b]``."""
    TRANSITION = 1       # a = old state, b = Reason + 1000 * new state
    FAULT = 2            # a = Reason, b = pack_detail(code, bus axis or joint index)
    WARNING = 3          # a = Reason, b = joint index (SOFT_LIMIT), stabilizer status (STABILIZER_FAILED)
    COMMAND = 4          # a = Cmd, b = 1 accepted / 0 refused
    OVERRUN = 5          # a = missed cycles, b = cycle time in us
    STABILIZER = 6       # a = stabilizer status, b = stab_flags bits that rose (telemetry.STAB_FLAGS)
    SUPPORT = 7          # a = new support phase (models.common.support: 0 left, 1 right, 2 double), b = model root index
    CONTACT = 8          # a = the support phase the feet's loads show (-1: none), b = the right foot's load share
    EDGE = 9             # a = the foot that landed on an edge or a step (0 left, 1 right), b = the mask of its
    #                      unloaded cells (bit k: its k-th cell of the robot's feet.*.sensors; stabilizer.feet)
    RECOVERY_STEP = 10   # a = the foot a push's recovery step swings (0 left, 1 right), b = pack_point(where its sole's
    #                      centre lands: e1, e2 of the whole-robot stabilizer, m; stabilizer.push_recovery)
    TOUCHDOWN = 11       # a = the foot whose landing the cells moved (0 left, 1 right), b = its sole's offset from the
    #                      plan, carried through its stance (m, > 0 higher: an early contact; stabilizer.touchdown)
    TOE_DOWN = 12        # a = the foot landed across an edge whose sole the cells turned toes down (0 left, 1 right),
    #                      b = its pitch as its toes found the ground, carried through its stance (rad; stabilizer.touchdown)
    SIDE_DOWN = 13       # a = the foot landed on one side's edge whose sole the cells turned about it (0 left, 1 right),
    #                      b = its roll as the sunk side found the ground (rad, > 0 right side down; stabilizer.touchdown)
    STRIKE = 14          # a = the swing foot whose rising sole struck something (0 left, 1 right), b = the raise over the
    #                      plan it now rises to (m; stabilizer.touchdown eq. 4)


class Reason(IntEnum):
    COMMAND = 1
    BOOTED = 2
    TRAJECTORY_DONE = 3
    DRIVE_FAULT = 4
    BUS_FAULT = 5
    HARD_LIMIT = 6
    NON_FINITE = 7
    WATCHDOG = 8
    SOFT_LIMIT = 9
    TRANSMISSION = 10
    ESTOP = 11
    SHUTDOWN = 12
    STOP_DONE = 13
    STABILIZER_FAILED = 14   # control.stabilizer_failure_cycles non-OK stabilizer cycles in a row
    ENABLE_TIMEOUT = 15      # a drive did not reach Operation Enabled within control.enable_timeout_s
    TILT_INPUT = 16          # the tilt (platform angles or foot IMU) is unusable: the last valid gravity is kept
    #                          (detail 0), or the foot IMU's tilt has not been confirmed flat for a while (detail 1)
    FEET_LOADS = 17          # the feet's load cells are implausible (detail: stabilizer.contact.loads_status code):
    #                          no sensed support, the walk's load split falls back to its plan
    LOG_FAILED = 18          # the I/O process could not write the cycle log (its own WARNING event, never the loop's)


# A fault's detail (FAULT event b, telemetry fault_info): its code in the low 16 bits
# (CiA 402 / POWERLINK error code for DRIVE_FAULT and BUS_FAULT, CiA 402 state reached for
# ENABLE_TIMEOUT, models.transmission status for TRANSMISSION (0: a motor setpoint is not
# finite), controller.daemon.loop.safety check for HARD_LIMIT and NON_FINITE), and above
# them the index + 1 of what it concerns (0: nothing): the bus axis for DRIVE_FAULT,
# BUS_FAULT, ENABLE_TIMEOUT and TRANSMISSION, the joint for HARD_LIMIT and NON_FINITE.
DETAIL_INDEX = 0x10000


def pack_detail(code: int, index: int = -1) -> float:
    """(code, index) as one float, exactly (both are small integers)."""
    return float(code + DETAIL_INDEX * (index + 1))


def unpack_detail(detail: float) -> tuple[int, int]:
    """(code, index) of :func:`pack_detail`; index -1 when there is none."""
    d = int(detail)
    return d % DETAIL_INDEX, d // DETAIL_INDEX - 1


POINT_STEP = 1e-4        # m: pack_point's resolution
POINT_SPAN = 100000      # its codes per coordinate (+-5 m)


def pack_point(x: float, y: float) -> float:
    """(x, y) (m, within +-5 m) as one float, to 0.1 mm (an event's b)."""
    def code(v: float) -> int:
        return min(max(round(v / POINT_STEP) + POINT_SPAN // 2, 0), POINT_SPAN - 1)
    return float(code(x) * POINT_SPAN + code(y))


def unpack_point(b: float) -> tuple[float, float]:
    """(x, y) of :func:`pack_point`."""
    k = int(b)
    return ((k // POINT_SPAN - POINT_SPAN // 2) * POINT_STEP, (k % POINT_SPAN - POINT_SPAN // 2) * POINT_STEP)


class Error(IntEnum):
    """Error codes of command replies (stable: clients match on the names)."""
    OK = 0
    BAD_JSON = 1
    BAD_REQUEST = 2
    UNKNOWN_COMMAND = 3
    BAD_ARGS = 4
    OUT_OF_RANGE = 5
    NOT_FINITE = 6
    NOT_ALLOWED = 7       # not allowed in the current state
    BUSY = 8              # mailbox full
    TIMEOUT = 9           # the loop did not take the command in time: withdrawn, never applied
    BAD_FILE = 10
    NOT_SUPPORTED = 11    # e.g. fault injection on a real bus
    INTERNAL = 12
    LOG_FAILED = 13       # a motion refused: the cycle log failed (io.on_log_failure: refuse_motions)


MAX_REQUEST_BYTES = 65536
"""The largest command request the I/O side reads (a longer one is a BAD_REQUEST); ``io.max_request_bytes``
may lower it."""
ON_LOG_FAILURE = ("refuse_motions", "continue")
"""What follows a cycle log failure (``io.on_log_failure``): new motions refused (the robot holds;
estop, stop, hold, disable and every local command still answered), or motions go on unlogged."""


class StabParam(IntEnum):
    """Stabilizer parameters a ``STABILIZER`` command may change (thesis §2.5).

    Mailbox args: ``enable`` (1/0), then ``(StabParam, value)`` pairs; names match
    ``stabilizer.config.StabilizerConfig``.
    """
    SATURATION_DISTANCE = 2    # m: wall force saturates below this distance (eq. 72-76)
    ADMITTANCE_DAMPING = 3     # N s/m: G moves at F / D
    ADMITTANCE_MASS = 4        # kg: virtual inertia of G
    MAX_SPEED = 5              # m/s: cap on G's speed
    POSTURE_GAIN = 8           # pull towards the posture target
    ATTRACTOR_GAIN = 9         # k of the attractive field (eq. 77-78), N m^2
    SUPPORT = 10               # the whole-robot stabilizer's support phase (models.common.support: 0 left, 1 right, 2 double)


class FaultKind(IntEnum):
    """Simulated faults the ``inject_fault`` command can raise (drivers.fault_api.FaultApi).
    Mailbox args: kind, target (node id, or bus axis index), count or sub-kind, value."""
    DROP_PRES = 1         # node, count
    DELAY_PRES = 2        # node, count, delay_s
    CORRUPT_PRES = 3      # node, count
    DROP_SOC = 4          # node, count
    STOP_NODE = 5         # node
    DISCONNECT_NODE = 6   # node
    RECONNECT_NODE = 7    # node
    DRIVE_FAULT = 8       # axis, DRIVE_FAULT_KINDS index
    ENCODER_GLITCH = 9    # axis, GLITCH_KINDS index, value (jump in rad)


DRIVE_FAULT_KINDS = ("over_temperature", "following_error")
GLITCH_KINDS = ("jump", "nan")
NODE_FAULTS = frozenset({FaultKind.DROP_PRES, FaultKind.DELAY_PRES, FaultKind.CORRUPT_PRES,
                         FaultKind.DROP_SOC, FaultKind.STOP_NODE, FaultKind.DISCONNECT_NODE,
                         FaultKind.RECONNECT_NODE})
