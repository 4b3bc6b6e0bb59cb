"""`bipd export urdf|mjcf`: the document on stdout; a missing file or bad YAML is one line
naming the file, exit 2."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from controller.cli import main
from tests.paths import ROBOTS



def test_urdf_on_stdout(capsys):
    assert main(["export", "urdf", str(ROBOTS / "bip2000.yaml")]) == 0
    root = ET.fromstring(capsys.readouterr().out.split("?>", 1)[1])
    moving = [j for j in root.iter("joint") if j.get("type") == "revolute"]
    assert root.get("name") == "bip2000" and len(moving) == 15


@pytest.mark.parametrize("text, problem", [(None, "cannot read the file"), ("joints: [a, b", "invalid YAML"),
                                           ("name: x\ngravity: [0, 0, -9.81]\n", "joints")])
def test_bad_file_is_one_line_exit_2(tmp_path, capsys, text, problem):
    path = tmp_path / "robot.yaml"
    if text is not None:
        path.write_text(text)
    assert main(["export", "urdf", str(path)]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.count("\n") == 1 and out.err.startswith(f"bipd: error: {path}") and problem in out.err
