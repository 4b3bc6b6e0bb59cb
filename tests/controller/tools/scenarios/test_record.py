"""`bipd scenario … --record FILE.mcap`: every telemetry frame, event and HIL truth frame the
operator received is in the MCAP file, readable by the cycle-log reader and by mcap's own."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from mcap.reader import make_reader

from controller.daemon.io.log import TRUTH, log_info, read_log
from controller.tools.scenarios.runner import Options, Session
from controller.tools.scenarios.scenarios import Tilt

pytest.importorskip("mujoco", reason="the HIL bench needs the sim extra: pip install 'bipd[sim]'")


@pytest.mark.hil
def test_scenario_records_telemetry_events_and_truth(tmp_path):
    path = tmp_path / "tilt.mcap"
    with Session(Options(stabilizer=False, record=path)) as s:
        s.run(Tilt(math.radians(2.0), math.radians(3.0), 0.5, 0.2))
        series = s.op.series
    log = read_log(path)
    assert log.header["complete"] and log.header["meta"]["decimation"] >= 1
    n = len(log.records)
    # every frame received from the moment the daemon's layout was known (get_config) to the end
    assert n > 100 and n <= len(series.telemetry["t"])
    np.testing.assert_array_equal(log.field("t"), series.telemetry["t"][-n:])
    np.testing.assert_array_equal(log.field("q"), np.array(series.telemetry["q"][-n:]))
    k = len(log.truth)
    assert k > 10 and [m["foot_tilt"] for m in log.truth] == series.truth["foot_tilt"][-k:]
    kinds = [e["kind"] for e in log.events]
    assert kinds == [e["kind"] for e in series.events[-len(kinds):]] and "TRANSITION" in kinds
    assert log_info(path)["channels"][TRUTH]["messages"] == len(log.truth)
    with open(path, "rb") as f:
        _, _, m = next(make_reader(f).iter_messages(topics=[TRUTH]))
    assert m.log_time == log.header["start_ns"] + round(json.loads(m.data)["t"] * 1e9)   # Unix epoch
    assert log.header["start_ns"] > 1_700_000_000 * 10**9


def test_record_onto_an_existing_file_is_refused_before_anything_runs(tmp_path, monkeypatch, capsys):
    from controller.tools.scenarios import cli

    def never(*_a, **_k):
        raise AssertionError("the scenario ran")
    monkeypatch.setattr(cli, "run_scenario", never)
    (tmp_path / "old.mcap").write_bytes(b"a log")
    assert cli.main(["squat", "--record", str(tmp_path / "old.mcap")]) == 2
    assert capsys.readouterr().err.strip() == (f"bipd scenario: error: --record {tmp_path / 'old.mcap'}: "
                                               "exists; a log is never overwritten")
    assert cli.main(["squat", "--record", str(tmp_path / "no" / "new.mcap")]) == 2
    assert "its folder does not exist" in capsys.readouterr().err
    assert (tmp_path / "old.mcap").read_bytes() == b"a log"
