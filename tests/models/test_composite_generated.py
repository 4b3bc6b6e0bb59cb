"""Generated chain models coupled compositely (models/composite_generated.py): the
whole robot's models equal the recursive engine's on either sole, allocation-free; a
stale generated chain is refused with one sentence naming the file."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from models import ConfigError
from models.composite_generated import generated_setup
from models.tree_config import load_tree

from .test_tree_engine import _allocations
from .trees import BIP2000, bip2000, random_states

TOL = 1e-9
ROBOT = bip2000()


def close(ours, ref):
    np.testing.assert_allclose(ours, ref, rtol=TOL, atol=TOL * max(1.0, float(np.abs(ref).max())))


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
