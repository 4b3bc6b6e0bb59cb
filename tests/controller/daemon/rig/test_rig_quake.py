"""A recorded earthquake on the rig through the daemon: ``rig_motion motion=FILE.csv`` reads a CSV
of io.trajectory_dir on the I/O side (rows, drift-free processing, the rig's stroke), hands its
spline nodes to the loop through shared memory (``rig``, ``RIG_BUFFER``), and the loop plays them;
the rig actuators' following errors (setpoint − position, mm of stroke) in the telemetry."""
from __future__ import annotations

import math
import re
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from controller.daemon.codes import Error, State
from controller.daemon.config import load_daemon_config
from controller.tools.client import Client, CommandError
from controller.daemon.io.protocol import Context
from controller.daemon.io.server import IoServer
from controller.daemon.rig.earthquake import kanai_tajimi, load_earthquake, write_csv
from controller.daemon.shm import Cmd, H, read_record
from controller.daemon.telemetry import RecordLayout
from models.rig.stewart import StewartModel

from tests.controller.conftest import LOCAL
from tests.controller.daemon.loop_harness import Harness
from tests.paths import DEPLOY

RIG_CONFIG = DEPLOY / "bipd_rig.yaml"
GEAR = 2 * math.pi / 0.01                   # the rig's screws: 10 mm lead
QUAKE = DEPLOY / "motions" / "quake_kanai_tajimi.csv"


def _short_quake(path: Path) -> Path:
    t, a = kanai_tajimi(duration=4.0, rise=0.5, strong=1.5, decay=2.0, pga=(0.5, 0.8, 0.3), seed=3)
    write_csv(path, t, a, "synthetic, for the tests")
    return path


@pytest.fixture
def live(tmp_path):
    """The I/O server and the real loop on the rig (sim backend), the loop cycling in a thread."""
    h = Harness(config=load_daemon_config(RIG_CONFIG, backend="sim", lockstep=True))
    cfg, robot = h.cfg, h.loop.robot
    m = robot.model
    ctx = Context(joint_names=tuple(m.joint_names), qmin=m.qmin, qmax=m.qmax, vmax=m.vmax,
                  axis_names=tuple(m.joint_names), transmission_labels=robot.description.transmission.labels,
                  period=cfg.loop.period, platform_limit=cfg.control.platform_limit,
                  bus_axes=tuple(a.name for a in cfg.bus.axes), rig=StewartModel.from_yaml(cfg.control.rig.rig_path))
    (tmp_path / "motions").mkdir()
    server = IoServer(h.block, ctx, LOCAL, reply_timeout=5.0, trajectory_dir=tmp_path / "motions")
    stop, moved = threading.Event(), []

    def cycle() -> None:
        while not stop.is_set():
            h.block.header[H.HEARTBEATS] += 1
            h.loop.run_cycle()
            moved.append(h.loop.rig.player.motion is not None)
            time.sleep(0.0002)

    threads = [threading.Thread(target=cycle), threading.Thread(target=server.serve, args=(stop,))]
    for t in threads:
        t.start()
    client = Client(server.command_endpoint, timeout_s=30.0, retries=1)
    yield h, client, moved
    client.close()
    stop.set()
    for t in threads:
        t.join(10)
    server.close()
    h.close()


def _wait_hold(h: Harness) -> None:
    end = time.monotonic() + 60.0
    while h.state != State.HOLD and time.monotonic() < end:
        time.sleep(0.01)
    assert h.state == State.HOLD


@pytest.mark.parametrize("text, words", [
    ("t,ax,ay,az\n0,0,0,0\n0.01,0,0.1,0\n0.02,0,x,0\n", r"bad\.csv: line 4: column 'ay' is not a number"),
    ("# a comment\nt,ax,ay,az\n0,0,0,0\n0.01,0,0,0\n0.01,0,0,0\n", r"bad\.csv: line 5: time 0\.01 s does not increase"),
    ("t,ax,ay,az\n0,0,0,0\n0.01,0,0\n", r"bad\.csv: line 3: expected 4 columns"),
    ("t,ax,ay,az\n" + "\n".join(f"{k * 0.01:.2f},0,{30 * math.sin(k * 0.01):.4f},0" for k in range(1000)) + "\n",
     r"the rig cannot make this motion: leg [A-F] would need a displacement of .* at t = \d+\.\d+ s"),
])
def test_a_bad_earthquake_file_is_refused_naming_where_and_nothing_moves(live, tmp_path, text, words):
    h, c, moved = live
    (tmp_path / "motions" / "bad.csv").write_text(text)
    _short_quake(tmp_path / "outside.csv")                # a good file, outside io.trajectory_dir
    assert c.call("enable")["accepted"]
    _wait_hold(h)
    with pytest.raises(CommandError) as e:
        c.call("rig_motion", motion="bad.csv")
    assert e.value.code == Error.BAD_FILE.name.lower(), e.value.message
    assert re.search(words, e.value.message), e.value.message
    with pytest.raises(CommandError) as e:
        c.call("rig_motion", motion="earthquake:file=../outside.csv,fade=0.5")
    assert e.value.code == "bad_file" and f"is not a file in {(tmp_path / 'motions').resolve()}" in e.value.message
    assert not any(moved) and int(h.block.header[H.RIG_LEN]) == 0
    player = h.loop.rig.player
    assert np.allclose(player.pose, player.home, atol=1e-4)


def test_a_good_earthquake_file_reaches_the_loop_through_shared_memory(live, tmp_path):
    h, c, moved = live
    path = _short_quake(tmp_path / "motions" / "quake.csv")
    assert c.call("enable")["accepted"]
    _wait_hold(h)
    assert c.call("rig_motion", motion="quake.csv")["accepted"]
    motion = load_earthquake(path)
    n = int(h.block.header[H.RIG_LEN])
    assert n == len(motion.x) and np.array_equal(h.block.rig[0, :n], motion.x)
    assert np.array_equal(h.block.rig[2, :n], motion.a)
    assert h.loop.rig.player.motion is not None and h.block.header[H.RIG_BUSY] == 1
    with pytest.raises(CommandError) as e:                 # the buffer is the playing motion's
        c.call("rig_motion", motion="quake.csv")
    assert e.value.code == "not_allowed" and "still playing a recorded motion" in e.value.message


def test_a_short_earthquake_played_in_lockstep_moves_the_plate_as_processed(tmp_path):
    """The plate measured back by the loop (forward kinematics of the sim drives) follows the
    processed, drift-free displacement within 0.5 mm (measured 0.19 mm over a 35 mm peak), and the rig ends at home."""
    from tests.numpy_allocs import CountingHandler

    motion = load_earthquake(_short_quake(tmp_path / "quake.csv"))
    h = Harness(config=load_daemon_config(RIG_CONFIG, backend="sim", lockstep=True))
    try:
        assert h.command(Cmd.ENABLE, cycles=200)[0] and h.state == State.HOLD
        n = len(motion.x)
        h.block.rig[0, :n], h.block.rig[1, :n], h.block.rig[2, :n] = motion.x, motion.v, motion.a
        h.block.header[H.RIG_LEN] = n
        assert h.command(Cmd.RIG_BUFFER, motion.dt) == (True, Error.OK)
        player, period = h.loop.rig.player, h.cfg.loop.period
        t0, layout = player.motion.t0, RecordLayout(h.loop.n)
        rec, x, xd, xdd = np.zeros(layout.size), np.zeros(6), np.zeros(6), np.zeros(6)
        worst, peak = 0.0, 0.0
        with CountingHandler() as counter:
            h.run(100, heartbeat_every=1)
        assert counter.count == 0                        # playing from the buffer allocates nothing
        for _ in range(int(motion.duration / period) + 100):
            h.run(1, heartbeat_every=1)
            assert read_record(h.block, int(h.block.header[H.RING_COUNT]) - 1, rec)
            motion.at(min(max(rec[layout.slices["t"]][0] - t0, 0.0), motion.duration), x, xd, xdd)
            worst = max(worst, float(np.abs(player.pose[:3] - player.home[:3] - x[:3]).max()))
            peak = max(peak, float(np.abs(x[:3]).max()))
        assert worst <= 5e-4 and peak > 0.02
        assert player.motion is None and h.block.header[H.RIG_BUSY] == 0
        assert np.allclose(player.pose, player.home, atol=1e-4)
    finally:
        h.close()


def test_the_following_error_in_telemetry_is_setpoint_minus_position_from_the_bus():
    """rig_ferr (mm of stroke) = the setpoint each drive follows (the last written) minus the
    position read from the bus, through the screws' gear; NaN while the drives are not powered."""
    from controller.daemon.rig.spec import motion_args

    h = Harness(config=load_daemon_config(RIG_CONFIG, backend="sim", lockstep=True))
    layout, idx = RecordLayout(h.loop.n), h.loop.plat_idx
    rec, ferr = np.zeros(layout.size), layout.slices["rig_ferr"]
    try:
        h.run(5)
        assert read_record(h.block, int(h.block.header[H.RING_COUNT]) - 1, rec)
        assert np.all(np.isnan(rec[ferr]))
        assert h.command(Cmd.ENABLE, cycles=200)[0] and h.state == State.HOLD
        assert h.command(Cmd.RIG_MOTION, *motion_args("sinusoid:axis=y,amplitude=0.05,frequency=1,cycles=2")) \
            == (True, Error.OK)
        largest = 0.0
        for _ in range(600):
            target = h.bus.target_position.copy()
            h.run(1, heartbeat_every=1)
            assert read_record(h.block, int(h.block.header[H.RING_COUNT]) - 1, rec)
            expected = 1e3 * (target[idx] - h.bus.position[idx]) / GEAR
            np.testing.assert_allclose(rec[ferr], expected, rtol=0, atol=1e-9)
            largest = max(largest, float(np.abs(expected).max()))
        assert largest > 0.05                       # the drives lag a moving plate: not a zero field
    finally:
        h.close()


def test_the_scenario_reports_each_actuators_largest_following_error():
    """max_rig_following_error_mm: the largest |rig_ferr| per leg over the frames, unpowered (NaN)
    frames left out; None without the rig."""
    from controller.tools.scenarios.metrics import rig_following_errors

    ferr = np.full((4, 6), np.nan)
    ferr[1:] = [[0.1, -0.3, 0, 0, 0, 0.2], [-0.2, 0.1, 0, 0, 0, 0.1], [0.05, 0.0, 0, 0, 0.4, -0.5]]
    assert rig_following_errors(ferr) == {"A": 0.2, "B": 0.3, "C": 0.0, "D": 0.0, "E": 0.4, "F": 0.5}
    assert rig_following_errors(np.full((3, 6), np.nan)) is None


@pytest.mark.parametrize("nodes, dt", [(0, 0.002), (1, 0.002), (10, 0.0), (10, math.nan)])
def test_the_loop_refuses_an_empty_buffer_or_a_bad_spacing(nodes, dt):
    h = Harness(config=load_daemon_config(RIG_CONFIG, backend="sim", lockstep=True))
    try:
        assert h.command(Cmd.ENABLE, cycles=200)[0] and h.state == State.HOLD
        h.block.header[H.RIG_LEN] = nodes
        assert h.command(Cmd.RIG_BUFFER, dt) == (False, Error.BAD_ARGS)
        assert h.loop.rig.player.motion is None and h.block.header[H.RIG_BUSY] == 0
    finally:
        h.close()
