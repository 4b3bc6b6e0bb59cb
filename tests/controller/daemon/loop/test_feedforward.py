"""The loop's feed-forward is the plants' inverse dynamics (drivers.sim.plant_leg's equation of
motion solved for the torque): the rigid body under the gravity of the tilted floor (thesis
eq. 46), the rotors' reflected inertia J_pᵀ J_m J_p q̈ and bias J_pᵀ J_m J̇_p q̇, the motor
friction through the transmission and the joint friction. The loop's own path is exercised:
motor readings on the bus -> _measure -> _cycle_compute -> _feedforward."""
from __future__ import annotations

import numpy as np
import pytest

from controller.daemon.config import COULOMB_VELOCITY

from tests.controller.daemon.loop_harness import Harness


@pytest.fixture(scope="module")
def h():
    harness = Harness()
    yield harness
    harness.close()


def base_gravity(alpha: float, beta: float, g) -> np.ndarray:
    """R_M→O0ᵀ g with R_M→O0 = Rz(α) Ry(−β) (thesis eq. 46), composed here independently."""
    ca, sa, cb, sb = np.cos(alpha), np.sin(alpha), np.cos(beta), np.sin(beta)
    rz = np.array([[ca, -sa, 0.0], [sa, ca, 0.0], [0.0, 0.0, 1.0]])
    ry = np.array([[cb, 0.0, -sb], [0.0, 1.0, 0.0], [sb, 0.0, cb]])
    return (rz @ ry).T @ np.asarray(g)


def plant_torque(robot, q, qd, qdd, g) -> np.ndarray:
    """Joint torque the leg plant needs for q̈ at (q, q̇): recursive Newton-Euler (rigid body,
    joint rotor inertia and friction; the loop uses the Lagrangian A, C, G) plus
    J_pᵀ (J_m (J_p q̈ + J̇_p q̇) + F_v q̇_m + F_c sign(q̇_m)), q̇_m = J_p q̇, with J̇_p q̇ the
    second difference of the motor angles along q̇ (the loop differences J_p)."""
    tr = robot.transmission
    m = tr.motors
    jm, fv, fc = np.array(m.rotor_inertia), np.array(m.viscous), np.array(m.coulomb)
    jp = tr.jacobian(q)
    e = 1e-4
    bias = (tr.to_motor(q + e * qd) - 2.0 * tr.to_motor(q) + tr.to_motor(q - e * qd)) / e**2
    vm = jp @ qd
    return robot.rnea(q, qd, qdd, g) + jp.T @ (jm * (jp @ qdd + bias) + fv * vm + fc * np.sign(vm))


def test_feedforward_is_the_plants_inverse_dynamics_on_a_tilted_floor(h):
    """With the exact Coulomb sign (v_s = 0), the plants' own friction model."""
    loop, bus = h.loop, h.bus
    loop.act.vs = 0.0
    robot = loop.robot
    tr, mdl = robot.transmission, robot.model
    g_level = np.array(robot.description.gravity)
    rng = np.random.default_rng(7)
    lo, hi = mdl.qmin + 0.05, mdl.qmax - 0.05
    for _ in range(25):
        q, qd, qdd = rng.uniform(lo, hi), rng.uniform(-1.5, 1.5, 4), rng.uniform(-5.0, 5.0, 4)
        alpha, beta = rng.uniform(-0.35, 0.35, 2)
        bus.position[loop.leg_idx] = tr.to_motor(q)
        bus.velocity[loop.leg_idx] = tr.velocity_to_motor(q, qd)
        bus.position[loop.plat_idx] = loop.ratio * np.array([alpha, beta])
        loop.q[:] = q                                          # the Newton guess of motor_to_joint
        assert loop._measure() == 0
        loop._cycle_compute()
        loop.qd_ref[:], loop.qdd_ref[:] = qd, qdd
        loop.feet.comply(True)                                 # the commanded reference the actuation reads
        loop._feedforward()
        expected = plant_torque(robot, q, qd, qdd, base_gravity(alpha, beta, g_level))
        np.testing.assert_allclose(loop.tau_ff, expected, rtol=1e-6, atol=1e-6 * np.abs(expected).max())
    loop.act.vs = COULOMB_VELOCITY


def test_the_coulomb_feed_forward_is_smoothed_over_v_s_and_does_not_flip_at_rest(h):
    """The loop's Coulomb terms are F_c tanh(q̇ / v_s) at the joints and J_pᵀ F_c tanh(q̇_m / (v_s ‖J_p,i·‖))
    at the motors (Makkar et al. 2005; docs/equations.md), the difference from the exact sign composed
    here with numpy; a reference at ±1e-7 rad/s moves the feed-forward by under 1e-3 N·m where the exact
    sign stepped it by 2 F_c."""
    loop = h.loop
    robot = loop.robot
    tr, mdl = robot.transmission, robot.model
    m = tr.motors
    fc_m, fc_j = np.array(m.coulomb), mdl.coulomb
    vs = loop.act.vs
    assert vs == COULOMB_VELOCITY > 0.0
    q = 0.5 * (mdl.qmin + mdl.qmax)
    loop.q[:] = q
    loop.io.bus.position[loop.leg_idx] = tr.to_motor(q)
    loop.io.bus.velocity[loop.leg_idx] = 0.0
    assert loop._measure() == 0
    loop._cycle_compute()
    jp = tr.jacobian(q)
    rows = np.linalg.norm(jp, axis=1)

    def ff(qd, v_s):
        loop.act.vs = v_s
        loop.qd_ref[:], loop.qdd_ref[:] = qd, 0.0
        loop.feet.comply(True)
        loop._feedforward()
        return loop.tau_ff.copy()

    rng = np.random.default_rng(4)
    for qd in (rng.uniform(-0.03, 0.03, 4), np.array([0.004, -0.012, 0.02, -0.001])):
        vm = jp @ qd
        expected = jp.T @ (fc_m * (np.tanh(vm / (vs * rows)) - np.sign(vm))) + fc_j * (np.tanh(qd / vs) - np.sign(qd))
        np.testing.assert_allclose(ff(qd, vs) - ff(qd, 0.0), expected, rtol=1e-9, atol=1e-9)
    up, down = np.full(4, 1e-7), np.full(4, -1e-7)
    assert np.abs(ff(up, vs) - ff(down, vs)).max() < 1e-3
    assert np.abs(ff(up, 0.0) - ff(down, 0.0)).max() > 1.0          # the exact sign: 2 J_pᵀ F_c, N·m
    loop.act.vs = vs


def imu_harness(tmp_path, **tilt) -> Harness:
    """The loop on the sim bus with the deployed config, the stabilizer's tilt from the foot IMU
    (and the other ``tilt:`` keys given)."""
    import yaml

    from controller.daemon.config import load_daemon_config

    from tests.controller.daemon.loop_harness import CONFIG
    doc = yaml.safe_load(CONFIG.read_text())
    doc["robot"] = str(CONFIG.parent / doc["robot"])
    stab = yaml.safe_load((CONFIG.parent / doc["stabilizer"]).read_text())
    stab["robot"], stab["tilt"]["source"] = doc["robot"], "imu"
    stab["tilt"].update(tilt)
    (tmp_path / "stab_imu.yaml").write_text(yaml.safe_dump(stab))
    doc["stabilizer"] = str(tmp_path / "stab_imu.yaml")
    (tmp_path / "bipd.yaml").write_text(yaml.safe_dump(doc))
    return Harness(config=load_daemon_config(tmp_path / "bipd.yaml", lockstep=True))


@pytest.mark.slow
def test_with_the_imu_source_the_tilt_comes_from_the_imu_over_the_bus(tmp_path):
    """tilt.source: imu: the loop reads the foot IMU on ankle_1's auxiliary input (drivers.powerlink.pdo)
    through the tilt observer (stabilizer.tilt_observer; the clamped plant's sole is flat): at rest
    its specific force is the IMU's, the apparent tilt and the feed-forward's gravity follow it while
    the platform turns and reach the platform's angles once it stops, and the stabilizer gets the
    same specific force."""
    from controller.daemon.codes import State
    from controller.daemon.shm import Cmd
    from models.tilt import tilted_gravity

    h = imu_harness(tmp_path)
    try:
        loop = h.loop
        assert h.command(Cmd.ENABLE)[0]
        h.run(100, until=lambda: h.state == State.HOLD)
        h.run(200)
        imu = h.bus.aux[h.bus.axis_names.index("ankle_1")]
        np.testing.assert_allclose(loop.tilt_in, imu, atol=1e-9)               # at rest, flat: the IMU
        assert h.command(Cmd.STABILIZER, 1.0)[0] and h.state == State.STABILIZING
        assert h.command(Cmd.PLATFORM, np.radians(5.0), np.radians(12.0), 0.6)[0]
        g = np.zeros(3)
        turned = lag = 0.0
        for k in range(1000):
            h.run(1, heartbeat_every=1) if k % 50 == 0 else h.run(1)
            np.testing.assert_array_equal(loop.stab.in_tilt, loop.tilt_in)
            tilted_gravity(loop.tilt[0], loop.tilt[1], loop.g_level, g)
            np.testing.assert_allclose(loop.data.gravity, g, rtol=1e-12)
            turned = max(turned, float(np.abs(loop.plat).max()))
            lag = max(lag, float(np.abs(loop.tilt - loop.plat).max()))
        assert h.state == State.STABILIZING and np.degrees(turned) > 11.9
        np.testing.assert_allclose(loop.tilt, loop.plat, atol=1e-4)            # the quasi-static plant, settled
        np.testing.assert_allclose(loop.tilt_in, imu, atol=1e-3)
        # the observer's low-pass (critically damped, ω = 1/0.15 s) lags a ramp of rate v by 2v/ω; the
        # quintic's peak rate is 1.875 × 12° / 0.6 s: measured 7.3°
        assert 1.0 < np.degrees(lag) < 2.0 * 0.15 * 1.875 * 12.0 / 0.6
    finally:
        h.close()


def test_support_acceleration_is_the_horizontal_part_of_the_rotated_specific_force():
    """An IMU on the foot tilted by (α, β) reads f = R_M→O0ᵀ (g0 x_g + a); the loop recovers the
    support's horizontal acceleration (a_y, a_z) in world axes (use_acceleration)."""
    from controller.daemon.loop.loop import support_acceleration

    rng = np.random.default_rng(3)
    out, R = np.zeros(2), np.zeros((3, 3))
    for _ in range(20):
        alpha, beta = rng.uniform(-0.4, 0.4, 2)
        a = np.array([0.0, *rng.uniform(-3.0, 3.0, 2)])
        f = base_gravity(alpha, beta, np.array([9.81, 0.0, 0.0]) + a)    # R_M→O0ᵀ (g0 x_g + a)
        support_acceleration(alpha, beta, f, R, out)
        np.testing.assert_allclose(out, a[1:], atol=1e-12)


def test_an_unusable_tilt_keeps_the_last_gravity_and_warns_once(h):
    """A non-finite tilt (or one beyond the foot standing, stabilizer.ground.MAX_TILT) keeps the
    last valid gravity and posts one WARNING (TILT_INPUT) when it becomes unusable."""
    from controller.daemon.codes import Event, Reason

    loop = h.loop
    h.events()
    loop.tilt_in[:2] = 0.1, 0.2
    loop._cycle_compute()
    g = loop.data.gravity.copy()
    for bad in ((np.nan, 0.2), (0.1, 1.5), (np.nan, np.nan)):
        loop.tilt_in[:2] = bad
        loop._cycle_compute()
        np.testing.assert_array_equal(loop.data.gravity, g)
    warnings = [e for e in h.events() if e[1] == Event.WARNING and e[2] == Reason.TILT_INPUT]
    assert len(warnings) == 1
    loop.tilt_in[:2] = 0.0, 0.0
    loop._cycle_compute()
    np.testing.assert_allclose(loop.data.gravity, loop.g_level, rtol=0, atol=1e-15)


@pytest.mark.slow
def test_an_imu_tilt_the_foot_does_not_confirm_is_held_and_warned_once(tmp_path):
    """The sole's cells show the foot on an edge (rocking): the observer holds the IMU's last tilt
    while the IMU reads another one (the platform turns), and after the YAML's tilt.unconfirmed_s
    (not the default) the loop posts one WARNING (TILT_INPUT, detail 1) and raises the telemetry's
    tilt_held; flat again, the IMU is believed again, without a new warning, and tilt_held falls."""
    from controller.daemon.codes import Event, Reason, State
    from controller.daemon.shm import Cmd
    from stabilizer.tilt_observer import UNCONFIRMED_S

    unconfirmed_s = 0.4
    assert unconfirmed_s != UNCONFIRMED_S
    h = imu_harness(tmp_path, unconfirmed_s=unconfirmed_s)
    try:
        loop, plant = h.loop, h.bus.network.plant
        assert h.command(Cmd.ENABLE)[0]
        h.run(300)
        assert h.state == State.HOLD
        flat, f0 = plant.sensors["sole"].copy(), loop.tilt_in.copy()
        h.events()
        plant.sensors["sole"][1] = loop.foot_abc[0]                   # centre of pressure on the y0 = a edge
        assert h.command(Cmd.PLATFORM, 0.0, np.radians(5.0), 0.3)[0]
        h.run(round(0.9 * unconfirmed_s / loop.period), heartbeat_every=25)
        np.testing.assert_array_equal(loop.tilt_in, f0)
        assert np.abs(plant.sensors["imu_gravity"] - f0).max() > 0.8     # the IMU reads the 5° pitch
        assert not [e for e in h.events() if e[1] == Event.WARNING]
        assert "tilt_held" not in h.last_record()["stab_flag_names"]
        h.run(round(0.2 * unconfirmed_s / loop.period), heartbeat_every=25)
        warnings = [e for e in h.events() if e[1] == Event.WARNING]
        assert [(e[2], e[3]) for e in warnings] == [(Reason.TILT_INPUT, 1.0)], warnings
        np.testing.assert_array_equal(loop.tilt_in, f0)
        assert h.last_record()["stab_flag_names"] == ["tilt_held"]          # in HOLD: no stabilizer flags
        plant.sensors["sole"][:] = flat
        h.run(1000, heartbeat_every=25)
        np.testing.assert_allclose(loop.tilt_in, plant.sensors["imu_gravity"], atol=1e-3)   # believed again
        assert not [e for e in h.events() if e[1] == Event.WARNING]
        assert "tilt_held" not in h.last_record()["stab_flag_names"]
    finally:
        h.close()
