"""Model demo: the thesis squat (§2.6.1) computed cycle by cycle with the models.

Until the daemon exists this is the front door's visible job: every 2 ms of the
14 s squat it runs one fused model update (FK, Jacobians, CoG, A, C, G) and the
inverse dynamics A qdd + C qd + G + friction, and prints the leg's state twice a
second, then a summary against the YAML limits and the time per model update.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TextIO

import numpy as np

from models import Robot
from models.chain.dynamics import update

from controller.daemon.trajectories import SQUAT_DURATION_S, quintic, squat_excursion


@dataclass
class SquatLog:
    t: list[float] = field(default_factory=list)
    q: list[np.ndarray] = field(default_factory=list)
    tau: list[np.ndarray] = field(default_factory=list)
    com: list[np.ndarray] = field(default_factory=list)
    margin: list[float] = field(default_factory=list)
    motor_tau: list[np.ndarray] = field(default_factory=list)
    update_us: list[float] = field(default_factory=list)


def foot_margin(robot: Robot, com: np.ndarray) -> float:
    """Signed distance (m) of the CoG's ground projection to the nearest edge of
    the level-floor foot rectangle (thesis Figure 20: |y| <= a, -c <= z <= b);
    negative when it is outside."""
    foot = robot.description.foot
    if foot is None:
        return float("nan")
    return float(min(foot["a"] - abs(com[1]), foot["b"] - com[2], com[2] + foot["c"]))


def run_squat(robot: Robot, period: float = 0.002, every: float = 0.5,
              out: TextIO | None = None, progress: Callable[[str], None] | None = None) -> SquatLog:
    """Squat down in 7 s and up in 7 s by the quintic law, one model update per
    period; print a state row every ``every`` seconds."""
    n = robot.n
    q_up = np.zeros(n)
    q_down = q_up + squat_excursion(robot.joint_names)
    m, d = robot.model.buf, robot.data.buf
    ref = np.zeros((3, n))
    tau = np.zeros(n)
    log = SquatLog()
    update(m, d, q_up, np.zeros(n))          # compiled / loaded from cache before the first cycle
    steps = int(round(2 * SQUAT_DURATION_S / period))
    stride = max(1, int(round(every / period)))
    names = " ".join(f"{nm[:8]:>8}" for nm in robot.joint_names)
    if out:
        print(f"{'t [s]':>6} | q [deg] {names} | CoG x,y,z [m]         | margin [mm] | tau [N m] {names}",
              file=out)
    for k in range(steps + 1):
        t = k * period
        if t <= SQUAT_DURATION_S:
            quintic(q_up, q_down, SQUAT_DURATION_S, t, ref)
        else:
            quintic(q_down, q_up, SQUAT_DURATION_S, t - SQUAT_DURATION_S, ref)
        t0 = time.perf_counter_ns()
        update(m, d, ref[0], ref[1])
        log.update_us.append((time.perf_counter_ns() - t0) / 1e3)
        np.dot(robot.data.A, ref[2], out=tau)
        tau += robot.data.h + robot.data.tau_f
        if k % stride == 0:
            com = robot.data.com.copy()
            log.t.append(t)
            log.q.append(ref[0].copy())
            log.tau.append(tau.copy())
            log.com.append(com)
            log.margin.append(foot_margin(robot, com))
            if robot.transmission is not None:     # tau_m = J_p^-T tau (thesis eq. 31-32)
                log.motor_tau.append(robot.transmission.torque_to_motor(ref[0], tau))
            if out:
                qs = " ".join(f"{x:8.2f}" for x in np.degrees(ref[0]))
                ts = " ".join(f"{x:8.1f}" for x in tau)
                print(f"{t:6.2f} |         {qs} | {com[0]:6.3f} {com[1]:6.3f} {com[2]:6.3f}    "
                      f"| {1e3 * log.margin[-1]:11.1f} |           {ts}", file=out)
        if progress and k % (stride * 4) == 0:
            progress(f"squat {100.0 * k / steps:5.1f} %")
    return log


def summary(robot: Robot, log: SquatLog) -> dict:
    tau = np.array(log.tau)
    peak = np.abs(tau).max(axis=0)
    upd = np.array(log.update_us)
    return {
        "robot": robot.model.name,
        "peak_joint_torque_Nm": dict(zip(robot.joint_names, peak.round(2).tolist())),
        "torque_limit_Nm": dict(zip(robot.joint_names, robot.model.taumax.tolist())),
        "within_torque_limits": bool(np.all(peak <= robot.model.taumax)),
        **({"peak_motor_torque_Nm": {f"motor{i + 1}": v for i, v in enumerate(
            np.abs(log.motor_tau).max(axis=0).round(3).tolist())}}
           if log.motor_tau else {}),
        "min_cog_margin_mm": round(1e3 * float(np.nanmin(log.margin)), 1),
        "cog_note": ("the CoG's ground projection leaves the foot at the bottom of the squat: "
                     "on the bench the foot is bolted to the platform (thesis §2.6.1); a free foot "
                     "would tip" if np.nanmin(log.margin) < 0 else "the CoG stays over the foot"),
        "update_median_us": round(float(np.median(upd)), 2),
        "update_p99_us": round(float(np.percentile(upd, 99)), 2),
        "cycles": len(upd),
    }


def plot_squat(log: SquatLog, robot: Robot, path: Path) -> Path:
    """Joint angles, joint torques and CoG margin over the squat, as one PNG."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = np.array(log.t)
    fig, ax = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
    for j, name in enumerate(robot.joint_names):
        ax[0].plot(t, np.degrees([q[j] for q in log.q]), label=name)
        ax[1].plot(t, [x[j] for x in log.tau], label=name)
    ax[0].set_ylabel("q [deg]")
    ax[1].set_ylabel("joint torque [N m]")
    ax[2].plot(t, 1e3 * np.array(log.margin))
    ax[2].axhline(0.0, color="k", lw=0.8)
    ax[2].set_ylabel("CoG margin to foot edge [mm]")
    ax[2].set_xlabel("t [s]")
    ax[0].legend(loc="upper right")
    ax[0].set_title("BIP leg squat (thesis §2.6.1): ankle 16°, knee 85°, hip 70°, 7 s down / 7 s up")
    for a in ax:
        a.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def operator_squat(command: str, telemetry: str, out: TextIO, timeout_s: float = 60.0) -> dict:
    """What an operator does, over the daemon's ZMQ interface: enable, run the thesis
    squat, print the leg's state from the telemetry twice a second, disable, shut
    down. Returns a summary (max tracking error, states seen, profiler figures)."""
    from controller.tools.operator import StreamOperator, print_event

    err = 0.0
    states: list[str] = []
    with StreamOperator(command, telemetry, timeout_s) as op:
        op.enable()
        op.run("squat")
        print(f"{'t [s]':>7} {'state':>8} | q [deg] ankle_lat ankle_sag   knee    hip | "
              f"err [deg] | CoG z [m]", file=out, flush=True)
        last_print = 0.0
        for topic, msg in op.frames():
            if topic == "event":
                print_event(msg, out)
                continue
            state = msg["state_name"]
            if not states or states[-1] != state:
                states.append(state)
            q = np.array(msg["q"], dtype=float)
            e = float(np.degrees(np.abs(q - np.array(msg["q_ref"], dtype=float)).max()))
            if state == "MOVING":
                err = max(err, e)
            if msg["t"] - last_print >= 0.5:
                last_print = msg["t"]
                qs = " ".join(f"{x:8.2f}" for x in np.degrees(q))
                print(f"{msg['t']:7.2f} {state:>8} | {qs}       | {e:9.3f} | {msg['com'][0]:8.3f}",
                      file=out, flush=True)
            if len(states) >= 2 and states[-2] == "MOVING" and state == "HOLD" or state in ("FAULT", "ESTOP"):
                break
        stats = op.finish()
    return {"states": states, "max_tracking_error_deg": round(err, 4), "stats": stats}
