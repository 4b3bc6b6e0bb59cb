"""Feet that find the ground in the loop (controller.daemon.loop.feet, stabilizer.feet): BIP 2000 on the
in-process MuJoCo biped plant standing on a floor pitched 4° uphill, which neither the daemon nor its
config is told about (deploy/bip2000.yaml, control.support: ground), lock-step. Powered on, the soles'
pressure sits at their heels (the front cells unloaded; no gait plays: no EDGE event); the ankles' compliance
leans the legs over the soles until the pressure the cells measure is at the cells' centre, and the
stance sole then lying flat gives the floor's slope, against the plant's terrain."""
from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from controller.daemon.codes import Event, State
from controller.daemon.config import load_daemon_config
from controller.daemon.io.messages import event_message
from controller.daemon.shm import H, Cmd
from stabilizer.feet import views

from tests.controller.daemon import loop_harness
from tests.controller.daemon.loop_harness import Harness
from tests.paths import DEPLOY

pytest.importorskip("mujoco", reason="the biped plant needs the sim extra: pip install 'bipd[sim]'")

pytestmark = pytest.mark.hil

CONFIG = DEPLOY / "bip2000.yaml"
PITCH_DEG = 4.0
STAND_S = 10.0
COP_MM = 2.0          # measured: 0.71 mm after 10 s (0.03 mm after 15 s); 94 mm behind without the compliance
SLOPE_DEG = 0.5       # measured: 4.00017 deg for 4 deg, roll 5e-5 deg


@pytest.fixture(scope="module")
def standing(tmp_path_factory, monkeypatch_module):
    from drivers.hal import open_bus
    from drivers.sim.hil.plant_biped import BipedPlant
    from drivers.sim.hil.terrain import Terrain

    doc = yaml.safe_load(CONFIG.read_text())
    doc["robot"] = str(CONFIG.parent / doc["robot"])
    doc["control"]["support"] = "ground"
    doc["feet"] = {"compliance": {"enabled": True}, "touchdown": {"enabled": True}}
    path = tmp_path_factory.mktemp("feet") / "bipd.yaml"
    path.write_text(yaml.safe_dump(doc))
    terrain = Terrain(pitch=math.radians(PITCH_DEG))
    monkeypatch_module.setattr(loop_harness, "open_plant_bus", lambda cfg, robot: open_bus(
        cfg.bus_section, plant=BipedPlant.from_config(cfg.bus, robot.description, terrain=terrain)))
    h = Harness(config=load_daemon_config(path, backend="sim", lockstep=True))
    try:
        assert h.command(Cmd.ENABLE)[0]
        h.run(300, until=lambda: h.state == State.HOLD)
        h.run(round(STAND_S / h.loop.period), heartbeat_every=1)
        yield h, h.events()
    finally:
        h.close()


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_the_soles_pressure_ends_at_their_centre(standing):
    h, _ = standing
    assert h.state == State.HOLD
    feet = h.loop.feet
    st = views(feet.state)
    error_mm = 1e3 * np.abs(st.cop - feet.centre).max()
    assert error_mm < COP_MM, (st.cop, feet.centre)
    assert np.all(np.abs(st.offset[:, 0]) > math.radians(1.0))     # the sagittal ankles did the work


def test_the_slope_estimate_is_the_floors(standing):
    h, _ = standing
    pitch, roll = np.degrees(views(h.loop.feet.state).slope)
    assert abs(pitch - PITCH_DEG) < SLOPE_DEG and abs(roll) < SLOPE_DEG, (pitch, roll)


def test_powered_on_at_their_heels_without_a_gait_no_foot_reports_an_edge(standing):
    """Powered on, the soles' front cells carry 1.5 % of the load each, but no gait plans the soles flat:
    the edge watch waits for one (stabilizer.feet, edge stances)."""
    _, events = standing
    assert not [e for e in events if e[1] == Event.EDGE]


def test_a_played_file_gives_the_plans_targets_and_the_cycle_allocates_nothing(standing):
    """A file with a support column played where the robot stands (both feet, the plan's share ramping to
    the left): each foot's target is the plan's centre of pressure (models.tree.dynamics.sole_cops, both
    soles' targets finite in double support, the right one gone once the plan unloads it) and the
    cycle, the plan's twin of the models and the touch-down's included, allocates nothing."""
    from models.common.support import DOUBLE, LEFT
    from tests.numpy_allocs import CountingHandler

    h, _ = standing
    loop = h.loop
    n = 400
    h.block.traj[:n] = loop.q_ref
    h.block.support[:n] = DOUBLE
    h.block.support[n // 2:n] = LEFT
    h.block.header[H.TRAJ_LEN] = n
    assert h.command(Cmd.RUN_BUFFER)[0]
    h.run(2000, heartbeat_every=1, until=lambda: loop.gen is loop.playback)
    h.run(20, heartbeat_every=1)
    target = views(loop.feet.state).target
    assert loop.est.phase == DOUBLE and np.isfinite(target).all()
    assert not np.allclose(target, loop.feet.centre)            # the plan's, not the cells' centre
    with CountingHandler() as counter:
        h.run(20, heartbeat_every=1)
    assert counter.count == 0
    h.run(n // 2, heartbeat_every=1, until=lambda: loop.est.phase == LEFT)
    h.run(2, heartbeat_every=1)
    assert np.isfinite(target[0]).all() and np.isnan(target[1]).all()
