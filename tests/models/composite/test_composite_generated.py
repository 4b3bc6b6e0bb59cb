"""Generated chain models coupled compositely (models/composite/generated.py): the
whole robot's models equal the recursive engine's on either sole, allocation-free; a
stale generated chain is refused with one sentence naming the file."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit

import yaml

from models import ConfigError, Robot
from models.codegen.chain import chain_description
from models.composite.models import composite_setup, composite_update
from models.composite.generated import generated_setup
from models.tree.config import load_tree, tree_from_dict

from tests.assertions import close_within
from tests.models.tree.test_tree_engine import _allocations
from tests.models.trees import BIP2000, bip2000, random_states

TOL = 1e-9
ROBOT = bip2000()


close = close_within(TOL)


@pytest.fixture(params=("left_sole", "right_sole"))
def standing(request):
    ROBOT.set_root(request.param)
    return generated_setup(ROBOT.description, request.param)


def test_generated_composite_equals_tree_engine(standing):
    """Frames and their Jacobians, CoGs and their Jacobians, A, G and C equal the
    recursive engine's to 1e-9 at random states and gravity directions."""
    m, p, d, gen = standing
    for q, qd, _, g in random_states(ROBOT, 25, seed=31):
        gen.update(m.buf, p.buf, d.buf, gen.base, gen.qc, gen.Ac, gen.Gc, gen.gc, q, qd, g)
        t = ROBOT.update(q, qd, g)
        for ours, ref in ((d.Tf, t.Tf), (d.Jf, t.Jf), (d.com, t.com), (d.Jcom, t.Jcom),
                          (d.A, t.A), (d.G, t.G), (d.C, t.C)):
            close(ours, ref)


def test_generated_composite_allocates_nothing(standing):
    m, p, d, gen = standing
    q, qd, _, g = next(random_states(ROBOT, 1, seed=4))
    update = gen.update

    @njit
    def cycles(mb, pb, db, base, qc, Ac, Gc, gc, q, qd, g, count):
        for _ in range(count):
            update(mb, pb, db, base, qc, Ac, Gc, gc, q, qd, g)

    one, many = _allocations(cycles, m.buf, p.buf, d.buf, gen.base, gen.qc, gen.Ac, gen.Gc, gen.gc, q, qd, g)
    assert one == many


def test_stale_generated_chain_is_refused(tmp_path):
    """The same robot with a heavier left thigh: its generated chains no longer
    match, and setup says which module to rebuild, naming the file and key."""
    path = tmp_path / "bip2000.yaml"
    path.write_text(BIP2000.read_text().replace("body: {name: l_thigh, mass: 7.0,", "body: {name: l_thigh, mass: 7.5,"))
    with pytest.raises(ConfigError) as e:
        generated_setup(load_tree(path), "left_sole")
    msg = str(e.value)
    assert msg.startswith(f"{path}: joints: models/generated/bip2000_l_hip_yaw.py is stale") and "\n" not in msg


def _turned_bip2000(rng) -> dict:
    """The BIP 2000 with a random gamma and b on every joint off the pelvis, random
    CoGs and full inertia tensors (turned principal moments that satisfy the
    triangle inequality): what the bodies' rewrite in chain_description must get right."""
    doc = yaml.safe_load(BIP2000.read_text())
    for j in doc["joints"]:
        if j["parent"] != doc["base"]["name"]:
            j["mdh"] = {k: v for k, v in j["mdh"].items() if k not in ("gamma", "gamma_deg", "b")}
            j["mdh"]["gamma"], j["mdh"]["b"] = float(rng.uniform(-np.pi, np.pi)), float(rng.uniform(-0.1, 0.1))
        Q = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        j["body"]["com"] = rng.uniform(-0.1, 0.1, 3).tolist()
        j["body"]["inertia"] = (Q @ np.diag(rng.uniform(1e-3, 2e-3, 3)) @ Q.T).tolist()
    return doc


def test_chain_description_is_the_composite_chain_model():
    """Each chain as a serial MDH robot (gamma, b folded into the previous row, the
    body rewritten in the turned frame) has, by the serial recursive engine, the
    own inertia matrix of the composite chain model (eq. 165) and the gravity
    torques -sum_k m_k J_0k^T g of its bodies, on a turned BIP 2000."""
    tree = tree_from_dict(_turned_bip2000(np.random.default_rng(8)), "turned bip2000")
    model, plan, data = composite_setup(tree, "left_sole")
    g = np.array(tree.gravity)
    for q, qd, _, _ in random_states(ROBOT, 10, seed=9):
        composite_update(model.buf, plan.buf, data.buf, q, qd, g)
        G_own = -np.einsum("b,bim,i->m", model.mass, data.J0[:, :3, :], g)
        for c in plan.chains:
            robot = Robot(chain_description(tree, tree.joints[c[0]].joint.name))
            close(robot.inertia(q[c]), data.A0[np.ix_(c, c)])
            close(robot.gravity(q[c]), G_own[c])
