"""Scenario figures from the recorded series: the fall criteria and :class:`ScenarioResult`.

A run *fell* when the HIL's ground truth shows any of (thresholds stated here, used everywhere):
the foot lifted more than ``FOOT_LIFT_M`` off the platform, the sole tipped more than
``FOOT_TILT_DEG`` from the platform plane, or the hip came down below ``HIP_HEIGHT_MIN_M`` above M
(the sole's centre). The HIL's own ``fallen`` flag is not used: it latches on a hip 10 cm below its
height at reset, which the squat does on purpose. Margins are signed (positive inside the polygon).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from models.rig.config import LEG_NAMES

from controller.tools.scenarios.series import Series

FOOT_LIFT_M = 0.01
FOOT_TILT_DEG = 5.0
HIP_HEIGHT_MIN_M = 0.30
POWERED = ("HOLD", "MOVING", "STABILIZING")


@dataclass
class ScenarioResult:
    scenario: str
    params: dict[str, Any]
    stabilizer: bool
    lockstep: bool
    fell: bool
    fall_reasons: list[str]
    min_cog_margin_m: float | None
    min_cop_margin_m: float | None
    max_tracking_error_deg: float | None
    max_tracking_error_joint: str | None
    max_foot_tilt_deg: float | None
    max_foot_lift_m: float | None
    min_hip_height_m: float | None
    overruns: int
    missed_cycles: int
    tasks_us: dict[str, dict[str, float | None]]
    sim_s: float
    wall_s: float
    speed_x_realtime: float | None
    states: list[str]
    faults: list[str]
    aborted: str | None = None
    safe_stop: dict[str, Any] | None = None
    max_rig_following_error_mm: dict[str, float] | None = None    # per rig actuator A-F (telemetry frames)
    plots: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _finite_min(x: np.ndarray) -> float | None:
    x = x[np.isfinite(x)]
    return float(x.min()) if x.size else None


def _finite_max(x: np.ndarray) -> float | None:
    x = x[np.isfinite(x)]
    return float(x.max()) if x.size else None


def cop_margin(cop: np.ndarray, foot: dict[str, float]) -> np.ndarray:
    """Signed margin (m) of the centre of pressure ``cop[:, (y0, z0)]`` (sole, foot axes R0) to the
    foot rectangle of thesis Figure 20 (|y0| <= a, -c <= z0 <= b); NaN where there is no contact."""
    y, z = cop[:, 0], cop[:, 1]
    return np.minimum.reduce([foot["a"] - np.abs(y), foot["b"] - z, z + foot["c"]])


def fall_reasons(truth: dict[str, np.ndarray]) -> list[str]:
    """Which fall criteria the ground truth met, each with its first time."""
    t = truth["t"]
    tests = (("foot lift", truth["foot_lift"], truth["foot_lift"] > FOOT_LIFT_M, f"> {FOOT_LIFT_M} m", 1.0, "m"),
             ("foot tilt", truth["foot_tilt"], np.degrees(truth["foot_tilt"]) > FOOT_TILT_DEG,
              f"> {FOOT_TILT_DEG} deg", 180.0 / math.pi, "deg"),
             ("hip height", truth["hip_height"], truth["hip_height"] < HIP_HEIGHT_MIN_M,
              f"< {HIP_HEIGHT_MIN_M} m", 1.0, "m"))
    out = []
    for name, value, hit, bound, scale, unit in tests:
        if hit.any():
            k = int(np.argmax(hit))
            out.append(f"{name} {value[k] * scale:.3g} {unit} {bound} at t = {t[k]:.2f} s")
    return out


def tracking_error(tel: dict[str, np.ndarray], joints: list[str]) -> tuple[float | None, str | None]:
    """Largest |q - q_ref| (deg) over the telemetry frames with the drives powered."""
    on = np.isin(tel["state"], POWERED)
    if not on.any():
        return None, None
    err = np.abs(tel["q"][on] - tel["q_ref"][on])
    k = np.unravel_index(int(np.nanargmax(err)), err.shape)
    return float(np.degrees(err[k])), joints[k[1]]


def state_sequence(states: np.ndarray) -> list[str]:
    out: list[str] = []
    for s in states:
        if not out or out[-1] != s:
            out.append(str(s))
    return out


SAFE_STOP_S = 1.0            # s of simulated time after FAULT for the bench to come to rest
REST_SPEED = 0.05            # rad/s: every joint slower than this is "at rest"
STOP_TOLERANCE = 0.01        # rad: compliance of the mechanical joint stops
PLATFORM_HELD_DEG = 1.0      # the platform moves less than this after FAULT


def safe_stop(tel: dict[str, np.ndarray], tru: dict[str, np.ndarray], qmin: np.ndarray,
              qmax: np.ndarray) -> dict[str, Any] | None:
    """The bench's safe stop after the first FAULT frame (None when the run never faulted).

    Safe = the bench frozen where the fault found it: (1) from SAFE_STOP_S after the fault on,
    every joint at rest (|q̇| < REST_SPEED); (2) no joint ever beyond its hard limit by more than
    STOP_TOLERANCE; (3) the platform within PLATFORM_HELD_DEG of its angles at the fault; (4) the
    foot still on the platform (lift <= FOOT_LIFT_M, tilt <= FOOT_TILT_DEG). The controller's part
    is the quick stop then disable of every drive; (1), (3) and (4) also need the drives' holding
    brakes (or self-locking gears) once they are disabled."""
    k = np.flatnonzero(tel["state"] == "FAULT")
    if k.size == 0:
        return None
    t, q, qd, plat = (tel[key][k[0]:] for key in ("t", "q", "qd", "platform"))
    late = t >= t[0] + SAFE_STOP_S
    after = tru["t"] >= t[0]
    beyond = float(max(np.max(qmin - q), np.max(q - qmax), 0.0))
    plat_moved = float(np.degrees(np.abs(plat - plat[0]).max()))
    lift = float(np.nanmax(tru["foot_lift"][after], initial=0.0))
    tilt = float(np.degrees(np.nanmax(tru["foot_tilt"][after], initial=0.0)))
    checks = {"at_rest": bool(late.any() and np.abs(qd[late]).max() < REST_SPEED),
              "within_hard_limits": beyond <= STOP_TOLERANCE,
              "platform_held": plat_moved < PLATFORM_HELD_DEG,
              "foot_on_platform": lift <= FOOT_LIFT_M and tilt <= FOOT_TILT_DEG}
    return {"t_fault": float(t[0]), "observed_s": float(t[-1] - t[0]),
            "max_speed_after_rad_s": float(np.abs(qd[late]).max()) if late.any() else None,
            "beyond_limit_rad": beyond, "platform_moved_deg": plat_moved, "foot_lift_m": lift,
            "foot_tilt_deg": tilt, **checks, "safe": all(checks.values())}


def rig_following_errors(ferr: np.ndarray) -> dict[str, float] | None:
    """The largest |following error| (mm) of each rig actuator over the telemetry frames (``rig_ferr``,
    NaN while unpowered), None without the rig."""
    if ferr.ndim != 2 or not np.isfinite(ferr).any():
        return None
    return {leg: round(float(np.nanmax(np.abs(ferr[:, j]))), 3) if np.isfinite(ferr[:, j]).any() else None
            for j, leg in enumerate(LEG_NAMES)}


PLATE_LAG_MAX_S = 0.05       # s, the longest delay of the command :func:`plate_tracking` tries
PLATE_LAG_STEP_S = 0.002     # s, its resolution (one control period)


def plate_tracking(t: np.ndarray, plate: np.ndarray, commanded) -> tuple[float | None, float | None, float | None]:
    """The plate's truth position (N, 3) against the commanded translation ``commanded(t)`` ((N, 3),
    None for a motion that turns the plate), both from home (the first frame): the largest error at the
    same time; the delay d in [0, PLATE_LAG_MAX_S] of the command that fits best, and the largest error
    against ``commanded(t - d)`` (what is left once the bus's and drives' delay is taken out)."""
    if commanded is None or t.size == 0 or commanded(t) is None:
        return None, None, None
    moved = plate - plate[0]
    errs = [float(np.max(np.linalg.norm(moved - commanded(t - d), axis=1)))
            for d in np.arange(0.0, PLATE_LAG_MAX_S + 1e-9, PLATE_LAG_STEP_S)]
    k = int(np.argmin(errs))
    return errs[0], round(k * PLATE_LAG_STEP_S, 4), errs[k]


def evaluate(name: str, params: dict[str, Any], stabilizer: bool, lockstep: bool, series: Series,
             daemon_config: dict[str, Any], stats: dict[str, Any], sim_s: float, wall_s: float,
             aborted: str | None) -> ScenarioResult:
    """The figures of one run from its measured part."""
    tel, tru = series.arrays()
    joints = list(daemon_config["joints"])
    have_truth = tru["t"].size > 0
    reasons = fall_reasons(tru) if have_truth else ["no ground truth received from the HIL process"]
    cop = cop_margin(tru["cop"], daemon_config["foot"]) if have_truth else np.empty(0)
    err, joint = tracking_error(tel, joints)
    return ScenarioResult(
        scenario=name, params=params, stabilizer=stabilizer, lockstep=lockstep, fell=bool(reasons),
        fall_reasons=reasons,
        min_cog_margin_m=_finite_min(tru["support_margin"]) if have_truth else None,
        min_cop_margin_m=_finite_min(cop), max_tracking_error_deg=err, max_tracking_error_joint=joint,
        max_foot_tilt_deg=_finite_max(np.degrees(tru["foot_tilt"])) if have_truth else None,
        max_foot_lift_m=_finite_max(tru["foot_lift"]) if have_truth else None,
        min_hip_height_m=_finite_min(tru["hip_height"]) if have_truth else None,
        overruns=int(stats["overruns"]), missed_cycles=int(stats["missed_cycles"]),
        tasks_us={k: {kk: (round(v, 2) if v is not None else None) for kk, v in t.items()}
                  for k, t in stats["tasks"].items()},
        sim_s=round(sim_s, 3), wall_s=round(wall_s, 3),
        speed_x_realtime=round(sim_s / wall_s, 2) if wall_s > 0 else None,
        states=state_sequence(tel["state"]),
        faults=[str(e.get("reason")) for e in series.events if e.get("kind") == "FAULT"],
        aborted=aborted,
        safe_stop=safe_stop(tel, tru, np.array(daemon_config["qmin"]), np.array(daemon_config["qmax"])),
        max_rig_following_error_mm=rig_following_errors(tel["rig_ferr"]))
