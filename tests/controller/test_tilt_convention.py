"""BIP 2000's platform tilt (α, β) means the same on the Stewart–Gough rig (deploy/bip2000_rig.yaml) as on
its two-hinge platform (deploy/bip2000_platform.yaml): RotX(α) RotY(β), roll about the soles' x
(forward) then pitch about the rolled y (docs/conventions.md, "Platform tilt"; models.rig.tilt).

In process, lock-step: the loop on the MuJoCo biped plant standing on the plate (drivers.sim.hil.plant_biped),
the whole-robot stabilizer on. The ``platform`` command rolls, then pitches, the plate by 3°; MuJoCo's plate
orientation (its truth, independent of the loop's kinematics) must then be RotX(α) RotY(β) of the command, and
the loop's measured tilt (telemetry ``platform``), the truth stream's ``platform``, the models' gravity and the
stabilizer's apparent up must agree with it, in the soles' axes. A roll read as a pitch puts the gravity
0.7 m/s² off."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from controller.daemon.codes import Error, StabParam, State
from controller.daemon.config import load_daemon_config
from controller.daemon.rig.spec import motion_args
from controller.daemon.shm import Cmd
from drivers.hal import open_bus
from models.common.support import DOUBLE
from models.tilt import sole_gravity

from tests.controller import loop_harness
from tests.controller.loop_harness import Harness

pytest.importorskip("mujoco", reason="the biped plant needs the sim extra: pip install 'bipd[sim]'")

from drivers.sim.hil.mjcf import PLATFORM  # noqa: E402
from drivers.sim.hil.plant_biped import BipedPlant  # noqa: E402
from models.rig.stewart import StewartModel  # noqa: E402

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
ANGLE = math.radians(3.0)
TILTS = {"roll": (ANGLE, 0.0), "pitch": (0.0, ANGLE)}


def _plant(cfg) -> BipedPlant:
    """The biped standing on the config's support: the rig's plate, or the hinges' plate."""
    desc, rig = cfg.robot().description, cfg.control.rig
    if rig is None:
        return BipedPlant.from_config(cfg.bus, desc, platform_ratio=cfg.control.platform_ratio)
    return BipedPlant.from_config(cfg.bus, desc, rig=StewartModel.from_yaml(rig.rig_path), rig_axes=rig.axes,
                                  screw_lead=rig.screw_lead)


@pytest.fixture(params=["bip2000_rig.yaml", "bip2000_platform.yaml"], ids=["rig", "hinges"])
def bench(request):
    """A fresh bench, enabled and stabilizing in double support on the level plate."""
    cfg = load_daemon_config(DEPLOY / request.param, backend="sim", lockstep=True)
    plant = _plant(cfg)
    mp = pytest.MonkeyPatch()
    mp.setattr(loop_harness, "open_plant_bus", lambda c, _robot: open_bus(c.bus_section, plant=plant))
    h = Harness(config=cfg)
    mp.undo()
    try:
        assert h.command(Cmd.ENABLE, cycles=200) == (True, Error.OK) and h.state == State.HOLD
        m, d = plant.mj_model, plant.mj_data
        plate, sole = m.body(PLATFORM).id, m.body("left_sole").id
        # the soles stand flat on the level plate, their axes its axes (yaw included)
        assert np.allclose(d.xmat[sole].reshape(3, 3), d.xmat[plate].reshape(3, 3), atol=2e-3)
        assert h.command(Cmd.STABILIZER, 1.0, float(StabParam.SUPPORT), float(DOUBLE))[0]
        yield h, plant, plate
    finally:
        h.close()


@pytest.mark.parametrize("name", list(TILTS))
def test_the_platform_tilt_is_roll_then_pitch_in_the_soles_axes(bench, name):
    h, plant, plate = bench
    alpha, beta = TILTS[name]
    loop = h.loop
    assert h.command(Cmd.PLATFORM, alpha, beta, 0.5) == (True, Error.OK)
    h.run(400, heartbeat_every=50)
    try:
        assert h.state == State.STABILIZING
        g0 = float(np.linalg.norm(loop.g_level))
        R = plant.mj_data.xmat[plate].reshape(3, 3)
        g_true = R.T @ np.array([0.0, 0.0, -g0])          # gravity in the plate's (the soles') axes, from MuJoCo
        g_cmd = np.zeros(3)
        sole_gravity(alpha, beta, loop.g_level, g_cmd)
        # the plate turned as the command says: a roll tips gravity along the soles' y, a pitch along their x
        assert np.allclose(g_true, g_cmd, atol=0.02), (g_true, g_cmd)
        # the loop reads that tilt back (telemetry `platform`, the tilt its models follow), as the truth does;
        # within 3 mrad of the command: the hinges' drives sag under the robot's load by about 1.3 mrad
        assert np.allclose(loop.plat, (alpha, beta), atol=3e-3), loop.plat
        assert np.allclose(loop.tilt[:2], loop.plat, atol=1e-9)
        assert np.allclose(plant.sensors["platform"], loop.plat, atol=1e-3), (plant.sensors["platform"], loop.plat)
        # the models' gravity and the stabilizer's apparent up are MuJoCo's
        assert np.allclose(loop.models.gravity, g_true, atol=0.02), (loop.models.gravity, g_true)
        assert np.allclose(loop.stab.up, -g_true / g0, atol=2e-3), (loop.stab.up, g_true)
    finally:
        assert h.command(Cmd.PLATFORM, 0.0, 0.0, 0.5) == (True, Error.OK)
        h.run(400, heartbeat_every=50)
        assert h.state == State.STABILIZING


@pytest.mark.parametrize("bench", ["bip2000_rig.yaml"], indirect=True, ids=["rig"])
@pytest.mark.parametrize("name", list(TILTS))
def test_a_rig_tilt_motion_on_bip2000_rolls_then_pitches_as_its_hinges(bench, name):
    """``rig_motion motion=tilt:...`` (level → (α, β) → level, 1 s each way): at the turn the plate is
    RotX(α) RotY(β) of the motion's angles, and the loop reads them back."""
    h, plant, plate = bench
    alpha, beta = TILTS[name]
    spec = f"tilt:alpha_deg={math.degrees(alpha)},beta_deg={math.degrees(beta)},duration=1"
    assert h.command(Cmd.RIG_MOTION, *motion_args(spec)) == (True, Error.OK)
    h.run(500, heartbeat_every=50)                   # 1 s: the turn (the quintic's rest, a cycle's lag is nothing)
    try:
        assert h.state == State.STABILIZING
        g_true, g_cmd = plant.mj_data.xmat[plate].reshape(3, 3).T @ h.loop.g_level, np.zeros(3)
        sole_gravity(alpha, beta, h.loop.g_level, g_cmd)
        assert np.allclose(g_true, g_cmd, atol=0.02), (g_true, g_cmd)
        assert np.allclose(h.loop.plat, (alpha, beta), atol=3e-3), h.loop.plat
    finally:
        h.run(600, heartbeat_every=50)               # back level, the motion over, still standing
        assert h.loop.rig.player.motion is None and h.state == State.STABILIZING
