"""The bus YAML's io nodes and raw backend keys: every mistake is one sentence naming its key."""
from __future__ import annotations

import pytest

from drivers.config import BusConfigError, parse_bus_config
from drivers.powerlink.configuration import download, mapping_entry
from drivers.service_channel import UNSIGNED8, UNSIGNED32, UNSIGNED64


def _bus(**node) -> dict:
    return {"backend": "raw", "interface": "veth0", "nodes": [{"node_id": 3, "profile": "io", **node}]}


def test_an_io_node_maps_its_objects_in_order():
    node = parse_bus_config(_bus(inputs=["0x6000/1 u8", "0x6401/2 i16"], outputs=["0x6200/1 u8"],
                                 identity={"device_type": 0x000F0191, "revision": 7})).nodes[0]
    assert node.input_size == 3 and node.output_size == 1
    assert (node.expected.device_type, node.expected.revision, node.expected.vendor_id) == (0x000F0191, 7, None)
    writes = download(node, parse_bus_config(_bus()))
    # DS 301 §6.4.9: index | subindex << 16 | bit offset << 32 | bit length << 48; the i16 starts at bit 8
    assert (0x1A00, 2, UNSIGNED64, 0x6401 | 2 << 16 | 8 << 32 | 16 << 48) in writes
    assert [w[:2] for w in writes[:2]] == [(0x1A00, 0), (0x1800, 2)]     # emptied, then its version
    assert writes[-5] == (0x1600, 0, UNSIGNED8, 1)                         # the count last
    # then the cycle length [µs], the CN's loss of SoC and PReq thresholds, its SoC tolerance [ns] (one cycle)
    assert writes[-4:] == [(0x1006, 0, UNSIGNED32, 400), (0x1C0B, 3, UNSIGNED32, 15), (0x1C0D, 3, UNSIGNED32, 15),
                           (0x1C14, 0, UNSIGNED32, 400_000)]
    assert mapping_entry(node.inputs[0], 0) == 0x0008_0000_0001_6000


@pytest.mark.parametrize("section, message", [
    (_bus(axes=[{"name": "a", "channel": 0}]), r"bus.nodes\[0\].axes: an io node has no axes"),
    (_bus(inputs=["0x6000 u8"]), r"bus.nodes\[0\].inputs\[0\] must read \"0xINDEX/SUB TYPE\""),
    (_bus(inputs=["0x6000/1 u7"]), r"bus.nodes\[0\].inputs\[0\] '0x6000/1 u7': index 1..0xFFFF, subindex 0..255"),
    (_bus(profile="cia401"), r"bus.nodes\[0\].profile must be one of cia402, io"),
    (_bus(objects=[{"index": 0x6072, "type": "u16", "value": 70000}]),
     r"bus.nodes\[0\].objects\[0\] \(node 3, 0x6072/0\): a u16 value must be an integer in 0..65535, got 70000"),
    (_bus(objects=[{"index": 0x6072, "type": "u17", "value": 7}]),
     r"bus.nodes\[0\].objects\[0\] \(node 3, 0x6072/0\): type must be one of i8, "),
    (_bus(objects=[{"index": 0x6072, "type": "u16"}]), r"bus.nodes\[0\].objects\[0\] lacks value"),
    (_bus(objects=[{"index": 0x1020, "subindex": 1, "type": "u32", "value": 7}]),
     r"\(node 3, 0x1020/1\) is verify configuration, which the configuration writes itself"),
    (_bus(objects=[{"index": 0x6072, "type": "u16", "value": 7}, {"index": 0x6072, "type": "u16", "value": 8}]),
     r"objects\[1\] \(node 3, 0x6072/0\) is written twice"),
    ({"backend": "raw", "interface": "veth0", "soc_tolerance_s": 5, "nodes": [{"node_id": 3, "profile": "io"}]},
     r"bus.soc_tolerance_s must be below 4.295 s"),
    (_bus(identity={"revision": -1}), r"bus.nodes\[0\].identity.revision"),
    ({"backend": "sim", "nodes": [{"node_id": 3, "profile": "io"}]}, r"profile io needs bus.backend raw"),
    ({"backend": "raw", "nodes": [{"node_id": 3, "profile": "io"}]}, r"bus.interface must name the Ethernet"),
    ({"backend": "raw", "interface": "veth0", "nodes": [{"node_id": 3, "axes": [{"name": "a", "channel": 0}],
                                                          "inputs": ["0x6000/1 u8"]}]},
     r"inputs and outputs are an io node's"),
])
def test_mistakes_are_named(section, message):
    with pytest.raises(BusConfigError, match=message):
        parse_bus_config(section)
