"""Transmissions of the BIP leg (thesis §2.3.3, eq. 12-32) on deploy/robots/bip_leg.yaml."""
from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from models.common.errors import ConfigError, TransmissionFault
from models.transmission import (CANNOT_CLOSE, NO_CONVERGENCE, SINGULAR, Transmission,
                                 joint_velocity, motor_to_joint, parse_transmission,
                                 status_message, transmission_jacobian)
from tests.paths import ROBOTS

YAML = ROBOTS / "bip_leg.yaml"
DOC = yaml.safe_load(YAML.read_text())
SECTION = DOC["transmission"]
QMIN = np.array([j["limits"]["position"][0] for j in DOC["joints"]])
QMAX = np.array([j["limits"]["position"][1] for j in DOC["joints"]])
TR = parse_transmission(SECTION, str(YAML), QMIN, QMAX)

unit = st.floats(0.0, 1.0)
in_box = st.tuples(unit, unit, unit, unit).map(lambda u: QMIN + np.array(u) * (QMAX - QMIN))
vec4 = st.tuples(*[st.floats(-10.0, 10.0)] * 4).map(np.array)


def with_(tr: Transmission, block: str, **kw) -> Transmission:
    return tr.replace_block(block, **kw)


# ------------------------------------------------------------------ geometry


def thesis_ankle(p, q1, q2):
    """Eq. 12-14 transcribed literally (without the erroneous |·|)."""
    b, c, d, h, e, L, g = p.b, p.c, p.d, p.h, p.e, p.L, p.gamma
    c1, s1, c2, s2 = math.cos(q1), math.sin(q1), math.cos(q2 + g), math.sin(q2 + g)
    y1, z1 = s1 * b - c1 * d + h, c1 * s2 * b + s1 * s2 * d - c2 * c + e
    y2, z2 = s1 * b + c1 * d - h, c1 * s2 * b - s1 * s2 * d - c2 * c + e
    beta, delta = math.sqrt(L**2 - y1**2 - z1**2), math.sqrt(L**2 - y2**2 - z2**2)
    l1 = -c1 * c2 * b - s1 * c2 * d - s2 * c - beta
    l2 = -c1 * c2 * b + s1 * c2 * d - s2 * c - delta
    a1 = (c1 * b + s1 * d) * y1 + (-s1 * s2 * b + c1 * s2 * d) * z1
    a2 = (c1 * c2 * b + s1 * c2 * d + s2 * c) * z1
    g1 = (c1 * b - s1 * d) * y2 + (-s1 * s2 * b - c1 * s2 * d) * z2
    g2 = (c1 * c2 * b - s1 * c2 * d + s2 * c) * z2
    jac = [[s1 * c2 * b - c1 * c2 * d + a1 / beta, c1 * s2 * b + s1 * s2 * d - c2 * c + a2 / beta],
           [s1 * c2 * b + c1 * c2 * d + g1 / delta, c1 * s2 * b - s1 * s2 * d - c2 * c + g2 / delta]]
    return np.array([l1, l2]), np.array(jac)


def thesis_knee(p, q3):
    """Eq. 18-19 literally."""
    t = q3 + p.gamma - p.phi
    root = math.sqrt(p.L**2 - (-math.sin(t) * p.r - p.e) ** 2)
    return (math.cos(t) * p.r - root,
            -math.sin(t) * p.r - math.cos(t) * p.r * (-math.sin(t) * p.r - p.e) / root)


def thesis_hip(p, q4):
    """Eq. 24-25 literally."""
    t = q4 + p.gamma - p.phi
    root = math.sqrt(p.L**2 - (math.sin(t) * p.r - p.e) ** 2)
    return (-math.cos(t) * p.r + root,
            math.sin(t) * p.r - math.cos(t) * p.r * (math.sin(t) * p.r - p.e) / root)


@settings(max_examples=100, deadline=None)
@given(in_box)
def test_kernels_match_thesis_closed_forms(q):
    """l(q) = eq. 12, 18, 24 and J_p = diag(2π/p_c, 2π/p_c, 2π/p_g, 2π/p_h) ∂l/∂q
    (eq. 13-14, 19, 25, 32; eq. 30's 2π/p_g for the hip is an erratum)."""
    la, ja = thesis_ankle(TR.block("ankle").linkage, q[0], q[1])
    lk, jk = thesis_knee(TR.block("knee").linkage, q[2])
    lh, jh = thesis_hip(TR.block("hip").linkage, q[3])
    np.testing.assert_allclose(TR.carriages(q), [*la, lk, lh], rtol=0, atol=1e-14)
    k = 2 * np.pi / np.array([TR.block("ankle").linkage.pitch, TR.block("ankle").linkage.pitch, TR.block("knee").linkage.pitch, TR.block("hip").linkage.pitch])
    expected = np.zeros((4, 4))
    expected[:2, :2], expected[2, 2], expected[3, 3] = ja, jk, jh
    np.testing.assert_allclose(TR.jacobian(q), k[:, None] * expected, rtol=1e-12, atol=1e-12)


def test_hip_entry_uses_the_hip_pitch():
    """Erratum eq. 30: the hip row scales with 2π/p_h, not 2π/p_g."""
    q = np.array([0.1, 0.2, -0.8, 0.5])
    j = TR.jacobian(q)
    assert with_(TR, "hip", pitch=2 * TR.block("hip").linkage.pitch).jacobian(q)[3, 3] == pytest.approx(j[3, 3] / 2)
    assert with_(TR, "knee", pitch=2 * TR.block("knee").linkage.pitch).jacobian(q)[3, 3] == j[3, 3]


def test_motor_zero_is_the_straight_leg():
    np.testing.assert_array_equal(TR.to_motor(np.zeros(4)), np.zeros(4))


def test_no_dead_point_and_well_conditioned_over_the_limits():
    """The representative geometry keeps J_p far from singular over the whole box."""
    grid = np.stack(np.meshgrid(*[np.linspace(a, b, 9) for a, b in zip(QMIN, QMAX)],
                                indexing="ij"), -1).reshape(-1, 4)
    jac = np.array([TR.jacobian(q) for q in grid])
    sv = np.linalg.svd(jac[:, :2, :2], compute_uv=False)
    assert sv[:, 1].min() > 30 and (sv[:, 0] / sv[:, 1]).max() < 3
    assert np.abs(jac[:, 2, 2]).min() > 30 and np.abs(jac[:, 3, 3]).min() > 30
    assert np.all(jac[:, 2, 2] > 0) and np.all(jac[:, 3, 3] > 0)
    off = jac.copy()
    off[:, :2, :2] = off[:, 2, 2] = off[:, 3, 3] = 0
    assert np.all(off == 0.0)  # block diagonal (eq. 30)


@settings(max_examples=100, deadline=None)
@given(in_box)
def test_jacobian_matches_finite_differences(q):
    h = 1e-6
    fd = np.column_stack([(TR.to_motor(q + h * e) - TR.to_motor(q - h * e)) / (2 * h)
                          for e in np.eye(4)])
    np.testing.assert_allclose(TR.jacobian(q), fd, rtol=1e-7, atol=1e-6)


# ------------------------------------------------------------------ inverse


@settings(max_examples=300, deadline=None)
@given(in_box)
def test_forward_then_inverse_is_identity(q):
    """motor -> joint (Newton from q = 0) after joint -> motor returns q."""
    qm = TR.to_motor(q)
    np.testing.assert_allclose(TR.to_joint(qm), q, rtol=0, atol=1e-10)
    np.testing.assert_allclose(TR.to_motor(TR.to_joint(qm, guess=q + 0.01)), qm, rtol=0, atol=1e-8)


def test_tracking_from_previous_cycle_converges_in_place():
    """The cycle's use: q holds last cycle's solution and is updated in place."""
    P = TR.params
    q = np.zeros(4)
    for t in np.linspace(0.0, 1.0, 51):
        target = QMIN + t * (QMAX - QMIN)
        assert motor_to_joint(P, TR.to_motor(target), q) == 0
        np.testing.assert_allclose(q, target, rtol=0, atol=1e-10)


@pytest.mark.parametrize("qm,block,joint", [([1e4, 0, 0, 0], 0, "ankle"),
                                             ([0, 0, 300.0, 0], 1, "knee"),
                                             ([0, 0, 0, 500.0], 2, "hip")])
def test_unreachable_motor_angle_is_a_non_convergence_fault(qm, block, joint):
    """A motor angle beyond the linkage's reach: Newton stops after a bounded number
    of iterations and reports it; the failing block keeps its guess."""
    guess = np.array([0.1, 0.2, -0.3, 0.4])
    q = guess.copy()
    status = motor_to_joint(TR.params, np.array(qm, dtype=float), q)
    i = [0, 2, 3][block]
    assert status == NO_CONVERGENCE + 4 * i
    assert q[i] == guess[i]
    with pytest.raises(TransmissionFault, match=f"{joint}.*did not converge"):
        TR.to_joint(qm)


# ------------------------------------------------------------------ faults


def test_linkage_that_cannot_close_is_a_fault_naming_the_joint():
    """Negative radicand (eq. 12, 18): reported, never abs()-ed (docs/errata.md)."""
    short_ankle = with_(TR, "ankle", L=0.01)        # closes at q = 0 only
    with pytest.raises(TransmissionFault, match=r"ankle \(q1, q2\): linkage cannot close"):
        short_ankle.to_motor(QMAX)
    q = np.zeros(4)
    assert motor_to_joint(short_ankle.params, np.array([100.0, 100.0, 0, 0]), q) != 0
    short_knee = with_(TR, "knee", L=0.03)
    q = np.array([0.0, 0.0, 1.0, 0.0])              # beyond the knee limit
    for call in (short_knee.to_motor, short_knee.jacobian, short_knee.carriages):
        with pytest.raises(TransmissionFault, match=r"knee \(q3\): linkage cannot close"):
            call(q)
    assert transmission_jacobian(short_knee.params, q, np.empty((4, 4))) == CANNOT_CLOSE + 4 * 2
    with pytest.raises(TransmissionFault, match="hip .*motor zero"):
        with_(TR, "hip", L=0.005)                   # cannot even close at q = 0


def test_singular_jp_is_reported():
    jp = TR.jacobian(np.zeros(4))
    jp[3, 3] = 0.0
    assert joint_velocity(jp, np.ones(4), np.empty(4)) == SINGULAR + 12
    jp = TR.jacobian(np.zeros(4))
    jp[1, :2] = jp[0, :2]                            # rank-deficient ankle block
    assert joint_velocity(jp, np.ones(4), np.empty(4)) == SINGULAR
    assert status_message(SINGULAR + 12) == "hip (q4): transmission Jacobian J_p is singular (dead point)"


# ------------------------------------------------------------------ velocities, torques


@settings(max_examples=100, deadline=None)
@given(in_box, vec4, vec4)
def test_power_is_conserved(q, qd, tau):
    """τ_m = J_p^-T τ and q̇_m = J_p q̇ give τ_m^T q̇_m = τ^T q̇; maps invert each other."""
    qmd = TR.velocity_to_motor(q, qd)
    tau_m = TR.torque_to_motor(q, tau)
    assert tau_m @ qmd == pytest.approx(tau @ qd, rel=1e-10, abs=1e-9)
    np.testing.assert_allclose(TR.velocity_to_joint(q, qmd), qd, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(TR.torque_to_joint(q, tau_m), tau, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(qmd, TR.jacobian(q) @ qd, rtol=1e-12, atol=1e-10)


@settings(max_examples=100, deadline=None)
@given(in_box, vec4)
def test_rotor_inertia_and_friction_reflect_through_jp(q, qd):
    """Kinetic energy ½ q̇_m^T diag(J_m) q̇_m = ½ q̇^T (J_p^T diag(J_m) J_p) q̇; friction
    torques map by J_p^T and always dissipate."""
    m = SECTION["motors"]                       # the YAML's values, not the packed array
    qmd = TR.velocity_to_motor(q, qd)
    inertia = TR.rotor_inertia(q)
    np.testing.assert_allclose(inertia, inertia.T, rtol=0, atol=0)
    assert qd @ inertia @ qd == pytest.approx(qmd @ (np.array(m["rotor_inertia"]) * qmd), rel=1e-12)
    f_m = np.array(m["viscous"]) * qmd + np.array(m["coulomb"]) * np.sign(qmd)
    tau_f = TR.friction(q, qd)
    np.testing.assert_allclose(tau_f, TR.jacobian(q).T @ f_m, rtol=1e-12, atol=1e-12)
    assert tau_f @ qd == pytest.approx(f_m @ qmd, rel=1e-10, abs=1e-12)
    assert tau_f @ qd >= 0.0


def test_params_are_immutable():
    with pytest.raises(ValueError):
        TR.params[0] = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        TR.blocks = ()


# ------------------------------------------------------------------ configuration


def edited(path: str, value) -> dict:
    """SECTION with the key at dotted path set to value (or removed if value is ...)."""
    sec = copy.deepcopy(SECTION)
    *parents, last = path.split(".")
    node = sec
    for k in parents:
        node = node[k]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return sec


@pytest.mark.parametrize("path,value,key,msg", [
    ("knee.pitch", ..., "transmission.knee.pitch", "missing"),
    ("hip.radius", 0.06, "transmission.hip.radius", "unknown"),
    ("gear", 3, "transmission.gear", "unknown"),
    ("ankle.L", "long", "transmission.ankle.L", "expected a number"),
    ("ankle.b", True, "transmission.ankle.b", "expected a number"),
    ("ankle.L", 0.0, "transmission.ankle.L", "> 0"),
    ("hip.pitch", -0.005, "transmission.hip.pitch", "> 0"),
    ("knee.r", float("nan"), "transmission.knee.r", "finite"),
    ("motors.rotor_inertia", [1e-4, 1e-4, 0.0, 1e-4], "transmission.motors.rotor_inertia[2]", "> 0"),
    ("motors.coulomb", [0.1, -0.1, 0.1, 0.1], "transmission.motors.coulomb[1]", ">= 0"),
    ("motors.viscous", [0.1, 0.1], "transmission.motors.viscous", "list of 4"),
    ("motors", [1, 2], "transmission.motors", "mapping"),
    ("ankle.L", 0.01, "transmission.ankle", r"ankle \(q1, q2\) linkage cannot close at q1 = "),
    ("knee.L", 0.005, "transmission", r"knee \(q3\): linkage cannot close .*motor zero"),
    ("knee.gamma", 0.5, "transmission.knee", r"knee \(q3\) passes a dead point"),
    ("hip.gamma", 0.3, "transmission.hip", r"hip \(q4\) passes a dead point"),
])
def test_config_errors_name_the_key(path, value, key, msg):
    with pytest.raises(ConfigError, match=msg) as err:
        parse_transmission(edited(path, value), "leg.yaml", QMIN, QMAX)
    assert err.value.key == key and err.value.where == "leg.yaml"


def test_section_must_be_a_mapping_and_limits_four_joints():
    with pytest.raises(ConfigError, match="mapping") as err:
        parse_transmission([1, 2], "leg.yaml", QMIN, QMAX)
    assert err.value.key == "transmission"
    with pytest.raises(ConfigError, match="4 joints"):
        parse_transmission(SECTION, "leg.yaml", QMIN[:3], QMAX[:3])


def test_limits_box_is_what_is_checked():
    """The knee geometry closes over its limits but not beyond them: widening the
    limits turns it into a ConfigError naming the knee."""
    sec = edited("knee.L", 0.03)
    parse_transmission(sec, "leg.yaml", QMIN, QMAX)
    wide = QMAX.copy()
    wide[2] = 1.0
    with pytest.raises(ConfigError, match=r"knee \(q3\) linkage cannot close") as err:
        parse_transmission(sec, "leg.yaml", QMIN, wide)
    assert err.value.key == "transmission.knee"


def test_angles_accept_degrees():
    sec = edited("hip.gamma", ...)
    sec["hip"]["gamma_deg"] = math.degrees(SECTION["hip"]["gamma"])
    tr = parse_transmission(sec, "leg.yaml", QMIN, QMAX)
    assert tr.block("hip").linkage.gamma == pytest.approx(TR.block("hip").linkage.gamma, abs=1e-15)
