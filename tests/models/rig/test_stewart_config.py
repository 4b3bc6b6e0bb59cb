"""Loading a Stewart-Gough rig YAML: the shipped file holds Staicu 2008's numbers, and
every bad file gives one ConfigError naming the file and the key."""
from __future__ import annotations

import copy
import math

import pytest
import yaml

from models.common.errors import ConfigError
from models.rig.config import load_stewart, stewart_from_dict
from tests.paths import STEWART_RIG


BASE = yaml.safe_load(STEWART_RIG.read_text())


def test_the_shipped_rig_holds_the_papers_values():
    d = load_stewart(STEWART_RIG)
    assert (d.l0, d.l1, d.l2, d.l3, d.l4) == (2.80, 0.20, 2.70, 2.80, 2.80)
    assert [b.mass for b in d.bodies] == [2.5, 20.0, 10.0, 2.5, 5.0, 100.0]
    assert [b.inertia for b in d.bodies] == [(0.2, 0.1, 0.1), (5.0, 30.0, 30.0), (20.0, 20.0, 5.0),
                                            (0.2, 0.1, 0.1), (2.0, 1.0, 2.0), (300.0, 300.0, 600.0)]
    assert d.motion.position == (0.02, 0.04, 0.06)
    assert d.motion.angles == pytest.approx((math.pi / 90, math.pi / 45, math.pi / 30), abs=1e-15)
    assert d.motion.duration == 3.0
    # eq. 2: base azimuths and platform azimuths relative to them
    assert [round(math.degrees(a)) for a in d.alpha1] == [0, 120, 120, -120, -120, 0]
    assert [round(math.degrees(a)) for a in d.alpha2] == [-60, 60, -60, 60, -60, 60]


def _set(path, value):
    doc = copy.deepcopy(BASE)
    d = doc
    for k in path[:-1]:
        d = d[k]
    if value is ...:
        del d[path[-1]]
    else:
        d[path[-1]] = value
    return doc


CASES = [
    (("geometry", "l0"), ..., "geometry.l0", "missing required key"),
    (("geometry", "l3"), -2.8, "geometry.l3", "must be > 0"),
    (("geometry", "stroke"), [0.5, -0.5], "geometry.stroke", "min < max"),
    (("geometry", "stroke"), [-3.1, 0.5], "geometry.stroke", "shortest leg"),
    (("geometry", "typo"), 1.0, "geometry.typo", "unknown key"),
    (("legs", "C"), ..., "legs.C", "missing required key"),
    (("legs", "A", "alpha2_deg"), 0.0, "legs.A", "vertical"),
    (("legs", "B", "alpha1"), 1.0, "legs.B.alpha1", "not both"),
    (("bodies", "rod", "mass"), 0.0, "bodies.rod.mass", "must be > 0"),
    (("bodies", "platform", "inertia"), [300.0, 300.0, 700.0], "bodies.platform.inertia", "triangle"),
    (("bodies", "cylinder", "inertia"), [5.0, 30.0], "bodies.cylinder.inertia", "list of 3"),
    (("motion", "duration"), "3 s", "motion.duration", "expected a number"),
    (("motion", "angles"), [0.0, 0.0, 0.0], "motion.angles", "not both"),
    (("gravity",), math.nan, "gravity", "finite"),
]


@pytest.mark.parametrize("path,value,key,problem", CASES, ids=[c[2] + ":" + c[3] for c in CASES])
def test_a_bad_rig_names_the_file_the_key_and_the_problem(path, value, key, problem):
    with pytest.raises(ConfigError) as e:
        stewart_from_dict(_set(path, value), "rig.yaml")
    assert e.value.key == key
    assert str(e.value).startswith(f"rig.yaml: {key}: ")
    assert problem in str(e.value)


def test_an_unreadable_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_stewart(tmp_path / "missing.yaml")
