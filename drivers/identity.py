"""The identity a controlled node reports in its IdentResponse (EPSG DS 301 §7.3.3.2.1): device
type 0x1000, identity object 0x1018, configuration and application dates, IP settings, host name.
The bus YAML gives it per simulated node (``nodes[i].identity``); the frame layout is
:mod:`drivers.powerlink.ident`'s."""
from __future__ import annotations

from dataclasses import dataclass

DEVICE_TYPE_SERVO_402 = 0x00020192       # 0x1000 of a CiA 402 drive (profile 402, servo)
VENDOR_ID = 0x0000_0000
PRODUCT_CODE = 0x0000_8056
FEATURE_ISOCHRONOUS = 0x0001         # FeatureFlags bit 0: the node takes part in the isochronous phase
FEATURE_SDO_ASND = 0x0004            # bit 2: SDO over ASnd
HOST_NAME_SIZE = 32


@dataclass(frozen=True)
class Identity:
    """What a simulated CN reports about itself (bus YAML ``nodes[i].identity``; the defaults are
    those of docs/powerlink.md, "Frames"). Addresses are dotted IPv4 strings."""

    device_type: int = DEVICE_TYPE_SERVO_402
    vendor_id: int = VENDOR_ID
    product_code: int = PRODUCT_CODE
    revision: int = 0x0001_0000
    serial: int = 0
    configuration_date: int = 0
    configuration_time: int = 0
    application_date: int = 0
    application_time: int = 0
    ip_address: str = ""
    subnet_mask: str = "255.255.255.0"
    default_gateway: str = "192.168.100.254"
    host_name: str = ""
    response_time_ns: int = 25_000
    feature_flags: int = FEATURE_ISOCHRONOUS | FEATURE_SDO_ASND

    @classmethod
    def default(cls, node_id: int) -> Identity:
        """The identity of a node the YAML says nothing about: serial = node id, IP 192.168.100.<node id>
        (POWERLINK's class C network), host name ``cn<node id>``."""
        return cls(serial=node_id, ip_address=f"192.168.100.{node_id}", host_name=f"cn{node_id}")
