"""Generated closed-form models (models/codegen, Liégeois & Aldon 1980) against the
recursive engine (models/chain/dynamics.py): A, C, G equal at 100 random states with level and
tilted gravity, Ȧ - 2C is skew, A is SPD, and the committed files are what the
generator gives for the current YAML files."""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util

import numpy as np
import pytest
import sympy as sp

from models import Robot
from models.tree.config import load_tree
from models.codegen import ROOT
from models.codegen.build import generate, generator_sha256
from models.codegen.chain import chain_description
from models.codegen.emit import Counts, count_ops, sha256
from models.codegen.published import A_PRINTED, Q_PRINTED, printed
from tests.assertions import close_within
from tests.paths import ROBOTS

NAMES = ("bip_leg", "liegeois_aldon_6dof", "bip2000_leg6",
         "bip2000_l_hip_yaw", "bip2000_r_hip_yaw", "bip2000_trunk_yaw")   # the last three: the tree's chains
STATES = 100


def generated(name: str):
    return importlib.import_module(f"models.generated.{name}")


def tilt(g: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """g turned by alpha about x then beta about y: a tilted floor (thesis eq. 46)."""
    ca, sa, cb, sb = np.cos(alpha), np.sin(alpha), np.cos(beta), np.sin(beta)
    Rx = np.array([[1, 0, 0], [0, ca, -sa], [0, sa, ca]])
    Ry = np.array([[cb, 0, sb], [0, 1, 0], [-sb, 0, cb]])
    return Ry @ Rx @ g


def description(mod):
    """The serial robot a module was generated for: its YAML, or its chain of a tree."""
    if hasattr(mod, "CHAIN"):
        return chain_description(load_tree(ROOT / mod.SOURCE), mod.CHAIN)
    return Robot.from_yaml(ROOT / mod.SOURCE).description


def engines(name: str):
    """(generated module, [(gravity, engine robot with that gravity)]): level, and two tilts
    (the thesis' 10° x 20° platform and a steeper one)."""
    mod = generated(name)
    desc = description(mod)
    g0 = np.array(desc.gravity)
    gs = [g0, tilt(g0, np.radians(10), np.radians(20)), tilt(g0, np.radians(-35), np.radians(25))]
    return mod, [(g, Robot(dataclasses.replace(desc, gravity=tuple(g)))) for g in gs]


def states(robot: Robot, seed: int):
    rng = np.random.default_rng(seed)
    lo, hi = robot.model.qmin, robot.model.qmax
    for _ in range(STATES):
        yield rng.uniform(lo, hi), rng.uniform(-3, 3, robot.n)


close = close_within(1e-9, scale=1e-300)      # relative to the largest entry (entries can be exactly zero)


@pytest.mark.parametrize("name", NAMES)
def test_generated_equals_recursive_engine(name):
    """A, C (Christoffel), G of the generated kernels (fused and separate) equal the
    engine's update() at 100 random states, for level and tilted gravity."""
    mod, cases = engines(name)
    n = mod.N
    A, C, G = np.zeros((n, n)), np.zeros((n, n)), np.zeros(n)
    A1, C1, G1 = np.zeros((n, n)), np.zeros((n, n)), np.zeros(n)
    for k, (g, robot) in enumerate(cases):
        for q, qd in states(robot, k):
            mod.dynamics(q, qd, g, A, C, G)
            close(A, robot.inertia(q), f"{name} A")
            close(C, robot.coriolis(q, qd), f"{name} C")
            close(G, robot.gravity(q), f"{name} G, gravity {g}")
            mod.inertia(q, A1)
            mod.coriolis(q, qd, C1)
            mod.gravity(q, g, G1)
            close(A1, A, f"{name} inertia() vs dynamics()")
            close(C1, C, f"{name} coriolis() vs dynamics()")
            close(G1, G, f"{name} gravity() vs dynamics()")


@pytest.mark.parametrize("name", NAMES)
def test_generated_structure(name):
    """A is symmetric positive definite, and Ȧ - 2C is skew with Ȧ from central
    differences of the generated A along qd (independent of C). The report's robot has
    no inertia about its last axis (§4.5: A16 = ... = A66 = 0): there the last row and
    column are exactly zero and the rest is SPD."""
    mod, [(g, robot), *_] = engines(name)
    n = mod.N
    A, Ap, Am, C = (np.zeros((n, n)) for _ in range(4))
    h = 1e-6
    for q, qd in states(robot, 7):
        mod.inertia(q, A)
        assert np.array_equal(A, A.T)
        if name == "liegeois_aldon_6dof":
            assert not A[5].any()
            assert np.linalg.eigvalsh(A[:5, :5])[0] > 0.0
        else:
            assert np.linalg.eigvalsh(A)[0] > 0.0
        mod.inertia(q + h * qd, Ap)
        mod.inertia(q - h * qd, Am)
        mod.coriolis(q, qd, C)
        N = (Ap - Am) / (2 * h) - 2 * C
        np.testing.assert_allclose(N + N.T, 0.0, atol=1e-6 * np.abs(A).max())


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_committed_file_is_up_to_date(name):
    """The committed module is what the generator writes for the current YAML: its
    recorded hashes match, and rebuilding gives the same text."""
    mod = generated(name)
    path = ROOT / "models" / "generated" / f"{name}.py"
    option = f" --chain {mod.CHAIN}" if hasattr(mod, "CHAIN") else ""
    rebuild = f"stale: rebuild with python -m models.codegen {mod.SOURCE}{option} --out models/generated/{name}.py"
    assert mod.SOURCE_SHA256 == sha256(ROOT / mod.SOURCE), rebuild
    assert mod.GENERATOR_SHA256 == generator_sha256(), rebuild
    assert generate(ROOT / mod.SOURCE, getattr(mod, "CHAIN", None)).source == path.read_text(), rebuild


def test_composite_coupling_is_up_to_date():
    """The committed module coupling the BIP 2000's chains is what the generator
    writes for its YAML, and couples exactly the chains on the pelvis."""
    from models.codegen.build import generate_composite
    from models.generated import bip2000_composite as mod

    path = ROOT / "models" / "generated" / "bip2000_composite.py"
    rebuild = f"python -m models.codegen {mod.SOURCE} --composite --out models/generated/bip2000_composite.py"
    assert generate_composite(ROOT / mod.SOURCE) == path.read_text(), f"stale: rebuild with {rebuild}"
    assert mod.CHAINS == ("l_hip_yaw", "r_hip_yaw", "trunk_yaw")


def test_operation_counter():
    """The counting rule on hand-counted expressions: k terms are k - 1 additions,
    k factors k - 1 multiplications, a sign none, x**3 two, a function one."""
    x, y, z = sp.symbols("x y z")
    assert count_ops(x * y + 2 * z - x) == Counts(mul=2, add=2)
    assert count_ops(-x * y) == Counts(mul=1)
    assert count_ops(x ** 3 + sp.cos(y) * z) == Counts(mul=3, add=1, fun=1)
    assert printed({"A55": A_PRINTED["A55"]}) == Counts(mul=4, add=1, fun=2)   # JX6*S6*S6+JY6*C6*C6
    # Q5..Q2 as printed: 4 + 3 + 2 + 2 mul (incl. G*), 0 + 0 + 1 + 1 add, S234 C234 S5 C5 C23 S2
    # and the sums 23, 234
    assert printed(Q_PRINTED) == Counts(mul=10, add=4, fun=6)


def _evaluate(expr_matrix: sp.Matrix, sym, q: np.ndarray, g: np.ndarray) -> np.ndarray:
    """A symbolic closed form at (q, g): every (c, s) of a joint group is the cosine and
    sine of its angles' sum with their θ offsets."""
    values = {x: q[k] for k, x in enumerate(sym.q)}
    values.update({x: g[k] for k, x in enumerate(sym.g)})
    for joints, (c, s) in sym.trig.items():
        angle = sum(q[k] + sym.theta[k] for k in joints)
        values[c], values[s] = np.cos(angle), np.sin(angle)
    return np.array(expr_matrix.subs(values).evalf(), dtype=float).ravel()


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_summed_angle_gravity_equals_engine(name):
    """G with the angles of parallel axes summed (counted beside the report's Q, not
    emitted) equals the engine's G at random states, level and tilted gravity."""
    from models.codegen.symbolic import closed_forms

    mod, cases = engines(name)
    cf = closed_forms(cases[0][1].description)
    for k, (g, robot) in enumerate(cases):
        for q, _ in list(states(robot, 20 + k))[:5]:
            close(_evaluate(cf.G_summed, cf.symbols, q, g), robot.gravity(q), f"{name} G summed")


def test_cli_errors_name_the_file(tmp_path, capsys):
    """A bad robot YAML or an unwritable output is one sentence naming the file, exit 2."""
    from models.codegen.__main__ import main

    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ngravity: [0, 0, -9.81]\njoints: []\n")
    assert main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(bad) in err and "joints" in err and err.count("\n") == 1
    out = tmp_path / "missing" / "x.py"
    assert main([str(ROBOTS / "bip_leg.yaml"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(out) in err and "cannot write" in err and err.count("\n") == 1


def test_cli_refuses_a_chain_not_on_the_base_body(capsys):
    """--chain names a joint that is not on the tree's base body: one sentence
    naming the file and the key, exit 2."""
    from models.codegen.__main__ import main

    robot = ROBOTS / "bip2000.yaml"
    assert main([str(robot), "--chain", "l_knee"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {robot}: joints: 'l_knee' is not a joint on the base body") and err.count("\n") == 1


@pytest.mark.slow
def test_generated_random_chain_with_prismatic_joints(tmp_path):
    """The generator on a chain none of the committed robots covers: prismatic joints,
    θ offsets, full inertia tensors, off-axis CoGs, rotor inertia. Generated, written,
    compiled and equal to the engine at random states and gravities."""
    import yaml

    from tests.models.chains import random_chain_dict

    doc = random_chain_dict(np.random.default_rng(5), 4, prismatic=(1, 3))
    path = tmp_path / "chain.yaml"
    path.write_text(yaml.safe_dump(doc))
    module = tmp_path / "chain_gen.py"
    module.write_text(generate(path).source)
    spec = importlib.util.spec_from_file_location("chain_gen", module)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    desc = Robot.from_yaml(path).description
    rng = np.random.default_rng(6)
    A, C, G = np.zeros((4, 4)), np.zeros((4, 4)), np.zeros(4)
    for _ in range(3):
        g = rng.normal(0.0, 9.81 / np.sqrt(3), 3)
        robot = Robot(dataclasses.replace(desc, gravity=tuple(g)))
        for q, qd in list(states(robot, int(rng.integers(1000))))[:20]:
            mod.dynamics(q, qd, g, A, C, G)
            close(A, robot.inertia(q), "A")
            close(C, robot.coriolis(q, qd), "C")
            close(G, robot.gravity(q), "G")
