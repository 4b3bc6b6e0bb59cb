"""The daemon's loop on the Stewart–Gough rig (deploy/bipd_rig.yaml, sim backend, lock-step): six
CSP axes on three POWERLINK nodes play the platform by the rig's inverse kinematics (Staicu 2008,
eq. 8-18); the loop measures the plate back (forward kinematics) as the hinge-equivalent tilt
(Gastebois 2017, eq. 46) and, with ``use_acceleration``, the support's horizontal acceleration
(§2.5.4); the stabilizer holds the leg through the thesis' tilt on the rig. BIP 2000 on the rig
(deploy/bip2000_rig.yaml, the inertia plant): the whole-robot stabilizer's apparent up follows the
plate's acceleration with ``use_acceleration``, and only then."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from controller.daemon.codes import Error, StabParam, State
from controller.daemon.config import load_daemon_config
from controller.daemon.rig.motions import sinusoid
from controller.daemon.shm import Cmd
from models import ConfigError
from models.common.support import DOUBLE
from models.rig.stewart import StewartModel, leg_lengths
from models.rig.tilt import hinge_to_euler
from models.tilt import tilted_gravity

from tests.controller.loop_harness import Harness

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
RIG_CONFIG = DEPLOY / "bipd_rig.yaml"
TREE_RIG_CONFIG = DEPLOY / "bip2000_rig.yaml"
GEAR = 2 * math.pi / 0.01
STANCE_TILT = (math.radians(10.0), math.radians(20.0))      # the thesis' tilt (§2.6.3)


def _config(tmp_path: Path, use_acceleration: bool = False, source: str = "platform", config: Path = RIG_CONFIG):
    """``config`` (bipd_rig.yaml) with absolute paths; ``use_acceleration`` and the tilt ``source`` in a
    copy of its stabilizer YAML."""
    doc = yaml.safe_load(config.read_text())
    doc["robot"] = str(DEPLOY / doc["robot"])
    doc["control"]["platform"]["rig"] = str(DEPLOY / doc["control"]["platform"]["rig"])
    stab = yaml.safe_load((DEPLOY / doc["stabilizer"]).read_text())
    stab["robot"] = doc["robot"]
    stab["tilt"]["use_acceleration"] = use_acceleration
    stab["tilt"]["source"] = source
    (tmp_path / "stab.yaml").write_text(yaml.safe_dump(stab))
    doc["stabilizer"] = str(tmp_path / "stab.yaml")
    (tmp_path / "bipd.yaml").write_text(yaml.safe_dump(doc))
    return load_daemon_config(tmp_path / "bipd.yaml", backend="sim", lockstep=True)


@pytest.fixture(scope="module")
def rig() -> StewartModel:
    return StewartModel.from_yaml(DEPLOY / "rigs" / "stewart_staicu2008.yaml")


def _enabled(cfg) -> Harness:
    h = Harness(config=cfg)
    ok, _ = h.command(Cmd.ENABLE, cycles=200)
    assert ok and h.state == State.HOLD
    return h


def test_the_rig_config_puts_its_six_axes_on_three_nodes():
    cfg = load_daemon_config(RIG_CONFIG, backend="sim", lockstep=True)
    rig = cfg.control.rig
    assert rig is not None and cfg.control.platform_axes == rig.axes == tuple(f"rig_{c}" for c in "ABCDEF")
    assert {cfg.bus.axis(a).node_id for a in rig.axes} == {3, 4, 5}


@pytest.mark.parametrize("edit, problem", [
    (lambda c: c["platform"].update(kind="hexapod"), "control.platform.kind: expected hinges or stewart"),
    (lambda c: c.update(platform_axes=["rig_A", "rig_B"]), "control.platform_axes: the Stewart-Gough rig's axes"),
    (lambda c: c["platform"].update(axes=["rig_A"]), "control.platform.axes: expected a list of 6 axis names"),
    (lambda c: c["platform"].update(screw_lead_m=0), "control.platform.screw_lead_m"),
])
def test_bad_rig_config_is_refused_naming_the_key(tmp_path, edit, problem):
    doc = yaml.safe_load(RIG_CONFIG.read_text())
    doc["robot"], doc["stabilizer"] = str(DEPLOY / doc["robot"]), str(DEPLOY / doc["stabilizer"])
    doc["control"]["platform"]["rig"] = str(DEPLOY / doc["control"]["platform"]["rig"])
    edit(doc["control"])
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match=problem):
        load_daemon_config(tmp_path / "bad.yaml")


def test_the_platform_command_tilts_the_rig(tmp_path, rig):
    """``platform`` α β T on the rig: after T the six drives' targets are the rig's actuator
    displacements at Ry(α) Rx(−β) times the screw gear, the loop measures (α, β) back, the leg plant
    stands at that tilt and the models' gravity is the tilted one (eq. 46)."""
    h = _enabled(_config(tmp_path))
    try:
        alpha, beta = 0.1, 0.2
        assert h.command(Cmd.PLATFORM, alpha, beta, 2.0) == (True, Error.OK)
        h.run(1250, heartbeat_every=50)
        loop = h.loop
        pose = np.array([0.0, 0.0, rig.desc.h, 0.0, 0.0, 0.0])
        hinge_to_euler(alpha, beta, pose[3:])
        lam = np.zeros(6)
        leg_lengths(rig.buf, pose, lam, np.zeros((6, 6)))
        assert np.allclose(h.bus.target_position[loop.plat_idx], GEAR * lam, atol=1e-9)
        assert np.allclose(loop.plat, (alpha, beta), atol=2e-4)
        assert np.allclose(h.bus.network.plant.sensors["platform"], loop.plat, atol=1e-3)
        g = np.zeros(3)
        tilted_gravity(loop.plat[0], loop.plat[1], loop.g_level, g)
        assert np.allclose(loop.data.gravity, g, atol=1e-12)
    finally:
        h.close()


def test_a_tilt_beyond_the_stroke_is_refused_and_nothing_moves(tmp_path):
    h = _enabled(_config(tmp_path))
    try:
        before = h.bus.target_position[h.loop.plat_idx].copy()
        assert h.command(Cmd.PLATFORM, 0.0, 1.0, 2.0) == (False, Error.OUT_OF_RANGE)
        h.run(100, heartbeat_every=50)
        assert np.array_equal(h.bus.target_position[h.loop.plat_idx], before)
    finally:
        h.close()


def test_the_stabilizer_holds_the_leg_through_the_thesis_tilt_on_the_rig(tmp_path):
    """Stabilizer on, the rig tilts to α 10°, β 20° in 7 s and back (thesis §2.6.3, 14 s of
    simulated time): STABILIZING throughout, the stabilizer's tilt input is the rig's measured
    tilt, the leg yields to it (its joints move) and every CoG margin stays positive."""
    h = _enabled(_config(tmp_path))
    try:
        assert h.command(Cmd.STABILIZER, 1.0) == (True, Error.OK)
        q0 = h.loop.q.copy()
        worst, moved = math.inf, 0.0
        for target in (STANCE_TILT, (0.0, 0.0)):
            assert h.command(Cmd.PLATFORM, target[0], target[1], 7.0) == (True, Error.OK)
            for _ in range(3600 // 50):
                h.run(50, heartbeat_every=25)
                assert h.state == State.STABILIZING
                assert np.allclose(h.loop.tilt_in[:2], h.loop.rig.player.tilt, atol=1e-12)
                worst = min(worst, float(h.loop.stab.margins.min()))
                moved = max(moved, float(np.abs(h.loop.q - q0).max()))
        assert np.allclose(h.loop.plat, (0.0, 0.0), atol=1e-3)
        assert worst > 0.0 and moved > 0.05
    finally:
        h.close()


def test_use_acceleration_takes_the_rigs_measured_acceleration(tmp_path):
    """With ``use_acceleration`` the loop's support acceleration is the plate's, measured by forward
    kinematics of the drives: a 1 Hz, 2 cm sinusoid along the rig's x (thesis y_g) reads
    −A ω² sin ωt there (within the drives' lag and the 10 ms filter), and nothing along z_g."""
    h = _enabled(_config(tmp_path, use_acceleration=True))
    try:
        loop = h.loop
        assert loop.tilt_use_acc
        w = 2 * math.pi
        loop.rig.player.start(sinusoid("x", 0.02, 1.0, cycles=4), loop.clock.now_s())
        t0 = loop.clock.now_s()
        peak, err = 0.0, 0.0
        for _ in range(1500):
            h.run(1, heartbeat_every=1)
            t = loop.clock.now_s() - t0
            if 1.2 < t < 2.8:                      # between the fades
                ref = -0.02 * w * w * math.sin(w * t)
                err = max(err, abs(loop.acc_in[0] - ref))
                peak = max(peak, abs(loop.acc_in[0]))
                assert abs(loop.acc_in[1]) < 0.02
        assert peak == pytest.approx(0.02 * w * w, rel=0.1)
        assert err < 0.25 * 0.02 * w * w
    finally:
        h.close()


def test_the_foot_imu_reads_the_rigs_tilt(tmp_path):
    """``tilt.source: imu`` on the rig: the tilt the models' gravity follows is the foot IMU's (the
    tilt observer's), and it is the plate's, measured independently by forward kinematics."""
    h = _enabled(_config(tmp_path, source="imu"))
    try:
        loop = h.loop
        assert loop.imu is not None
        assert h.command(Cmd.PLATFORM, 0.1, 0.2, 2.0) == (True, Error.OK)
        h.run(1500, heartbeat_every=50)
        assert np.allclose(loop.rig.player.tilt, (0.1, 0.2), atol=1e-3)
        assert np.allclose(loop.tilt, loop.rig.player.tilt, atol=5e-3)
        assert abs(np.linalg.norm(loop.tilt_in) - 9.81) < 0.1          # the IMU's specific force, not angles
    finally:
        h.close()


@pytest.mark.parametrize("motion", ["sinusoid:axis=y,amplitude=0.02,frequency=1", "step:axis=x,accel=1",
                                    "ship_deck:duration=20"])
def test_a_rig_cycle_allocates_no_array(tmp_path, motion):
    """Stabilizing while the rig plays a motion: the loop's cycles (and the sim plant's) allocate
    no array buffer."""
    from controller.daemon.rig.spec import motion_args

    from tests.numpy_allocs import CountingHandler
    h = _enabled(_config(tmp_path, use_acceleration=True))
    try:
        assert h.command(Cmd.STABILIZER, 1.0) == (True, Error.OK)
        assert h.command(Cmd.RIG_MOTION, *motion_args(motion)) == (True, Error.OK)
        h.run(10, heartbeat_every=1)
        with CountingHandler() as counter:
            h.run(200, heartbeat_every=1)
        assert h.state == State.STABILIZING and h.loop.rig.player.motion is not None
        assert counter.count == 0
    finally:
        h.close()


@pytest.mark.parametrize("use_acceleration", [True, False], ids=["use_acceleration", "without"])
def test_bip2000s_stabilizer_leans_into_the_rigs_acceleration_only_with_use_acceleration(tmp_path, use_acceleration):
    """BIP 2000 stabilizing on both feet while the rig plays a 1 Hz, 2 cm lateral sinusoid (the rig's y:
    the robot's left): with ``use_acceleration`` the whole-robot stabilizer's apparent up (in the stance
    sole's axes, level here) is (a_x, a_y, g0) / |.| for the plate's commanded acceleration a (within the
    drives' lag and the 10 ms filter; Gastebois 2017, §2.5.4) and the models' gravity, the feed-forward's,
    is −g0 times it; without, both stay level while the loop still measures the acceleration."""
    h = Harness(leg_plant=False, config=_config(tmp_path, use_acceleration, config=TREE_RIG_CONFIG))
    try:
        assert h.command(Cmd.ENABLE)[0]
        h.run(400, until=lambda: h.state == State.HOLD)
        assert h.command(Cmd.STABILIZER, 1.0, float(StabParam.SUPPORT), float(DOUBLE))[0]
        loop, up = h.loop, h.loop.stabilize.stab.up
        assert h.state == State.STABILIZING and loop.tilt_use_acc == use_acceleration
        motion, ref = sinusoid("y", 0.02, 1.0, cycles=4), sinusoid("y", 0.02, 1.0, cycles=4)
        peak_acc = 0.02 * (2 * math.pi) ** 2
        t0 = loop.clock.now_s()
        loop.rig.player.start(motion, t0)
        ref.start(t0)
        x, xd, xdd = np.zeros(6), np.zeros(6), np.zeros(6)
        lean, err, measured = 0.0, 0.0, 0.0
        for _ in range(1500):
            h.run(1, heartbeat_every=1)
            t = loop.clock.now_s()
            if 1.2 < t - t0 < 2.8:                 # between the fades
                assert h.state == State.STABILIZING
                ref.sample(t, x, xd, xdd)
                lean = max(lean, abs(math.asin(up[1])))
                measured = max(measured, abs(loop.acc_in[1]))
                np.testing.assert_allclose(loop.models.gravity, -9.81 * up, atol=1e-9)
                a = (xdd[0], xdd[1]) if use_acceleration else (0.0, 0.0)
                err = max(err, float(np.abs(up - np.array([*a, 9.81]) / math.hypot(*a, 9.81)).max()))
        assert measured == pytest.approx(peak_acc, rel=0.1)          # the rig's acceleration reaches the loop
        if use_acceleration:
            assert lean == pytest.approx(math.atan(peak_acc / 9.81), rel=0.1)
            assert err < 0.25 * peak_acc / 9.81
        else:
            assert lean < 1e-9 and err < 1e-9                       # level (the plate's tilt: round-off)
    finally:
        h.close()
