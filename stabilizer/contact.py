"""The feet's contact from their load cells (BIP 2000: four uniaxial cells per foot along the sole
normal; Gastebois 2017 §2.6.2 names the robot's foot force sensors), shared by the whole-robot
stabilizer (support.source: sensors) and the loop (docs/multi_cog.md, "Feet sensors").

A foot is in contact once its cells carry ``min_load`` and stays so down to ``release_load``
(< min_load), and a new support phase is taken once it has held for ``dwell`` cycles: the hysteresis
and the dwell keep a foot that lands, lifts or bounces, its load crossing the thresholds with the
contact's chatter, from switching the support phase back and forth. The loads are plausible when
every cell is finite, no foot pulls the ground by more than ``min_load`` (the cells of a rigid sole
may read a little negative under an off-centre load) and both together carry at most ``max_load``.
"""
from __future__ import annotations

import math

from numba import njit

from models.common.support import DOUBLE

CELLS = 4              # load cells per foot: loads[0:4] the left foot's, loads[4:8] the right's
MIN_LOAD = 50.0        # N on a foot's cells: it is in contact (the stabilizer YAML's support.min_load)
RELEASE_LOAD = 30.0    # N: a foot in contact stays so down to this load (support.release_load)
MAX_LOAD = 3000.0      # N on both feet beyond which the loads are implausible (support.max_load)
DWELL_S = 0.01         # s a new support phase must hold before it is taken (support.dwell_s)

# loads_status codes
LOADS_OK = 0
LOADS_MISSING = 1      # a cell is not finite (not on the bus, or a dead cell)
LOADS_PULLING = 2      # a foot pulls the ground by more than min_load
LOADS_OVER = 3         # the feet carry more than max_load together
LOADS_STATUS_NAMES = ("ok", "missing", "pulling", "over")


@njit(cache=True)
def loads_status(loads, min_load, max_load):
    """LOADS_OK when the eight cells are plausible (module docstring), else the first failing code."""
    total = 0.0
    for f in range(2):
        foot = 0.0
        for c in range(CELLS):
            v = loads[CELLS * f + c]
            if not math.isfinite(v):
                return LOADS_MISSING
            foot += v
        if foot < -min_load:
            return LOADS_PULLING
        total += foot
    return LOADS_OVER if total > max_load else LOADS_OK


@njit(cache=True)
def feet_contact(loads, min_load, release_load, last):
    """LEFT, RIGHT or DOUBLE from the feet's loads with hysteresis (module docstring), -1 when no foot
    is in contact; ``last`` is the previous result (-1: none was in contact). Foot f is LEFT (0) or
    RIGHT (1) of models.common.support."""
    phase = -1
    for f in range(2):
        load = 0.0
        for c in range(CELLS):
            load += loads[CELLS * f + c]
        was = last == DOUBLE or last == f
        if load >= (release_load if was else min_load):
            phase = f if phase < 0 else DOUBLE
    return phase


CONTACT_STATE = 3      # debounced_contact's state: phase (NaN: none yet), candidate, cycles it has held


@njit(cache=True)
def debounced_contact(loads, min_load, release_load, dwell, cs):
    """:func:`feet_contact` once its result has held for ``dwell`` cycles in a row (``cs``: CONTACT_STATE
    floats, the phase NaN before the first call, which takes its result at once)."""
    known = cs[0] == cs[0]
    raw = feet_contact(loads, min_load, release_load, int(cs[0]) if known else -1)
    if not known or raw == cs[0]:
        cs[0], cs[2] = raw, 0.0
    elif raw == cs[1]:
        cs[2] += 1.0
    else:
        cs[1], cs[2] = raw, 1.0
    if cs[2] >= dwell:
        cs[0], cs[2] = raw, 0.0
    return int(cs[0])


@njit(cache=True)
def foot_loads(loads, out):
    """out[f] = the load foot f's cells carry (N): LEFT (0), then RIGHT (1)."""
    for f in range(2):
        out[f] = 0.0
        for c in range(CELLS):
            out[f] += loads[CELLS * f + c]


@njit(cache=True)
def right_share(loads):
    """The right foot's share of the feet's load, F_r / (F_l + F_r), clamped to [0, 1]; NaN when they
    carry nothing."""
    left = right = 0.0
    for c in range(CELLS):
        left += loads[c]
        right += loads[CELLS + c]
    total = left + right
    if not total > 0.0:
        return math.nan
    return min(1.0, max(0.0, right / total))
