"""A CiA 402 drive's PDO mapping from the bus YAML (``nodes[i].mapping``, drivers/pdo.py):
validated at load; the process image, the managing node and the simulated drive follow it; a
factory-fresh simulated drive gets it downloaded by SDO and applies it on NMTResetConfiguration;
the default mapping leaves every frame byte for byte as it was."""
from __future__ import annotations

import copy
import hashlib
import math
import shutil
import struct
import subprocess
from xml.etree import ElementTree

import numpy as np
import pytest

from drivers.backends.sim import open_in_process, open_sim
from drivers.config import BusConfigError, parse_bus_config
from drivers import pdo
from drivers.powerlink import configuration, frames
from drivers.pdo import RPDO, TPDO
from drivers.sim import drive
from drivers.sim.object_dictionary import mapped_objects
from tests.drivers.conftest import _BENCH
from tests.drivers.helpers import boot_and_move, decode_tpdo

TSHARK = shutil.which("tshark")
OPTIONS = ("-o", "eth.check_fcs:TRUE", "--disable-protocol", "opensafety")     # as test_tshark_conformance
ERROR_SEVERITY = 0x00800000
# Reordered, no aux inputs, the actual torque 0x6077 added; the RPDO reordered, objects by name and by index.
MAPPING = {"tpdo": ["position_actual", "0x6077/0 i16", "statusword", "velocity_actual", "0x6061", "current_actual",
                    "error_code"],
           "rpdo": ["target_position", "controlword", "torque_offset", "0x6060/0 i8", "target_velocity"]}
# The lean mapping: only what the control needs (velocity, current and error code read NaN, NaN, 0).
LEAN = {"tpdo": ["statusword", "modes_of_operation_display", "position_actual"],
        "rpdo": ["controlword", "modes_of_operation", "target_position"]}
# sha256 of every frame of run(bench, open_sim, commissioned=False), recorded on main (546599d) before
# the mapping was per node: the default mapping must keep each of them, the download's SDO included.
MAIN_FRAMES = (3429, "44a2eb9bd73a5817bf9511f530739d259b3f582ea85921fa8995dcb472915135")


def _mapped(section: dict, mapping: dict) -> dict:
    section = copy.deepcopy(section)
    for node in section["nodes"]:
        node["mapping"] = copy.deepcopy(mapping)
    return section


def drive_60(bus, feedforward: bool = True) -> None:
    """Boot, enable, 60 control periods of moving setpoints (a velocity and torque feedforward unless
    not ``feedforward``), read."""
    def setpoints(bus, k: int) -> None:
        bus.target_position[:] = bus.position + 0.01 * math.sin(0.1 * k)
        bus.target_velocity[:] = 0.01 * k * feedforward
        bus.torque_offset[:] = 0.002 * k * feedforward
    boot_and_move(bus, 60, setpoints)


def run(section: dict, opener=open_sim, feedforward: bool = True, **options):
    """:func:`drive_60` on a new bus; the HAL's inputs, the bus (closed)."""
    bus = opener(parse_bus_config(section), **options)
    drive_60(bus, feedforward)
    seen = {name: getattr(bus, name).copy() for name in ("position", "velocity", "current", "aux", "statusword",
                                                          "state", "fault_code", "mode_display")}
    bus.close()
    return seen, bus


@pytest.fixture(scope="module")
def default_run():
    return run(copy.deepcopy(_BENCH))[0]


# -- the YAML -----------------------------------------------------------------------------------
@pytest.mark.parametrize("mapping, message", [
    ({"tpdo": ["statusword", "0x6061", "position_actual", "0x6099"]},
     r"nodes\[0\].mapping.tpdo \(node 1\): 0x6099/0 is not a mappable CiA 402 object"),
    ({"tpdo": ["statusword", "0x6061", "0x6064/0 i16"]}, r"0x6064/0 \(position_actual\) is i32 in CiA 402, not 'i16'"),
    ({"tpdo": ["statusword", "0x6061", "velocity_actual"]}, r"needs 0x6064/0 \(position_actual\) in the tpdo"),
    ({"rpdo": ["controlword", "target_position"]}, r"needs 0x6060/0 \(modes_of_operation\) in the rpdo"),
    ({"tpdo": ["statusword", "0x6061", "position_actual", "0x6041"]}, r"0x6041/0 \(statusword\) is mapped twice"),
    ({"tpdo": ["statusword", "0x6061", "position_actual", "target_velocity"]},
     r"0x60FF/0 \(target_velocity\) belongs in the rpdo, not the tpdo"),
    ({"tpdo": ["statusword", "0x6061", "position_actual", "velocity"]}, r"'velocity' is neither a CiA 402 object name"),
    ({"pres_payload_limit": 36}, r"the tpdo carries 54 bytes for two channels, over the node's PRes payload limit of 36"),
    ({"rpdo": []}, r"rpdo must be a non-empty list"),
    ({"txpdo": []}, r"nodes\[0\].mapping.txpdo is not a known key"),
])
def test_a_bad_mapping_is_one_sentence_naming_node_and_object(mapping, message):
    section = _mapped(_BENCH, mapping)
    with pytest.raises(BusConfigError, match=message):
        parse_bus_config(section)


def test_no_mapping_is_the_default_and_a_node_may_have_its_own():
    config = parse_bus_config(copy.deepcopy(_BENCH))
    assert all(n.rpdo is RPDO and n.tpdo is TPDO for n in config.nodes)
    section = copy.deepcopy(_BENCH)
    section["nodes"][1]["mapping"] = copy.deepcopy(LEAN)
    section["nodes"][2]["mapping"] = {"pres_payload_limit": 54, "preq_payload_limit": 26}    # the default fits
    nodes = parse_bus_config(section).nodes
    assert [n.tpdo.size for n in nodes] == [54, 2 * (2 + 1 + 4), 54] and [n.rpdo.size for n in nodes] == [26, 14, 26]
    assert nodes[2].tpdo == TPDO and nodes[2].rpdo == RPDO


# -- the kernels ---------------------------------------------------------------------------------
def test_the_field_tables_read_and_write_where_the_mapping_puts_each_object():
    """A payload packed by the reordered mapping's ``struct`` (both channels) reads back through its
    field tables as what was packed (unmapped: aux NaN); the drive kernel writes what ``struct`` unpacks."""
    config = parse_bus_config(_mapped(_BENCH, MAPPING))
    tpdo = config.nodes[0].tpdo
    assert [(m.index, m.offset) for m in tpdo.mapped()[:3]] == [(0x6064, 0), (0x6077, 4), (0x6041, 6)]
    tables = np.stack([tpdo.table(ch) for ch in (0, 1)])
    scales = np.array([[1000.0, 100.0, 2000.0, 200.0]] * 2)
    values = [(123456 + ch, -321 - ch, 0x1237, -654321, 8, -1234 + ch, 0x4310 + ch) for ch in (0, 1)]
    payload = np.zeros(tpdo.size, np.uint8)
    tpdo.struct.pack_into(payload, 0, *sum(values, ()))
    got = decode_tpdo(payload, tables, scales)
    for ch, v in enumerate(values):
        assert (got["position"][ch] * 1000.0, got["statusword"][ch], got["velocity"][ch] * 100.0,
                got["mode_display"][ch], got["current"][ch] * 200.0, got["fault_code"][ch]) == pytest.approx(
            (v[0], v[2], v[3], v[4], v[5], v[6]), rel=1e-12)
    assert np.isnan(got["aux"]).all()
    n = 2
    pres = np.zeros((1, frames.MAX_FRAME), np.uint8)
    x = np.zeros((n, drive.N_COLUMNS))
    flags = np.zeros((n, drive.N_FLAGS), np.int64)
    for a, v in enumerate(values):
        flags[a, drive.SW_BASE], flags[a, drive.MODE_DISPLAY], flags[a, drive.ERROR_CODE] = v[2], v[4], v[6]
        x[a, drive.SCALE:drive.SCALE + 4] = scales[a]
        x[a, drive.KT] = 0.5
        x[a, drive.ACT_POS], x[a, drive.ACT_VEL], x[a, drive.ACT_CUR] = v[0] / 1000.0, v[3] / 100.0, v[5] / 200.0
        drive._write_tpdo(pres, x, flags, tables, a)
    written = tpdo.struct.unpack_from(pres[0], frames.PDO_OFFSET)
    assert written == tuple(w for v in values for w in (v[0], round(v[5] / 200.0 * 0.5 * 2000.0), *v[2:]))


# -- end to end -----------------------------------------------------------------------------------
def _tshark(path) -> list[list[tuple[str, str, str]]]:
    """Per frame, tshark's fields in order: (name, show, value)."""
    out = subprocess.run([TSHARK, *OPTIONS, "-r", str(path), "-T", "pdml"], capture_output=True, text=True,
                         check=True, timeout=300).stdout
    return [[(f.get("name"), f.get("show"), f.get("value")) for f in packet.iter("field")]
            for packet in ElementTree.fromstring(out).iter("packet")]


def _pdo_objects(fields: list[tuple[str, str, str]]) -> dict[int, bytes]:
    """The PDO objects the dissector decoded in one frame (by the mapping it saw written by SDO): index -> bytes."""
    objects, index = {}, None
    for name, show, value in fields:
        if name == "epl.pdo.index":
            index = int(show, 16)
        elif name.startswith("epl.od.data") and index is not None:
            objects[index], index = bytes.fromhex(value), None
    return objects


def test_a_factory_fresh_drive_gets_the_yaml_mapping_and_cycles_with_it(default_run, tmp_path):
    """Drives leaving the factory with the default mapping: the MN downloads the YAML's (0x1A00 and
    0x1600 by SDO), NMTResetConfiguration makes them apply it, and the bus reads the same SI
    values as with the default mapping (the same integers travel: nothing moves), aux NaN. Wireshark
    learns the mapping from the SDO download and decodes every PRes by it: no malformed frame, no
    error, and each decoded object is the integer the HAL read (0x6077: the current it read times
    the torque constant, in per mille of the rated torque: exact with the bench's 0.1 N·m/A, 0.5 N·m, 5 A)."""
    section = _mapped(_BENCH, MAPPING)
    bus = open_sim(parse_bus_config(section), commissioned=False)
    bus.capture(str(tmp_path / "fresh.pcapng"))
    drive_60(bus)
    node = bus.network.nodes[2]
    mapped, size = mapped_objects(node.drive.objects, configuration.TPDO_MAPPING)
    assert mapped == bus.config.nodes[1].tpdo.mapped() and size == 2 * (4 + 2 + 2 + 4 + 1 + 2 + 2) == node.drive.tpdo_size
    for name in ("position", "velocity", "current", "statusword", "state", "fault_code", "mode_display"):
        assert np.array_equal(getattr(bus, name), default_run[name]), name
    assert np.isnan(bus.aux).all()
    position, current, statusword = bus.position.copy(), bus.current.copy(), bus.statusword.copy()
    scales = bus.scales.copy()
    bus.close()
    if TSHARK is None:
        pytest.skip("tshark is not installed (Debian package tshark; .ci/run installs it)")
    packets = _tshark(tmp_path / "fresh.pcapng")
    assert len(packets) > 1000
    assert not [p for p in packets if any(name == "_ws.malformed" or name.startswith("_ws.expert") for name, _, _ in p)]
    pres = [p for p in packets if {n: s for n, s, _ in reversed(p)}.get("epl.mtyp") == "4"
            and {n: s for n, s, _ in reversed(p)}.get("epl.src") == "2"]
    decoded = _pdo_objects(pres[-1])
    assert sum(len(v) for v in decoded.values()) == size
    for ch, a in ((0, bus.config.axis("knee").index), (1, bus.config.axis("hip").index)):
        off = ch * pdo.AXIS_OFFSET
        got = {i - off: int.from_bytes(v, "little", signed=i - off != 0x6041) for i, v in decoded.items()
               if i - off in (0x6041, 0x6064, 0x6077, 0x6078)}
        kt = bus.config.axes[a].drive.torque_constant
        assert got == {0x6041: statusword[a], 0x6064: round(position[a] * scales[a, 0]),
                       0x6077: round(current[a] * kt * scales[a, 2]), 0x6078: round(current[a] * scales[a, 3])}


def test_a_commissioned_drive_holds_the_lean_mapping_over_the_fast_path():
    """Commissioned drives (the YAML's mapping in non-volatile memory) over the udp link's Numba paths
    on both ends, position setpoints only: the lean mapping carries position and statusword as the
    default does; velocity and current read NaN, the error code 0."""
    default, _ = run(copy.deepcopy(_BENCH), open_in_process, feedforward=False)
    seen, bus = run(_mapped(_BENCH, LEAN), open_in_process, feedforward=False)
    assert bus.config.nodes[0].tpdo.size == 14
    assert np.array_equal(seen["position"], default["position"]) and not np.array_equal(seen["position"], 0 * default["position"])
    assert np.array_equal(seen["state"], default["state"])
    assert np.isnan(seen["velocity"]).all() and np.isnan(seen["current"]).all() and not seen["fault_code"].any()


def test_the_default_mapping_leaves_every_frame_as_it_was():
    """Every frame of a factory-fresh boot (identification, the SDO download, NMTResetConfiguration),
    enable and 60 periods with the default YAML, byte for byte as main sent them before the mapping
    was per node (their count and sha256, recorded there)."""
    bus = open_sim(parse_bus_config(copy.deepcopy(_BENCH)), record_frames=True, commissioned=False)
    drive_60(bus)
    wire = bus.link.frames
    bus.close()
    assert (len(wire), wire_digest(wire)) == MAIN_FRAMES


def wire_digest(wire: list[bytes]) -> str:
    """sha256 of the frames, each after its length."""
    return hashlib.sha256(b"".join(struct.pack("<H", len(f)) + f for f in wire)).hexdigest()
