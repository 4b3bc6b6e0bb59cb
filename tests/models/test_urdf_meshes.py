"""Meshes named in the robot YAML: validated (one sentence naming the body and the key), exported as
URDF ``<mesh>`` elements that Pinocchio's URDF reader places on their bodies, as MJCF mesh assets
that MuJoCo compiles, kept by ``bipd import urdf`` (our own URDF round trip, and a real robot's:
Talos of example-robot-data, whose visuals are ``package://`` meshes, posed by Pinocchio from both
URDFs alike)."""
from __future__ import annotations

import importlib.metadata
import os
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import yaml

from models.common.errors import ConfigError
from models.importers.urdf import import_urdf
from models.tree.config import load_tree, mesh_file
from models.urdf import to_urdf

from tests.models.trees import BIP2000

pin = pytest.importorskip("pinocchio")

TETRA = np.array([[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.0, 0.1, 0.0], [0.0, 0.0, 0.1]])
FACES = ((0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3))
VISUAL = {"mesh": "meshes/pelvis.obj", "scale": [2.0, 1.5, -1.0],
          "origin": {"xyz": [0.01, -0.02, 0.1], "rpy": [0.1, 0.2, 0.3]}}
COLLISION = {"mesh": "meshes/shank.stl", "origin": {"xyz": [0.0, 0.0, -0.2], "rpy_deg": [0.0, 90.0, 0.0]}}


def _write_meshes(folder: Path) -> None:
    """A tetrahedron as OBJ and as binary STL."""
    folder.mkdir()
    (folder / "pelvis.obj").write_text("".join(f"v {x} {y} {z}\n" for x, y, z in TETRA)
                                       + "".join(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in FACES))
    body = b"".join(struct.pack("<12fH", *np.cross(TETRA[b] - TETRA[a], TETRA[c] - TETRA[a]),
                                *TETRA[a], *TETRA[b], *TETRA[c], 0) for a, b, c in FACES)
    (folder / "shank.stl").write_bytes(b"\0" * 80 + struct.pack("<I", len(FACES)) + body)


def _robot(tmp_path: Path, **edits) -> Path:
    """BIP 2000 with a visual mesh on the pelvis and a collision mesh on the left shank (``edits``
    replace either entry: key 'visual' or 'collision'), meshes beside the YAML."""
    _write_meshes(tmp_path / "meshes")
    doc = yaml.safe_load(Path(BIP2000).read_text())
    doc["base"]["visual"] = edits.get("visual", VISUAL)
    shank = next(j for j in doc["joints"] if j["body"]["name"] == "l_shank")
    shank["body"]["collision"] = [edits.get("collision", COLLISION)]
    path = tmp_path / "robot.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _urdf_pose(xyz, rpy) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = pin.rpy.rpyToMatrix(*rpy)
    T[:3, 3] = xyz
    return T


def test_meshes_are_read_with_their_paths_scales_and_poses(tmp_path):
    desc = load_tree(_robot(tmp_path))
    (visual,) = desc.shapes["pelvis"].visual
    assert visual.filename == str(tmp_path / "meshes/pelvis.obj") and visual.scale == (2.0, 1.5, -1.0)
    np.testing.assert_allclose(visual.pose, _urdf_pose([0.01, -0.02, 0.1], [0.1, 0.2, 0.3]), atol=1e-15)
    (collision,) = desc.shapes["l_shank"].collision
    np.testing.assert_allclose(collision.pose, _urdf_pose([0, 0, -0.2], [0, np.pi / 2, 0]), atol=1e-15)
    assert desc.shapes["l_shank"].visual == () and set(desc.shapes) == {"pelvis", "l_shank"}


@pytest.mark.parametrize("edit, message", [
    ({"visual": {"mesh": "meshes/none.obj"}}, "base.visual.mesh: body 'pelvis': mesh file '{tmp}/meshes/none.obj' does not exist"),
    ({"visual": {"mesh": "meshes/pelvis.ply"}}, "base.visual.mesh: body 'pelvis': 'meshes/pelvis.ply' is not one of"),
    ({"visual": {"mesh": "meshes/pelvis.obj", "scale": [1, 0, 1]}}, "base.visual.scale: body 'pelvis': a scale factor is zero"),
    ({"visual": {"mesh": "meshes/pelvis.obj", "colour": "red"}}, "base.visual.colour: body 'pelvis': unknown key"),
    ({"collision": {"mesh": 3}}, "joints[3].body.collision[0].mesh: body 'l_shank': expected a mesh file name"),
    ({"collision": {"mesh": "meshes/shank.stl", "origin": {"xyz": [0, 0]}}},
     "joints[3].body.collision[0].origin.xyz: body 'l_shank': expected a list of 3 numbers"),
])
def test_bad_meshes_are_one_sentence_naming_body_and_key(tmp_path, edit, message):
    path = _robot(tmp_path, **edit)
    with pytest.raises(ConfigError) as e:
        load_tree(path)
    assert message.format(tmp=tmp_path) in str(e.value)
    assert "\n" not in str(e.value)


def test_urdf_export_places_the_meshes_as_pinocchio_reads_them(tmp_path):
    """Pinocchio's URDF reader (with coal, which loads the files) finds each mesh on its body at the
    YAML's pose and scale; the pelvis' collision and the shank's visual stay the derived shapes."""
    desc = load_tree(_robot(tmp_path))
    urdf = tmp_path / "robot.urdf"
    urdf.write_text(to_urdf(desc))
    model = pin.buildModelFromUrdf(str(urdf))
    for kind, body, mesh in ((pin.GeometryType.VISUAL, "pelvis", desc.shapes["pelvis"].visual[0]),
                             (pin.GeometryType.COLLISION, "l_shank", desc.shapes["l_shank"].collision[0])):
        geoms = pin.buildGeomFromUrdf(model, str(urdf), kind).geometryObjects
        meshes = [g for g in geoms if _is_file(g)]
        assert len(meshes) == 1, [g.name for g in meshes]
        (g,) = meshes
        assert Path(g.meshPath) == mesh_file(mesh)
        np.testing.assert_allclose(g.meshScale, mesh.scale, atol=1e-15)
        frame = model.frames[g.parentFrame]
        assert frame.name == body
        np.testing.assert_allclose((frame.placement.inverse() * g.placement).homogeneous, mesh.pose, atol=1e-12)
        assert [model.frames[x.parentFrame].name for x in geoms].count(body) == 1   # the mesh replaced its shapes
    shank = [g for g in pin.buildGeomFromUrdf(model, str(urdf), pin.GeometryType.VISUAL).geometryObjects
             if model.frames[g.parentFrame].name == "l_shank"]
    assert shank and not any(_is_file(g) for g in shank)


def _is_file(g) -> bool:
    """A geometry object loaded from a mesh file (Pinocchio names a primitive's meshPath BOX, CYLINDER...)."""
    return g.meshPath.lower().endswith((".obj", ".stl", ".dae"))


def _mesh_elements(text: str) -> dict[str, list[tuple[str, str, np.ndarray, np.ndarray]]]:
    """Each link's (kind, filename, scale, origin pose) of its ``<mesh>`` elements."""
    out = {}
    for link in ET.fromstring(text).findall("link"):
        for kind in ("visual", "collision"):
            for shape in link.findall(kind):
                mesh = shape.find("geometry/mesh")
                if mesh is None:
                    continue
                o = shape.find("origin")
                xyz = [float(x) for x in (o.get("xyz") if o is not None else "0 0 0").split()]
                rpy = [float(x) for x in (o.get("rpy") if o is not None and o.get("rpy") else "0 0 0").split()]
                scale = np.array([float(x) for x in (mesh.get("scale") or "1 1 1").split()])
                out.setdefault(link.get("name"), []).append((kind, mesh.get("filename"), scale, _urdf_pose(xyz, rpy)))
    return out


def _same_meshes(a: dict, b: dict) -> None:
    assert sorted(a) == sorted(b)
    for link in a:
        assert [(k, f) for k, f, _, _ in a[link]] == [(k, f) for k, f, _, _ in b[link]], link
        for (_, _, sa, Ta), (_, _, sb, Tb) in zip(a[link], b[link]):
            np.testing.assert_allclose(sa, sb, atol=1e-15)
            np.testing.assert_allclose(Ta, Tb, atol=1e-12, err_msg=link)


def test_round_trip_urdf_yaml_urdf_keeps_the_mesh_elements(tmp_path):
    first = to_urdf(load_tree(_robot(tmp_path)))
    back = tmp_path / "imported.yaml"
    back.write_text(import_urdf(first, str(tmp_path / "robot.urdf")))
    again = to_urdf(load_tree(back))
    meshes = _mesh_elements(first)
    assert sum(len(v) for v in meshes.values()) == 2
    _same_meshes(_mesh_elements(again), meshes)


def test_mjcf_export_compiles_with_the_meshes(tmp_path):
    """MuJoCo compiles the exported MJCF with both meshes (OBJ, STL) on their bodies at the YAML's
    poses; the visual mesh touches nothing, the collision mesh replaces the shank's capsules, and the
    meshes change no mass."""
    mujoco = pytest.importorskip("mujoco")
    from drivers.sim.hil.mjcf_export import export_mjcf

    desc = load_tree(_robot(tmp_path))
    m = mujoco.MjModel.from_xml_string(export_mjcf(desc))
    plain = mujoco.MjModel.from_xml_string(export_mjcf(load_tree(BIP2000)))
    assert m.nmesh == 2 and m.body_mass.sum() == pytest.approx(plain.body_mass.sum(), abs=1e-12)
    for name, body, mesh, touches in (("pelvis_visual_0", "pelvis", desc.shapes["pelvis"].visual[0], 0),
                                      ("l_shank_collision_0", "l_shank", desc.shapes["l_shank"].collision[0], 1)):
        g = m.geom(name)
        assert g.type[0] == mujoco.mjtGeom.mjGEOM_MESH and m.body(g.bodyid[0]).name == body
        assert g.contype[0] == touches
        R = np.zeros(9)                 # MuJoCo moves a mesh to its principal axes: the geom's pose undoes it
        mujoco.mju_quat2Mat(R, m.geom_quat[g.id])
        pose = np.array(mesh.pose)
        verts = m.mesh_vert[m.mesh_vertadr[m.geom_dataid[g.id]]:][:4]
        world = (R.reshape(3, 3) @ verts.T).T + m.geom_pos[g.id]
        want = (pose[:3, :3] @ (TETRA * np.array(mesh.scale)).T).T + pose[:3, 3]
        gap = np.linalg.norm(world[:, None, :] - want[None, :, :], axis=2)   # MJCF's 6 digits, float32 vertices
        assert gap.min(axis=0).max() < 2e-6 and gap.min(axis=1).max() < 2e-6, gap
    assert not any(m.geom(k).bodyid[0] == m.body("l_shank").id and m.geom_type[k] == mujoco.mjtGeom.mjGEOM_CAPSULE
                   for k in range(m.ngeom))


def test_mjcf_export_finds_package_meshes_or_says_why_not(tmp_path, monkeypatch, capsys):
    """``bipd export mjcf``: a ``package://`` mesh is found through ROS_PACKAGE_PATH, else one line
    naming the package (exit 2); a ``.dae`` mesh, which MuJoCo cannot load, one line naming the body."""
    pytest.importorskip("mujoco")
    from controller.cli import main

    share = tmp_path / "share" / "my_robot" / "meshes"
    share.mkdir(parents=True)
    path = _robot(tmp_path, visual={"mesh": "package://my_robot/meshes/pelvis.obj"})
    (share / "pelvis.obj").write_bytes((tmp_path / "meshes/pelvis.obj").read_bytes())
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    assert main(["export", "mjcf", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "package 'my_robot' holding 'meshes/pelvis.obj' is in no directory" in err
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path / "share"))
    assert main(["export", "mjcf", str(path)]) == 0
    assert f'file="{share / "pelvis.obj"}"' in capsys.readouterr().out
    (tmp_path / "meshes/pelvis.dae").write_text("<COLLADA/>")
    path.write_text(path.read_text().replace("package://my_robot/meshes/pelvis.obj", "meshes/pelvis.dae"))
    assert main(["export", "mjcf", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "body 'pelvis': MuJoCo cannot load the visual mesh" in err


def _talos() -> Path:
    try:
        files = importlib.metadata.files("example-robot-data") or []
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("example-robot-data is not installed (pip install example-robot-data)")
    return Path(next(str(f.locate()) for f in files if str(f).endswith("robots/talos_data/robots/talos_reduced.urdf")))


def test_a_real_robots_mesh_visuals_come_across(tmp_path, monkeypatch):
    """Talos (example-robot-data): every ``package://`` mesh of the URDF comes into the YAML as written,
    and through our exported URDF Pinocchio poses each visual mesh in the world where the original
    URDF puts it, at a random posture (1e-9)."""
    src = _talos()
    share = src.parents[3]                                 # .../share, which holds example-robot-data
    text = src.read_text()
    imported = tmp_path / "talos.yaml"
    imported.write_text(import_urdf(text, str(src)))
    desc = load_tree(imported)
    files = sorted(m.filename for s in desc.shapes.values() for m in s.visual + s.collision)
    assert files == sorted(e.get("filename") for e in ET.fromstring(text).iter("mesh"))
    assert all(f.startswith("package://example-robot-data/") for f in files)
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(share))
    assert all(mesh_file(m).is_file() for s in desc.shapes.values() for m in s.visual)
    exported = tmp_path / "talos.urdf"
    exported.write_text(to_urdf(desc))
    poses = []
    for urdf in (src, exported):
        model = pin.buildModelFromUrdf(str(urdf))
        geom = pin.GeometryModel()
        pin.buildGeomFromUrdf(model, str(urdf), pin.GeometryType.VISUAL, geom, str(share))   # package dirs
        q = np.zeros(model.nq)
        for j, name in enumerate(model.names[1:], start=1):     # the same angle per joint name in both
            assert model.joints[j].nq == 1, name
            q[model.joints[j].idx_q] = 0.3 * np.sin(3.0 * len(name) + sum(map(ord, name)))
        data, gdata = model.createData(), pin.GeometryData(geom)
        pin.updateGeometryPlacements(model, data, geom, gdata, q)
        poses.append([((os.path.basename(g.meshPath), tuple(np.round(g.meshScale, 12))), gdata.oMg[k].homogeneous)
                      for k, g in enumerate(geom.geometryObjects) if _is_file(g)])
    assert len(poses[1]) == len(poses[0]) > 20
    for key, T in poses[0]:                                # each original mesh has its twin, same file and pose
        errors = [np.abs(U - T).max() for other, U in poses[1] if other == key]
        assert min(errors) < 1e-9, key


def test_meshes_the_yaml_cannot_name_are_left_out_and_said(tmp_path):
    """A mesh of another format (Romeo's Ogre ``.mesh``) or whose file is not there does not stop the
    import: it is left out, named with its reason in a comment at the top of the YAML."""
    text = to_urdf(load_tree(_robot(tmp_path)))
    extra = ('<visual><geometry><mesh filename="file:///nowhere/torso.stl"/></geometry></visual>'
             '<collision><geometry><mesh filename="meshes/torso.mesh"/></geometry></collision></link>')
    text = text.replace("</link>", extra, 1)
    urdf = tmp_path / "robot.urdf"
    urdf.write_text(text)
    out = import_urdf(text, str(urdf))
    comments = [line for line in out.splitlines() if line.startswith("# mesh left out: ")]
    n = len(ET.fromstring(text).find("link").findall("collision")) - 1
    assert comments == ["# mesh left out: link 'pelvis' visual 1: file:///nowhere/torso.stl (no such file)",
                        f"# mesh left out: link 'pelvis' collision {n}: {tmp_path}/meshes/torso.mesh "
                        "(not one of .stl, .obj, .dae)"]
    doc = yaml.safe_load(out)
    assert [m["mesh"] for m in doc["base"]["visual"]] == [str(tmp_path / "meshes/pelvis.obj")]
    assert "collision" not in doc["base"]
