"""Generated chain models of bip2000 coupled compositely, GENERATED: do not edit.

Rebuild with ``python -m models.codegen deploy/robots/bip2000.yaml --composite --out models/generated/bip2000_composite.py``; each chain module with
``python -m models.codegen deploy/robots/bip2000.yaml --chain FIRST_JOINT --out models/generated/bip2000_FIRST_JOINT.py``
(tests/models/test_generated.py fails when a file is stale).
"""
import numpy as np
from numba import njit

from models.composite.generated import chain_inputs, chain_results, generated_begin, generated_end
from . import bip2000_l_hip_yaw, bip2000_r_hip_yaw, bip2000_trunk_yaw

SOURCE = 'deploy/robots/bip2000.yaml'
CHAINS = ('l_hip_yaw', 'r_hip_yaw', 'trunk_yaw')


@njit(cache=True)
def update(tbuf, pbuf, dbuf, base, qc, Ac, Gc, gc, q, qd, g):
    """The composite models with A_c and G_c of each hanging chain from its
    generated kernels (models.composite.generated); allocation-free."""
    generated_begin(tbuf, pbuf, dbuf, q, qd, g)
    c = np.int64(0)          # a typed int, not a literal: one compile for every chain
    if chain_inputs(tbuf, pbuf, dbuf, c, base, q, g, qc, gc):
        bip2000_l_hip_yaw.inertia(qc, Ac)
        bip2000_l_hip_yaw.gravity(qc, gc, Gc)
        chain_results(tbuf, pbuf, dbuf, c, Ac, Gc)
    c += 1
    if chain_inputs(tbuf, pbuf, dbuf, c, base, q, g, qc, gc):
        bip2000_r_hip_yaw.inertia(qc, Ac)
        bip2000_r_hip_yaw.gravity(qc, gc, Gc)
        chain_results(tbuf, pbuf, dbuf, c, Ac, Gc)
    c += 1
    if chain_inputs(tbuf, pbuf, dbuf, c, base, q, g, qc, gc):
        bip2000_trunk_yaw.inertia(qc, Ac)
        bip2000_trunk_yaw.gravity(qc, gc, Gc)
        chain_results(tbuf, pbuf, dbuf, c, Ac, Gc)
    generated_end(tbuf, pbuf, dbuf, qd, g)
