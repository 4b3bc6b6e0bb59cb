"""The I/O server against the REAL control loop (lock-step harness on the simulated bus):
commands over ZMQ reach the loop's state machine and its telemetry comes back."""
from __future__ import annotations

import threading
import time

import pytest

from controller.tools.client import Client, CommandError
from controller.daemon.io.protocol import Context
from controller.daemon.io.server import IoServer

from tests.controller.conftest import LOCAL
from tests.controller.daemon.loop_harness import Harness


@pytest.fixture
def live():
    h = Harness()
    cfg = h.cfg
    ctx = Context.from_description(h.loop.robot.description, period=cfg.loop.period,
                                   platform_limit=cfg.control.platform_limit)
    server = IoServer(h.block, ctx, LOCAL, reply_timeout=2.0)      # the loop runs as a thread beside it
    stop = threading.Event()

    def cycle() -> None:
        while not stop.is_set():
            h.loop.run_cycle()
            time.sleep(0.0003)

    threads = [threading.Thread(target=cycle), threading.Thread(target=server.serve, args=(stop,))]
    for t in threads:
        t.start()
    client = Client(server.command_endpoint, timeout_s=3.0, retries=1)
    yield h, server, client
    client.close()
    stop.set()
    for t in threads:
        t.join(5)
    server.close()
    h.close()


def wait_for(client: Client, state: str, timeout: float = 5.0) -> dict:
    end = time.monotonic() + timeout
    while True:
        st = client.call("status")                     # also feeds the motion watchdog
        if st["state"] == state or time.monotonic() > end:
            return st
        time.sleep(0.01)


def test_commands_drive_the_real_loop(live):
    _, _, c = live
    assert wait_for(c, "DISABLED")["state"] == "DISABLED"
    assert c.call("enable")["accepted"] is True
    st = wait_for(c, "HOLD")
    assert st["state"] == "HOLD" and len(st["q"]) == 4
    with pytest.raises(CommandError) as e:
        c.call("move_joints", q=[0.0, 0.0, 0.5, 0.0])
    assert e.value.code == "out_of_range" and "knee" in e.value.message
    target = [0.0, 0.05, -0.2, 0.15]
    assert c.call("move_joints", q=target, duration=0.3)["state"] == "MOVING"
    st = wait_for(c, "HOLD")
    assert st["state"] == "HOLD"
    # status gives the header's state (newest) with the newest record the I/O side has
    # drained, up to one pass older: the held reference shows once that record is HOLD's
    end = time.monotonic() + 5.0
    while st["q_ref"] != pytest.approx(target, abs=1e-6) and time.monotonic() < end:
        time.sleep(0.01)
        st = c.call("status")
    assert st["state"] == "HOLD" and st["q_ref"] == pytest.approx(target, abs=1e-6)
    assert c.call("set_gains", axis="knee", kp=1000, ki=250, kd=50)["accepted"]
    stats = c.call("stats")
    assert stats["io"]["records"] > 100 and stats["profiler"]["wake_us"] is not None
    assert c.call("estop")["state"] == "ESTOP"
    assert c.call("shutdown") == {"acknowledged": True}
