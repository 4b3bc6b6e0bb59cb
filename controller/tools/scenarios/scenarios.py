"""The scenarios: what the operator does once the leg stands in its stance.

Every wait is in the daemon's simulated time. Angles are radians (the CLI converts degrees).
α tilts the platform about the fore-aft axis (roll: the foot's width shrinks, eq. 50),
β about the lateral axis (pitch: its length shrinks, eq. 51).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from controller.tools.scenarios.runner import SETTLE_S, RecordingOperator, ScenarioError, udp_control

THESIS_TILT = (math.radians(10.0), math.radians(20.0))
THESIS_TILT_S = 7.0
TILT_DIRECTIONS_DEG = ((20.0, 0.0), (-20.0, 0.0), (0.0, 20.0), (0.0, -20.0),
                       (10.0, 20.0), (10.0, -20.0), (-10.0, 20.0), (-10.0, -20.0))
"""(α, β) of the thesis-magnitude tilt (20°) in eight directions: pure roll and pitch both ways
and the thesis' diagonal (10°, 20°) with both signs of each angle."""
HOLD_S = 1.0
SQUAT_START = (0.0, 0.0, -0.1, 0.0)        # rad: near-straight leg; the thesis' excursions fit the limits from it
SQUAT_START_S = 1.5
PUSH_DIRECTIONS = {"forward": (0.0, 0.0, 1.0), "backward": (0.0, 0.0, -1.0),
                   "left": (0.0, 1.0, 0.0), "right": (0.0, -1.0, 0.0)}
"""Unit vectors in the thesis world axes (eq. 45-47: x_g up, y_g lateral, +y_g called left,
z_g towards the toe), the axes of the HIL's ``com_world``."""


def _deg(params: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: (round(math.degrees(v), 4) if k in keys else v) for k, v in params.items()}


def until_hold(op: RecordingOperator, limit_s: float) -> None:
    """Wait for the motion to end (MOVING -> HOLD) within ``limit_s`` simulated seconds."""
    waited = 0.0
    while op.state() != "HOLD":
        if waited > limit_s:
            raise ScenarioError(f"the motion did not end within {limit_s:g} s of simulated time")
        op.wait(0.25)
        waited += 0.25


def push_params(force: float, duration: float, direction: str) -> dict[str, Any]:
    """A push's parameters as the results report them."""
    return {"force_N": force, "duration_s": duration, "direction": direction,
            "impulse_Ns": round(force * duration, 4)}


def push(op: RecordingOperator, body: str, force: float, unit: tuple[float, float, float], duration: float) -> None:
    """A force (N) along ``unit`` (the plant's world axes) on ``body`` of the HIL plant for
    ``duration`` s of plant time, through the HIL's UDP control op ``push``."""
    vector = [force * c for c in unit]
    answer = udp_control(op.ep.udp_port, {"op": "push", "body": body, "force": vector, "duration": duration})
    if answer is None or "error" in answer:
        raise ScenarioError(f"the HIL process did not apply the push: "
                            f"{answer['error'] if answer else 'no answer on its UDP control port'}")


def tilt_and_back(op: RecordingOperator, alpha: float, beta: float, duration: float, hold: float) -> None:
    """The platform to (alpha, beta) in ``duration`` s, held ``hold`` s, back level, then settled."""
    op.command("platform", alpha=alpha, beta=beta, duration=duration)
    op.wait(duration + hold)
    op.command("platform", alpha=0.0, beta=0.0, duration=duration)
    op.wait(duration + SETTLE_S)


@dataclass(frozen=True)
class Tilt:
    """Platform 0 -> (α, β) by a quintic in ``duration``, hold, back to level (thesis §2.6)."""
    alpha: float = THESIS_TILT[0]
    beta: float = THESIS_TILT[1]
    duration: float = THESIS_TILT_S
    hold: float = HOLD_S
    name: str = field(default="tilt", init=False)
    stabilizes: bool = field(default=True, init=False)

    def params(self) -> dict[str, Any]:
        return _deg({k: v for k, v in asdict(self).items() if k not in ("name", "stabilizes")}, "alpha", "beta") | {
            "angles": "deg"}

    def run(self, op: RecordingOperator) -> None:
        tilt_and_back(op, self.alpha, self.beta, self.duration, self.hold)


@dataclass(frozen=True)
class Squat:
    """The thesis squat (§2.6.1): from the stance to a near-straight leg (SQUAT_START), then ankle
    +16°, knee −85°, hip +70° from there, 7 s down, 7 s up (from the stance the knee would leave
    its limit, and the daemon refuses)."""
    name: str = field(default="squat", init=False)
    stabilizes: bool = field(default=False, init=False)

    def params(self) -> dict[str, Any]:
        return {}

    def run(self, op: RecordingOperator) -> None:
        op.command("move_joints", q=list(SQUAT_START), duration=SQUAT_START_S)
        until_hold(op, SQUAT_START_S + 1.0)
        op.command("run", trajectory="squat")
        until_hold(op, 20.0)
        op.wait(SETTLE_S)


@dataclass(frozen=True)
class Push:
    """A force on the hip body for ``duration`` while the leg stands (stabilizing by default),
    through the HIL's UDP control op ``push``."""
    force: float = 100.0
    duration: float = 0.1
    direction: str = "forward"
    before: float = 1.0
    after: float = 3.0
    name: str = field(default="push", init=False)
    stabilizes: bool = field(default=True, init=False)

    def params(self) -> dict[str, Any]:
        return push_params(self.force, self.duration, self.direction)

    def run(self, op: RecordingOperator) -> None:
        op.wait(self.before)
        push(op, "hip", self.force, PUSH_DIRECTIONS[self.direction], self.duration)
        op.wait(self.duration + self.after)


@dataclass(frozen=True)
class WalkFile:
    """Playback of a joint-trajectory CSV (controller.daemon.io.playback format) from the stance."""
    path: Path
    name: str = field(default="walk-file", init=False)
    stabilizes: bool = field(default=False, init=False)

    def params(self) -> dict[str, Any]:
        return {"path": str(self.path)}

    def run(self, op: RecordingOperator) -> None:
        op.command("run", trajectory=str(Path(self.path).resolve()))
        self.during(op)
        until_hold(op, 600.0)
        op.wait(SETTLE_S)

    def during(self, op: RecordingOperator) -> None:
        """What the operator does while the file plays (a subclass' event); nothing here."""


@dataclass(frozen=True)
class Fault:
    """The thesis tilt with ``count`` consecutive PRes of node ``node`` lost ``at`` s into the
    tilt. One loss is counted (+8) and forgiven; two or more in a row reach the DS 301 threshold
    (15): the controller goes to FAULT and quick-stops every drive, leg and platform."""
    count: int = 1
    node: int = 1
    at: float = 2.0
    tilt: Tilt = Tilt()
    after: float = 1.5
    name: str = field(default="fault", init=False)
    stabilizes: bool = field(default=True, init=False)

    def params(self) -> dict[str, Any]:
        return {"fault": "drop_pres", "count": self.count, "node": self.node, "at_s": self.at,
                "tilt": self.tilt.params()}

    def run(self, op: RecordingOperator) -> None:
        t = self.tilt
        op.command("platform", alpha=t.alpha, beta=t.beta, duration=t.duration)
        op.wait(self.at)
        op.expect_fault = True
        op.command("inject_fault", fault="drop_pres", node=self.node, count=self.count)
        op.wait(self.after)
        if op.state() == "FAULT":
            return
        op.wait(max(t.duration + t.hold - self.at - self.after, 0.0))
        op.command("platform", alpha=0.0, beta=0.0, duration=t.duration)
        op.wait(t.duration + SETTLE_S)
