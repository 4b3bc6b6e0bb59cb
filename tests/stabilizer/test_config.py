"""Stabilizer YAML: the deployed file loads; every mistake is one ConfigError
naming the file and the key."""
from __future__ import annotations

import numpy as np
import pytest

from models.common.errors import ConfigError
from stabilizer.config import load_config
from stabilizer.fields import COULOMB
from stabilizer.stabilizer import Stabilizer
from stabilizer.tilt_observer import ObserverSettings

from tests.stabilizer.helpers import CONFIG, Q0, make


def test_deployed_file_loads():
    cfg = load_config(CONFIG)
    assert cfg.walls.law == COULOMB and cfg.attractor is None and cfg.outline is None
    st = Stabilizer.from_yaml(CONFIG)
    assert st.nv == 4 and st.robot.model.name == "bip_leg"


@pytest.mark.parametrize("sections,key,message", [
    ({"wheels": 1}, "wheels", "unknown key"),
    ({"tilt": {"source": "gps"}}, "tilt.source", "expected one of"),
    ({"tilt": {"source": "imu", "use_acceleration": True}}, "tilt.use_acceleration", "already measures"),
    ({"tilt": {"min_load": 0.0}}, "tilt.min_load", "must be in"),
    ({"tilt": {"flat_margin": -0.001}}, "tilt.flat_margin", "must be in"),
    ({"tilt": {"norm_tolerance": 1.5}}, "tilt.norm_tolerance", "must be in"),
    ({"tilt": {"dwell_s": 0.001}}, "tilt.dwell_s", r"must be in \[0.002, inf\]"),         # under one period
    ({"tilt": {"filter_s": 0.003}}, "tilt.filter_s", r"must be in \[0.004, inf\]"),       # under two periods
    ({"tilt": {"unconfirmed_s": "long"}}, "tilt.unconfirmed_s", "expected a number"),
    ({"walls": {"law": "gravity"}}, "walls.law", "expected one of"),
    ({"walls": {"gain": -1.0}}, "walls.gain", "must be in"),
    ({"walls": {"gain": [1.0, 1.0, 1.0]}}, "walls.gain", "list of 4"),
    ({"walls": {"saturation_distance": 0.0}}, "walls.saturation_distance", "must be in"),
    ({"walls": {"saturation_distance": 0.07}}, "walls.saturation_distance", "no unsaturated zone"),
    ({"walls": {"exponent": 3}}, "walls.exponent", "only used by the inverse_power"),
    ({"walls": {"law": "inverse_power"}}, "walls.exponent", "missing required key"),
    ({"walls": {"law": "exponential"}}, "walls.length", "missing required key"),
    ({"walls": {"damping": 1.0}}, "walls.damping", "only used by the spring_damper"),
    ({"attractor": {"law": "coulomb", "gain": 1.0, "softening_radius": 0.02, "target": [1, 2]}},
     "attractor.target", "list of 3"),
    ({"attractor": {"law": "coulomb", "gain": 1.0, "target": "initial"}},
     "attractor.softening_radius", "missing required key"),
    ({"admittance": {"damping": 0.0}}, "admittance.damping", "must be in"),
    ({"virtual_robot": {"joint_weights": [1, 1, 1]}}, "virtual_robot.joint_weights", "list of 4"),
    ({"virtual_robot": {"velocity_scale": 1.5}}, "virtual_robot.velocity_scale", "must be in"),
    ({"virtual_robot": {"posture": {"gain": 1.0, "target": [0, 0, 0, 3.0]}}},
     "virtual_robot.posture.target[3]", "outside the joint limits"),
    ({"foot": {"outline": [[0.06, 0.17], [-0.06, -0.09], [0.06, -0.09], [-0.06, 0.17]]}},
     "foot.outline", "strictly convex"),
    ({"foot": {"outline": [[0.06, 0.17], [0.06, -0.09]]}}, "foot.outline", "3 to 32 vertices"),
    ({"foot": {"outline": [[0.06, "x"], [0.06, -0.09], [0.0, 0.0]]}}, "foot.outline[0]", "expected a number"),
    ({"period": "fast"}, "period", "expected a number"),
])
def test_errors_name_the_file_and_the_key(sections, key, message):
    with pytest.raises(ConfigError, match=message) as e:
        make(**sections)
    assert e.value.where == str(CONFIG) and e.value.key == key


def test_tilt_observer_settings_default_to_todays_values_and_are_read():
    assert load_config(CONFIG).tilt_observer == ObserverSettings()
    assert ObserverSettings() == ObserverSettings(20.0, 0.002, 0.05, 0.02, 0.15, 1.0)
    given = {"min_load": 40.0, "flat_margin": 0.004, "norm_tolerance": 0.1, "dwell_s": 0.05, "filter_s": 0.3,
             "unconfirmed_s": 2.0}
    assert make(tilt=given).config.tilt_observer == ObserverSettings(**given)


def test_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("robot: [unclosed\n")
    with pytest.raises(ConfigError) as e:
        load_config(bad)
    assert e.value.where == str(bad)


def test_any_convex_outline_and_per_wall_gains():
    """A hexagonal foot, counter-clockwise, with one gain per edge: six walls,
    all inner normals pointing at the polygon's inside."""
    hexagon = [[0.05 * np.cos(t), 0.04 + 0.1 * np.sin(t)] for t in np.linspace(0, 2 * np.pi, 7)[:-1]]
    st = make(foot={"outline": hexagon},
              walls={"law": "inverse_power", "exponent": 3.0, "gain": [0.01] * 6})
    q = Q0.copy()
    st.reset(q)
    for _ in range(1000):                          # 2 s on a (0.1, 0.2) rad floor
        assert st.step(q, (0.1, 0.2, 0.0)) == 0
        q = st.q_ref.copy()
    assert st.nv == 6 and st.forces.shape == (7, 3)
    centre = st.polygon.mean(axis=0)
    for (ny, nz, c) in st.walls:
        assert ny * centre[0] + nz * centre[1] + c > 0
    assert st.min_margin > 0.02
