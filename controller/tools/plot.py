"""`bipd plot LOG`: PNG figures of a cycle log (matplotlib, Agg canvas, no display needed).

* ``joint_tracking.png``: q and q_ref of every joint over time;
* ``cog_margins.png``: signed CoG margins to the support-polygon walls (thesis eq. 69-76;
  a wall sits at 0, positive is inside) while the stabilizer computes them (state STABILIZING;
  elsewhere gaps under a "stabilizer off" shading, and the lowest is taken over the valid samples),
  with ticks where the stabilizer raised an operator-relevant flag or failed (telemetry.STAB_EVENT_MASK);
* ``cycle_times.png``: wake-latency histogram (log-spaced bins, log counts) and per-task times,
  both with the deadline (the loop's period) as a red line.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from controller.daemon.codes import State
from controller.daemon.telemetry import STAB_EVENT_MASK, STAB_FLAGS, TASKS

from controller.daemon.io.log import CycleLog, LogError, read_log


DEADLINE = "deadline"          # the label of the period's line in cycle_times.png
OFF = "stabilizer off"          # the label of the shading where margins are not computed


def _save(fig: Figure, path: Path) -> Path:
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=110)
    return path


def _time(log: CycleLog) -> np.ndarray:
    t = log.field("t")
    return t - t[0]


def plot_joint_tracking(log: CycleLog, path: Path) -> Path:
    """q (solid) and q_ref (dashed) per joint, in degrees."""
    t, q, qr = _time(log), np.degrees(log.field("q")), np.degrees(log.field("q_ref"))
    n = len(log.joint_names)
    fig = Figure(figsize=(9, 2.2 * n), layout="constrained")
    axes = fig.subplots(n, 1, sharex=True, squeeze=False)[:, 0]
    for j, ax in enumerate(axes):
        ax.plot(t, q[:, j], label="q")
        ax.plot(t, qr[:, j], "--", label="q_ref")
        err = np.nanmax(np.abs(q[:, j] - qr[:, j]))
        ax.set_ylabel(f"{log.joint_names[j]} (deg)")
        ax.set_title(f"{log.joint_names[j]}: max |q - q_ref| = {err:.3g} deg", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].legend(loc="upper right")
    axes[-1].set_xlabel("time (s)")
    return _save(fig, path)


def raised_flags(log: CycleLog) -> dict[str, np.ndarray]:
    """Per stab_flags name in STAB_EVENT_MASK, the records in which it was raised (only
    the names raised at least once)."""
    bits = np.nan_to_num(log.field("stab_flags")).astype(np.int64)
    out = {}
    for k, name in enumerate(STAB_FLAGS):
        on = (bits >> k & 1).astype(bool)
        if STAB_EVENT_MASK >> k & 1 and on.any():
            out[name] = on
    return out


def valid_margins(log: CycleLog) -> np.ndarray:
    """``(N, walls)`` margins in m where the stabilizer computed them (state STABILIZING), NaN
    elsewhere: out of that state the record holds the stabilizer's last or initial values."""
    m = log.field("margins").copy()
    m[log.field("state") != State.STABILIZING] = np.nan
    return m


def _spans(mask: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) index of each run of True in ``mask``."""
    edges = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1))


def cog_margins_figure(log: CycleLog) -> Figure:
    """Margins of G to each wall (mm) while stabilizing; the CoG is inside the polygon while all are > 0."""
    t, m = _time(log), valid_margins(log) * 1e3
    walls = log.field("margins")
    used = [w for w in range(m.shape[1]) if np.isfinite(walls[:, w]).any()]
    fig = Figure(figsize=(9, 4), layout="constrained")
    ax = fig.subplots()
    for w in used:
        ax.plot(t, m[:, w], label=f"wall P{w + 1}")
    ax.axhline(0.0, color="k", lw=1.5, label="wall (margin 0)")
    off = log.field("state") != State.STABILIZING
    for k, (i, j) in enumerate(_spans(off)):
        ax.axvspan(t[i], t[j], color="0.85", zorder=0, label=OFF if k == 0 else None)
    for row, (name, on) in enumerate(raised_flags(log).items()):
        ax.plot(t[on], np.full(int(on.sum()), 0.03 + 0.04 * row), "|", ms=6,
                transform=ax.get_xaxis_transform(), label=f"stabilizer: {name}")
    valid = m[:, used]
    if not used:
        title = "CoG margins: no support polygon in this log"
    elif not np.isfinite(valid).any():
        title = "CoG margins: n/a, the stabilizer was off for the whole run"
    else:
        seconds = float(np.count_nonzero(~off)) * (float(np.median(np.diff(t))) if len(t) > 1 else 0.0)
        title = (f"CoG margins to the support-polygon walls (lowest {np.nanmin(valid):.1f} mm "
                 f"over {seconds:.1f} s stabilizing)")
    ax.set_title(title)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("margin (mm, > 0 inside)")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    return fig


def plot_cog_margins(log: CycleLog, path: Path) -> Path:
    return _save(cog_margins_figure(log), path)


def cycle_times_figure(log: CycleLog) -> Figure:
    """Wake-latency histogram (log-spaced bins and counts) and task times over the run, each with
    the deadline: the loop's period (a wake later than it, or a total beyond it, misses a cycle)."""
    deadline = float(log.header["period"]) * 1e6
    wake = log.field("wake_us")
    tasks = log.field("task_us")
    fig = Figure(figsize=(11, 4), layout="constrained")
    ax_h, ax_t = fig.subplots(1, 2)
    w = wake[np.isfinite(wake)]
    if w.size:
        low = max(float(w.min()), 0.1)
        bins = np.geomspace(low, max(float(w.max()), deadline, 2 * low), 60)
        ax_h.hist(np.maximum(w, low), bins=bins, log=True)
        ax_h.set_xscale("log")
        p50, p99 = np.percentile(w, [50, 99])
        ax_h.set_title(f"wake latency: p50 {p50:.1f} us, p99 {p99:.1f} us, max {w.max():.1f} us", fontsize=9)
    else:
        ax_h.set_title("wake latency: n/a (no sample)", fontsize=9)
    ax_h.axvline(deadline, color="tab:red", lw=1.2, label=f"{DEADLINE} (period {deadline:g} us)")
    ax_h.set_xlabel("wake latency (us, log scale)")
    ax_h.set_ylabel("cycles (log scale)")
    ax_h.legend(fontsize=7, loc="upper right")
    t = _time(log)
    for i, name in enumerate(TASKS):
        ax_t.plot(t, tasks[:, i], lw=0.8, label=name)
    ax_t.plot(t, tasks.sum(axis=1), "k", lw=0.8, label="total")
    ax_t.axhline(deadline, color="tab:red", lw=1.2, label=f"{DEADLINE} (period {deadline:g} us)")
    ax_t.set_yscale("log")
    ax_t.set_xlabel("time (s)")
    ax_t.set_ylabel("task time (us, log scale)")
    ax_t.legend(fontsize=7, loc="upper right", ncol=2)
    ax_t.grid(alpha=0.3)
    return fig


def plot_cycle_times(log: CycleLog, path: Path) -> Path:
    return _save(cycle_times_figure(log), path)


def plot_log(log_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """Write the three figures of a cycle log (an ``.mcap`` file, a run folder, or the latest
    run under ``log_dir``) into ``out_dir``; returns their paths."""
    log = read_log(log_dir)
    if len(log.records) == 0:
        raise LogError(f"{log_dir} holds no complete chunk of records to plot")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return [plot_joint_tracking(log, out / "joint_tracking.png"),
            plot_cog_margins(log, out / "cog_margins.png"),
            plot_cycle_times(log, out / "cycle_times.png")]
