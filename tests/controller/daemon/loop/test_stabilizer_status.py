"""No silent stabilizer failure: in lock-step on the simulated bus, a non-OK stabilizer
status holds the last reference at rest, reaches the telemetry's stab_flags and the
events once per onset, and control.stabilizer_failure_cycles of them in a row leave
STABILIZING for HOLD with Reason.STABILIZER_FAILED."""
from __future__ import annotations

import numpy as np
import pytest
import yaml

from controller.daemon.codes import Event, Reason, State
from controller.daemon.config import load_daemon_config
from controller.daemon.io.messages import event_message
from controller.daemon.loop.references.stabilize import Stabilize, flag_mask
from controller.daemon.shm import Cmd
from controller.daemon.telemetry import STAB_FLAGS, stab_flag_names
from models.common.errors import ConfigError
from stabilizer.stabilizer import F_OUTSIDE, NFLAGS, NOT_RESET, REJECTED_INPUT, S_RESET

from tests.controller.daemon.loop_harness import CONFIG, Harness


@pytest.fixture
def h():
    harness = Harness()
    assert harness.command(Cmd.ENABLE)[0]
    harness.run(100, until=lambda: harness.state == State.HOLD)
    assert harness.command(Cmd.MOVE_JOINTS, 0.0, 0.25, -0.5, 0.25, 1.0)[0]
    harness.run(600, heartbeat_every=50, until=lambda: harness.state == State.HOLD)
    assert harness.command(Cmd.STABILIZER, 1.0, cycles=20)[0]
    assert harness.state == State.STABILIZING
    harness.events()
    yield harness
    harness.close()


def nan_platform(h: Harness, monkeypatch, pattern: list[bool]) -> None:
    """The platform's alpha encoder reads NaN (an impossible tilt) in the cycles where
    ``pattern`` is true, from the next cycle on."""
    axis = h.bus.axis_names.index("platform_alpha")
    read = h.bus.read
    left = list(reversed(pattern))

    def patched() -> None:
        read()
        if left and left.pop():
            h.bus.position[axis] = float("nan")
    monkeypatch.setattr(h.bus, "read", patched)


def test_mask_bit_order_is_flag_names_then_statuses():
    flags = np.zeros(NFLAGS)
    flags[F_OUTSIDE] = 1.0
    assert stab_flag_names(flag_mask(flags, REJECTED_INPUT, Stabilize.bits)) == ["cog_outside", "rejected_input"]
    assert stab_flag_names(flag_mask(np.zeros(NFLAGS), 0, Stabilize.bits)) == []
    assert STAB_FLAGS[:NFLAGS][F_OUTSIDE] == "cog_outside"


def test_failing_stabilizer_holds_its_reference_then_leaves_for_hold(h):
    n = h.cfg.control.stabilizer_failure_cycles
    h.loop.stab.state[S_RESET] = 0.0                    # every step now answers NOT_RESET
    q_ref = h.loop.q_ref.copy()
    h.run(n - 1)
    assert h.state == State.STABILIZING
    np.testing.assert_array_equal(h.loop.q_ref, q_ref)   # the last reference, held at rest
    assert not h.loop.qd_ref.any()
    rec = h.last_record()
    assert "not_reset" in rec["stab_flag_names"]
    events = h.events()
    stab = [e for e in events if e[1] == Event.STABILIZER]
    assert len(stab) == 1 and stab[0][2] == NOT_RESET    # the onset, not every cycle
    assert event_message(*stab[0])["status"] == "not_reset"
    h.run(1)
    assert h.state == State.HOLD
    events = h.events()
    assert (Event.WARNING, float(Reason.STABILIZER_FAILED), float(NOT_RESET)) in [e[1:] for e in events]
    transition = [e for e in events if e[1] == Event.TRANSITION][0]
    assert event_message(*transition)["reason"] == "STABILIZER_FAILED"
    assert h.last_record()["stab_flag_names"] == []       # no stabilizer, no flags


def test_short_input_rejections_are_ridden_through_and_reported(h, monkeypatch):
    n = h.cfg.control.stabilizer_failure_cycles
    burst = [True] * (n - 1) + [False] * 20               # one short of the limit, then good inputs
    nan_platform(h, monkeypatch, burst + burst)
    h.run(1)
    assert "rejected_input" in h.last_record()["stab_flag_names"]
    h.run(2 * len(burst))
    assert h.state == State.STABILIZING                  # each burst ends before the limit
    assert "rejected_input" not in h.last_record()["stab_flag_names"]
    stab = [event_message(*e) for e in h.events() if e[1] == Event.STABILIZER]
    assert [e["status"] for e in stab] == ["rejected_input"] * 2 and "rejected_input" in stab[0]["rose"]


def test_a_long_input_rejection_leaves_for_hold(h, monkeypatch):
    nan_platform(h, monkeypatch, [True] * 1000)
    h.run(h.cfg.control.stabilizer_failure_cycles)
    assert h.state == State.HOLD
    assert any(e[1] == Event.WARNING and e[2] == Reason.STABILIZER_FAILED and e[3] == REJECTED_INPUT
               for e in h.events())


@pytest.mark.parametrize("value", [0, -3, 2.5, True, "five"])
def test_failure_cycles_must_be_a_positive_integer(tmp_path, value):
    doc = yaml.safe_load(CONFIG.read_text())
    doc["robot"] = str(CONFIG.parent / doc["robot"])
    doc["stabilizer"] = str(CONFIG.parent / doc["stabilizer"])
    doc["control"]["stabilizer_failure_cycles"] = value
    path = tmp_path / "bipd.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match="control.stabilizer_failure_cycles"):
        load_daemon_config(path)


def test_the_status_path_is_compiled_before_the_first_cycle(monkeypatch):
    """_warmup compiles the kernels of the stabilizer's status path: running a failing
    stabilizer adds no Numba signature (no compilation inside a cycle)."""
    from numba.core.registry import CPUDispatcher

    from controller.daemon.loop import loop as loop_module
    from controller.daemon.loop import safety

    h = Harness()
    try:
        kernels = [k for k in vars(loop_module).values() if isinstance(k, CPUDispatcher)]
        kernels.append(safety.first_nonfinite)
        before = {k: len(k.signatures) for k in kernels}
        assert h.command(Cmd.ENABLE)[0]
        h.run(100, until=lambda: h.state == State.HOLD)
        assert h.command(Cmd.STABILIZER, 1.0, cycles=20)[0]
        nan_platform(h, monkeypatch, [True] * 1000)
        h.run(h.cfg.control.stabilizer_failure_cycles + 2)
        assert h.state == State.HOLD
        assert {k: len(k.signatures) for k in kernels} == before
    finally:
        h.close()
