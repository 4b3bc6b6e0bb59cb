"""PNGs of one scenario run (matplotlib, Agg): CoG and CoP in the support polygon, joint
tracking, platform angles (and the rig actuators' following errors). Time axes are each process' simulated time."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from models.rig.config import LEG_NAMES

from controller.tools.scenarios.metrics import cop_margin
from controller.tools.scenarios.series import Series
from controller.tools.scenarios.walk_metrics import OUTSIDE_M


def _figure(rows: int, cols: int = 1, size: tuple[float, float] = (10.0, 7.0)):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt, *plt.subplots(rows, cols, figsize=size, squeeze=False)


def _save(plt, fig, path: Path) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)


def ground_projection(y0: np.ndarray, z0: np.ndarray, alpha: np.ndarray, beta: np.ndarray,
                      Z: float) -> tuple[np.ndarray, np.ndarray]:
    """Sole points (y0, z0) of a foot flat on the platform projected along gravity, relative to
    M (thesis eq. 50-51): y* = ca y0 - sa sb (z0 - Z), z* = cb (z0 - Z)."""
    return (np.cos(alpha) * y0 - np.sin(alpha) * np.sin(beta) * (z0 - Z), np.cos(beta) * (z0 - Z))


def plot_support(tel: dict, tru: dict, foot: dict, title: str, path: Path) -> str:
    """Margins over time (truth CoG and CoP, the stabilizer's nearest wall), and the horizontal
    plane through M: the support polygon level and at the largest tilt, the CoG's vertical
    projection and the CoP (HIL truth)."""
    plt, fig, ax = _figure(1, 2, (13.0, 5.0))
    a = ax[0, 0]
    if tru["t"].size:
        a.plot(tru["t"], 1e3 * tru["support_margin"], label="CoG margin (HIL truth)")
        a.plot(tru["t"], 1e3 * cop_margin(tru["cop"], foot), label="CoP margin (HIL truth)", alpha=0.7)
    if tel["t"].size:
        walls = np.where(np.isfinite(tel["margins"]), tel["margins"], np.inf).min(axis=1)
        a.plot(tel["t"], 1e3 * np.where(np.isfinite(walls), walls, np.nan), "--", label="nearest wall (stabilizer)")
    a.axhline(0.0, color="k", lw=0.8)
    a.set_xlabel("t [s]")
    a.set_ylabel("signed margin to the support polygon [mm]")
    a.legend(loc="lower left")
    a.set_title(title)
    b = ax[0, 1]
    fa, fb, fc, Z = foot["a"], foot["b"], foot["c"], foot["Z"]
    oy, oz = np.array([fa, fa, -fa, -fa, fa]), np.array([fb, -fc, -fc, fb, fb])
    b.plot(*ground_projection(oy, oz, 0.0, 0.0, Z), "k-", label="polygon, level")
    if tru["t"].size:
        al, be = tru["platform"][:, 0], tru["platform"][:, 1]
        k = int(np.nanargmax(np.hypot(al, be)))
        b.plot(*ground_projection(oy, oz, al[k], be[k], Z), "k--",
               label=f"polygon at ({np.degrees(al[k]):.0f}°, {np.degrees(be[k]):.0f}°)")
        b.plot(*ground_projection(tru["cop"][:, 0], tru["cop"][:, 1], al, be, Z), ".", ms=2, label="CoP")
        b.plot(tru["com_world"][:, 1], tru["com_world"][:, 2], "-", lw=1.2, label="CoG projection")
    b.set_aspect("equal")
    b.set_xlabel("y_g from M [m] (lateral)")
    b.set_ylabel("z_g from M [m] (toe +)")
    b.legend(loc="lower right", fontsize=8)
    for x in (a, b):
        x.grid(True, alpha=0.3)
    return _save(plt, fig, path)


def plot_tracking(tel: dict, joints: list[str], title: str, path: Path) -> str:
    """q and q_ref per joint (deg) and the tracking error."""
    plt, fig, ax = _figure(len(joints) + 1, 1, (10.0, 2.0 * (len(joints) + 1)))
    t = tel["t"]
    for i, name in enumerate(joints):
        a = ax[i, 0]
        if t.size:
            a.plot(t, np.degrees(tel["q_ref"][:, i]), "--", label="q_ref")
            a.plot(t, np.degrees(tel["q"][:, i]), label="q")
        a.set_ylabel(f"{name} [deg]")
        a.legend(loc="upper right", fontsize=8)
    e = ax[-1, 0]
    if t.size:
        e.plot(t, np.degrees(tel["q"] - tel["q_ref"]), label=joints)
    e.set_ylabel("q - q_ref [deg]")
    e.set_xlabel("t [s]")
    e.legend(loc="upper right", fontsize=8, ncol=len(joints))
    ax[0, 0].set_title(title)
    for a in ax[:, 0]:
        a.grid(True, alpha=0.3)
    return _save(plt, fig, path)


def plot_platform(tel: dict, tru: dict, title: str, path: Path) -> str:
    """Platform angles: the controller's measurement and the HIL's truth; on the rig, below them,
    its six actuators' following errors (telemetry ``rig_ferr``)."""
    ferr = tel["rig_ferr"]
    rig = ferr.ndim == 2 and bool(np.isfinite(ferr).any())
    plt, fig, ax = _figure(2 if rig else 1, 1, (10.0, 7.0 if rig else 4.0))
    if rig:
        f = ax[1, 0]
        for j, leg in enumerate(LEG_NAMES):
            f.plot(tel["t"], ferr[:, j], label=f"leg {leg}")
        f.set_xlabel("t [s]")
        f.set_ylabel("following error [mm]")
        f.legend(loc="upper right", fontsize=8, ncol=6)
        f.grid(True, alpha=0.3)
    a = ax[0, 0]
    for i, label in enumerate(("alpha (roll)", "beta (pitch)")):
        if tel["t"].size:
            a.plot(tel["t"], np.degrees(tel["platform"][:, i]), label=f"{label}, controller")
        if tru["t"].size:
            a.plot(tru["t"], np.degrees(tru["platform"][:, i]), "--", label=f"{label}, HIL truth")
    a.set_xlabel("t [s]")
    a.set_ylabel("platform angle [deg]")
    a.set_title(title)
    a.legend(loc="upper right", fontsize=8)
    a.grid(True, alpha=0.3)
    return _save(plt, fig, path)


def plot_paths(name: str, out: Path) -> list[Path]:
    """Where :func:`write_plots` (:func:`write_whole_body_plots`) draws a run's PNGs: support, tracking, platform."""
    return [out / f"{name}_{kind}.png" for kind in ("support", "tracking", "platform")]


def write_plots(series: Series, foot: dict, joints: list[str], name: str, out: Path) -> list[str]:
    """The three PNGs of a run in ``out``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    tel, tru = series.arrays()
    support, tracking, platform = plot_paths(name, out)
    return [plot_support(tel, tru, foot, f"{name}: CoG and CoP in the support polygon", support),
            plot_tracking(tel, joints, f"{name}: joint tracking", tracking),
            plot_platform(tel, tru, f"{name}: platform angles", platform)]


NO_ZMP = "n/a — hung: no ground contact, no ZMP"


def plot_zmp_path(tru: dict, margins: np.ndarray, title: str, path: Path, hung: bool = False) -> str:
    """A walk on the floor plane (HIL truth, world x forward, y left): the support polygon of the
    feet in contact each time it changes, the whole robot's ZMP/CoP and the pelvis; and the ZMP's
    signed margin to the polygon over time. Without a finite ZMP (``hung`` from the gantry, the
    feet in the air) both panels say :data:`NO_ZMP` (or that the truth holds none)."""
    plt, fig, ax = _figure(1, 2, (14.0, 5.0))
    if not (tru["t"].size and np.isfinite(tru["zmp"]).any()):
        for x in ax[0]:
            x.text(0.5, 0.5, NO_ZMP if hung else "n/a — no ZMP in the HIL truth", transform=x.transAxes,
                   ha="center", va="center", fontsize=12, color="tab:gray", zorder=10,
                   bbox={"facecolor": "white", "edgecolor": "tab:gray", "boxstyle": "round"})
    a = ax[0, 0]
    last = None
    for k in range(tru["t"].size):
        n = int(tru["support_count"][k]) if np.isfinite(tru["support_count"][k]) else 0
        poly = tru["support_polygon"][k, :2 * n].reshape(n, 2)
        if n >= 3 and (last is None or last.shape != poly.shape or not np.allclose(last, poly, atol=2e-3)):
            closed = np.vstack([poly, poly[:1]])
            a.plot(closed[:, 0], closed[:, 1], "-", color="tab:gray", lw=0.6, alpha=0.6)
            last = poly
    if tru["t"].size:
        a.plot(tru["pelvis_position"][:, 0], tru["pelvis_position"][:, 1], "-", color="tab:blue", lw=1.2,
               label="pelvis")
        zmp = tru["zmp"]
        outside = np.isfinite(margins) & (margins < -OUTSIDE_M)
        a.plot(zmp[:, 0], zmp[:, 1], "-", color="tab:green", lw=0.8, label="ZMP / CoP")
        a.plot(zmp[outside, 0], zmp[outside, 1], ".", color="tab:red", ms=3, label="ZMP outside the polygon")
    a.plot([], [], "-", color="tab:gray", lw=0.6, label="support polygon (feet in contact)")
    a.set_aspect("equal")
    a.set_xlabel("x [m] (forward)")
    a.set_ylabel("y [m] (left)")
    a.legend(loc="upper left", fontsize=8)
    a.set_title(title)
    b = ax[0, 1]
    if tru["t"].size:
        b.plot(tru["t"], 1e3 * margins, label="ZMP margin (NaN in the air)")
    b.axhline(0.0, color="k", lw=0.8)
    b.set_xlabel("t [s]")
    b.set_ylabel("signed ZMP margin to the support polygon [mm]")
    b.legend(loc="lower left", fontsize=8)
    for x in (a, b):
        x.grid(True, alpha=0.3)
    return _save(plt, fig, path)


def plot_walk_tracking(tel: dict, tru: dict, joints: list[str], axes: list[str], knee_bound_deg: float,
                       following_bound_deg: float, title: str, path: Path) -> str:
    """Joint tracking error q − q_ref of every joint (deg, knees bold, the knee bound dashed), and
    each drive's peak following error per truth frame (degrees of motor turn, its bound dashed)."""
    plt, fig, ax = _figure(2, 1, (12.0, 8.0))
    a = ax[0, 0]
    if tel["t"].size:
        err = np.degrees(tel["q"] - tel["q_ref"])
        for i, name in enumerate(joints):
            knee = name.endswith("knee")
            a.plot(tel["t"], err[:, i], lw=1.6 if knee else 0.7, alpha=1.0 if knee else 0.6, label=name)
    for sign in (1.0, -1.0):
        a.axhline(sign * knee_bound_deg, color="k", ls="--", lw=0.8)
    a.set_ylabel("q − q_ref [deg]")
    a.set_title(f"{title}; dashed: knee bound ±{knee_bound_deg:g}°")
    a.legend(loc="upper right", fontsize=6, ncol=5)
    b = ax[1, 0]
    if tru["t"].size:
        fe = np.degrees(tru["following_error"])
        for i, name in enumerate(axes):
            b.plot(tru["t"], fe[:, i], lw=0.8, label=name)
    b.axhline(following_bound_deg, color="k", ls="--", lw=0.8)
    b.set_ylabel("drive following error [deg of motor turn]")
    b.set_xlabel("t [s]")
    b.legend(loc="upper right", fontsize=6, ncol=5)
    for x in (a, b):
        x.grid(True, alpha=0.3)
    return _save(plt, fig, path)


WALK_LEAD_S = 0.5
"""The feet plot starts this long before the plan's first single support (s)."""


def plot_walk_feet(tru: dict, phases: list[tuple[float, str]], following_limit_deg: float | None, axes: list[str],
                   title: str, path: Path) -> str:
    """How the feet met the ground (HIL truth) against the plan's support ``phases`` (loop time, phase;
    each touch-down, single to double support, a dashed line): each sole's lowest corner above the
    floor (mm), each foot's load on its cells (N), and the drives' largest following error (deg of
    motor turn, log scale, its axis named at its peak, the drives' fault window dashed), from
    :data:`WALK_LEAD_S` before the first single support."""
    from controller.tools.scenarios.walk_metrics import FEET

    plt, fig, ax = _figure(3, 1, (12.0, 9.0))
    lift, load, drive = ax[0, 0], ax[1, 0], ax[2, 0]
    t = tru["t"]
    if t.size:
        for f, foot in enumerate(FEET):
            lift.plot(t, 1e3 * tru["foot_lift"][:, f], label=f"{foot} sole")
            load.plot(t, tru["foot_load"][:, f], label=f"{foot} foot")
        fe = np.degrees(np.abs(tru["following_error"]))
        worst = fe.max(axis=1)
        drive.semilogy(t, np.maximum(worst, 1e-3), color="k", lw=0.9, label="largest over the drives")
        peak = int(np.argmax(worst))
        drive.annotate(f"{axes[int(np.argmax(fe[peak]))]} {worst[peak]:.1f}°", (t[peak], worst[peak]), fontsize=8,
                       ha="right", va="top")
    if following_limit_deg is not None:
        drive.axhline(following_limit_deg, color="r", ls="--", lw=0.8, label="fault window (0x6065)")
    for (start, phase), nxt in zip(phases, phases[1:] + [(None, None)]):
        end = nxt[0] if nxt[0] is not None else (float(t[-1]) if t.size else start)
        for a in (lift, load, drive):
            if phase in FEET:
                a.axvspan(start, end, color="C0" if phase == "left" else "C1", alpha=0.08)
            if phase == "double" and start != phases[0][0]:
                a.axvline(start, color="k", ls="--", lw=0.6)
    walking = [start for start, phase in phases if phase in FEET]
    if walking and t.size:
        for a in (lift, load, drive):          # from just before the first lift-off: standing tells nothing
            a.set_xlim(walking[0] - WALK_LEAD_S, float(t[-1]))
    lift.set_ylabel("sole above the floor [mm]")
    lift.set_title(f"{title}; shaded: the plan's single supports (blue left, orange right), dashed: its touch-downs",
                   fontsize=9)
    load.set_ylabel("load on the cells [N]")
    drive.set_ylabel("following error [deg of motor turn]")
    drive.set_xlabel("t [s] (the loop's time)")
    for a in (lift, load, drive):
        a.grid(True, alpha=0.3)
        a.legend(loc="upper left", fontsize=7)
    return _save(plt, fig, path)


def write_whole_body_plots(tel: dict, tru: dict, margin: np.ndarray, commanded: np.ndarray | None,
                           joints: list[str], feet: list[int], name: str, out: Path) -> list[str]:
    """A whole-robot run's PNGs in ``out`` (HIL truth, world x forward, y left): the CoG's margin to the
    support polygon and the stance soles' lift; the plate's travel against the commanded motion; every
    joint's tracking error; the platform angles (and the rig actuators' following errors)."""
    out.mkdir(parents=True, exist_ok=True)
    support, tracking, platform = plot_paths(name, out)
    plt, fig, ax = _figure(2, 1, (10.0, 7.0))
    a, b = ax[0, 0], ax[1, 0]
    if tru["t"].size:
        a.plot(tru["t"], 1e3 * margin, label="CoG margin to the support polygon")
        for f in feet:
            a.plot(tru["t"], 1e3 * tru["foot_lift"][:, f], label=f"{('left', 'right')[f]} sole lift")
        travel = tru["plate_position"] - tru["plate_position"][0]
        for i, axis in enumerate("xyz"):
            b.plot(tru["t"], 1e3 * travel[:, i], label=f"plate {axis} (HIL truth)")
            if commanded is not None:
                b.plot(tru["t"], 1e3 * commanded[:, i], "--", label=f"plate {axis} commanded")
    a.axhline(0.0, color="k", lw=0.8)
    a.set_ylabel("[mm]")
    a.set_title(f"{name}: CoG margin and stance soles' lift (HIL truth)")
    b.set_ylabel("plate travel from home [mm]")
    b.set_xlabel("t [s]")
    for x in (a, b):
        x.legend(loc="lower left", fontsize=8)
        x.grid(True, alpha=0.3)
    paths = [_save(plt, fig, support)]
    plt, fig, ax = _figure(1, 1, (10.0, 5.0))
    e = ax[0, 0]
    if tel["t"].size:
        err = np.degrees(tel["q"] - tel["q_ref"])
        for i, joint in enumerate(joints):
            e.plot(tel["t"], err[:, i], lw=0.8, label=joint)
    e.set_ylabel("q − q_ref [deg]")
    e.set_xlabel("t [s]")
    e.set_title(f"{name}: joint tracking")
    e.legend(loc="upper right", fontsize=6, ncol=5)
    e.grid(True, alpha=0.3)
    paths.append(_save(plt, fig, tracking))
    paths.append(plot_platform(tel, tru, f"{name}: platform angles", platform))
    return paths
