"""Quick timing print: one full update of a kinematic tree (the 15-joint BIP 2000
by default) against Pinocchio's forwardKinematics + computeJointJacobians +
crba + nonLinearEffects + centerOfMass + jacobianCenterOfMass called from Python
on the same tree, with the same root, interleaved in rounds so that machine
drift hits both alike. Also a swap of rooting followed by an update.

    python -m models.tree_bench [--robot deploy/robots/bip2000.yaml] [--samples 20000]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from .bench import _percentiles, _time_calls
from .tree_dynamics import set_root, update
from .tree_robot import TreeRobot

ROBOT = Path(__file__).resolve().parents[1] / "deploy" / "robots" / "bip2000.yaml"


def run(robot_yaml: str | Path = ROBOT, samples: int = 20000, rounds: int = 10) -> dict:
    """Median / p99 / min (us) of ours and of Pinocchio's update for each root."""
    import pinocchio as pin

    from .tree_reference import build_tree

    robot = TreeRobot.from_yaml(robot_yaml)
    m, d = robot.model.buf, robot.data.buf
    rng = np.random.default_rng(0)
    qs = rng.uniform(robot.model.qmin, robot.model.qmax, (samples, robot.n))
    qds = rng.uniform(-1.0, 1.0, (samples, robot.n))
    g = np.array(robot.model.gravity)
    nroots = len(robot.model.root_names)
    per_round = samples // rounds
    out: dict = {"robot": robot.model.name, "n": robot.n, "samples": per_round * rounds,
                 "pinocchio_version": pin.__version__, "roots": {}}
    for r, root in enumerate(robot.model.root_names):
        set_root(m, d, r)
        update(m, d, qs[0], qds[0], g)                    # compiled or loaded before timing
        ref = build_tree(robot.description, root)
        pm, pd, perm = ref.model, ref.model.createData(), ref.perm
        pqs, pqds = np.ascontiguousarray(qs[:, perm]), np.ascontiguousarray(qds[:, perm])

        def ours(k: int) -> None:
            update(m, d, qs[k], qds[k], g)

        def pin_update(k: int) -> None:
            q, v = pqs[k], pqds[k]
            pin.forwardKinematics(pm, pd, q, v)
            pin.computeJointJacobians(pm, pd, q)
            pin.crba(pm, pd, q)
            pin.nonLinearEffects(pm, pd, q, v)
            pin.centerOfMass(pm, pd, q)
            pin.jacobianCenterOfMass(pm, pd, q)

        ours_ns, pin_ns = np.empty(per_round * rounds), np.empty(per_round * rounds)
        for k in range(rounds):
            _time_calls(ours, per_round, ours_ns, k * per_round)
            _time_calls(pin_update, per_round, pin_ns, k * per_round)
        res = {"update": _percentiles(ours_ns), "pinocchio": _percentiles(pin_ns)}
        res["ratio_median"] = res["update"]["median_us"] / res["pinocchio"]["median_us"]
        out["roots"][root] = res

    def swap(k: int) -> None:
        set_root(m, d, k % nroots)
        update(m, d, qs[k], qds[k], g)

    swap_ns = np.empty(per_round * rounds)
    _time_calls(swap, per_round * rounds, swap_ns, 0)
    out["swap_and_update"] = _percentiles(swap_ns)
    set_root(m, d, 0)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robot", default=str(ROBOT))
    ap.add_argument("--samples", type=int, default=20000)
    args = ap.parse_args(argv)
    res = run(args.robot, args.samples)
    print(f"{res['robot']} ({res['n']} joints), {res['samples']} samples, Pinocchio {res['pinocchio_version']}")
    for root, r in res["roots"].items():
        u, p = r["update"], r["pinocchio"]
        print(f"  root {root:<11} ours median {u['median_us']:6.2f} us (p99 {u['p99_us']:6.2f})   "
              f"Pinocchio median {p['median_us']:6.2f} us (p99 {p['p99_us']:6.2f})   ratio {r['ratio_median']:.2f}")
    s = res["swap_and_update"]
    print(f"  swap of rooting + update: median {s['median_us']:.2f} us (p99 {s['p99_us']:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
