"""The HIL over a real wire: ``bipd scenario tilt --transport raw`` against ``--transport udp``.

The thesis tilt's angles (α 10°, β 20°, stabilizer on) in 3 s quintics with 0.5 s holds, as
test_scenarios shortens it (thesis: 7 s, 1 s), runs in stepped lock-step twice at once, the frames
once over loopback UDP and once over raw Ethernet on a veth pair into a network namespace made for
the run. The simulation is the same and lock-step keeps the wall clock
out of it on both wires, so the JSON figures must be equal, tolerance 0 (all but the wall time,
the speed and the task timings, which measure the host). Every namespace and veth the runs made is
gone afterwards, also when the bench fails to start.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from controller.tools import veth as veth_module
from controller.tools.scenarios import runner
from controller.tools.scenarios.runner import Options, ScenarioError, Session

pytest.importorskip("mujoco", reason="the HIL bench needs the sim extra: pip install 'bipd[sim]'")

ROOT = Path(__file__).resolve().parents[4]
HOST_MEASURES = ("wall_s", "speed_x_realtime", "tasks_us")     # the host's speed, not the simulation's
needs_root = pytest.mark.skipif(not veth_module.wire_capable(), reason="--transport raw makes a network namespace "
                                "and a veth pair and opens AF_PACKET sockets: needs root (or CAP_NET_ADMIN and "
                                "CAP_NET_RAW)")


def _names_made(monkeypatch) -> list[str]:
    """The namespace names the runner draws from now on."""
    made: list[str] = []
    draw = veth_module.unique_name

    def record(prefix: str) -> str:
        made.append(draw(prefix))
        return made[-1]

    monkeypatch.setattr(runner, "unique_name", record)
    return made


def _gone(name: str) -> bool:
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return not veth_module.namespace_exists(name) and f"{name}-mn" not in links


def _tilt(transport: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "controller.cli", "scenario", "tilt", "--duration", "3", "--hold", "0.5",
                          "--transport", transport, "--json"], capture_output=True, text=True, cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=1800)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


@pytest.mark.slow
@pytest.mark.hil
@needs_root
def test_the_thesis_tilt_gives_the_same_figures_over_the_wire_as_over_udp():
    with ThreadPoolExecutor(2) as pool:
        udp, raw = pool.map(_tilt, ("udp", "raw"))
    print(f"thesis tilt, stepped lock-step: udp {udp['wall_s']} s wall ({udp['speed_x_realtime']}x), "
          f"raw {raw['wall_s']} s wall ({raw['speed_x_realtime']}x) for {raw['sim_s']} s simulated")
    assert not raw["fell"] and raw["states"] == ["STABILIZING"], raw
    figures = lambda res: {k: v for k, v in res.items() if k not in HOST_MEASURES}          # noqa: E731
    assert figures(raw) == figures(udp)


@pytest.mark.slow
@pytest.mark.hil
@needs_root
def test_the_namespace_is_removed_when_the_bench_fails_to_start(monkeypatch):
    made = _names_made(monkeypatch)
    options = Options(transport="raw", hil_args=("--throttle-s", "7"))     # the HIL refuses it at once
    with pytest.raises(ScenarioError, match="the hil process exited with code 2"):
        with Session(options):
            pass
    assert len(made) == 1 and _gone(made[0]), made


@pytest.mark.slow
@pytest.mark.hil
@needs_root
def test_the_namespace_is_removed_after_a_run(monkeypatch):
    made = _names_made(monkeypatch)
    with Session(Options(transport="raw")) as s:
        assert veth_module.namespace_exists(made[0])
        assert s.op.call("status")["state"] == "HOLD"
    assert _gone(made[0]), made


def test_without_the_privileges_the_raw_transport_names_them(monkeypatch):
    monkeypatch.setattr(runner, "wire_capable", lambda: False)
    with pytest.raises(ScenarioError, match=r"needs root, or CAP_NET_ADMIN .* and CAP_NET_RAW"):
        runner.raw_wire("raw")
    assert runner.raw_wire("udp") is None


def test_namespace_names_are_unique_and_fit_an_interface_name():
    names = {veth_module.unique_name("bsc") for _ in range(100)}
    assert len(names) == 100
    assert all(len(f"{n}-mn") <= 15 for n in names)
