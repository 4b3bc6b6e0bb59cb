"""``bipd hil`` with a tree robot: the whole biped behind the ``udp`` backend, hung or on the floor."""
from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from drivers.config import parse_bus_config
from drivers.hal import open_bus
from drivers.sim.hil.mjcf_biped import GANTRY_HEIGHT
from drivers.sim.hil.plant_biped import TRUTH, BipedPlant
from drivers.sim.hil.server import main
from models.tree.config import load_tree

from controller.tools.ports import free_port

from tests.drivers.sim.hil.server_process import hil_server, truth_frames
from tests.paths import DEPLOY, ROBOTS

CONFIG = Path(__file__).with_name("bip2000_hil.yaml")


@pytest.mark.parametrize("hung", [True, False])
def test_bipd_hil_serves_the_whole_biped(hung):
    """A tree robot's config is served by the biped plant: the 15 drives boot, the encoders the MN
    reads are the truth's joints through the transmission (motors named after the joints), the truth
    frames carry the documented sensors, ``push`` takes a robot body. Hung, the feet are in the air at
    the gantry; on the floor the robot stands on its brakes on both feet."""
    document = yaml.safe_load(CONFIG.read_text())
    desc = load_tree(CONFIG.parent / document["robot"])
    with hil_server(CONFIG, document["bus"], ["--hung"] if hung else []) as (proc, sub, section):
        bus = open_bus(section, lockstep=True)      # waits for every answer: no wall-clock loss on a busy host
        bus.boot()
        frames = truth_frames(sub, bus, 250)
        for _ in range(20):                                # ZMQ slow joiner: lock-step, more cycles until one comes
            if frames:
                break
            frames = truth_frames(sub, bus, 50)
        push = {"op": "push", "body": "pelvis", "force": [0.0, 0.0, 0.0], "duration": 0.01}
        assert bus.link.control(push) == {"ok": True}
        assert "unknown body" in bus.link.control(dict(push, body="hip"))["error"]
        frames = truth_frames(sub, bus, 50)
        bus.read()
        position = bus.position.copy()
        bus.close()
    assert ("hung" in proc.stderr.read().decode()) == hung
    frame = json.loads(frames[-1][1])
    assert set(frame) == {"joint_position", "t", "following_error"} | {name for name, _ in TRUTH}
    assert len(frame["following_error"]) == 15 and min(frame["following_error"]) >= 0.0   # motor rad, per bus axis
    np.testing.assert_allclose(desc.transmission.to_motor(frame["joint_position"]), position, atol=1e-3)
    assert frame["fallen"] == 0.0
    if hung:
        assert frame["pelvis_height"] == GANTRY_HEIGHT and frame["contact"] == [0.0, 0.0]
    else:
        assert frame["contact"] == [1.0, 1.0]
        assert sum(frame["foot_load"]) == pytest.approx(105.0 * 9.81, rel=0.02)


def test_hung_needs_a_tree_robot_and_bolt_foot_the_leg(tmp_path, capsys):
    leg = tmp_path / "bipd.yaml"
    document = yaml.safe_load((DEPLOY / "bipd.yaml").read_text())
    document["robot"] = str(ROBOTS / "bip_leg.yaml")
    leg.write_text(yaml.safe_dump(document))
    assert main(["--config", str(leg), "--hung", "--truth", ""]) == 2
    assert "--hung needs a tree robot" in capsys.readouterr().err
    assert main(["--config", str(CONFIG), "--bolt-foot", "--truth", ""]) == 2
    assert "--bolt-foot is for the leg on its platform" in capsys.readouterr().err


def test_the_sim_backend_drives_the_biped_in_process():
    """The ``sim`` backend with the biped plant in-process (``BipedPlant.from_config``): the encoders
    the bus reads are the plant's joints through the transmission."""
    document = yaml.safe_load(CONFIG.read_text())
    section = dict(document["bus"], backend="sim")
    plant = BipedPlant.from_config(parse_bus_config(section), CONFIG.parent / document["robot"], hung=True)
    bus = open_bus(section, plant=plant)
    bus.boot()
    for _ in range(50):
        bus.read()
        bus.write()
        bus.exchange()
    bus.read()
    np.testing.assert_allclose(bus.position, plant.transmission.to_motor(plant.sensors["joint_position"]),
                               atol=1e-4)
    assert plant.time >= 50 * 2e-3                       # the bus stepped it: 50 control periods at least
    bus.close()


def test_bipd_hil_without_mujoco_names_the_extra(monkeypatch, capsys):
    from controller.cli import main as bipd

    monkeypatch.setitem(sys.modules, "mujoco", None)     # import mujoco now raises ImportError
    port = str(free_port(socket.SOCK_DGRAM))           # were it served: idle for 1 s, then exit 0
    assert bipd(["hil", "--config", str(CONFIG), "--udp-port", port, "--truth", "", "--idle-timeout", "1"]) == 2
    assert "needs mujoco, which is not installed: pip install 'bipd[sim]'" in capsys.readouterr().err
