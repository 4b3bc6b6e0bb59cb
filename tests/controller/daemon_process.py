"""`bipd run` as a user runs it, for the tests: a real daemon process (loop process + I/O process) on the
simulated bus, its own ports and folders in a test's tmp_path, booted to DISABLED over real ZMQ sockets."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import yaml

from controller.tools.client import Client, ClientTimeout
from controller.tools.ports import free_port


@contextmanager
def booted(tmp_path: Path, doc: dict, *, clock: str = "--lockstep", boot_s: float = 300.0, timeout_s: float = 2.0,
           log: bool | Path = True, name: str = "bipd.yaml", shutdown: bool = False
           ) -> Iterator[tuple[subprocess.Popen, Client, str]]:
    """``bipd run --config tmp_path/name clock`` (``--lockstep``, ``--stepped``: stepped to its boot, ...) of ``doc`` (free ports; with ``log`` its cycle log in
    tmp_path/log, or in ``log`` if a folder; trajectories in tmp_path), booted to DISABLED within ``boot_s``: yields (process,
    client, telemetry endpoint); after, asked to shut down (``shutdown``) and killed if still alive."""
    cmd_ep, tel_ep = f"tcp://127.0.0.1:{free_port()}", f"tcp://127.0.0.1:{free_port()}"
    doc["io"].update(command=cmd_ep, telemetry=tel_ep, trajectory_dir=str(tmp_path))
    if log:
        doc["io"]["log_dir"] = str(tmp_path / "log" if log is True else log)
    cfg = tmp_path / name
    cfg.write_text(yaml.safe_dump(doc))
    proc = subprocess.Popen([sys.executable, "-m", "controller.cli", "run", "--config", str(cfg), clock],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    client = Client(cmd_ep, timeout_s=timeout_s, retries=3)
    end = time.monotonic() + boot_s             # boot and kernel compilation: an error, not a verdict
    try:
        while True:
            try:
                status = client.call("status")
                if status["state"] == "DISABLED":
                    break
                if status["stepped"]:               # a stepped loop boots only as it is granted time
                    client.call("step", seconds=0.1)
            except Exception:
                pass
            assert proc.poll() is None, proc.stdout.read()
            assert time.monotonic() < end, f"the daemon did not boot within {boot_s:g} s"
            time.sleep(0.2)
        yield proc, client, tel_ep
        if shutdown:
            client.call("shutdown")
            proc.communicate(timeout=30)
    finally:
        client.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def wait_state(client: Client, state: str, timeout: float = 120.0) -> str:
    """Poll ``status`` until the loop reports ``state``; the last state seen. The timeout is only a
    failing test's bound: a loaded host's daemon may take its time, and waiting costs nothing once reached."""
    end, s = time.monotonic() + timeout, "no reply"
    while time.monotonic() < end:
        try:
            s = client.call("status")["state"]
        except ClientTimeout:               # a daemon still compiling its kernels on a loaded host
            continue
        if s == state:
            return s
        time.sleep(0.05)
    return s


def wait_transition(client: Client, from_state: str, to_state: str, timeout: float = 120.0) -> dict:
    """Poll ``status`` until its last transition is ``from_state`` -> ``to_state`` and its telemetry
    record is past that transition (status reads the I/O process's latest record, which in lock-step may
    trail the loop); that status. A state alone would not do: a command's reply comes before the loop
    takes it, so the state before the command still reads as the one after."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        s = client.call("status")
        tr = s["last_transition"] or {}
        if (tr.get("from_state"), tr.get("to_state")) == (from_state, to_state) \
                and s["record_cycle"] is not None and s["record_cycle"] > tr["cycle"]:
            return s
        time.sleep(0.05)
    raise AssertionError(f"no {from_state} -> {to_state} within {timeout} s: last {s['last_transition']}")
