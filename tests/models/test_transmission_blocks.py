"""Transmissions for any robot: blocks of linkages and gears (deploy/robots/bip2000.yaml)
checked against the bench leg's kernels, finite differences and the YAML's numbers."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from models.common.errors import ConfigError, TransmissionFault
from models.transmission import (CANNOT_CLOSE, LEG_LABELS, parse_blocks, parse_transmission,
                                 status_message, transmission_jacobian)
from models.tree.config import load_tree
from tests.paths import ROBOTS

LEG = yaml.safe_load((ROBOTS / "bip_leg.yaml").read_text())
LEG_LO = np.array([j["limits"]["position"][0] for j in LEG["joints"]])
LEG_HI = np.array([j["limits"]["position"][1] for j in LEG["joints"]])
BENCH = parse_transmission(LEG["transmission"], "bip_leg.yaml", LEG_LO, LEG_HI)
BIP_DOC = yaml.safe_load((ROBOTS / "bip2000.yaml").read_text())
BIP = load_tree(ROBOTS / "bip2000.yaml")
TR = BIP.transmission
NAMES = tuple(j.joint.name for j in BIP.joints)
LO = np.array([j.joint.position_limits[0] for j in BIP.joints])
HI = np.array([j.joint.position_limits[1] for j in BIP.joints])

in_box = st.lists(st.floats(0.0, 1.0), min_size=15, max_size=15).map(lambda u: LO + np.array(u) * (HI - LO))
vec15 = st.lists(st.floats(-5.0, 5.0), min_size=15, max_size=15).map(np.array)


def idx(name: str) -> int:
    return NAMES.index(name)


def test_block_format_packs_the_bench_leg_exactly_as_its_own_format():
    """The same geometry written as blocks gives the same parameter array, bit for bit."""
    t = LEG["transmission"]
    m = t["motors"]
    per = lambda k: {"rotor_inertia": m["rotor_inertia"][k], "viscous": m["viscous"][k], "coulomb": m["coulomb"][k]}
    blocks = {"blocks": [
        {"kind": "ankle", "joints": ["ankle_lateral", "ankle_sagittal"], **t["ankle"],
         **{key: [m[key][0], m[key][1]] for key in ("rotor_inertia", "viscous", "coulomb")}},
        {"kind": "knee", "joint": "knee", **t["knee"], **per(2)},
        {"kind": "hip", "joint": "hip", **t["hip"], **per(3)}]}
    names = tuple(j["name"] for j in LEG["joints"])
    tr = parse_blocks(blocks, "leg.yaml", names, LEG_LO, LEG_HI)
    np.testing.assert_array_equal(tr.params, BENCH.params)


@settings(max_examples=60, deadline=None)
@given(in_box)
def test_bip_legs_use_the_bench_linkages_through_their_signs(q):
    """A BIP 2000 leg joint reads the bench linkage at x = sign * q: its motor angles are the
    bench leg's at (lateral, -sagittal, -knee, -hip), the right lateral mirrored; gears give
    100 q exactly."""
    qm = TR.to_motor(q)
    for side, lat in (("l", 1.0), ("r", -1.0)):
        x = np.array([lat * q[idx(f"{side}_ankle_lateral")], -q[idx(f"{side}_ankle_sagittal")],
                      -q[idx(f"{side}_knee")], -q[idx(f"{side}_hip_pitch")]])
        bench = BENCH.to_motor(x)
        got = qm[[idx(f"{side}_ankle_lateral"), idx(f"{side}_ankle_sagittal"), idx(f"{side}_knee"),
                  idx(f"{side}_hip_pitch")]]
        np.testing.assert_array_equal(got, bench)
    for j in ("l_hip_yaw", "l_hip_roll", "r_hip_yaw", "r_hip_roll", "trunk_yaw", "trunk_roll", "trunk_pitch"):
        assert qm[idx(j)] == pytest.approx(100.0 * q[idx(j)], rel=1e-15, abs=0)


@settings(max_examples=60, deadline=None)
@given(in_box)
def test_bip_jacobian_matches_finite_differences_and_inverts(q):
    h = 1e-6
    fd = np.column_stack([(TR.to_motor(q + h * e) - TR.to_motor(q - h * e)) / (2 * h) for e in np.eye(15)])
    Jp = TR.jacobian(q)
    np.testing.assert_allclose(Jp, fd, rtol=1e-7, atol=1e-6)
    np.testing.assert_allclose(TR.to_joint(TR.to_motor(q)), q, rtol=0, atol=1e-10)


@settings(max_examples=60, deadline=None)
@given(in_box, vec15, vec15)
def test_bip_power_is_conserved_and_rotor_energy_reflects(q, qd, tau):
    qmd, tau_m = TR.velocity_to_motor(q, qd), TR.torque_to_motor(q, tau)
    assert tau_m @ qmd == pytest.approx(tau @ qd, rel=1e-9, abs=1e-8)
    np.testing.assert_allclose(TR.velocity_to_joint(q, qmd), qd, rtol=1e-9, atol=1e-9)
    jm = np.array([_motor_value(j, "rotor_inertia") for j in NAMES])
    assert qd @ TR.rotor_inertia(q) @ qd == pytest.approx(qmd @ (jm * qmd), rel=1e-12)


def _motor_value(joint: str, key: str) -> float:
    """The YAML's value for the motor of ``joint`` (independent of the packing)."""
    for b in BIP_DOC["transmission"]["blocks"]:
        if b.get("joint") == joint:
            return b[key]
        if joint in b.get("joints", []):
            return b[key][b["joints"].index(joint)]
    raise KeyError(joint)


def test_a_failing_bip_block_is_named_by_its_joints():
    q = np.zeros(15)
    q[idx("r_knee")] = np.nan
    status = transmission_jacobian(TR.params, q, np.empty((15, 15)))
    assert status == CANNOT_CLOSE + 4 * idx("r_knee")
    assert status_message(status, TR.labels) == "knee (r_knee): linkage cannot close (negative radicand)"
    with pytest.raises(TransmissionFault, match=r"knee \(r_knee\): linkage cannot close"):
        TR.to_motor(q)
    assert status_message(CANNOT_CLOSE + 8) == f"{LEG_LABELS[2]}: linkage cannot close (negative radicand)"


def edited(i: int, **changes) -> dict:
    sec = copy.deepcopy(BIP_DOC["transmission"])
    for k, v in changes.items():
        if v is ...:
            del sec["blocks"][i][k]
        else:
            sec["blocks"][i][k] = v
    return sec


@pytest.mark.parametrize("i,changes,key,msg", [
    (0, {"joint": "l_hip_twist"}, "transmission.blocks[0].joint", "unknown joint 'l_hip_twist'"),
    (1, {"joint": "l_hip_yaw"}, "transmission.blocks[1].joint", r"already driven by transmission.blocks\[0\]"),
    (0, {"kind": "belt"}, "transmission.blocks[0].kind", "expected one of"),
    (0, {"sign": 2}, "transmission.blocks[0].sign", r"\+1 or -1"),
    (0, {"ratio": 0.0}, "transmission.blocks[0].ratio", "> 0"),
    (0, {"rotor_inertia": 0.0}, "transmission.blocks[0].rotor_inertia", "> 0"),
    (4, {"joints": ["l_ankle_lateral"]}, "transmission.blocks[4].joints", "2 joints"),
    (4, {"viscous": [1e-4]}, "transmission.blocks[4].viscous", "list of 2"),
    (0, {"belt": 1}, "transmission.blocks[0].belt", "unknown key"),
    (3, {"gamma": 0.5}, "transmission.blocks[3]", r"knee \(l_knee\) passes a dead point \(J_p singular\) near l_knee = "),
    (3, {"L": 0.005}, "transmission", r"knee \(l_knee\): linkage cannot close .*motor zero"),
])
def test_block_errors_name_the_key(i, changes, key, msg):
    with pytest.raises(ConfigError, match=msg) as err:
        parse_blocks(edited(i, **changes), "bip.yaml", NAMES, LO, HI)
    assert err.value.key == key and err.value.where == "bip.yaml"


def test_every_joint_needs_exactly_one_block():
    sec = copy.deepcopy(BIP_DOC["transmission"])
    del sec["blocks"][-1]
    with pytest.raises(ConfigError, match=r"no block drives joint\(s\) \['trunk_pitch'\]") as err:
        parse_blocks(sec, "bip.yaml", NAMES, LO, HI)
    assert err.value.key == "transmission.blocks"
    with pytest.raises(ConfigError, match="non-empty list"):
        parse_blocks({"blocks": []}, "bip.yaml", NAMES, LO, HI)
