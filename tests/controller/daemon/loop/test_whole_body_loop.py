"""The whole-robot stabilizer in the loop (controller.daemon.loop.references.stabilize_whole_body): BIP 2000
(deploy/bip2000_platform.yaml) in lock-step on the simulated bus's inertia plant. STABILIZING runs
stabilizer.whole_body.step every cycle without allocating; each status and flag reaches the telemetry's
stab_flags and the events with the reaction of the library's FLAG_REACTIONS ("hold": the reference
held at rest, control.stabilizer_failure_cycles of them leave for HOLD; "warn": stabilizing goes on)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from controller.daemon.codes import Event, Reason, StabParam, State
from controller.daemon.config import load_daemon_config
from controller.daemon.io.messages import event_message
from controller.daemon.loop.references.stabilize_whole_body import StabilizeWholeBody
from controller.daemon.shm import Cmd
from controller.daemon.telemetry import STAB_FLAGS, stab_flag_names
from models.common.errors import ConfigError
from models.common.support import DOUBLE, LEFT, RIGHT, SOLES
from stabilizer.whole_body import FLAG_NAMES, FLAG_REACTIONS, NOT_RESET, P_CLOSE_TOL, S_RESET, STATUS_NAMES

from tests.numpy_allocs import CountingHandler
from tests.controller.daemon.loop_harness import Harness, enabled_bip2000
from tests.paths import DEPLOY

CONFIG = DEPLOY / "bip2000_platform.yaml"


@pytest.fixture
def h():
    """Enabled, in HOLD, events read."""
    harness = enabled_bip2000(CONFIG)
    harness.events()
    yield harness
    harness.close()


def stabilize(h: Harness, support: int = DOUBLE) -> None:
    assert h.command(Cmd.STABILIZER, 1.0, float(StabParam.SUPPORT), float(support))[0]
    assert h.state == State.STABILIZING


def test_every_flag_and_status_has_a_telemetry_bit_and_the_bench_bits_keep_their_place():
    from stabilizer.stabilizer import FLAG_NAMES as BENCH_FLAGS

    assert set(FLAG_NAMES) <= set(STAB_FLAGS) and set(STATUS_NAMES[1:]) <= set(STAB_FLAGS)
    assert STAB_FLAGS[:len(BENCH_FLAGS)] == BENCH_FLAGS
    bits = StabilizeWholeBody.bits
    assert [STAB_FLAGS[b] for b in bits] == list(FLAG_NAMES + STATUS_NAMES[1:])


@pytest.mark.slow
def test_stabilizing_allocates_nothing(h):
    stabilize(h)
    h.run(5, heartbeat_every=1)
    with CountingHandler() as counter:
        h.run(20, heartbeat_every=1)
    assert h.state == State.STABILIZING and h.loop.gen is h.loop.stabilize
    assert counter.count == 0


@pytest.mark.parametrize("support, sole", [(LEFT, SOLES[LEFT]), (RIGHT, SOLES[RIGHT]), (DOUBLE, "left_sole")])
def test_the_commanded_support_roots_the_models_and_is_announced(h, support, sole):
    stabilize(h, RIGHT if support != RIGHT else LEFT)         # from the other stance
    assert h.command(Cmd.HOLD)[0]
    stabilize(h, support)
    assert h.loop.models.roots[h.loop.root] == sole           # double: the YAML's double_support_root
    assert h.loop.stabilize.support == support
    ev = [event_message(*e) for e in h.events() if e[1] == Event.SUPPORT]
    assert ev and ev[-1]["support"] == ("left", "right", "double")[support]


def test_a_warn_flag_is_an_event_and_stabilizing_goes_on(h):
    """The inertia plant holds the robot straight at q = 0, its knees at their limit: at_joint_limit
    (a "warn" flag) rises, an event says so, and the references go on moving."""
    assert FLAG_REACTIONS["at_joint_limit"] == "warn"
    h.loop.stabilize.params[P_CLOSE_TOL] = 1.0                 # no closure flag in this test
    stabilize(h)
    q0 = h.loop.q_ref.copy()
    h.run(2)
    assert "at_joint_limit" in h.last_record()["stab_flag_names"]
    h.run(200, heartbeat_every=10)
    assert h.state == State.STABILIZING
    rose = [event_message(*e) for e in h.events() if e[1] == Event.STABILIZER]
    assert rose and rose[0]["status"] == "ok" and "at_joint_limit" in rose[0]["rose"]
    assert np.abs(h.loop.q_ref - q0).max() > 1e-4


def test_a_hold_flag_holds_the_reference_then_leaves_for_hold(h):
    """constraint_violated ("hold" in FLAG_REACTIONS) with an OK status: the last reference at rest,
    one event at its onset, STABILIZER_FAILED after stabilizer_failure_cycles."""
    assert FLAG_REACTIONS["constraint_violated"] == "hold"
    n = h.cfg.control.stabilizer_failure_cycles
    stabilize(h)
    h.run(50, heartbeat_every=10)
    assert h.loop.qd_ref.any()                                 # moving before the flag
    q_ref = h.loop.q_ref.copy()
    h.loop.stabilize.params[P_CLOSE_TOL] = -1.0               # every double-support cycle violates the closure
    h.run(n - 1)
    assert h.state == State.STABILIZING
    np.testing.assert_array_equal(h.loop.q_ref, q_ref)
    assert not h.loop.qd_ref.any()
    assert "constraint_violated" in h.last_record()["stab_flag_names"]
    stab = [event_message(*e) for e in h.events() if e[1] == Event.STABILIZER]
    assert sum("constraint_violated" in e["rose"] for e in stab) == 1        # its onset only
    h.run(1)
    assert h.state == State.HOLD
    assert any(e[1] == Event.WARNING and e[2] == Reason.STABILIZER_FAILED for e in h.events())


def test_a_failing_status_is_named_and_held(h):
    stabilize(h)
    h.loop.stab.state[S_RESET] = 0.0                           # every step now answers NOT_RESET
    q_ref = h.loop.q_ref.copy()
    h.run(2)
    np.testing.assert_array_equal(h.loop.q_ref, q_ref)
    assert "not_reset" in h.last_record()["stab_flag_names"]
    stab = [event_message(*e) for e in h.events() if e[1] == Event.STABILIZER]
    assert stab[-1]["status"] == "not_reset" and stab[-1]["status"] == STATUS_NAMES[NOT_RESET]
    h.run(h.cfg.control.stabilizer_failure_cycles)
    assert h.state == State.HOLD


def test_no_support_status_shares_its_flags_bit():
    assert stab_flag_names(float(1 << int(StabilizeWholeBody.bits[len(FLAG_NAMES) + 4 - 1]))) == ["no_support"]


def _config(tmp_path, stab_set=None, control_set=None, unwired=()) -> Path:
    """The platform config with the stabilizer YAML's keys ``stab_set``, control keys ``control_set`` and
    the bus sensors ``unwired`` taken off their axes."""
    doc = yaml.safe_load(CONFIG.read_text())
    for node in doc["bus"]["nodes"]:
        for axis in node["axes"]:
            if axis.get("sensor") in unwired:
                del axis["sensor"]
    doc["robot"] = str(CONFIG.parent / doc["robot"])
    stab = yaml.safe_load((CONFIG.parent / doc["stabilizer"]).read_text())
    stab["robot"] = doc["robot"]
    for (section, key), value in (stab_set or {}).items():
        stab[section][key] = value
    (tmp_path / "stab.yaml").write_text(yaml.safe_dump(stab))
    doc["stabilizer"] = str(tmp_path / "stab.yaml")
    doc["control"].update(control_set or {})
    path = tmp_path / "bipd.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_the_platform_config_loads_with_the_whole_body_stabilizer(tmp_path):
    cfg = load_daemon_config(_config(tmp_path))
    assert type(cfg.stabilizer()).__name__ == "WholeBodyStabilizer"


def test_the_sensor_sources_load_when_the_bus_carries_their_sensors(tmp_path):
    cfg = load_daemon_config(_config(tmp_path, {("tilt", "source"): "imu", ("support", "source"): "sensors"}))
    assert cfg.bus.sensor_axes("pelvis_imu") and len(cfg.bus.sensor_axes("left_loads")) == 2


@pytest.mark.parametrize("stab_set, control_set, unwired, match", [
    ({("tilt", "source"): "imu"}, None, ("pelvis_imu",),
     r"stabilizer: .*tilt.source: imu needs the pelvis IMU, but no axis of .* declares sensor: pelvis_imu"),
    ({("tilt", "source"): "imu"}, None, ("left_loads",),
     r"stabilizer: .*tilt.source: imu needs the feet's load cells, but .* declares sensor: left_loads"),
    ({("tilt", "source"): "imu", ("tilt", "imu_frame"): "trunk"}, None, (),
     r"stabilizer: .*tilt.imu_frame: trunk is not the frame of the bus's pelvis_imu \(pelvis\)"),
    ({("tilt", "use_acceleration"): True}, None, (),
     r"stabilizer: .*tilt.use_acceleration: true needs the support.s acceleration, which only the Stewart-Gough rig"),
    ({("support", "source"): "sensors"}, None, ("right_loads",),
     r"stabilizer: .*support.source: sensors needs the feet's load cells, but .* declares sensor: right_loads"),
    (None, {"support": "hung"}, (), r"control.support: hung: the whole-robot stabilizer stands the robot on its soles"),
    ({("cog", "walls"): "x"}, None, (), r"cog.walls"),
])
def test_a_whole_body_config_the_loop_cannot_feed_is_refused(tmp_path, stab_set, control_set, unwired, match):
    with pytest.raises(ConfigError, match=match):
        load_daemon_config(_config(tmp_path, stab_set, control_set, unwired))


def test_a_whole_body_stabilizer_for_another_robot_is_refused(tmp_path):
    path = _config(tmp_path)
    stab = yaml.safe_load((tmp_path / "stab.yaml").read_text())
    other = tmp_path / "other.yaml"
    other.write_text(Path(stab["robot"]).read_text().replace("name:", "# a different robot\nname:", 1))
    stab["robot"] = str(other)
    (tmp_path / "stab.yaml").write_text(yaml.safe_dump(stab))
    with pytest.raises(ConfigError, match="is not the daemon's robot"):
        load_daemon_config(path)


def test_the_whole_body_kernels_are_compiled_before_the_first_cycle(h):
    """_warmup compiled them: stabilizing (OK and failing steps) adds no Numba signature."""
    from controller.daemon.loop.references import stabilize as generic
    from controller.daemon.loop.references import stabilize_whole_body as wbr
    from stabilizer import whole_body

    kernels = [whole_body.step, whole_body.reset, wbr.copy_margins, generic.flag_mask]
    before = [len(k.signatures) for k in kernels]
    stabilize(h)
    h.run(5)
    h.loop.stab.state[S_RESET] = 0.0
    h.run(5)
    assert [len(k.signatures) for k in kernels] == before and all(before)
