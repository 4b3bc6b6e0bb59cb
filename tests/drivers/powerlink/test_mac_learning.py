"""The managing node sends each CN's PReq to the MAC address its IdentResponse came from, not to
one derived from the node id (a real drive has its vendor's MAC)."""
from __future__ import annotations

import copy
import struct
import zlib

from drivers.config import parse_bus_config
from drivers.powerlink import frames
from drivers.powerlink.bus import PowerlinkBus
from drivers.sim.nodes import ImmediateLink, SimulatedNodes
from tests.drivers.conftest import _BENCH


def vendor_mac(node_id: int) -> bytes:
    return bytes.fromhex("0060650000") + bytes((node_id,))        # B&R's OUI, for instance


def _resealed(frame: bytes, at: int, value: bytes) -> bytes:
    body = frame[:at] + value + frame[at + len(value):-frames.FCS_SIZE]
    return body + struct.pack("<I", zlib.crc32(body))


class VendorMacs(ImmediateLink):
    """The simulated CNs behind other MAC addresses: their frames leave from :func:`vendor_mac`, and
    a PReq reaches a node only when it is addressed to that MAC."""

    def __init__(self, network: SimulatedNodes) -> None:
        super().__init__()
        self.network = network
        self.reply_delay_s = 0.0
        self.preq_macs: set[bytes] = set()

    def transfer(self, frame):
        frame = bytes(frame)
        if frame[frames.MESSAGE_TYPE_AT] == frames.MessageType.PREQ:
            dst = frame[frames.DST_NODE_AT]
            self.preq_macs.add(frame[:6])
            if frame[:6] != vendor_mac(dst):
                return None                                   # nobody has that address
            frame = _resealed(frame, frames.DST_MAC_AT, frames.node_mac(dst))
        reply = self.network.transfer(frame)
        if reply is None:
            return None
        return _resealed(bytes(reply), frames.SRC_MAC_AT, vendor_mac(reply[frames.SRC_NODE_AT]))

    def close(self) -> None:
        self.network.reset()


def test_preq_goes_to_the_mac_of_the_ident_response():
    config = parse_bus_config(copy.deepcopy(_BENCH))
    network = SimulatedNodes(config)
    link = VendorMacs(network)
    bus = PowerlinkBus(config, link, network.faults)
    bus.boot()                                                # every node answers its PReq: Operational
    assert link.preq_macs == {vendor_mac(n.node_id) for n in config.nodes}
    assert {n: r.ident.mac for n, r in bus.mn.records.items()} == {
        n.node_id: vendor_mac(n.node_id).hex(":") for n in config.nodes}
    bus.close()
