"""Two `bipd run` with one configuration: the second leaves with one line before it starts
a loop process, the first keeps cycling undisturbed; a restart with io.log_dir set writes
a new run folder next to the previous one. Real daemon processes on the sim bus."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from controller.tools.client import Client

from tests.controller.daemon_process import wait_state
from tests.paths import DEPLOY, ROBOTS

BOOT_S = 300.0


def bipd_run(config) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "controller.cli", "run", "--config", str(config), "--lockstep"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))


def test_second_daemon_leaves_and_the_first_is_undisturbed(daemon):
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
    assert after["state"] == "HOLD" and after["faults"] == [] and after["fault_name"] is None
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
    assert len(runs) == 2 and all((r / "cycles.mcap").is_file() for r in runs)


def test_instance_lock_is_exclusive_per_endpoint(tmp_path, monkeypatch):
    """The lock, not the bind, is what keeps a second daemon off an ipc:// endpoint (a second
    ipc bind silently takes the socket over)."""
    from controller.daemon.instance import InstanceLocked, instance_lock

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


@pytest.mark.slow
def test_daemon_with_io_curve_answers_only_authorised_clients(tmp_path):
    """`bipd run` wires io.curve into its sockets: the operator's certificate gets answers,
    a stranger's none."""
    import yaml

    from controller.cli import main
    from controller.tools.client import ClientTimeout
    from controller.daemon.endpoints import ClientCurve

    from controller.tools.ports import free_port

    assert main(["keys", str(tmp_path / "curve"), "--name", "server"]) == 0
    assert main(["keys", str(tmp_path / "curve" / "clients"), "--name", "operator"]) == 0
    assert main(["keys", str(tmp_path / "stranger"), "--name", "stranger"]) == 0
    doc = yaml.safe_load((DEPLOY / "bipd.yaml").read_text())
    doc["robot"] = str(ROBOTS / "bip_leg.yaml")
    doc["stabilizer"] = str(ROBOTS / "bip_leg_stabilizer.yaml")
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    doc["io"].update(command=endpoint, telemetry=f"tcp://127.0.0.1:{free_port()}",
                     curve={"server_secret_key_file": "curve/server.key_secret",
                            "authorized_clients_dir": "curve/clients"})
    config = tmp_path / "bipd.yaml"
    config.write_text(yaml.safe_dump(doc))
    proc = bipd_run(config)
    server_key = tmp_path / "curve" / "server.key"
    operator = ClientCurve.from_files(server_key, tmp_path / "curve" / "clients" / "operator.key_secret")
    stranger = ClientCurve.from_files(server_key, tmp_path / "stranger" / "stranger.key_secret")
    try:
        with Client(endpoint, timeout_s=2.0, retries=3, curve=operator) as ok:
            assert wait_state(ok, "DISABLED", timeout=BOOT_S) == "DISABLED"
            with Client(endpoint, timeout_s=0.5, retries=1, curve=stranger) as other, pytest.raises(ClientTimeout):
                other.call("ping")
            with Client(endpoint, timeout_s=0.5, retries=1) as plain, pytest.raises(ClientTimeout):
                plain.call("ping")
            assert ok.call("stats")["io"]["requests"] >= 1
            ok.call("shutdown")
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0, out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_an_ipc_endpoint_written_differently_is_the_same_instance(tmp_path, monkeypatch):
    """``ipc:///x//cmd``, ``ipc:///x/./cmd`` and a path through a link bind one socket: a second
    daemon on any spelling would steal the first one's socket, so they share one lock."""
    from controller.daemon.instance import InstanceLocked, instance_lock

    monkeypatch.setenv("RUNTIME_DIRECTORY", str(tmp_path / "run"))
    (tmp_path / "run").mkdir()
    (tmp_path / "x").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "x")
    spellings = [f"ipc://{tmp_path}/x//cmd", f"ipc://{tmp_path}/x/./cmd", f"ipc://{tmp_path}/link/cmd",
                 f"ipc://{tmp_path}/x/../x/cmd"]
    with instance_lock(f"ipc://{tmp_path}/x/cmd"):
        for other in spellings:
            with pytest.raises(InstanceLocked, match="is in use"):
                with instance_lock(other):
                    pass
    with instance_lock("tcp://LOCALHOST:5555"), pytest.raises(InstanceLocked, match="is in use"):
        with instance_lock("tcp://localhost:5555"):
            pass


def test_a_link_planted_at_the_lock_path_is_refused_and_its_target_untouched(tmp_path, monkeypatch):
    from controller.daemon.instance import InstanceLocked, instance_lock, lock_path

    monkeypatch.setenv("RUNTIME_DIRECTORY", str(tmp_path))
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    endpoint = "tcp://127.0.0.1:5556"
    lock_path(endpoint).symlink_to(victim)
    with pytest.raises(InstanceLocked, match=r"cannot open the lock file .*\(Too many levels of symbolic links\)"):
        with instance_lock(endpoint):
            pass
    assert victim.read_text() == "precious\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="gives a folder to another user (root only)")
def test_without_a_runtime_directory_the_lock_folder_must_be_private(tmp_path, monkeypatch):
    """No RUNTIME_DIRECTORY nor XDG_RUNTIME_DIR (a manual ``sudo bipd run``): the fallback folder
    in the temporary folder is refused when it is a link, another user's or writable by others,
    so nobody can plant a link for the daemon to truncate or hold the lock to block its start."""
    import tempfile

    from controller.daemon import instance
    from controller.daemon.instance import InstanceLocked, instance_lock

    monkeypatch.delenv("RUNTIME_DIRECTORY", raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(instance.os, "geteuid", lambda: 4242)      # an ordinary user
    folder = tmp_path / "bipd-4242"
    endpoint = "tcp://127.0.0.1:5557"

    folder.mkdir(mode=0o700)
    os.chown(folder, 4242, -1)                         # the user's own private folder: taken
    with instance_lock(endpoint) as path:
        assert path.parent == folder and os.stat(path).st_mode & 0o777 == 0o600
    for plant, why in ((lambda: folder.chmod(0o777), "is writable by others"),
                       (lambda: os.chown(folder, 0, -1), "belongs to uid 0"),
                       (lambda: (folder.rename(tmp_path / "elsewhere"), folder.symlink_to(tmp_path / "elsewhere")),
                        "is not a folder")):
        plant()
        with pytest.raises(InstanceLocked, match=rf"the lock folder {folder} {why}; refusing it"):
            with instance_lock(endpoint):
                pass
