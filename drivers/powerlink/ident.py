"""IdentResponse (EPSG DS 301 §7.3.3.2.1) and the identity a controlled node reports in it.

A CN answers an IdentRequest (SoA service 1) with an ASnd (ServiceID 1) to broadcast node 255
from its own MAC address, so every node and the MN learn who it is and where it lives. Its 158
payload bytes (from frame byte 18, little-endian) are declared once in :data:`IDENT_FIELDS`; the
struct, the named record :class:`IdentResponse` and the checks derive from it::

    off size field                        off size field
      0   1 reserved                       50   4 VerifyConfigurationDate (0x1020/1, days since 1984)
      1   1 flags2: PR << 3 | RS           54   4 VerifyConfigurationTime (0x1020/2, ms after midnight)
      2   1 NMTStatus                      58   4 ApplicationSwDate (0x1F52/1)
      3   1 IdentResponse flags            62   4 ApplicationSwTime (0x1F52/2)
      4   1 EPL profile version            66   4 IPAddress       \\
      5   1 reserved                       70   4 SubnetMask       } u32 as the address reads
      6   4 FeatureFlags (0x1F82)          74   4 DefaultGateway  /  (192.168.100.1 = 0xC0A86401)
     10   2 MTU                            78  32 HostName (0x1F9A, NUL-padded)
     12   2 PollInSize (PReq payload)     110  48 VendorSpecificExt2
     14   2 PollOutSize (PRes payload)
     16   4 ResponseTime [ns]
     20   2 reserved
     22  20 DeviceType (0x1000), VendorId, ProductCode, RevisionNumber, SerialNumber (0x1018/1..4)
     42   8 VendorSpecificExt1
"""
from __future__ import annotations

import ipaddress
import struct
from collections import namedtuple

from drivers.identity import Identity
from drivers.powerlink import frames
from drivers.powerlink.frames import InconsistentFrame, TruncatedFrame
from drivers.powerlink.nmt import NMT_STATE_CODES

# (name, struct code): the IdentResponse payload in wire order; None names a reserved field.
IDENT_FIELDS = (
    (None, "x"), ("flags2", "B"), ("nmt_status", "B"), ("ident_flags", "B"), ("epl_version", "B"), (None, "x"),
    ("feature_flags", "I"), ("mtu", "H"), ("poll_in_size", "H"), ("poll_out_size", "H"),
    ("response_time_ns", "I"), (None, "2x"),
    ("device_type", "I"), ("vendor_id", "I"), ("product_code", "I"), ("revision", "I"), ("serial", "I"),
    ("vendor_ext1", "Q"), ("configuration_date", "I"), ("configuration_time", "I"),
    ("application_date", "I"), ("application_time", "I"),
    ("ip_address", "I"), ("subnet_mask", "I"), ("default_gateway", "I"), ("host_name", "32s"),
    ("vendor_ext2", "48s"),
)
IDENT = struct.Struct("<" + "".join(code for _, code in IDENT_FIELDS))
IdentResponse = namedtuple("IdentResponse", [name for name, _ in IDENT_FIELDS if name] + ["mac"])
IdentResponse.__doc__ = ("An IdentResponse as the MN decodes it: the payload's fields by name (IP fields as "
                         "dotted strings, the host name as text) and the sender's MAC address.")
_ADDRESSES = ("ip_address", "subnet_mask", "default_gateway")
_AT = {name: IDENT.size - struct.calcsize("<" + "".join(c for _, c in IDENT_FIELDS[k:]))
       for k, (name, _) in enumerate(IDENT_FIELDS) if name}

MTU = 1500


def _address(text: str) -> int:
    return int(ipaddress.IPv4Address(text))


def write_ident(buf: bytearray, identity: Identity, flags2: int, nmt_status: int, poll_in: int,
                poll_out: int) -> None:
    """The IdentResponse payload of ``identity`` into an ASnd from :func:`ident_frame`."""
    IDENT.pack_into(buf, frames.ASND_OFFSET, flags2, nmt_status, 0, frames.EPL_VERSION, identity.feature_flags,
                    MTU, poll_in, poll_out, identity.response_time_ns, identity.device_type, identity.vendor_id,
                    identity.product_code, identity.revision, identity.serial, 0, identity.configuration_date,
                    identity.configuration_time, identity.application_date, identity.application_time,
                    _address(identity.ip_address), _address(identity.subnet_mask),
                    _address(identity.default_gateway), identity.host_name.encode("ascii"), b"")


def ident_frame(node_id: int) -> frames.TxFrame:
    """The ASnd a CN answers an IdentRequest with: to broadcast node 255, from ``node_id``."""
    return frames.asnd_frame(frames.BROADCAST_NODE_ID, node_id, frames.ServiceId.IDENT_RESPONSE, IDENT.size)


def read_ident(data, fcs: bool = True) -> IdentResponse:
    """The :class:`IdentResponse` of an ASnd that :func:`~drivers.powerlink.frames.read_asnd` validated."""
    room = frames.asnd_room(data, fcs)
    if room < IDENT.size:
        raise TruncatedFrame(f"IdentResponse needs {IDENT.size} payload bytes, the ASnd carries {room}")
    values = dict(zip(IdentResponse._fields, IDENT.unpack_from(data, frames.ASND_OFFSET)))
    if values["nmt_status"] not in NMT_STATE_CODES:
        raise InconsistentFrame(f"IdentResponse NMTStatus 0x{values['nmt_status']:02X} is not an NMT state")
    for name in _ADDRESSES:
        values[name] = str(ipaddress.IPv4Address(values[name]))
    try:
        values["host_name"] = values["host_name"].rstrip(b"\0").decode("ascii")
    except UnicodeDecodeError:
        raise InconsistentFrame("IdentResponse HostName is not ASCII text") from None
    values["mac"] = bytes(data[frames.SRC_MAC_AT:frames.ETHERTYPE_AT]).hex(":")
    return IdentResponse(**values)


def field_offset(name: str) -> int:
    """Frame byte offset of IdentResponse field ``name`` (the Numba-free readers and tests use it)."""
    return frames.ASND_OFFSET + _AT[name]
