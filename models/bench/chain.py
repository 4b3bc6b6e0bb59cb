"""Benchmark of one full model update against Pinocchio, measured in one run.

Figures: median and p99 of one fused :func:`models.chain.dynamics.update` call for a
robot (FK, J, CoG J, A, C, G), of the Pinocchio equivalent called from Python
(forwardKinematics + computeJointJacobians + crba + nonLinearEffects +
centerOfMass + jacobianCenterOfMass), their ratio (target <= 0.5), the thesis'
B&R figure (FGM + inverse dynamics, 161.6 us average on a 1.6 GHz Atom), and the
first-call cost in a fresh process: cold (JIT compile into an empty cache) and
warm (load from the on-disk cache).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from models.chain.dynamics import update
from models.chain.robot import Robot

THESIS_FGM_DYN_AVG_US = 161.6   # thesis §2.6.2, Figure 35: walking playback, FGM + inverse dynamics (text: 161)

_FIRST_CALL = """
import time, numpy as np
t0 = time.perf_counter()
from models import Robot
from models.chain.dynamics import update
r = Robot.from_yaml({path!r})
t1 = time.perf_counter()
update(r.model.buf, r.data.buf, np.zeros(r.n), np.zeros(r.n))
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""


def _percentiles(samples_ns: np.ndarray) -> dict[str, float]:
    us = samples_ns / 1e3
    return {"median_us": float(np.median(us)), "p99_us": float(np.percentile(us, 99)),
            "min_us": float(us.min())}


def _time_calls(fn: Callable[[int], None], count: int, out: np.ndarray, start: int) -> None:
    """Time fn(start), ..., fn(start + count - 1) one by one into out[start:]."""
    clock = time.perf_counter_ns
    for k in range(start, start + count):
        t0 = clock()
        fn(k)
        out[k] = clock() - t0


def _states(robot: Robot, count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    q = rng.uniform(robot.model.qmin, robot.model.qmax, (count, robot.n))
    qd = rng.uniform(-1.0, 1.0, (count, robot.n))
    return q, qd


def first_call_seconds(robot_yaml: str | Path) -> dict[str, float]:
    """Import + load and first ``update`` call in fresh processes: once with an
    empty Numba cache (compile) and once re-using it (cache load)."""
    code = _FIRST_CALL.format(path=str(robot_yaml))
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bipd-numba-") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        for label in ("cold", "cached"):
            res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                 text=True, check=True)
            load_s, call_s = (float(x) for x in res.stdout.split())
            out[f"first_call_{label}_s"] = call_s
            out[f"import_and_load_{label}_s"] = load_s
    return out


def run(robot_yaml: str | Path, samples: int = 20000, rounds: int = 10,
        first_call: bool = True, progress: Callable[[str], None] | None = None) -> dict:
    """Measure ours and Pinocchio's full update, interleaved in ``rounds`` blocks so
    that machine drift hits both alike."""
    say = progress or (lambda _msg: None)
    robot = Robot.from_yaml(robot_yaml)
    m, d = robot.model.buf, robot.data.buf
    qs, qds = _states(robot, samples)
    update(m, d, qs[0], qds[0])                           # compiled or loaded before timing

    try:
        import pinocchio as pin

        from models.chain.reference import build
    except ImportError:
        pin = None
    if pin is not None:
        pmodel, _ = build(robot.description)
        pdata = pmodel.createData()

        def pin_update(k: int) -> None:
            q, v = qs[k], qds[k]
            pin.forwardKinematics(pmodel, pdata, q, v)
            pin.computeJointJacobians(pmodel, pdata, q)
            pin.crba(pmodel, pdata, q)
            pin.nonLinearEffects(pmodel, pdata, q, v)
            pin.centerOfMass(pmodel, pdata, q)
            pin.jacobianCenterOfMass(pmodel, pdata, q)

    def ours(k: int) -> None:
        update(m, d, qs[k], qds[k])

    per_round = samples // rounds
    ours_ns = np.empty(per_round * rounds)
    pin_ns = np.empty(per_round * rounds)
    for r in range(rounds):
        say(f"round {r + 1}/{rounds}")
        _time_calls(ours, per_round, ours_ns, r * per_round)
        if pin is not None:
            _time_calls(pin_update, per_round, pin_ns, r * per_round)

    result: dict = {"robot": robot.model.name, "n": robot.n, "samples": int(per_round * rounds),
                    "update": _percentiles(ours_ns),
                    "thesis_bnr_fgm_dyn_avg_us": THESIS_FGM_DYN_AVG_US}
    result["ratio_vs_thesis"] = result["update"]["median_us"] / THESIS_FGM_DYN_AVG_US
    if pin is not None:
        result["pinocchio"] = _percentiles(pin_ns)
        result["pinocchio"]["version"] = pin.__version__
        result["ratio_vs_pinocchio"] = {
            "median": result["update"]["median_us"] / result["pinocchio"]["median_us"],
            "p99": result["update"]["p99_us"] / result["pinocchio"]["p99_us"],
            "target": 0.5}
    else:
        result["pinocchio"] = None
        result["ratio_vs_pinocchio"] = None
    if first_call:
        say("first call in fresh processes (cold compile, then cache load)")
        result.update(first_call_seconds(robot_yaml))
    return result
