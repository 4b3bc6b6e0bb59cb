"""Stepped lock-step and the motion watchdog, on the in-process loop and the simulated bus.

The loop runs in its own thread; the test plays the I/O side through the shared header (the
heartbeat count of valid requests, the horizon) and the mailbox, and waits on events (the
loop's cycle counter, replies), never on the wall clock."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from controller.daemon.codes import Event, Reason, State
from controller.daemon.config import load_daemon_config
from controller.daemon.loop.timing import DeadlineClock
from controller.daemon.shm import Cmd, H, post_command, take_replies

from tests.controller.daemon.loop_harness import CONFIG, Harness

WAIT_S = 60.0          # wall seconds before a test gives up waiting for the loop: an error, not a verdict


def _until(condition, what: str) -> None:
    end = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < end, f"the loop did not {what} within {WAIT_S:g} s"
        time.sleep(1e-3)


class Running:
    """A harness whose loop cycles in a thread (``loop.run``) until it stops."""

    def __init__(self, h: Harness) -> None:
        self.h = h
        self.thread = threading.Thread(target=h.loop.run, daemon=True)
        self.thread.start()
        self.token = 0

    @property
    def cycle(self) -> int:
        return int(self.h.block.header[H.LOOP_CYCLE])

    def request(self) -> None:
        """What the I/O side does for every valid request: one heartbeat."""
        self.h.block.header[H.HEARTBEATS] += 1

    def step(self, cycles: int) -> int:
        """A ``step`` request: heartbeat, raise the horizon, wait for the loop to reach it."""
        h = self.h.block.header
        self.request()
        horizon = int(h[H.HORIZON]) + cycles
        h[H.HORIZON] = horizon
        _until(lambda: self.cycle >= horizon, f"reach cycle {horizon}")
        return horizon

    def command(self, cmd: Cmd, *args: float) -> tuple[bool, int]:
        self.request()
        self.token += 1
        assert post_command(self.h.block, self.token, cmd, np.array(args, dtype=float) if args else None)
        replies: dict = {}

        def answered() -> bool:
            replies.update({r[0]: r for r in take_replies(self.h.block)})
            return self.token in replies
        _until(answered, f"answer {cmd.name}")
        return replies[self.token][1], replies[self.token][2]

    def stop(self) -> None:
        self.h.block.header[H.SHUTDOWN] = 1
        self.thread.join(WAIT_S)
        assert not self.thread.is_alive(), "the loop did not leave after SHUTDOWN"


@pytest.fixture
def stepped():
    h = Harness(config=load_daemon_config(CONFIG, backend="sim", stepped=True))
    r = Running(h)
    yield r
    if r.thread.is_alive():
        r.stop()
    h.close()


def _t(cycle: int, period: float) -> float:
    """The lock-step clock's time of a cycle (controller.daemon.loop.timing.LockstepClock)."""
    return cycle * int(round(period * 1e9)) * 1e-9


def test_stepped_config_needs_lockstep(tmp_path):
    import yaml

    from models import ConfigError
    doc = yaml.safe_load(CONFIG.read_text())
    doc["robot"] = str(CONFIG.parent / doc["robot"])
    doc["stabilizer"] = str(CONFIG.parent / doc["stabilizer"])
    doc["loop"].update(lockstep=False, stepped=True)
    path = tmp_path / "bipd.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match=r"loop\.stepped.*needs loop\.lockstep: true"):
        load_daemon_config(path)
    assert load_daemon_config(path, stepped=True).loop.lockstep                 # --stepped implies it


def test_the_loop_runs_exactly_to_the_horizon_and_applies_commands_while_paused(stepped):
    r, h = stepped, stepped.h
    assert r.cycle == 0 and h.state == State.DISABLED
    assert r.command(Cmd.ENABLE) == (True, 0)              # answered while paused at cycle 0
    assert r.cycle == 0
    r.step(10)
    assert r.command(Cmd.RESET)[0] is False                # nothing to reset: refused, at cycle 10
    assert r.cycle == 10                                   # it answered from the pause: no cycle beyond
    r.step(190)
    assert h.state == State.HOLD and r.cycle == 200
    assert r.command(Cmd.MOVE_JOINTS, 0.0, 0.3, -0.6, 0.3, 6.0)[0]
    moving = [e for e in h.events() if e[1] == Event.TRANSITION and int(e[3]) // 1000 == State.MOVING]
    assert [e[0] for e in moving] == [200]                  # applied at the paused cycle, not the next one
    assert r.cycle == 200 and h.loop.clock.now_s() == _t(200, h.cfg.loop.period)
    r.stop()
    assert h.state == State.DISABLED                        # shutdown ends the pause: soft stop, drives off


def test_a_silent_stepped_client_is_soft_stopped_by_the_watchdog_at_an_exact_cycle(stepped):
    """The client moves, then advances 3 s with nothing else: the watchdog (simulated time) fires
    at the first cycle more than watchdog_s after the request, the stop carries WATCHDOG."""
    r, h = stepped, stepped.h
    r.command(Cmd.ENABLE)
    r.step(200)
    assert r.command(Cmd.MOVE_JOINTS, 0.0, 0.3, -0.6, 0.3, 6.0)[0]
    start = r.cycle
    r.step(1500)                                            # one request, then 3 s of silence
    period, limit = h.cfg.loop.period, h.cfg.control.watchdog
    expected = next(k for k in range(start, start + 1500) if _t(k, period) - _t(start, period) > limit)
    ev = h.events()
    warnings = [e for e in ev if e[1] == Event.WARNING and e[2] == Reason.WATCHDOG]
    assert [e[0] for e in warnings] == [expected]
    held = [e for e in ev if e[1] == Event.TRANSITION and e[2] == State.MOVING]
    assert len(held) == 1 and int(held[0][3]) == Reason.WATCHDOG + 1000 * State.HOLD, held
    assert held[0][0] > expected                                              # after the soft deceleration
    assert h.state == State.HOLD


def test_requests_keep_a_stepped_motion_alive(stepped):
    r, h = stepped, stepped.h
    r.command(Cmd.ENABLE)
    r.step(200)
    assert r.command(Cmd.MOVE_JOINTS, 0.0, 0.3, -0.6, 0.3, 6.0)[0]
    for _ in range(30):                                     # 3 s in 0.1 s steps: every step feeds it
        r.step(50)
    assert h.state == State.MOVING
    assert not [e for e in h.events() if e[1] == Event.WARNING and e[2] == Reason.WATCHDOG]


def test_a_watchdog_stop_while_stabilizing_says_watchdog(stepped):
    r, h = stepped, stepped.h
    r.command(Cmd.ENABLE)
    r.step(200)
    assert r.command(Cmd.STABILIZER, 1.0)[0]
    r.step(1000)
    ev = h.events()
    held = [e for e in ev if e[1] == Event.TRANSITION and e[2] == State.STABILIZING]
    assert len(held) == 1 and int(held[0][3]) == Reason.WATCHDOG + 1000 * State.HOLD, held
    assert h.state == State.HOLD


def test_a_paused_loop_leaves_when_the_io_process_dies(stepped):
    r, h = stepped, stepped.h
    r.step(5)
    h.loop.parent_pid = -1                                  # os.getppid() is never -1: our parent is gone
    r.thread.join(WAIT_S)
    assert not r.thread.is_alive() and h.block.header[H.SHUTDOWN] == 1


def test_real_time_watchdog_stops_a_client_that_went_silent():
    """Real time (DeadlineClock): a client pings during a motion, then stops; the loop soft-stops
    with reason WATCHDOG no earlier than watchdog_s after the last ping (loop time)."""
    cfg = load_daemon_config(CONFIG, backend="sim", lockstep=False)
    h = Harness(config=cfg, clock=DeadlineClock(cfg.loop.period, cfg.loop.spin))
    r = Running(h)
    try:
        r.command(Cmd.ENABLE)
        _until(lambda: h.state == State.HOLD, "reach HOLD")
        assert r.command(Cmd.MOVE_JOINTS, 0.0, 0.3, -0.6, 0.3, 30.0)[0]
        for _ in range(5):                                  # a live client, then silence
            last = r.cycle                                  # the loop sees this ping at or after it
            r.request()
            time.sleep(0.05)
        _until(lambda: h.state == State.HOLD, "soft-stop the silent client's motion")
        ev = h.events()
        warnings = [e for e in ev if e[1] == Event.WARNING and e[2] == Reason.WATCHDOG]
        assert len(warnings) == 1
        assert warnings[0][0] - last >= round(cfg.control.watchdog / cfg.loop.period)
        held = [e for e in ev if e[1] == Event.TRANSITION and e[2] == State.MOVING]
        assert len(held) == 1 and int(held[0][3]) % 1000 == Reason.WATCHDOG
    finally:
        r.stop()
        h.close()
