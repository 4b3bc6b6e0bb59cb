"""The daemon refuses a stabilizer YAML written for another robot or another period: the
stabilizer would work on a different leg, or integrate its admittance with the wrong step."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from controller.daemon.config import load_daemon_config
from models import ConfigError
from tests.paths import DEPLOY, ROBOTS



def write_pair(tmp_path: Path, edit_stabilizer=None, edit_daemon=None) -> Path:
    """Copies of deploy/bipd.yaml and its stabilizer YAML in tmp_path, edited."""
    daemon = yaml.safe_load((DEPLOY / "bipd.yaml").read_text(encoding="utf-8"))
    stab = yaml.safe_load((ROBOTS / "bip_leg_stabilizer.yaml").read_text(encoding="utf-8"))
    stab["robot"] = str(ROBOTS / "bip_leg.yaml")
    daemon["robot"] = str(ROBOTS / "bip_leg.yaml")
    daemon["stabilizer"] = "stab.yaml"
    for doc, edit in ((stab, edit_stabilizer), (daemon, edit_daemon)):
        if edit is not None:
            edit(doc)
    (tmp_path / "stab.yaml").write_text(yaml.safe_dump(stab), encoding="utf-8")
    (tmp_path / "bipd.yaml").write_text(yaml.safe_dump(daemon), encoding="utf-8")
    return tmp_path / "bipd.yaml"


def test_the_shipped_pair_and_a_copy_of_the_robot_are_accepted(tmp_path):
    assert load_daemon_config(DEPLOY / "bipd.yaml").stabilizer_path is not None
    (tmp_path / "leg_copy.yaml").write_bytes((ROBOTS / "bip_leg.yaml").read_bytes())
    load_daemon_config(write_pair(tmp_path, lambda s: s.update(robot=str(tmp_path / "leg_copy.yaml"))))


def test_a_stabilizer_for_another_robot_is_refused_naming_both_files(tmp_path):
    other = ROBOTS / "lammari_arm5.yaml"
    path = write_pair(tmp_path, lambda s: s.update(robot=str(other)))
    with pytest.raises(ConfigError) as e:
        load_daemon_config(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}: stabilizer: {tmp_path / 'stab.yaml'}: robot: ")
    assert str(other) in msg and str(ROBOTS / "bip_leg.yaml") in msg


def test_a_stabilizer_period_other_than_the_loop_is_refused_naming_both_values(tmp_path):
    path = write_pair(tmp_path, lambda s: s.update(period=0.004))
    with pytest.raises(ConfigError) as e:
        load_daemon_config(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}: stabilizer: {tmp_path / 'stab.yaml'}: period: 0.004 s")
    assert "loop.period_s 0.002 s" in msg


def imu_source(s: dict) -> None:
    s["tilt"] = {"source": "imu", "use_acceleration": False}


def without_imu(d: dict) -> None:
    for node in d["bus"]["nodes"]:
        for a in node["axes"]:
            a.pop("sensor", None)


def test_the_imu_tilt_source_needs_the_imu_on_the_bus(tmp_path):
    cfg = load_daemon_config(write_pair(tmp_path, imu_source))
    assert cfg.bus.axes[cfg.bus.imu_axis].name == "ankle_1"
    path = write_pair(tmp_path, imu_source, without_imu)
    with pytest.raises(ConfigError) as e:
        load_daemon_config(path)
    assert str(e.value) == (f"{path}: stabilizer: {tmp_path / 'stab.yaml'}: tilt.source: imu needs the foot IMU, "
                            f"but no axis of {path} bus.nodes declares sensor: imu")
    path = write_pair(tmp_path, lambda s: s["tilt"].update(use_acceleration=True), without_imu)
    with pytest.raises(ConfigError, match="tilt.use_acceleration: true needs the foot IMU"):
        load_daemon_config(path)


def without_sole(d: dict) -> None:
    for node in d["bus"]["nodes"]:
        for a in node["axes"]:
            if a.get("sensor") == "sole":
                a.pop("sensor")


def test_the_imu_tilt_source_needs_the_soles_load_cells_on_the_bus(tmp_path):
    """The IMU's tilt is believed only while the sole's cells show the foot flat (stabilizer.tilt_observer)."""
    cfg = load_daemon_config(write_pair(tmp_path, imu_source))
    assert cfg.bus.axes[cfg.bus.sensor_axis("sole")].name == "ankle_2"
    path = write_pair(tmp_path, imu_source, without_sole)
    with pytest.raises(ConfigError) as e:
        load_daemon_config(path)
    assert str(e.value) == (f"{path}: stabilizer: {tmp_path / 'stab.yaml'}: tilt.source: imu needs the sole's load "
                            f"cells (the IMU's tilt is believed only while the foot is flat), but no axis of {path} "
                            f"bus.nodes declares sensor: sole")
    load_daemon_config(write_pair(tmp_path, None, without_sole))    # the platform source does without them
