"""Figures of a walk played on the whole robot (``bipd scenario walk``), from the recorded series.

The thesis' walking experiment (Gastebois 2017, §2.6.2: two steps at 360 m/h from an offline gait,
BIP 2000 hung from a gantry by the hip) bounds two figures, checked here as pass/fail:
the knee tracking error |q − q_ref| ≤ :data:`KNEE_BOUND_DEG` and the drives' following error (their
CSP position demand − actual, motor side) ≤ :data:`FOLLOWING_BOUND_DEG` of motor turn. The following
error is the drives' own (object 0x60F4, its peak between two HIL truth frames), not the controller's
view of it. The robot *fell* when the HIL's ``fallen`` latch is set (pelvis 0.2 m below its height at
reset, or tilted more than 30°); how far it got is the pelvis' forward (x) travel from the start of
the walk to the fall, or to the end. The ZMP margin is the signed distance (> 0 inside) of the
whole robot's ZMP/CoP to the edges of the support polygon of the feet in contact
(:func:`models.gait.checks.margin`, the gait generator's own check), NaN in the air; it is outside
beyond :data:`OUTSIDE_M`.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from models.gait.checks import margin

from controller.tools.scenarios.metrics import POWERED, state_sequence

KNEE_BOUND_DEG = 1.3
FOLLOWING_BOUND_DEG = 0.3
OUTSIDE_M = 1e-6         # a ZMP counts as outside its polygon beyond this (the load cells' CoP on an edge
                         # comes out within rounding of it)
KNEES = ("l_knee", "r_knee")
TRUTH_KEYS = ("t", "pelvis_position", "zmp", "support_polygon", "support_count", "fallen", "following_error",
              "foot_lift", "foot_load", "contact")
"""The HIL truth fields a walk records."""


def biped_fell(truth: dict) -> bool:
    """The fall test of one truth frame: the HIL's ``fallen`` latch."""
    return bool(truth["fallen"] >= 1.0)


def joint_errors_deg(tel: dict[str, np.ndarray], joints: list[str]) -> dict[str, float | None]:
    """Per joint, the largest |q − q_ref| (deg) over the telemetry frames with the drives powered."""
    on = np.isin(tel["state"], POWERED)
    if not on.any():
        return {j: None for j in joints}
    err = np.degrees(np.nanmax(np.abs(tel["q"][on] - tel["q_ref"][on]), axis=0))
    return {j: float(e) for j, e in zip(joints, err)}


def following_errors_deg(following: np.ndarray, axes: list[str]) -> dict[str, float | None]:
    """Per bus axis, the largest peak following error of the truth frames ``following`` (frames,
    axes; motor rad), in degrees of motor turn."""
    if following.size == 0:
        return {a: None for a in axes}
    return {a: float(e) for a, e in zip(axes, np.degrees(np.nanmax(np.abs(following), axis=0)))}


def support_margins(zmp: np.ndarray, polygons: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Signed margin (m, > 0 inside) of each ZMP ``zmp[k]`` (x, y) to its support polygon
    ``polygons[k]`` (x, y pairs, counter-clockwise, NaN-padded) of ``counts[k]`` vertices; NaN
    where the ZMP is undefined or the polygon has fewer than 3 vertices."""
    out = np.full(len(zmp), np.nan)
    for k in range(len(zmp)):
        n = int(counts[k]) if np.isfinite(counts[k]) else 0
        if n >= 3:
            out[k] = margin(polygons[k, :2 * n].reshape(n, 2), zmp[k])
    return out


def travel(truth: dict[str, np.ndarray]) -> tuple[bool, float | None, float | None]:
    """(fell, time of the fall or None, forward pelvis travel (m) from the first frame to the fall,
    or to the last frame; None without frames)."""
    t, x = truth["t"], truth["pelvis_position"]
    if t.size == 0:
        return False, None, None
    fallen = truth["fallen"] >= 1.0
    k = int(np.argmax(fallen)) if fallen.any() else len(t) - 1
    return bool(fallen.any()), (float(t[k]) if fallen.any() else None), float(x[k, 0] - x[0, 0])


def _worst(values: dict[str, float | None], among: tuple[str, ...] | None = None) -> tuple[str | None, float | None]:
    known = {k: v for k, v in values.items() if v is not None and (among is None or k in among)}
    if not known:
        return None, None
    name = max(known, key=known.get)
    return name, known[name]


@dataclass
class WalkResult:
    gait: str
    mount: str                                 # hung (gantry) or ground
    steps: int | None
    fell: bool
    fell_at_s: float | None
    distance_m: float | None                   # pelvis forward travel to the fall or the end
    completed: bool                            # played to its last sample, back to HOLD, not fallen
    joint_error_deg: dict[str, float | None]
    knee_error_deg: float | None
    knee_pass: bool | None
    following_error_deg: dict[str, float | None]
    following_error_max_deg: float | None
    following_error_axis: str | None
    following_pass: bool | None
    min_zmp_margin_m: float | None
    zmp_outside_s: float                       # s of truth frames with the ZMP outside the polygon
    overruns: int
    missed_cycles: int
    sim_s: float
    wall_s: float
    speed_x_realtime: float | None
    states: list[str]
    faults: list[str]
    aborted: str | None = None
    bounds: dict[str, float] = field(default_factory=lambda: {"knee_error_deg": KNEE_BOUND_DEG,
                                                              "following_error_deg": FOLLOWING_BOUND_DEG})
    plots: list[str] = field(default_factory=list)
    terrain: dict[str, float] = field(default_factory=dict)   # the ground built into the HIL only
    push: dict[str, Any] | None = None         # the impulse on the pelvis during the walk
    stabilizer: str | None = None              # the stabilized walk's mode, None: open-loop gait
    stabilizer_note: str = ""                  # what ran, in words
    estimated_slope_deg: dict[str, float] | None = None   # the ground's pitch, roll the robot estimated at the end
    estimated_slope_note: str = ""
    edges: list[dict[str, Any]] = field(default_factory=list)   # the feet's landings on an edge (EDGE events)
    landings: list[dict[str, Any]] = field(default_factory=list)   # each swing foot's contact against the plan's
    touchdowns: list[dict[str, Any]] = field(default_factory=list)   # the landings the cells moved (TOUCHDOWN events)
    toe_downs: list[dict[str, Any]] = field(default_factory=list)   # the soles turned over an edge (TOE_DOWN events)
    side_downs: list[dict[str, Any]] = field(default_factory=list)  # the soles turned about a side (SIDE_DOWN events)
    strikes: list[dict[str, Any]] = field(default_factory=list)     # the rising swing soles that struck (STRIKE events)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def estimated_slope(tel: dict[str, np.ndarray]) -> dict[str, float] | None:
    """The last ground slope the telemetry holds (``ground_slope``: pitch > 0 uphill, roll > 0 rising to the
    left, stabilizer.feet eq. 3) in degrees, None if it never knew one."""
    g = tel.get("ground_slope")
    if g is None:
        return None
    known = g[np.isfinite(g).all(axis=1)] if g.ndim == 2 else g[:0]
    if not known.size:
        return None
    pitch, roll = np.degrees(known[-1])
    return {"pitch": round(float(pitch), 4), "roll": round(float(roll), 4)}


def _event_rows(events: list[dict], period: float, kind: str, *keys: str) -> list[dict[str, Any]]:
    """The ``kind`` events: when (s, the loop's time: cycle x ``period``) and their ``keys``."""
    return [{"t": round(e["cycle"] * period, 6), **{k: e.get(k) for k in keys}} for e in events if e.get("kind") == kind]


def edge_landings(events: list[dict], period: float) -> list[dict[str, Any]]:
    """The EDGE events: when (s, the loop's time), which foot, its unloaded cells."""
    return _event_rows(events, period, "EDGE", "foot", "cells")


def adapted_landings(events: list[dict], period: float) -> list[dict[str, Any]]:
    """The TOUCHDOWN events: when (s, the loop's time), which foot, its sole's offset from the plan (m, > 0
    higher: an early contact held; < 0 a late one that descended)."""
    return _event_rows(events, period, "TOUCHDOWN", "foot", "offset_m")


def toe_downs(events: list[dict], period: float) -> list[dict[str, Any]]:
    """The TOE_DOWN events: when (s, the loop's time), which foot, the pitch (deg, toes down) its sole, landed
    across an edge, turned to until its toes found the ground."""
    return _event_rows(events, period, "TOE_DOWN", "foot", "pitch_deg")


def side_downs(events: list[dict], period: float) -> list[dict[str, Any]]:
    """The SIDE_DOWN events: when (s, the loop's time), which foot, the roll (deg, > 0 right side down) its sole,
    landed on one side's edge, turned to until that side found the ground."""
    return _event_rows(events, period, "SIDE_DOWN", "foot", "roll_deg")


def strikes(events: list[dict], period: float) -> list[dict[str, Any]]:
    """The STRIKE events: when (s, the loop's time), which foot, the raise (m) over the plan its rising sole, having
    struck something (a riser), rose to."""
    return _event_rows(events, period, "STRIKE", "foot", "raise_m")


FEET = ("left", "right")
"""The feet in the order of the truth's per-foot columns (``foot_lift``, ``foot_load``, ``contact``)."""


def plan_phases(events: list[dict], period: float) -> list[tuple[float, str]]:
    """The file's support phases as the loop played them (SUPPORT events): (loop time s, phase)."""
    return [(e["cycle"] * period, str(e.get("support"))) for e in events if e.get("kind") == "SUPPORT"]


FREE_S = 0.1
"""A swing foot's cells must have carried nothing this long (s) before a load counts as its touch-down:
as the soft lift-off sheds the load the contact flag flickers about its threshold for a few frames."""


def _touch_down(t: np.ndarray, loaded: np.ndarray, t_lift: float) -> float | None:
    """The first time ``loaded`` after a run of unloaded frames lasting :data:`FREE_S` from ``t_lift`` on."""
    free_since = None
    for i in np.flatnonzero(t >= t_lift):
        if not loaded[i]:
            free_since = t[i] if free_since is None else free_since
        elif free_since is not None and t[i] - free_since >= FREE_S:
            return float(t[i])
        else:
            free_since = None
    return None


def landings(events: list[dict], period: float, truth: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """Each swing of the plan (a single support on one foot, then double support): the swinging foot, the
    plan's touch-down (the loop's time), and when its cells first carried a load (the HIL's ``contact``
    flag) after they had let go of it for :data:`FREE_S` since its lift-off: ``early_s`` > 0 that much before the plan, < 0
    after it; None if it never came (a fall, a fault). A toe catching an obstacle mid-swing counts. A swing
    the run ended in (a fall, a fault) has no plan time (None) but its contact if there was one."""
    phases = plan_phases(events, period)
    t, contact = truth["t"], truth["contact"]
    out = []
    for (t_lift, stance), (t_down, nxt) in zip(phases, phases[1:] + [(None, None)]):
        if stance not in FEET or nxt not in ("double", None):
            continue
        foot = 1 - FEET.index(stance)
        at = _touch_down(t, contact[:, foot] >= 0.5, t_lift)
        out.append({"foot": FEET[foot], "plan_s": None if t_down is None else round(t_down, 4),
                    "contact_s": None if at is None else round(at, 4),
                    "early_s": None if at is None or t_down is None else round(t_down - at, 4)})
    return out


def evaluate_walk(gait: str, mount: str, steps: int | None, tel: dict[str, np.ndarray],
                  truth: dict[str, np.ndarray], events: list[dict], joints: list[str], axes: list[str],
                  stats: dict[str, Any], sim_s: float, wall_s: float, aborted: str | None) -> WalkResult:
    """The figures of one walk from its measured part (telemetry and truth columns, loop events)."""
    fell, fell_at, distance = travel(truth)
    errors = joint_errors_deg(tel, joints)
    _, knee = _worst(errors, KNEES)
    following = following_errors_deg(truth["following_error"], axes)
    axis, worst = _worst(following)
    margins = support_margins(truth["zmp"], truth["support_polygon"], truth["support_count"])
    dt = float(np.median(np.diff(truth["t"]))) if truth["t"].size > 1 else 0.0
    states = state_sequence(tel["state"])
    finite = margins[np.isfinite(margins)]
    return WalkResult(
        gait=gait, mount=mount, steps=steps, fell=fell, fell_at_s=fell_at,
        distance_m=None if distance is None else round(distance, 4),
        completed=not fell and aborted is None and "MOVING" in states and states[-1] == "HOLD",
        joint_error_deg=errors, knee_error_deg=knee,
        knee_pass=None if knee is None else knee <= KNEE_BOUND_DEG,
        following_error_deg=following, following_error_max_deg=worst, following_error_axis=axis,
        following_pass=None if worst is None else worst <= FOLLOWING_BOUND_DEG,
        min_zmp_margin_m=float(finite.min()) if finite.size else None,
        zmp_outside_s=round(float((finite < -OUTSIDE_M).sum()) * dt, 3),
        overruns=int(stats["overruns"]), missed_cycles=int(stats["missed_cycles"]),
        sim_s=round(sim_s, 3), wall_s=round(wall_s, 3),
        speed_x_realtime=round(sim_s / wall_s, 2) if wall_s > 0 else None,
        states=states, faults=[str(e.get("reason")) for e in events if e.get("kind") == "FAULT"],
        aborted=aborted, estimated_slope_deg=estimated_slope(tel))
