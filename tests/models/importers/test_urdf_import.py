"""URDFs of real robots (example-robot-data, written by their makers) imported into the robot
YAML give Pinocchio's FK of every link, frame Jacobians, CoG, A, G and RNEA on the same URDF
(fixed base) to 1e-9 at random states: Talos (legs alone, reduced, full less its grippers), the
whole Unitree G1, Romeo's upper body
(axes off every frame axis), ANYmal C (65 fixed joints), TIAGo (prismatic and continuous
joints), a UR5 and the SO-100 and SO-101 arms (axes a hair off parallel: placements)."""
from __future__ import annotations

import dataclasses
import importlib.metadata
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import yaml

pin = pytest.importorskip("pinocchio")

from models.importers.urdf import import_urdf, parse_urdf   # noqa: E402
from models.tree.config import tree_from_dict                # noqa: E402
from models.tree.robot import TreeRobot                      # noqa: E402
from models.urdf import frame_link, to_urdf                   # noqa: E402
from tests.models.trees import BIP2000                        # noqa: E402

TOL = 1e-9


def robot_file(name: str) -> str:
    """Path of a URDF shipped by example-robot-data (its files, not a module, hold them)."""
    try:
        files = importlib.metadata.files("example-robot-data") or []
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("example-robot-data is not installed (pip install example-robot-data)")
    hits = [str(f.locate()) for f in files if str(f).endswith("robots/" + name)]
    assert len(hits) == 1, f"{name}: {hits}"
    return hits[0]


def pruned(text: str, root_link: str | None, cut: tuple[str, ...]) -> str:
    """The URDF reduced to the links below ``root_link`` (default: its root) without the joints ``cut``
    and what hangs from them; what is kept is as written."""
    root = ET.fromstring(text)
    joints = [j for j in root.findall("joint") if j.get("name") not in cut]
    assert len(joints) == len(root.findall("joint")) - len(cut)
    children = {j.find("child").get("link") for j in root.findall("joint")}
    top = root_link or next(link.get("name") for link in root.findall("link") if link.get("name") not in children)
    keep, todo = {top}, [top]
    while todo:
        parent = todo.pop()
        for j in joints:
            if j.find("parent").get("link") == parent:
                keep.add(j.find("child").get("link"))
                todo.append(j.find("child").get("link"))
    for el in root.findall("joint") + root.findall("link"):
        name = el.find("child").get("link") if el.tag == "joint" else el.get("name")
        if name not in keep or (el.tag == "joint" and (el.get("name") in cut or name == top)):
            root.remove(el)
    return ET.tostring(root, encoding="unicode")


# name: (file, root link, joints whose subtree is left out). Left out, as the importer refuses them
# (one line each): the full Talos's grippers (mimic joints), Romeo's pelvis and legs (its
# base_link's inertia is not positive semi-definite), left arm (two inertias break the triangle
# inequality) and grippers (massless links on a joint).
ROBOTS = {
    "talos_legs": ("talos_data/robots/talos_reduced.urdf", None, ("torso_1_joint",)),
    "talos": ("talos_data/robots/talos_reduced.urdf", None, ()),
    "talos_full": ("talos_data/robots/talos_full_v2.urdf", None,
                   ("gripper_left_base_link_joint", "gripper_right_base_link_joint")),
    "g1": ("g1_description/urdf/g1_29dof_rev_1_0.urdf", None, ()),
    "romeo_upper": ("romeo_description/urdf/romeo_laas_small.urdf", "torso",
                    ("LShoulderPitch_joint", "r_gripper_joint")),
    "anymal_c": ("anymal_c_simple_description/urdf/anymal.urdf", None, ()),
    "tiago": ("tiago_description/robots/tiago_no_hand.urdf", None, ()),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", None, ()),
    "so100": ("so_arm_description/urdf/so100.urdf", None, ()),
    "so101": ("so_arm_description/urdf/so101.urdf", None, ()),
}
PLACED = {"so100": ["shoulder_pan"], "so101": ["shoulder_pan"]}    # the joints whose placement is kept


def load(name: str):
    """(TreeRobot imported with the importer's own root and cut, Pinocchio's model of the URDF
    pruned here to the same links, the pruned URDF text)."""
    file, root, cut = ROBOTS[name]
    text = open(robot_file(file)).read()
    doc = yaml.safe_load(import_urdf(text, file, root, cut=cut))
    if root or cut:
        text = pruned(text, root, cut)
    return TreeRobot(tree_from_dict(doc, file)), pin.buildModelFromXML(text), text


def random_state(robot: TreeRobot, model, rng):
    """Our q, qd, qdd within the limits and Pinocchio's q (cos, sin for a continuous joint), and
    the map from Pinocchio's v indices to ours."""
    q = rng.uniform(np.maximum(robot.model.qmin, -3.0), np.minimum(robot.model.qmax, 3.0))
    qd, qdd = rng.normal(0, 1.5, robot.n), rng.normal(0, 3.0, robot.n)
    qp, perm = pin.neutral(model), np.zeros(model.nv, dtype=int)
    for j in range(1, model.njoints):
        k = robot.model.index("joint", model.names[j])
        perm[model.joints[j].idx_v] = k
        i = model.joints[j].idx_q
        if model.joints[j].nq == 2:
            qp[i:i + 2] = np.cos(q[k]), np.sin(q[k])
        else:
            qp[i] = q[k]
    return q, qd, qdd, qp, perm


def err(ours, ref) -> float:
    """Largest difference relative to max(1, the reference's largest entry)."""
    ref = np.asarray(ref)
    return float(np.abs(np.asarray(ours) - ref).max() / max(1.0, float(np.abs(ref).max())))


def worst_errors(name: str, states: int = 10, seed: int = 5) -> dict[str, float]:
    """The worst error per quantity between the imported YAML's models and Pinocchio's."""
    robot, model, text = load(name)
    assert sorted(model.names[1:]) == sorted(robot.model.joint_names)
    placed = [t.joint.name for t in robot.description.joints if t.placement is not None]
    assert placed == PLACED.get(name, []), "KK parameters hold every placement but a hair-off-parallel axis's"
    data, rng = model.createData(), np.random.default_rng(seed)
    links = list(parse_urdf(text, name).links)
    total = sum(model.inertias[i].mass for i in range(model.njoints))
    out = dict.fromkeys(("FK", "J", "CoG", "A", "G", "RNEA"), 0.0)
    for _ in range(states):
        q, qd, qdd, qp, p = random_state(robot, model, rng)
        pin.forwardKinematics(model, data, qp)
        pin.updateFramePlacements(model, data)
        pin.computeJointJacobians(model, data, qp)
        d = robot.kinematics(q)
        for link in links:
            f = model.getFrameId(link, pin.BODY)
            if link in robot.model.frame_names:
                T, J = d.Tf[robot.model.index("frame", link)], d.Jf[robot.model.index("frame", link)]
            else:                                       # a body whose frame is its link's
                T, J = d.Tb[robot.model.index("body", link)], robot.point_jacobian(q, link, np.zeros(3))
            out["FK"] = max(out["FK"], err(T, data.oMf[f].homogeneous))
            Jp = pin.getFrameJacobian(model, data, f, pin.LOCAL_WORLD_ALIGNED)
            out["J"] = max(out["J"], err(J[:, p], Jp))
        # Pinocchio's centre of mass leaves out the fixed base's own inertia (model.inertias[0])
        base = model.inertias[0]
        com = (pin.centerOfMass(model, data, qp) * (total - base.mass) + base.mass * base.lever) / total
        out["CoG"] = max(out["CoG"], err(robot.com(q), com))
        A = pin.crba(model, data, qp)
        out["A"] = max(out["A"], err(robot.inertia(q)[np.ix_(p, p)], np.triu(A) + np.triu(A, 1).T))
        out["G"] = max(out["G"], err(robot.gravity(q)[p], pin.computeGeneralizedGravity(model, data, qp)))
        tau = pin.rnea(model, data, qp, qd[p], qdd[p]) + model.damping * qd[p] + model.friction * np.sign(qd[p])
        out["RNEA"] = max(out["RNEA"], err(robot.rnea(q, qd, qdd)[p], tau))
    return out


@pytest.mark.parametrize("name", list(ROBOTS))
def test_imported_robot_matches_pinocchio(name):
    errors = worst_errors(name)
    print(name, " ".join(f"{k} {v:.1e}" for k, v in errors.items()))
    assert max(errors.values()) < TOL, errors


@pytest.mark.parametrize("name, joint", [("so100", "shoulder_pan"), ("so101", "shoulder_pan")])
def test_axis_a_hair_off_parallel_keeps_a_placement(name, joint):
    """An axis 4e-4 degrees off its parent's puts the common normal 7 km away: the joint keeps its
    URDF placement (zero KK parameters after it) and the others their KK parameters."""
    file, _, _ = ROBOTS[name]
    doc = yaml.safe_load(import_urdf(open(robot_file(file)).read(), file))
    held = {j["name"] for j in doc["joints"] if "placement" in j}
    assert joint in held and len(held) < len(doc["joints"])
    assert all(abs(v) < 10.0 for j in doc["joints"] for v in j["mdh"].values())


def test_export_then_import_gives_bip2000_back():
    """bipd export urdf then bipd import urdf: the joints (order, parents, KK parameters, limits,
    friction, armature from the export's comments), the bodies, gravity (a comment too), the frames and, with the
    soles as --feet, the roots of deploy/robots/bip2000.yaml. Not in a URDF, so not compared: the
    feet outlines, sub-trees, transmission, and the frame 'pelvis' at its namesake body's origin."""
    doc = yaml.safe_load(BIP2000.read_text())
    doc["gravity"] = [0.5, -1.25, -9.7]          # a tilted floor: read back from the export's comment
    for k, j in enumerate(doc["joints"]):
        j["armature"] = 0.3 + 0.05 * k
    ours = tree_from_dict(doc, "bip2000")
    back = tree_from_dict(yaml.safe_load(import_urdf(to_urdf(ours), "bip2000.urdf",
                                                     feet=("left_sole", "right_sole"))), "back")
    assert (back.name, back.gravity, back.base, back.roots) == (ours.name, ours.gravity, ours.base, ours.roots)
    assert back.bodies == ours.bodies
    for a, b in zip(ours.joints, back.joints, strict=True):
        assert (b.joint.name, b.parent, b.child, b.placement) == (a.joint.name, a.parent, a.child, None)
        assert dataclasses.replace(b.joint, mdh=a.joint.mdh) == a.joint       # limits, friction, armature, body
        kk = np.array([b.gamma, b.b, *dataclasses.astuple(b.joint.mdh)])
        np.testing.assert_allclose(kk, [a.gamma, a.b, *dataclasses.astuple(a.joint.mdh)], rtol=0, atol=1e-15)
    kept = [f for f in ours.frames if frame_link(ours, f) is not None]
    assert [f.name for f in back.frames] == [f.name for f in kept]
    for a, b in zip(kept, back.frames):
        assert a.body == b.body
        np.testing.assert_allclose(b.pose, a.pose, rtol=0, atol=1e-15)
