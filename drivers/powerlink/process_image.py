"""The HAL's arrays <-> the PDO payloads, each way one Numba pass over every axis (DS 301 §6.4).

:func:`read_tpdo` decodes each axis' TPDO fields (by the field table its node's mapping gives its
channel, drivers.pdo, built once when the bus opens) from the last valid PRes payload of its node into the bus arrays, the CiA 402 integers turned
into SI by the axis' scale factors (drivers.powerlink.scaling), with the CiA 402 state its
statusword reports (IEC 61800-7-201 §6.2) or the code a node-level error latched;
:func:`write_rpdo` turns the axis intents into controlwords (the master side of the enable
sequence) and packs each axis' RPDO channel into its node's PReq, the SI setpoints rounded to the
standard's integers, then seals every PReq's FCS. A setpoint outside its integer's range is
saturated (a NaN keeps the last value sent), never wrapped: its bit (:data:`SATURATION_BITS`) is
set in the axis' ``saturated`` word, its count grows, and the axes that start saturating are
returned for the HAL to report.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from drivers import cia402
from drivers.cia402 import State
from drivers.hal import Intent
from drivers import pdo
from drivers.powerlink import frames
from drivers.powerlink.checks import crc32, get_f32, le, put_le
from drivers.powerlink.scaling import OFFSET, get_integer, get_scaled, put_scaled

SATURATION_BITS = {"target_position": 1, "target_velocity": 2, "torque_offset": 4}
"""The bit of each scaled RPDO field in an axis' ``saturated`` word."""
_POSITION_BIT, _VELOCITY_BIT, _TORQUE_BIT = (SATURATION_BITS[n] for n in ("target_position", "target_velocity",
                                                                         "torque_offset"))

ENABLED, QUICK_STOP, FAULT_RESET = int(Intent.ENABLED), int(Intent.QUICK_STOP), int(Intent.FAULT_RESET)
STATE_OF_BITS = np.array([cia402.decode_state(bits) for bits in range(0x70)], np.int64)
"""STATE_OF_BITS[statusword & 0x6F]: the CiA 402 state a statusword reports."""
ENABLE_WORDS = np.array([cia402.enable_controlword(s) for s in State], np.int64)
"""ENABLE_WORDS[state]: the controlword of the next step of the enable sequence."""
_FAULT = int(State.FAULT)
_FAULT_REACTION = int(State.FAULT_REACTION_ACTIVE)


@njit(cache=True)
def read_tpdo(tpdo, node_latched, axis_node, tfields, scales, latched, statusword, mode_display, position,
              velocity, current, aux, state, fault_code, newly_faulted):
    """Axis ``a``'s TPDO fields (its field table ``tfields[a]``, drivers.pdo) of payload
    row ``tpdo[axis_node[a]]`` into the arrays, in SI by its row of ``scales`` (an unmapped velocity,
    current or aux input reads NaN, an unmapped error code 0); a node's latched code (``node_latched``, then cleared) moves to its axes' ``latched``,
    which reports the axis in FAULT with that code. The axes entering FAULT or FAULT_REACTION_ACTIVE
    from another state go to ``newly_faulted`` in axis order; returns how many."""
    n = axis_node.shape[0]
    for a in range(n):
        code = node_latched[axis_node[a]]
        if code:
            latched[a] = code
    node_latched[:] = 0
    count = 0
    for a in range(n):
        row = tpdo[axis_node[a]]
        f = tfields[a]
        sw = le(row, f[pdo.T_STATUSWORD, OFFSET], 2)
        statusword[a] = sw
        mode_display[a] = get_integer(row, 0, f[pdo.T_MODE_DISPLAY])
        position[a] = get_scaled(row, 0, f[pdo.T_POSITION], scales[a])
        velocity[a] = get_scaled(row, 0, f[pdo.T_VELOCITY], scales[a])
        current[a] = get_scaled(row, 0, f[pdo.T_CURRENT], scales[a])
        for k in range(len(pdo.T_AUX)):
            at = f[pdo.T_AUX[k], OFFSET]
            aux[a, k] = get_f32(row, at) if at >= 0 else np.nan
        if latched[a]:
            now, code = _FAULT, latched[a]
        else:
            at = f[pdo.T_ERROR_CODE, OFFSET]
            now, code = STATE_OF_BITS[sw & 0x6F], le(row, at, 2) if at >= 0 else 0
        fault_code[a] = code
        before = state[a]
        if now != before:
            state[a] = now
            if (now == _FAULT or now == _FAULT_REACTION) and before != _FAULT and before != _FAULT_REACTION:
                newly_faulted[count] = a
                count += 1
    return count


@njit(cache=True)
def write_rpdo(intent, state, controlword, mode, target_position, target_velocity, torque_offset, preq, preq_lengths,
               axis_node, rfields, scales, saturated, saturations, newly_saturated, resets_done):
    """Controlwords from the intents, then every axis' RPDO fields (its field table ``rfields[a]``)
    into its PReq row of ``preq`` (the setpoints scaled by its row of ``scales``; an unmapped one is
    not sent) and the FCS of every row, a frame of ``preq_lengths[row]`` bytes. Returns (pending resets,
    axes newly saturated). An axis resetting a fault needs the Python side (node states): unless
    ``resets_done`` (its ``controlword`` is then set), returns how many do, having packed nothing.
    Else each axis' ``saturated`` word gets the bits of its setpoints that did not fit (counted in
    ``saturations``), and the axes whose word turned non-zero go to ``newly_saturated``."""
    n = intent.shape[0]
    pending = 0
    for a in range(n):
        it = intent[a]
        if it == ENABLED:
            controlword[a] = ENABLE_WORDS[state[a]]
        elif it == QUICK_STOP:
            controlword[a] = cia402.CW_QUICK_STOP_CMD
        elif it == FAULT_RESET:
            pending += 1
        else:
            controlword[a] = cia402.CW_DISABLE_VOLTAGE
    if pending and not resets_done:
        return pending, 0
    count = 0
    for a in range(n):
        row = preq[axis_node[a]]
        f = rfields[a]
        at = frames.PDO_OFFSET
        put_le(row, at + f[pdo.R_CONTROLWORD, OFFSET], controlword[a], 2)
        put_le(row, at + f[pdo.R_MODE, OFFSET], mode[a] & 0xFF, 1)
        bits = 0
        if put_scaled(row, at, f[pdo.R_TARGET_POSITION], target_position[a], scales[a]):
            bits |= _POSITION_BIT
        if put_scaled(row, at, f[pdo.R_TARGET_VELOCITY], target_velocity[a], scales[a]):
            bits |= _VELOCITY_BIT
        if put_scaled(row, at, f[pdo.R_TORQUE_OFFSET], torque_offset[a], scales[a]):
            bits |= _TORQUE_BIT
        if bits:
            saturations[a] += 1
            if not saturated[a]:
                newly_saturated[count] = a
                count += 1
        saturated[a] = bits
    for k in range(preq.shape[0]):
        fcs = preq_lengths[k] - frames.FCS_SIZE
        put_le(preq[k], fcs, crc32(preq[k], 0, fcs), 4)
    return 0, count
