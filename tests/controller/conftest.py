"""Test rig for the I/O process: a FAKE loop thread on a real shared block, the real
IoServer in a thread, real ZMQ sockets on 127.0.0.1 (free ports picked by the OS); and real
daemon processes (tests.controller.daemon_process) on the leg and on the whole BIP 2000."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np
import pytest
import yaml
import zmq

from controller.daemon.codes import Error, Event, Reason, State
from controller.tools.client import Client
from controller.daemon.io.protocol import Context
from controller.daemon.io.server import Endpoints, IoServer
from controller.daemon.loop.states import ALLOWED
from controller.daemon.shm import (
    LANES,
    Cmd,
    H,
    Layout,
    SharedBlock,
    begin_record,
    command_done,
    end_record,
    next_command,
    post_event,
    post_reply,
    take_priority,
    withdrawn,
)
from controller.daemon.telemetry import RecordLayout
from models.chain.config import load_description
from tests.controller.daemon_process import booted
from tests.paths import DEPLOY, ROBOTS

ROBOT = ROBOTS / "bip_leg.yaml"
LOCAL = Endpoints("tcp://127.0.0.1:*", "tcp://127.0.0.1:*")
# where the fake loop goes at once on an accepted command (the real loop gets there in time)
FAKE_TARGET = {Cmd.ENABLE: State.HOLD, Cmd.DISABLE: State.DISABLED, Cmd.RESET: State.DISABLED,
               Cmd.ESTOP: State.ESTOP, Cmd.STOP: State.HOLD, Cmd.HOLD: State.HOLD,
               Cmd.MOVE_JOINTS: State.MOVING, Cmd.RUN_SQUAT: State.MOVING, Cmd.RUN_BUFFER: State.MOVING}

@dataclass
class FakeLoop:
    """Stands in for the loop process: consumes the priority lanes then the mailbox, applies the
    loop's state table (from the command registry),
    posts replies, one telemetry record per ``period`` and TRANSITION events."""
    block: SharedBlock
    period: float = 0.001
    respond: bool = True                 # False: consume commands but never reply
    consume: bool = True                 # False: leave the mailbox alone (fills up); read every pass
    taken: threading.Event | None = None     # set once a mailbox command is taken; then wait for ``release``
    release: threading.Event = field(default_factory=threading.Event)
    refuse: Error | None = None          # refuse every command with this code
    received: list[tuple[int, Cmd, list[float]]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.layout = RecordLayout(self.block.layout.n_joints)
        self.q = np.array([0.0, 0.1, -0.3, 0.2])
        self.set_state(State.DISABLED)
        self.block.header[H.READY] = 1
        self.thread = threading.Thread(target=self._run, daemon=True)

    def commands(self) -> list[tuple[int, Cmd, list[float]]]:
        """Received commands."""
        return list(self.received)

    def set_state(self, state: State, reason: Reason = Reason.COMMAND) -> None:
        h = self.block.header
        old = int(h[H.LOOP_STATE])
        h[H.LOOP_STATE] = int(state)
        if old != state:
            post_event(self.block, int(h[H.LOOP_CYCLE]), Event.TRANSITION, old, reason + 1000.0 * state)   # as the loop

    def _apply(self, token: int, cmd: Cmd, args: list[float]) -> None:
        """The real loop's tables (controller.daemon.loop.states); transitions complete at once."""
        state = State(int(self.block.header[H.LOOP_STATE]))
        if self.refuse is not None or cmd not in ALLOWED[state]:
            post_reply(self.block, token, False, int(self.refuse or Error.NOT_ALLOWED), float(state))
            return
        new = FAKE_TARGET.get(cmd)
        if cmd == Cmd.STABILIZER:
            new = State.STABILIZING if args[0] else State.HOLD
        if cmd == Cmd.MOVE_JOINTS:
            self.q = np.array(args[:4])
        if cmd == Cmd.SHUTDOWN:
            self.block.header[H.LOOP_EXIT] = 1
            self.stop.set()
        if new is not None:
            self.set_state(new)
        post_reply(self.block, token, True, 0, float(self.block.header[H.LOOP_STATE]))

    def _record(self, cycle: int) -> None:
        rec = begin_record(self.block)
        s = self.layout.slices
        rec[:] = 0.0
        rec[s["t"]] = cycle * 0.002
        rec[s["cycle"]] = cycle
        rec[s["state"]] = self.block.header[H.LOOP_STATE]
        rec[s["q"]] = self.q
        rec[s["q_ref"]] = self.q
        rec[s["margins"]] = np.nan
        rec[s["margins"].start:s["margins"].start + 4] = [0.03, 0.05, 0.02, 0.04]
        rec[s["wake_us"]] = 5.0 + cycle % 7
        rec[s["task_us"]] = [10.0, 20.0, 5.0, 8.0, 3.0, 1.0]
        end_record(self.block)

    def _run(self) -> None:
        cycle = 0
        while not self.stop.is_set():
            for lane, cmd in enumerate(LANES):           # the priority lanes first, as the loop
                token = take_priority(self.block, lane) if self.consume else 0
                if token:
                    self.received.append((token, cmd, []))
                    if self.respond:
                        self._apply(token, cmd, [])
            while self.consume:
                slot = next_command(self.block)
                if slot is None:
                    break
                token, cmd, nargs = int(slot[0]), Cmd(int(slot[1])), int(slot[2])
                args = [float(x) for x in slot[3:3 + nargs]]
                command_done(self.block)
                if withdrawn(self.block, token):  # as the loop: answered, never applied
                    post_reply(self.block, token, False, int(Error.TIMEOUT), float(self.block.header[H.LOOP_STATE]))
                    continue
                if self.taken is not None:       # took it (not withdrawn); the test decides when it goes on
                    self.taken.set()
                    self.release.wait()
                self.received.append((token, cmd, args))
                if self.respond:
                    self._apply(token, cmd, args)
            cycle += 1
            self.block.header[H.LOOP_CYCLE] = cycle
            self._record(cycle)
            time.sleep(self.period)

    def wait_state(self, state: State, timeout: float = 2.0) -> None:
        end = time.monotonic() + timeout
        while State(int(self.block.header[H.LOOP_STATE])) != state:
            assert time.monotonic() < end, f"loop never reached {state.name}"
            time.sleep(0.002)


@dataclass
class Rig:
    block: SharedBlock
    loop: FakeLoop
    server: IoServer
    client: Client
    stop: threading.Event
    thread: threading.Thread

    @property
    def state(self) -> State:
        return State(int(self.block.header[H.LOOP_STATE]))


@pytest.fixture(scope="session")
def leg_desc():
    """The BIP leg description (joint names and limits)."""
    return load_description(ROBOT)


def make_context(desc, **kw) -> Context:
    kw.setdefault("bus_axes", ("ankle_1", "ankle_2", "knee", "hip", "platform_alpha", "platform_beta"))
    return Context.from_description(desc, axis_names=("motor1", "motor2", "motor3", "motor4"),
                                    summary={"robot": "bip_leg"}, **kw)


def small_block() -> SharedBlock:
    rl = RecordLayout(4)
    return SharedBlock(Layout(n_joints=4, n_axes=4, record_size=rl.size, mailbox_slots=8, reply_slots=16,
                              ring_slots=512, event_slots=64, traj_samples=20_000), create=True)


@pytest.fixture
def rig_factory(leg_desc):
    """Build rigs (fake loop + server thread + client); everything is torn down after the test."""
    made: list[Rig] = []
    contexts: list[zmq.Context] = []

    def make(server_kw: dict | None = None, loop_kw: dict | None = None, context: zmq.Context | None = None,
             ctx_kw: dict | None = None) -> Rig:
        if context is not None:
            contexts.append(context)
        block = small_block()
        loop = FakeLoop(block, **(loop_kw or {}))
        loop.thread.start()
        kw = {"reply_timeout": 0.5, "stats_period": 0.2, **(server_kw or {})}
        server = IoServer(block, make_context(leg_desc, **(ctx_kw or {})), LOCAL, context=context, **kw)
        stop = threading.Event()
        thread = threading.Thread(target=server.serve, args=(stop,), daemon=True)
        thread.start()
        client = Client(server.command_endpoint, timeout_s=2.0, retries=1)
        rig = Rig(block, loop, server, client, stop, thread)
        made.append(rig)
        return rig

    yield make
    for rig in made:
        rig.client.close()
        rig.stop.set()
        rig.thread.join(5)
        rig.loop.stop.set()
        rig.loop.thread.join(5)
        rig.server.close()
        rig.block.close()
    for context in contexts:
        context.term()


@pytest.fixture
def rig(rig_factory) -> Rig:
    return rig_factory()


@pytest.fixture
def daemon(tmp_path):
    """The bench leg (deploy/bipd.yaml) in lock-step: (process, client, tmp_path). Its loop runs on
    simulated time, back to back, while the test's client polls on the wall's clock: the watchdog is
    set far beyond any gap between polls, so a motion never ends on WATCHDOG however fast the host."""
    doc = yaml.safe_load((DEPLOY / "bipd.yaml").read_text())
    doc["robot"] = str(ROBOTS / "bip_leg.yaml")
    doc["stabilizer"] = str(ROBOTS / "bip_leg_stabilizer.yaml")
    doc["control"]["watchdog_s"] = 3600.0
    with booted(tmp_path, doc) as (proc, client, _):
        yield proc, client, tmp_path


@pytest.fixture
def bip2000_daemon(tmp_path):
    """The whole BIP 2000 (deploy/bip2000.yaml: 15 axes on the simulated bus) in lock-step."""
    doc = yaml.safe_load((DEPLOY / "bip2000.yaml").read_text())
    doc["robot"] = str(ROBOTS / "bip2000.yaml")
    with booted(tmp_path, doc, boot_s=300.0) as (proc, client, _):    # a cold Numba cache compiles the tree kernels
        yield proc, client, tmp_path


@pytest.fixture
def stepped_bip2000_daemon(tmp_path):
    """The whole BIP 2000, ``--stepped`` (the client owns the clock), no cycle log, shut down after:
    (process, client, telemetry endpoint, tmp_path)."""
    doc = yaml.safe_load((DEPLOY / "bip2000.yaml").read_text())
    doc["robot"] = str(ROBOTS / "bip2000.yaml")
    with booted(tmp_path, doc, clock="--stepped", boot_s=120.0, timeout_s=5.0, log=False, name="bip2000.yaml",
                shutdown=True) as (proc, client, tel_ep):
        yield proc, client, tel_ep, tmp_path
