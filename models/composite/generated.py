"""Generated chain models coupled compositely: the thesis' "compromise of coupling a set
of formally generated models" (Gastebois 2017, end of §3.9).

The composite path of :mod:`models.composite.models` with each hanging chain's own inertia
matrix A_c (eq. 165) and its rows of G (Theorem 12, eq. 233: a hanging chain's joint
carries only its chain's bodies, so those rows are the chain's own gravity torques
under the gravity seen from the chain's base) taken from the closed forms generated for
that chain fixed at the base body (``python -m models.codegen ROBOT.yaml --chain
FIRST_JOINT``, :mod:`models.codegen.chain`). The stance chain's rows of G come from
the CoG Jacobian (Theorem 13, eq. 245). The Jacobians, the base-distal change
(Theorems 4-5, 8) and C stay those of :mod:`models.composite.models`: a hanging chain's
block of C is its own C_c only while the stance joints are still; with them moving it
gains 1/2 (d beta_ki/dq_j - d beta_kj/dq_i) qd_k (Christoffel form, k a stance
joint), which no chain model holds.

The steps below are generic; a generated module per tree
(``python -m models.codegen ROBOT.yaml --composite``) calls them with direct calls of
its chains' kernels, so that Numba compiles the whole update once and caches it.
"""
from __future__ import annotations

import hashlib
import importlib
from pathlib import Path

import numpy as np
from numba import njit

from models.composite.models import (CompositeData, CompositePlan, chain_kinematics, check_buffers, composite_coriolis,
                                     composite_inertia, composite_kinematics, composite_setup, views)
from models.common.errors import ConfigError, GeometryError
from models.tree.model import TreeModel
from models.tree.config import TreeDescription


@njit(cache=True)
def generated_begin(tbuf, pbuf, dbuf, q, qd, g):
    """Checks the buffers, then the chains' kinematics and the base-distal change
    (:mod:`models.composite.models`); the generated kernels come next, per chain."""
    check_buffers(tbuf, pbuf, dbuf, q, qd, g)
    chain_kinematics(tbuf, pbuf, dbuf, q)
    composite_kinematics(tbuf, pbuf, dbuf, q)


@njit(cache=True)
def chain_inputs(tbuf, pbuf, dbuf, c, base, q, g, qc, gc):
    """Whether chain c hangs (is not the stance chain); if so its joint angles in
    qc and the gravity in its base frame in gc: base_c^T R_0->i g."""
    _, pv, dv = views(tbuf, pbuf, dbuf)
    chain, clen, stchain, stance, TS = pv.chain, pv.clen, pv.stchain, dv.stance, dv.TS
    if c == int(stchain[int(stance[0])]):
        return False
    for u in range(int(clen[c])):
        qc[u] = q[int(chain[c, u])]
    for i in range(3):
        x = 0.0
        for r in range(3):
            x += base[c, r, i] * (TS[r, 0] * g[0] + TS[r, 1] * g[1] + TS[r, 2] * g[2])
        gc[i] = x
    return True


@njit(cache=True)
def chain_results(tbuf, pbuf, dbuf, c, Ac, Gc):
    """A hanging chain's generated A_c into its block of A0, its G_c into its rows of G."""
    _, pv, dv = views(tbuf, pbuf, dbuf)
    chain, clen, A0, G = pv.chain, pv.clen, dv.A0, dv.G
    L = int(clen[c])
    for u in range(L):
        G[int(chain[c, u])] = Gc[u]
        for w in range(L):
            A0[int(chain[c, u]), int(chain[c, w])] = Ac[u, w]


@njit(cache=True)
def generated_end(tbuf, pbuf, dbuf, qd, g):
    """A (Theorems 6-8, the hanging blocks from A0), the stance rows of G
    (-M J_G^T g, Theorem 13) and C (:mod:`models.composite.models`)."""
    mv, pv, dv = views(tbuf, pbuf, dbuf)
    chain, clen, stchain, stance, Jcom, G, mass = pv.chain, pv.clen, pv.stchain, dv.stance, dv.Jcom, dv.G, mv.mass
    composite_inertia(tbuf, pbuf, dbuf)
    total = 0.0
    for b in range(mass.shape[0]):
        total += mass[b]
    cs = int(stchain[int(stance[0])])
    for u in range(int(clen[cs])):
        m = int(chain[cs, u])
        G[m] = -total * (g[0] * Jcom[0, 0, m] + g[1] * Jcom[0, 1, m] + g[2] * Jcom[0, 2, m])
    composite_coriolis(tbuf, pbuf, dbuf, qd)


class GeneratedChains:
    """A tree's generated chain models coupled compositely: ``update(tbuf, pbuf,
    dbuf, base, qc, Ac, Gc, gc, q, qd, g)`` (models/generated/STEM_composite.py:
    :func:`generated_begin`, each hanging chain's generated kernels between
    :func:`chain_inputs` and :func:`chain_results`, :func:`generated_end`), the chains' base rotations
    and the scratch. Raises GeometryError when the tree has no generated chains,
    ConfigError when a module is stale for the YAML."""

    def __init__(self, desc: TreeDescription, plan: CompositePlan) -> None:
        from models.codegen.chain import chain_base

        source = Path(desc.source)
        firsts = [desc.joints[c[0]].joint.name for c in plan.chains]
        rebuild = (f"python -m models.codegen {desc.source} --composite "
                   f"--out models/generated/{source.stem}_composite.py")
        try:
            glue = importlib.import_module(f"models.generated.{source.stem}_composite")
        except ModuleNotFoundError as e:
            if e.name != f"models.generated.{source.stem}_composite":
                raise                           # the module is there but broken: never "no generated chains"
            raise GeometryError(f"{desc.source}: joints: no generated chain models (generate each chain with "
                                f"--chain, then {rebuild})") from None
        if list(glue.CHAINS) != firsts:
            raise ConfigError(desc.source, "joints", f"models/generated/{source.stem}_composite.py couples the "
                              f"chains {list(glue.CHAINS)}, the file has {firsts}; rebuild it with {rebuild}")
        yaml_sha = hashlib.sha256(source.read_bytes()).hexdigest()
        for first, c in zip(firsts, plan.chains):
            name = f"{source.stem}_{first}"
            mod = importlib.import_module(f"models.generated.{name}")
            if mod.CHAIN != first or mod.N != len(c) or mod.SOURCE_SHA256 != yaml_sha:
                raise ConfigError(desc.source, "joints", f"models/generated/{name}.py is stale for this file; "
                                  f"rebuild it with python -m models.codegen {desc.source} --chain {first} "
                                  f"--out models/generated/{name}.py")
        L = max(len(c) for c in plan.chains)
        self.update = glue.update
        self.base = np.ascontiguousarray([chain_base(desc, f) for f in firsts])
        self.qc, self.Ac, self.Gc, self.gc = np.zeros(L), np.zeros((L, L)), np.zeros(L), np.zeros(3)


def generated_setup(desc: TreeDescription, stance: str | None = None
                    ) -> tuple[TreeModel, CompositePlan, CompositeData, GeneratedChains]:
    """:func:`models.composite.models.composite_setup` and the generated chains, compiled
    (or loaded from the cache) and run once (setup only, allocates)."""
    model, plan, data = composite_setup(desc, stance)
    gen = GeneratedChains(desc, plan)
    z = np.zeros(model.n)
    gen.update(model.buf, plan.buf, data.buf, gen.base, gen.qc, gen.Ac, gen.Gc, gen.gc,
               z, z, np.array(model.gravity))
    return model, plan, data, gen
