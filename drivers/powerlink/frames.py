"""POWERLINK frames as bytes (EPSG DS 301 §4.6): encoders, decoders and strict validation.

Every frame is an Ethernet II frame padded to the 60-byte minimum and closed by the FCS::

    off  size  field
      0     6  destination MAC (SoC/PRes/SoA/ASnd: POWERLINK multicast; PReq: the CN's MAC)
      6     6  source MAC (02:00:00:00:00:<node id>, locally administered)
     12     2  EtherType 0x88AB (big-endian)
     14     1  MessageType: SoC 0x01, PReq 0x03, PRes 0x04, SoA 0x05, ASnd 0x06
     15     1  destination node id (255 = broadcast)
     16     1  source node id (MN = 240)
     17     .  type-specific fields, little-endian:
               SoC   17 res | 18 flags1 (MC 0x80, PS 0x40) | 19 flags2 | 20 NetTime s u32, ns u32
                     | 28 RelativeTime u64 [µs]
               PReq  17 res | 18 flags1 (MS 0x20, EA 0x04, RD 0x01) | 19 res | 20 PDOVersion | 21 res
                     | 22 Size u16 | 24 payload
               PRes  17 NMTStatus | 18 flags1 (MS 0x20, EN 0x10, RD 0x01) | 19 flags2 (PR << 3 | RS)
                     | 20 PDOVersion | 21 res | 22 Size u16 | 24 payload
               SoA   17 NMTStatus | 18 flags1 (EA 0x04, ER 0x02) | 19 res | 20 RequestedServiceID
                     | 21 RequestedServiceTarget | 22 EPLVersion
               ASnd  17 ServiceID | 18 payload
      n-4       4  FCS: CRC-32 (as zlib computes it) of bytes [0, n-4), little-endian

The encoders always write the FCS (the ``sim`` and ``udp`` links carry it and the simulated nodes
check it). A socket neither sends nor receives it (the NIC appends and strips it, and pads a short
frame to 60 bytes): a raw link sends :func:`without_fcs` of a frame and hands received frames to the
decoders with ``fcs=False``. Decoders then check no checksum and no 60-byte minimum: the frame's own
fields (header, Size) decide what is read, and bytes after them (kernel padding) are ignored.

Decoders raise a :class:`FrameError` subclass for every malformed input, never IndexError.
The hot path uses :class:`TxFrame` (a preallocated buffer whose header is written once) and the
``read_*`` functions.
"""
from __future__ import annotations

import struct
from enum import IntEnum
from zlib import crc32

from drivers.powerlink.nmt import NMT_STATE_CODES

ETHERTYPE = 0x88AB
MN_NODE_ID = 240
BROADCAST_NODE_ID = 255
INVALID_NODE_ID = 0
MIN_FRAME = 64            # the Ethernet minimum, FCS included
MAX_FRAME = 1518
FCS_SIZE = 4
# Byte offsets of the header fields (the table above), for the encoders below and the Numba
# readers (drivers.powerlink.checks, drivers.sim.isochronous)
DST_MAC_AT = 0
SRC_MAC_AT = 6
ETHERTYPE_AT = 12
MESSAGE_TYPE_AT = 14
DST_NODE_AT = 15
SRC_NODE_AT = 16
FIELDS_AT = 17            # the type-specific fields
NMT_STATUS_AT = 17        # PRes, SoA
SERVICE_ID_AT = 17        # ASnd
FLAGS1_AT = 18
FLAGS2_AT = 19
PDO_VERSION_AT = 20       # PReq, PRes
SIZE_AT = 22              # PReq, PRes: the PDO payload's size, u16
NET_TIME_AT = 20          # SoC: NetTime seconds u32, nanoseconds u32
NET_TIME_NS_AT = 24
RELATIVE_TIME_AT = 28     # SoC: u64 µs
SERVICE_AT = 20           # SoA: RequestedServiceID
SERVICE_TARGET_AT = 21    # SoA: RequestedServiceTarget
EPL_VERSION_AT = 22       # SoA
PDO_OFFSET = 24
ASND_OFFSET = 18
PDO_VERSION = 0x10
EPL_VERSION = 0x20
MAX_PDO_PAYLOAD = MAX_FRAME - PDO_OFFSET - FCS_SIZE
MAX_ASND_PAYLOAD = MAX_FRAME - ASND_OFFSET - FCS_SIZE

FLAG1_RD = 0x01
FLAG1_ER = 0x02
FLAG1_EA = 0x04
FLAG1_EN = 0x10
FLAG1_MS = 0x20
FLAG1_PS = 0x40
FLAG1_MC = 0x80
FLAG2_RS_MASK = 0x07
FLAG2_PR_SHIFT = 3


class MessageType(IntEnum):
    SOC = 0x01
    PREQ = 0x03
    PRES = 0x04
    SOA = 0x05
    ASND = 0x06


class RequestedService(IntEnum):
    """SoA RequestedServiceID (DS 301 §4.6.1.1.5)."""

    NO_SERVICE = 0x00
    IDENT_REQUEST = 0x01
    STATUS_REQUEST = 0x02
    NMT_REQUEST_INVITE = 0x03
    UNSPECIFIED_INVITE = 0xFF


class ServiceId(IntEnum):
    """ASnd ServiceID (DS 301 §4.6.1.1.6)."""

    IDENT_RESPONSE = 0x01
    STATUS_RESPONSE = 0x02
    NMT_REQUEST = 0x03
    NMT_COMMAND = 0x04
    SDO = 0x05


_MESSAGE_TYPES = frozenset(int(t) for t in MessageType)
_SERVICES = frozenset(int(s) for s in RequestedService)
_SERVICE_IDS = frozenset(int(s) for s in ServiceId)

SOC_MAC = bytes.fromhex("01111e000001")
PRES_MAC = bytes.fromhex("01111e000002")
SOA_MAC = bytes.fromhex("01111e000003")
ASND_MAC = bytes.fromhex("01111e000004")


def node_mac(node_id: int) -> bytes:
    """The (locally administered) MAC address used for ``node_id``."""
    return bytes((0x02, 0, 0, 0, 0, node_id))


_NODE_MACS = tuple(node_mac(n) for n in range(256))


class FrameError(ValueError):
    """A frame that cannot be a valid POWERLINK frame."""


class TruncatedFrame(FrameError):
    """Fewer bytes than the Ethernet minimum or than the frame's own fields declare."""


class OversizedFrame(FrameError):
    """More bytes than an Ethernet frame can carry."""


class ChecksumError(FrameError):
    """The FCS does not match the frame's bytes."""


class InconsistentFrame(FrameError):
    """A field holds a value that the frame type does not allow."""


_ETHERTYPE = struct.Struct(">H")
_FCS = struct.Struct("<I")
_PACK_FCS = _FCS.pack_into
_FCS_RESIDUE = 0x2144DF1C       # crc32 over a frame and its FCS when the FCS matches
_SWAPPED_ETHERTYPE = 0xAB88     # ETHERTYPE as the little-endian headers below read it
_SOC_TIME = struct.Struct("<IIQ")
_SOC_FIELDS = struct.Struct("<xBBIIQ")
_PREQ_FIELDS = struct.Struct("<xBxBxH")
_PRES_FIELDS = struct.Struct("<BBBBxH")
_SOA_FIELDS = struct.Struct("<BBxBBB")
_ASND_FIELDS = struct.Struct("<B")


def _header(fields: struct.Struct) -> struct.Struct:
    """Bytes 0.. as one struct: destination MAC, (source MAC skipped), EtherType (byte-swapped),
    MessageType, destination and source node, then ``fields`` from byte 17 (all within MIN_FRAME)."""
    return struct.Struct("<6s6xHBBB" + fields.format[1:])


_BASIC = _header(struct.Struct("<"))
_SOC_HEADER = _header(_SOC_FIELDS)
_PREQ_HEADER = _header(_PREQ_FIELDS)
_PRES_HEADER = _header(_PRES_FIELDS)
_SOA_HEADER = _header(_SOA_FIELDS)
_ASND_HEADER = _header(_ASND_FIELDS)


class TxFrame:
    """A preallocated transmit buffer of fixed length; :meth:`seal` writes the FCS. ``buf``: a
    writable buffer of exactly that length to build the frame in (e.g. one a drive maps its TPDO
    into), else a new bytearray."""

    __slots__ = ("_body", "_fcs_at", "buf", "length", "view")

    def __init__(self, length: int, buf=None) -> None:
        if length > MAX_FRAME:
            raise OversizedFrame(f"a frame of {length} bytes exceeds the {MAX_FRAME}-byte Ethernet maximum")
        self.length = max(length, MIN_FRAME)
        if buf is not None and (len(buf) != self.length or memoryview(buf).readonly):
            raise ValueError(f"a TxFrame of {self.length} bytes needs a writable buffer of that length, "
                             f"got {len(buf)} bytes")
        self.buf = bytearray(self.length) if buf is None else buf
        self.view = memoryview(self.buf)
        self._fcs_at = self.length - FCS_SIZE
        self._body = self.view[: self._fcs_at]

    def seal(self) -> memoryview:
        """Write the FCS and return the whole frame."""
        _PACK_FCS(self.buf, self._fcs_at, crc32(self._body))
        return self.view


def _check_node(node_id: int, what: str) -> None:
    if not (1 <= node_id <= MN_NODE_ID or node_id == BROADCAST_NODE_ID):
        raise InconsistentFrame(f"{what} node id {node_id} is outside 1..240 and is not broadcast 255")


def _write_header(f: TxFrame, msg_type: MessageType, dst_mac: bytes, dst: int, src: int) -> None:
    _check_node(dst, "destination")
    _check_node(src, "source")
    f.buf[DST_MAC_AT:SRC_MAC_AT] = dst_mac
    f.buf[SRC_MAC_AT:ETHERTYPE_AT] = node_mac(src)
    _ETHERTYPE.pack_into(f.buf, ETHERTYPE_AT, ETHERTYPE)
    f.buf[MESSAGE_TYPE_AT] = msg_type
    f.buf[DST_NODE_AT] = dst
    f.buf[SRC_NODE_AT] = src


def _check_payload(size: int, limit: int) -> None:
    if size > limit:
        raise OversizedFrame(f"a payload of {size} bytes exceeds the {limit}-byte limit")


def soc_frame() -> TxFrame:
    """A SoC from the MN to everyone; fill it with :func:`set_soc_time`."""
    f = TxFrame(RELATIVE_TIME_AT + 8 + FCS_SIZE)
    _write_header(f, MessageType.SOC, SOC_MAC, BROADCAST_NODE_ID, MN_NODE_ID)
    return f


def set_soc_time(buf: bytearray, net_time_s: int, net_time_ns: int, relative_time_us: int) -> None:
    _SOC_TIME.pack_into(buf, NET_TIME_AT, net_time_s, net_time_ns, relative_time_us)


def pdo_frame_length(payload_size: int) -> int:
    """The length of a PReq or PRes carrying ``payload_size`` PDO bytes, FCS included."""
    return max(PDO_OFFSET + payload_size + FCS_SIZE, MIN_FRAME)


def preq_frame(dst: int, payload_size: int, pdo_version: int = PDO_VERSION, buf=None) -> TxFrame:
    """A PReq from the MN to CN ``dst`` carrying ``payload_size`` PDO bytes at :data:`PDO_OFFSET`;
    ``buf``: see :class:`TxFrame`."""
    _check_payload(payload_size, MAX_PDO_PAYLOAD)
    if not 1 <= dst < MN_NODE_ID:
        raise InconsistentFrame(f"PReq destination node id {dst} is outside 1..239")
    f = TxFrame(PDO_OFFSET + payload_size + FCS_SIZE, buf)
    _write_header(f, MessageType.PREQ, node_mac(dst), dst, MN_NODE_ID)
    _PREQ_FIELDS.pack_into(f.buf, FIELDS_AT, 0, pdo_version, payload_size)
    return f


def pres_frame(src: int, payload_size: int, pdo_version: int = PDO_VERSION, buf=None) -> TxFrame:
    """A PRes from node ``src`` to everyone; fill it with :func:`set_pres_status` and the PDO payload.
    ``buf``: see :class:`TxFrame` (the header is written into it, the payload left as it is)."""
    _check_payload(payload_size, MAX_PDO_PAYLOAD)
    f = TxFrame(PDO_OFFSET + payload_size + FCS_SIZE, buf)
    _write_header(f, MessageType.PRES, PRES_MAC, BROADCAST_NODE_ID, src)
    _PRES_FIELDS.pack_into(f.buf, FIELDS_AT, 0, 0, 0, pdo_version, payload_size)
    return f


def set_pres_status(buf: bytearray, nmt_status: int, flags1: int, flags2: int) -> None:
    buf[NMT_STATUS_AT] = nmt_status
    buf[FLAGS1_AT] = flags1
    buf[FLAGS2_AT] = flags2


def soa_frame() -> TxFrame:
    """A SoA from the MN to everyone; fill it with :func:`set_soa`."""
    f = TxFrame(EPL_VERSION_AT + 1 + FCS_SIZE)
    _write_header(f, MessageType.SOA, SOA_MAC, BROADCAST_NODE_ID, MN_NODE_ID)
    return f


def set_soa(buf: bytearray, nmt_status: int, flags1: int, service: int, target: int,
            epl_version: int = EPL_VERSION) -> None:
    _SOA_FIELDS.pack_into(buf, FIELDS_AT, nmt_status, flags1, service, target, epl_version)


def asnd_frame(dst: int, src: int, service_id: int, payload_size: int) -> TxFrame:
    """An ASnd carrying ``payload_size`` service bytes at :data:`ASND_OFFSET`."""
    _check_payload(payload_size, MAX_ASND_PAYLOAD)
    f = TxFrame(ASND_OFFSET + payload_size + FCS_SIZE)
    _write_header(f, MessageType.ASND, ASND_MAC, dst, src)
    f.buf[SERVICE_ID_AT] = service_id
    return f


def without_fcs(frame) -> memoryview:
    """``frame`` (as an encoder sealed it) without its FCS: what a socket sends."""
    return memoryview(frame)[:-FCS_SIZE]


def check_frame(data, fcs: bool = True) -> int:
    """Validate length, FCS (when ``fcs``: the link carries it), EtherType and MessageType; return
    the MessageType."""
    fields = _unpack(data, _BASIC, fcs)
    _check_header(fields)
    return fields[2]


def _unpack(data, header: struct.Struct, fcs: bool) -> tuple:
    """Check length and, when ``fcs``, the 64-byte minimum and the FCS; return the ``header`` fields
    (destination MAC, EtherType, MessageType, destination node, source node, type-specific fields)."""
    n = len(data)
    if fcs:
        if n < MIN_FRAME:
            raise TruncatedFrame(f"frame of {n} bytes is shorter than the {MIN_FRAME}-byte Ethernet minimum")
        if n > MAX_FRAME:
            raise OversizedFrame(f"frame of {n} bytes exceeds the {MAX_FRAME}-byte Ethernet maximum")
        if crc32(data) != _FCS_RESIDUE:
            raise ChecksumError(f"FCS mismatch in a frame of {n} bytes")
    elif n > MAX_FRAME - FCS_SIZE:
        raise OversizedFrame(f"frame of {n} bytes without FCS exceeds the {MAX_FRAME - FCS_SIZE}-byte "
                             f"Ethernet maximum")
    if n < header.size:
        raise TruncatedFrame(f"frame of {n} bytes is shorter than its {header.size}-byte header and payload")
    return header.unpack_from(data)


def _check_header(fields: tuple, msg_type: MessageType | None = None, dst_mac: bytes | None = None,
                  dst: int | None = None, src: int | None = None) -> None:
    """Check EtherType, MessageType and, when given, the expected type, destination MAC and node ids.
    The readers call it only when their fast comparison of the same fields failed."""
    mac, ethertype, got, got_dst, got_src = fields[:5]
    if ethertype != _SWAPPED_ETHERTYPE:
        ethertype = ((ethertype & 0xFF) << 8) | (ethertype >> 8)
        raise InconsistentFrame(f"EtherType 0x{ethertype:04X} is not POWERLINK 0x{ETHERTYPE:04X}")
    if got not in _MESSAGE_TYPES:
        raise InconsistentFrame(f"MessageType 0x{got:02X} is not a POWERLINK message type")
    if msg_type is None:
        return
    if got != msg_type:
        raise InconsistentFrame(f"expected a {msg_type.name} frame, got {MessageType(got).name}")
    if dst_mac is not None and mac != dst_mac:
        raise InconsistentFrame(f"{msg_type.name} destination MAC {mac.hex(':')} is not {dst_mac.hex(':')}")
    if dst is not None and got_dst != dst:
        raise InconsistentFrame(f"{msg_type.name} destination node id {got_dst} must be {dst}")
    if src is not None and got_src != src:
        raise InconsistentFrame(f"{msg_type.name} source node id {got_src} must be {src}")


# What _check_header accepts, as the leading header fields each reader compares in one go.
_SOC_KEY = (SOC_MAC, _SWAPPED_ETHERTYPE, int(MessageType.SOC), BROADCAST_NODE_ID, MN_NODE_ID)
_SOA_KEY = (SOA_MAC, _SWAPPED_ETHERTYPE, int(MessageType.SOA), BROADCAST_NODE_ID, MN_NODE_ID)
_PRES_KEY = (PRES_MAC, _SWAPPED_ETHERTYPE, int(MessageType.PRES), BROADCAST_NODE_ID)
_ASND_KEY = (ASND_MAC, _SWAPPED_ETHERTYPE, int(MessageType.ASND))
_PREQ_KEY = (_SWAPPED_ETHERTYPE, int(MessageType.PREQ))      # fields 1..2; source node is field 4


def _nmt_error(code: int, what: str) -> InconsistentFrame:
    return InconsistentFrame(f"{what} NMTStatus 0x{code:02X} is not an NMT state")


def pdo_room(data, fcs: bool) -> int:
    """The bytes a PReq/PRes ``data`` has room for after its header (padding included)."""
    return len(data) - PDO_OFFSET - FCS_SIZE * fcs


def asnd_room(data, fcs: bool) -> int:
    """The service payload bytes an ASnd ``data`` carries (padding included)."""
    return len(data) - ASND_OFFSET - FCS_SIZE * fcs


def _size_error(data, size: int, what: str, fcs: bool) -> TruncatedFrame:
    return TruncatedFrame(f"{what} declares {size} payload bytes but carries {pdo_room(data, fcs)}")


def read_soc(data, fcs: bool = True) -> tuple[int, int, int, int, int]:
    """Validate a SoC; return (flags1, flags2, NetTime s, NetTime ns, RelativeTime µs)."""
    fields = _unpack(data, _SOC_HEADER, fcs)
    if fields[:5] != _SOC_KEY:
        _check_header(fields, MessageType.SOC, SOC_MAC, BROADCAST_NODE_ID, MN_NODE_ID)
    if fields[8] >= 1_000_000_000:
        raise InconsistentFrame(f"SoC NetTime nanoseconds {fields[8]} exceed one second")
    return fields[5:]


def read_preq(data, fcs: bool = True) -> tuple[int, int, int, int]:
    """Validate a PReq; return (destination node, flags1, PDOVersion, payload size)."""
    fields = _unpack(data, _PREQ_HEADER, fcs)
    if fields[1:3] != _PREQ_KEY or fields[4] != MN_NODE_ID:
        _check_header(fields, MessageType.PREQ, None, None, MN_NODE_ID)
    mac, _, _, dst, _, flags1, pdo_version, size = fields
    if not 1 <= dst < MN_NODE_ID:
        raise InconsistentFrame(f"PReq destination node id {dst} is outside 1..239")
    if mac != _NODE_MACS[dst]:
        raise InconsistentFrame(f"PReq destination MAC {mac.hex(':')} is not node {dst}'s")
    if size > pdo_room(data, fcs):
        raise _size_error(data, size, "PReq", fcs)
    return dst, flags1, pdo_version, size


def read_pres(data, header: struct.Struct = _PRES_HEADER, fcs: bool = True) -> tuple:
    """Validate a PRes; return (source node, NMTStatus, flags1, flags2, PDOVersion, payload size).
    With a ``header`` from :func:`pres_header`, the payload's values follow, from one unpack."""
    fields = _unpack(data, header, fcs)
    if fields[:4] != _PRES_KEY:
        _check_header(fields, MessageType.PRES, PRES_MAC, BROADCAST_NODE_ID)
    fields = fields[4:]
    src, nmt, size = fields[0], fields[1], fields[5]
    if not 1 <= src <= MN_NODE_ID:
        raise InconsistentFrame(f"PRes source node id {src} is outside 1..240")
    if nmt not in NMT_STATE_CODES:
        raise _nmt_error(nmt, "PRes")
    if size > pdo_room(data, fcs):
        raise _size_error(data, size, "PRes", fcs)
    return fields


def pres_header(payload: struct.Struct) -> struct.Struct:
    """The PRes header struct extended by a PDO ``payload`` struct (at :data:`PDO_OFFSET`), for
    :func:`read_pres`; a frame too short for it is a :class:`TruncatedFrame`."""
    return struct.Struct(_PRES_HEADER.format + payload.format[1:])


def read_soa(data, fcs: bool = True) -> tuple[int, int, int, int, int]:
    """Validate a SoA; return (NMTStatus, flags1, RequestedServiceID, target node, EPLVersion)."""
    fields = _unpack(data, _SOA_HEADER, fcs)
    if fields[:5] != _SOA_KEY:
        _check_header(fields, MessageType.SOA, SOA_MAC, BROADCAST_NODE_ID, MN_NODE_ID)
    nmt, _, service, target, _ = fields = fields[5:]
    if nmt not in NMT_STATE_CODES:
        raise _nmt_error(nmt, "SoA")
    if service not in _SERVICES:
        raise InconsistentFrame(f"SoA RequestedServiceID 0x{service:02X} is not a POWERLINK service")
    if target != INVALID_NODE_ID:
        _check_node(target, "SoA target")
    return fields


def read_asnd(data, fcs: bool = True) -> tuple[int, int, int]:
    """Validate an ASnd; return (destination node, source node, ServiceID); payload at 18."""
    fields = _unpack(data, _ASND_HEADER, fcs)
    if fields[:3] != _ASND_KEY:
        _check_header(fields, MessageType.ASND, ASND_MAC)
    _, _, _, dst, src, service_id = fields
    _check_node(dst, "ASnd destination")
    _check_node(src, "ASnd source")
    if src == BROADCAST_NODE_ID:
        raise InconsistentFrame("ASnd source node id cannot be broadcast 255")
    if service_id not in _SERVICE_IDS:
        raise InconsistentFrame(f"ASnd ServiceID 0x{service_id:02X} is not a POWERLINK service")
    return dst, src, service_id

