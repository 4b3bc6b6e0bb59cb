"""Two `bipd run` with one configuration: the second leaves with one line before it starts
a loop process, the first keeps cycling undisturbed; a restart with io.log_dir set writes
a new run folder next to the previous one. Real daemon processes on the sim bus."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from controller.io.client import Client

from .test_daemon import daemon, wait_state  # noqa: F401 -- the fixture

BOOT_S = 60.0


def bipd_run(config) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "controller.cli", "run", "--config", str(config), "--lockstep"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))


def test_second_daemon_leaves_and_the_first_is_undisturbed(daemon):  # noqa: F811
    first, client, tmp = daemon
    config = tmp / "bipd.yaml"
    endpoint = client.endpoint
    client.call("enable")
    assert wait_state(client, "HOLD") == "HOLD"          # drives powered, position held (no watchdog)
    before = client.call("status")

    second = bipd_run(config)
    out, _ = second.communicate(timeout=BOOT_S)
    assert second.returncode == 2, out
    assert f"bipd: error: {config}: io.command: {endpoint} is in use (another bipd?" in out, out
    assert "Traceback" not in out and "loop process" not in out, out

    after = client.call("status")
    assert after["state"] == "HOLD" and after["faults"] == [] and after["fault"] is None
    assert after["cycle"] > before["cycle"]
    assert first.poll() is None
    client.call("shutdown")
    out, _ = first.communicate(timeout=30)
    assert first.returncode == 0, out

    restarted = bipd_run(config)                    # the same io.log_dir: a new run folder
    try:
        with Client(endpoint, timeout_s=2.0, retries=3) as again:
            assert wait_state(again, "DISABLED", timeout=BOOT_S) == "DISABLED"
            again.call("shutdown")
        out, _ = restarted.communicate(timeout=30)
        assert restarted.returncode == 0, out
    finally:
        if restarted.poll() is None:
            restarted.kill()
            restarted.wait()
    runs = sorted((tmp / "log").glob("run-*"))
    assert len(runs) == 2 and all((r / "header.json").is_file() for r in runs)


def test_instance_lock_is_exclusive_per_endpoint(tmp_path, monkeypatch):
    """The lock, not the bind, is what keeps a second daemon off an ipc:// endpoint (a second
    ipc bind silently takes the socket over)."""
    from controller.instance import InstanceLocked, instance_lock

    monkeypatch.setenv("RUNTIME_DIRECTORY", str(tmp_path))
    endpoint = f"ipc://{tmp_path}/bipd.sock"
    with instance_lock(endpoint) as path:
        assert path.parent == tmp_path and path.read_text() == f"{os.getpid()}\n"
        with pytest.raises(InstanceLocked, match=rf"^{endpoint} is in use \(another bipd\? it holds {path}\)$"):
            with instance_lock(endpoint):
                pass
        with instance_lock(f"ipc://{tmp_path}/other.sock"):
            pass
        with instance_lock("tcp://127.0.0.1:*"), instance_lock("tcp://127.0.0.1:*"):
            pass                                   # wildcard ports never collide
    with instance_lock(endpoint):
        pass                                       # released on exit
