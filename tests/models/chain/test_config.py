"""Loading a robot YAML validates it: every bad input gives one ConfigError
naming the file and the key, never a traceback from deep inside."""
from __future__ import annotations

import copy

import pytest
import yaml

from models import ConfigError, Robot, load_description

from tests.models.chains import BIP_LEG

BASE = yaml.safe_load(BIP_LEG.read_text())


def write(tmp_path, doc, text=None):
    p = tmp_path / "robot.yaml"
    p.write_text(text if text is not None else yaml.safe_dump(doc))
    return p


def mutate(fn):
    doc = copy.deepcopy(BASE)
    fn(doc)
    return doc


CASES = [
    ("unknown top key", lambda d: d.update(colour="red"), "colour", "unknown key"),
    ("missing joints", lambda d: d.pop("joints"), "joints", "missing required key"),
    ("unknown joint key", lambda d: d["joints"][1].update(gear=3), "joints[1].gear", "unknown key"),
    ("missing mass", lambda d: d["joints"][2]["body"].pop("mass"), "joints[2].body.mass", "missing"),
    ("string mass", lambda d: d["joints"][2]["body"].update(mass="heavy"), "joints[2].body.mass", "expected a number"),
    ("zero mass", lambda d: d["joints"][0]["body"].update(mass=0.0), "joints[0].body.mass", "must be > 0"),
    ("negative mass", lambda d: d["joints"][3]["body"].update(mass=-1.0), "joints[3].body.mass", "must be > 0"),
    ("asymmetric inertia", lambda d: d["joints"][2]["body"].update(
        inertia=[[0.1, 0.01, 0], [0.0, 0.1, 0], [0, 0, 0.1]]), "joints[2].body.inertia", "not symmetric"),
    ("indefinite inertia", lambda d: d["joints"][2]["body"].update(
        inertia=[[0.1, 0, 0], [0, -0.1, 0], [0, 0, 0.1]]), "joints[2].body.inertia", "positive semi-definite"),
    ("triangle inequality", lambda d: d["joints"][2]["body"].update(
        inertia=[[0.01, 0, 0], [0, 0.01, 0], [0, 0, 0.1]]), "joints[2].body.inertia", "triangle inequality"),
    ("limits reversed", lambda d: d["joints"][2]["limits"].update(position=[0.5, -0.5]),
     "joints[2].limits.position", "must be < max"),
    ("limits equal", lambda d: d["joints"][2]["limits"].update(position=[0.5, 0.5]),
     "joints[2].limits.position", "must be < max"),
    ("bad joint type", lambda d: d["joints"][0].update(type="spherical"), "joints[0].type", "expected one of"),
    ("short gravity", lambda d: d.update(gravity=[0, 0]), "gravity", "list of 3"),
    ("nan length", lambda d: d["joints"][2]["mdh"].update(a=float("nan")), "joints[2].mdh.a", "finite"),
    ("alpha twice", lambda d: d["joints"][1]["mdh"].update(alpha_deg=90), "joints[1].mdh.alpha", "not both"),
    ("zero velocity limit", lambda d: d["joints"][1]["limits"].update(velocity=0), "joints[1].limits.velocity", "> 0"),
    ("bool mass", lambda d: d["joints"][1]["body"].update(mass=True), "joints[1].body.mass", "expected a number"),
    ("duplicate names", lambda d: d["joints"][1].update(name="knee"), "joints", "duplicate"),
    ("foot missing a", lambda d: d["foot"].pop("a"), "foot.a", "missing"),
    ("transmission unknown key", lambda d: d["transmission"]["knee"].update(gear=3),
     "transmission.knee.gear", "unknown key"),
    ("transmission zero pitch", lambda d: d["transmission"]["hip"].update(pitch=0.0),
     "transmission.hip.pitch", "must be > 0"),
]


@pytest.mark.parametrize("label,change,key,message", CASES, ids=[c[0] for c in CASES])
def test_bad_description_names_file_and_key(tmp_path, label, change, key, message):
    path = write(tmp_path, mutate(change))
    with pytest.raises(ConfigError) as err:
        load_description(path)
    text = str(err.value)
    assert str(path) in text
    assert f": {key}:" in text
    assert message in text


def test_invalid_yaml_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_description(write(tmp_path, None, "joints: [unclosed"))
    with pytest.raises(ConfigError, match="cannot read the file"):
        load_description(tmp_path / "absent.yaml")
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_description(write(tmp_path, None, "- just\n- a list\n"))


def test_degrees_only_through_deg_keys(tmp_path):
    doc = mutate(lambda d: d["joints"][1]["mdh"].pop("alpha"))
    doc["joints"][1]["mdh"]["alpha_deg"] = 90.0
    doc["joints"][2]["limits"] = {"position_deg": [-90.0, 0.0], "velocity": 2.0, "torque": 100.0}
    robot = Robot(load_description(write(tmp_path, doc)))
    assert robot.model.mdh[1, 0] == pytest.approx(1.5707963267948966)
    assert robot.model.qmin[2] == pytest.approx(-1.5707963267948966)


def test_bip_leg_loads_with_level_floor_gravity():
    robot = Robot.from_yaml(BIP_LEG)
    assert robot.n == 4
    assert list(robot.model.gravity) == [-9.81, 0.0, 0.0]
    assert robot.transmission is not None   # validated at load, over the joint-limit box
