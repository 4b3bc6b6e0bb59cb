"""The gait's parameter sweep: every (steps, speed) cell generated and checked, tabulated as
OK, refused before solving (the limit named), stalled in the whole-body IK (sample, task) or
failing a check (which).

    python -m models.gait.sweep [--period S] [--robot PATH]
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from models.tree.robot import TreeRobot
from models.gait.checks import check_gait
from models.gait.plan import GaitParams
from models.gait.wholebody import GaitError, GaitInfeasible, generate

STEPS = tuple(range(1, 11))
SPEEDS_M_H = (180.0, 270.0, 360.0, 540.0, 720.0)
ROBOT = Path(__file__).resolve().parents[2] / "deploy" / "robots" / "bip2000.yaml"


@dataclass
class Cell:
    """steps, speed (m/h), outcome (OK, REFUSED, SOLVER, CHECK) and its sentence (empty when OK);
    step (m) and zmp_margin (m) when generated."""

    steps: int
    speed_m_h: float
    outcome: str
    detail: str
    step: float = float("nan")
    zmp_margin: float = float("nan")


def run_cell(robot: TreeRobot, steps: int, speed_m_h: float, period: float = 0.002) -> Cell:
    """Generate and check one gait (the other parameters at their defaults)."""
    params = GaitParams(speed=speed_m_h / 3600.0, steps=steps, period=period)
    try:
        gait = generate(robot, params)
    except GaitInfeasible as e:
        return Cell(steps, speed_m_h, "REFUSED", e.reason)
    except GaitError as e:
        return Cell(steps, speed_m_h, "SOLVER", str(e))
    report = check_gait(robot, gait.t, gait.q, gait.support, params.speed, gait.plan.speed_start,
                        params.foot_spacing)
    return Cell(steps, speed_m_h, "OK" if report.ok else "CHECK", "; ".join(report.problems),
                gait.plan.step_length, float(report.margin.min()))


def sweep(robot: TreeRobot, steps=STEPS, speeds_m_h=SPEEDS_M_H, period: float = 0.002) -> list[Cell]:
    return [run_cell(robot, n, v, period) for n in steps for v in speeds_m_h]


def table(cells: list[Cell]) -> str:
    """steps × speed grid of outcomes, then one line per cell that is not OK."""
    speeds = sorted({c.speed_m_h for c in cells})
    grid = {(c.steps, c.speed_m_h): c for c in cells}
    lines = ["steps | " + " ".join(f"{v:>9.0f}" for v in speeds) + "  (m/h)"]
    for n in sorted({c.steps for c in cells}):
        lines.append(f"{n:>5} | " + " ".join(f"{grid[n, v].outcome:>9}" if (n, v) in grid else " " * 9
                                            for v in speeds))
    lines += [f"{c.steps} steps, {c.speed_m_h:.0f} m/h: {c.outcome}: {c.detail}" for c in cells if c.outcome != "OK"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m models.gait.sweep", description=__doc__.splitlines()[0])
    ap.add_argument("--period", type=float, default=0.002)
    ap.add_argument("--robot", default=str(ROBOT))
    args = ap.parse_args(argv)
    cells = sweep(TreeRobot.from_yaml(args.robot), period=args.period)
    print(table(cells))
    return 0 if all(c.outcome in ("OK", "REFUSED") for c in cells) else 1


if __name__ == "__main__":
    raise SystemExit(main())
