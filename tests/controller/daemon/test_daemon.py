"""`bipd run` as a user runs it: a real daemon process (loop process + I/O process)
on the simulated bus in lock-step, driven over real ZMQ sockets; SIGTERM and the
shutdown command both end it cleanly with exit 0."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from controller.tools.client import Client
from drivers.codes import FaultCode
from controller.daemon.io.log import log_info
from tests.controller.daemon_process import wait_state, wait_transition
from tests.paths import ROBOTS


def hold_reference(client: Client, timeout: float = 20.0) -> list[float]:
    """q_ref as HOLD set it, once the state is HOLD: ``status`` takes q_ref from the last (decimated)
    telemetry record the I/O process has pumped, which may lag the loop by many records and predate
    the transition its state reports; a record of a cycle at or after the loop's cycle when HOLD is
    already reported does not."""
    c0 = client.call("status")["cycle"]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        s = client.call("status")
        if s["record_cycle"] is not None and s["record_cycle"] >= c0:
            return s["q_ref"]
        time.sleep(0.01)
    raise AssertionError(f"no telemetry record of cycle {c0} or later within {timeout} s")


def test_daemon_moves_and_stops_on_sigterm(daemon):
    proc, client, tmp = daemon
    client.call("enable")
    assert wait_state(client, "HOLD") == "HOLD"
    client.call("move_joints", q=[0.0, 0.2, -0.5, 0.3], duration=1.0)
    s = wait_transition(client, "MOVING", "HOLD")
    assert s["last_transition"]["reason"] == "TRAJECTORY_DONE", s["last_transition"]
    assert abs(s["q"][2] + 0.5) < 5e-3, (s["t"], s["last_transition"], s["q"])
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert "SIGTERM" in out and "stopped (exit 0)" in out
    assert list((tmp / "log").glob("run-*/cycles.mcap")), "the cycle log was written into its run folder"
    info = log_info(tmp / "log")                       # closed cleanly, the loop's events beside the records
    assert info["complete"] and info["records"] > 500 and info["channels"]["/events"]["messages"] > 0
    plots = subprocess.run([sys.executable, "-m", "controller.cli", "plot", str(tmp / "log")],
                           capture_output=True, text=True, timeout=120)
    assert plots.returncode == 0, plots.stderr
    assert len([p for p in plots.stdout.split() if p.endswith(".png")]) == 3


def test_shutdown_command_ends_the_daemon(daemon):
    proc, client, _ = daemon
    client.call("shutdown")
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out


def test_two_concurrent_clients_are_both_answered(daemon):
    _, client, _ = daemon
    other = Client(client.endpoint, timeout_s=2.0, retries=3)
    try:
        for _ in range(20):
            assert client.call("ping") is not None
            assert other.call("status")["state"] == "DISABLED"
    finally:
        other.close()


def test_inject_fault_over_zmq_faults_then_resets(daemon):
    from controller.tools.client import CommandError

    _, client, _ = daemon
    client.call("enable")
    assert wait_state(client, "HOLD") == "HOLD"
    with pytest.raises(CommandError) as err:
        client.call("inject_fault", fault="drive_fault", axis="elbow", kind="over_temperature")
    assert err.value.code == "bad_args"
    client.call("inject_fault", fault="drop_pres", node=2, count=1)      # one loss is tolerated
    time.sleep(0.5)
    status = client.call("status")
    assert status["state"] == "HOLD" and status["bus"]["pres_lost"] == {"2": 1}      # but counted
    client.call("inject_fault", fault="drive_fault", axis="knee", kind="following_error")
    assert wait_state(client, "FAULT") == "FAULT"
    deadline = time.monotonic() + 10.0                   # the node's StatusResponse follows its EN
    while client.call("status")["bus"]["last_node_error"] is None and time.monotonic() < deadline:
        time.sleep(0.05)
    error = client.call("status")["bus"]["last_node_error"]
    assert (error["node"], error["code"], error["active"]) == (2, FaultCode.FOLLOWING_ERROR, True)
    client.call("reset")
    assert wait_state(client, "DISABLED") == "DISABLED"


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_loop_process_leaves_when_the_daemon_is_killed(daemon):
    """A killed I/O process (kill -9: no soft stop possible from it) must not leave an
    orphan loop driving the robot: the loop sees its parent gone, stops softly and exits."""
    proc, _, _ = daemon
    loops = _children(proc.pid)
    assert loops, "the loop process was not found"
    proc.kill()
    proc.wait()
    end = time.monotonic() + 20
    while any(_alive(p) for p in loops) and time.monotonic() < end:
        time.sleep(0.1)
    assert not any(_alive(p) for p in loops)


def test_killed_loop_process_is_named_status_says_fault_and_exit_is_non_zero(daemon):
    """kill -9 of the loop process: the I/O process names it and its signal, keeps answering
    status (FAULT, loop exited) for a while and exits non-zero."""
    proc, client, _ = daemon
    loops = [p for p in _children(proc.pid) if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()]
    assert len(loops) == 1, loops                       # not multiprocessing's resource tracker
    os.kill(loops[0], signal.SIGKILL)
    seen = None
    end = time.monotonic() + 20
    while time.monotonic() < end and proc.poll() is None:
        try:
            st = client.call("status")
        except Exception:                               # the daemon may be leaving
            break
        if st["loop_exited"]:
            seen = st
            break
    assert seen is not None, "status never showed the dead loop"
    assert seen["state"] == "FAULT" and seen["exit_code"] == 128 + signal.SIGKILL
    assert f"the loop process (pid {loops[0]}) was killed by SIGKILL" in seen["loop_error"]
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGKILL, out
    assert f"bipd: error: the loop process (pid {loops[0]}) was killed by SIGKILL; drives are no longer commanded" in out
    assert f"stopped (exit {128 + signal.SIGKILL})" in out


LEG_HEADER = "t,ankle_lateral,ankle_sagittal,knee,hip,support\n"


BAD_LEG_FILES = {
    "names.csv": ("t,ankle_lateral,ankle_sagittal,knee,elbow\n0,0,0.1,-0.3,0.2\n1,0,0.1,-0.3,0.2\n",
                  "line 1: header column(s) [5] are not joints of this robot and joint column(s) ['hip'] are missing"),
    "short.csv": (LEG_HEADER + "0,0,0.1,-0.3,0.2,double\n1,0,0.1,-0.3,double\n",
                  "line 3: expected 6 fields like the header, got 5 (no value for column 'support')"),
    "nan.csv": (LEG_HEADER + "0,0,0.1,-0.3,0.2,double\n1,0,nan,-0.3,0.2,double\n",
                "line 3, column 'ankle_sagittal': expected a finite number"),
    "jump.csv": (LEG_HEADER + "0,0,0.1,-0.3,0.2,double\n0.002,0,0.1,-0.31,0.2,left\n",
                 "line 3: joint 'knee' jumps 0.01 rad in 0.002 s from line 2 (5 rad/s)"),
    "limit.csv": (LEG_HEADER + "0,0,0.1,-0.3,0.2,double\n2,0,0.1,0.1,0.2,left\n",
                  "line 3: joint 'knee' at 0.1 rad is beyond its limit 0.0 rad"),
    "support.csv": (LEG_HEADER + "0,0,0.1,-0.3,0.2,double\n1,0,0.1,-0.3,0.2,hopping\n",
                    "line 3, column 'support': expected one of ['left', 'right', 'double']"),
}


def test_bad_trajectory_files_are_refused_before_any_motion(daemon):
    """The daemon answers ``run`` of each bad file with bad_file naming the file, line and joint; the
    loop never leaves HOLD and its reference stays where it was (a good file then moves it: the path
    is live). One daemon takes every file in turn, as the whole BIP 2000's test below."""
    from controller.tools.client import CommandError

    _, client, tmp = daemon
    client.call("enable")
    assert wait_state(client, "HOLD") == "HOLD"
    before = hold_reference(client)
    for name, (text, where) in BAD_LEG_FILES.items():
        (tmp / name).write_text(text)
        with pytest.raises(CommandError) as err:
            client.call("run", trajectory=name)
        assert err.value.code == "bad_file"
        assert str(tmp / name) in err.value.message and where in err.value.message, err.value.message
        assert "\n" not in err.value.message
        status = client.call("status")
        assert status["state"] == "HOLD" and status["q_ref"] == before, name
    time.sleep(0.3)                       # lock-step: hundreds of cycles in which a motion would show
    status = client.call("status")
    assert status["state"] == "HOLD" and status["q_ref"] == before
    (tmp / "good.csv").write_text(LEG_HEADER + "0,0,0.1,-0.3,0.2,double\n1,0,0.15,-0.4,0.25,left\n")
    assert client.call("run", trajectory="good.csv")["accepted"]
    end = time.monotonic() + 20.0
    while client.call("status")["q_ref"] == before and time.monotonic() < end:
        time.sleep(0.05)
    assert client.call("status")["q_ref"] != before


def test_bad_15_joint_gait_files_are_refused_by_the_bip2000_daemon(bip2000_daemon):
    """The whole BIP 2000 daemon answers ``run`` of each bad 15-joint gait file with bad_file naming
    the line and the joint (the bench leg's file names the robot's joints it lacks), never leaves
    HOLD nor moves its reference; a good file then moves it."""
    from controller.tools.client import CommandError
    from models.tree.config import load_tree

    _, client, tmp = bip2000_daemon
    names = [j.joint.name for j in load_tree(ROBOTS / "bip2000.yaml").joints]
    client.call("enable")
    assert wait_state(client, "HOLD") == "HOLD"
    q0 = hold_reference(client)
    header = ",".join(["t", *names, "support"]) + "\n"

    def row(t: float, support: str = "double", **q: float) -> str:
        values = [q.get(n, q0[i]) for i, n in enumerate(names)]
        return f"{t:g}," + ",".join(f"{v!r}" if isinstance(v, float) else str(v) for v in values) + f",{support}\n"

    knee = names.index("l_knee")
    cases = {
        "leg.csv": ("t,ankle_lateral,ankle_sagittal,knee,hip\n0,0,0.1,-0.3,0.2\n1,0,0.1,-0.3,0.2\n",
                    "line 1: header column(s) [2, 3, 4, 5] are not joints of this robot and joint column(s) "
                    "['l_hip_yaw',"),
        "nan.csv": (header + row(0) + row(0.002) + row(0.004, r_knee="nan"), "line 4, column 'r_knee': expected a "
                    "finite number"),
        "jump.csv": (header + row(0) + row(0.002, l_hip_pitch=q0[names.index("l_hip_pitch")] - 0.006),
                     "line 3: joint 'l_hip_pitch' jumps 0.006 rad in 0.002 s from line 2 (3 rad/s), more than "
                     "its velocity limit 2.5 rad/s allows (0.005 rad)"),
        "limit.csv": (header + row(0) + row(2.0, l_knee=-0.1), "line 3: joint 'l_knee' at -0.1 rad is beyond its "
                      "limit 0.0 rad"),
        "support.csv": (header + row(0) + row(1.0, "Left"), "line 3, column 'support': expected one of "
                        "['left', 'right', 'double']"),
    }
    for name, (text, where) in cases.items():
        (tmp / name).write_text(text)
        with pytest.raises(CommandError) as err:
            client.call("run", trajectory=name)
        assert err.value.code == "bad_file" and str(tmp / name) in err.value.message, name
        assert where in err.value.message, err.value.message
    time.sleep(0.3)
    status = client.call("status")
    assert status["state"] == "HOLD" and status["q_ref"] == q0
    bent = min(q0[knee] + 0.2, 1.0)
    (tmp / "good.csv").write_text(header + row(0) + row(1.0, "left", l_knee=bent))
    assert client.call("run", trajectory="good.csv")["accepted"]
    end = time.monotonic() + 30.0
    while client.call("status")["q_ref"] == q0 and time.monotonic() < end:
        time.sleep(0.05)
    assert client.call("status")["q_ref"] != q0
