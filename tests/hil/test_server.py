"""``bipd hil``: the MuJoCo plant behind the ``udp`` backend, ground truth, pacing."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml
import zmq

from controller.tools.ports import free_port
from drivers.backends.udp import UdpLink, shutdown_server
from drivers.cia402 import State
from drivers.config import UdpConfig, parse_bus_config
from drivers.sim.drive import CMD_POS, FE_ACTUAL, LOOP_POSITION
from drivers.hal import LinkError, open_bus
from drivers.sim.hil.server import ServedPlant, initial_posture, main
from drivers.sim.plant import InertiaPlant
from drivers.sim.nodes import SimulatedNodes

from tests.hil.conftest import LEG_YAML, ROOT

SENSORS = {"joint_position", "platform", "imu_gravity", "imu_orientation", "foot_forces", "cop", "foot_tilt",
           "foot_lift", "hip_height", "com_world", "support_margin", "fallen", "sole"}


def _wait_for_server(udp: UdpConfig, proc: subprocess.Popen, timeout_s: float = 30.0) -> None:
    link = UdpLink(UdpConfig(udp.host, udp.port, 0.2))
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            assert proc.poll() is None, proc.stderr.read().decode()
            try:
                link.control({"op": "reset"})
                return
            except LinkError:
                assert time.monotonic() < deadline, "the HIL server did not come up"
                time.sleep(0.1)
    finally:
        link.sock.close()


@pytest.fixture
def daemon_yaml(tmp_path):
    document = yaml.safe_load((ROOT / "deploy" / "bipd.yaml").read_text())
    document["robot"] = str(LEG_YAML)
    document.pop("stabilizer")
    path = tmp_path / "bipd.yaml"
    path.write_text(yaml.safe_dump(document))
    return path, document


@pytest.mark.parametrize("bolt_foot", [False, True])
def test_udp_round_trip_with_the_mujoco_plant(daemon_yaml, robot, bolt_foot):
    """A real ``bipd hil`` process answers the daemon's bus (backend udp): the drives boot, enable and
    hold the leg in CSP; the encoders the MN reads are the MuJoCo joints through J_p (eq. 30-32), and
    the truth frames carry every sensor. The control channel takes the plant's ``push`` (the scenario
    runner's request); with ``--bolt-foot`` the foot is welded to the plate and a push that tips the
    free foot leaves it flat."""
    path, document = daemon_yaml
    udp_port, truth = free_port(socket.SOCK_DGRAM), f"tcp://127.0.0.1:{free_port()}"
    section = dict(document["bus"], backend="udp", udp=dict(document["bus"]["udp"], port=udp_port))
    proc = subprocess.Popen([sys.executable, "-m", "drivers.sim.hil.server", "--config", str(path), "--udp-port",
                             str(udp_port), "--truth", truth, "--truth-every", "5", "--idle-timeout", "30"]
                            + (["--bolt-foot"] if bolt_foot else []),
                            cwd=ROOT, stderr=subprocess.PIPE)
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    try:
        sub.connect(truth)
        sub.setsockopt(zmq.SUBSCRIBE, b"truth")
        _wait_for_server(parse_bus_config(section).udp, proc)
        bus = open_bus(section, lockstep=True)      # waits for every answer: no wall-clock loss on a busy host
        bus.boot()
        q0 = initial_posture(robot, document["control"]["soft_limit_margin_rad"])
        np.testing.assert_allclose(bus.position[:4], robot.transmission.to_motor(q0), atol=0.01)  # settling
        deadline = time.monotonic() + 10.0
        while not sub.poll(1):                         # the subscription is live (ZMQ slow joiner): lock-step
            assert time.monotonic() < deadline, "no truth frame"   # runs 100 cycles in well under 100 ms
            bus.read()
            bus.write()
            bus.exchange()
        for axis in bus.axes.values():
            axis.enable()
        for _ in range(100):
            bus.read()
            bus.write()
            bus.exchange()
        bus.read()
        assert all(bus.axis(name).state == State.OPERATION_ENABLED for name in bus.axis_names)
        push = {"op": "push", "body": "hip", "force": [0.0, 0.0, 60.0], "duration": 0.05}
        assert bus.link.control(push) == {"ok": True}
        assert "unknown body" in bus.link.control(dict(push, body="knee"))["error"]
        for _ in range(150):
            bus.read()
            bus.write()
            bus.exchange()
        frames = []
        while sub.poll(2000 if not frames else 0):
            frames.append(sub.recv_multipart())
        bus.close()
    finally:
        sub.close()
        shutdown_server(parse_bus_config(section).udp)
        assert proc.wait(timeout=10) == 0
    assert ("foot bolted" in proc.stderr.read().decode()) == bolt_foot
    topic, data = frames[-1]
    truth_frame = json.loads(data)
    assert topic == b"truth" and set(truth_frame) == SENSORS | {"t", "following_error"}
    following = np.array(truth_frame["following_error"])      # rad of motor turn, one per bus axis
    assert following.shape == (6,) and np.all(np.isfinite(following)) and np.all(following >= 0.0)
    tilts = [json.loads(d)["foot_tilt"] for _, d in frames]
    assert truth_frame["fallen"] == 0.0
    if bolt_foot:                                      # the weld's compliance only (deterministic ~1.8e-4 rad)
        assert max(tilts) < 5e-4
    else:                                              # the push rocks the free foot (~1.6e-3 rad)
        assert max(tilts) > 1e-3
    np.testing.assert_allclose(robot.transmission.to_motor(truth_frame["joint_position"]), bus.position[:4],
                               atol=1e-3)
    np.testing.assert_allclose(truth_frame["platform"], bus.position[4:] / 50.0, atol=1e-4)
    assert np.all(np.abs(truth_frame["platform"]) < 0.01) and truth_frame["t"] > 0.1


def test_bad_configuration_exits_2(tmp_path, capsys):
    bad = tmp_path / "bipd.yaml"
    bad.write_text("robot: nowhere.yaml\nbus: {backend: udp}\n")
    assert main(["--config", str(bad)]) == 2
    assert "bus.nodes must be a non-empty list" in capsys.readouterr().err
    assert main(["--config", str(tmp_path / "missing.yaml")]) == 2
    assert f"{tmp_path / 'missing.yaml'}: <file>: cannot read the file" in capsys.readouterr().err


def test_realtime_pacing_never_runs_ahead_and_forgives_a_lag():
    """At each period start (5 steps) the plant clock <= wall clock + one control period, never in
    the middle of a period's burst; after a 1 s pause it does not catch up."""
    wall = [0.0]
    published: list[bytes] = []
    served = ServedPlant(InertiaPlant([1e-4], [0.0]), publish=published.append, truth_every=5, realtime=True,
                         lead_s=0.002, period_cycles=5, clock=lambda: wall[0],
                         sleep=lambda s: wall.__setitem__(0, wall[0] + s))
    torque = np.zeros(1)
    for _ in range(10):
        served.step(4e-4, torque)
    assert wall[0] == 0.0                              # two bursts of 2 ms: the second starts 2 ms ahead
    served.step(4e-4, torque)
    assert wall[0] == pytest.approx(0.002)             # the third starts at most 2 ms ahead
    for _ in range(4):
        served.step(4e-4, torque)
    assert wall[0] == pytest.approx(0.002)             # no sleep inside a burst
    wall[0] += 1.0                                     # the daemon pauses
    for _ in range(5):
        served.step(4e-4, torque)
    assert wall[0] == pytest.approx(1.002)             # rebased at the period start: no catching up
    served.idle()
    assert len(published) == 4 and json.loads(published[-1]) == {"t": pytest.approx(0.008)}


def test_truth_is_taken_at_its_step_and_sent_when_the_server_idles():
    """The JSON work waits for idle() (after the datagram's answer) but carries the sensors and
    time of the step it was taken at; a second frame due first pushes the pending one out."""
    published: list[bytes] = []
    plant = InertiaPlant([1e-4], [0.0])
    plant.sensors = {"speed": plant.motor_velocity}
    served = ServedPlant(plant, publish=published.append, truth_every=2)
    torque = np.ones(1)
    served.step(4e-4, torque)
    served.step(4e-4, torque)                          # due: taken, not yet sent
    taken = plant.motor_velocity.tolist()
    served.step(4e-4, torque)
    assert published == []
    served.idle()
    assert json.loads(published[0]) == {"t": pytest.approx(8e-4), "speed": taken}
    served.idle()
    assert len(published) == 1                         # nothing new to send
    for _ in range(4):                                 # two frames due without an idle in between
        served.step(4e-4, torque)
    assert [json.loads(p)["t"] for p in published] == pytest.approx([8e-4, 1.6e-3])
    served.idle()
    assert [json.loads(p)["t"] for p in published] == pytest.approx([8e-4, 1.6e-3, 2.4e-3])


def test_truth_carries_each_drives_peak_following_error_since_the_last_frame():
    """Served on the bus, every truth frame carries per bus axis the largest |CSP demand − actual|
    (object 0x60F4, motor rad) over the bus cycles since the previous frame, read independently
    here after each cycle."""
    bench_config = parse_bus_config(yaml.safe_load((ROOT / "tests" / "drivers" / "bench.yaml").read_text())["bus"])
    published: list[bytes] = []
    inner = InertiaPlant.from_config(bench_config)
    served = ServedPlant(inner, publish=published.append, truth_every=5)
    network = SimulatedNodes(bench_config, served)
    served.watch_drives(network.bank)
    bank, row = network.bank, bench_config.axis("knee").index
    bank.mode[row] = LOOP_POSITION
    seen = []
    for target in (0.05, 0.1, 0.1):                  # a ramp the inertia lags, then a hold
        bank.x[row, CMD_POS] = target
        for phase in range(5):
            bank.step(phase)
            seen.append(abs(bank.x[row, FE_ACTUAL]))
            served.idle()
    frames = [json.loads(p)["following_error"] for p in published]
    assert len(frames) == 3 and all(len(f) == len(bench_config.axes) for f in frames)
    assert [f[row] for f in frames] == [max(seen[0:5]), max(seen[5:10]), max(seen[10:15])]
    assert frames[0][row] > 0.01 and frames[2][row] < frames[1][row]
    assert all(v == 0.0 for f in frames for k, v in enumerate(f) if k != row)     # not in CSP


def test_throttle_sleeps_once_per_period_and_truth_op_names_the_last_frame_sent():
    """--throttle-s: one sleep of throttle_s at each period start (a slow host), nothing else changes;
    the ``truth`` op answers the plant time and the time of the last truth frame sent."""
    slept: list[float] = []
    published: list[bytes] = []
    served = ServedPlant(InertiaPlant([1e-4], [0.0]), publish=published.append, truth_every=5, period_cycles=5,
                         throttle_s=0.004, sleep=slept.append)
    assert served.control({"op": "truth"}) == {"t": 0.0, "truth_t": None}
    torque = np.ones(1)
    for _ in range(12):
        served.step(4e-4, torque)
    assert slept == [0.004, 0.004, 0.004]                 # steps 0, 5 and 10 start a period
    assert served.control({"op": "truth"})["truth_t"] == pytest.approx(2e-3)   # pushed out by the second
    served.idle()
    assert served.control({"op": "truth"}) == {"t": pytest.approx(4.8e-3), "truth_t": pytest.approx(4e-3)}
    assert [json.loads(p)["t"] for p in published] == pytest.approx([2e-3, 4e-3])
