"""``bipd bus`` against openPOWERLINK's controlled node on a veth (the identity it reports is its
object dictionary's, apps/common/objdicts/CiA401_CN), and its usage errors."""
from __future__ import annotations

import json

import pytest
import yaml

from controller.cli import main
from controller.tools.oplk import CN_DEVICE_TYPE, CN_REVISION


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["bus", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_scan_lists_the_cn_with_its_identity_and_mac(oplk_cn, capsys):
    code, out, _ = _run(capsys, "scan", "--interface", oplk_cn.interface, "--nodes", "1-5", "--json")
    assert code == 0
    nodes = json.loads(out)["nodes"]
    assert [n["node"] for n in nodes] == [1]
    assert nodes[0]["device_type"] == CN_DEVICE_TYPE and nodes[0]["revision"] == CN_REVISION
    assert nodes[0]["mac"] == oplk_cn.mac.hex(":")
    assert nodes[0]["nmt_state"] in ("PRE_OPERATIONAL_1", "PRE_OPERATIONAL_2")


def test_sdo_reads_writes_and_names_an_abort(oplk_cn, capsys):
    code, out, _ = _run(capsys, "sdo", "read", "--interface", oplk_cn.interface, "1", "0x1018", "3", "--json")
    assert code == 0 and json.loads(out)["value"] == CN_REVISION
    code, out, _ = _run(capsys, "sdo", "read", "--interface", oplk_cn.interface, "1", "0x1008", "0", "--type", "string")
    assert code == 0 and "openPOWERLINK" in out                   # its 0x1008 device name
    for value in ("0x5A", "7"):
        assert _run(capsys, "sdo", "write", "--interface", oplk_cn.interface, "1", "0x6200", "1", value,
                    "--type", "u8")[0] == 0
        code, out, _ = _run(capsys, "sdo", "read", "--interface", oplk_cn.interface, "1", "0x6200", "1",
                            "--type", "u8", "--json")
        assert json.loads(out)["value"] == int(value, 0)
    code, _, err = _run(capsys, "sdo", "read", "--interface", oplk_cn.interface, "1", "0x6999", "0")
    assert code == 1
    assert err.strip().splitlines()[-1] == ("bipd bus sdo: node 1: SDO read 0x6999/0 aborted: 0x06020000 object "
                                            "does not exist in the object dictionary")


def test_cycle_boots_the_declared_node_and_reports_it(oplk_cn, capsys, tmp_path, realtime):
    config = tmp_path / "bus.yaml"
    config.write_text(yaml.safe_dump({"bus": {
        "backend": "raw", "cycle_time_s": 0.002, "control_period_s": 0.002, "pres_timeout_s": 0.0015,
        "boot_timeout_s": 8.0, "nodes": [{"node_id": 1, "profile": "io",
                                          "identity": {"device_type": CN_DEVICE_TYPE, "revision": CN_REVISION},
                                          "inputs": [f"0x6000/{k} u8" for k in range(1, 5)],
                                          "outputs": [f"0x6200/{k} u8" for k in range(1, 5)]}]}}))
    code, out, _ = _run(capsys, "cycle", "--config", str(config), "--interface", oplk_cn.interface, "--seconds", "2",
                        "--json")
    res = json.loads(out)
    node = res["nodes"][0]
    assert node["boot_state"] == "OPERATIONAL"
    if code:           # the CN stalled on a shared machine and the loss counter reset it: said so, exit 1
        assert node["state"] != "OPERATIONAL" and any("threshold" in e for e in res["events"])
    assert node["device_type"] == CN_DEVICE_TYPE
    assert set(node["inputs"]) == {f"0x6000/{k}" for k in range(1, 5)}
    assert node["round_trip_us"]["median"] > 0 and res["cycles"] >= 1000


def test_a_wrong_identity_fails_the_cycle_naming_the_node(oplk_cn, capsys, tmp_path):
    config = tmp_path / "bus.yaml"
    config.write_text(yaml.safe_dump({"bus": {"backend": "raw", "cycle_time_s": 0.002, "pres_timeout_s": 0.0015,
                                              "nodes": [{"node_id": 1, "profile": "io",
                                                         "identity": {"device_type": 0x00020192}}]}}))
    code, _, err = _run(capsys, "cycle", "--config", str(config), "--interface", oplk_cn.interface, "--seconds", "1")
    assert code == 1
    assert "node 1 reports device type 0x000F0191, expected 0x00020192" in err.strip().splitlines()[-1]


@pytest.mark.parametrize("argv, message", [
    (("scan", "--interface", "lo", "--nodes", "0-3"), "node ids are 1..239"),
    (("scan", "--interface", "lo", "--nodes", "a-b"), "is not a list of node ids"),
    (("sdo", "read", "--interface", "lo", "1", "0x1000", "0", "5"), "sdo read takes no VALUE"),
    (("sdo", "write", "--interface", "lo", "1", "0x1000", "0"), "sdo write needs a VALUE"),
    (("sdo", "write", "--interface", "lo", "1", "0x6200", "1", "300", "--type", "u8"), "outside u8's range"),
    (("sdo", "read", "--interface", "lo", "240", "0x1000", "0"), "NODE 240 is outside 1..239"),
])
def test_usage_errors_exit_2_with_one_line(capsys, argv, message):
    code, _, err = _run(capsys, *argv)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
