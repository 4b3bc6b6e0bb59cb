"""The loop's compute against the kernels it calls, and its Python -> Numba dispatches per cycle.

In process, in lock-step on the simulated bus, under ``bipd bench loop``'s workload (the stabilizer
and the platform tilting, joint moves, or a gait file played under the whole-robot stabilizer, measured
from its first single support on: stabilized walking, the feet room's compliance and edge watch with it).
Two passes of ``cycles`` cycles each:

* compute: the cycle's time minus the bus' own (``bus.read``, ``write``, ``exchange``: the simulated
  drives' side, timed by wrapping those three methods), per cycle, median (a shared host's outliers
  aside; the means are reported too);
* kernels: every Numba kernel the loop's Python reaches (module globals of the controller's,
  models' and stabilizer's modules, and kernels held as attributes of the loop's rooms) replaced by
  a counting, timing wrapper (bench only: the kernels are compiled by then, so none is re-typed
  against a wrapper); kernel time is the sum of the wrapped calls' times per cycle (dispatch
  included), median.
"""
from __future__ import annotations

import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from numba.core.registry import CPUDispatcher

PACKAGES = ("controller.", "models.", "stabilizer.")
SETTLE_CYCLES = 200          # cycles into the workload before measuring


class _Counter:
    """Per-kernel call counts and times (ns) while installed."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.ns: dict[str, int] = {}
        self.undo: list[tuple[object, str, object]] = []

    def wrap(self, name: str, kernel):
        clock = time.perf_counter_ns
        self.calls.setdefault(name, 0)
        self.ns.setdefault(name, 0)

        def counted(*args):
            t0 = clock()
            out = kernel(*args)
            self.ns[name] += clock() - t0
            self.calls[name] += 1
            return out
        return counted

    def patch(self, owner, attr: str, value, name: str) -> None:
        self.undo.append((owner, attr, value))
        setattr(owner, attr, self.wrap(name, value))

    def install(self, loop) -> None:
        for mod_name, mod in list(sys.modules.items()):
            if mod is None or not mod_name.startswith(PACKAGES):
                continue
            for attr, obj in list(vars(mod).items()):
                if isinstance(obj, CPUDispatcher):
                    self.patch(mod, attr, obj, f"{obj.py_func.__module__}.{obj.py_func.__name__}")
        seen: set[int] = set()
        stack = [loop]
        while stack:                                   # kernels the rooms hold as attributes
            obj = stack.pop()
            if id(obj) in seen or not hasattr(obj, "__dict__"):
                continue
            seen.add(id(obj))
            for attr, value in list(vars(obj).items()):
                if isinstance(value, CPUDispatcher):
                    self.patch(obj, attr, value, f"{value.py_func.__module__}.{value.py_func.__name__}")
                elif type(value).__module__.startswith(PACKAGES):
                    stack.append(value)

    def remove(self) -> None:
        for owner, attr, value in reversed(self.undo):
            setattr(owner, attr, value)
        self.undo.clear()


def _bus_timer(bus) -> list[int]:
    """Wrap the bus' read, write and exchange (instance attributes) to add their ns to ``total[0]``."""
    total = [0]
    clock = time.perf_counter_ns
    for name in ("read", "write", "exchange"):
        method = getattr(bus, name)

        def timed(method=method):
            t0 = clock()
            method()
            total[0] += clock() - t0
        setattr(bus, name, timed)
    return total


def profile_loop(config: str | Path, cycles: int = 2000, stance: list[float] | None = None,
                 gait: Path | None = None) -> dict:
    """The figures of the module docstring for the daemon config ``config``: with a ``stance``, the
    stabilizer's workload from there; with a ``gait`` file, stabilized walking (the config names the
    whole-robot stabilizer); else the joint moves'."""
    from controller.daemon.codes import State
    from controller.daemon.config import load_daemon_config
    from controller.daemon.io.playback import load_trajectory
    from controller.daemon.loop.loop import ControlLoop
    from controller.daemon.loop.timing import LockstepClock
    from controller.daemon.run import open_plant_bus, shared_layout
    from controller.daemon.shm import Cmd, H, SharedBlock, post_command

    cfg = load_daemon_config(Path(config), backend="sim", lockstep=True)
    robot = cfg.robot()
    bus = open_plant_bus(cfg, robot)
    block = SharedBlock(shared_layout(cfg), create=True)
    try:
        loop = ControlLoop(cfg, block, bus, robot, cfg.stabilizer(), LockstepClock(cfg.loop.period))
        loop.stepped = False
        loop.start()
        loop.clock.start()
        token = [0]

        def run(n: int, until=None) -> None:
            for k in range(n):
                if k % 20 == 0:
                    block.header[H.HEARTBEATS] += 1
                loop.run_cycle()
                if until is not None and until():
                    return

        def command(cmd: Cmd, *args: float, cycles_after: int = 1) -> None:
            token[0] += 1
            post_command(block, token[0], cmd, np.array(args) if args else None)
            run(cycles_after)

        command(Cmd.ENABLE)
        run(2000, until=lambda: loop.state == State.HOLD)
        if stance is not None:
            command(Cmd.MOVE_JOINTS, *stance, 2.0)
            run(4000, until=lambda: loop.state == State.HOLD)
            command(Cmd.STABILIZER, 1.0)
            command(Cmd.PLATFORM, math.radians(10.0), math.radians(20.0), 7.0)
        elif gait is not None:                     # as the I/O side loads a file, then the stabilizer over it
            m = robot.model
            traj, support = load_trajectory(gait, m.joint_names, m.qmin, m.qmax, m.vmax, loop.period,
                                            with_support=True, max_samples=block.traj.shape[0])
            block.traj[:len(traj)] = traj
            block.support[:len(traj)] = -1.0 if support is None else support
            block.header[H.TRAJ_LEN] = len(traj)
            command(Cmd.RUN_BUFFER)
            command(Cmd.STABILIZER, 1.0)
            run(len(traj), until=lambda: loop.est.phase in (0.0, 1.0))     # its first single support
        else:                                      # every joint +10 % of its range about its middle
            m = robot.model
            posture = [0.5 * (lo + hi) + 0.1 * (hi - lo) for lo, hi in zip(m.qmin, m.qmax)]
            command(Cmd.MOVE_JOINTS, *posture, 2.0 * (cycles + SETTLE_CYCLES) * loop.period)
        run(SETTLE_CYCLES)
        bus_ns = _bus_timer(bus)
        compute = []
        for _ in range(cycles):
            before, t0 = bus_ns[0], time.perf_counter_ns()
            run(1)
            compute.append((time.perf_counter_ns() - t0 - (bus_ns[0] - before)) / 1e3)
        compute_state = State(loop.state).name     # where the compute pass ended (a walk still MOVING?)
        counter = _Counter()
        counter.install(loop)
        kernels = []
        try:
            for _ in range(cycles):
                before = sum(counter.ns.values())
                run(1)
                kernels.append((sum(counter.ns.values()) - before) / 1e3)
        finally:
            counter.remove()
        state = State(loop.state).name
    finally:
        bus.close()
        block.close()
    calls = sum(counter.calls.values())
    compute_us, kernels_us = statistics.median(compute), statistics.median(kernels)
    per_kernel = sorted(((k, c / cycles) for k, c in counter.calls.items() if c), key=lambda kv: -kv[1])
    return {"cycles": cycles, "state": state, "compute_state": compute_state, "compute_us": compute_us, "compute_mean_us": statistics.fmean(compute),
            "kernels_us": kernels_us, "kernels_mean_us": statistics.fmean(kernels),
            "ratio_compute_vs_kernels": compute_us / kernels_us if kernels_us else None,
            "dispatches_per_cycle": calls / cycles, "kernels_per_cycle": dict(per_kernel)}
