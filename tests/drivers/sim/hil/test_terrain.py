"""Ground the biped was not told about (drivers.sim.hil.terrain): the tilted floor tilts by the asked
angles, the step lies where asked, the flat terrain leaves the scene bit-identical."""
from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from drivers.sim.hil.mjcf_biped import MjcfError, build_biped
from drivers.sim.hil.plant_biped import BipedPlant, BipedPlantError, flexed_posture
from drivers.sim.hil.terrain import Terrain, TerrainError, parse_step, terrain
from models.tree.config import load_tree

from tests.paths import ROBOTS

pytestmark = pytest.mark.hil
STEP = 2.0e-3


@pytest.fixture(scope="module")
def desc():
    return load_tree(ROBOTS / "bip2000.yaml")


def _walk_still(plant: BipedPlant, seconds: float = 0.2) -> np.ndarray:
    tau = np.zeros(plant.n_motors)
    for _ in range(round(seconds / STEP)):
        plant.step(STEP, tau)
    return np.concatenate([plant.mj_data.qpos, plant.mj_data.qvel, plant.sensors["foot_forces"]])


def test_flat_terrain_is_the_former_floor_bit_for_bit(desc):
    q0 = flexed_posture(desc)
    assert build_biped(desc, desc.transmission, q0, hung=False, terrain=Terrain()).to_xml() == \
        build_biped(desc, desc.transmission, q0, hung=False).to_xml()
    a, b = BipedPlant(desc), BipedPlant(desc, terrain=Terrain())
    assert np.array_equal(_walk_still(a), _walk_still(b))


@pytest.mark.parametrize("pitch_deg, roll_deg", [(4.0, 0.0), (-4.0, 0.0), (0.0, 2.0), (3.0, -2.0)])
def test_the_floor_tilts_by_the_asked_angles(desc, pitch_deg, roll_deg):
    """The soles' contact normals (MuJoCo's contact frames) against RotY(-pitch) RotX(roll) e_z
    written out by hand: uphill ahead tilts the normal backwards, left side up tilts it rightwards."""
    p, r = math.radians(pitch_deg), math.radians(roll_deg)
    expected = np.array([-math.sin(p) * math.cos(r), -math.sin(r), math.cos(p) * math.cos(r)])
    plant = BipedPlant(desc, terrain=terrain(pitch_deg, roll_deg))
    d = plant.mj_data
    assert d.ncon >= 4
    for c in d.contact[:d.ncon]:
        assert np.allclose(c.frame[:3], expected, atol=1e-9)
    assert math.degrees(math.acos(expected[2])) == pytest.approx(math.degrees(math.acos(math.cos(p) * math.cos(r))))
    assert plant.sensors["foot_load"].min() > 300.0           # standing on it, both soles loaded
    assert np.abs(plant.sensors["foot_lift"]).max() < 1e-3    # flat on the tilted plane


def test_a_box_on_a_steep_floor_slides_down_it(desc):
    """The plane really is tilted: a free box of friction 0.3 < tan 30° on a 30° uphill floor slides
    downhill (−x), along the plane (its drop over its run is tan 30°)."""
    spec = build_biped(desc, desc.transmission, flexed_posture(desc), hung=False, terrain=terrain(30.0))
    rot = terrain(30.0).rotation()
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, rot.ravel())
    box = spec.worldbody.add_body(name="probe", pos=(rot @ [2.0, 0.0, 0.05]).tolist(), quat=quat)
    box.add_freejoint()
    box.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.05] * 3, mass=1.0, contype=1, conaffinity=0,
                 friction=[0.3, 0.005, 1e-4])
    m = spec.compile()
    m.geom("floor").friction[0] = 0.3             # MuJoCo takes the larger of the pair's frictions
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    x0 = d.body("probe").xpos.copy()
    for _ in range(1000):
        mujoco.mj_step(m, d)
    moved = d.body("probe").xpos - x0
    assert moved[0] < -0.05 and moved[2] < 0.0                # downhill: back and down
    assert abs(moved[2] / moved[0]) == pytest.approx(math.tan(math.radians(30.0)), rel=1e-2)


@pytest.mark.parametrize("height", [0.02, -0.02, 0.01])
def test_the_step_lies_where_asked(desc, height):
    """Rays cast down by MuJoCo just before and just after the edge land on the floor and on the step."""
    x = 0.3
    m = build_biped(desc, desc.transmission, flexed_posture(desc), hung=False,
                    terrain=Terrain(step_height=height, step_x=x)).compile()
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    geomid = np.zeros(1, np.int32)

    def ground_z(at: float) -> float:
        dist = mujoco.mj_ray(m, d, np.array([at, 0.5, 1.0]), np.array([0.0, 0.0, -1.0]), None, 1, -1, geomid)
        return 1.0 - dist
    before, after = ground_z(x - 1e-3), ground_z(x + 1e-3)
    assert (before, after) == pytest.approx((0.0, height), abs=1e-9)
    assert ground_z(x + 2.0) == pytest.approx(height, abs=1e-9) and ground_z(x - 2.0) == pytest.approx(0.0, abs=1e-9)


def test_a_step_under_the_feet_or_a_hung_robot_is_refused(desc):
    with pytest.raises(BipedPlantError, match="lies under the feet"):
        BipedPlant(desc, terrain=Terrain(step_height=0.01, step_x=0.1))
    with pytest.raises(MjcfError, match="not hung"):
        build_biped(desc, desc.transmission, flexed_posture(desc), hung=True, terrain=terrain(2.0))


@pytest.mark.parametrize("text, message", [("abc", "HEIGHT@X"), ("0@0.3", "height 0"), ("0.5@0.3", "step height"),
                                           ("0.01@-1", "step distance")])
def test_bad_steps_are_refused_naming_the_problem(text, message):
    with pytest.raises(TerrainError, match=message):
        terrain(step=text)


def test_tilts_beyond_the_range_are_refused():
    with pytest.raises(TerrainError, match="floor pitch 31 deg"):
        terrain(31.0)
    assert parse_step(" -0.02 @ 0.175 ") == (-0.02, 0.175)
