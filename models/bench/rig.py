"""Benchmark of the Stewart-Gough rig: inverse kinematics + inverse dynamics of all six
legs per call (Staicu 2008, eq. 1-20), median and p99, against a 400 us POWERLINK cycle
(target: well under 10 us).

``python -m models.bench.rig [RIG_YAML] [--samples N]`` prints two figures: one call
from Python (what a Python cycle pays, argument boxing included) and one call inside a
Numba loop (the kernel alone, what a compiled cycle pays).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

from models.bench.chain import _percentiles, _time_calls
from models.common.errors import ModelError, WorkspaceError
from models.rig.stewart import STATUS_NAMES, StewartData, StewartModel, staicu_motion
from models.rig.dynamics import inverse_dynamics

DEFAULT_RIG = Path(__file__).resolve().parents[2] / "deploy" / "rigs" / "stewart_staicu2008.yaml"
BUS_CYCLE_US = 400.0
TARGET_US = 10.0


@njit(cache=True)
def _kernel_loop(mbuf, dbuf, xs, xds, xdds):
    """Calls back to back inside compiled code; returns the first status other than OK (or OK)."""
    for k in range(xs.shape[0]):
        status = inverse_dynamics(mbuf, dbuf, xs[k], xds[k], xdds[k])
        if status != 0:
            return status
    return 0


def run(rig_yaml: str | Path = DEFAULT_RIG, samples: int = 20000, blocks: int = 200) -> dict:
    """Per-call figures over ``samples`` states of the paper's test motion (eq. 5-6)."""
    model, data = StewartModel.from_yaml(rig_yaml), StewartData()
    ts = np.linspace(0.0, model.desc.motion.duration, samples, endpoint=False)
    states = [staicu_motion(model.desc, t) for t in ts]
    xs, xds, xdds = (np.ascontiguousarray([s[i] for s in states]) for i in range(3))
    m, d = model.buf, data.buf
    status = inverse_dynamics(m, d, xs[0], xds[0], xdds[0])
    if status != 0:
        raise WorkspaceError(status, f"{rig_yaml}: motion: the test motion leaves the rig's "
                             f"workspace ({STATUS_NAMES[status]})")
    out = np.empty(samples)

    def one(k: int) -> None:
        inverse_dynamics(m, d, xs[k], xds[k], xdds[k])

    _time_calls(one, samples, out, 0)
    python = _percentiles(out)
    # compiled: blocks of calls in one Numba loop, per-call time = block time / block size
    per = samples // blocks
    _kernel_loop(m, d, xs[:per], xds[:per], xdds[:per])
    block_ns = np.empty(blocks)
    for b in range(blocks):
        sl = slice(b * per, (b + 1) * per)
        t0 = time.perf_counter_ns()
        status = _kernel_loop(m, d, xs[sl], xds[sl], xdds[sl])
        if status != 0:
            raise WorkspaceError(status, f"{rig_yaml}: motion: the test motion leaves the rig's "
                             f"workspace ({STATUS_NAMES[status]})")
        block_ns[b] = (time.perf_counter_ns() - t0) / per
    kernel = _percentiles(block_ns)
    return {"rig": model.name, "samples": samples, "python_call": python,
            "kernel_in_numba_loop": kernel, "target_us": TARGET_US, "bus_cycle_us": BUS_CYCLE_US}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m models.bench.rig", description=__doc__.splitlines()[0])
    p.add_argument("rig", nargs="?", default=str(DEFAULT_RIG))
    p.add_argument("--samples", type=int, default=20000)
    a = p.parse_args(argv)
    try:
        r = run(a.rig, a.samples)
    except ModelError as e:
        print(e, file=sys.stderr)
        return 2
    py, kn = r["python_call"], r["kernel_in_numba_loop"]
    print(f"{r['rig']}: IK + inverse dynamics, six legs, {r['samples']} states of the test motion")
    print(f"  one call from Python     median {py['median_us']:.2f} us  p99 {py['p99_us']:.2f} us")
    print(f"  per call in a Numba loop median {kn['median_us']:.2f} us  (median over blocks of "
          f"{r['samples'] // 200} calls: the kernel alone)")
    print(f"  target < {TARGET_US:g} us, {100 * py['p99_us'] / BUS_CYCLE_US:.1f} % of a "
          f"{BUS_CYCLE_US:g} us bus cycle at the Python p99")
    return 0


if __name__ == "__main__":
    sys.exit(main())
