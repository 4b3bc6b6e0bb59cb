"""Loading a tree YAML validates it: every bad tree gives one ConfigError naming
the file and the key, never a traceback from deep inside; chain files load
unchanged."""
from __future__ import annotations

import copy

import pytest
import yaml

from models import ConfigError
from models.tree.config import load_tree

from tests.models.chains import BIP_LEG
from tests.models.trees import BIP2000

BASE = yaml.safe_load(BIP2000.read_text())


def mutate(fn):
    doc = copy.deepcopy(BASE)
    fn(doc)
    return doc


def _set(path, value):
    def fn(doc):
        *head, last = path
        d = doc
        for k in head:
            d = d[k]
        if value is ...:
            del d[last]
        else:
            d[last] = value
    return fn


CASES = [
    ("unknown parent", _set(("joints", 3, "parent"), "nobody"), "joints[3].parent", "unknown body 'nobody'"),
    ("missing parent", _set(("joints", 2, "parent"), ...), "joints[2].parent", "missing required key"),
    ("second root", _set(("joints", 8, "parent"), None), "joints[8].parent", "a tree has one root"),
    ("cycle", _set(("joints", 0, "parent"), "l_foot"), "joints[0].parent", "cycle"),
    ("self parent", _set(("joints", 4, "parent"), "l_ankle_cardan"), "joints[4].parent", "cycle"),
    ("body named twice", _set(("joints", 9, "body", "name"), "l_thigh"), "joints[9].body.name",
     "already named by joints[2]"),
    ("body named as the base", _set(("joints", 12, "body", "name"), "pelvis"), "joints[12].body.name",
     "already named by base.name"),
    ("root not a body", _set(("roots", 1), "l_knee"), "roots[1]", "neither a body nor a frame"),
    ("unnamed base", _set(("base", "name"), ""), "base.name", "non-empty name"),
    ("base without mass", _set(("base", "mass"), ...), "base.mass", "missing required key"),
    ("bad gamma", _set(("joints", 0, "mdh", "gamma_deg"), "ninety"), "joints[0].mdh.gamma_deg", "expected a number"),
    ("unknown mdh key", _set(("joints", 0, "mdh", "c"), 0.1), "joints[0].mdh.c", "unknown key"),
    ("frame on no body", _set(("frames", "trunk", "body"), "head"), "frames.trunk.body", "unknown body 'head'"),
    ("frame rpy twice", _set(("frames", "trunk", "rpy"), [0, 0, 0]), "frames.trunk.rpy", "not both"),
    ("clockwise sole", lambda d: d["feet"]["left"]["outline"].reverse(), "feet.left.outline", "counter-clockwise"),
    ("sensor on the other foot", _set(("feet", "left", "sensors", 2), "right_fs_rear_left"),
     "feet.left.sensors[2]", "not a frame on the foot's body 'l_foot'"),
    ("unknown subtree joint", _set(("subtrees", "trunk"), "neck"), "subtrees.trunk", "unknown joint 'neck'"),
    ("chain key in a tree", _set(("tool",), {"alpha": 0.0, "a": 0.1}), "tool", "unknown key"),
]


@pytest.mark.parametrize("label,fn,key,text", CASES, ids=[c[0] for c in CASES])
def test_bad_tree_names_file_and_key(tmp_path, label, fn, key, text):
    path = tmp_path / "bip2000.yaml"
    path.write_text(yaml.safe_dump(mutate(fn)))
    with pytest.raises(ConfigError) as e:
        load_tree(path)
    assert e.value.where == str(path)
    assert e.value.key == key
    assert text in str(e.value)
    assert str(e.value).startswith(f"{path}: {key}: ")


def test_parent_in_a_chain_file_is_refused(tmp_path):
    doc = yaml.safe_load(BIP_LEG.read_text())
    doc["joints"][2]["parent"] = "ankle_lateral"
    path = tmp_path / "leg.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match=r"joints\[2\]\.parent: a chain has no parent keys"):
        load_tree(path)


def test_bip2000_is_the_thesis_robot():
    """15 actuated joints, 105 kg (Gastebois 2017 §1), a sole polygon and four
    force sensors per foot, the named operational frames."""
    d = load_tree(BIP2000)
    assert d.n == 15
    assert sum(b.mass for b in d.bodies.values()) == pytest.approx(105.0, abs=1e-12)
    assert {f.name for f in d.feet} == {"left", "right"}
    assert all(len(f.sensors) == 4 and len(f.outline) >= 4 for f in d.feet)
    assert {"left_sole", "right_sole", "pelvis", "trunk"} <= {f.name for f in d.frames}
    assert d.roots == ("pelvis", "left_sole", "right_sole")
    assert sorted(len(b) for b in d.subtrees.values()) == [3, 6, 6]


def test_chain_file_loads_as_a_tree():
    """No parent key = the previous joint; the chain's tool is the frame 'tool'."""
    d = load_tree(BIP_LEG)
    assert [j.parent for j in d.joints] == ["base", "ankle_lateral", "ankle_sagittal", "knee"]
    assert [f.name for f in d.frames] == ["tool"] and d.frames[0].body == "hip"
    assert d.bodies["base"].mass == 0.0 and d.roots == ("base",)
