"""Shared builders for the stabilizer tests: the deployed configuration with
overrides, and the thesis' tilt scenario (§2.5.12)."""
from __future__ import annotations

import copy

import numpy as np
import yaml

from models import Robot
from stabilizer.config import config_from_dict
from stabilizer.stabilizer import Stabilizer
from tests.paths import ROBOTS

CONFIG = ROBOTS / "bip_leg_stabilizer.yaml"
BASE = yaml.safe_load(CONFIG.read_text())
ROBOT = Robot.from_yaml(ROBOTS / "bip_leg.yaml")
FOOT = ROBOT.description.foot
Q0 = np.array([0.0, 0.25, -0.5, 0.25])          # knee bent, pelvis upright
ATTRACTOR = {"law": "coulomb", "gain": 0.5, "softening_radius": 0.03, "target": "initial"}


def config_dict(**sections) -> dict:
    """The deployed YAML document with whole top-level sections replaced
    (value None removes the section) or, for dicts, keys merged."""
    d = copy.deepcopy(BASE)
    for key, value in sections.items():
        if value is None:
            d.pop(key, None)
        elif isinstance(value, dict) and isinstance(d.get(key), dict):
            d[key].update(value)
        else:
            d[key] = value
    return d


def make(**sections) -> Stabilizer:
    return Stabilizer(ROBOT, config_from_dict(config_dict(**sections), str(CONFIG)))


def quintic(t: float, duration: float) -> float:
    x = min(max(t / duration, 0.0), 1.0)
    return 10 * x ** 3 - 15 * x ** 4 + 6 * x ** 5


def tilt_scenario(t: float) -> tuple[float, float]:
    """Thesis §2.5.12: (alpha, beta) from (0, 0) to (10, 20) deg by a quintic in
    7 s, and back in 7 s."""
    s = quintic(t, 7.0) - quintic(t - 7.0, 7.0)
    return np.radians(10.0) * s, np.radians(20.0) * s


class SimulatedClock:
    """perf_counter_ns stand-in: the k-th timed interval (a start and an end reading) lasts
    ``durations[k]`` ns."""

    def __init__(self, durations: np.ndarray) -> None:
        self.durations = iter(durations.tolist())
        self.now = 0
        self.started = False

    def __call__(self) -> int:
        if self.started:
            self.now += next(self.durations)
        self.started = not self.started
        return self.now
