"""The exported URDF's visual and collision geometry read back by Pinocchio's URDF reader (with
coal): every shape present in both lists, each capsule's cylinder and end spheres landing on its
body's origin and on its tip (a child joint's origin, an operational frame, a sole raised by the
box and a radius) at random postures, the sole boxes on the sole faces over the outline's bounding
rectangle, the materials one per sub-tree. BIP 2000 (tree, feet) and the bench leg (chain)."""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from models.geometry import LINK_RADIUS, SOLE_THICKNESS, link_capsules, materials, sole_box
from models.tree.config import load_tree
from models.urdf import to_urdf

from tests.assertions import close_within
from tests.models.chains import BIP_LEG
from tests.models.trees import BIP2000

close = close_within(1e-9)


def read(path, tmp_path):
    """(description, Pinocchio model, visual and collision models) of the exported URDF."""
    desc = load_tree(path)
    urdf = tmp_path / "robot.urdf"
    urdf.write_text(to_urdf(desc))
    model = pin.buildModelFromUrdf(str(urdf))
    geoms = [pin.buildGeomFromUrdf(model, str(urdf), kind) for kind in (pin.GeometryType.VISUAL,
                                                                     pin.GeometryType.COLLISION)]
    return desc, model, geoms


def pieces(desc):
    """The URDF pieces the geometry should hold, per link in element order: (kind, shape)."""
    out = {name: [] for name in desc.body_names}
    for c in link_capsules(desc):
        length = np.linalg.norm(c.end - c.start)
        out[c.body] += [("cylinder", c), ("start", c), ("end", c)] if length > 0 else [("sphere", c)]
    for foot in desc.feet:
        box = sole_box(desc, foot)
        out[box.body].append(("box", box))
    return out


def world_point(data, model, frame, p):
    return data.oMf[model.getFrameId(frame, pin.FrameType.BODY)].act(np.asarray(p, dtype=float))


@pytest.mark.parametrize("path", [BIP2000, BIP_LEG])
def test_shapes_present_and_placed(path, tmp_path):
    desc, model, geoms = read(path, tmp_path)
    expected = pieces(desc)
    n = sum(len(v) for v in expected.values())
    assert n > 2 * desc.n
    data = model.createData()
    rng = np.random.default_rng(3)
    lo, hi = model.lowerPositionLimit, model.upperPositionLimit
    for geom in geoms:
        assert geom.ngeoms == n
        gdata = pin.GeometryData(geom)
        for _ in range(5):
            q = rng.uniform(lo, hi)
            pin.framesForwardKinematics(model, data, q)
            pin.updateGeometryPlacements(model, data, geom, gdata)
            k = 0
            for body in desc.body_names:
                for kind, shape in expected[body]:
                    obj, M = geom.geometryObjects[k], gdata.oMg[k]
                    k += 1
                    assert model.frames[obj.parentFrame].name == body
                    if kind == "box":
                        assert isinstance(obj.geometry, pin.hppfcl.Box)
                        close(obj.geometry.halfSide, shape.half)
                        continue
                    start = world_point(data, model, body, shape.start)
                    end = world_point(data, model, body, shape.end)
                    if kind == "cylinder":
                        assert isinstance(obj.geometry, pin.hppfcl.Cylinder)
                        h = obj.geometry.halfLength
                        close(obj.geometry.radius, LINK_RADIUS)
                        close(M.act(np.array([0, 0, -h])), start)
                        close(M.act(np.array([0, 0, h])), end)
                    else:
                        assert isinstance(obj.geometry, pin.hppfcl.Sphere)
                        close(M.translation, end if kind == "end" else start)
            assert k == n


def test_capsule_tips_are_the_children(tmp_path):
    """Each leg capsule ends on the child joint's origin as Pinocchio places it; the foot's ends on
    its sole's normal, SOLE_THICKNESS + LINK_RADIUS above the sole face; the trunk's on its frame."""
    desc, model, _ = read(BIP2000, tmp_path)
    data = model.createData()
    q = np.random.default_rng(5).uniform(model.lowerPositionLimit, model.upperPositionLimit)
    pin.framesForwardKinematics(model, data, q)
    tips = {c.name: world_point(data, model, c.body, c.end) for c in link_capsules(desc)}
    assert len(tips) >= 14
    for t in desc.joints:
        name = f"{t.parent}_to_{t.child}"
        if name in tips:
            close(tips[name], data.oMi[model.getJointId(t.joint.name)].translation)
    sole = data.oMf[model.getFrameId("left_sole", pin.FrameType.BODY)]
    close(tips["l_foot_to_left_sole"], sole.act(np.array([0.0, 0.0, SOLE_THICKNESS + LINK_RADIUS])))
    close(tips["trunk_to_trunk"], world_point(data, model, "trunk", [0.30, 0.0, 0.0]))


def test_sole_boxes_on_the_soles(tmp_path):
    """The box's bottom corners, in the sole frame: z = 0 and the outline's bounding rectangle."""
    desc, model, (_, collision) = read(BIP2000, tmp_path)
    data = model.createData()
    gdata = pin.GeometryData(collision)
    q = np.random.default_rng(9).uniform(model.lowerPositionLimit, model.upperPositionLimit)
    pin.framesForwardKinematics(model, data, q)
    pin.updateGeometryPlacements(model, data, collision, gdata)
    boxes = [k for k, g in enumerate(collision.geometryObjects) if isinstance(g.geometry, pin.hppfcl.Box)]
    assert len(boxes) == 2
    for k, foot in zip(boxes, desc.feet):
        half = collision.geometryObjects[k].geometry.halfSide
        corners = np.array([gdata.oMg[k].act(half * [sx, sy, -1]) for sx in (-1, 1) for sy in (-1, 1)])
        local = np.array([data.oMf[model.getFrameId(foot.frame, pin.FrameType.BODY)].actInv(c) for c in corners])
        outline = np.array(foot.outline)
        close(local[:, 2], 0.0)
        close(local[:, :2].min(axis=0), outline.min(axis=0))
        close(local[:, :2].max(axis=0), outline.max(axis=0))
        close(2 * half[2], SOLE_THICKNESS)


def test_materials_per_subtree(tmp_path):
    """Each visual carries its sub-tree's colour (Pinocchio reads the material's rgba); the legs and
    the trunk differ from each other and from the pelvis."""
    desc, model, (visual, _) = read(BIP2000, tmp_path)
    paint = materials(desc)
    colours = {}
    for obj in visual.geometryObjects:
        body = model.frames[obj.parentFrame].name
        np.testing.assert_allclose(obj.meshColor, paint[body][1], atol=1e-7)    # float32 in Pinocchio
        colours.setdefault(paint[body][0], tuple(obj.meshColor))
    assert set(colours) == {"pelvis", "left_leg", "right_leg", "trunk"}
    assert len(set(colours.values())) == 4
