"""Tree descriptions for tests: BIP 2000 and a random branching tree."""
from __future__ import annotations

import numpy as np

from models.tree.config import tree_from_dict
from models.tree.robot import TreeRobot

from tests.models.chains import random_dynamics, random_inertia
from tests.paths import ROBOTS

BIP2000 = ROBOTS / "bip2000.yaml"

# parent body of each joint of the random tree: the base and bodies j1, j2, j5 and
# j7 carry two children each
RANDOM_PARENTS = ("b0", "j0", "j1", "j0", "b0", "j4", "j4", "j1", "j7", "j7")
RANDOM_PRISMATIC = (3, 8)


def random_tree_dict(seed: int) -> dict:
    """A 10-joint tree branching at several bodies, two prismatic joints, every
    MDH parameter (gamma and b included) non-zero, full inertias, friction, rotor
    inertia, operational frames off the body frames, and four rootings: the base,
    a frame on a leaf, a frame on an inner body, an inner body."""
    rng = np.random.default_rng(seed)
    joints = []
    for i, parent in enumerate(RANDOM_PARENTS):
        joints.append({
            "name": f"j{i}", "parent": parent,
            "type": "prismatic" if i in RANDOM_PRISMATIC else "revolute",
            "mdh": {"gamma": float(rng.uniform(-2.5, 2.5)), "b": float(rng.uniform(-0.2, 0.2)),
                    "alpha": float(rng.uniform(-2.5, 2.5)), "a": float(rng.uniform(0.05, 0.4)),
                    "theta": float(rng.uniform(-1.0, 1.0)), "d": float(rng.uniform(0.05, 0.3))},
            **random_dynamics(rng),
        })

    def frame(body: str) -> dict:
        return {"body": body, "xyz": rng.uniform(-0.2, 0.2, 3).tolist(), "rpy": rng.uniform(-2, 2, 3).tolist()}

    return {"name": "random_tree", "gravity": rng.normal(0, 9.81 / np.sqrt(3), 3).tolist(),
            "base": {"name": "b0", "mass": 3.0, "com": [0.02, -0.01, 0.05], "inertia": random_inertia(rng)},
            "joints": joints,
            "frames": {"leaf": frame("j9"), "inner": frame("j1"), "other_leaf": frame("j6")},
            "roots": ["b0", "leaf", "inner", "j4"],
            "subtrees": {"first": "j0", "second": "j4", "twig": "j7"}}


def random_tree(seed: int = 5) -> TreeRobot:
    return TreeRobot(tree_from_dict(random_tree_dict(seed), "<random tree>"))


PLACED = ("j1", "j4", "j9")   # an inner joint crossed backwards from 'leaf', one on the base, the leaf's


def random_placed_tree(seed: int = 5) -> TreeRobot:
    """The random tree with a fixed placement (docs/import.md) before the KK parameters of a few joints."""
    doc = random_tree_dict(seed)
    rng = np.random.default_rng(seed + 1)
    for j in doc["joints"]:
        if j["name"] in PLACED:
            j["placement"] = {"xyz": rng.uniform(-0.2, 0.2, 3).tolist(), "rpy": rng.uniform(-2, 2, 3).tolist()}
    return TreeRobot(tree_from_dict(doc, "<random placed tree>"))


def bip2000() -> TreeRobot:
    return TreeRobot.from_yaml(BIP2000)


def random_states(robot: TreeRobot, count: int, seed: int = 0):
    """(q, qd, qdd, g): joint states within the limits and a gravity vector of
    9.81 m/s^2 in a random direction (a tilted floor)."""
    rng = np.random.default_rng(seed)
    lo, hi = robot.model.qmin, robot.model.qmax
    for _ in range(count):
        g = rng.normal(size=3)
        yield (rng.uniform(lo, hi), rng.uniform(-2, 2, robot.n), rng.uniform(-5, 5, robot.n),
               9.81 * g / np.linalg.norm(g))
