"""LegPlant: the BIP leg on its tilting platform (thesis §2.3, §2.6.3) stepped as the drives step it."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml

from drivers import cia402
from drivers.config import BusConfigError, parse_bus_config
from drivers.hal import open_bus
from drivers.sim.plant_leg import AXES, LegPlant, LegPlantError
from models import Robot, TransmissionFault
from models.chain.config import description_from_dict

from tests.drivers.helpers import cycle
from tests.paths import ROBOTS

LEG_YAML = ROBOTS / "bip_leg.yaml"
LEG = yaml.safe_load(LEG_YAML.read_text(encoding="utf-8"))
ROBOT = Robot.from_yaml(LEG_YAML)
TR = ROBOT.transmission
DT = 4e-4                                   # one POWERLINK cycle
POSTURES = [(0.0, 0.15, -0.4, 0.25), (0.05, 0.3, -1.0, 0.7), (-0.1, -0.2, -1.5, 1.2)]


def robot_from(edit) -> Robot:
    data = copy.deepcopy(LEG)
    edit(data)
    return Robot(description_from_dict(data, "<test>"))


def no_friction(data: dict) -> None:
    data["transmission"]["motors"].update(viscous=[0.0] * 4, coulomb=[0.0] * 4)


# without friction nothing but the right torques can hold the leg (stiction would hide small errors)
FRICTIONLESS = robot_from(no_friction)


def base_gravity(alpha: float, beta: float) -> np.ndarray:
    """R_M→O0ᵀ (−9.81, 0, 0), R_M→O0 = Rz(α) Ry(−β) (thesis eq. 46, composed independently)."""
    ca, sa, cb, sb = np.cos(alpha), np.sin(alpha), np.cos(beta), np.sin(beta)
    rz = np.array([[ca, -sa, 0.0], [sa, ca, 0.0], [0.0, 0.0, 1.0]])
    ry = np.array([[cb, 0.0, -sb], [0.0, 1.0, 0.0], [sb, 0.0, cb]])
    return (rz @ ry).T @ np.array([-9.81, 0.0, 0.0])


def compensation(q, g=(-9.81, 0.0, 0.0)) -> np.ndarray:
    """Motor torques J_p^-T G(q) (platform motors 0) with G = −Σ m_b J_v,bᵀ g from the CoG Jacobians."""
    G = -np.einsum("b,bkj,k->j", ROBOT.model.mass, ROBOT.body_com_jacobians(q)[:, :3, :], np.asarray(g))
    return np.concatenate([TR.torque_to_motor(q, G), [0.0, 0.0]])


def run(plant: LegPlant, torque: np.ndarray, seconds: float) -> None:
    for _ in range(round(seconds / DT)):
        plant.step(DT, torque)


@pytest.mark.parametrize("robot", [ROBOT, FRICTIONLESS], ids=["friction", "frictionless"])
@pytest.mark.parametrize("q0", POSTURES)
def test_holds_still_under_gravity_compensation_and_falls_without(robot, q0):
    plant = LegPlant(robot, q0=q0)
    run(plant, compensation(q0), 2.0)
    q = plant.sensors["joint_position"]
    np.testing.assert_allclose(q, q0, atol=1e-4)
    np.testing.assert_allclose(plant.motor_velocity, 0.0, atol=1e-3)
    plant.reset()
    run(plant, np.zeros(6), 0.3)
    assert np.max(np.abs(q - q0)) > 0.05                 # the leg falls measurably


def test_without_torque_the_knee_folds_onto_its_limit_and_stays_in_the_geometry():
    q0 = POSTURES[0]
    plant = LegPlant(ROBOT, q0=q0)
    q = plant.sensors["joint_position"]
    knee_min = ROBOT.model.qmin[2]
    for _ in range(round(1.5 / DT)):
        plant.step(DT, np.zeros(6))
        np.testing.assert_allclose(plant.motor_position[:4], TR.to_motor(q), rtol=0, atol=1e-12)
        assert np.all(q > ROBOT.model.qmin - 0.01) and np.all(q < ROBOT.model.qmax + 0.01)
    assert q[2] == pytest.approx(knee_min, abs=0.01)     # folded onto the knee stop
    assert np.max(np.abs(plant.motor_velocity)) < 1e-3   # and at rest there


def test_kinetic_energy_is_conserved_without_gravity_torque_or_friction():
    robot = robot_from(lambda d: (no_friction(d), d.update(gravity=[0.0, 0.0, 0.0])))
    plant = LegPlant(robot, q0=(0.0, 0.0, -0.8, 0.5), platform_friction=0.0)
    run(plant, np.array([0.02, -0.01, 0.03, -0.02, 1e-4, -1e-4]), 0.05)   # spin up, then coast

    def energy() -> float:
        q = plant.sensors["joint_position"]
        qd = robot.transmission.velocity_to_joint(q, plant.motor_velocity[:4])
        m = robot.inertia(q) + robot.transmission.rotor_inertia(q)
        return 0.5 * qd @ m @ qd + 0.5 * 4e-4 * plant.motor_velocity[4:] @ plant.motor_velocity[4:]

    e0 = energy()
    assert e0 > 1e-3
    energies = []
    for _ in range(round(1.0 / DT)):
        plant.step(DT, np.zeros(6))
        energies.append(energy())
    assert np.max(np.abs(np.array(energies) - e0)) < 1e-6 * e0     # measured 1.2e-7 (50 µs substeps)
    assert np.max(np.abs(plant.sensors["joint_position"] - (0.0, 0.0, -0.8, 0.5))) > 0.05   # it moved


def test_tilted_platform_gravity_is_held_by_its_own_compensation():
    alpha, beta = np.radians(10.0), np.radians(20.0)          # the thesis' tilt bench end point
    g = base_gravity(alpha, beta)
    q0 = POSTURES[1]
    plant = LegPlant(FRICTIONLESS, q0=q0, platform0=(alpha, beta))
    np.testing.assert_allclose(plant.sensors["platform"], (alpha, beta), rtol=1e-15)
    np.testing.assert_allclose(plant.sensors["imu_gravity"], -g, atol=1e-12)   # specific force, up
    np.testing.assert_allclose(plant.motor_position[4:], 50.0 * np.array([alpha, beta]), rtol=1e-15)
    run(plant, compensation(q0, g), 2.0)
    np.testing.assert_allclose(plant.sensors["joint_position"], q0, atol=1e-4)
    plant.reset()
    run(plant, compensation(q0), 0.5)                         # the level-floor torques do not hold it
    assert np.max(np.abs(plant.sensors["joint_position"] - q0)) > 0.02


def reference_motion(robot: Robot, q0, g, torque, cycles: int) -> np.ndarray:
    """Joint angles at the end of each bus cycle, by RK4 (one step per cycle under its held torque;
    4 steps per cycle agree to 3e-11 rad) of the plant's equation of motion without Coulomb friction
    or stops, (A + J_pᵀ J_m J_p) q̈ = J_pᵀ (τ_m − J_m J̇_p q̇ − F_v J_p q̇) − C q̇ − G_tilt, built
    independently of the plant: A and C q̇ by recursive Newton-Euler (the plant: A from the body
    Jacobians, C from Christoffel symbols), J̇_p q̇ = d²q_m/dt² at q̈ = 0 as the second difference
    of the motor angles along q̇ (the plant differences J_p), G_tilt from the CoG Jacobians."""
    tr = robot.transmission
    jm, fv = np.array(tr.motors.rotor_inertia), np.array(tr.motors.viscous)
    zero = np.zeros(4)

    def acceleration(q, qd, tau_m):
        g0 = robot.rnea(q, zero, zero)                                   # level-floor G
        a = np.column_stack([robot.rnea(q, zero, e) - g0 for e in np.eye(4)])
        cqd = robot.rnea(q, qd, zero) - g0
        gt = -np.einsum("b,bkj,k->j", robot.model.mass, robot.body_com_jacobians(q)[:, :3, :], g)
        jp = tr.jacobian(q)
        e = 1e-4
        bias = (tr.to_motor(q + e * qd) - 2.0 * tr.to_motor(q) + tr.to_motor(q - e * qd)) / e**2
        m = a + jp.T @ (jm[:, None] * jp)
        return np.linalg.solve(m, jp.T @ (tau_m - jm * bias - fv * (jp @ qd)) - cqd - gt)

    q, qd = np.array(q0, dtype=np.float64), np.zeros(4)
    out = np.empty((cycles, 4))
    for k in range(cycles):
        tau = torque(k * DT)
        k1q, k1v = qd, acceleration(q, qd, tau)
        k2q, k2v = qd + DT / 2 * k1v, acceleration(q + DT / 2 * k1q, qd + DT / 2 * k1v, tau)
        k3q, k3v = qd + DT / 2 * k2v, acceleration(q + DT / 2 * k2q, qd + DT / 2 * k2v, tau)
        k4q, k4v = qd + DT * k3v, acceleration(q + DT * k3q, qd + DT * k3v, tau)
        q = q + DT / 6 * (k1q + 2 * k2q + 2 * k3q + k4q)
        qd = qd + DT / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
        out[k] = q
    return out


def test_a_motion_agrees_with_an_independent_rk4_reference():
    robot = robot_from(lambda d: d["transmission"]["motors"].update(coulomb=[0.0] * 4))
    tr = robot.transmission
    alpha, beta = np.radians(10.0), np.radians(20.0)
    g = base_gravity(alpha, beta)
    q0 = np.array(POSTURES[1])
    hold = tr.torque_to_motor(q0, -np.einsum("b,bkj,k->j", robot.model.mass,
                                              robot.body_com_jacobians(q0)[:, :3, :], g))

    swing, frequency = np.array([0.6, -0.5, 0.15, 0.2]), np.array([2.0, 2.5, 1.5, 3.0])   # N·m, Hz

    def torque(t):                                           # hold q0, plus the swings
        return hold + swing * np.sin(2 * np.pi * frequency * t)

    cycles = round(0.3 / DT)
    plant = LegPlant(robot, q0=q0, platform0=(alpha, beta))
    q, qd = np.empty((cycles, 4)), np.empty((cycles, 4))
    for k in range(cycles):
        plant.step(DT, np.concatenate([torque(k * DT), [0.0, 0.0]]))
        q[k] = plant.sensors["joint_position"]
        qd[k] = tr.velocity_to_joint(q[k], plant.motor_velocity[:4])
    speed = np.max(np.abs(qd), axis=0)
    assert np.all(speed > 0.4) and np.max(speed) > 1.5         # measured 0.5, 1.1, 1.8, 0.9 rad/s
    assert np.all(q > robot.model.qmin) and np.all(q < robot.model.qmax)   # off the stops
    # measured 3.8e-5 rad (the semi-implicit Euler substeps' O(h) error; the per-cycle hold of the
    # configuration terms adds < 1e-5). Leaving out the smallest term, the rotors' J_m J̇_p q̇, moves
    # the reference by 2.3e-3 rad, level-floor instead of tilted gravity by 0.2 rad.
    err = np.max(np.abs(q - reference_motion(robot, q0, g, torque, cycles)))
    assert err < 2e-4


def test_level_imu_reads_plus_g_along_x0_and_the_platform_follows_its_motors():
    plant = LegPlant(ROBOT, platform_inertia=4e-4, platform_friction=1e-3, platform_ratio=50.0)
    np.testing.assert_allclose(plant.sensors["imu_gravity"], (9.81, 0.0, 0.0), atol=1e-15)
    torque = np.array([0.0, 0.0, 0.0, 0.0, 2e-3, -1e-3])
    run(plant, torque, 0.4)
    # J θ̈ = τ − b θ̇: θ̇ → τ/b with time constant J/b = 0.4 s
    expected = torque[4:] / 1e-3 * (1.0 - np.exp(-1.0))
    np.testing.assert_allclose(plant.motor_velocity[4:], expected, rtol=2e-3)
    np.testing.assert_allclose(plant.sensors["platform"], plant.motor_position[4:] / 50.0, rtol=1e-15)


def test_same_inputs_give_identical_arrays_and_reset_replays():
    rng = np.random.default_rng(3)
    torques = rng.normal(0.0, 0.3, (1500, 6))
    plants = [LegPlant(ROBOT, q0=POSTURES[1]) for _ in range(2)]
    runs = []
    for plant in plants + [plants[0]]:
        plant.reset()
        for tau in torques:
            plant.step(DT, tau)
        runs.append(np.concatenate([plant.motor_position, plant.motor_velocity,
                                    *plant.sensors.values()]))
    assert np.array_equal(runs[0], runs[1]) and np.array_equal(runs[0], runs[2])


def test_a_long_step_is_its_bus_cycles():
    # dt beyond one bus cycle is held in cycles of 400 µs: step(5 DT) is five step(DT), bit for bit
    rng = np.random.default_rng(5)
    torques = rng.normal(0.0, 0.3, (200, 6))
    short, long = LegPlant(ROBOT, q0=POSTURES[1]), LegPlant(ROBOT, q0=POSTURES[1])
    for tau in torques:
        for _ in range(5):
            short.step(DT, tau)
        long.step(5 * DT, tau)
    assert np.array_equal(short.motor_position, long.motor_position)
    assert np.array_equal(short.motor_velocity, long.motor_velocity)
    assert np.max(np.abs(long.sensors["joint_position"] - POSTURES[1])) > 0.05     # it moved


def test_arrays_are_updated_in_place():
    plant = LegPlant(ROBOT, q0=POSTURES[0])
    arrays = [plant.motor_position, plant.motor_velocity, *plant.sensors.values()]
    before = [a.copy() for a in arrays]
    run(plant, np.zeros(6), 0.05)
    after = [plant.motor_position, plant.motor_velocity, *plant.sensors.values()]
    assert all(a is b for a, b in zip(arrays, after))
    assert not np.array_equal(before[0], arrays[0])


def test_from_config_maps_bus_axes_by_name(bench):
    plant = LegPlant.from_config(parse_bus_config(bench), LEG_YAML, q0=POSTURES[1])
    assert plant.axes == AXES
    bench["nodes"] = [bench["nodes"][2], bench["nodes"][1], bench["nodes"][0]]   # platform first
    swapped = LegPlant.from_config(parse_bus_config(bench), ROBOT, q0=POSTURES[1])
    order = [swapped.axes.index(name) for name in AXES]
    tau = np.array([0.1, -0.2, 0.3, -0.1, 1e-3, 2e-3])
    shuffled = np.empty(6)
    shuffled[order] = tau
    run(plant, tau, 0.1)
    run(swapped, shuffled, 0.1)
    np.testing.assert_array_equal(swapped.motor_position[order], plant.motor_position)
    np.testing.assert_array_equal(swapped.motor_velocity[order], plant.motor_velocity)


def test_a_bus_that_does_not_match_the_leg_is_refused(bench):
    bench["nodes"][1]["axes"][1]["name"] = "hip_flexion"
    with pytest.raises(BusConfigError, match=r"missing \['hip'\], unexpected \['hip_flexion'\]"):
        LegPlant.from_config(parse_bus_config(bench), LEG_YAML)


def test_a_robot_without_transmission_or_a_bad_q0_is_refused():
    with pytest.raises(LegPlantError, match=r"'lammari_arm5' with 5 joints and no transmission"):
        LegPlant(Robot.from_yaml(ROBOTS / "lammari_arm5.yaml"))
    with pytest.raises(LegPlantError, match="q0 must be 4 joint angles within the limits"):
        LegPlant(ROBOT, q0=(0.0, 0.0, 0.3, 0.0))
    with pytest.raises(LegPlantError, match="axes must list the motors"):
        LegPlant(ROBOT, axes=AXES[:5] + ("knee",))


def test_a_linkage_that_cannot_close_is_a_transmission_fault():
    # a knee linkage that closes over its joint range but not 1.1 rad past its upper limit
    robot = robot_from(lambda d: d["transmission"]["knee"].update(e=0.10, L=0.12))
    plant = LegPlant(robot, q0=(0.0, 0.0, -0.5, 0.0), stop_stiffness=1e-6, stop_damping=1e-6)
    extend = np.zeros(6)
    extend[2] = 0.5 * np.sign(robot.transmission.jacobian(plant.sensors["joint_position"])[2, 2])
    with pytest.raises(TransmissionFault, match=r"leg plant: knee \(q3\): linkage cannot close"):
        run(plant, extend, 2.0)
    with pytest.raises(TransmissionFault, match="a motor torque is not finite"):
        plant.step(DT, np.full(6, np.nan))


def test_the_sim_bus_holds_the_leg_with_cst_torque_offsets(bench):
    q0 = POSTURES[1]
    plant = LegPlant.from_config(parse_bus_config(bench), ROBOT, q0=q0)
    bus = open_bus(bench, plant=plant)
    try:
        bus.boot()
        tau = compensation(q0)
        assert np.max(np.abs(tau)) < 1.0                      # within the drives' 10 A · 0.1 N·m/A
        bus.torque_offset[:] = tau
        for axis in bus.axes.values():
            axis.mode = cia402.Mode.CST
            axis.enable()
        cycle(bus, 5)
        assert all(a.state == cia402.State.OPERATION_ENABLED for a in bus.axes.values())
        plant.reset()                                         # the leg sagged while the drives enabled
        cycle(bus, 500)                                       # 1 s
        np.testing.assert_allclose(plant.sensors["joint_position"], q0, atol=1e-4)
        np.testing.assert_allclose(bus.position[:4], TR.to_motor(q0), atol=1e-2)
        for axis in bus.axes.values():
            axis.disable()
        cycle(bus, 100)
        assert np.max(np.abs(plant.sensors["joint_position"] - q0)) > 0.05
    finally:
        bus.close()
