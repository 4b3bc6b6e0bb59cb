"""``bipd run --config deploy/bip2000.yaml --demo walk``: the demo's operator plays the thesis gait
on a real daemon (real ZMQ, the sim backend's biped plant, a stepped loop whose clock the operator
owns, so nothing depends on the host's speed) and its figures are those of the telemetry this test
records on its own; the biped plant follows control.support and names its extra when mujoco is
missing; a demo the config's robot cannot run is refused before a daemon starts."""
from __future__ import annotations

import io
import math
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np
import pytest
import yaml
import zmq

from controller.cli import main
from controller.daemon.config import load_daemon_config
from controller.daemon.plants import PLANTS
from controller.tools.scenarios.walk import THESIS_SPEED_M_H, THESIS_STEPS, generate_gait
from controller.tools.scenarios.walk_metrics import KNEE_BOUND_DEG
from controller.tools.walk_demo import operator_walk
from models import ConfigError

from tests.paths import DEPLOY

CONFIG = DEPLOY / "bip2000.yaml"


def record(endpoint: str, frames: list, subscribed: threading.Event, stop: threading.Event) -> None:
    """Every telemetry frame published on ``endpoint`` until ``stop``."""
    import json

    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"telemetry")
    sub.connect(endpoint)
    subscribed.set()
    try:
        while not stop.is_set():
            if sub.poll(50):
                frames.append(json.loads(sub.recv_multipart()[1]))
    finally:
        sub.close(0)


@pytest.mark.hil
def test_the_walk_demo_reports_what_the_telemetry_shows(stepped_bip2000_daemon):
    _, client, tel_ep, folder = stepped_bip2000_daemon
    gait = generate_gait(folder, CONFIG, THESIS_STEPS, THESIS_SPEED_M_H, lambda _msg: None)
    gait_s = float(np.loadtxt(gait, delimiter=",", skiprows=2, usecols=0)[-1])
    frames: list = []
    subscribed, stop = threading.Event(), threading.Event()
    recorder = threading.Thread(target=record, args=(tel_ep, frames, subscribed, stop))
    recorder.start()
    subscribed.wait(5)
    out = io.StringIO()
    try:
        result = operator_walk(client.endpoint, tel_ep, gait.name, out, timeout_s=240)
        client.call("step", seconds=0.1)                    # the frames after the last one the operator read
    finally:
        stop.set()
        recorder.join()
    assert result["completed"] and result["states"][-2:] == ["MOVING", "HOLD"], out.getvalue()
    joints = client.call("get_config")["joints"]
    walk = [f for f in frames if f["state_name"] == "MOVING" and f["support_name"] is not None]
    assert len(walk) == result["walk_frames"] > 0
    err = np.degrees(np.abs(np.array([f["q"] for f in walk]) - np.array([f["q_ref"] for f in walk])).max(axis=0))
    assert [result["max_error_deg"][name] for name in joints] == pytest.approx(err.tolist(), abs=1e-12)
    knees = [joints.index("l_knee"), joints.index("r_knee")]
    assert result["knee_max_error_deg"] == pytest.approx(err[knees].max(), abs=1e-12)
    assert set(result["max_error_group_deg"]) == {"hip", "knee", "ankle", "trunk"}
    assert result["knee_max_error_deg"] < KNEE_BOUND_DEG     # the drives track the gait, hung
    period = client.call("get_config")["period"] * client.call("get_config")["decimation"]
    assert abs(result["walk_s"] - gait_s) <= 2 * period             # the whole file was played
    assert math.isfinite(result["positioning_s"]) and result["positioning_s"] > 0
    table = out.getvalue()
    assert "left" in table and "right" in table and "MOVING -> HOLD (TRAJECTORY_DONE)" in table


def config_file(tmp_path: Path, source: Path = CONFIG, **bus) -> Path:
    doc = yaml.safe_load(source.read_text())
    for key in ("robot", "stabilizer"):
        if doc.get(key):
            doc[key] = str((source.parent / doc[key]).resolve())
    doc["bus"].update(bus)
    path = tmp_path / source.name
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.hil
@pytest.mark.parametrize("support, hung", [("hung", True), ("ground", False)])
def test_the_biped_plant_hangs_or_stands_as_control_support_says(tmp_path, support, hung):
    doc = yaml.safe_load(config_file(tmp_path).read_text())
    doc["control"]["support"] = support
    (tmp_path / "bip2000.yaml").write_text(yaml.safe_dump(doc))
    cfg = load_daemon_config(tmp_path / "bip2000.yaml")
    robot = cfg.robot()
    plant = PLANTS[cfg.bus.plant](cfg, robot, np.zeros(robot.n))
    assert cfg.bus.plant == "biped" and plant.hung is hung and plant.axes == tuple(a.name for a in cfg.bus.axes)
    load = float(plant.sensors["foot_load"].sum())                 # the floor carries the robot, or nothing
    assert load == 0.0 if hung else load > 0.5 * 9.81 * robot.model.total_mass


def test_the_biped_plant_without_mujoco_names_the_extra(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "mujoco", None)               # `import mujoco` raises ImportError
    with pytest.raises(ConfigError) as e:
        load_daemon_config(CONFIG)
    assert e.value.key == "bus.plant"
    assert str(e.value) == (f"{CONFIG}: bus.plant: biped needs mujoco, which is not installed: "
                            "pip install 'bipd[sim]'")
    assert load_daemon_config(config_file(tmp_path, plant="inertia")).bus.plant == "inertia"
    assert main(["run", "--config", str(CONFIG)]) == 2
    err = capsys.readouterr().err
    assert "pip install 'bipd[sim]'" in err and "Traceback" not in err


def test_the_biped_plant_refuses_a_chain_robot(tmp_path):
    with pytest.raises(ConfigError) as e:
        load_daemon_config(config_file(tmp_path, DEPLOY / "bipd.yaml", plant="biped"))
    assert e.value.key == "bus.plant" and "set bus.plant: leg" in str(e.value)


@pytest.mark.parametrize("config, demo, fragment", [
    (DEPLOY / "bipd.yaml", "walk", "drives bip_leg: its demo is squat"),
    (CONFIG, "squat", "drives bip2000: its demo is walk"),
])
def test_a_demo_the_robot_cannot_run_is_refused(monkeypatch, capsys, config, demo, fragment):
    import controller.daemon.run

    monkeypatch.setattr(controller.daemon.run, "run_daemon", lambda *a, **k: pytest.fail("a daemon would start"))
    assert main(["run", "--config", str(config), "--demo", demo]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"bipd: error: --demo {demo} runs on ") and fragment in err, err
    assert err.count("\n") == 1


@pytest.mark.parametrize("flags, stepped", [(["--lockstep"], True), (["--stepped"], True), ([], None)])
def test_a_demo_in_lock_step_owns_the_clock(monkeypatch, flags, stepped):
    """With --lockstep the demo runs stepped: its operator grants loop time instead of feeding the
    watchdog on the wall's clock, so the squat's result does not depend on the host's speed."""
    import controller.daemon.run

    seen = {}
    monkeypatch.setattr(controller.daemon.run, "run_daemon", lambda *a, **k: seen.update(k) or 0)
    main(["run", "--config", str(DEPLOY / "bipd.yaml"), "--demo", "squat", *flags])
    assert seen["stepped"] is stepped


@pytest.mark.hil
@pytest.mark.parametrize("keep", [False, True])
def test_bipd_run_demo_walk_end_to_end(tmp_path, capsys, keep):
    """The front door, stepped: the gait generated into a run folder (kept in io.trajectory_dir when
    the config sets one, else temporary) that the daemon reads it from, played, summarised, exit 0."""
    from controller.tools.ports import free_port

    doc = yaml.safe_load(config_file(tmp_path).read_text())
    trajectories = tmp_path / "trajectories"
    trajectories.mkdir()
    doc["io"].update(command=f"tcp://127.0.0.1:{free_port()}", telemetry=f"tcp://127.0.0.1:{free_port()}",
                     trajectory_dir=str(trajectories) if keep else None)
    (tmp_path / "bip2000.yaml").write_text(yaml.safe_dump(doc))
    assert main(["run", "--config", str(tmp_path / "bip2000.yaml"), "--demo", "walk", "--stepped"]) == 0
    out = capsys.readouterr()
    assert "walk done: states HOLD -> MOVING -> HOLD" in out.out and "knee " in out.out, out.out
    folder = Path(out.err.split("bipd: generating the walk into ")[1].split(" ")[0])
    assert folder.parent == (trajectories if keep else Path(tempfile.gettempdir()))
    assert len(list(folder.glob("walk-*.csv"))) == keep and folder.exists() == keep
