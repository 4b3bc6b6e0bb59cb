"""An in-process, lock-step control loop on the simulated bus, for tests."""
from __future__ import annotations

import numpy as np

from controller.daemon.codes import State
from controller.daemon.config import load_daemon_config
from controller.daemon.loop.loop import ControlLoop
from controller.daemon.loop.timing import LockstepClock
from controller.daemon.io.messages import telemetry_message
from controller.daemon.shm import H, Cmd, SharedBlock, post_command, read_events, read_record, take_replies
from controller.daemon.telemetry import RecordLayout
from drivers.hal import open_bus
from drivers.sim.plant import InertiaPlant
from controller.daemon.run import open_plant_bus, shared_layout
from tests.paths import DEPLOY

CONFIG = DEPLOY / "bipd.yaml"


class Harness:
    def __init__(self, leg_plant: bool = True, config=None, clock=None) -> None:
        self.cfg = config or load_daemon_config(CONFIG, backend="sim", lockstep=True)
        robot = self.cfg.robot()
        self.bus = open_plant_bus(self.cfg, robot) if leg_plant else open_bus(    # the daemon's inertia plant
            self.cfg.bus_section, plant=InertiaPlant.from_config(self.cfg.bus, nan_sensors=True))
        self.block = SharedBlock(shared_layout(self.cfg), create=True)
        self.loop = ControlLoop(self.cfg, self.block, self.bus, robot,
                                self.cfg.stabilizer(),
                                clock or LockstepClock(self.cfg.loop.period))
        self.loop.start()
        self.loop.clock.start()
        self.token = 0
        self.events_seen = 0

    def command(self, cmd: Cmd, *args: float, cycles: int = 1):
        """Post one command, run ``cycles`` cycles, return its (ok, code)."""
        self.token += 1
        assert post_command(self.block, self.token, cmd, np.array(args, dtype=float) if args else None)
        self.run(cycles)
        replies = {r[0]: r for r in take_replies(self.block)}
        _, ok, code, _ = replies[self.token]
        return ok, code

    def run(self, cycles: int, heartbeat_every: int = 0, until=None) -> int:
        for k in range(cycles):
            if heartbeat_every and k % heartbeat_every == 0:
                self.block.header[H.HEARTBEATS] += 1          # a valid client request (I/O side)
            self.loop.run_cycle()
            if until is not None and until():
                return k + 1
        return cycles

    def last_record(self) -> dict:
        """The newest telemetry record, decoded (controller.daemon.io.messages.telemetry_message)."""
        layout = RecordLayout(self.loop.n)
        rec = np.zeros(layout.size)
        assert read_record(self.block, int(self.block.header[H.RING_COUNT]) - 1, rec)
        return telemetry_message(layout, rec)

    def events(self):
        ev, self.events_seen, _ = read_events(self.block, self.events_seen)
        return ev

    @property
    def state(self) -> int:
        return int(self.block.header[H.LOOP_STATE])

    def close(self) -> None:
        self.bus.close()
        self.block.close()


def enabled_bip2000(config) -> Harness:
    """The whole BIP 2000 of daemon YAML ``config`` on the inertia plant (sim bus, lock-step), enabled, in HOLD."""
    harness = Harness(leg_plant=False, config=load_daemon_config(config, backend="sim", lockstep=True))
    assert harness.command(Cmd.ENABLE)[0]
    harness.run(300, until=lambda: harness.state == State.HOLD)
    assert harness.state == State.HOLD
    return harness
