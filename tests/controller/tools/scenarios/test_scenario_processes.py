"""The scenario runner's process pair: a start that fails leaves no process behind."""
from __future__ import annotations

import sys

import pytest

from controller.tools.scenarios import runner
from controller.tools.scenarios.runner import Endpoints, Processes, ScenarioError


def test_a_hil_that_never_answers_is_an_error_and_is_stopped(tmp_path, monkeypatch):
    spawned = []
    monkeypatch.setattr(runner, "BOOT_TIMEOUT_S", 0.5)
    monkeypatch.setattr(runner, "STOP_TIMEOUT_S", 5.0)
    monkeypatch.setattr(runner, "hil_command",           # a process that never answers on UDP
                        lambda *a, **k: [sys.executable, "-c", "import time; time.sleep(120)"])
    real_spawn = Processes._spawn

    def spawn(self, name, cmd, env):
        real_spawn(self, name, cmd, env)
        spawned.append(self.procs[name])

    monkeypatch.setattr(Processes, "_spawn", spawn)
    ep = Endpoints("tcp://127.0.0.1:1", "tcp://127.0.0.1:2", "tcp://127.0.0.1:3", runner.free_port(runner.socket.SOCK_DGRAM))
    with pytest.raises(ScenarioError, match="did not answer on UDP port"):
        Processes(tmp_path / "bipd.yaml", ep, True, False, tmp_path)
    assert len(spawned) == 1 and spawned[0].poll() is not None     # stopped, not left running
