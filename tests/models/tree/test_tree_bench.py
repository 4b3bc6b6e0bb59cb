"""The whole-robot benchmark times what it claims: every path computes what the
recursive engine computes (Pinocchio's figures checked independently in
test_tree_pinocchio), the paths run in interleaved rounds over every state, and
its figures are the statistics of the samples it recorded. No timed assertion."""
from __future__ import annotations

import numpy as np
import pytest

from models.bench import tree as tree_bench
from models.bench.tree import BenchPath, register, run, states
from models.tree.floating import FloatingRobot

from tests.assertions import close_within
from tests.models.trees import BIP2000, bip2000

pytestmark = pytest.mark.bench

RTOL = 1e-9
REAL_PATHS = tuple(tree_bench.PATHS)


close = close_within(RTOL)


@pytest.mark.parametrize("name", REAL_PATHS)
def test_the_floating_case_computes_what_the_engine_computes(name):
    """On the floating base, the recursive paths and Pinocchio's free flyer (mapped back to our
    coordinates, models.tree.floating) leave the engine's A, C qd + G, CoG Jacobian and motion axes;
    the composite models do not stand on it."""
    robot, engine = FloatingRobot.from_yaml(BIP2000), FloatingRobot.from_yaml(BIP2000)
    st = states(robot, 7, seed=4)
    path = tree_bench.PATHS[name].setup(robot, (0,), st)
    if name.startswith(("composite", "generated")):
        assert path is None
        return
    for k in range(len(st.q)):
        path.update(k)
        got = path.results(k)
        d = engine.update(st.q[k], st.qd[k], st.g)
        assert {"A", "h", "Jcom", "S"} <= set(got)
        for key, value in got.items():
            close(value, {"A": d.A, "h": d.h, "Jcom": d.Jcom[0], "S": d.S.T, "C": d.C}[key])


@pytest.mark.parametrize("name", REAL_PATHS)
def test_every_path_computes_what_the_engine_computes(name):
    """Each path, on each root and on the swap case (roots in turn) it covers,
    leaves after call k the engine's A, CoG Jacobian and whichever of C qd + G,
    G, C and the motion axes (Pinocchio's joint Jacobians) it gives, at state k
    and root roots[k % len], the swap between soles included. Only the composite
    models (and the generated chains coupled by them) skip a case: the pelvis and
    the swap through it."""
    robot, engine = bip2000(), bip2000()
    st = states(robot, 7, seed=3)
    nr = len(robot.model.root_names)
    covered = []
    for roots in [(r,) for r in range(nr)] + [tuple(range(nr)), tuple(range(1, nr))]:
        path = tree_bench.PATHS[name].setup(robot, roots, st)
        if path is None:
            continue
        covered.append(roots)
        for k in range(len(st.q)):
            path.update(k)
            got = path.results(k)
            engine.set_root(robot.model.root_names[roots[k % len(roots)]])
            d = engine.update(st.q[k], st.qd[k], st.g)
            expected = {"A": d.A, "h": d.h, "G": d.G, "Jcom": d.Jcom[0], "S": d.S.T, "C": d.C}
            assert {"A", "Jcom"} <= set(got) <= set(expected)
            for key, value in got.items():
                close(value, expected[key])
    on_soles = name in ("composite", "generated_composite")
    assert covered == ([(1,), (2,), (1, 2)] if on_soles else [(0,), (1,), (2,), (0, 1, 2), (1, 2)])


def _fake(log: list, label: str):
    def setup(robot, roots, st):
        log.append((label, "setup", roots))
        return BenchPath(lambda k: log.append((label, k)), lambda k: {})
    return setup


def test_paths_run_interleaved_over_every_state(monkeypatch):
    """Rounds alternate the paths (A B A B ...), each call gets the next state,
    each case gets its rooting (the swap case all of them), and a path's ratio is
    taken against the reference it names."""
    log: list = []
    monkeypatch.setattr(tree_bench, "PATHS", {})
    register("a", _fake(log, "a"), "fake a", "b")
    register("b", _fake(log, "b"), "fake b")
    res = run(BIP2000, samples=8, rounds=4)
    calls = [e for e in log if e[1] != "setup"]
    setups = [e for e in log if e[1] == "setup"]
    per_case = [("a", 0), ("b", 0)] + [(p, k) for r in range(4) for p in "ab" for k in (2 * r, 2 * r + 1)]
    assert calls == per_case * 6                    # warm-up call, then the interleaved rounds
    assert [e[2] for e in setups] == [(0,), (0,), (1,), (1,), (2,), (2,), (0, 1, 2), (0, 1, 2), (1, 2), (1, 2),
                                      (0,), (0,)]    # the floating base: one root, the free flyer's
    assert list(res["cases"]) == ["pelvis", "left_sole", "right_sole", "swap", "swap_soles", "floating"]
    for c in res["cases"].values():
        assert c["ratios"]["a"]["reference"] == "b" and "b" not in c["ratios"]


def test_a_path_that_cannot_load_is_reported_not_timed(monkeypatch):
    def missing(robot, roots, st):
        raise ImportError("No module named 'pinocchio'")
    log: list = []
    monkeypatch.setattr(tree_bench, "PATHS", {})
    register("a", _fake(log, "a"), "fake a", "gone")
    register("gone", missing, "needs an optional package")
    res = run(BIP2000, samples=4, rounds=2)
    assert "No module named 'pinocchio'" in res["unavailable"]["gone"]
    for c in res["cases"].values():
        assert list(c["paths"]) == ["a"] and c["ratios"] == {}


def test_figures_are_the_statistics_of_the_recorded_samples():
    """Medians, p99 and minima are numpy's over the recorded samples, the ratios
    their quotients, and every sample was recorded (none left as garbage)."""
    record: dict = {}
    res = run(BIP2000, samples=60, rounds=3, paths=["recursive", "recursive_cycle", "pinocchio"],
              record=record)
    assert res["samples"] == 60
    for case, c in res["cases"].items():
        for name, f in c["paths"].items():
            ns = record[(case, name)]
            assert ns.shape == (60,) and np.all(ns > 0)
            us = ns / 1e3
            assert f["median_us"] == np.median(us)
            assert f["p99_us"] == np.percentile(us, 99)
            assert f["min_us"] == us.min()
            assert c["ratio_vs_thesis"][name] == f["median_us"] / res["thesis_bnr_fgm_dyn_avg_us"]
        r = c["ratios"]["recursive_cycle"]
        assert r["reference"] == "pinocchio"
        assert r["median"] == c["paths"]["recursive_cycle"]["median_us"] / c["paths"]["pinocchio"]["median_us"]
        assert r["p99"] == c["paths"]["recursive_cycle"]["p99_us"] / c["paths"]["pinocchio"]["p99_us"]
        assert "recursive" not in c["ratios"]         # its reference (with C) was not run
