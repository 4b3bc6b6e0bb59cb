"""``bipd scenario walk``: the real daemon on deploy/bip2000.yaml and the HIL's MuJoCo biped, the
gait of ``bipd gait``, operated over ZMQ in stepped lock-step; and its usage errors."""
from __future__ import annotations

import pytest

from controller.tools.scenarios.cli import main
from controller.tools.scenarios.runner import Options
from controller.tools.scenarios.walk import WALK_CONFIG, generate_gait, run_walk
from controller.tools.scenarios.walk_metrics import FOLLOWING_BOUND_DEG, KNEE_BOUND_DEG


@pytest.mark.parametrize("argv,problem", [
    (["walk", "--gait", "absent.csv"], "walk: --gait absent.csv is not a file"),
    (["walk", "--steps", "0"], "walk: --steps must be at least 1 and --speed > 0 m/h"),
    (["walk", "--speed", "-360"], "walk: --steps must be at least 1 and --speed > 0 m/h"),
    (["walk", "--bolt-foot"], "unrecognized arguments: --bolt-foot"),
])
def test_walk_usage_errors_exit_2_before_anything_runs(argv, problem, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2 and problem in capsys.readouterr().err


@pytest.fixture(scope="module")
def thesis_gait(tmp_path_factory):
    """The thesis' 2 steps at 360 m/h, generated once for the module's walks."""
    pytest.importorskip("mujoco", reason="the HIL bench needs the sim extra: pip install 'bipd[sim]'")
    return generate_gait(tmp_path_factory.mktemp("walk"), WALK_CONFIG, 2, 360.0, lambda _m: None)


@pytest.fixture(scope="module")
def hung_walk(thesis_gait):
    """The thesis' walking experiment (Gastebois 2017 §2.6.2): BIP 2000 hung from the gantry by the
    pelvis, on a fresh bench."""
    return run_walk(thesis_gait, Options(config=WALK_CONFIG), hung=True)


@pytest.mark.hil
def test_hung_thesis_walk_plays_to_its_end_within_the_knee_bound(hung_walk):
    """The gait plays to its end without a fault, the knee tracking error stays within the thesis'
    1.3°, the pelvis stays at the gantry."""
    r = hung_walk
    assert r.completed and not r.fell and r.aborted is None, (r.states, r.aborted, r.faults)
    assert r.states[-2:] == ["MOVING", "HOLD"] and r.faults == []
    assert r.knee_error_deg is not None and r.knee_error_deg <= KNEE_BOUND_DEG, r.joint_error_deg
    assert r.knee_pass
    assert abs(r.distance_m) < 0.01                        # hung: the pelvis does not travel
    assert r.sim_s > 8.0                                   # the 8 s gait and its approach were played


@pytest.mark.hil
def test_hung_thesis_walk_keeps_the_drive_following_error_bound(hung_walk):
    """Every drive's own following error (CSP demand − actual, motor side) stays within the thesis'
    0.3° of motor turn."""
    r = hung_walk
    assert r.following_error_max_deg is not None
    assert r.following_error_max_deg <= FOLLOWING_BOUND_DEG, r.following_error_deg


GROUND_FOLLOWING_DEG = 0.75
"""The ground walk's peak drive following error kept (measured 0.694°, stepped lock-step; 1.003° with the
double-support feed-forward that put both soles' centres of pressure at the ZMP, 0.822° with the ZMP
split on the plan's ramp alone, docs/equations.md): above the thesis' 0.3° still, the touch-down's impact
unmodelled."""


@pytest.mark.hil
def test_ground_thesis_walk_keeps_the_feed_forwards_following_error(thesis_gait):
    """On the floor, open-loop: the gait completes and every drive's following error stays within what the
    ZMP-shared, cell-confirmed double-support feed-forward and the smoothed Coulomb sign brought it to."""
    r = run_walk(thesis_gait, Options(config=WALK_CONFIG), hung=False)
    assert r.completed and not r.fell and r.faults == [], (r.states, r.aborted, r.faults)
    assert r.following_error_max_deg is not None
    assert r.following_error_max_deg <= GROUND_FOLLOWING_DEG, r.following_error_deg
