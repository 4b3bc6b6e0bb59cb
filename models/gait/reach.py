"""The legs' sagittal reach and joint speeds along a plan, estimated before the whole-body IK.

Each leg in its sagittal plane as two links, the thigh (l_t, hip-pitch axis to knee) and the
shank (l_s, knee to ankle), with the pelvis upright and the sole flat: φ_t = −q_hip_pitch and
φ_s = q_ankle_sagittal are the forward leans of thigh and shank, q_knee = φ_t − φ_s, and the
ankle lies d = l_t sin φ_t + l_s sin φ_s ahead of the hip and H = l_t cos φ_t + l_s cos φ_s
below it. The inverse is the two-link inverse geometry (Khalil & Dombre, the planar 2R arm):
cos q_knee = (r² − l_t² − l_s²)/(2 l_t l_s), φ_t = atan2(d, H) + acos((l_t² + r² − l_s²)/(2 l_t r)),
r² = d² + H² + y² (y the lateral offset, which the hip roll takes). The hips ride on the CoG of
the preview control at their offsets to it in the flexed posture, at its height; the ankles on
the plan's soles. Sampled at the gait's period, these angles give the legs' limits and speeds
that the step length and the speed ask for, before any IK is run.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.tree.robot import TreeRobot
from models.common.support import LEFT, RIGHT
from models.gait.plan import Plan

LEGS = {LEFT: "l_", RIGHT: "r_"}
SAGITTAL = ("hip_pitch", "knee", "ankle_sagittal")


# The whole-body IK moves the legs faster than this estimate (the pelvis and the trunk
# carry the CoG too): 5-15 % on the walks of models/gait/sweep.py that pass their checks,
# about 25 % on those that failed the velocity check before this refusal. A plan whose
# estimate passes SPEED_SHARE of a joint's velocity limit is refused (0.9 until the swing's quick
# lift: 9 steps at 720 m/h then estimated 0.893 of r_ankle_sagittal's and the IK moved r_knee past
# its limit, 2.545 rad/s; 10 steps, 0.876, pass their checks).
SPEED_SHARE = 0.89
LIMIT_MARGIN = 0.01          # rad kept from a sagittal joint's limit by the estimate


@dataclass
class LegDemand:
    """Per leg (LEFT, RIGHT): q (k, 3) hip pitch, knee, ankle sagittal (nan out of reach),
    ahead (k,) the ankle's distance ahead of the hip, height (k,) the hip above the ankle
    (lateral offset included); l_t, l_s the thigh and shank lengths."""

    q: dict
    ahead: dict
    height: dict
    l_t: float
    l_s: float


def leg_demand(robot: TreeRobot, plan: Plan, cog: np.ndarray, q_flex: np.ndarray,
               foot_spacing: float) -> LegDemand:
    """The sagittal angles of both legs along the plan (module docstring); cog (k, 2) world."""
    m = robot.model

    def body(name: str) -> int:
        return m.index("body", name)

    robot.set_root("left_sole")
    Tb0 = robot.kinematics(np.zeros(robot.n)).Tb.copy()
    ankle_up = Tb0[body("l_ankle_cardan"), 2, 3]                      # the ankle centre above its sole
    l_t = float(np.linalg.norm(Tb0[body("l_shank"), :3, 3] - Tb0[body("l_thigh"), :3, 3]))
    l_s = float(np.linalg.norm(Tb0[body("l_ankle_cardan"), :3, 3] - Tb0[body("l_shank"), :3, 3]))
    shift = np.array([0.0, foot_spacing / 2.0, 0.0])                  # left sole frame -> world
    com = robot.com(q_flex) + shift
    Tb = robot.kinematics(q_flex).Tb
    q, ahead, height = {}, {}, {}
    for leg, prefix in LEGS.items():
        hip = Tb[body(prefix + "thigh"), :3, 3] + shift
        hip_xy = cog + (hip[:2] - com[:2])
        foot = np.where((plan.stance == leg)[:, None], plan.stance_pos, plan.swing)
        d = foot[:, 0] - hip_xy[:, 0]
        h = np.hypot(hip[2] - (foot[:, 2] + ankle_up), foot[:, 1] - hip_xy[:, 1])
        q[leg] = two_link(d, h, l_t, l_s)
        ahead[leg], height[leg] = d, h
    return LegDemand(q, ahead, height, l_t, l_s)


def two_link(d: np.ndarray, h: np.ndarray, l_t: float, l_s: float) -> np.ndarray:
    """(k, 3) hip pitch, knee, ankle sagittal that put the ankle d ahead of and h below the
    hip, knee bent forward, sole flat (module docstring); nan out of reach."""
    r2 = d * d + h * h
    with np.errstate(invalid="ignore"):
        knee = np.arccos((r2 - l_t * l_t - l_s * l_s) / (2.0 * l_t * l_s))
        phi_t = np.arctan2(d, h) + np.arccos((l_t * l_t + r2 - l_s * l_s) / (2.0 * l_t * np.sqrt(r2)))
    return np.column_stack([-phi_t, knee, phi_t - knee])


def reach(demand: LegDemand, h: float, forward: bool, lo: np.ndarray, hi: np.ndarray) -> float:
    """The farthest the ankle can be ahead of (forward) or behind the hip at height h with the
    sole flat and the sagittal joints within [lo, hi] (SAGITTAL order): over the thigh's lean
    (sampled every 0.5 mrad), the shank's from H, the largest distance whose angles all fit."""
    l_t, l_s = demand.l_t, demand.l_s
    phi_t = np.linspace(-hi[0], -lo[0], int((hi[0] - lo[0]) / 5e-4) + 1)
    with np.errstate(invalid="ignore"):
        c = np.arccos((h - l_t * np.cos(phi_t)) / l_s)
    best = 0.0
    for phi_s in (c, -c):
        q = np.column_stack([-phi_t, phi_t - phi_s, phi_s])
        ok = ~np.isnan(phi_s) & (q >= lo).all(axis=1) & (q <= hi).all(axis=1)
        d = l_t * np.sin(phi_t) + l_s * np.sin(phi_s)
        if ok.any():
            best = max(best, float((d if forward else -d)[ok].max()))
    return best


def infeasibility(robot: TreeRobot, plan: Plan, demand: LegDemand, period: float) -> str | None:
    """Why the legs cannot follow the plan, in a clause (None when they can): an ankle out of
    the legs' reach, a sagittal joint within LIMIT_MARGIN of its limit, or a joint faster than
    SPEED_SHARE of its velocity limit, from the walking phase on."""
    m = robot.model
    w = plan.walk_start
    for leg, prefix in LEGS.items():
        idx = [m.joint_names.index(prefix + name) for name in SAGITTAL]
        q = demand.q[leg][w:]
        lo, hi = m.qmin[idx] + LIMIT_MARGIN, m.qmax[idx] - LIMIT_MARGIN
        bad = np.nonzero(np.isnan(q).any(axis=1) | (q < lo).any(axis=1) | (q > hi).any(axis=1))[0]
        if len(bad):
            ahead, height = demand.ahead[leg][w + bad], demand.height[leg][w + bad]
            limits = np.array([reach(demand, h, d > 0.0, lo, hi)
                               for d, h in zip(ahead, height)])
            worst = int(np.argmax(np.abs(ahead) - limits))              # the sample farthest out of reach
            k, d, h, limit = w + int(bad[worst]), float(ahead[worst]), float(height[worst]), float(limits[worst])
            side = "left" if leg == LEFT else "right"
            if not abs(d) <= limit:
                where = f"beyond the legs' reach of {limit:.3f} m" if limit > 0.0 else "where the legs cannot put it"
                return (f"the {side} ankle {abs(d):.3f} m {'ahead of' if d > 0 else 'behind'} its hip at "
                        f"t = {plan.t[k]:.2f} s, {where} at this CoG height (hip {h:.3f} m above the ankle)")
            i = int(np.argmax(np.maximum(lo - q[k - w], q[k - w] - hi)))
            return (f"the {side} leg needs {prefix + SAGITTAL[i]} at {q[k - w, i]:.3f} rad at t = {plan.t[k]:.2f} s, "
                    f"beyond its limits [{m.qmin[idx[i]]}, {m.qmax[idx[i]]}] rad less {LIMIT_MARGIN} rad")
    worst, joint = 0.0, ""
    for leg, prefix in LEGS.items():
        for i, name in enumerate(SAGITTAL):
            j = m.joint_names.index(prefix + name)
            speed = float(np.abs(np.diff(demand.q[leg][w:, i])).max() / period)
            if speed / m.vmax[j] > worst:
                worst, joint = speed / m.vmax[j], prefix + name
    if worst > SPEED_SHARE:
        j = m.joint_names.index(joint)
        return (f"the legs would move {joint} at about {worst * m.vmax[j]:.2f} rad/s, above "
                f"{SPEED_SHARE:.0%} of its velocity limit {m.vmax[j]} rad/s (the margin the whole-body "
                f"IK needs)")
    return None
