"""MJCF import (MuJoCo's compiler, then the URDF importer) against MuJoCo's own model of the same
file: every body's pose and Jacobian, the CoG, A (mj_fullM), G (qfrc_bias at rest) and the RNEA
torque (mj_rne, plus armature, damping and frictionloss) to 1e-9 at random states. The MJCFs are those
MuJoCo's compiler writes from the URDFs of the UR5, Talos and the Unitree G1, and one written
here whose joints sit off their bodies' origins on oblique axes, with a slide joint, armature,
damping and frictionloss."""
from __future__ import annotations

import re

import numpy as np
import pytest
import yaml

mujoco = pytest.importorskip("mujoco")

from models.importers.mjcf import import_mjcf                # noqa: E402
from models.importers.urdf import UrdfError                  # noqa: E402
from models.tree.config import tree_from_dict                # noqa: E402
from models.tree.robot import TreeRobot                      # noqa: E402
from tests.models.importers.test_urdf_import import err, robot_file   # noqa: E402

TOL = 1e-9
OFFSET = """<mujoco model="offset"><option gravity="0.3 -0.2 -9.8"/><worldbody>
<body name="b1" pos="0.1 0.2 0.3" quat="0.9 0.1 -0.3 0.2">
  <inertial pos="0.05 0.01 -0.02" quat="0.7 0.2 0.1 0.6" mass="2.5" diaginertia="0.03 0.02 0.025"/>
  <joint name="j1" type="hinge" pos="0.04 -0.03 0.02" axis="0.3 0.5 0.8" range="-2 2" damping="0.7"
         frictionloss="0.4" armature="0.05" actuatorfrcrange="-40 40"/>
  <body name="b2" pos="0.3 0 0.1" quat="0.5 0.5 -0.5 0.5">
    <inertial pos="0.1 0 0" mass="1.5" diaginertia="0.01 0.012 0.015"/>
    <joint name="j2" type="slide" pos="0.0 0.05 -0.02" axis="-0.2 0.9 0.1" range="-0.3 0.4" damping="1.1"/>
    <body name="b3" pos="0 0.2 0"><inertial pos="0 0.05 0.02" mass="0.8" diaginertia="0.004 0.005 0.006"/>
      <joint name="j3" pos="0.01 0.02 0.03" axis="1 0 0"/></body>
  </body>
</body></worldbody>
<actuator><motor joint="j3" gear="2" forcerange="-5 5" forcelimited="true"/></actuator></mujoco>"""


def mjcf_of(urdf_name: str, tmp_path) -> str:
    """The MJCF MuJoCo's compiler writes from a URDF of example-robot-data (meshes left out)."""
    text = re.sub(r"<(visual|collision)>.*?</\1>", "", open(robot_file(urdf_name)).read(), flags=re.S)
    text = re.sub(r"(<robot[^>]*>)", r'\1<mujoco><compiler fusestatic="false" balanceinertia="false" '
                  r'discardvisual="true"/></mujoco>', text, count=1)
    path = str(tmp_path / "robot.xml")
    mujoco.mj_saveLastXML(path, mujoco.MjModel.from_xml_string(text))
    return path


def worst_errors(path: str, states: int = 5, seed: int = 3) -> dict[str, float]:
    robot = TreeRobot(tree_from_dict(yaml.safe_load(import_mjcf(path, velocity=3.0, effort=100.0)), path))
    m = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(m)
    p = np.array([robot.model.index("joint", mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j))
                  for j in range(m.njnt)])
    assert robot.n == m.nv == m.njnt
    rng, out = np.random.default_rng(seed), dict.fromkeys(("FK", "J", "CoG", "A", "G", "RNEA"), 0.0)
    for _ in range(states):
        q = rng.uniform(np.maximum(robot.model.qmin, -3.0), np.minimum(robot.model.qmax, 3.0))
        qd, qdd = rng.normal(0, 1.5, robot.n), rng.normal(0, 3.0, robot.n)
        d.qpos[:], d.qvel[:] = q[p], 0.0
        mujoco.mj_forward(m, d)
        kin = robot.kinematics(q)
        for b in range(1, m.nbody):
            name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b)
            owner = next((f.body for f in robot.description.frames if f.name == name), name)
            T = kin.Tb[robot.model.index("body", owner)]
            # the MuJoCo body frame: its link frame moved back from the joint anchor
            anchor = m.jnt_pos[m.body_jntadr[b]] if m.body_jntnum[b] else np.zeros(3)
            pose = T @ _frame_in_owner(robot, name, owner) @ _shift(-anchor)
            out["FK"] = max(out["FK"], err(pose[:3, 3], d.xpos[b]), err(pose[:3, :3], d.xmat[b].reshape(3, 3)))
            jp, jr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
            mujoco.mj_jacBody(m, d, jp, jr, b)
            ours = robot.point_jacobian(q, owner, (_frame_in_owner(robot, name, owner) @ _shift(-anchor))[:3, 3])
            out["J"] = max(out["J"], err(ours[:, p], np.vstack([jp, jr])))
        out["CoG"] = max(out["CoG"], err(robot.com(q), d.subtree_com[0]))
        M = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, M)
        out["A"] = max(out["A"], err(robot.inertia(q)[np.ix_(p, p)], M))
        g = np.asarray(m.opt.gravity)
        out["G"] = max(out["G"], err(robot.gravity(q, g)[p], d.qfrc_bias))
        d.qvel[:] = qd[p]
        mujoco.mj_forward(m, d)
        d.qacc[:] = qdd[p]
        tau = np.zeros(m.nv)
        mujoco.mj_rne(m, d, 1, tau)
        tau += m.dof_armature * qdd[p] + m.dof_damping * qd[p] + m.dof_frictionloss * np.sign(qd[p])   # not in mj_rne
        out["RNEA"] = max(out["RNEA"], err(robot.rnea(q, qd, qdd, g)[p], tau))
    return out


def _shift(v) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = v
    return T


def _frame_in_owner(robot: TreeRobot, name: str, owner: str) -> np.ndarray:
    """A link's frame in its body's frame: an operational frame of its name, else the body's own."""
    frames = {f.name: f for f in robot.description.frames}
    return np.array(frames[name].pose) if name in frames else np.eye(4)


@pytest.mark.parametrize("urdf", ["ur_description/urdf/ur5_robot.urdf", "talos_data/robots/talos_reduced.urdf",
                                  "g1_description/urdf/g1_29dof_rev_1_0.urdf", None])
def test_imported_mjcf_matches_mujoco(urdf, tmp_path):
    if urdf is None:
        path = tmp_path / "offset.xml"
        path.write_text(OFFSET)
        path = str(path)
    else:
        path = mjcf_of(urdf, tmp_path)
    errors = worst_errors(path)
    print(urdf or "offset", " ".join(f"{k} {v:.1e}" for k, v in errors.items()))
    assert max(errors.values()) < TOL, errors


def test_mjcf_values_carried(tmp_path):
    """Armature, damping, frictionloss, limits and efforts (actuatorfrcrange; an actuator's forcerange
    times its gear) reach the YAML; gravity is MuJoCo's."""
    path = tmp_path / "offset.xml"
    path.write_text(OFFSET)
    doc = yaml.safe_load(import_mjcf(str(path), velocity=3.0, effort=7.0))
    j = {e["name"]: e for e in doc["joints"]}
    assert doc["gravity"] == [0.3, -0.2, -9.8]
    assert j["j1"]["armature"] == 0.05 and j["j1"]["friction"] == {"viscous": 0.7, "coulomb": 0.4}
    assert j["j1"]["limits"]["torque"] == 40.0 and j["j3"]["limits"]["torque"] == 10.0
    assert j["j2"]["type"] == "prismatic" and j["j2"]["limits"]["position"] == [-0.3, 0.4]
    assert j["j3"]["limits"]["position"] == [-1000.0, 1000.0]           # unlimited hinge: continuous


@pytest.mark.parametrize("body, message", [
    ('<body name="b"><freejoint name="f"/><geom size="0.1"/></body>', "joint 'f' is a free joint"),
    ('<body name="b"><joint name="k" type="ball"/><geom size="0.1"/></body>', "joint 'k' is a ball joint"),
    ('<body name="b"><joint name="x" axis="1 0 0"/><joint name="y" axis="0 1 0"/><geom size="0.1"/></body>',
     "body 'b' carries 2 joints ['x', 'y']"),
    ('<body name="b"><joint name="s" type="slide"/><geom size="0.1"/></body>',
     "joint 's': a slide joint needs a range"),
    ('<body name="b"><joint name="h"/><geom size="0.1"/></body>', "joint 'h': no actuatorfrcrange"),
])
def test_unimportable_mjcf_names_the_joint(tmp_path, body, message):
    path = tmp_path / "bad.xml"
    path.write_text(f"<mujoco><worldbody>{body}</worldbody></mujoco>")
    with pytest.raises(UrdfError, match=re.escape(message)):
        import_mjcf(str(path), velocity=1.0)
