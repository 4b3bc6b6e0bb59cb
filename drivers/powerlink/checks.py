"""Frame checks in Numba: CRC-32, the framing every reader checks first, and the managing node's
check of a control period's PRes in one pass (EPSG DS 301 §4.6.1.1.4 PRes, §4.7 error handling).

:func:`steady_pres` answers one question for :meth:`ManagingNode.period
<drivers.powerlink.managing_node.ManagingNode.period>`: is every answer of the period a valid PRes
(as :func:`~drivers.powerlink.frames.read_pres` checks it) from the node polled in its slot,
reporting NMTStatus Operational and no new exception (EN as the MN last acknowledged it),
carrying the PDO version and the size of the node's TPDO mapping, within
``pres_timeout_s``? Then nothing but the TPDO values of the last cycle is news to the MN. Any
other answer (lost, late, malformed, another state) sends the period through the Python path,
which counts and reports it.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from drivers.powerlink import frames
from drivers.powerlink.nmt import NmtState

_OPERATIONAL = int(NmtState.OPERATIONAL)
_PRES = int(frames.MessageType.PRES)
_PRES_MAC = np.frombuffer(frames.PRES_MAC, np.uint8).copy()
_ETHERTYPE_HI, _ETHERTYPE_LO = frames.ETHERTYPE >> 8, frames.ETHERTYPE & 0xFF     # big-endian on the wire


def _crc_table() -> np.ndarray:
    table = np.zeros(256, np.uint32)
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        table[n] = c
    return table


_CRC_TABLE = _crc_table()
_FCS_RESIDUE = np.uint32(0x2144DF1C)


@njit(cache=True)
def crc32(buf, start, end):
    """CRC-32 of ``buf[start:end]`` as zlib computes it (the Ethernet FCS, frames.py)."""
    c = np.uint32(0xFFFFFFFF)
    for i in range(start, end):
        c = _CRC_TABLE[(c ^ buf[i]) & 0xFF] ^ (c >> np.uint32(8))
    return c ^ np.uint32(0xFFFFFFFF)


@njit(cache=True)
def le(buf, at, n):
    """The ``n``-byte little-endian unsigned integer at ``buf[at]``."""
    v = 0
    for i in range(n):
        v |= np.int64(buf[at + i]) << (8 * i)
    return v


@njit(cache=True)
def put_le(buf, at, value, n):
    """The ``n`` low bytes of the integer ``value``, little-endian, at ``buf[at]``."""
    for i in range(n):
        buf[at + i] = (value >> (8 * i)) & 0xFF


@njit(cache=True)
def get_f32(buf, at):
    """The little-endian REAL32 at ``buf[at]``, as a float64."""
    return np.float64(np.uint32(le(buf, at, 4)).view(np.float32))


@njit(cache=True)
def take_tpdo(buf, offsets, first, count, rows, sizes, tpdo):
    """The TPDO payload (``sizes[j]`` bytes) of the PRes ``first + j`` (``buf[offsets[first + j]]``) into
    ``tpdo[rows[j]]``, j < ``count``."""
    for j in range(count):
        size = sizes[j]
        at = offsets[first + j] + frames.PDO_OFFSET
        tpdo[rows[j], :size] = buf[at:at + size]


@njit(cache=True)
def framed(buf, at, n, fcs):
    """Length within Ethernet's bounds, FCS (when ``fcs``: the link carries it, frames.py) and
    EtherType: what every reader checks first."""
    if fcs:
        if not (frames.MIN_FRAME <= n <= frames.MAX_FRAME and crc32(buf, at, at + n) == _FCS_RESIDUE):
            return False
    elif not frames.MESSAGE_TYPE_AT < n <= frames.MAX_FRAME - frames.FCS_SIZE:
        return False
    return (buf[at + frames.ETHERTYPE_AT] == _ETHERTYPE_HI and buf[at + frames.ETHERTYPE_AT + 1] == _ETHERTYPE_LO)


@njit(cache=True)
def steady_pres(buf, offsets, lengths, delays_ns, count, expect, en, sizes, timeout_s, fcs):
    """True when answer ``k`` (``lengths[k]`` bytes at ``buf[offsets[k]]``, wire delay
    ``delays_ns[k]``; with an FCS when ``fcs``) is a valid Operational PRes from node
    ``expect[k % len(expect)]``, its EN bit ``en[k % len(expect)]`` (no new exception), carrying
    ``sizes[k % len(expect)]`` TPDO bytes, within ``timeout_s``, for every ``k < count`` (module docstring)."""
    polled = expect.shape[0]
    if polled == 0 or count % polled:
        return False
    for k in range(count):
        at, n = offsets[k], lengths[k]
        if n < frames.PDO_OFFSET + sizes[k % polled] or delays_ns[k] * 1e-9 > timeout_s or not framed(buf, at, n, fcs):
            return False
        for i in range(_PRES_MAC.shape[0]):
            if buf[at + frames.DST_MAC_AT + i] != _PRES_MAC[i]:
                return False
        size = le(buf, at + frames.SIZE_AT, 2)
        if (buf[at + frames.MESSAGE_TYPE_AT] != _PRES or buf[at + frames.DST_NODE_AT] != frames.BROADCAST_NODE_ID
                or buf[at + frames.SRC_NODE_AT] != expect[k % polled] or buf[at + frames.NMT_STATUS_AT] != _OPERATIONAL
                or buf[at + frames.FLAGS1_AT] & frames.FLAG1_EN != en[k % polled]
                or buf[at + frames.PDO_VERSION_AT] != frames.PDO_VERSION or size != sizes[k % polled]
                or size > n - frames.PDO_OFFSET - frames.FCS_SIZE * fcs):
            return False
    return True
