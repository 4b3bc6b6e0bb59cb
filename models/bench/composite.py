"""Quick timing print: one composite update (:func:`models.composite.models.composite_update`,
Gastebois 2017 ch. 3) against one recursive tree update
(:func:`models.tree.dynamics.update`) of the same robot standing on each sole,
interleaved in rounds so that machine drift hits both alike. Both give frames
and their Jacobians, CoGs and their Jacobians, A, G and C (Christoffel); the
tree update also gives C qd + G by Newton-Euler and the friction torque.

    python -m models.bench.composite [--robot deploy/robots/bip2000.yaml] [--samples 20000]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from models.bench.chain import _percentiles, _time_calls
from models.composite.models import composite_setup, composite_update, set_stance
from models.tree.dynamics import set_root, update
from models.tree.robot import TreeRobot

ROBOT = Path(__file__).resolve().parents[2] / "deploy" / "robots" / "bip2000.yaml"


def run(robot_yaml: str | Path = ROBOT, samples: int = 20000, rounds: int = 10) -> dict:
    """Median / p99 / min (us) of the composite and of the tree update per stance."""
    robot = TreeRobot.from_yaml(robot_yaml)
    rng = np.random.default_rng(0)
    qs = rng.uniform(robot.model.qmin, robot.model.qmax, (samples, robot.n))
    qds = rng.uniform(-1.0, 1.0, (samples, robot.n))
    g = np.array(robot.model.gravity)
    per_round = samples // rounds
    out: dict = {"robot": robot.model.name, "n": robot.n, "samples": per_round * rounds, "stances": {}}
    m, d = robot.model.buf, robot.data.buf
    cm, plan, cd = composite_setup(robot.description)
    for s, stance in enumerate(plan.stance_names):
        set_stance(plan.buf, cd.buf, s)
        set_root(m, d, robot.model.root_names.index(stance))
        update(m, d, qs[0], qds[0], g)

        def tree(k: int) -> None:
            update(m, d, qs[k], qds[k], g)

        def composite(k: int) -> None:
            composite_update(cm.buf, plan.buf, cd.buf, qs[k], qds[k], g)

        tree_ns, comp_ns = np.empty(per_round * rounds), np.empty(per_round * rounds)
        for k in range(rounds):
            _time_calls(composite, per_round, comp_ns, k * per_round)
            _time_calls(tree, per_round, tree_ns, k * per_round)
        res = {"composite": _percentiles(comp_ns), "tree": _percentiles(tree_ns)}
        res["ratio_median"] = res["composite"]["median_us"] / res["tree"]["median_us"]
        out["stances"][stance] = res
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robot", default=str(ROBOT))
    ap.add_argument("--samples", type=int, default=20000)
    args = ap.parse_args(argv)
    res = run(args.robot, args.samples)
    print(f"{res['robot']} ({res['n']} joints), {res['samples']} samples")
    for stance, r in res["stances"].items():
        c, t = r["composite"], r["tree"]
        print(f"  stance {stance:<11} composite median {c['median_us']:6.2f} us (p99 {c['p99_us']:6.2f})   "
              f"tree median {t['median_us']:6.2f} us (p99 {t['p99_us']:6.2f})   ratio {r['ratio_median']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
