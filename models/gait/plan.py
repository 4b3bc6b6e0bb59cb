"""Footstep plan, timeline, ZMP reference and swing-foot curve of an N-step walk.

World frame: on the floor midway between the soles of the initial posture, x forward,
y left, z up. Phases: the initial move (from the legs just off their stretched stop, pelvis
``start_flex`` below the zero posture, to the flexed posture, a quintic in joint space), a hold in the flexed posture (the preview control starts there, ahead of the
first ZMP move), a double support shifting the ZMP onto the first stance foot, then per step a
single support (the swing foot on its curve: a quintic along the ground, a quick lift to a
``clearance`` under a ``step_height`` bell up: the toe clears a riser just ahead of it) and a double support (the ZMP moving
linearly to the next stance foot); the last double support brings the ZMP midway between
the two final footprints and holds it while the CoG settles. The first swing foot is the
right one. A swing sole leaves and meets the floor ``sink`` above the stance sole at rest (the
stance sole stands sunk into a compliant floor: aimed at its plane, the swing sole met the floor
early, still descending) and is lowered into (raised out of) it over the double support's first
(last) ``t_sink``: a soft landing and lift-off. The step length is chosen so that the CoG, at rest at both ends, travels the
requested mean speed × the duration of the walking phase (everything after the hold);
:func:`models.gait.wholebody.generate` then corrects it so that the pelvis does.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from numba import vectorize

from models.common.support import DOUBLE, LEFT, RIGHT


@dataclass(frozen=True)
class GaitParams:
    """Timing (s), geometry (m) and sampling of a gait; speed in m/s."""

    speed: float = 0.1
    steps: int = 2
    period: float = 0.002
    t_init: float = 3.0          # start posture -> flexed posture
    t_hold: float = 1.0          # standing flexed: the preview control's lead-in
    t_shift: float = 0.7         # first double support (ZMP onto the first stance foot)
    t_single: float = 1.0        # single support of each step
    t_double: float = 0.3        # double support between steps
    t_end: float = 1.0           # final double support: the ZMP to the middle in t_double, then held (the CoG settles)
    step_height: float = 0.035   # swing-foot height at mid-swing (the bell's top; 0.04 before the quick lift
                                 # added its clearance: the trailing ankle then passed its soft limit)
    clearance: float = 0.012     # the swing sole rises this far over its first t_lift (and comes down from it
    t_lift: float = 0.3          # over its last), under the bell: its toe clears a riser just ahead of it
    flex: float = 0.05           # pelvis lowered from the zero posture (slightly flexed legs)
    start_flex: float = 5e-4     # pelvis lowered at the first sample: knees ~0.07 rad off their stretched
                                 # stop (q = 0 is the knees' limit, which a controller keeps a margin from:
                                 # a file starting there is clamped, then released with a velocity step)
    foot_spacing: float = 0.2    # lateral distance between the soles (the model's at q = 0)
    sink: float = 6e-5           # the stance sole's sink into the floor under the robot (m): a swing sole leaves
                                 # and meets the floor this far above the stance sole, at rest (soft landing)
    t_sink: float = 0.05         # the landed sole lowered by ``sink`` over the double support's first t_sink,
                                 # the sole about to lift raised by it over its last t_sink (s)

    def sink_profile(self, t: np.ndarray, duration: float) -> np.ndarray:
        """0 → 1 over the first ``t_sink`` of a phase of ``duration`` (a quintic, at rest at both ends; the
        whole phase if shorter), at the phase's times ``t`` (s from its start)."""
        return quintic(t / min(self.t_sink, duration))

    def lift(self, s: np.ndarray) -> np.ndarray:
        """The swing sole's height above its lift-off plane at the swing's progress ``s`` (0 → 1): a quick
        lift to ``clearance`` over the swing's first ``t_lift`` (a quintic; its mirror over the last) under
        the rest of the ``step_height`` as a bell,

            z(s) = c min(quintic(s / r), quintic((1 − s) / r)) + (h − c) bell(s),    r = t_lift / t_single,

        at rest at both ends; the move along the ground, a quintic over the whole swing, has gone 2 % of a
        step (5 mm of the 0.256 m at 360 m/h) by s ≈ 0.13, where the sole is 7 mm up (3.6 mm with the bell
        alone)."""
        c, h, r = self.clearance, self.step_height, self.t_lift / self.t_single
        return c * np.minimum(quintic(s / r), quintic((1.0 - s) / r)) + (h - c) * bell(s)

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def t_walk(self) -> float:
        """Duration of the walking phase (after the initial move and the hold)."""
        return self.t_shift + self.steps * self.t_single + (self.steps - 1) * self.t_double + self.t_end


@vectorize(["float64(float64)"], cache=True)
def quintic(s):
    """10s³ − 15s⁴ + 6s⁵: 0 → 1 with zero velocity and acceleration at both ends (a ufunc: arrays, and
    scalars in Numba kernels, the recovery step's swing: stabilizer.push_recovery)."""
    s = min(max(s, 0.0), 1.0)
    return s ** 3 * (10.0 - 15.0 * s + 6.0 * s * s)


@vectorize(["float64(float64)"], cache=True)
def bell(s):
    """64 s³(1 − s)³: 0 at both ends with zero velocity and acceleration, 1 at s = ½ (a ufunc, as quintic)."""
    s = min(max(s, 0.0), 1.0)
    return 64.0 * s ** 3 * (1.0 - s) ** 3


@dataclass
class Plan:
    """The sampled plan: time t (k,), support (k,) in LEFT/RIGHT/DOUBLE, the stance foot
    whose sole roots the model (k,) (LEFT or RIGHT), the ZMP reference (k, 2), the swing
    sole's world position (k, 3) (the other foot's, fixed, in double support), the stance
    sole's world position (k, 3); walk_start: the first sample after the initial move (the IK
    and the preview control start there); speed_start: the first sample of the walking phase;
    footprints:
    [(foot, x, y)] in order; step_length (m)."""

    t: np.ndarray
    support: np.ndarray
    stance: np.ndarray
    zmp_ref: np.ndarray
    swing: np.ndarray
    stance_pos: np.ndarray
    walk_start: int
    speed_start: int
    footprints: list
    step_length: float


def step_length(params: GaitParams, cog_start_x: float, centre_x: float) -> float:
    """s such that the CoG travels speed × t_walk: from cog_start_x to the midpoint of the
    last two footprints, centre_x + (N − ½) s."""
    return (params.speed * params.t_walk - (centre_x - cog_start_x)) / (params.steps - 0.5)


def make_plan(params: GaitParams, cog_start: np.ndarray, centre: np.ndarray, s: float) -> Plan:
    """Sample the plan; cog_start: CoG (x, y) of the flexed posture; centre: the sole
    outline's centroid in the sole frame (where the ZMP reference sits on a foot)."""
    T, half = params.period, params.foot_spacing / 2.0
    pos = {LEFT: np.array([0.0, half]), RIGHT: np.array([0.0, -half])}
    footprints = [(LEFT, 0.0, half), (RIGHT, 0.0, -half)]
    # phases: (duration, support, stance, swing foot, swing from, swing to, zmp from, zmp to)
    z0 = np.asarray(cog_start, dtype=float)
    phases = [(params.t_hold, DOUBLE, LEFT, None, None, None, z0, z0)]
    phases.append((params.t_shift, DOUBLE, LEFT, None, None, None, z0, pos[LEFT] + centre))
    swing_foot = RIGHT
    for k in range(params.steps):
        stance = LEFT if swing_foot == RIGHT else RIGHT
        start = pos[swing_foot].copy()
        goal = np.array([pos[stance][0] + s, start[1]])
        zs = pos[stance] + centre
        phases.append((params.t_single, swing_foot ^ 1, stance, swing_foot, start, goal, zs, zs))
        pos[swing_foot] = goal
        footprints.append((swing_foot, goal[0], goal[1]))
        last = k == params.steps - 1
        zmp_to = (pos[LEFT] + pos[RIGHT]) / 2.0 + centre if last else pos[swing_foot] + centre
        move = min(params.t_double, params.t_end) if last else params.t_double
        phases.append((move, DOUBLE, swing_foot, None, None, None, zs, zmp_to))
        if last and params.t_end > move:    # the ZMP held midway for the rest of t_end: the CoG settles
            phases.append((params.t_end - move, DOUBLE, swing_foot, None, None, None, zmp_to, zmp_to))
        swing_foot = stance
    n_init = int(round(params.t_init / T))
    counts = [int(round(p[0] / T)) for p in phases]
    total = n_init + sum(counts) + 1
    t = np.arange(total) * T
    support = np.full(total, DOUBLE, dtype=np.int64)
    stance = np.full(total, LEFT, dtype=np.int64)
    zmp = np.empty((total, 2))
    swing = np.empty((total, 3))
    stance_pos = np.zeros((total, 3))
    zmp[:n_init + 1] = z0
    swing[:n_init + 1] = (0.0, -half, 0.0)
    stance_pos[:n_init + 1, :2] = (0.0, half)
    k0 = n_init
    feet = {LEFT: np.array([0.0, half]), RIGHT: np.array([0.0, -half])}
    # soft landing and lift-off: a sole meets and leaves the floor ``sink`` above the stance sole, at rest; in
    # double support the plan roots at the sole that landed (lowered into the floor over t_sink) and the
    # other sole, the next to swing, is raised out of it over the last t_sink
    lifts = [i + 1 < len(phases) and phases[i + 1][3] is not None for i in range(len(phases))]
    landed = False
    for i, ((dur, sup, st, sw, a, b, za, zb), n) in enumerate(zip(phases, counts)):
        s_ = (np.arange(1, n + 1)) / n
        ks = slice(k0 + 1, k0 + n + 1)
        support[ks], stance[ks] = sup, st
        zmp[ks] = za + np.outer(s_, zb - za)
        stance_pos[ks, :2] = feet[st]
        if sw is None:
            swing[ks, :2] = feet[st ^ 1]
            tk = s_ * dur
            stance_pos[ks, 2] = params.sink * (1.0 - params.sink_profile(tk, dur)) if landed else 0.0
            lead = dur - min(params.t_sink, dur)
            swing[ks, 2] = params.sink * params.sink_profile(tk - lead, dur) if lifts[i] else 0.0
            landed = False
        else:
            swing[ks, :2] = a + np.outer(quintic(s_), b - a)
            swing[ks, 2] = params.sink + params.lift(s_)
            feet[sw] = b
            landed = True
        k0 += n
    return Plan(t, support, stance, zmp, swing, stance_pos, n_init, n_init + counts[0], footprints, s)
