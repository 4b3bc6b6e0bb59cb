"""Every `bipd ctl` example in the docs parses as `bipd ctl` parses it and is a request the
protocol accepts (arguments, types, ranges), so the docs cannot drift from the registry."""
from __future__ import annotations

import json
import re
import shlex

import pytest

from controller.daemon.io.protocol import ALLOWED, Context, ErrorReply, validate
from controller.tools.ctl import _parse_args, build_parser
from models.rig.stewart import StewartModel


from tests.paths import ROOT
DOCS = sorted([*ROOT.glob("docs/*.md"), ROOT / "README.md", ROOT / "deploy" / "INSTALL.md", *ROOT.glob("*/README.md")])
BUS_AXES = ("ankle_1", "ankle_2", "knee", "hip", "platform_alpha", "platform_beta")   # deploy/bipd.yaml's bus
EXAMPLE = re.compile(r"bipd ctl ([a-z_]+(?:[^`|;#\\\n(])*)")


def examples() -> list[tuple[str, str]]:
    """(where, the example's words after ``bipd ctl``) of every example in the docs."""
    out = []
    for path in DOCS:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            out += [(f"{path.relative_to(ROOT)}:{n}", m.group(1).strip()) for m in EXAMPLE.finditer(line)]
    return out


def test_the_docs_hold_examples_of_every_kind():
    found = {words.split()[0] for _, words in examples()}
    assert {"move_joints", "run", "inject_fault", "set_gains", "stabilizer", "step", "rig_motion"} <= found


@pytest.mark.parametrize("where,words", examples())
def test_every_ctl_example_is_a_valid_request(where, words, leg_desc):
    ns = build_parser().parse_intermixed_args(shlex.split(words))
    args = _parse_args(ns.args)
    rig = StewartModel.from_yaml(ROOT / "deploy" / "rigs" / "stewart_staicu2008.yaml")
    ctx = Context.from_description(leg_desc, bus_axes=BUS_AXES, rig=rig, stepped=True, whole_body="support" in args)
    ctx.state = min(ALLOWED[ns.cmd])                      # a state the command is allowed in
    req = validate(json.dumps({"id": 1, "cmd": ns.cmd, "args": args}).encode(), ctx)
    assert not isinstance(req, ErrorReply), f"{where}: bipd ctl {words}: {req.code_name}: {req.message}"
