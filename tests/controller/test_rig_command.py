"""The ``rig_motion`` command: validated on the I/O side (a built-in motion the rig's stroke holds,
Staicu 2008 eq. 8-18), played by the loop's rig from home, one at a time."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from controller.daemon.codes import Error, State
from controller.daemon.config import load_daemon_config
from controller.daemon.run import io_context
from controller.daemon.io.protocol import ErrorReply, Request, validate
from controller.daemon.rig.spec import motion_args
from controller.daemon.shm import Cmd
from models.rig.stewart import StewartModel
from models.rig.tilt import SOLES, THESIS

from tests.controller.conftest import make_context
from tests.controller.loop_harness import Harness

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
SINE = "sinusoid:axis=y,amplitude=0.05,frequency=1,cycles=4"


@pytest.fixture(scope="module")
def rig() -> StewartModel:
    return StewartModel.from_yaml(DEPLOY / "rigs" / "stewart_staicu2008.yaml")


def _req(motion) -> bytes:
    return json.dumps({"id": 1, "cmd": "rig_motion", "args": {"motion": motion}}).encode()


def test_a_valid_motion_becomes_its_mailbox_arguments(leg_desc, rig):
    ctx = make_context(leg_desc, rig=rig)
    ctx.state = State.HOLD
    r = validate(_req(SINE), ctx)
    assert isinstance(r, Request) and r.mailbox == Cmd.RIG_MOTION
    assert np.array_equal(r.values, motion_args(SINE))


@pytest.mark.parametrize("motion, code, words", [
    ("step:accel=15", Error.OUT_OF_RANGE, r"the rig cannot make this motion: leg [A-F] would need .* at t = \d"),
    ("quake", Error.BAD_ARGS, "the rig_motion command plays tilt, sinusoid"),
    ("earthquake:file=q.csv,wobble=1", Error.BAD_ARGS, "earthquake has no key 'wobble'"),
    ("earthquake:file=q.csv,fade=-1", Error.BAD_ARGS, r"fade must be a number in \[0\.01, 60\] s, got -1"),
    ("sinusoid:amplitude=-1", Error.BAD_ARGS, r"amplitude must be a number in \(0, 1\] m or rad, got -1"),
    (3, Error.BAD_ARGS, "args.motion must be a string"),
])
def test_bad_motions_are_refused_naming_why(leg_desc, rig, motion, code, words):
    ctx = make_context(leg_desc, rig=rig)
    ctx.state = State.HOLD
    r = validate(_req(motion), ctx)
    assert isinstance(r, ErrorReply) and r.code == code
    assert r.message.endswith(".")
    assert re.search(words, r.message), r.message


@pytest.mark.parametrize("config, convention, ok", [("bipd_rig.yaml", THESIS, True), ("bip2000_rig.yaml", SOLES, False)],
                         ids=["leg", "bip2000"])
def test_a_tilts_stroke_check_follows_the_robots_convention(config, convention, ok):
    """The daemon's I/O context carries the robot's tilt convention: a 37.5° α is about the rig's y for
    the leg (Ry(α) Rx(−β), stroke up to 38.4°), a roll about its x for BIP 2000 (RotX(α) RotY(β), up to
    36.6°), so the I/O side checks the motion the loop will play."""
    cfg = load_daemon_config(DEPLOY / config, backend="sim", lockstep=True)
    ctx = io_context(cfg, cfg.robot())
    assert ctx.rig_convention == convention
    ctx.state = State.HOLD
    r = validate(_req("tilt:alpha_deg=37.5,beta_deg=0,duration=2"), ctx)
    if ok:
        assert isinstance(r, Request) and r.mailbox == Cmd.RIG_MOTION
    else:
        assert isinstance(r, ErrorReply) and r.code == Error.OUT_OF_RANGE and "beyond its stroke" in r.message


def test_the_hinge_bench_has_no_rig_motion(leg_desc):
    ctx = make_context(leg_desc)
    ctx.state = State.HOLD
    r = validate(_req(SINE), ctx)
    assert isinstance(r, ErrorReply) and r.code == Error.NOT_SUPPORTED


def test_the_loop_plays_one_motion_at_a_time_from_home():
    h = Harness(config=load_daemon_config(DEPLOY / "bipd_rig.yaml", backend="sim", lockstep=True))
    try:
        assert h.command(Cmd.ENABLE, cycles=200)[0] and h.state == State.HOLD
        args = motion_args(SINE)
        assert h.command(Cmd.RIG_MOTION, *args) == (True, Error.OK)
        assert h.command(Cmd.RIG_MOTION, *args) == (False, Error.NOT_ALLOWED)      # still playing
        player = h.loop.rig.player
        peak = 0.0
        for _ in range(2100):
            h.run(1, heartbeat_every=1)
            peak = max(peak, abs(player.pose[1]))
        assert peak == pytest.approx(0.05, abs=2e-3) and player.motion is None
        assert np.allclose(player.pose, player.home, atol=1e-4)
        assert h.command(Cmd.PLATFORM, 0.05, 0.0, 0.5) == (True, Error.OK)
        h.run(300, heartbeat_every=50)
        assert h.command(Cmd.RIG_MOTION, *args) == (False, Error.NOT_ALLOWED)      # tilted: not at home
    finally:
        h.close()
