"""The MuJoCo plant: standing, falling, platform, sensors."""
from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
import yaml

from drivers.config import parse_bus_config
from drivers.sim.hil.plant_mujoco import (
    MujocoPlant,
    MujocoPlantError,
    SimulationError,
    tilt_rotation,
)
from models import TransmissionFault
from stabilizer.ground import tilt_from_up

from tests.drivers.sim.hil.conftest import BUS_CYCLE, holder, run
from tests.paths import DEPLOY

Q_STAND = np.array([0.0, 0.0, -0.04, 0.0])


def _weight(plant) -> float:
    return float(plant.mj_model.body_subtreemass[plant.mj_model.body("foot").id] * 9.81)


def test_stands_under_gravity_compensation(robot):
    """1 s on a level platform under J_p⁻ᵀ G(q) alone: no fall, the sole carries the weight, the CoP
    (from the four corner sensors) is inside the foot and under the CoG."""
    plant = MujocoPlant(robot, q0=Q_STAND)
    hip0 = float(plant.sensors["hip_height"])
    run(plant, 1.0, holder(robot, Q_STAND, kp=0.0, kd=0.0, gravity=True))
    s = plant.sensors
    assert s["fallen"] == 0.0
    assert s["foot_tilt"] < 1e-3 and abs(s["foot_lift"]) < 1e-3
    assert abs(s["hip_height"] - hip0) < 2e-3
    assert s["foot_forces"].sum() == pytest.approx(_weight(plant), rel=1e-3)
    foot = robot.description.foot
    y, z = s["cop"]
    assert abs(y) < foot["a"] and -foot["c"] < z < foot["b"]
    com_z_in_r0 = s["com_world"][2] + foot["Z"]                     # M is Z ahead of O0 (eq. 47)
    assert z == pytest.approx(com_z_in_r0, abs=2e-3)
    assert s["support_margin"] == pytest.approx(foot["a"], abs=2e-3)
    np.testing.assert_allclose(s["joint_position"], Q_STAND, atol=0.02)
    np.testing.assert_array_equal(s["sole"], [s["foot_forces"].sum(), y, z])    # what sensor: sole carries


def test_falls_without_torque(robot):
    """A flexed leg with unpowered joints collapses: the hip drops more than 10 cm -> fallen."""
    q0 = [0.0, 0.3, -1.0, 0.6]
    plant = MujocoPlant(robot, q0=q0)
    hold_platform = holder(robot, q0, kp=0.0, kd=0.0)
    run(plant, 1.5, hold_platform, stop_when_fallen=True)
    assert plant.sensors["fallen"] == 1.0
    assert plant.time < 1.5


def test_tips_over_the_toe_when_the_cog_leaves_the_foot(robot):
    """A stiff leg leaning out of the support polygon tips: support margin < 0, foot tilt > 5°."""
    q0 = [0.0, 0.55, -0.04, 0.0]
    plant = MujocoPlant(robot, q0=q0)
    assert plant.sensors["support_margin"] < 0.0
    run(plant, 1.5, holder(robot, q0), stop_when_fallen=True)
    assert plant.sensors["fallen"] == 1.0
    assert plant.sensors["foot_tilt"] > math.radians(5.0)
    assert plant.sensors["foot_lift"] > 0.01


def test_platform_follows_its_motors_and_the_imu_sees_the_tilt(robot):
    """Platform at α = 10°, β = 20° (thesis §2.6.3), leg leaning back to vertical: the hinge angles are
    the motor angles / ratio, the IMU's specific force is R_M→O0ᵀ (g, 0, 0) and its orientation R_M→O0
    (eq. 46); the stabilizer reads (α, β) back from the IMU (stabilizer/ground.py)."""
    tilt = np.radians([10.0, 20.0])
    q0 = np.array([-tilt[0], -tilt[1], -0.04, 0.0])
    plant = MujocoPlant(robot, q0=q0, platform0=tilt)
    assert plant.sensors["support_margin"] > 0.03
    run(plant, 0.4, holder(robot, q0, tilt))
    s = plant.sensors
    assert s["fallen"] == 0.0
    np.testing.assert_allclose(s["platform"], plant.motor_position[4:] / plant.ratio, rtol=1e-12)
    np.testing.assert_allclose(s["platform"], tilt, atol=0.01)
    R = tilt_rotation(*s["platform"])
    np.testing.assert_allclose(s["imu_gravity"], R.T @ [9.81, 0.0, 0.0], atol=0.05)
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, R.ravel())
    np.testing.assert_allclose(np.abs(s["imu_orientation"] @ quat), 1.0, atol=1e-5)
    out = np.zeros(2)
    tilt_from_up(*s["imu_gravity"], out)
    np.testing.assert_allclose(out, s["platform"], atol=0.005)

    move = np.radians([-5.0, 5.0])                    # drive the platform elsewhere, the leg along
    start = plant.time

    def ramp(plant, out):
        r = min(1.0, (plant.time - start) / 1.0)
        ref = tilt + r ** 3 * (10 - 15 * r + 6 * r * r) * (move - tilt)
        holder(robot, [-ref[0], -ref[1], -0.04, 0.0], ref)(plant, out)
    run(plant, 1.4, ramp)
    np.testing.assert_allclose(s["platform"], move, atol=0.01)
    assert s["foot_tilt"] < 1e-3 and s["fallen"] == 0.0


def test_deterministic_and_mapped_by_axis_name(robot):
    """Same torques, same trajectory (bit for bit); from_config maps the motors by bus axis name."""
    bus = yaml.safe_load((DEPLOY / "bipd.yaml").read_text())["bus"]
    bus["nodes"] = bus["nodes"][::-1]                 # platform axes first on the bus
    config = parse_bus_config(bus)
    a = MujocoPlant.from_config(config, robot, 50.0, Q_STAND)
    b = MujocoPlant.from_config(config, robot, 50.0, Q_STAND)
    names = [ax.name for ax in config.axes]
    tau = np.zeros(6)
    tau[names.index("knee")] = 0.3
    tau[names.index("platform_beta")] = 1.0
    for _ in range(100):
        a.step(BUS_CYCLE, tau)
        b.step(BUS_CYCLE, tau)
    assert a.motor_position.tobytes() == b.motor_position.tobytes()
    assert a.sensors["imu_gravity"].tobytes() == b.sensors["imu_gravity"].tobytes()
    q = a.sensors["joint_position"]
    np.testing.assert_allclose(a.motor_position[[names.index(n) for n in ("ankle_1", "ankle_2", "knee", "hip")]],
                               robot.transmission.to_motor(q), rtol=1e-12)
    assert a.motor_position[names.index("platform_beta")] == pytest.approx(50.0 * a.sensors["platform"][1])
    assert a.sensors["platform"][1] > 0.0 and abs(a.sensors["platform"][0]) < 1e-3
    a.reset()
    np.testing.assert_allclose(a.sensors["joint_position"], Q_STAND)
    assert a.time == 0.0


def test_bad_arguments_are_named(robot):
    with pytest.raises(MujocoPlantError, match="q0 must be 4 joint angles within the limits"):
        MujocoPlant(robot, q0=[0.0, 0.0, 0.5, 0.0])
    with pytest.raises(MujocoPlantError, match="axes must list the motors"):
        MujocoPlant(robot, axes=("knee",))


def test_bolted_foot_follows_the_plate_and_cannot_tip(robot):
    """--bolt-foot (thesis squat bench, §2.6.1): the same 0.2 s, 150 N lateral push on the hip that
    topples the free-standing leg leaves the bolted foot flat on the plate, which it follows."""
    hold = holder(robot, Q_STAND, kp=2.0, kd=0.05, gravity=True)
    free, bolted = MujocoPlant(robot, q0=Q_STAND), MujocoPlant(robot, q0=Q_STAND, bolt_foot=True)
    assert "<weld" in bolted.mjcf and "<weld" not in free.mjcf
    for plant in (free, bolted):
        assert plant.control({"op": "push", "body": "hip", "force": [0.0, 150.0, 0.0], "duration": 0.2}) == {"ok": True}
        run(plant, 1.5, hold, stop_when_fallen=True)
    assert free.sensors["fallen"] == 1.0
    assert bolted.sensors["fallen"] == 0.0
    assert bolted.sensors["foot_tilt"] < math.radians(0.1) and abs(bolted.sensors["foot_lift"]) < 1e-3
    bolted.reset()
    run(bolted, 1.0, holder(robot, Q_STAND, (math.radians(10.0), math.radians(10.0)), kp=2.0, kd=0.05, gravity=True))
    assert np.all(np.abs(np.degrees(bolted.sensors["platform"]) - 10.0) < 0.5)
    assert bolted.sensors["foot_tilt"] < math.radians(0.1) and bolted.sensors["fallen"] == 0.0


def test_push_on_the_hip_for_its_duration_in_thesis_axes(robot):
    """A push along z_g (toe) moves the CoG toward the toe, lasts ``duration`` of plant time (in
    MuJoCo axes x_g -> z, y_g -> x, z_g -> y), and is cleared by reset; bad requests are named."""
    hold = holder(robot, Q_STAND, kp=2.0, kd=0.05, gravity=True)
    pushed, still = MujocoPlant(robot, q0=Q_STAND), MujocoPlant(robot, q0=Q_STAND)
    hip = pushed.mj_model.body("hip").id
    assert pushed.control({"op": "push", "body": "hip", "force": [1.0, 2.0, 30.0], "duration": 0.01}) == {"ok": True}
    run(pushed, 0.008, hold)
    np.testing.assert_array_equal(pushed.mj_data.xfrc_applied[hip], [2.0, 30.0, 1.0, 0.0, 0.0, 0.0])
    run(pushed, 0.0024, hold)                          # 10.4 ms: the 10 ms push is over
    assert not pushed.mj_data.xfrc_applied.any()
    run(still, 0.0104, hold)
    assert pushed.sensors["com_world"][2] > still.sensors["com_world"][2] + 1e-5
    pushed.control({"op": "push", "body": "hip", "force": [0.0, 0.0, 30.0], "duration": 1.0})
    pushed.reset()
    run(pushed, 0.0004, hold)
    assert not pushed.mj_data.xfrc_applied.any()
    for request, message in (({"op": "kick"}, "unknown control op 'kick'"),
                             ({"op": "push", "body": "knee", "force": [0, 0, 1], "duration": 0.1}, "unknown body"),
                             ({"op": "push", "force": [0, 1], "duration": 0.1}, "3 finite numbers"),
                             ({"op": "push", "force": [0, 0, 1], "duration": -1}, "duration must be"),
                             ({"op": "push", "force": [0, 0, 1]}, "needs force")):
        assert message in pushed.control(request)["error"]


def _corner_forces_from_contacts(plant, foot) -> np.ndarray:
    """The four load cells from MuJoCo's raw contact list (module docstring of the plant): each
    sole/plate contact force along x0, split bilinearly among the corners A, B, C, D."""
    m, d = plant.mj_model, plant.mj_data
    body, sole, plate = m.body("foot").id, m.geom("foot").id, m.geom("platform").id
    R, origin = d.xmat[body].reshape(3, 3), d.xpos[body]
    a, b, c = foot["a"], foot["b"], foot["c"]
    f = np.zeros(4)
    for k in range(d.ncon):
        con = d.contact[k]
        if {int(con.geom[0]), int(con.geom[1])} != {sole, plate}:
            continue
        local = np.zeros(6)
        mujoco.mj_contactForce(m, d, k, local)
        on_foot = con.frame.reshape(3, 3).T @ local[:3] * (1.0 if con.geom[1] == sole else -1.0)
        load = on_foot @ R[:, 0]
        y, z = R[:, 1:].T @ (con.pos - origin)
        wy = (np.clip(y, -a, a) + a) / (2 * a)
        wz = (np.clip(z, -c, b) + c) / (b + c)
        f += load * np.array([wy * wz, wy * (1 - wz), (1 - wy) * (1 - wz), (1 - wy) * wz])
    return f


def test_foot_forces_are_the_sole_contacts(robot):
    """The corner load cells (computed from MuJoCo's contact sensor) equal the same split of the raw
    contact list, standing on a tilted plate and while the foot rocks after a push."""
    foot = robot.description.foot
    tilt = np.radians([10.0, 20.0])
    q0 = np.array([-tilt[0], -tilt[1], -0.04, 0.0])
    tilted = MujocoPlant(robot, q0=q0, platform0=tilt)
    run(tilted, 0.2, holder(robot, q0, tilt))
    pushed = MujocoPlant(robot, q0=Q_STAND)
    pushed.control({"op": "push", "body": "hip", "force": [0.0, 60.0, 0.0], "duration": 0.05})
    hold = holder(robot, Q_STAND, kp=2.0, kd=0.05, gravity=True)
    checked = 0
    for plant, torque in ((tilted, holder(robot, q0, tilt)), (pushed, hold)):
        for _ in range(100):
            run(plant, BUS_CYCLE, torque)
            np.testing.assert_allclose(plant.sensors["foot_forces"], _corner_forces_from_contacts(plant, foot),
                                       rtol=1e-12, atol=1e-9)
            checked += plant.mj_data.ncon > 0
    assert checked > 150
    assert tilted.sensors["foot_forces"].sum() > 0.9 * _weight(tilted) * math.cos(tilt[1])


def test_non_finite_torque_and_divergence_are_faults(robot):
    """A non-finite motor torque is a TransmissionFault (nothing is stepped); a non-finite state, which
    MuJoCo would silently reset, is a SimulationError; reset() recovers."""
    plant = MujocoPlant(robot, q0=Q_STAND)
    tau = np.zeros(6)
    tau[2] = math.nan
    with pytest.raises(TransmissionFault, match="a motor torque is not finite"):
        plant.step(BUS_CYCLE, tau)
    assert plant.time == 0.0 and plant.mj_data.time == 0.0
    plant.mj_data.qvel[-1] = math.inf
    with pytest.raises(SimulationError, match="diverged"):
        plant.step(BUS_CYCLE, np.zeros(6))
    plant.reset()
    run(plant, 0.01, holder(robot, Q_STAND, kp=2.0, kd=0.05, gravity=True))
    assert plant.sensors["fallen"] == 0.0 and plant.time == pytest.approx(0.01)


def test_timestep_splits_a_bus_cycle_into_equal_mujoco_steps(robot):
    """timestep is the longest MuJoCo step: 400 µs by default (one per bus cycle), 200 µs gives two per
    cycle (J_p rewritten before each); the standing leg is the same either way."""
    hold = holder(robot, Q_STAND, kp=2.0, kd=0.05, gravity=True)
    one, two = MujocoPlant(robot, q0=Q_STAND), MujocoPlant(robot, q0=Q_STAND, timestep=BUS_CYCLE / 2)
    for plant in (one, two):
        run(plant, 0.2, hold)
    assert one.mj_model.opt.timestep == BUS_CYCLE and two.mj_model.opt.timestep == BUS_CYCLE / 2
    assert one.mj_data.time == pytest.approx(0.2) and two.mj_data.time == pytest.approx(0.2)
    np.testing.assert_allclose(one.sensors["joint_position"], two.sensors["joint_position"], atol=1e-5)
    np.testing.assert_allclose(one.sensors["foot_forces"], two.sensors["foot_forces"], atol=0.05)
    one.timestep = BUS_CYCLE / 4
    run(one, BUS_CYCLE, hold)
    assert one.mj_model.opt.timestep == BUS_CYCLE / 4
