"""The whole-biped MuJoCo plant (BIP 2000) against the tree models: mass, kinematics, gravity, the
transmission, standing on its load cells, falling, determinism."""
from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from drivers.config import BusConfigError
from drivers.sim.hil.mjcf_biped import GANTRY_HEIGHT, MjcfError, build_biped
from drivers.sim.hil.plant_biped import TRUTH, BipedPlant, BipedPlantError, flexed_posture
from drivers.sim.hil.plant_mujoco import SimulationError
from models import TransmissionFault
from models.tree.config import load_tree
from models.tree.robot import TreeRobot
from models.urdf import frame_link

from tests.drivers.sim.hil.conftest import BUS_CYCLE
from tests.paths import ROBOTS

BIP2000 = ROBOTS / "bip2000.yaml"
MASS = 105.0
G = 9.81


@pytest.fixture(scope="module")
def desc():
    return load_tree(BIP2000)


@pytest.fixture(scope="module")
def tree(desc):
    return TreeRobot(desc)


@pytest.fixture(scope="module")
def hung(desc):
    return BipedPlant(desc, hung=True)


def _limits(desc):
    return (np.array([t.joint.position_limits[0] for t in desc.joints]),
            np.array([t.joint.position_limits[1] for t in desc.joints]))


def _postures(desc, count, seed=1):
    lo, hi = _limits(desc)
    rng = np.random.default_rng(seed)
    return [rng.uniform(lo + 0.05, hi - 0.05) for _ in range(count)]


def _pose(plant, q):
    """The hung plant's MuJoCo state at joint angles q, at rest, forward pass done."""
    m, d = plant.mj_model, plant.mj_data
    d.qpos[plant._qadr] = q
    d.qvel[:] = 0.0
    mujoco.mj_forward(m, d)
    return m, d


def test_mass_cog_and_frames_equal_the_tree_model(hung, tree, desc):
    """Total mass 105 kg; at random postures the CoG, every body frame and every operational frame
    (soles, load cells) equal TreeRobot's (root pelvis, hung GANTRY_HEIGHT above the world origin)."""
    m = hung.mj_model
    pelvis = m.body(desc.base).id
    assert m.body_subtreemass[pelvis] == pytest.approx(MASS, rel=1e-12)
    world = np.eye(4)
    world[2, 3] = GANTRY_HEIGHT
    for q in _postures(desc, 3):
        m, d = _pose(hung, q)
        np.testing.assert_allclose(d.subtree_com[pelvis], (world @ np.append(tree.com(q), 1.0))[:3], atol=1e-12)
        data = tree.kinematics(q)
        poses = {b: data.Tb[tree.model.index("body", b)].copy() for b in desc.body_names}
        poses.update({frame_link(desc, f) or f.body: tree.frame(q, f.name) for f in desc.frames})
        for body, T in poses.items():
            T = world @ T
            i = m.body(body).id
            np.testing.assert_allclose(d.xpos[i], T[:3, 3], atol=1e-12, err_msg=body)
            np.testing.assert_allclose(d.xmat[i].reshape(3, 3), T[:3, :3], atol=1e-12, err_msg=body)


def test_hung_holding_torques_are_the_tree_gravity(tree, desc):
    """Hung, at rest: the joint torques that hold a posture (MuJoCo's inverse dynamics at q̈ = 0) are
    TreeRobot's G(q) with root pelvis, and the motor torques J_p^-T G(q) produce them through the
    tendons. Tolerance 1e-9 N m: both are the rigid-body statics of the same float64 numbers (the
    model is compiled from the spec, not from 6-digit XML), differing only by rounding in sums of
    terms of up to ~300 N m; rotor inertia, damping and friction do not act at rest."""
    tr = desc.transmission
    for q in _postures(desc, 3, seed=2):
        plant = BipedPlant(desc, hung=True, q0=q)          # at rest at q, the tendons at J_p(q)
        m, d = plant.mj_model, plant.mj_data
        gravity = tree.gravity(q)
        d.qacc[:] = 0.0
        mujoco.mj_inverse(m, d)
        np.testing.assert_allclose(d.qfrc_inverse[plant._dadr], gravity, atol=1e-9)
        d.ctrl[:] = tr.torque_to_motor(q, gravity)
        mujoco.mj_forward(m, d)
        np.testing.assert_allclose(d.qfrc_actuator[plant._dadr], gravity, atol=1e-9)
    assert np.abs(gravity).max() > 10.0                  # a posture that loads the joints


def test_motors_map_through_the_transmission_onto_bus_axes_by_name(desc):
    """On a reversed bus order: motor positions/velocities are the transmission's q_m(q), J_p q̇ of the
    joints (bus order by name), MuJoCo's tendon Jacobian is J_p(q) of the step's posture, the joint
    torques are J_pᵀ τ_m, the rotor bias −J_pᵀ J_m J̇_p q̇ is applied, and the tendons add J_pᵀ J_m J_p
    to the mass matrix."""
    tr = desc.transmission
    names = [t.joint.name for t in desc.joints]
    plant = BipedPlant(desc, hung=True, axes=names[::-1])
    m, d = plant.mj_model, plant.mj_data
    ten_j = np.empty((m.ntendon, m.nv))
    rng = np.random.default_rng(3)
    for _ in range(20):
        q_before = plant.sensors["joint_position"].copy()
        tau = rng.uniform(-1.0, 1.0, desc.n)              # bus order
        plant.step(BUS_CYCLE, tau)
        mujoco.mju_sparse2dense(ten_j, d.ten_J, m.ten_J_rownnz, m.ten_J_rowadr, m.ten_J_colind)
        np.testing.assert_allclose(ten_j[:, plant._dadr], tr.jacobian(q_before), atol=1e-12)
        np.testing.assert_allclose(d.qfrc_actuator[plant._dadr], tr.torque_to_joint(q_before, tau[::-1]),
                                   atol=1e-9)
    q, qd = plant.sensors["joint_position"], d.qvel[plant._dadr]
    assert np.abs(qd).max() > 1e-3                       # it moves
    np.testing.assert_allclose(plant.motor_position[::-1], tr.to_motor(q), atol=1e-12)
    np.testing.assert_allclose(plant.motor_velocity[::-1], tr.velocity_to_motor(q, qd), atol=1e-12)
    eps = 1e-6                                           # rotor bias −J_pᵀ J_m J̇_p q̇ for the next step
    jdot_qd = (tr.jacobian(q + eps * qd) - tr.jacobian(q - eps * qd)) @ qd / (2.0 * eps)
    bias = tr.jacobian(q).T @ (np.array(tr.motors.rotor_inertia) * jdot_qd)
    assert np.abs(bias).max() > 1e-6
    np.testing.assert_allclose(d.qfrc_applied[plant._dadr], -bias, rtol=1e-4, atol=1e-9)
    full, bare = np.empty((m.nv, m.nv)), np.empty((m.nv, m.nv))
    mujoco.mj_forward(m, d)
    mujoco.mj_fullM(m, d, full)
    armature = m.tendon_armature.copy()
    m.tendon_armature[:] = 0.0
    mujoco.mj_forward(m, d)
    mujoco.mj_fullM(m, d, bare)
    m.tendon_armature[:] = armature
    dofs = np.ix_(plant._dadr, plant._dadr)
    np.testing.assert_allclose(full[dofs] - bare[dofs], tr.rotor_inertia(q), atol=1e-12)


def _holder(plant, desc, q_ref, kp=3000.0, kd=150.0):
    """Joint PD to q_ref through the transmission (τ_m = J_p^-T (kp (q_ref − q) − kd q̇)), from the
    encoders only (bus order = joint order)."""
    tr = desc.transmission

    def torque(out):
        q = plant.sensors["joint_position"]
        qd = tr.velocity_to_joint(q, plant.motor_velocity)
        out[:] = tr.torque_to_motor(q, kp * (q_ref - q) - kd * qd)
    return torque


def _run(plant, torque, seconds, trace=None):
    tau = np.zeros(plant.n_motors)
    for _ in range(round(seconds / BUS_CYCLE)):
        torque(tau)
        plant.step(BUS_CYCLE, tau)
        if trace is not None:
            trace.append(np.concatenate([plant.motor_position, plant.motor_velocity,
                                         *[np.atleast_1d(v) for v in plant.sensors.values()]]))


def _inside(point, polygon, count):
    """Signed distance of ``point`` to the nearest edge of a counter-clockwise convex polygon (> 0 inside)."""
    p = polygon.reshape(8, 2)[:count]
    edges = np.roll(p, -1, axis=0) - p
    rel = point - p
    return np.min((edges[:, 0] * rel[:, 1] - edges[:, 1] * rel[:, 0]) / np.linalg.norm(edges, axis=1))


@pytest.fixture(scope="module")
def standing(desc):
    plant = BipedPlant(desc)
    _run(plant, _holder(plant, desc, flexed_posture(desc)), 1.0)
    return plant


def test_standing_on_eight_load_cells(standing, desc):
    """Held in the flexed posture on the floor: the eight cells carry m g ±1 %, both feet are in
    contact, the ZMP from the cells is the CoG's projection (static equilibrium) and lies inside the
    support polygon (both soles' hull), nothing has fallen."""
    s = standing.sensors
    assert s["foot_forces"].sum() == pytest.approx(MASS * G, rel=0.01)
    assert s["foot_load"].sum() == pytest.approx(s["foot_forces"].sum(), rel=1e-12)
    np.testing.assert_array_equal(s["contact"], [1.0, 1.0])
    np.testing.assert_allclose(s["zmp"], s["com_world"][:2], atol=2e-3)
    assert s["support_count"] >= 4
    assert _inside(s["zmp"], s["support_polygon"], int(s["support_count"])) > 0.03
    np.testing.assert_allclose(s["foot_lift"], 0.0, atol=2e-3)
    np.testing.assert_allclose(s["imu_gravity"], [0.0, 0.0, G], atol=0.05 * G)
    assert s["fallen"] == 0.0


def test_a_push_fells_it_and_fallen_latches(desc):
    """A 40 N shove on the pelvis does not fell the held robot; a 400 N one for 0.3 s does, and
    ``fallen`` stays latched, even with the robot put back upright, until reset."""
    plant = BipedPlant(desc)
    hold = _holder(plant, desc, flexed_posture(desc))
    _run(plant, hold, 0.2)
    upright = plant.mj_data.qpos.copy()
    assert plant.control({"op": "push", "body": "pelvis", "force": [40.0, 0.0, 0.0], "duration": 0.3}) == {"ok": True}
    _run(plant, hold, 1.0)
    assert plant.sensors["fallen"] == 0.0
    assert plant.control({"op": "push", "force": [400.0, 0.0, 0.0], "duration": 0.3}) == {"ok": True}
    _run(plant, hold, 2.0)
    assert plant.sensors["fallen"] == 1.0
    assert plant.sensors["tilt"] > math.radians(30.0) or plant.sensors["pelvis_height"] < 0.65
    plant.mj_data.qpos[:] = upright                      # back on its feet: still fallen
    plant.mj_data.qvel[:] = 0.0
    _run(plant, hold, BUS_CYCLE)
    assert plant.sensors["tilt"] < 0.05 and plant.sensors["fallen"] == 1.0
    plant.reset()
    assert plant.sensors["fallen"] == 0.0
    assert "unknown body" in plant.control({"op": "push", "body": "hip", "force": [1, 0, 0], "duration": 1})["error"]


def test_the_gyro_is_the_pelvis_rate(desc):
    """The IMU's rate gyro (``imu_rate``, pelvis axes) while a shove forward and to the left (25 and 15 N·s)
    rocks the held robot about two axes (a world-axes rate would differ by the tilt times the rate): MuJoCo
    integrates the orientation with the step's new velocity (semi-implicit), so the turn of its own
    orientation sensor between consecutive steps, log(R_k' R_k+1) / dt, is the next gyro reading within
    1e-9 rad/s (the pelvis turning at > 0.1 rad/s)."""
    plant = BipedPlant(desc)
    hold = _holder(plant, desc, flexed_posture(desc))
    _run(plant, hold, 0.1)
    plant.control({"op": "push", "force": [250.0, 150.0, 0.0], "duration": 0.1})
    R, w, tau = [], [], np.zeros(plant.n_motors)
    for _ in range(round(0.4 / BUS_CYCLE)):
        hold(tau)
        plant.step(BUS_CYCLE, tau)
        m = np.zeros(9)
        mujoco.mju_quat2Mat(m, plant.sensors["imu_orientation"])
        R.append(m.reshape(3, 3))
        w.append(plant.sensors["imu_rate"].copy())
    err = 0.0
    for k in range(len(R) - 1):
        D = R[k].T @ R[k + 1]
        angle = math.acos(min(1.0, (np.trace(D) - 1) / 2))
        axis = np.array([D[2, 1] - D[1, 2], D[0, 2] - D[2, 0], D[1, 0] - D[0, 1]])
        rate = axis * (angle / (2 * math.sin(angle)) if angle > 1e-12 else 0.5) / BUS_CYCLE
        err = max(err, np.abs(rate - w[k + 1]).max())
    assert np.abs(w).max() > 0.1
    assert err < 1e-9, err


def test_deterministic(desc):
    """Two plants under the same torques and push: bit-identical motors and sensors."""
    traces = []
    for _ in range(2):
        plant = BipedPlant(desc)
        hold = _holder(plant, desc, flexed_posture(desc))
        trace = []
        _run(plant, hold, 0.1, trace)
        plant.control({"op": "push", "force": [0.0, 150.0, 0.0], "duration": 0.1})
        _run(plant, hold, 0.2, trace)
        traces.append(np.array(trace))
    np.testing.assert_array_equal(traces[0], traces[1])


def test_sensor_names_are_the_documented_layout(hung, desc):
    assert set(hung.sensors) == {"joint_position"} | {name for name, _ in TRUTH}
    assert hung.sensors["fallen"].shape == () and hung.sensors["joint_position"].shape == (desc.n,)
    np.testing.assert_array_equal(hung.sensors["contact"], [0.0, 0.0])     # the feet hang in the air
    assert np.all(hung.sensors["foot_lift"] > 0.2) and hung.sensors["support_count"] == 0


def test_bad_inputs_are_named(desc):
    names = [t.joint.name for t in desc.joints]
    with pytest.raises(BusConfigError, match=r"missing \['trunk_pitch'\], unexpected \['neck'\]"):
        BipedPlant(desc, hung=True, axes=names[:-1] + ["neck"])
    with pytest.raises(BipedPlantError, match="q0 must be 15 joint angles within the limits"):
        BipedPlant(desc, hung=True, q0=np.full(desc.n, 3.0))
    q = flexed_posture(desc)
    q[3] += 0.2                                          # left knee: the left sole no longer flat
    with pytest.raises(BipedPlantError, match="must put both soles flat at one height"):
        BipedPlant(desc, q0=q)
    with pytest.raises(MjcfError, match="timestep must be a finite number > 0"):
        build_biped(desc, desc.transmission, q, hung=True, timestep=0.0)
    plant = BipedPlant(desc, hung=True)
    tau = np.zeros(desc.n)
    tau[4] = np.nan
    with pytest.raises(TransmissionFault, match="a motor torque is not finite"):
        plant.step(BUS_CYCLE, tau)
    plant.mj_data.qvel[plant._dadr[3]] = np.inf
    with pytest.raises(SimulationError, match="biped plant diverged at t = "):
        plant.step(BUS_CYCLE, np.zeros(desc.n))
