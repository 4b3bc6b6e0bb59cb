"""The configuration download at boot (drivers.powerlink.configuration) against the simulated CNs:
what each node's SDO server applied, in order (its own log, not the MN's), the verify
configuration 0x1020 rule (written last, a match skips the download), and a refusal named."""
from __future__ import annotations

import pytest

from drivers.config import parse_bus_config
from drivers.events import EventKind
from drivers.hal import open_bus
from drivers.powerlink import configuration, pdo
from drivers.powerlink.bus import PowerlinkBus
from drivers.powerlink.managing_node import BootTimeoutError
from drivers.powerlink.nmt import NmtState
from drivers.sim.object_dictionary import mapping_entry
from drivers.service_channel import UNSIGNED32

FOLLOWING_ERROR_WINDOW = {"index": 0x6065, "subindex": 0, "type": "u32", "value": 4000}


def _log(network) -> dict[int, list[tuple[int, int, bytes]]]:
    """Per node, every write its object dictionary is asked for (index, subindex, bytes), in order."""
    log = {}
    for node_id, node in network.nodes.items():
        objects, log[node_id] = node.drive.objects, []

        def write(index, subindex, data, _write=objects.write, _log=log[node_id]):
            _log.append((index, subindex, bytes(data)))
            return _write(index, subindex, data)
        objects.write = write
    return log


def _boot_again(bus, section: dict) -> PowerlinkBus:
    """A new managing node session (``section``'s configuration) on ``bus``'s simulated nodes, after
    the old one ended (its link reset every node)."""
    bus.close()
    network = bus.network
    again = PowerlinkBus(parse_bus_config(section), network, network.faults)
    again.boot()
    return again


def _configuration_events(bus) -> dict[int, str]:
    return {e.node_id: e.text for e in bus.events if e.kind == EventKind.CONFIGURATION}


def test_a_boot_downloads_once_0x1020_last_and_the_next_boot_skips(bench):
    bus = open_bus(bench, commissioned=False)
    log = _log(bus.network)
    bus.boot()
    config = bus.config
    for node in config.nodes:
        writes = configuration.download(node, config)
        stamp = configuration.stamp(writes)
        applied = log[node.node_id]
        # everything the MN meant, in its order, then 0x1020/1 and /2 and nothing after them
        assert [(i, s) for i, s, _ in applied] == [(w.index, w.subindex) for w in writes] + [(0x1020, 1), (0x1020, 2)]
        identity = bus.network.nodes[node.node_id].identity
        assert (identity.configuration_date, identity.configuration_time) == stamp != (0, 0)
        assert "objects written, 0x1020 last" in _configuration_events(bus)[node.node_id]
    # a drive's two mappings were written entry by entry, as the simulated drive's own encoder
    # (drivers.sim.object_dictionary.mapping_entry) lays out the payload it exchanges
    for mapping, index in ((pdo.TPDO, 0x1A00), (pdo.RPDO, 0x1600)):
        written = [int.from_bytes(d, "little") for i, s, d in log[2] if i == index and s >= 1]
        bits, expected = 0, []
        for _, obj, subindex, name in mapping.objects():
            expected.append(mapping_entry(obj, subindex, bits, 8 * mapping.entry(name).size))
            bits += 8 * mapping.entry(name).size
        assert written == expected and bits == 8 * mapping.size
        assert log[2].index((index, 0, bytes(1))) < log[2].index((index, 0, bytes([len(expected)])))  # 0 first
    objects = bus.network.nodes[2].drive.objects
    assert objects.value(0x1006, 0) == 400 and objects.value(0x1C0B, 3) == 15
    for log_ in log.values():
        log_.clear()
    again = _boot_again(bus, bench)
    try:
        assert all(not applied for applied in log.values())
        assert all(rec.nmt == NmtState.OPERATIONAL for rec in again.mn.records.values())
        assert set(_configuration_events(again)) == {1, 2, 3}
        assert all(text.endswith("download skipped") for text in _configuration_events(again).values())
    finally:
        again.close()


def test_a_changed_object_downloads_that_node_again(bench):
    """Commissioned simulated nodes (holding the bench's configuration) skip; an object added to node
    2's YAML changes its stamp, and node 2 alone is downloaded again, the object then 0x1020."""
    bus = open_bus(bench)
    bus.boot()
    assert all(text.endswith("download skipped") for text in _configuration_events(bus).values())
    log = _log(bus.network)
    bench["nodes"][1]["objects"] = [FOLLOWING_ERROR_WINDOW]
    again = _boot_again(bus, bench)
    try:
        assert not log[1] and not log[3]
        assert log[2][-3:] == [(0x6065, 0, (4000).to_bytes(4, "little")),
                               (0x1020, 1, again.mn.records[2].stamp[0].to_bytes(4, "little")),
                               (0x1020, 2, again.mn.records[2].stamp[1].to_bytes(4, "little"))]
        assert again.mn.records[2].stamp != bus.mn.records[2].stamp
        # the drive applied it: its following error limit (kept in rad) reads back as 4000 increments
        knee = bus.network.nodes[2].drive.objects
        assert knee.value(0x6065, 0) == 4000
        assert again.complete(again.sdo_read(2, 0x6065, 0, UNSIGNED32)) == 4000
    finally:
        again.close()


def test_a_refused_write_is_a_boot_error_naming_node_and_object_and_0x1020_stays(bench):
    """The statusword 0x6041 is read-only: the node answers the write with abort 0x06010002, the boot
    fails naming node and object, nothing is written after it (neither the next object nor 0x1020,
    which stays 0), the node never starts."""
    bench["boot_timeout_s"] = 0.1
    bench["nodes"][2]["objects"] = [{"index": 0x6041, "subindex": 0, "type": "u16", "value": 6}, FOLLOWING_ERROR_WINDOW]
    bus = open_bus(bench)                         # commissioning met the refusal too: 0x1020 stays 0
    log = _log(bus.network)
    try:
        with pytest.raises(BootTimeoutError, match=r"node 3: 0x6041/0: 0x06010002 attempt to write a read-only object"):
            bus.boot()
        assert log[3][-1][:2] == (0x6041, 0)                   # the last write: not 0x6065, not 0x1020
        identity = bus.network.nodes[3].identity
        assert (identity.configuration_date, identity.configuration_time) == (0, 0)
        assert bus.network.nodes[3].nmt == NmtState.PRE_OPERATIONAL_1
    finally:
        bus.close()


def test_the_stamp_follows_every_written_value():
    config = parse_bus_config({"backend": "sim", "nodes": [{"node_id": 1, "axes": [{"name": "a", "channel": 0}],
                                                              "objects": [FOLLOWING_ERROR_WINDOW]}]})
    writes = configuration.download(config.nodes[0], config)
    date, time = configuration.stamp(writes)
    assert 1 <= date <= 65_535 and 0 <= time < 86_400_000
    assert configuration.stamp(list(writes)) == (date, time)                # deterministic
    for k, w in enumerate(writes):                                         # any value, any object moved
        changed = writes[:k] + [w._replace(value=w.value + 1)] + writes[k + 1:]
        assert configuration.stamp(changed) != (date, time), w
    assert configuration.stamp(writes[1:] + writes[:1]) != (date, time)     # the order counts too
