"""Benchmark of the stabilizer's compute, next to the thesis' B&R figure.

Two timings, median and p99 over ``samples`` calls, each one Numba dispatch:

* ``step``: one stabilizer step (virtual robot model, ground, polygon, walls,
  fields, admittance, weighted damped pseudo-inverse with the 4 x 4 Schur
  inverse, limits) -- :func:`stabilizer.stabilizer.step`;
* ``cycle``: the compute of one stabilizing cycle as the loop runs it --
  the physical model (:func:`models.chain.dynamics.update`: FK, Jacobians, A, C, G),
  the stabilizer step, and the axis control (PD on q_ref, qd_ref plus the G(q)
  feed-forward), fused in one njit call (:func:`stabilizing_cycle`).

The tilt follows the thesis' scenario (quintic 0 -> (10, 20) deg -> 0) and the
measured posture is the previous reference (perfect tracking), so every branch
the real cycle takes is exercised. Reference: the thesis' stabilizer on the tilt
bench, two models + 4 x 4 inverse + platform control, 273 us average on a
1.6 GHz Atom (§2.6, docs/conventions.md). Target: the whole cycle under 10 us.

``python -m stabilizer.bench [--json] [--samples N]``
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from numba import njit

from models.chain.dynamics import update
from models.chain.model import data_views

from stabilizer.stabilizer import P_DT, P_NV, Stabilizer, out_views, step

THESIS_STABILIZER_AVG_US = 273.0     # thesis §2.6.3 / docs/conventions.md, B&R X20CP1586 (Atom 1.6 GHz)
TARGET_CYCLE_US = 10.0
DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "deploy" / "robots" / "bip_leg_stabilizer.yaml"
WHOLE_BODY_CONFIG = DEFAULT_CONFIG.parent / "bip2000_stabilizer.yaml"
WHOLE_BODY_TILT_SCALE = 0.4          # the thesis' (10, 20) deg scenario scaled to what two feet can hold


@njit(cache=True)
def axis_control(kp, kd, q_ref, qd_ref, q, qd, G, tau):
    """Joint PD on the references plus the gravity feed-forward G(q) (docs/cycle.md)."""
    for i in range(q.shape[0]):
        tau[i] = kp[i] * (q_ref[i] - q[i]) + kd[i] * (qd_ref[i] - qd[i]) + G[i]


@njit(cache=True)
def stabilizing_cycle(mbuf, dbuf, p, s, inp, out, gains, tau):
    """Physical model update, stabilizer step, axis control: one cycle's compute.
    ``inp`` holds q_measured, tilt, acceleration (stabilizer layout); qd is taken
    as zero (quasi-static bench); gains = (kp[n], kd[n], qd[n])."""
    n = tau.shape[0]
    q = inp[0:n]
    kp, kd, qd = gains[0:n], gains[n:2 * n], gains[2 * n:3 * n]
    update(mbuf, dbuf, q, qd)
    status = step(p, s, inp, out)
    G = data_views(dbuf, n).G
    ov = out_views(out, n, int(p[P_NV]))
    axis_control(kp, kd, ov.q_ref, ov.qd_ref, q, qd, G, tau)
    return status


def _stats(ns: np.ndarray) -> dict[str, float]:
    us = ns / 1e3
    return {"median_us": float(np.median(us)), "p99_us": float(np.percentile(us, 99)),
            "min_us": float(us.min())}


def _tilts(samples: int, dt: float) -> np.ndarray:
    """(alpha, beta) of the thesis' scenario, repeated over the samples."""
    t = (np.arange(samples) * dt) % 14.0
    x = np.clip(np.where(t < 7.0, t, 14.0 - t) / 7.0, 0.0, 1.0)
    s = 10 * x ** 3 - 15 * x ** 4 + 6 * x ** 5
    return np.stack([np.radians(10.0) * s, np.radians(20.0) * s], axis=1)


def run_benchmark(samples: int = 20000, config: str | Path = DEFAULT_CONFIG) -> dict:
    """Time one stabilizer step and one stabilizing cycle (module docstring)."""
    st = Stabilizer.from_yaml(config)
    robot = st.robot
    n = robot.n
    mbuf, dbuf = robot.model.buf, robot.data.buf
    p, s, inp, out = st.params, st.state, st.inputs, st.out
    gains = np.concatenate([np.full(n, 800.0), np.full(n, 40.0), np.zeros(n)])
    tau = np.zeros(n)
    q0 = np.array([0.0, 0.25, -0.5, 0.25])
    tilts = _tilts(samples, float(p[P_DT]))
    clock = time.perf_counter_ns

    def timed(fn) -> np.ndarray:
        st.reset(q0)
        ns = np.empty(samples)
        fn(0)                                       # compiled / loaded before timing
        st.reset(q0)
        for k in range(samples):
            inp[:n] = st.q_ref                      # perfect tracking
            inp[n], inp[n + 1] = tilts[k]
            t0 = clock()
            fn(k)
            ns[k] = clock() - t0
        return ns

    step_ns = timed(lambda k: step(p, s, inp, out))
    cycle_ns = timed(lambda k: stabilizing_cycle(mbuf, dbuf, p, s, inp, out, gains, tau))
    res = {"robot": robot.model.name, "samples": samples,
           "step": _stats(step_ns), "cycle": _stats(cycle_ns),
           "thesis_bnr_stabilizer_avg_us": THESIS_STABILIZER_AVG_US,
           "target_cycle_us": TARGET_CYCLE_US}
    res["ratio_step_vs_thesis"] = res["step"]["median_us"] / THESIS_STABILIZER_AVG_US
    res["ratio_cycle_vs_thesis"] = res["cycle"]["median_us"] / THESIS_STABILIZER_AVG_US
    res["cycle_under_target"] = res["cycle"]["median_us"] < TARGET_CYCLE_US
    return res


def run_whole_body_benchmark(samples: int = 20000, config: str | Path = WHOLE_BODY_CONFIG) -> dict:
    """Median and p99 of one whole-robot stabilizer cycle (:func:`stabilizer.whole_body.step`:
    two tree kinematics, support polygon, two virtual robots, the task hierarchy over the
    15 joints), in double support, then left single support for the second half, on the
    thesis' tilt scenario scaled by WHOLE_BODY_TILT_SCALE, perfect tracking; next to the
    thesis' 273 us for the leg's stabilizer. ``walk_step``: the same cycles tracking a gait
    (:func:`stabilizer.whole_body.set_gait`: a third kinematics, the plan's polygon and walls,
    docs/walking.md), ``ratio_walk_vs_standing`` its median over the standing one's, same run.
    ``feet``: the feet room's cycle beside it (:func:`_time_feet`), ``ratio_feet_vs_walk`` its median
    over the stabilized walk step's. ``not_ok`` counts the cycles whose status was not OK."""
    from models.gait.plan import GaitParams
    from models.gait.wholebody import flexed_posture

    from stabilizer import whole_body as wb

    st = wb.WholeBodyStabilizer.from_yaml(config)
    q0 = flexed_posture(st.robot, GaitParams(flex=0.06))
    tilts = WHOLE_BODY_TILT_SCALE * _tilts(samples, st.config.period)
    standing, not_ok = _time_whole_body(st, q0, tilts, False)
    walking, not_ok_walk = _time_whole_body(st, q0, tilts, True)
    feet = _time_feet(st.robot, q0, samples, st.config.period)
    res = {"robot": st.robot.model.name, "samples": samples, "step": _stats(standing), "not_ok": not_ok,
           "walk_step": _stats(walking), "not_ok_walk": not_ok_walk, "feet": _stats(feet),
           "thesis_bnr_stabilizer_avg_us": THESIS_STABILIZER_AVG_US}
    res["ratio_step_vs_thesis"] = res["step"]["median_us"] / THESIS_STABILIZER_AVG_US
    res["ratio_walk_vs_standing"] = res["walk_step"]["median_us"] / res["step"]["median_us"]
    res["ratio_feet_vs_walk"] = res["feet"]["median_us"] / res["walk_step"]["median_us"]
    return res


def _time_feet(robot, q0: np.ndarray, samples: int, period: float) -> np.ndarray:
    """ns per cycle of the feet room (controller.daemon.loop.feet) on a walking robot: the cells' loads
    (stabilizer.feet.observe: CoPs, edge watch, slope), the plan's centres of pressure
    (models.tree.dynamics.sole_cops: the plan's kinematics and ground wrench, split between the soles)
    and the compliance toward them (stabilizer.feet.comply), both feet loaded on the plan's ground,
    their pressure rolling heel to toe."""
    from models.common.support import LEFT, RIGHT, SOLES
    from models.tree.dynamics import set_root, sole_cops
    from models.tree.model import TreeData

    from stabilizer.feet import CELLS, comply, new_state, observe
    from stabilizer.feet_config import FeetConfig, feet_geometry

    m, n = robot.model, robot.n
    g = feet_geometry(robot)
    p = FeetConfig(compliance=True).params(period)
    buf, plan = new_state(), TreeData(m)
    set_root(m.buf, plan.buf, m.root_names.index(SOLES[LEFT]))
    other = int(m.rootf[m.root_names.index(SOLES[RIGHT])])
    roll = 0.5 + 0.5 * np.sin(np.linspace(0.0, 20.0 * np.pi, samples))          # heel (0) to toe (1)
    loads = np.empty((samples, 2 * CELLS))
    front = g.cells[:, :, 0] > g.centre[:, None, 0]
    for f in range(2):
        loads[:, CELLS * f:CELLS * (f + 1)] = 200.0 * np.where(front[f], roll[:, None], 1.0 - roll[:, None]) + 10.0
    zero, ones, eye, up = np.zeros(n), np.ones(2), np.eye(3), np.array([0.0, 0.0, 9.81])
    target, cops, scratch, q_cmd, qd_cmd = np.zeros((2, 2)), np.zeros((2, 2)), np.zeros(n), np.zeros(n), np.zeros(n)
    gravity = m.gravity

    def cycle(x: np.ndarray) -> None:
        observe(p, buf, x, g.cells, ones, 0.0, up, eye, zero[:3], period)
        sole_cops(m.buf, plan.buf, q0, zero, zero, gravity, other, 0.5, 50.0, scratch, cops)
        target[:] = cops
        comply(p, buf, target, ones, 1.0, g.ankles, g.axes, q0, zero, m.qmin, m.qmax, True, period, q_cmd, qd_cmd)

    for _ in range(2):                              # compiled / loaded before timing
        cycle(loads[0])
    clock = time.perf_counter_ns
    ns = np.empty(samples)
    for k in range(samples):
        t0 = clock()
        cycle(loads[k])
        ns[k] = clock() - t0
    return ns


def _time_whole_body(st, q0: np.ndarray, tilts: np.ndarray, walking: bool) -> tuple[np.ndarray, int]:
    """ns per :func:`stabilizer.whole_body.step` over the tilts (double support, then left single
    support), tracking the gait q* = q0 at rest when ``walking``; and the count of non-OK statuses."""
    from models.common.support import DOUBLE, LEFT

    from stabilizer import whole_body as wb

    n, samples = st.n, len(tilts)
    args = (st.mbuf, st.dbuf, st.params, st.state, st.inputs, st.out)
    rest = np.zeros(n)
    clock = time.perf_counter_ns
    for _ in range(2):                              # compiled / loaded before timing
        st.reset(q0)
        if walking:
            wb.set_gait(st.params, st.state, q0, rest)
        st.step(q0, DOUBLE)
    st.reset(q0)
    ns = np.empty(samples)
    not_ok = 0
    for k in range(samples):
        st.in_q[:] = st.q_ref                       # perfect tracking
        st.inputs[n] = DOUBLE if 2 * k < samples else LEFT
        st.in_tilt[:2] = tilts[k]
        if walking:
            wb.set_gait(st.params, st.state, q0, rest)
        t0 = clock()
        status = wb.step(*args)
        ns[k] = clock() - t0
        not_ok += status != wb.OK
    return ns, not_ok


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m stabilizer.bench", description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    ap.add_argument("--samples", type=int, default=20000)
    ap.add_argument("--config", default=str(DEFAULT_CONFIG), help="stabilizer YAML file")
    args = ap.parse_args(argv)
    res = run_benchmark(args.samples, args.config)
    if args.json:
        print(json.dumps(res, indent=2))
        return
    print(f"{res['robot']}: {res['samples']} samples")
    for key, label in (("step", "stabilizer step"), ("cycle", "stabilizing cycle")):
        r = res[key]
        print(f"  {label:18s} median {r['median_us']:6.2f} us  p99 {r['p99_us']:6.2f} us")
    print(f"  thesis (B&R Atom 1.6 GHz, same work): {THESIS_STABILIZER_AVG_US:.0f} us average; "
          f"cycle ratio {res['ratio_cycle_vs_thesis']:.3f}, target < {TARGET_CYCLE_US:.0f} us: "
          f"{'met' if res['cycle_under_target'] else 'NOT met'}")


if __name__ == "__main__":
    main()
