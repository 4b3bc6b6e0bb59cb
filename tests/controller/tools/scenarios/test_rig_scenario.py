"""The leg on the Stewart–Gough rig end to end: the HIL process (MuJoCo leg standing free on the rig's
plate, six screw-driven actuators) and the daemon (deploy/bipd_rig.yaml over udp, stepped lock-step),
operated through ZMQ by controller.tools.scenarios.rig: the stabilizer holds the leg through a gentle
fore-aft ground motion, and a step far beyond the tipping acceleration g·(foot half-length)/(CoG
height) fells it. One bench, two runs (about 20 s of wall time)."""
from __future__ import annotations

from pathlib import Path

import pytest

from controller.tools.scenarios.rig import RIG_CONFIG, RigMotion, motion_folder, motion_spec
from controller.tools.scenarios.runner import Options, ScenarioError, Session

pytest.importorskip("mujoco", reason="the HIL bench needs the sim extra: pip install 'bipd[sim]'")

pytestmark = pytest.mark.hil

GENTLE = "sinusoid:axis=y,amplitude=0.01,frequency=0.5,cycles=2"        # 0.1 m/s² peak
HARD = "step:axis=y,accel=6"                                             # about 4x the tipping acceleration
QUAKE = Path(RIG_CONFIG).parent / "motions" / "quake_kanai_tajimi.csv"


@pytest.fixture(scope="module")
def results():
    with Session(Options(config=RIG_CONFIG)) as s:
        return {"gentle": s.run(RigMotion(GENTLE), "gentle"), "hard": s.run(RigMotion(HARD), "hard")}


def test_the_stabilizer_holds_the_leg_through_a_gentle_ground_motion(results):
    r = results["gentle"]
    assert not r.fell and r.aborted is None, (r.fall_reasons, r.aborted)
    assert r.states == ["STABILIZING"] and r.min_cog_margin_m > 0.0


def test_a_step_far_beyond_tipping_fells_the_leg(results):
    r = results["hard"]
    assert r.fell and any("foot lift" in why or "tilt" in why for why in r.fall_reasons), r.fall_reasons


def test_motion_files(tmp_path):
    (tmp_path / "m.yaml").write_text("kind: sinusoid\naxis: x\namplitude: 0.02\nfrequency: 1\n")
    assert motion_spec(str(tmp_path / "m.yaml")) == "sinusoid:axis=x,amplitude=0.02,frequency=1"
    (tmp_path / "quake.csv").write_text("t,ax,ay,az\n0,0,0,0\n0.5,0,x,0\n")
    with pytest.raises(ScenarioError, match=r"quake.csv: line 3: column 'ay' is not a number"):
        motion_spec(str(tmp_path / "quake.csv"))
    assert motion_spec(str(QUAKE)) == str(QUAKE.resolve()) and motion_folder(str(QUAKE)) == QUAKE.parent.resolve()
    assert motion_folder("sinusoid") is None
    with pytest.raises(ScenarioError, match="expected one of tilt, sinusoid"):
        motion_spec("wobble")
    assert Path(RIG_CONFIG).is_file()
