"""``bipd gait``: write an offline walking gait as a playback CSV with a JSON sidecar, check
a gait file, plot it.

The CSV is the playback format (:mod:`controller.daemon.io.playback`): ``t``, one column per joint
of the robot (radians), and ``support`` (left, right or double). The sidecar
``<file>.json`` holds the generation parameters and what the check needs to find the
walking phase again (its first time, the foot spacing, the speed).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from models.gait.checks import GaitReport, check_gait
from models.common.support import SUPPORT_NAMES
from models.gait.plan import GaitParams
from models.gait.wholebody import Gait, GaitError, generate
from models.tree.robot import TreeRobot

from controller.daemon.io.playback import TrajectoryFileError, load_trajectory

FOOT_COLORS = ("tab:blue", "tab:orange")         # left, right (models.common.support LEFT, RIGHT)


def sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def write_gait(path: Path, robot: TreeRobot, gait: Gait, report: GaitReport, seconds: float) -> None:
    """The CSV and its sidecar (module docstring)."""
    names = robot.model.joint_names
    with open(path, "w", encoding="utf-8") as f:
        f.write("# bipd gait: LIPM preview control (Kajita et al. 2003) + whole-body IK; "
                f"parameters in {sidecar(path).name}\n")
        f.write(",".join(("t",) + names + ("support",)) + "\n")
        for k in range(len(gait.t)):
            f.write(f"{gait.t[k]:.6f}," + ",".join(f"{v:.9f}" for v in gait.q[k])
                    + f",{SUPPORT_NAMES[gait.support[k]]}\n")
    meta = {"robot": robot.model.name, "params": gait.params.as_dict(),
            "step_length_m": gait.plan.step_length, "cog_height_m": gait.z_c,
            "walk_start_s": float(gait.t[gait.plan.speed_start]),
            "footprints": [{"foot": SUPPORT_NAMES[f], "x": float(x), "y": float(y)}
                           for f, x, y in gait.plan.footprints],
            "check": summary(robot, report), "generation_s": seconds}
    sidecar(path).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def summary(robot: TreeRobot, report: GaitReport) -> dict:
    """The check's figures."""
    j = int(np.argmax(report.speed_ratio))
    return {"zmp_margin_min_m": float(report.margin.min()),
            "max_joint_speed": {"joint": robot.model.joint_names[j],
                                "rad_s": float(report.speed_ratio[j] * robot.model.vmax[j]),
                                "limit_rad_s": float(robot.model.vmax[j])},
            "pelvis_speed_m_h": report.pelvis_speed * 3600.0, "problems": report.problems}


def make_gait(robot: TreeRobot, params: GaitParams, say) -> tuple[Gait, GaitReport, float]:
    """Generate and check; a gait that fails a check is a :class:`GaitError`."""
    start = time.perf_counter()
    gait = generate(robot, params, say)
    seconds = time.perf_counter() - start
    say("checking the ZMP, the joint limits and the speed")
    report = check_gait(robot, gait.t, gait.q, gait.support, params.speed, gait.plan.speed_start,
                        params.foot_spacing)
    if not report.ok:
        raise GaitError(f"the {params.speed * 3600:.0f} m/h gait fails its checks: " + "; ".join(report.problems))
    return gait, report, seconds


def check_file(path: Path, robot: TreeRobot) -> GaitReport:
    """Re-read a gait file through the playback parser and run the checks on it; a file or
    sidecar that cannot be read is a :class:`TrajectoryFileError`."""
    try:
        meta = json.loads(sidecar(path).read_text(encoding="utf-8"))
        params = GaitParams(**meta["params"])
        walk_start = float(meta["walk_start_s"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise TrajectoryFileError(f"{sidecar(path)}: cannot read the gait's parameters ({e})") from None
    m = robot.model
    q, support = load_trajectory(path, m.joint_names, m.qmin, m.qmax, m.vmax, params.period, with_support=True)
    if support is None:
        raise TrajectoryFileError(f"{path}: no 'support' column; a gait file names its support phase per row")
    t = np.arange(len(q)) * params.period
    return check_gait(robot, t, q, support, params.speed, int(round(walk_start / params.period)),
                      params.foot_spacing)


def joint_groups(names: tuple[str, ...]) -> list[list[int]]:
    """Joint indices grouped by the first word of their names (``l_``, ``r_``, ``trunk_``), in order:
    one panel each in ``gait_joints.png``."""
    groups: dict[str, list[int]] = {}
    for j, name in enumerate(names):
        groups.setdefault(name.split("_")[0], []).append(j)
    return list(groups.values())


def line_style(k: int) -> tuple[str, str]:
    """A distinct (colour, line style) for the ``k``-th line of a panel: ten colours, then dashes."""
    return f"C{k % 10}", ("-", "--", ":", "-.")[k // 10 % 4]


def plot_gait(out: Path, robot: TreeRobot, gait: Gait, report: GaitReport) -> list[Path]:
    """PNGs: CoG and ZMP paths over the left and right footprints; the joint angles in degrees,
    one panel per group of joints (:func:`joint_groups`)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    outline = np.array(robot.description.feet[0].outline)
    fig, ax = plt.subplots(figsize=(9, 4))
    labelled = set()
    for foot, x, y in gait.plan.footprints:
        P = np.vstack([outline, outline[:1]]) + (x, y)
        side = SUPPORT_NAMES[foot]
        ax.plot(P[:, 0], P[:, 1], color=FOOT_COLORS[foot], lw=1,
                label=None if side in labelled else f"{side} foot")
        ax.text(x, y, side[0].upper(), color=FOOT_COLORS[foot], ha="center", va="center", fontsize=7)
        labelled.add(side)
    w = gait.plan.walk_start
    ax.plot(gait.plan.zmp_ref[w:, 0], gait.plan.zmp_ref[w:, 1], "k:", lw=1, label="ZMP reference")
    ax.plot(gait.zmp_lipm[w:, 0], gait.zmp_lipm[w:, 1], "g--", lw=1, label="ZMP of the LIPM")
    ax.plot(report.zmp[w:, 0], report.zmp[w:, 1], "r", lw=0.8, label="ZMP of the multi-body model")
    ax.plot(gait.cog_ref[w:, 0], gait.cog_ref[w:, 1], "b", lw=1.5, label="CoG")
    ax.set(xlabel="x (m, forward)", ylabel="y (m, left)", aspect="equal",
           title=f"min ZMP margin {1000 * report.margin.min():.1f} mm")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    paths = [out / "gait_path.png"]
    fig.savefig(paths[0], dpi=120, bbox_inches="tight")
    plt.close(fig)
    paths.append(out / "gait_joints.png")
    fig = joints_figure(robot.model.joint_names, gait.t, gait.q)
    fig.savefig(paths[1], dpi=120, bbox_inches="tight")
    plt.close(fig)
    return paths


def joints_figure(names: tuple[str, ...], t: np.ndarray, q: np.ndarray):
    """The joint angles (deg) over time, a panel per :func:`joint_groups` group, each line its own
    colour and style (:func:`line_style`)."""
    import matplotlib.pyplot as plt

    groups = joint_groups(names)
    fig, axes = plt.subplots(len(groups), 1, figsize=(9, 2.6 * len(groups)), sharex=True, squeeze=False)
    for ax, group in zip(axes[:, 0], groups):
        for k, j in enumerate(group):
            color, style = line_style(k)
            ax.plot(t, np.degrees(q[:, j]), color=color, ls=style, lw=1, label=names[j])
        low, high = ax.get_ylim()
        if high - low < 2.0:                # joints held still: no zoom into rounding noise
            ax.set_ylim((low + high) / 2 - 1.0, (low + high) / 2 + 1.0)
        ax.set_ylabel("q (deg)")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("t (s)")
    return fig
