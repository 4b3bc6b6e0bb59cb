"""`bipd import urdf`: the robot YAML on stdout or in -o's file; a URDF it cannot hold is one line
naming the joint or link, exit 1; bad usage exit 2."""
from __future__ import annotations

import json
import re

import pytest
import yaml

from controller.cli import main
from models.tree.config import load_tree

INERTIAL = '<inertial><mass value="1.0"/><inertia ixx="0.01" iyy="0.01" izz="0.01"/></inertial>'


def urdf(*joints: str, links=None, massless=()) -> str:
    """A URDF of these joints; its links are those the joints name unless given."""
    if links is None:
        links = dict.fromkeys(n for j in joints for n in re.findall(r'link="([^"]+)"', j))
    body = "".join(f'<link name="{n}">{"" if n in massless else INERTIAL}</link>' for n in links)
    return f'<?xml version="1.0"?><robot name="r">{body}{"".join(joints)}</robot>'


def joint(name, parent, child, kind="revolute", extra='<limit lower="-1" upper="1" velocity="2" effort="9"/>'):
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="0.1 0.2 0.3" rpy="0.3 -0.2 0.1"/><axis xyz="0.6 0 0.8"/>{extra}</joint>')


GOOD = urdf(joint("shoulder", "base", "arm"), joint("wrist", "arm", "hand", "fixed", ""))


def run(tmp_path, capsys, text, *args):
    path = tmp_path / "robot.urdf"
    path.write_text(text)
    code = main(["import", "urdf", str(path), *args])
    return code, capsys.readouterr()


def test_yaml_on_stdout_and_in_the_file(tmp_path, capsys):
    code, out = run(tmp_path, capsys, GOOD)
    assert code == 0 and out.err == ""
    doc = yaml.safe_load(out.out)
    assert [j["name"] for j in doc["joints"]] == ["shoulder"] and doc["frames"]["hand"]["body"] == "arm"
    target = tmp_path / "robot.yaml"
    code, summary = run(tmp_path, capsys, GOOD, "-o", str(target), "--json")
    assert code == 0 and target.read_text() == out.out
    s = json.loads(summary.out)
    assert (s["joints"], s["mass_kg"], s["roots"]) == (1, 3.0, ["base"])
    assert load_tree(target).bodies["arm"].mass == 2.0          # the hand merged into the arm


@pytest.mark.parametrize("text, args, names", [
    (urdf(joint("shoulder", "base", "arm", extra='<limit lower="-1" upper="1" velocity="2" effort="9"/>'
                '<mimic joint="elbow"/>')), (), "joint 'shoulder' mimics another joint"),
    (urdf(joint("shoulder", "base", "arm", "planar")), (), "joint 'shoulder' is a planar joint"),
    (urdf(joint("shoulder", "base", "arm", "floating")), (), "joint 'shoulder' is a floating joint"),
    (urdf(joint("shoulder", "base", "arm"), massless=("arm",)), (), "link 'arm' (carried by joint 'shoulder') "
                                                                     "has no inertial"),
    (urdf(joint("shoulder", "base", "arm"), joint("elbow", "hand", "arm")), (),
     "link 'arm' has two parents (joints 'shoulder' and 'elbow')"),
    (urdf(joint("shoulder", "base", "arm"), joint("elbow", "arm", "base")), (), "the joints close a loop"),
    (urdf(joint("shoulder", "base", "forearm"), links=("base", "arm")), (),
     "joint 'shoulder': unknown child link 'forearm'"),
    (GOOD, ("--root", "torso"), "unknown link 'torso' for the root"),
    (GOOD, ("--cut", "elbow"), "unknown joint 'elbow' to cut"),
    (GOOD, ("--feet", "sole"), "unknown link 'sole' for a foot"),
    (urdf(joint("shoulder", "base", "arm", extra='<limit lower="1" upper="-1" velocity="2" effort="9"/>')), (),
     "joint 'shoulder': limit lower 1.0 must be < upper -1.0"),
])
def test_unimportable_urdf_is_one_line_exit_1(tmp_path, capsys, text, args, names):
    code, out = run(tmp_path, capsys, text, *args)
    assert code == 1 and out.out == ""
    assert out.err.count("\n") == 1 and out.err.startswith("bipd: error: ") and names in out.err, out.err


def test_a_cut_joint_is_not_judged(tmp_path, capsys):
    """A mimic finger below a cut joint does not stop the import of the rest."""
    text = urdf(joint("shoulder", "base", "arm"),
                joint("finger", "arm", "hand", extra='<limit lower="-1" upper="1" velocity="2" effort="9"/>'
                      '<mimic joint="shoulder"/>'))
    code, out = run(tmp_path, capsys, text, "--cut", "finger")
    assert code == 0 and [j["name"] for j in yaml.safe_load(out.out)["joints"]] == ["shoulder"]


@pytest.mark.parametrize("args", [[], ["--json"], ["mjcf"]])
def test_bad_usage_exit_2(tmp_path, capsys, args):
    path = tmp_path / "robot.urdf"
    path.write_text(GOOD)
    argv = ["import", *(args if args == ["mjcf"] else ["urdf", *([str(path)] if args else []), *args])]
    with pytest.raises(SystemExit) as e:
        code = main(argv)
        raise SystemExit(code)
    assert e.value.code == 2


def test_missing_file_exit_2(tmp_path, capsys):
    assert main(["import", "urdf", str(tmp_path / "none.urdf")]) == 2
    assert "cannot read the file" in capsys.readouterr().err


MJCF = """<mujoco model="m"><worldbody><body name="b" pos="0 0 0.1"><inertial pos="0 0 0.1" mass="2"
 diaginertia="0.01 0.01 0.01"/><joint name="h" axis="0 1 0" range="-1 1" actuatorfrcrange="-5 5"/>
 </body></worldbody></mujoco>"""


def test_mjcf_through_the_cli(tmp_path, capsys):
    pytest.importorskip("mujoco")
    path = tmp_path / "m.xml"
    path.write_text(MJCF)
    assert main(["import", "mjcf", str(path), "--velocity", "2.5"]) == 0
    (joint,) = yaml.safe_load(capsys.readouterr().out)["joints"]
    assert (joint["name"], joint["limits"]["velocity"], joint["limits"]["torque"]) == ("h", 2.5, 5.0)


@pytest.mark.parametrize("argv, problem", [(["mjcf"], "give --velocity"), (["urdf", "--velocity", "2"],
                                                                          "are for an MJCF")])
def test_velocity_is_an_mjcf_option_exit_2(tmp_path, capsys, argv, problem):
    path = tmp_path / "m.xml"
    path.write_text(MJCF)
    assert main(["import", argv[0], str(path), *argv[1:]]) == 2
    assert problem in capsys.readouterr().err
