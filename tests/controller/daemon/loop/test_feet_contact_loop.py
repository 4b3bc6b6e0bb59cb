"""BIP 2000's feet load cells in the loop (stabilizer.contact through controller.daemon.loop): the whole robot on
the in-process MuJoCo biped plant standing on the floor (deploy/bip2000.yaml, control.support: ground),
lock-step. Lifting the right foot (the posture moves of controller.tools.scenarios.whole_body: the CoG over the
left sole, then the right sole 4 cm up) is sensed as single support on the left foot within the dwell of
the cycle the right foot's true load (the plant's) falls below release_load, once, with a CONTACT event
and the telemetry's ``contact``; the loads vanishing from the bus is a FEET_LOADS warning."""
from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from controller.daemon.codes import Event, Reason, State
from controller.daemon.config import load_daemon_config
from controller.daemon.loop.estimation import LANDING_LEAD_POWER
from controller.daemon.shm import Cmd
from controller.daemon.telemetry import LOADS_MASK
from models.common.errors import ConfigError
from models.common.support import DOUBLE, LEFT
from models.tree.robot import TreeRobot
from stabilizer.contact import DWELL_S, LOADS_MISSING, RELEASE_LOAD

from tests.numpy_allocs import CountingHandler
from tests.controller.daemon.loop_harness import Harness
from tests.paths import DEPLOY

pytest.importorskip("mujoco", reason="the biped plant needs the sim extra: pip install 'bipd[sim]'")

pytestmark = pytest.mark.hil

CONFIG = DEPLOY / "bip2000.yaml"
MOVE_S = 2.0


@pytest.fixture(scope="module")
def lifted(tmp_path_factory):
    """The loop through both posture moves: per cycle, the right foot's true load and the sensed support."""
    from controller.tools.scenarios.whole_body import one_foot_postures

    doc = yaml.safe_load(CONFIG.read_text())
    doc["robot"] = str(CONFIG.parent / doc["robot"])
    doc["control"]["support"] = "ground"
    for node in doc["bus"]["nodes"]:                            # the kinematic estimate: no pelvis gyro
        for axis in node["axes"]:
            if axis.get("sensor") == "pelvis_gyro":
                del axis["sensor"]
    path = tmp_path_factory.mktemp("contact") / "bipd.yaml"
    path.write_text(yaml.safe_dump(doc))
    h = Harness(config=load_daemon_config(path, backend="sim", lockstep=True))
    try:
        plant = h.bus.network.plant
        assert h.command(Cmd.ENABLE)[0]
        h.run(300, until=lambda: h.state == State.HOLD)
        h.run(100)
        assert h.loop.contact == DOUBLE
        h.events()
        robot = TreeRobot.from_yaml(doc["robot"])
        truth, sensed, pelvis = [], [], []
        est = h.loop.est.pelvis
        for q in one_foot_postures(robot, h.loop.q.copy()):
            assert h.command(Cmd.MOVE_JOINTS, *q, MOVE_S)[0]
            for k in range(round((MOVE_S + 0.3) / h.loop.period)):
                h.run(1, heartbeat_every=1)
                truth.append(float(plant.sensors["foot_load"][1]))
                sensed.append(h.loop.contact)
                pelvis.append((est.position.copy(), est.R.copy(), est.stance[0],
                               plant.sensors["pelvis_position"].copy(), plant.sensors["imu_orientation"].copy()))
        yield h, np.array(truth), np.array(sensed), h.events(), pelvis
    finally:
        h.close()


def test_lifting_the_right_foot_is_sensed_as_left_support_within_the_dwell(lifted):
    h, truth, sensed, events, _ = lifted
    released = int(np.argmax(truth < RELEASE_LOAD))           # the first cycle the true load is below release
    assert truth[released] < RELEASE_LOAD and truth[-1] == 0.0   # and the foot ends in the air
    first_left = int(np.argmax(sensed == LEFT))
    latency = first_left - released
    dwell = round(DWELL_S / h.loop.period)
    # measured: 5 cycles (the dwell; the PRes carries the cells of the bus cycle before the cycle's read)
    assert 0 <= latency <= dwell + 1, (latency, dwell)
    assert set(sensed[:first_left]) == {DOUBLE} and set(sensed[first_left:]) == {LEFT}
    contacts = [e for e in events if e[1] == Event.CONTACT]
    assert [int(e[2]) for e in contacts] == [LEFT]            # once: no chatter
    assert contacts[0][3] < 0.05                              # the right foot's share of the load
    rec = h.last_record()
    assert rec["contact"] == LEFT and rec["feet_load"][1] < RELEASE_LOAD
    assert rec["feet_load"][0] == pytest.approx(105.0 * 9.81, rel=0.05)


def _rotation(wxyz: np.ndarray) -> np.ndarray:
    w, x, y, z = wxyz
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def test_the_pelvis_estimate_follows_the_plants_pelvis(lifted):
    """The pelvis state estimator (stabilizer.pelvis_state, kinematics of the stance leg from the left
    sole the loads show, no IMU in this configuration) against MuJoCo's pelvis through the CoG's shift
    over the left foot and the right foot's lift: its height, its travel since the first cycle and its
    tilt from the vertical. Measured: height 2.2 mm (the soles sink into the floor's contact),
    travel 0.6 mm, tilt 0.03 deg."""
    pelvis = lifted[4]
    est_p, est_R, stance, true_p, true_q = (np.array([c[i] for c in pelvis]) for i in range(5))
    assert set(stance) == {float(LEFT)}                      # double support, then the left foot alone
    height = np.abs(est_p[:, 2] - true_p[:, 2])
    travel = np.linalg.norm((est_p - est_p[0])[:, :2] - (true_p - true_p[0])[:, :2], axis=1)
    tilt = [np.degrees(np.arccos(np.clip(R[:, 2] @ _rotation(q)[:, 2], -1, 1))) for R, q in zip(est_R, true_q)]
    print(f"pelvis estimate vs MuJoCo: height {height.max() * 1e3:.2f} mm, travel {travel.max() * 1e3:.2f} mm, "
          f"tilt {max(tilt):.3f} deg (the pelvis moved {np.ptp(true_p, axis=0) * 1e3} mm)")
    assert height.max() < 5e-3 and travel.max() < 5e-3 and max(tilt) < 0.3


def test_loads_lost_from_the_bus_are_a_warning_and_no_support(lifted):
    h = lifted[0]
    h.events()
    h.bus.aux[list(h.bus.config.sensor_axes("right_loads"))] = np.nan   # as if the cells' PRes carried NaN
    h.loop._measure()
    warnings = [e for e in h.events() if e[1] == Event.WARNING and e[2] == Reason.FEET_LOADS]
    assert [int(e[3]) for e in warnings] == [LOADS_MISSING]
    assert h.loop.contact == -1 and np.isnan(h.loop.load_share)
    h.loop._telemetry(0.0, 0)
    assert int(h.last_record()["stab_flags"]) & LOADS_MASK


@pytest.mark.parametrize("split", ["measured", "planned", "confirmed"])
def test_the_measured_load_split_replaces_the_plan_in_double_support_while_the_loads_are_plausible(tmp_path, split):
    doc = yaml.safe_load(CONFIG.read_text())
    doc["robot"] = str(CONFIG.parent / doc["robot"])
    doc["control"].update(support="ground", load_split=split)
    path = tmp_path / "bipd.yaml"
    path.write_text(yaml.safe_dump(doc))
    h = Harness(config=load_daemon_config(path, backend="sim", lockstep=True))
    try:
        h.run(100)                                            # standing on both feet, drives off
        loop, planned = h.loop, 0.9
        measured = loop.feet_load[1] / loop.feet_load.sum()
        assert 0.3 < measured < 0.7
        assert loop.share_f == pytest.approx(measured, abs=0.01)    # the low-pass has settled
        expect = loop.share_f if split == "measured" else planned
        assert loop._split(planned, float(DOUBLE)) == expect
        m = loop.share_f
        p = LANDING_LEAD_POWER
        bounds = {"measured": (m, m), "planned": (0.0, 1.0), "confirmed": (m * (1.0 - planned ** p), m)}[split]
        # the ramp falls: the left foot is loaded, the right one keeps what it carries less the plan's lead
        assert (loop.est.share_lo, loop.est.share_hi) == pytest.approx(bounds)
        if split == "confirmed":      # the foot the plan loads: what its cells read, plus the plan's fading lead
            assert loop._split(0.95, float(DOUBLE)) == 0.95
            assert (loop.est.share_lo, loop.est.share_hi) == pytest.approx((m, m + 0.05 ** p * (1.0 - m)))
            assert loop._split(0.0, float(DOUBLE)) == 0.0 and loop._split(0.01, float(DOUBLE)) == 0.01
            assert loop.est.share_hi == pytest.approx(m + 0.99 ** p * (1.0 - m))   # at the touch-down the plan leads
        assert loop._split(planned, float(LEFT)) == planned         # single support: the file's
        h.bus.aux[list(h.bus.config.sensor_axes("left_loads"))] = np.nan
        loop._measure()
        assert loop._split(planned, float(DOUBLE)) == planned       # no plausible loads: the file's
    finally:
        h.close()


def test_an_unknown_load_split_is_refused_naming_the_key(tmp_path):
    doc = yaml.safe_load(CONFIG.read_text())
    doc["robot"] = str(CONFIG.parent / doc["robot"])
    doc["control"]["load_split"] = "sensed"
    path = tmp_path / "bipd.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match=r"bipd.yaml: control.load_split: expected one of "
                                          r"\('planned', 'measured', 'confirmed'\), got 'sensed'"):
        load_daemon_config(path)


def test_stabilizing_on_the_pelvis_imu_and_the_feet_loads_allocates_nothing(tmp_path):
    """BIP 2000 on the tilting plate, the in-process biped plant, the whole-robot stabilizer fed by both
    sensor sources: STABILIZING runs on them (the IMU's tilt confirmed, the support the loads' double)
    without allocating; the pelvis estimator, on the IMU and the left sole, puts the pelvis at MuJoCo's
    height above the plate and tilt (measured: 0.05 mm, 0.019 deg)."""
    platform = CONFIG.parent / "bip2000_platform.yaml"
    doc = yaml.safe_load(platform.read_text())
    doc["robot"] = str(platform.parent / doc["robot"])
    stab = yaml.safe_load((platform.parent / doc["stabilizer"]).read_text())
    stab["robot"] = doc["robot"]
    stab["tilt"]["source"], stab["support"]["source"] = "imu", "sensors"
    (tmp_path / "stab.yaml").write_text(yaml.safe_dump(stab))
    doc["stabilizer"] = str(tmp_path / "stab.yaml")
    doc["bus"]["plant"] = "biped"
    (tmp_path / "bipd.yaml").write_text(yaml.safe_dump(doc))
    h = Harness(config=load_daemon_config(tmp_path / "bipd.yaml", backend="sim", lockstep=True))
    try:
        assert h.command(Cmd.ENABLE)[0]
        h.run(300, until=lambda: h.state == State.HOLD)
        h.run(50)
        assert h.command(Cmd.STABILIZER, 1.0)[0] and h.state == State.STABILIZING
        h.run(50, heartbeat_every=1)
        with CountingHandler() as counter:
            h.run(20, heartbeat_every=1)
        assert h.state == State.STABILIZING and counter.count == 0
        assert h.loop.tilt_unconfirmed == 0.0 and h.loop.stabilize.support == DOUBLE
        h.run(1000, heartbeat_every=1)       # 2 s: the observer's low-pass past the settling's sway
        # the plate level, read by the IMU: measured 0.1° (1° at 0.4 s, the robot still swaying)
        assert abs(h.loop.tilt).max() < math.radians(0.3), h.loop.tilt
        est, truth = h.loop.est.pelvis, h.bus.network.plant.sensors
        height = est.position[2] - (truth["pelvis_position"][2] - truth["plate_position"][2])
        tilt = np.degrees(np.arccos(est.R[:, 2] @ _rotation(truth["imu_orientation"])[:, 2]))
        print(f"pelvis on the IMU vs MuJoCo: height {height * 1e3:.2f} mm, tilt {tilt:.3f} deg")
        assert est.stance[0] == LEFT and abs(height) < 3e-3 and tilt < 0.3
    finally:
        h.close()
