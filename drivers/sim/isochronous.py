"""The simulated CNs' steady-state isochronous phase in one Numba pass over a UDP datagram.

:func:`serve_isochronous` walks the frame entries of a FRAMES datagram (``drivers.udp_protocol``
layout: ``<HB`` length and answer-wanted before each frame, answers as ``<HI`` length and delay
before each) and handles the SoC, PReq and SoA frames exactly as
:class:`~drivers.sim.nodes.SimulatedNodes` would in steady state (EPSG DS 301 §4.2.4.1: SoC, then
PReq → PRes per CN, then SoA):

- SoC: validated as :func:`~drivers.powerlink.frames.read_soc` does; every CN sees it; the phase
  within the control period follows from its RelativeTime;
- PReq: validated as :func:`~drivers.powerlink.frames.read_preq` plus the PDO mapping check of
  :meth:`~drivers.sim.controlled_node.ControlledNode.on_preq`; its RPDO is applied when
  applying it can only change the setpoints: per channel, the controlword is the one the drive last
  applied and leaves its CiA 402 state where it is (``IDEM_CW``, kept by
  :meth:`~drivers.sim.drive.Drive._publish`) and the mode is the mode in use; the answer is the node's
  PRes (the drive kernel maps the TPDO into it) with NMTStatus Operational, the node's flags1
  (``nodes[:, FLAGS1]``: RD and EN), PR = RS = 0, and a fresh FCS;
- SoA inviting nobody (RequestedServiceID NO_SERVICE), validated as
  :func:`~drivers.powerlink.frames.read_soa` does, after a SoC every CN saw and with no lost SoC
  being counted down (``io[SOA_OK]``, ``io[SOC_SEEN]``): the drives' bus cycle
  (:func:`~drivers.sim.drive.step_axes`), then it returns (``io[STEPPED]``) so that the Python half of
  the bus cycle (:meth:`~drivers.sim.drive.DriveBank.after_step`: new faults, braking, the plant) runs
  before any further frame. ``io[MORE_SOA]`` tells whether another SoA follows in the datagram.

It stops, leaving the rest to the Python path, at the first frame that is anything else or
anything less usual: an ASnd, a SoA while a plant step is pending (``io[PENDING]``: it must run
first) or inviting a node, a frame that fails a check, a PReq to a node that is not eligible
(``nodes[:, ELIGIBLE]``: Operational, nothing pending, the drive not dirty), a controlword or mode
that could change a drive's state, a truncated entry.
Every frame is handled whole by one side, so the answers are byte for byte those of the Python
path (tests/drivers/powerlink/test_fast_paths.py runs both on the same datagrams).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from drivers.udp_protocol import ANSWER, ENTRY
from drivers.sim import drive
from drivers.powerlink import frames
from drivers.powerlink.checks import crc32, framed, le, put_le
from drivers.powerlink.nmt import NMT_STATE_CODES, NmtState
from drivers import pdo
from drivers.powerlink.scaling import OFFSET

# Columns of the ``nodes`` table (one row per CN): node id, eligible for the fast path, its PRes
# row in DriveBank.pres, its PRes flags1 (RD, EN), its PRes frame length and RPDO size (the
# mappings its drive applied), the axis row of each RPDO channel (-1: unused).
NODE_ID, ELIGIBLE, PRES_ROW, FLAGS1, PRES_LENGTH, RPDO_SIZE = range(6)
CHANNEL_ROWS = 6
N_NODE_COLUMNS = CHANNEL_ROWS + drive.CHANNELS
# Entries of the ``io`` array. In: datagram size, SoA allowed, a plant step pending. In/out: read
# and write offsets, the phase, every CN saw the last SoC. Out: an answer was wanted, SoC frames
# handled, the drives stepped at a SoA (then: axes with a new fault, another SoA follows), the
# NetTime (s, ns) of the last SoC handled.
(SIZE, SOA_OK, PENDING, AT, OUT, PHASE, SOC_SEEN, WANTED, SOCS, STEPPED, NEW_FAULTS, MORE_SOA, NET_TIME_S,
 NET_TIME_NS) = range(14)
N_IO = 14

_OPERATIONAL = int(NmtState.OPERATIONAL)
_SOC, _PREQ, _SOA = int(frames.MessageType.SOC), int(frames.MessageType.PREQ), int(frames.MessageType.SOA)
_SOC_MAC = np.frombuffer(frames.SOC_MAC, np.uint8).copy()
_SOA_MAC = np.frombuffer(frames.SOA_MAC, np.uint8).copy()
_NMT_CODES = np.array(sorted(NMT_STATE_CODES), np.int64)
_NO_SERVICE = int(frames.RequestedService.NO_SERVICE)
_ENTRY_SIZE, _ANSWER_SIZE = ENTRY.size, ANSWER.size


@njit(cache=True)
def _soc_phase(rx, at, n, cycle_us, ratio):
    """The phase a valid SoC starts (read_soc's checks), or -1."""
    if (not framed(rx, at, n, True) or rx[at + frames.DST_NODE_AT] != frames.BROADCAST_NODE_ID
            or rx[at + frames.SRC_NODE_AT] != frames.MN_NODE_ID):
        return -1
    for i in range(_SOC_MAC.shape[0]):
        if rx[at + frames.DST_MAC_AT + i] != _SOC_MAC[i]:
            return -1
    if le(rx, at + frames.NET_TIME_NS_AT, 4) >= 1_000_000_000:
        return -1
    return (le(rx, at + frames.RELATIVE_TIME_AT, 8) // cycle_us) % ratio


@njit(cache=True)
def _idle_soa(rx, at, n):
    """A valid SoA (read_soa's checks) that invites nobody."""
    if (not framed(rx, at, n, True) or rx[at + frames.DST_NODE_AT] != frames.BROADCAST_NODE_ID
            or rx[at + frames.SRC_NODE_AT] != frames.MN_NODE_ID):
        return False
    for i in range(_SOA_MAC.shape[0]):
        if rx[at + frames.DST_MAC_AT + i] != _SOA_MAC[i]:
            return False
    known = False
    for code in _NMT_CODES:
        known = known or rx[at + frames.NMT_STATUS_AT] == code
    target = rx[at + frames.SERVICE_TARGET_AT]
    return (known and rx[at + frames.SERVICE_AT] == _NO_SERVICE
            and (target == frames.INVALID_NODE_ID or 1 <= target <= frames.MN_NODE_ID
                 or target == frames.BROADCAST_NODE_ID))


@njit(cache=True)
def _apply(rx, at, n, node, x, flags, rfields):
    """Validate a PReq to ``node`` (read_preq, on_preq) and write its setpoints if that is all
    applying it does; False (nothing written) otherwise."""
    dst = rx[at + frames.DST_NODE_AT]
    if not framed(rx, at, n, True) or rx[at + frames.SRC_NODE_AT] != frames.MN_NODE_ID or not 1 <= dst < frames.MN_NODE_ID:
        return False
    mac = at + frames.DST_MAC_AT                     # frames.node_mac(dst): 02:00:00:00:00:<dst>
    if rx[mac] != 0x02 or rx[mac + 1] or rx[mac + 2] or rx[mac + 3] or rx[mac + 4] or rx[mac + 5] != dst:
        return False
    size = le(rx, at + frames.SIZE_AT, 2)
    if (size != node[RPDO_SIZE] or size > n - frames.PDO_OFFSET - frames.FCS_SIZE
            or rx[at + frames.PDO_VERSION_AT] != frames.PDO_VERSION or not rx[at + frames.FLAGS1_AT] & frames.FLAG1_RD):
        return False
    base = at + frames.PDO_OFFSET
    for ch in range(N_NODE_COLUMNS - CHANNEL_ROWS):
        row = node[CHANNEL_ROWS + ch]
        if row < 0:
            continue
        f = rfields[row]
        if f[pdo.R_CONTROLWORD, OFFSET] < 0 or f[pdo.R_MODE, OFFSET] < 0:
            return False
        mode = np.int64(np.int8(rx[base + f[pdo.R_MODE, OFFSET]]))
        if (le(rx, base + f[pdo.R_CONTROLWORD, OFFSET], 2) != flags[row, drive.IDEM_CW]
                or mode != flags[row, drive.MODE_DISPLAY]):
            return False
    frame = rx[at:at + n]
    for ch in range(N_NODE_COLUMNS - CHANNEL_ROWS):
        row = node[CHANNEL_ROWS + ch]
        if row >= 0:
            drive.put_setpoints(frame, rfields[row], x, row)
    return True


@njit(cache=True)
def serve_isochronous(rx, tx, io, nodes, node_of, pres, x, flags, tfields, rfields, plant_pos, plant_vel, aux_src, aux_rows, torque,
                      dt, cycle_us, ratio, control_period):
    """Handle the datagram's frames from ``io[AT]`` up to the first one left to Python or the first
    SoA stepped (module docstring); answers written into ``tx`` from ``io[OUT]``; ``node_of``: row
    of ``nodes`` per node id (-1: none); the drive arrays as :func:`~drivers.sim.drive.step_axes` takes them,
    ``rfields`` the bank's RPDO field tables."""
    size = io[SIZE]
    at = io[AT]
    out = io[OUT]
    while at + _ENTRY_SIZE <= size:
        n = le(rx, at, 2)
        answer = rx[at + 2]
        frame = at + _ENTRY_SIZE
        if frame + n > size or n < frames.MIN_FRAME:
            break
        kind = rx[frame + frames.MESSAGE_TYPE_AT]
        reply = pres[0]
        replied = stepped = False
        if kind == _SOC:
            for k in range(nodes.shape[0]):
                if not nodes[k, ELIGIBLE]:
                    return
            phase = _soc_phase(rx, frame, n, cycle_us, ratio)
            if phase < 0:
                break
            io[PHASE] = phase
            io[NET_TIME_S] = le(rx, frame + frames.NET_TIME_AT, 4)
            io[NET_TIME_NS] = le(rx, frame + frames.NET_TIME_NS_AT, 4)
            io[SOC_SEEN] = 1
            io[SOCS] += 1
        elif kind == _PREQ:
            k = node_of[rx[frame + frames.DST_NODE_AT]]
            if k < 0 or not nodes[k, ELIGIBLE] or not _apply(rx, frame, n, nodes[k], x, flags, rfields):
                break
            reply = pres[nodes[k, PRES_ROW], :nodes[k, PRES_LENGTH]]     # on_preq: status, then seal
            m = reply.shape[0]
            reply[frames.NMT_STATUS_AT] = _OPERATIONAL
            reply[frames.FLAGS1_AT] = nodes[k, FLAGS1]
            reply[frames.FLAGS2_AT] = 0
            put_le(reply, m - frames.FCS_SIZE, crc32(reply, 0, m - frames.FCS_SIZE), 4)
            replied = True
        elif kind == _SOA:
            if io[PENDING] or not io[SOA_OK] or not io[SOC_SEEN] or not _idle_soa(rx, frame, n):
                break
            io[NEW_FAULTS] = drive.step_axes(x, flags, tfields, plant_pos, plant_vel, aux_src, aux_rows, torque, dt,
                                             io[PHASE], ratio, control_period, pres)
            io[PHASE] = (io[PHASE] + 1) % ratio
            io[SOC_SEEN] = 0
            io[STEPPED] = stepped = True
        else:
            break
        if answer:
            io[WANTED] = 1
            if replied:
                m = reply.shape[0]
                put_le(tx, out, m, 2)
                put_le(tx, out + 2, 0, 4)
                out += _ANSWER_SIZE
                tx[out:out + m] = reply
                out += m
            else:
                put_le(tx, out, 0, _ANSWER_SIZE)
                out += _ANSWER_SIZE
        at = frame + n
        io[AT] = at
        io[OUT] = out
        if stepped:
            io[MORE_SOA] = _soa_follows(rx, at, size)
            return


@njit(cache=True)
def _soa_follows(rx, at, size):
    """Whether an entry from ``rx[at]`` on holds a SoA."""
    while at + _ENTRY_SIZE <= size:
        n = le(rx, at, 2)
        if at + _ENTRY_SIZE + n > size:
            return False
        if n > frames.MESSAGE_TYPE_AT and rx[at + _ENTRY_SIZE + frames.MESSAGE_TYPE_AT] == _SOA:
            return True
        at += _ENTRY_SIZE + n
    return False
