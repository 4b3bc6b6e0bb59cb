"""Robot descriptions for tests: the BIP leg and random MDH chains."""
from __future__ import annotations

import numpy as np

from models import Robot, description_from_dict
from tests.paths import ROBOTS

BIP_LEG = ROBOTS / "bip_leg.yaml"


def random_inertia(rng: np.random.Generator) -> list[list[float]]:
    """A full (non-diagonal) physically valid inertia tensor: R diag(p) R^T with
    principal moments satisfying the triangle inequality."""
    p = np.sort(rng.uniform(0.02, 0.2, 3))
    p[2] = min(p[2], p[0] + p[1] - 1e-3)
    qr, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return (qr @ np.diag(p) @ qr.T).tolist()


def random_dynamics(rng: np.random.Generator) -> dict:
    """A random joint's limits, armature, friction and body (drawn in this order from ``rng``)."""
    return {"limits": {"position": [-2.0, 2.0], "velocity": 3.0, "torque": 100.0},
            "armature": float(rng.uniform(0.0, 0.05)),
            "friction": {"viscous": float(rng.uniform(0, 0.5)), "coulomb": float(rng.uniform(0, 0.3))},
            "body": {"mass": float(rng.uniform(0.5, 5.0)), "com": rng.uniform(-0.1, 0.2, 3).tolist(),
                     "inertia": random_inertia(rng)}}


def random_chain_dict(rng: np.random.Generator, n: int, prismatic: tuple[int, ...] = ()) -> dict:
    """A chain with non-zero a, alpha, theta, d everywhere, full inertia tensors,
    off-axis CoGs, rotor inertia and friction."""
    joints = []
    for i in range(n):
        joints.append({
            "name": f"j{i}",
            "type": "prismatic" if i in prismatic else "revolute",
            "mdh": {"alpha": float(rng.uniform(-2.5, 2.5)), "a": float(rng.uniform(0.05, 0.4)),
                    "theta": float(rng.uniform(-1.0, 1.0)), "d": float(rng.uniform(0.05, 0.3))},
            **random_dynamics(rng),
        })
    return {"name": f"random{n}", "gravity": rng.normal(0, 9.81 / np.sqrt(3), 3).tolist(),
            "joints": joints,
            "tool": {"alpha": 0.3, "a": 0.1, "theta": -0.2, "d": 0.05}}


def random_robot(seed: int, n: int, prismatic: tuple[int, ...] = ()) -> Robot:
    return Robot(description_from_dict(random_chain_dict(np.random.default_rng(seed), n, prismatic)))


def bip_leg() -> Robot:
    return Robot.from_yaml(BIP_LEG)


def random_states(robot: Robot, count: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    lo, hi = robot.model.qmin, robot.model.qmax
    for _ in range(count):
        yield (rng.uniform(lo, hi), rng.uniform(-2, 2, robot.n), rng.uniform(-5, 5, robot.n))
