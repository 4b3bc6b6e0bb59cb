"""Every flat buffer's field list against the buffers built from it: the derived size is the
buffer's, the fields tile the buffer (no overlap, no gap), the names are unique, and the
kernels' views (Numba) sit exactly where the Python views do."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from models.chain import model as chain
from models.chain.model import python_views
from models.common.layout import Field, Layout
from models.composite import models as composite
from models.ik import numerical as ik
from models.rig import stewart
from models.tree.config import load_tree
from models.tree import model as tree
from models.tree.robot import TreeRobot
from drivers.sim import plant_leg
from stabilizer import stabilizer as stab
from stabilizer import whole_body as wb
from stabilizer.whole_body_config import load_config as load_wb_config

from models import Robot
from tests.models.chains import bip_leg
from tests.models.trees import BIP2000, random_tree
from tests.paths import ROBOTS, STEWART_RIG


@njit(cache=True)
def _chain_kernel_views(mbuf, dbuf):
    return chain.model_views(mbuf), chain.data_views(dbuf, int(mbuf[0]))


@njit(cache=True)
def _tree_kernel_views(mbuf, dbuf):
    return tree.model_layout(mbuf)[0], tree.data_layout(mbuf, dbuf)[0]


@njit(cache=True)
def _composite_kernel_views(tbuf, pbuf, dbuf):
    _, p, d = composite.views(tbuf, pbuf, dbuf)
    return p, d


@njit(cache=True)
def _stewart_kernel_views(mbuf, dbuf):
    return stewart.model_views(mbuf), stewart.data_views(dbuf)


@njit(cache=True)
def _ik_kernel_views(buf):
    return ik.ik_views(buf)


def _buffers():
    """(layout, buffer, sizes, kernel views or None) of real instances of every layout."""
    leg = bip_leg()
    bip = TreeRobot.from_yaml(BIP2000)
    rnd = random_tree(3)
    out = []
    km, kd = _chain_kernel_views(leg.model.buf, leg.data.buf)
    out += [(chain.MODEL, leg.model.buf, {"n": leg.n}, km), (chain.DATA, leg.data.buf, {"n": leg.n}, kd)]
    for robot in (bip, rnd):
        km, kd = _tree_kernel_views(robot.model.buf, robot.data.buf)
        size = tree.sizes(robot.model.buf)
        out += [(tree.MODEL, robot.model.buf, size, km),
                (tree.DATA, robot.data.buf, {k: size[k] for k in tree.DATA.sizes}, kd)]
    st = stab.Stabilizer.from_yaml(ROBOTS / "bip_leg_stabilizer.yaml")
    size = {"n": st.n, "nv": st.nv}
    out += [(stab.PARAMS, st.params, size, stab.param_views(st.params)),
            (stab.STATE, st.state, size, stab.state_views(st.state, st.n, st.nv)),
            (stab.OUT, st.out, size, stab.out_views(st.out, st.n, st.nv)),
            (stab.INPUTS, st.inputs, {"n": st.n}, stab.input_views(st.inputs, st.n))]
    w = wb.WholeBodyStabilizer(bip, load_wb_config(ROBOTS / "bip2000_stabilizer.yaml"))
    out += [(wb.PARAMS, w.params, {"n": w.n}, wb.param_layout(w.params)[0]),
            (wb.STATE, w.state, {"n": w.n}, wb.state_layout(w.params, w.state)[0]),
            (wb.OUT, w.out, {"n": w.n}, wb.out_layout(w.params, w.out)[0]),
            (wb.INPUTS, w.inputs, {"n": w.n}, wb.input_layout(w.inputs, w.n)[0])]
    tm, plan, cdata = composite.composite_setup(load_tree(BIP2000))
    kp, kd = _composite_kernel_views(tm.buf, plan.buf, cdata.buf)
    dims = {k: int(plan.buf[composite.PLAN.offset(k)]) for k in composite.PLAN.sizes}
    out += [(composite.PLAN, plan.buf, dims, kp),
            (composite.DATA, cdata.buf, {k: v for k, v in tree.sizes(tm.buf).items() if k in composite.DATA.sizes}, kd)]
    rig, rig_data = stewart.StewartModel.from_yaml(STEWART_RIG), stewart.StewartData()
    km, kd = _stewart_kernel_views(rig.buf, rig_data.buf)
    out += [(stewart.MODEL, rig.buf, {}, km), (stewart.DATA, rig_data.buf, {}, kd),
            (stewart.GEOMETRY, rig.geo, {}, None)]
    for robot, tasks in ((leg, [ik.Task("tool", "position", [0.1, 0.0, -0.5]), ik.Task("tool", "axis", [0, 0, 1.0])]),
                         (bip, [ik.Task("right_sole", "pose", np.eye(4)), ik.Task("com", "position", np.zeros(3))])):
        solver = ik.IkSolver(robot, tasks)
        sizes = {k: int(solver.buf[ik.IK.offset(k)]) for k in ik.IK.sizes}
        out += [(ik.IK, solver.buf, sizes, _ik_kernel_views(solver.buf))]
    plant = plant_leg.LegPlant(Robot.from_yaml(ROBOTS / "bip_leg.yaml"))
    out += [(plant_leg.PARAMS, plant._par, {}, None), (plant_leg.WORK, plant._work.reshape(-1), {}, None),
            (plant_leg.OUT, plant._out, {}, None)]
    return out


CASES = _buffers()


@pytest.mark.parametrize("layout, buf, sizes, kernel", CASES, ids=[f"{c[0].name}-{i}" for i, c in enumerate(CASES)])
def test_fields_tile_the_buffer(layout: Layout, buf: np.ndarray, sizes: dict, kernel) -> None:
    assert layout.size(**sizes) == buf.shape[0]
    assert len(set(layout.names)) == len(layout.names)
    shapes, offsets = layout.shapes(**sizes), layout.offsets(**sizes)
    cover = np.zeros(buf.shape[0], int)
    for name in layout.names:
        o = offsets[name]
        cover[o:o + int(np.prod(shapes[name]))] += 1
    assert (cover == 1).all()                       # every slot in exactly one field
    views = layout.views(buf, **sizes)
    for name, v in views._asdict().items():         # the Python views where the offsets say
        assert v.shape == shapes[name]
        assert v.__array_interface__["data"][0] - buf.ctypes.data == 8 * offsets[name]
    if kernel is not None:                           # the kernels' views at the same places
        kv = python_views(buf, tuple(kernel))
        assert type(kernel)._fields == layout.array_names
        for a, b in zip(kv, views):
            assert a.shape == b.shape and a.__array_interface__["data"][0] == b.__array_interface__["data"][0]


def test_header_slots_are_the_kernels_constants() -> None:
    assert stab.P_SCALARS == len([f for f in stab.PARAMS.fields if not f.shape])
    assert (stab.P_N, stab.P_POST_INITIAL, stab.O_LAMBDA) == (0, 34, 5)
    assert wb.P_COG + wb.BLOCK == wb.P_TRUNK and wb.P_TRUNK + wb.BLOCK == wb.P_PUSH and wb.P_PUSH_END == wb.P_SCALARS
    assert wb.S_SCALARS - wb.S_CONTACT == wb.CONTACT_STATE and wb.O_OMEGA - wb.O_SIGMA == len((wb.SIG_FEET, wb.SIG_COG, wb.SIG_TRUNK))
    assert tree.HEADER == len(tree.MODEL.sizes)
    assert ik.IK.offset("opts") == len(ik.IK.sizes)


def test_leg_plant_slots_are_its_fields() -> None:
    """The leg plant's kernels index its arrays with slot constants (work: rows of 4): each is
    its field's offset, and the Python views the plant hands out are those slots."""
    p = plant_leg
    for const, name in ((p._SUBSTEP, "substep"), (p._INERTIA, "inertia"), (p._FRICTION, "friction"),
                        (p._LOAD, "load"), (p._RATIO, "ratio"), (p._STOP_K, "stop_k"), (p._STOP_C, "stop_c"),
                        (p._GRAVITY, "gravity"), (p._ORDER, "order")):
        assert const == p.PARAMS.offset(name), name
    for const, name in ((p._Q, "q"), (p._QD, "qd"), (p._PLAT, "plat"), (p._JQ, "jq"), (p._JP, "jp"),
                        (p._JD, "jd"), (p._M0, "m0"), (p._CV, "cv"), (p._M, "m"), (p._MI, "mi"), (p._QJ, "qj"),
                        (p._TAU, "tau"), (p._F0, "f0"), (p._RHS, "rhs"), (p._GT, "gt"), (p._V1, "v1"),
                        (p._V2, "v2"), (p._QH, "qh"), (p._G, "g")):
        assert 4 * const == p.WORK.offset(name), name
    assert 4 * p._N_WORK == p.WORK.size() and p._N_PAR == p.PARAMS.size() and p._N_OUT == p.OUT.size()
    plant = p.LegPlant(Robot.from_yaml(ROBOTS / "bip_leg.yaml"))
    for const, view in ((p._POS, plant.motor_position), (p._VEL, plant.motor_velocity),
                        (p._JOINT, plant.sensors["joint_position"]), (p._PLATFORM, plant.sensors["platform"]),
                        (p._IMU, plant.sensors["imu_gravity"]), (p._SOLE, plant.sensors["sole"])):
        assert view.__array_interface__["data"][0] - plant._out.ctypes.data == 8 * const


@pytest.mark.parametrize("module, prefix, layout", [
    (stab, "P_", stab.PARAMS), (stab, "S_", stab.STATE), (stab, "O_", stab.OUT),
    (wb, "P_", wb.PARAMS), (wb, "B_", wb.FIELD_BLOCK), (wb, "S_", wb.STATE), (wb, "O_", wb.OUT),
    (stewart, "G_", stewart.GEOMETRY), (ik, "O_", ik.OPTIONS), (ik, "I_", ik.INFO)])
def test_slot_constants_are_named_after_their_fields(module, prefix: str, layout: Layout) -> None:
    """P_DT is the slot of the field "dt": every constant named after a header field holds that
    field's offset (the kernels read the buffers through these constants)."""
    scalars = [f.name for f in layout.fields if not f.shape]
    named = {k: getattr(module, k) for k in dir(module) if k.startswith(prefix) and k[len(prefix):].lower() in scalars}
    assert named
    for k, v in named.items():
        assert v == layout.offset(k[len(prefix):].lower()), k


@pytest.mark.parametrize("module, layout", [(tree, tree.MODEL), (composite, composite.PLAN), (ik, ik.IK)])
def test_header_sizes_are_read_at_their_fields(module, layout: Layout) -> None:
    """The kernels read a buffer's sizes from its header through _N, _NB, ...: each is the offset
    of the size field of that name."""
    for k in layout.sizes:
        assert getattr(module, "_" + k.upper()) == layout.offset(k), k


def test_bad_declarations_are_refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        Layout("x", [Field("a", ("n",)), Field("a", (3,))], sizes=("n",))
    with pytest.raises(ValueError, match="unknown sizes"):
        Layout("x", [Field("a", ("m",))], sizes=("n",))
    with pytest.raises(ValueError, match="moves with the sizes"):
        Layout("x", [Field("a", ("n",)), Field("b")], sizes=("n",)).offset("b")
    with pytest.raises(ValueError, match="needs"):
        chain.DATA.views(np.zeros(3), n=2)


def test_a_dimension_is_arithmetic_of_the_sizes_only():
    """The view code generated from a declaration holds only size names, integers and + - * //."""
    from models.common.layout import Field, Layout, dim_value

    assert dim_value("4 * ng + n // 2", {"n": 6, "ng": 3}) == 15
    for bad in ("__import__('os')", "n ** 2", "n if n else 1", "[n][0]"):
        with pytest.raises(ValueError):
            Layout("bad", [Field("x", (bad,))], sizes=("n",))
    with pytest.raises(ValueError, match="is not an identifier"):
        Layout("bad", [Field("x y", (3,))])
