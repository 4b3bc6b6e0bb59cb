"""The daemon YAML's ``feet:`` section (stabilizer.feet: sole compliance, ground slope, edge landings) and
the feet's geometry from a tree robot's description. Every error is one ConfigError naming the key.

.. code-block:: yaml

    feet:
      min_load: 50.0           # N on a foot's cells: it is loaded (compliance, slope, landings)
      compliance:
        enabled: false         # the ankles yield to the sole's centre of pressure (safe default: off)
        damping: 2000.0        # N m s/rad, D of dq/dt = -m_j / D
        max_rate: 0.03         # rad/s
        max_accel: 0.5         # rad/s^2, the rate's change (it is the drives' velocity feed-forward too)
        max_offset_deg: 10.0   # |offset| added to each ankle's reference
        release_tau: 0.2       # s, an unloaded foot's offset back to zero
        cop_tau: 0.3           # s, the pressure error's low-pass (> k h^2 / g: stabilizer.feet eq. 2')
      flatten:                 # while a gait plays: a sole on an edge (``edge`` below) in double support
        enabled: false         # yields in its ankles until its cells load (eq. 4-5; replaces the centring
                               # above while a gait plays); safe default: off
        damping: 500.0         # N m s/rad, D_w of eq. 5
        max_rate: 0.1          # rad/s (an offset is released at this rate too, over the swing)
        max_accel: 1.0         # rad/s^2
      slope:
        flat_fraction: 0.1     # each stance cell carries this share of the foot's load: it lies flat
        tau: 1.0               # s, the slope's mean over its first tau of flat stance, then its low-pass
        tilt_input: false      # on the ground without a platform, the slope is the models' and the
                               # stabilizer's tilt input (the platform's angles otherwise: level)
      edge:
        fraction: 0.05         # a cell under this share of the foot's load is unloaded
        share: 0.3             # while the foot carries this share of both feet's load
        hold_s: 0.15           # s the same cells stay unloaded: longer than the gait's heel or toe phase
      touchdown:               # a landing found by the swing foot's cells (stabilizer.touchdown)
        enabled: false         # safe default: off (the plan's soles, wherever the ground is)
        touch_load: 50.0       # N on the swing foot's cells: it met the ground
        bound_m: 0.025         # a late landing descends at most this far below the plan
        speed: 0.05            # m/s, its descent
        accel: 1.0             # m/s^2, the descent's rate ramp
        delay_s: 0.06          # s after the plan's touch-down before a late landing descends
        release_s: 0.3         # s from the next lift-off over which a carried offset goes
        min_offset_m: 0.001    # an early contact above this height of the plan, an offset this large (reported)
        tilt_margin_m: 0.005   # a landed sole whose pressure lies this far behind its rear cells bears on an edge
        tilt_share: 0.3        # while the foot carries this share of both feet's load (a heel-first landing does not)
        tilt_delay_s: 0.03     # s in a row, longer than a flat floor's heel-first landing, before it turns
        tilt_speed: 0.4        # rad/s, the sole's turn toes down about the edge (0.2: the 2 cm step down's robot
        tilt_accel: 4.0        # tipped onto the toes at 2.9 deg, its left landed early, it fell); rad/s^2
        tilt_max_deg: 6.0      # the turn's bound (a 2 cm drop under a 0.26 m sole: 4.4 deg)
        tilt_edges: false      # true: a pressure past any edge of the cells (front, right, left too) turns the
                               # sole about it until it lies flat (eq. 2'); false: the heel's edge only
        step_up: false         # true: a swing lands on the level its stance sole found and rises over a step up
                               # learned, or struck, before it moves forward (eq. 3); false: the plan's floor
        step_min_m: 0.003      # the stance sole this much above the swing sole at its lift-off: a step up
        step_lift_s: 0.25      # s, the swing's rise to the learned level, and its forward move held meanwhile
        step_clearance_m: 0.015 # over the learned level while the plan rises, gone as it lands
        strike_min_m: 0.003    # a rising swing sole this high in the plan whose cells load: a strike
        strike_raise_m: 0.01   # the sole rises this much more per strike (to bound_m in all), and lands no lower
                               # than where it struck
        strike_s: 0.1          # s, that raise, and the sole's move forward held again meanwhile
        strike_back_m: 0.005   # the toe steps back from what it struck by up to this meanwhile
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from models.common.errors import ConfigError
from models.common.validation import Section

from stabilizer.feet import CELLS, PARAMS, P_COMPLIANCE, P_DAMPING, P_EDGE_CYCLES, P_EDGE_FRACTION, P_EDGE_SHARE
from stabilizer.pelvis_state import ACCEPT
from stabilizer import touchdown as td
from stabilizer.feet import (P_ACCEPT, P_G0, P_COP_TAU, P_FLAT, P_FLATTEN, P_MAX_ACCEL, P_MAX_OFFSET,
                             P_MAX_RATE, P_MIN_LOAD, P_RELEASE_TAU, P_SLOPE_TAU, P_WALK_ACCEL, P_WALK_DAMPING,
                             P_WALK_RATE)


@dataclass(frozen=True)
class FeetConfig:
    min_load: float = 50.0
    compliance: bool = False
    damping: float = 2000.0
    max_rate: float = 0.03
    max_accel: float = 0.5
    max_offset: float = math.radians(10.0)
    release_tau: float = 0.2
    cop_tau: float = 0.3
    flat_fraction: float = 0.1
    slope_tau: float = 1.0
    tilt_input: bool = False
    edge_fraction: float = 0.05
    edge_share: float = 0.3
    edge_hold: float = 0.15
    touchdown: bool = False
    touch_load: float = 50.0
    bound: float = 0.025
    speed: float = 0.05
    accel: float = 1.0
    delay: float = 0.06
    release: float = 0.3
    min_offset: float = 0.001
    tilt_margin: float = 0.005
    tilt_share: float = 0.3
    tilt_delay: float = 0.03
    tilt_speed: float = 0.4
    tilt_accel: float = 4.0
    tilt_max: float = math.radians(6.0)
    tilt_edges: bool = False
    step_up: bool = False
    step_min: float = 0.003
    step_lift: float = 0.25
    step_clearance: float = 0.015
    strike_min: float = 0.003
    strike_raise: float = 0.01
    strike_s: float = 0.1
    strike_back: float = 0.005
    flatten: bool = False
    walk_damping: float = 500.0
    walk_rate: float = 0.1
    walk_accel: float = 1.0

    def params(self, period: float, g0: float = 9.81) -> np.ndarray:
        """The kernels' parameter buffer (stabilizer.feet.PARAMS) at the loop's ``period``, gravity ``g0``."""
        p = np.zeros(PARAMS.size())
        p[P_G0], p[P_ACCEPT] = g0, ACCEPT
        p[P_COMPLIANCE], p[P_MIN_LOAD], p[P_DAMPING] = float(self.compliance), self.min_load, self.damping
        p[P_MAX_RATE], p[P_MAX_OFFSET], p[P_RELEASE_TAU] = self.max_rate, self.max_offset, self.release_tau
        p[P_MAX_ACCEL] = self.max_accel
        p[P_COP_TAU] = self.cop_tau
        p[P_FLAT], p[P_SLOPE_TAU] = self.flat_fraction, self.slope_tau
        p[P_EDGE_FRACTION], p[P_EDGE_SHARE] = self.edge_fraction, self.edge_share
        p[P_EDGE_CYCLES] = float(max(1, round(self.edge_hold / period)))
        p[P_FLATTEN], p[P_WALK_DAMPING] = float(self.flatten), self.walk_damping
        p[P_WALK_RATE], p[P_WALK_ACCEL] = self.walk_rate, self.walk_accel
        return p

    def touchdown_params(self) -> np.ndarray:
        """The touch-down kernel's parameter buffer (stabilizer.touchdown.PARAMS)."""
        p = np.zeros(td.PARAMS.size())
        p[td.P_ENABLED], p[td.P_TOUCH], p[td.P_BOUND] = float(self.touchdown), self.touch_load, self.bound
        p[td.P_SPEED], p[td.P_ACCEL], p[td.P_DELAY] = self.speed, self.accel, self.delay
        p[td.P_RELEASE], p[td.P_MIN] = self.release, self.min_offset
        p[td.P_TILT_MARGIN], p[td.P_TILT_SHARE], p[td.P_TILT_DELAY] = self.tilt_margin, self.tilt_share, self.tilt_delay
        p[td.P_TILT_SPEED], p[td.P_TILT_ACCEL], p[td.P_TILT_MAX] = self.tilt_speed, self.tilt_accel, self.tilt_max
        p[td.P_TILT_EDGES] = float(self.tilt_edges)
        p[td.P_STEP_UP], p[td.P_STEP_MIN], p[td.P_LIFT] = float(self.step_up), self.step_min, self.step_lift
        p[td.P_CLEARANCE], p[td.P_STRIKE_MIN], p[td.P_STRIKE_RAISE] = (self.step_clearance, self.strike_min,
                                                                      self.strike_raise)
        p[td.P_STRIKE_S], p[td.P_STRIKE_BACK] = self.strike_s, self.strike_back
        return p


def _fraction(sec: Section, name: str, default: float, high: float) -> float:
    v = sec.number(name, default)
    if not 0.0 <= v < high:
        raise ConfigError(sec.where, sec.path(name), f"{v:g}: expected a share of the foot's load in [0, {high:g})")
    return v


def parse_feet(sec: Section) -> FeetConfig:
    """The validated ``feet:`` section (module docstring); absent keys take the defaults."""
    d = FeetConfig()
    min_load = sec.number("min_load", d.min_load, positive=True)
    c = sec.sub("compliance", {})
    enabled = c.raw("enabled", d.compliance)
    if not isinstance(enabled, bool):
        raise ConfigError(c.where, c.path("enabled"), f"expected true or false, got {enabled!r}")
    damping = c.number("damping", d.damping, positive=True)
    max_rate = c.number("max_rate", d.max_rate, positive=True)
    max_accel = c.number("max_accel", d.max_accel, positive=True)
    max_offset = c.angle("max_offset", d.max_offset)
    if not 0.0 < max_offset <= math.radians(20.0):
        raise ConfigError(c.where, c.path("max_offset"), f"{math.degrees(max_offset):g} deg: expected within "
                          "(0, 20] deg of the ankle's reference")
    release_tau = c.number("release_tau", d.release_tau, positive=True)
    cop_tau = c.number("cop_tau", d.cop_tau, positive=True)
    c.done()
    w = sec.sub("flatten", {})
    flatten = w.raw("enabled", d.flatten)
    if not isinstance(flatten, bool):
        raise ConfigError(w.where, w.path("enabled"), f"expected true or false, got {flatten!r}")
    walk = (w.number("damping", d.walk_damping, positive=True),
            w.number("max_rate", d.walk_rate, positive=True), w.number("max_accel", d.walk_accel, positive=True))
    w.done()
    s = sec.sub("slope", {})
    flat = _fraction(s, "flat_fraction", d.flat_fraction, 0.25)
    tau = s.number("tau", d.slope_tau, positive=True)
    tilt_input = s.raw("tilt_input", d.tilt_input)
    if not isinstance(tilt_input, bool):
        raise ConfigError(s.where, s.path("tilt_input"), f"expected true or false, got {tilt_input!r}")
    s.done()
    e = sec.sub("edge", {})
    fraction = _fraction(e, "fraction", d.edge_fraction, 0.25)
    share = _fraction(e, "share", d.edge_share, 1.0)
    hold = e.number("hold_s", d.edge_hold, positive=True)
    e.done()
    t = sec.sub("touchdown", {})
    landing = t.raw("enabled", d.touchdown)
    if not isinstance(landing, bool):
        raise ConfigError(t.where, t.path("enabled"), f"expected true or false, got {landing!r}")
    edges, step_up = t.raw("tilt_edges", d.tilt_edges), t.raw("step_up", d.step_up)
    for key, flag in (("tilt_edges", edges), ("step_up", step_up)):
        if not isinstance(flag, bool):
            raise ConfigError(t.where, t.path(key), f"expected true or false, got {flag!r}")
    touch = (t.number("touch_load", d.touch_load, positive=True), t.number("bound_m", d.bound, positive=True),
             t.number("speed", d.speed, positive=True), t.number("accel", d.accel, positive=True),
             t.number("delay_s", d.delay, positive=True), t.number("release_s", d.release, positive=True),
             t.number("min_offset_m", d.min_offset, positive=True),
             t.number("tilt_margin_m", d.tilt_margin, positive=True), _fraction(t, "tilt_share", d.tilt_share, 1.0),
             t.number("tilt_delay_s", d.tilt_delay, positive=True),
             t.number("tilt_speed", d.tilt_speed, positive=True), t.number("tilt_accel", d.tilt_accel, positive=True),
             t.angle("tilt_max", d.tilt_max))
    if not 0.0 < touch[-1] <= math.radians(15.0):
        raise ConfigError(t.where, t.path("tilt_max"), f"{math.degrees(touch[-1]):g} deg: expected within (0, 15] deg")
    step = (t.number("step_min_m", d.step_min, positive=True), t.number("step_lift_s", d.step_lift, positive=True),
            t.number("step_clearance_m", d.step_clearance, positive=True),
            t.number("strike_min_m", d.strike_min, positive=True),
            t.number("strike_raise_m", d.strike_raise, positive=True), t.number("strike_s", d.strike_s, positive=True),
            t.number("strike_back_m", d.strike_back, nonnegative=True))
    t.done()
    sec.done()
    return FeetConfig(min_load, enabled, damping, max_rate, max_accel, max_offset, release_tau, cop_tau, flat, tau,
                      tilt_input, fraction, share, hold, landing, *touch, edges, step_up, *step, flatten, *walk)


@dataclass(frozen=True)
class FeetGeometry:
    """Per foot (left, right: the description's ``feet`` order): cells (foot, cell, xy) in the sole frame,
    their centre (foot, xy), the ankle joints (foot, axis: the joint nearer the shank, then the one
    carrying the foot) and their axes (foot, axis, xy) in the sole frame, the foot moving."""
    cells: np.ndarray
    centre: np.ndarray
    ankles: np.ndarray
    axes: np.ndarray


def feet_geometry(robot) -> FeetGeometry:
    """The feet of a tree robot (models.tree.robot.TreeRobot) with two feet of four cells each; the ankle
    axes at its zero posture, the model rooted away from the sole (its base, else the other sole)."""
    from models.tree.robot import TreeRobot

    desc = robot.description
    frames = {f.name: f for f in desc.frames}
    names = [t.joint.name for t in desc.joints]
    twin = TreeRobot(desc)
    cells, ankles, axes = np.zeros((2, CELLS, 2)), np.zeros((2, 2), np.int64), np.zeros((2, 2, 2))
    for f, foot in enumerate(desc.feet):
        sole = np.array(frames[foot.frame].pose)
        inv = np.linalg.inv(sole)
        cells[f] = [(inv @ np.array(frames[s].pose))[:2, 3] for s in foot.sensors]
        child = frames[foot.frame].body
        chain = []
        for _ in range(2):
            j = next(k for k, t in enumerate(desc.joints) if t.child == child)
            chain.append(j)
            child = desc.joints[j].parent
        ankles[f] = chain[::-1]
        other = desc.feet[1 - f].frame
        twin.set_root(desc.base if desc.base in desc.roots else other)
        q0 = np.zeros(desc.n)
        R = twin.frame(q0, foot.frame)[:3, :3]
        w = R.T @ twin.frame_jacobian(q0, foot.frame)[3:]
        for a in range(2):
            axes[f, a] = w[:2, ankles[f, a]]
        if not all(abs(np.linalg.norm(w[:, ankles[f, a]]) - 1.0) < 1e-9 for a in range(2)):
            raise ConfigError(desc.source, f"feet.{foot.name}", f"the joints {names[chain[0]]}, {names[chain[1]]} "
                              "carrying the sole are not both revolute")
    return FeetGeometry(cells, cells.mean(axis=1), ankles, axes)
