"""BIP 2000 standing on the Stewart–Gough rig's plate (drivers.sim.hil.plant_biped with ``rig``): settled at
the rig's home pose, its six motors at 2π/lead × the home leg lengths of the rig's model (Staicu 2008,
eq. 10: models.rig.stewart.leg_lengths), and a slide's torque moves the plate (the truth's plate_position)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from drivers.config import BusConfigError
from drivers.sim.hil.plant_biped import BipedPlant
from models.rig.stewart import leg_lengths
from models.tree.config import load_tree
from tests.paths import ROBOTS


LEAD = 0.01


@pytest.fixture(scope="module")
def plant(stewart) -> BipedPlant:
    return BipedPlant(load_tree(ROBOTS / "bip2000.yaml"), rig=stewart,
                      rig_options={"screw_lead": LEAD})


def test_the_robot_stands_settled_on_the_plate_at_the_rig_home(plant, stewart):
    home = np.zeros(6)
    leg_lengths(stewart.buf, np.array([0.0, 0.0, stewart.desc.h, 0.0, 0.0, 0.0]), home, np.zeros((6, 6)))
    s = plant.sensors
    assert not s["fallen"] and np.all(np.abs(s["foot_lift"]) < 1e-3)
    np.testing.assert_allclose(s["plate_position"], 0.0, atol=5e-4)   # home, less the settling hold's give (0.2 mm)
    np.testing.assert_allclose(plant.motor_position[-6:] / (2 * math.pi / LEAD), home, atol=5e-4)
    np.testing.assert_allclose(s["platform"], 0.0, atol=1e-3)


def test_the_rig_needs_its_six_axes(stewart):
    with pytest.raises(BusConfigError, match="six actuators"):
        BipedPlant(load_tree(ROBOTS / "bip2000.yaml"), rig=stewart, rig_axes=("a", "b"))
