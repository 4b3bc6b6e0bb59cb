"""Time the generated closed forms against the recursive engine (printed, not a test).

``python -m models.codegen.timing [NAME ...]`` (default: the bench leg and the 6-DOF
BIP 2000 leg). For each robot, the median cost of one evaluation of

* ``generated``: the generated fused kernel ``dynamics`` (A, C, G);
* ``recursive subset``: the recursive engine restricted to the same outputs (frames,
  body CoGs and their Jacobians, A, ∂A/∂q, C, G; :func:`recursive_acg`);
* ``recursive update``: the engine's full cycle call :func:`models.chain.dynamics.update`
  (also the tool Jacobian, the CoG and its Jacobian, h, friction);

measured twice, in interleaved rounds: inside Numba (a compiled loop of ``INNER``
calls less the loop's own call, per-call median over blocks: the kernels' own cost) and
per call from Python (what the cycle pays, Numba's dispatch included). Warm: every
kernel runs before timing.
"""
from __future__ import annotations

import argparse
import importlib
import time

import numpy as np
from numba import njit

from models.chain.dynamics import christoffel_coriolis, gravity_vector, inertia_derivatives, inertia_matrix, update
from models.chain.kinematics import body_coms, body_inertias, com_jacobians, forward_kinematics
from models.chain.model import data_views, model_views
from models.chain.robot import Robot
from models.codegen import ROOT

INNER = 100   # short blocks (~0.2 ms at most): seldom preempted on a shared host


@njit(cache=True)
def recursive_acg(mbuf, dbuf, q, qd):
    """The recursive engine's A, C, G and nothing else (no tool Jacobian, no chain CoG)."""
    mv = model_views(mbuf)
    mdh, jtype, mass, com_l, inertia, tool = mv.mdh, mv.jtype, mv.mass, mv.com, mv.inertia, mv.tool
    g, arm = mv.gravity, mv.armature
    n = q.shape[0]
    dv = data_views(dbuf, n)
    T, pc, Iw, Jb, A, dA, C, G, work = dv.T, dv.pc, dv.Iw, dv.Jb, dv.A, dv.dA, dv.C, dv.G, dv.work
    forward_kinematics(mdh, jtype, tool, q, T)
    body_coms(T, com_l, pc)
    com_jacobians(T, jtype, pc, Jb)
    body_inertias(T, inertia, Iw)
    inertia_matrix(mass, Iw, Jb, arm, A)
    inertia_derivatives(T, jtype, mass, pc, Iw, Jb, dA, work)
    christoffel_coriolis(dA, qd, C)
    gravity_vector(mass, Jb, g, G)


@njit(cache=True)
def _loop_generated(kernel, qs, qds, g, A, C, G, start, count):
    """``count`` calls; the returned sum of outputs keeps every call live."""
    acc = 0.0
    for k in range(start, start + count):
        kernel(qs[k], qds[k], g, A, C, G)
        acc += A[0, 0] + C[-1, 0] + G[-1]
    return acc


@njit(cache=True)
def _loop_recursive(kernel, mbuf, dbuf, qs, qds, start, count, out):
    """The same for a recursive kernel, ``out`` its C (n x n) in the Data buffer."""
    acc = 0.0
    for k in range(start, start + count):
        kernel(mbuf, dbuf, qs[k], qds[k])
        acc += out[-1, 0]
    return acc


def _median_us(samples_ns: list[int], per: int) -> float:
    return float(np.median(samples_ns)) / per / 1e3


def measure(name: str, blocks: int = 2000, calls: int = 40000, rounds: int = 10) -> dict[str, float]:
    """Median µs per evaluation, in Numba and from Python, for one generated robot."""
    mod = importlib.import_module(f"models.generated.{name}")
    robot = Robot.from_yaml(ROOT / mod.SOURCE)
    n = robot.n
    m, d = robot.model.buf, robot.data.buf
    rng = np.random.default_rng(0)
    size = max(blocks * INNER, calls)
    qs = rng.uniform(robot.model.qmin, robot.model.qmax, (size, n))
    qds = rng.uniform(-1.0, 1.0, (size, n))
    g = np.array(robot.description.gravity)
    A, C, G = np.zeros((n, n)), np.zeros((n, n)), np.zeros(n)
    clock = time.perf_counter_ns

    cases = {
        "generated": (lambda s, c: _loop_generated(mod.dynamics, qs, qds, g, A, C, G, s, c),
                      lambda k: mod.dynamics(qs[k], qds[k], g, A, C, G)),
        "recursive subset": (lambda s, c: _loop_recursive(recursive_acg, m, d, qs, qds, s, c, robot.data.C),
                             lambda k: recursive_acg(m, d, qs[k], qds[k])),
        "recursive update": (lambda s, c: _loop_recursive(update, m, d, qs, qds, s, c, robot.data.C),
                             lambda k: update(m, d, qs[k], qds[k])),
    }
    for loop, single in cases.values():
        loop(0, 1)
        single(0)                                    # compiled (or loaded) before timing
    inner: dict[str, list[int]] = {label: [] for label in cases}
    one: dict[str, list[int]] = {label: [] for label in cases}
    per_round_blocks, per_round_calls = blocks // rounds, calls // rounds
    for r in range(rounds):                          # interleaved: drift hits all alike
        for label, (loop, single) in cases.items():
            for b in range(r * per_round_blocks, (r + 1) * per_round_blocks):
                t0 = clock()
                loop(b * INNER, 0)                   # the loop's own call, subtracted
                t1 = clock()
                loop(b * INNER, INNER)
                inner[label].append(clock() - t1 - (t1 - t0))
            for k in range(r * per_round_calls, (r + 1) * per_round_calls):
                t0 = clock()
                single(k)
                one[label].append(clock() - t0)
    out: dict[str, float] = {}
    for label in cases:
        out[f"{label} (in Numba)"] = _median_us(inner[label], INNER)
        out[f"{label} (from Python)"] = _median_us(one[label], 1)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m models.codegen.timing", description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", default=["bip_leg", "bip2000_leg6"],
                   help="modules of models/generated (default: bip_leg bip2000_leg6)")
    a = p.parse_args(argv)
    for name in a.names:
        print(f"{name}: median µs per evaluation of A, C, G")
        for label, us in measure(name).items():
            print(f"  {label:30s} {us:7.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
