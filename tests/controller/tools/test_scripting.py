"""The Python client against a real lock-step daemon: the docs' scripting example runs the squat
and plots the knee; `bipd ctl --wait` follows a motion to its end, or names why it ended early."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest
import yaml

from controller.tools.client import MotionError
from controller.tools.ctl import EXIT_MOTION, EXIT_OK
from controller.tools.ctl import main as ctl

from tests.controller.daemon_process import booted
from tests.paths import DEPLOY, ROOT


@pytest.fixture
def daemon(tmp_path):
    """The bench leg's daemon in stepped lock-step: the client's waits grant its cycles, so
    nothing here depends on the host's speed."""
    doc = yaml.safe_load((DEPLOY / "bipd.yaml").read_text())
    doc["robot"] = str(DEPLOY / "robots" / "bip_leg.yaml")
    doc["stabilizer"] = str(DEPLOY / "robots" / "bip_leg_stabilizer.yaml")
    with booted(tmp_path, doc, clock="--stepped") as (proc, client, _):
        yield proc, client, tmp_path


def test_the_scripting_example_runs_the_squat_and_plots_the_knee(daemon, tmp_path):
    _, client, _ = daemon
    code = re.search(r"```python\n(.*?)```", (ROOT / "docs" / "scripting.md").read_text(), re.S).group(1)
    (tmp_path / "squat.py").write_text(code)
    run = subprocess.run([sys.executable, "squat.py", client.endpoint], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr
    assert "squat done: HOLD (TRAJECTORY_DONE)" in run.stdout
    samples = int(run.stdout.split(",")[-1].split()[0])
    assert 270 <= samples <= 290                  # 14 s of squat sampled every 50 ms of the loop's time
    assert (tmp_path / "squat_knee.png").stat().st_size > 10_000


def test_ctl_wait_follows_to_the_end_and_names_an_early_end(daemon, capsys):
    _, client, _ = daemon
    ep = ["--endpoint", client.endpoint]
    assert ctl(["enable", "--wait", *ep]) == EXIT_OK
    assert ctl(["move_joints", *ep, 'q={"knee": -0.5}', "duration=4", "--wait"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "done: HOLD (TRAJECTORY_DONE)" in out and "knee -" in out
    assert abs(client.status()["q"][2] + 0.5) < 5e-3
    client.call("move_joints", q={"knee": 0.0}, duration=4)     # an operator's stop: its own reason
    client.call("stop")
    try:
        client.wait_motion()
        raise AssertionError("a stopped motion was reported as finished")
    except MotionError as e:
        assert (e.state, e.reason) == ("HOLD", "STOP_DONE")
    client.call("inject_fault", fault="drive_fault", axis="knee", kind="following_error")
    assert ctl(["move_joints", "q=[0,0,-0.3,0]", "duration=4", "--wait", *ep]) == EXIT_MOTION
    assert "ended in FAULT, reason DRIVE_FAULT" in capsys.readouterr().err
