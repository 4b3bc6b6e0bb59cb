"""Benchmark of the ``sim`` backend: simulated control cycles per second with the leg + platform.

Six axes on three two-axis drives, CSP, five 400 µs POWERLINK cycles per 2 ms control cycle;
the ratio to real time is cycles/s ÷ 500. Measured twice: on independent motor inertias
(InertiaPlant: the bus and drives alone) and on the leg plant (the leg's dynamics through the
transmissions plus the platform, as the daemon and the lock-step tests run it). Also the
per-frame cost of a PRes: the CN's answer to a PReq and the MN's decode. Then the ``udp``
backend's protocol on the leg plant with its server in this process
(:func:`~drivers.backends.sim.open_in_process`: the datagrams and code of the daemon and ``bipd
hil``, without the socket and second process), with the Numba steady-state paths and, as the
reference measured in the same run, without them. Run ``python -m drivers.bench [--json]``.
"""
from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from drivers.backends.sim import open_sim
from drivers.backends.sim import open_in_process
from drivers.config import parse_bus_config
from drivers.powerlink import frames
from drivers.pdo import TPDO

BENCH_BUS = {
    "backend": "sim",
    "nodes": [
        {"node_id": 1, "axes": [{"name": "ankle_1", "channel": 0}, {"name": "ankle_2", "channel": 1}]},
        {"node_id": 2, "axes": [{"name": "knee", "channel": 0}, {"name": "hip", "channel": 1}]},
        {"node_id": 3, "axes": [{"name": "platform_alpha", "channel": 0},
                                {"name": "platform_beta", "channel": 1}]},
    ],
}


def _frame_costs(config, repeat: int) -> tuple[float, float]:
    """(encode µs, decode µs) of one two-axis PRes on a booted bus: the CN answering a PReq (the drive
    kernel has mapped the TPDO into the frame at its step; NMT status, flags and FCS are written
    here), and the MN validating it and unpacking the TPDO."""
    bus = open_sim(config)
    bus.boot()
    node = bus.network.nodes[config.nodes[0].node_id]
    preq = bus.mn.records[node.node_id].preq.view
    answer = node.on_preq
    t0 = time.perf_counter()
    for _ in range(repeat):
        answer(preq)
    t1 = time.perf_counter()
    pres = node.pres.view
    unpack = TPDO.struct.unpack_from
    for _ in range(repeat):
        frames.read_pres(pres)
        unpack(pres, frames.PDO_OFFSET)
    t2 = time.perf_counter()
    bus.close()
    return (t1 - t0) / repeat * 1e6, (t2 - t1) / repeat * 1e6


LEG_ROBOT = Path(__file__).resolve().parents[1] / "deploy" / "robots" / "bip_leg.yaml"


def _leg_plant(config):
    from models import Robot

    from drivers.sim.plant_leg import LegPlant
    robot = Robot.from_yaml(LEG_ROBOT)
    m = robot.model
    q0 = np.clip(np.zeros(robot.n), m.qmin + 0.04, m.qmax - 0.04)      # off the joint stops
    return LegPlant.from_config(config, robot, q0=q0)


def _cycles_per_s(config, plant, seconds: float, bus=None) -> tuple[float, int, list[str]]:
    bus = bus if bus is not None else open_sim(config, plant)
    bus.boot()
    for axis in bus.axes.values():
        axis.enable()
    start = bus.target_position.copy()
    period = config.control_period_s
    cycles = 0
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while time.perf_counter() < deadline:
        for _ in range(100):
            bus.read()
            bus.target_position[:] = start + 0.2 * math.sin(2 * math.pi * 0.5 * cycles * period)
            bus.write()
            bus.exchange()
            cycles += 1
    elapsed = time.perf_counter() - t0
    bus.read()
    faulted = [a.name for a in bus.axes.values() if a.fault_code]
    bus.close()
    return cycles / elapsed, cycles, faulted


def run_benchmark(seconds: float = 2.0) -> dict:
    """Run the six-axis simulated bus for about ``seconds`` on each plant; cycles/s,
    × real time, frame costs."""
    config = parse_bus_config(BENCH_BUS)
    period = config.control_period_s
    rate, cycles, faulted = _cycles_per_s(config, None, seconds)
    leg_rate, _, leg_faulted = _cycles_per_s(config, _leg_plant(config), seconds)
    encode_us, decode_us = _frame_costs(config, 20000)
    udp_rates = {}
    for numba in (True, False):
        bus = open_in_process(config, _leg_plant(config), fast=numba)
        udp_rates[numba], _, udp_faulted = _cycles_per_s(config, None, seconds, bus)
        faulted += udp_faulted
    return {
        "axes": len(config.axes),
        "bus_cycles_per_control_cycle": config.cycles_per_control,
        "control_cycles": cycles,
        "control_cycles_per_s": rate,
        "real_time_factor": rate * period,
        "leg_plant_control_cycles_per_s": leg_rate,
        "leg_plant_real_time_factor": leg_rate * period,
        "pres_encode_us": encode_us,
        "pres_decode_us": decode_us,
        "udp_in_process_real_time_factor": udp_rates[True] * period,
        "udp_in_process_python_real_time_factor": udp_rates[False] * period,
        "faulted_axes": faulted + leg_faulted,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Benchmark the simulated POWERLINK bus.")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    result = run_benchmark(args.seconds)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['axes']} axes, {result['bus_cycles_per_control_cycle']} bus cycles per control cycle")
    print(f"control cycles/s : {result['control_cycles_per_s']:.0f} "
          f"({result['real_time_factor']:.1f}x real time) on motor inertias (bus and drives alone)")
    print(f"control cycles/s : {result['leg_plant_control_cycles_per_s']:.0f} "
          f"({result['leg_plant_real_time_factor']:.1f}x real time) on the leg plant + platform")
    print(f"PRes encode      : {result['pres_encode_us']:.2f} µs")
    print(f"PRes decode      : {result['pres_decode_us']:.2f} µs")
    fast, slow = result["udp_in_process_real_time_factor"], result["udp_in_process_python_real_time_factor"]
    print(f"udp, in process  : {fast:.1f}x real time on the leg plant with the Numba steady-state paths, "
          f"{slow:.1f}x on the Python paths ({fast / slow:.2f}x)")


if __name__ == "__main__":
    main()
