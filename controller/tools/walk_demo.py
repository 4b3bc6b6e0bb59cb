"""``bipd run --config deploy/bip2000.yaml --demo walk``: the thesis' walking experiment (Gastebois
2017 §2.6.2: two steps at 360 m/h from an offline gait, the robot hung from a gantry) played by the
daemon in real time on the sim backend's biped plant.

The gait is generated (``bipd scenario walk``'s generator) into the demo's run folder
(:func:`run_folder`), which the daemon reads file trajectories from for that run; the operator (:func:`operator_walk`) enables the drives,
plays it (``run trajectory=FILE``: the loop moves to the first sample, then plays), prints a live
table from the telemetry and returns figures computed from the same telemetry frames.
"""
from __future__ import annotations

import math
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from controller.tools.operator import StreamOperator, print_event, print_loop_stats
from controller.tools.scenarios.walk_metrics import KNEE_BOUND_DEG

TABLE_JOINTS = ("l_hip_pitch", "l_knee", "r_hip_pitch", "r_knee")
ROW_EVERY_S = 0.5                # s of loop time between table rows


def joint_group(name: str) -> str:
    """The group of a BIP 2000 joint: its name without the side prefix, up to the first ``_``
    (``l_hip_roll`` -> hip, ``r_knee`` -> knee, ``trunk_yaw`` -> trunk)."""
    return name.removeprefix("l_").removeprefix("r_").split("_")[0]


def run_folder(trajectory_dir: Path | None, stack: ExitStack) -> Path:
    """The demo's run folder, the daemon's only trajectory folder for the run: a new folder kept in
    ``io.trajectory_dir`` when the config sets one, else a temporary one removed when ``stack`` closes."""
    if trajectory_dir is None:
        return Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bipd-walk-")))
    return Path(tempfile.mkdtemp(prefix="walk-demo-", dir=trajectory_dir))


@dataclass
class WalkLog:
    """What the operator took from the telemetry: per joint the largest |q - q_ref| (rad) over the
    frames of the playback proper (state MOVING with a support phase; the move to the first sample
    has none), the states seen and the loop times of the motion."""
    joints: tuple[str, ...]
    max_error: list[float] = field(default_factory=list)
    states: list[str] = field(default_factory=list)
    walk_frames: int = 0
    t_start: float = math.nan        # first MOVING frame
    t_walk: float = math.nan         # first frame of the playback proper
    t_end: float = math.nan          # the frame that left MOVING

    def __post_init__(self) -> None:
        self.max_error = [0.0] * len(self.joints)

    def add(self, msg: dict[str, Any]) -> None:
        state = msg["state_name"]
        if not self.states or self.states[-1] != state:
            if self.states and self.states[-1] == "MOVING":
                self.t_end = msg["t"]
            self.states.append(state)
        if state != "MOVING":
            return
        if math.isnan(self.t_start):
            self.t_start = msg["t"]
        if msg["support_name"] is None:
            return
        if math.isnan(self.t_walk):
            self.t_walk = msg["t"]
        self.walk_frames += 1
        for j, (q, r) in enumerate(zip(msg["q"], msg["q_ref"])):
            self.max_error[j] = max(self.max_error[j], abs(q - r))

    @property
    def done(self) -> bool:
        return (len(self.states) >= 2 and self.states[-2] == "MOVING" and self.states[-1] == "HOLD"
                or self.states[-1] in ("FAULT", "ESTOP"))

    def summary(self) -> dict[str, Any]:
        deg = {name: math.degrees(e) for name, e in zip(self.joints, self.max_error)}
        groups: dict[str, float] = {}
        for name, e in deg.items():
            groups[joint_group(name)] = max(groups.get(joint_group(name), 0.0), e)
        return {"states": self.states, "completed": self.states[-2:] == ["MOVING", "HOLD"],
                "walk_frames": self.walk_frames,
                "positioning_s": self.t_walk - self.t_start, "walk_s": self.t_end - self.t_walk,
                "duration_s": self.t_end - self.t_start, "max_error_deg": deg, "max_error_group_deg": groups,
                "knee_max_error_deg": groups.get("knee", math.nan)}


def operator_walk(command: str, telemetry: str, trajectory: str, out: TextIO,
                  timeout_s: float = 300.0) -> dict[str, Any]:
    """Enable, play ``trajectory``, print a row of the telemetry every ROW_EVERY_S of loop time
    (time, state, support phase, hips' pitch and knees, largest tracking error and its joint) and
    the events, disable. Returns :meth:`WalkLog.summary` and the daemon's ``stats``."""
    with StreamOperator(command, telemetry, timeout_s) as op:
        joints = tuple(op.call("get_config")["joints"])
        cols = [joints.index(name) for name in TABLE_JOINTS]
        log = WalkLog(joints)
        op.enable()
        op.run(trajectory)
        names = " ".join(f"{n:>11}" for n in TABLE_JOINTS)
        print(f"{'t [s]':>7} {'state':>8} | support | q [deg] {names} | err [deg] joint", file=out, flush=True)
        last_row = -math.inf
        for topic, msg in op.frames():
            if topic == "event":
                print_event(msg, out)
                continue
            log.add(msg)
            if msg["t"] - last_row >= ROW_EVERY_S or log.done:
                last_row = msg["t"]
                err = [abs(q - r) for q, r in zip(msg["q"], msg["q_ref"])]
                worst = max(range(len(err)), key=err.__getitem__)
                qs = " ".join(f"{math.degrees(msg['q'][j]):11.2f}" for j in cols)
                print(f"{msg['t']:7.2f} {msg['state_name']:>8} | {msg['support_name'] or '-':>7} |         {qs} | "
                      f"{math.degrees(err[worst]):9.3f} {joints[worst]}", file=out, flush=True)
            if log.done:
                break
        stats = op.finish()
    return dict(log.summary(), stats=stats)


def print_summary(result: dict[str, Any], out: TextIO) -> None:
    """The walk's figures, the knee's next to the thesis' bound, and the loop's timing."""
    print(f"\nwalk {'done' if result['completed'] else 'NOT COMPLETED'}: states {' -> '.join(result['states'])}; {result['duration_s']:.2f} s of loop time "
          f"({result['positioning_s']:.2f} s to the first sample, {result['walk_s']:.2f} s of gait, "
          f"{result['walk_frames']} telemetry frames)", file=out)
    groups = ", ".join(f"{g} {e:.3f}" for g, e in result["max_error_group_deg"].items())
    print(f"max tracking error during the gait [deg]: {groups}", file=out)
    print(f"knee {result['knee_max_error_deg']:.3f} deg (thesis, BIP 2000 hung: <= {KNEE_BOUND_DEG} deg)",
          file=out)
    print_loop_stats(result["stats"]["loop"], out)
