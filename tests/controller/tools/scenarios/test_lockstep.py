"""Stepped lock-step: verdicts that do not depend on the host's speed (real HIL process and daemon).

The same short thesis-like tilt (α 5°, β 10°, 1 s quintics, 0.25 s holds, stabilizer on) runs on
three benches at once: at natural speed, on a slowed host (the HIL sleeps 4 ms per 2 ms control
period: at most 0.5x real time on any machine) and with a slowed operator (it sleeps 0.2 s of wall
time per 0.1 s step: relative to it the daemon runs infinitely fast, the condition that made free
lock-step's wall-clock heartbeat miss the simulated-time watchdog). The operator owns the clock,
so the verdict, the states, the events and the recorded series must be identical: tolerance 0,
bit for bit. The natural bench then checks that a stepped client that goes silent during a motion
is soft-stopped by the watchdog at an exact cycle, with reason WATCHDOG in the events and status.
"""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from controller.tools.scenarios.runner import Options, Session
from controller.tools.scenarios.scenarios import Tilt

pytest.importorskip("mujoco", reason="the HIL bench needs the sim extra: pip install 'bipd[sim]'")

pytestmark = pytest.mark.hil

TILT = Tilt(math.radians(5.0), math.radians(10.0), 1.0, 0.25)   # the slowed benches' wall time is twice its own
BENCHES = {"natural": Options(), "slowed_host": Options(throttle_s=0.004),
           "slowed_operator": Options(operator_sleep=2.0)}
MOVE = [0.0, 0.3, -0.6, 0.3]          # rad, near the stance (0, 0.25, -0.5, 0.25): the foot stays down


def _silent_move(s: Session) -> dict:
    """HOLD, a 6 s move, then one ``step`` of 3 s and nothing else."""
    op = s.op
    op.command("stabilizer", enable=False)
    op.wait_state("HOLD")
    op.command("move_joints", q=MOVE, duration=6.0)
    start = op.call("status")
    seen = len(op.series.events)
    op.step(3.0)
    return {"start": start, "status": op.call("status"), "events": op.series.events[seen:],
            "config": op.call("get_config")}


def _bench(label: str, options: Options) -> dict:
    with Session(options) as s:
        result = s.run(TILT, label)
        tel, tru = s.op.series.arrays()
        events = [(e["cycle"], e["kind"], e.get("reason"), e.get("to_state")) for e in s.op.series.events
                  if e["cycle"] > 0]           # the boot's events may precede the subscription
        silent = _silent_move(s) if label == "natural" else None
    return {"result": result, "tel": tel, "tru": tru, "events": events, "silent": silent}


@pytest.fixture(scope="module")
def benches() -> dict[str, dict]:
    with ThreadPoolExecutor(len(BENCHES)) as pool:
        futures = {label: pool.submit(_bench, label, o) for label, o in BENCHES.items()}
        return {label: f.result() for label, f in futures.items()}


def test_the_verdict_and_figures_are_identical_at_any_speed(benches):
    ref = benches["natural"]["result"]
    assert not ref.fell and ref.aborted is None and ref.states == ["STABILIZING"], (ref.fall_reasons, ref.aborted)
    for label in ("slowed_host", "slowed_operator"):
        r = benches[label]["result"]
        assert r.speed_x_realtime is not None and r.speed_x_realtime <= 0.5      # it really ran slower
        assert (r.fell, r.fall_reasons, r.states, r.faults, r.aborted, r.sim_s) == \
            (ref.fell, ref.fall_reasons, ref.states, ref.faults, ref.aborted, ref.sim_s), label
        for key in ("min_cog_margin_m", "min_cop_margin_m", "max_tracking_error_deg", "max_tracking_error_joint",
                    "max_foot_tilt_deg", "max_foot_lift_m", "min_hip_height_m"):
            assert getattr(r, key) == getattr(ref, key), (label, key)            # tolerance 0: bit-identical


def test_the_events_and_series_are_identical_at_any_speed(benches):
    ref = benches["natural"]
    assert any(e[1] == "TRANSITION" and e[3] == "STABILIZING" for e in ref["events"])
    for label in ("slowed_host", "slowed_operator"):
        b = benches[label]
        assert b["events"] == ref["events"], label
        for side in ("tel", "tru"):
            assert ref[side]["t"].size > 100
            for key, col in ref[side].items():
                if key == "state":
                    assert list(b[side][key]) == list(col), (label, key)
                else:
                    np.testing.assert_array_equal(b[side][key], col, err_msg=f"{label} {side} {key}")


def test_a_silent_stepped_client_is_soft_stopped_with_reason_watchdog(benches):
    s = benches["natural"]["silent"]
    period, limit = s["config"]["period"], s["config"]["watchdog_s"]
    c0 = s["start"]["cycle"]
    assert s["start"]["state"] == "MOVING"
    t = lambda k: k * int(round(period * 1e9)) * 1e-9               # noqa: E731 (the lock-step clock)
    expected = next(k for k in range(c0, c0 + 1500) if t(k) - t(c0) > limit)
    warnings = [e for e in s["events"] if e["kind"] == "WARNING"]
    assert [(e["cycle"], e["reason"]) for e in warnings] == [(expected, "WATCHDOG")]
    stops = [e for e in s["events"] if e["kind"] == "TRANSITION" and e["from_state"] == "MOVING"]
    assert [(e["to_state"], e["reason"]) for e in stops] == [("HOLD", "WATCHDOG")]
    status = s["status"]
    assert status["state"] == "HOLD" and status["cycle"] == c0 + 1500
    last = status["last_transition"]
    assert (last["from_state"], last["to_state"], last["reason"]) == ("MOVING", "HOLD", "WATCHDOG")
