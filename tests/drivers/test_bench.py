"""The benchmark's figures are what its buses did: cycle counts against the managing node's own
bus-cycle counter, rates bounded by this test's clock (the ≥10× target is measured, not asserted)."""
from __future__ import annotations

import time

import pytest

from drivers import bench
from drivers.config import parse_bus_config

pytestmark = pytest.mark.bench

SECONDS = 0.3


def test_figures_match_the_bus_cycles_run_and_the_time_taken(monkeypatch):
    """Each rate measurement runs n control periods, counted here as the managing node's bus
    cycles after boot divided by the cycles per period (2 ms / 400 µs); it lasts at least
    ``seconds`` (its loop) and at most the wall time this test measures around it, so its
    × real time lies in (n·period / wall, n·period / seconds)."""
    runs = []
    measure = bench._cycles_per_s

    def counted(config, plant, seconds, bus=None):
        bus = bus if bus is not None else bench.open_sim(config, plant)
        boot = bus.boot
        run = {"bus": bus}

        def boot_and_mark():
            boot()
            run["booted"] = bus.mn.bus_cycle
        bus.boot = boot_and_mark
        t0 = time.perf_counter()
        out = measure(config, plant, seconds, bus)
        run["wall"] = time.perf_counter() - t0
        runs.append(run)
        return out

    monkeypatch.setattr(bench, "_cycles_per_s", counted)
    t0 = time.perf_counter()
    result = bench.run_benchmark(SECONDS)
    total = time.perf_counter() - t0

    config = parse_bus_config(bench.BENCH_BUS)
    per_period = round(config.control_period_s / config.cycle_time_s)
    assert per_period == 5 == result["bus_cycles_per_control_cycle"]
    assert result["axes"] == sum(len(node["axes"]) for node in bench.BENCH_BUS["nodes"]) == 6
    assert result["faulted_axes"] == []

    keys = ("real_time_factor", "leg_plant_real_time_factor", "udp_in_process_real_time_factor",
            "udp_in_process_python_real_time_factor")
    assert len(runs) == len(keys)
    periods = []
    for run, key in zip(runs, keys):
        bus_cycles = run["bus"].mn.bus_cycle - run["booted"]
        assert bus_cycles % per_period == 0, key
        n = bus_cycles // per_period
        assert n >= 100, key
        sim_time = n * config.control_period_s
        assert sim_time / run["wall"] < result[key] < sim_time / SECONDS, key
        periods.append(n)
    assert result["control_cycles"] == periods[0]
    assert periods[0] / runs[0]["wall"] < result["control_cycles_per_s"] < periods[0] / SECONDS
    # the frame-cost loops (20000 answers, 20000 decodes) ran in the time the rate runs left
    assert 0 < 20000 * (result["pres_encode_us"] + result["pres_decode_us"]) * 1e-6 < total - sum(
        run["wall"] for run in runs)
