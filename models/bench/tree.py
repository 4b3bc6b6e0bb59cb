"""Benchmark of the whole-robot model update (a kinematic tree), measured in one run.

Every path is a named entry of :data:`PATHS` (:func:`register` adds one): a setup
that returns the timed call ``update(k)`` (one update at the k-th random state)
and ``results(k)``, what that call computed in the engine's joint order, so a
test can check that a path computes what the recursive engine computes; or None
for a case the path does not cover (the composite models stand on a sole only).

Cases: each root of the description, then ``swap``: the root changes at every
call (``set_root`` + update; Pinocchio: one model per root, taken in turn), and
``swap_soles``: the same through the roots other than the base body (the support
swap of walking, from sole to sole, which the composite models cover too:
``set_stance`` + update), and ``floating``: the tree on its floating base
(models.tree.floating, n + 6 coordinates) against Pinocchio's free flyer carrying
the same bodies (its configurations, quaternions, and velocities, v = T(q) qd,
converted before timing).
Within a case the paths are timed in interleaved rounds (A B A B ...) so that
machine drift hits them alike. Ratios: each path against the Pinocchio path
doing the same work, and against the thesis' B&R walking playback (FGM +
inverse dynamics, 161.6 us average on a 1.6 GHz Atom).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np

from models.bench.chain import THESIS_FGM_DYN_AVG_US, _percentiles, _time_calls
from models.tree.model import TreeData
from models.tree.dynamics import set_root, update, update_cycle
from models.tree.floating import NB, FloatingRobot, velocity_map, velocity_map_rate
from models.tree.robot import TreeRobot

TARGET_RATIO = 0.5            # the recursive engine against Pinocchio's equal work


@dataclass(frozen=True)
class States:
    """The random states every path is timed on: q within the limits, qd, gravity."""
    q: np.ndarray
    qd: np.ndarray
    g: np.ndarray


class BenchPath(NamedTuple):
    update: Callable[[int], None]                         # the timed call, at state k
    results: Callable[[int], dict[str, np.ndarray]]       # what the call at state k computed


@dataclass(frozen=True)
class PathSpec:
    setup: Callable[[TreeRobot, tuple[int, ...], States], BenchPath | None]
    computes: str
    reference: str | None     # the path doing the same work, for the ratio


PATHS: dict[str, PathSpec] = {}


def register(name: str, setup: Callable[[TreeRobot, tuple[int, ...], States], BenchPath | None],
             computes: str, reference: str | None = None) -> None:
    """Add a path: ``setup(robot, roots, states)`` builds it for the rooting
    indices ``roots`` (one, or several taken in turn: call k uses
    ``roots[k % len(roots)]``), or returns None if it cannot stand there; it may
    raise ImportError (an optional package)."""
    PATHS[name] = PathSpec(setup, computes, reference)


def states(robot: TreeRobot, count: int, seed: int = 0) -> States:
    """Joints within their limits; a floating base within 1 m of the origin, tilted up to 60 deg."""
    rng = np.random.default_rng(seed)
    lo, hi = robot.model.qmin.copy(), robot.model.qmax.copy()
    if isinstance(robot, FloatingRobot):
        lo[:NB], hi[:NB] = (-1.0, -1.0, -1.0, -1.0, -1.0, -np.pi), (1.0, 1.0, 1.0, 1.0, 1.0, np.pi)
    q = rng.uniform(lo, hi, (count, robot.n))
    return States(q, rng.uniform(-1.0, 1.0, (count, robot.n)), np.array(robot.model.gravity))


def _recursive(kernel, with_c: bool):
    def setup(robot: TreeRobot, roots: tuple[int, ...], st: States) -> BenchPath:
        data = TreeData(robot.model)
        m, d, q, qd, g = robot.model.buf, data.buf, st.q, st.qd, st.g
        nr = len(roots)
        set_root(m, d, roots[0])
        if nr == 1:
            def call(k: int) -> None:
                kernel(m, d, q[k], qd[k], g)
        else:
            def call(k: int) -> None:
                set_root(m, d, roots[k % nr])
                kernel(m, d, q[k], qd[k], g)

        def results(k: int) -> dict[str, np.ndarray]:
            out = {"A": data.A.copy(), "h": data.h.copy(), "Jcom": data.Jcom[0].copy(),
                   "S": data.S.T.copy()}
            if with_c:
                out["C"] = data.C.copy()
            return out
        return BenchPath(call, results)
    return setup


def _pinocchio(with_c: bool):
    def setup(robot: TreeRobot, roots: tuple[int, ...], st: States) -> BenchPath:
        import pinocchio as pin

        from models.tree.reference import build_tree

        floating = isinstance(robot, FloatingRobot)
        refs = ([build_tree(robot.fixed, robot.fixed.base, floating=True)] if floating else
                [build_tree(robot.description, robot.model.root_names[r]) for r in roots])
        models = []
        for ref in refs:
            ref.model.gravity = pin.Motion(st.g, np.zeros(3))
            pq, pv = (_free_flyer(ref, st) if floating else
                      (np.ascontiguousarray(st.q[:, ref.perm]), np.ascontiguousarray(st.qd[:, ref.perm])))
            models.append((ref.model, ref.model.createData(), pq, pv))
        nr = len(roots)

        def work(pm, pd, q, v) -> None:
            pin.forwardKinematics(pm, pd, q, v)
            pin.computeJointJacobians(pm, pd, q)
            pin.crba(pm, pd, q)
            pin.nonLinearEffects(pm, pd, q, v)
            pin.centerOfMass(pm, pd, q)
            pin.jacobianCenterOfMass(pm, pd, q)
            if with_c:
                pin.computeCoriolisMatrix(pm, pd, q, v)

        if nr == 1:
            pm0, pd0, pq0, pv0 = models[0]

            def call(k: int) -> None:
                work(pm0, pd0, pq0[k], pv0[k])
        else:
            def call(k: int) -> None:
                pm, pd, pq, pv = models[k % nr]
                work(pm, pd, pq[k], pv[k])

        def results(k: int) -> dict[str, np.ndarray]:
            """Pinocchio's figures in our joint order; its CoG leaves out the fixed
            root body (mass m_root), so J_cog = (M - m_root) / M J_pin."""
            if floating:
                return _free_flyer_results(refs[0], models[0][1], st, k)
            ref, (_, pd, _, _) = refs[k % nr], models[k % nr]
            p, n = ref.perm, robot.n
            moving = robot.model.total_mass - robot.description.bodies[ref.root_body].mass
            A, h, Jcom, S = np.empty((n, n)), np.empty(n), np.empty((3, n)), np.empty((6, n))
            A[np.ix_(p, p)] = np.triu(pd.M) + np.triu(pd.M, 1).T
            h[p] = pd.nle
            Jcom[:, p] = moving / robot.model.total_mass * pd.Jcom
            S[:, p] = pd.J
            out = {"A": A, "h": h, "Jcom": Jcom, "S": S}
            if with_c:
                C = np.empty((n, n))
                C[np.ix_(p, p)] = pd.C
                out["C"] = C
            return out
        return BenchPath(call, results)
    return setup


def _free_flyer_map(ref, q: np.ndarray) -> np.ndarray:
    """M (n, n): Pinocchio's free-flyer velocity from our rates (models.tree.floating)."""
    n = q.shape[0]
    M = np.zeros((n, n))
    M[:NB, :NB] = velocity_map(q)
    M[np.arange(NB, n), NB + ref.perm] = 1.0
    return M


def _free_flyer(ref, st: States) -> tuple[np.ndarray, np.ndarray]:
    """Pinocchio's configurations (position, quaternion x y z w, joints) and velocities of the states."""
    import pinocchio as pin

    pq = np.empty((st.q.shape[0], st.q.shape[1] + 1))
    pv = np.empty_like(st.qd)
    for k, (q, qd) in enumerate(zip(st.q, st.qd)):
        R = velocity_map(q)[:3, :3].T
        pq[k] = np.concatenate([q[:3], pin.Quaternion(R).coeffs(), q[NB:][ref.perm]])
        pv[k] = _free_flyer_map(ref, q) @ qd
    return pq, pv


def _free_flyer_results(ref, pd, st: States, k: int) -> dict[str, np.ndarray]:
    """The free flyer's figures in our coordinates: A = M' A_pin M, h = M' (nle + A_pin Mdot qd),
    J_cog = J_pin M, the joint Jacobians S = J M (Pinocchio's world frame: our base)."""
    q, qd = st.q[k], st.qd[k]
    M = _free_flyer_map(ref, q)
    A = np.triu(pd.M) + np.triu(pd.M, 1).T
    bias = np.zeros(q.shape[0])
    bias[:NB] = velocity_map_rate(q, qd)
    return {"A": M.T @ A @ M, "h": M.T @ (pd.nle + A @ bias), "Jcom": pd.Jcom @ M, "S": pd.J @ M}


def _stances(plan, robot: TreeRobot, roots: tuple[int, ...]) -> list[int] | None:
    """The composite plan's stance indices of ``roots``; None if one is not a sole."""
    names = [robot.model.root_names[r] for r in roots]
    return [plan.stance_names.index(n) for n in names] if set(names) <= set(plan.stance_names) else None


def _composite(robot: TreeRobot, roots: tuple[int, ...], st: States) -> BenchPath | None:
    """The composite models on a sole, or swapping soles (``set_stance`` +
    update); they have no pelvis stance."""
    from models.composite.models import composite_setup, composite_update, set_stance
    from models.common.errors import GeometryError

    try:
        model, plan, data = composite_setup(robot.description, robot.model.root_names[roots[0]])
    except GeometryError:                       # not a sole, or a tree they do not cover
        return None
    stances = _stances(plan, robot, roots)
    if stances is None:
        return None
    m, p, d, q, qd, g, ns = model.buf, plan.buf, data.buf, st.q, st.qd, st.g, len(stances)
    if ns == 1:
        def call(k: int) -> None:
            composite_update(m, p, d, q[k], qd[k], g)
    else:
        def call(k: int) -> None:
            set_stance(p, d, stances[k % ns])
            composite_update(m, p, d, q[k], qd[k], g)

    def results(k: int) -> dict[str, np.ndarray]:
        return {"A": data.A.copy(), "G": data.G.copy(), "C": data.C.copy(), "Jcom": data.Jcom[0].copy()}
    return BenchPath(call, results)


def _generated_composite(robot: TreeRobot, roots: tuple[int, ...], st: States) -> BenchPath | None:
    """The composite models with the hanging chains' A_c and G rows from their
    generated closed forms, on a sole or swapping soles (a tree without generated
    chains: None)."""
    from models.composite.models import set_stance
    from models.composite.generated import generated_setup
    from models.common.errors import GeometryError

    try:
        model, plan, data, gen = generated_setup(robot.description, robot.model.root_names[roots[0]])
    except GeometryError:                       # not a sole, or no generated chains
        return None
    stances = _stances(plan, robot, roots)
    if stances is None:
        return None
    m, p, d, q, qd, g, ns = model.buf, plan.buf, data.buf, st.q, st.qd, st.g, len(stances)
    update, base, qc, Ac, Gc, gc = gen.update, gen.base, gen.qc, gen.Ac, gen.Gc, gen.gc
    if ns == 1:
        def call(k: int) -> None:
            update(m, p, d, base, qc, Ac, Gc, gc, q[k], qd[k], g)
    else:
        def call(k: int) -> None:
            set_stance(p, d, stances[k % ns])
            update(m, p, d, base, qc, Ac, Gc, gc, q[k], qd[k], g)

    def results(k: int) -> dict[str, np.ndarray]:
        return {"A": data.A.copy(), "G": data.G.copy(), "C": data.C.copy(), "Jcom": data.Jcom[0].copy()}
    return BenchPath(call, results)


_DYNAMICS = "the CoG of the robot and of each sub-tree with their Jacobians, A (CRBA, rotor inertia), G"
register("recursive", _recursive(update, True),
         f"models.tree.dynamics.update: body poses, every frame's pose and Jacobian, {_DYNAMICS}, "
         "C (Christoffel), h = C qd + G, friction", "pinocchio_coriolis")
register("recursive_cycle", _recursive(update_cycle, False),
         f"models.tree.dynamics.update_cycle: body poses, the root frames' poses and Jacobians, {_DYNAMICS}, "
         "h = C qd + G (Newton-Euler), friction", "pinocchio")
register("composite", _composite,
         "models.composite.models.composite_update (Gastebois 2017 ch. 3, on the soles only): frames and their "
         "Jacobians, CoGs and their Jacobians, A, G, C (Christoffel)", "pinocchio_coriolis")
register("generated_composite", _generated_composite,
         "models.composite.generated (on the soles only): the composite path with each hanging chain's A_c and "
         "G rows from its generated closed forms (models/generated/ROBOT_composite.py)", "pinocchio_coriolis")
register("pinocchio", _pinocchio(False),
         "forwardKinematics + computeJointJacobians + crba + nonLinearEffects + centerOfMass + "
         "jacobianCenterOfMass from Python (gives C qd + G, not C)")
register("pinocchio_coriolis", _pinocchio(True),
         "the six Pinocchio calls + computeCoriolisMatrix (C)")


def run(robot_yaml: str | Path, samples: int = 20000, rounds: int = 10, paths: list[str] | None = None,
        progress: Callable[[str], None] | None = None, record: dict | None = None) -> dict:
    """Median / p99 / min (us) of each path on each case, and the ratios. The raw
    samples (ns) go to ``record[(case, path)]`` if a dict is given."""
    say = progress or (lambda _msg: None)
    robot = TreeRobot.from_yaml(robot_yaml)
    names = list(PATHS) if paths is None else list(paths)
    rounds = max(1, min(rounds, samples))
    per_round = samples // rounds
    st = states(robot, per_round * rounds)
    roots = robot.model.root_names
    cases = {name: (robot, (r,), st) for r, name in enumerate(roots)}
    cases["swap"] = (robot, tuple(range(len(roots))), st)
    soles = tuple(r for r, name in enumerate(roots) if name != robot.description.base)
    if 1 < len(soles) < len(roots):
        cases["swap_soles"] = (robot, soles, st)
    floating = FloatingRobot(robot.description)
    cases["floating"] = (floating, (0,), states(floating, per_round * rounds))
    out: dict = {"robot": robot.model.name, "n": robot.n, "samples": per_round * rounds, "rounds": rounds,
                 "paths": {n: {"computes": PATHS[n].computes, "reference": PATHS[n].reference} for n in names},
                 "unavailable": {}, "target_ratio": TARGET_RATIO,
                 "thesis_bnr_fgm_dyn_avg_us": THESIS_FGM_DYN_AVG_US, "cases": {}}
    try:
        import pinocchio as pin
        out["pinocchio_version"] = pin.__version__
    except ImportError:
        out["pinocchio_version"] = None
    for case, (case_robot, rs, case_st) in cases.items():
        built: dict[str, BenchPath] = {}
        skipped = []
        for name in names:
            try:
                path = PATHS[name].setup(case_robot, rs, case_st)
            except ImportError as e:
                out["unavailable"][name] = f"{e} (pip install 'bipd[bench]')"
                continue
            if path is None:
                skipped.append(name)
                continue
            built[name] = path
            path.update(0)                           # compiled or loaded before timing
        ns = {name: np.empty(per_round * rounds) for name in built}
        for k in range(rounds):
            say(f"{case}: round {k + 1}/{rounds}")
            for name, path in built.items():
                _time_calls(path.update, per_round, ns[name], k * per_round)
        figures = {name: _percentiles(ns[name]) for name in built}
        ratios = {}
        for name in built:
            ref = PATHS[name].reference
            if ref in figures:
                ratios[name] = {"reference": ref,
                                "median": figures[name]["median_us"] / figures[ref]["median_us"],
                                "p99": figures[name]["p99_us"] / figures[ref]["p99_us"]}
        out["cases"][case] = {
            "roots": [case_robot.model.root_names[r] for r in rs], "n": case_robot.n, "paths": figures, "ratios": ratios, "not_applicable": skipped,
            "ratio_vs_thesis": {name: f["median_us"] / THESIS_FGM_DYN_AVG_US for name, f in figures.items()}}
        if record is not None:
            for name in built:
                record[(case, name)] = ns[name].copy()
    return out
