"""Liégeois & Aldon 1980 (INRIA RR-32), §4: the closed-form inertia
matrix A_ij and gravity torques Q_i of its 6-DOF robot equal the generic MDH
engine at random parameter values and random configurations.

The report's robot (§4.1.1, description sentence)::

    RY(θ1) TYK(L1) RX(θ2) TYK(L2) RX(θ3) TZK(L3) RX(θ4) TZK(0) RY(θ5) TZK(0) RZ(θ6) TZK(L6)

i.e. report frame R_j = R_{j-1}·Trans(l_{j-1})·Rot_axis(θ_j), all report frames parallel
to the base frame R(O, X, Y, Z) at θ = 0, origins O_j at the joints (O4 = O5 = O6).
Masses and CoG vectors d_j in R_j (§4.1.2): body 1 (M1; 0, D1, 0),
body 2 (M2; 0, D2, 0), body 3 (M3; 0, 0, D3), bodies 4, 5 massless (fictitious,
§4.1), body 6 (M6; 0, 0, D6). Inertia about the CoG, diagonal, zero about the
body's own axis (§4.1.2; "I21"/"I22" are OCR for IZ1/IZ2):
I1 = diag(IX1, 0, IZ1), I2 = diag(IX2, 0, IZ2), I3 = diag(IX3, IY3, 0),
I6 = diag(IX6, IY6, 0). Augmented-body constants (§3.1, §4.3):
V_j = m_j d_j + l_j Σ_{p>j} m_p, W_j = m_j d_j² + l_j² Σ_{p>j} m_p, JX_j = IX_j + W_j...

Mapping onto our MDH rows (T = RotX(α) TransX(a) RotZ(θ + q) TransZ(d); q_i = θ_i,
same positive sense). MDH frame i = report frame R_i rotated by a constant C_i
(columns = our x_i, y_i, z_i in R_i axes) and moved to the MDH origin:

    i  axis       C_i (x_i, y_i, z_i)   α      a    θ      d     MDH origin
    0  -          ( Z,  X,  Y)          -      -    -      -     O
    1  Y          ( Z,  X,  Y)          0      0    0      L1    O2 (= O + L1·Y)
    2  X          ( Y,  Z,  X)         -π/2    0   -π/2    0     O2
    3  X          ( Z, -Y,  X)          0      L2   π/2    0     O3
    4  X          ( Z, -Y,  X)          0      L3   0      0     O4
    5  Y          ( X, -Z,  Y)          π/2    0    π/2    0     O4
    6  Z          ( X,  Y,  Z)          π/2    0    0      0     O4
    tool: TransZ(L6)                    0      0    0      L6

so body j's CoG/inertia of the report become, in MDH frame j: body 1 com (0, 0, D1 − L1),
inertia diag(IZ1, IX1, 0); body 2 com (D2, 0, 0), diag(0, IZ2, IX2); body 3 com
(D3, 0, 0), diag(0, IY3, IX3); body 6 com (0, 0, D6), diag(IX6, IY6, 0).
The report's gravity column [G] = (0, G, 0) in R (Q_2 = −G·S2·VY2, §4.4, fixes
this; G is a signed scalar, so Y points down for G > 0) becomes (0, 0, G) in
frame 0. The report's Q_i is on the right of (3-1): the generalised
gravity force; our ``gravity(q)`` is the torque that holds it, so ours = −Q.

Two adaptations, both exact:
* Our bodies need mass > 0: bodies 4 and 5 get point masses M4, M5 at O4 with
  zero inertia. A point on axis 4/5 at O4 is a point of body 3's lever end, so the
  report's own general definitions (§3.1, V_j = m_j d_j + l_j Σ_{p>j} m_p, and
  W_j) carry it: VY1, VY2, VZ3, WY1, WY2, WZ3 sum over M4 + M5 + M6, and
  V4 = V5 = 0, J4 = J5 = 0 (d = l = 0), so the closed forms are unchanged.
* A body with zero inertia about its own axis is a line mass, so physically
  IX1 = IZ1, IX2 = IZ2, IX3 = IY3, IX6 = IY6 (our loader enforces the triangle
  inequality). ``test_closed_form_physical`` uses such parameters directly.
  ``test_closed_form_every_symbol`` checks the closed forms with independent
  IX_j ≠ IZ_j etc. through the linearity of A in the inertia tensors:
  A(I) = A(I + s·E) − A(s·E) + A(0), each of the three a valid robot.

Errata applied (docs/errata.md):
* A33 (§4.5) reads 2·VZ6·L3·C4·C5 (printed with VZ3).
* A11 (§4.5): the first JX6 term is JX6·(C6·S5·S234)² (printed
  "JX6*C6*S5*S234+C5*S5*S234").
* Centrifugal coefficients (3-18) are twice too large:
  C_ij = ∂A_ij/∂q_j − ½ ∂A_jj/∂q_i (as Lammari 2012 writes it next to eq. IV.4).
  ``test_velocity_coefficients`` checks the corrected C and B_ijk (3-17)
  against our rnea with central differences of the closed-form A.
"""
from __future__ import annotations

import numpy as np
import pytest

from models import Robot, description_from_dict
from tests.paths import ROOT

HALF_PI = np.pi / 2

# ---------------------------------------------------------------- the report's parameters


def random_params(rng: np.random.Generator, physical: bool) -> dict[str, float]:
    """Random values of the report's symbols (SI units). With ``physical`` the
    line-mass bodies have equal transverse moments (see module docstring)."""
    p = {k: float(rng.uniform(0.2, 1.2)) for k in ("L1", "L2", "L3", "L6")}
    p.update({k: float(rng.uniform(0.5, 20.0)) for k in ("M1", "M2", "M3", "M4", "M5", "M6")})
    p.update({k: float(rng.uniform(-0.4, 0.8)) for k in ("D1", "D2", "D3", "D6")})
    for j, (a, b) in {1: ("IX1", "IZ1"), 2: ("IX2", "IZ2"), 3: ("IX3", "IY3"), 6: ("IX6", "IY6")}.items():
        p[a] = float(rng.uniform(0.01, 2.0))
        p[b] = p[a] if physical else float(rng.uniform(0.01, 2.0))
    p["G"] = float(rng.choice([-1.0, 1.0]) * rng.uniform(1.0, 12.0))
    return p


def augmented(p: dict[str, float]) -> dict[str, float]:
    """Masses and inertias 'rapportées' (§3.1, §4.3), the
    downstream sums including the point masses M4, M5 at O4."""
    down2 = p["M3"] + p["M4"] + p["M5"] + p["M6"]
    down3 = p["M4"] + p["M5"] + p["M6"]
    v = {
        "VY1": p["D1"] * p["M1"] + p["L1"] * (p["M2"] + down2),
        "VY2": p["D2"] * p["M2"] + p["L2"] * down2,
        "VZ3": p["D3"] * p["M3"] + p["L3"] * down3,
        "VZ6": p["D6"] * p["M6"],
    }
    w = {
        "WY1": p["D1"] ** 2 * p["M1"] + p["L1"] ** 2 * (p["M2"] + down2),
        "WY2": p["D2"] ** 2 * p["M2"] + p["L2"] ** 2 * down2,
        "WZ3": p["D3"] ** 2 * p["M3"] + p["L3"] ** 2 * down3,
        "WZ6": p["D6"] ** 2 * p["M6"],
    }
    v.update({
        "JX1": p["IX1"] + w["WY1"], "JZ1": p["IZ1"] + w["WY1"],
        "JX2": p["IX2"] + w["WY2"], "JZ2": p["IZ2"] + w["WY2"],
        "JX3": p["IX3"] + w["WZ3"], "JY3": p["IY3"] + w["WZ3"],
        "JX6": p["IX6"] + w["WZ6"], "JY6": p["IY6"] + w["WZ6"],
    })
    return v


# ---------------------------------------------------------------- closed forms


def closed_form_Q(q: np.ndarray, p: dict[str, float]) -> np.ndarray:
    """Gravity torques Q(1..6), §4.4 (right-hand side of (3-1))."""
    k = augmented(p)
    G = p["G"]
    _, t2, t3, t4, t5, _ = q
    S2 = np.sin(t2)
    C23 = np.cos(t2 + t3)
    S234, C234 = np.sin(t2 + t3 + t4), np.cos(t2 + t3 + t4)
    S5, C5 = np.sin(t5), np.cos(t5)
    Q = np.zeros(6)
    Q[5] = 0.0                                       # Q6
    Q[4] = G * (S234 * S5 * k["VZ6"])                # Q5
    Q[3] = G * (-C234 * C5 * k["VZ6"])               # Q4
    Q[2] = G * (-C23 * k["VZ3"]) + Q[3]              # Q3
    Q[1] = G * (-S2 * k["VY2"]) + Q[2]               # Q2
    Q[0] = 0.0                                       # Q1
    return Q


def closed_form_A(q: np.ndarray, p: dict[str, float]) -> np.ndarray:
    """Inertia matrix A_ij, §4.5 (errata on A11 and A33)."""
    k = augmented(p)
    L2, L3 = p["L2"], p["L3"]
    VZ3, VZ6 = k["VZ3"], k["VZ6"]
    JX2, JZ2, JX3, JY3, JX6, JY6 = (k[s] for s in ("JX2", "JZ2", "JX3", "JY3", "JX6", "JY6"))
    _, t2, t3, t4, t5, t6 = q
    S2, C2 = np.sin(t2), np.cos(t2)
    S3 = np.sin(t3)
    S4, C4 = np.sin(t4), np.cos(t4)
    S5, C5 = np.sin(t5), np.cos(t5)
    S6, C6 = np.sin(t6), np.cos(t6)
    S23, C23 = np.sin(t2 + t3), np.cos(t2 + t3)
    S34, C34 = np.sin(t3 + t4), np.cos(t3 + t4)
    S234, C234 = np.sin(t2 + t3 + t4), np.cos(t2 + t3 + t4)

    A = np.zeros((6, 6))
    # A11; erratum: first JX6 term is JX6*(C6*S5*S234)**2
    A[0, 0] = (2 * VZ3 * L2 * (C23 * S2) + 2 * VZ6 * L2 * (C234 * C5 * S2)
               + 2 * VZ6 * L3 * (C234 * C5 * C23) + JZ2 * S2 * S2 + JY3 * C23 * C23
               + JX6 * C6 * S5 * S234 * C6 * S5 * S234
               + JX6 * C6 * S5 * S234 * S6 * C234 + JX6 * S6 * C234 * C6 * S5 * S234
               + JX6 * S6 * C234 * S6 * C234 + JY6 * S6 * S5 * S234 * S6 * S5 * S234
               - JY6 * S6 * S5 * S234 * C6 * C234 - JY6 * C6 * C234 * S6 * S5 * S234
               + JY6 * C6 * C234 * C6 * C234)
    # A12
    A[0, 1] = (VZ6 * L2 * (-S5 * C2) + VZ6 * L3 * (S5 * S23)
               + JX6 * C6 * C5 * C6 * S5 * S234 + JX6 * C6 * C5 * S6 * C234
               + JY6 * S6 * C5 * S6 * S5 * S234 - JY6 * S6 * C5 * C6 * C234)
    # A13
    A[0, 2] = (VZ6 * L3 * (S5 * S23)
               + JX6 * C6 * C5 * C6 * S5 * S234 + JX6 * C6 * C5 * S6 * C234
               + JY6 * S6 * C5 * S6 * S5 * S234 - JY6 * S6 * C5 * C6 * C234)
    # A14
    A[0, 3] = (JX6 * C6 * C5 * C6 * S5 * S234 + JX6 * C6 * C5 * S6 * C234
               + JY6 * S6 * C5 * S6 * S5 * S234 - JY6 * S6 * C5 * C6 * C234)
    # A15
    A[0, 4] = (VZ6 * L2 * (S2 * C5) + VZ6 * L3 * (C23 * C5)
               + JX6 * S6 * C6 * S5 * S234 + JX6 * S6 * S6 * C234
               - JY6 * C6 * S6 * S5 * S234 + JY6 * C6 * C6 * C234)
    A[0, 5] = 0.0                                                        # A16
    # A22
    A[1, 1] = (2 * VZ3 * L2 * (-S3) + 2 * VZ6 * L2 * (-S34 * C5) + 2 * VZ6 * L3 * (C4 * C5)
               + JX2 + JX3 + JX6 * C6 * C5 * C6 * C5 + JY6 * S6 * C5 * S6 * C5)
    # A23 (VZ6*L3*C4*C5 is printed twice, as it should be)
    A[1, 2] = (VZ3 * L2 * (-S3) + VZ6 * L3 * (C4 * C5) + VZ6 * L2 * (-S34 * C5)
               + VZ6 * L3 * (C4 * C5) + JX3 + JX6 * C6 * C5 * C6 * C5 + JY6 * S6 * C5 * S6 * C5)
    # A24
    A[1, 3] = (VZ6 * L2 * (-S34 * C5) + VZ6 * L3 * (C4 * C5)
               + JX6 * C6 * C5 * C6 * C5 + JY6 * S6 * C5 * S6 * C5)
    # A25
    A[1, 4] = (VZ6 * L2 * (-C34 * S5) + VZ6 * L3 * (-S4 * S5)
               + JX6 * S6 * C6 * C5 - JY6 * C6 * S6 * C5)
    A[1, 5] = 0.0                                                        # A26
    # A33; erratum: 2*VZ6*L3 (printed 2*VZ3*L3)
    A[2, 2] = 2 * VZ6 * L3 * (C4 * C5) + JX3 + JX6 * C6 * C5 * C6 * C5 + JY6 * S6 * C5 * S6 * C5
    A[2, 3] = VZ6 * L3 * (C4 * C5) + JX6 * C6 * C5 * C6 * C5 + JY6 * S6 * C5 * S6 * C5
    A[2, 4] = VZ6 * L3 * (-S4 * S5) + JX6 * S6 * C6 * C5 - JY6 * C6 * S6 * C5
    A[2, 5] = 0.0
    A[3, 3] = JX6 * C6 * C5 * C6 * C5 + JY6 * S6 * C5 * S6 * C5
    A[3, 4] = JX6 * S6 * C6 * C5 - JY6 * C6 * S6 * C5
    A[3, 5] = 0.0
    A[4, 4] = JX6 * S6 * S6 + JY6 * C6 * C6
    A[4, 5] = 0.0
    A[5, 5] = 0.0
    return np.triu(A) + np.triu(A, 1).T          # A_ji = A_ij


# ---------------------------------------------------------------- the same robot, MDH


def _joint(name, alpha, a, theta, d, mass, com, inertia):
    return {"name": name, "type": "revolute",
            "mdh": {"alpha": alpha, "a": a, "theta": theta, "d": d},
            "limits": {"position": [-np.pi, np.pi], "velocity": 5.0, "torque": 1000.0},
            "body": {"mass": mass, "com": [float(c) for c in com],
                     "inertia": np.asarray(inertia, dtype=float).tolist()}}


def robot_dict(p: dict[str, float], add: float | None = 0.0) -> dict:
    """Description dict of the report's robot (mapping table in the module docstring).
    ``add`` = s adds s·E to every body's inertia; ``add=None`` zeroes them all."""
    def I(diag):
        if add is None:
            return np.zeros((3, 3))
        return np.diag(diag) + add * np.eye(3)

    zero = np.zeros(3)
    joints = [
        _joint("th1", 0.0, 0.0, 0.0, p["L1"], p["M1"], (0, 0, p["D1"] - p["L1"]), I((p["IZ1"], p["IX1"], 0))),
        _joint("th2", -HALF_PI, 0.0, -HALF_PI, 0.0, p["M2"], (p["D2"], 0, 0), I((0, p["IZ2"], p["IX2"]))),
        _joint("th3", 0.0, p["L2"], HALF_PI, 0.0, p["M3"], (p["D3"], 0, 0), I((0, p["IY3"], p["IX3"]))),
        _joint("th4", 0.0, p["L3"], 0.0, 0.0, p["M4"], zero, np.zeros((3, 3))),
        _joint("th5", HALF_PI, 0.0, HALF_PI, 0.0, p["M5"], zero, np.zeros((3, 3))),
        _joint("th6", HALF_PI, 0.0, 0.0, 0.0, p["M6"], (0, 0, p["D6"]), I((p["IX6"], p["IY6"], 0))),
    ]
    return {"name": "liegeois_aldon_6dof", "gravity": [0.0, 0.0, p["G"]], "joints": joints,
            "tool": {"alpha": 0.0, "a": 0.0, "theta": 0.0, "d": p["L6"]}}


def robot(p: dict[str, float], add: float | None = 0.0) -> Robot:
    return Robot(description_from_dict(robot_dict(p, add)))


# ---------------------------------------------------------------- the report's geometry


def _rot(axis: str, t: float) -> np.ndarray:
    c, s = np.cos(t), np.sin(t)
    return {"X": np.array([[1, 0, 0], [0, c, -s], [0, s, c]]),
            "Y": np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]]),
            "Z": np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])}[axis]


SENTENCE = (("R", "Y"), ("T", "Y", "L1"), ("R", "X"), ("T", "Y", "L2"), ("R", "X"), ("T", "Z", "L3"),
            ("R", "X"), ("T", "Z", None), ("R", "Y"), ("T", "Z", None), ("R", "Z"), ("T", "Z", "L6"))
UNIT = {"X": np.array([1.0, 0, 0]), "Y": np.array([0, 1.0, 0]), "Z": np.array([0, 0, 1.0])}
# columns of C_i: our x_i, y_i, z_i in the report's R_i axes (module docstring)
C = [np.column_stack(c) for c in (
    (UNIT["Z"], UNIT["X"], UNIT["Y"]), (UNIT["Z"], UNIT["X"], UNIT["Y"]),
    (UNIT["Y"], UNIT["Z"], UNIT["X"]), (UNIT["Z"], -UNIT["Y"], UNIT["X"]),
    (UNIT["Z"], -UNIT["Y"], UNIT["X"]), (UNIT["X"], -UNIT["Z"], UNIT["Y"]),
    (UNIT["X"], UNIT["Y"], UNIT["Z"]))]


def seed_frames(q: np.ndarray, p: dict[str, float]):
    """Report frames R_1..R_6 (rotation, origin O_j) and the tool point, base R,
    built literally from the description sentence (§4.1.1)."""
    R, o, frames, j = np.eye(3), np.zeros(3), [], 0
    for step in SENTENCE:
        if step[0] == "R":
            R = R @ _rot(step[1], q[j])
            j += 1
            frames.append((R.copy(), o.copy()))
        else:
            o = o + R @ UNIT[step[1]] * (p[step[2]] if step[2] else 0.0)
    return frames, o


# ---------------------------------------------------------------- tests

PARAM_SEEDS = (11, 22, 33, 44)
N_Q = 60


def configurations(seed: int, n: int = N_Q) -> np.ndarray:
    return np.random.default_rng(1000 + seed).uniform(-np.pi, np.pi, (n, 6))


def test_mdh_rows_reproduce_the_seed_frames():
    """The mapping table: our frame i has its z axis on the report's joint axis i,
    the x/y axes of C_i, and the tool point is O4 + L6·z6 (§4.1.1)."""
    p = random_params(np.random.default_rng(5), physical=True)
    r = robot(p)
    mdh_origin_shift = [p["L1"], 0, 0, 0, 0, 0]  # our frame 1 sits at O2, on axis 1
    for q in configurations(5, 20):
        frames, tool = seed_frames(q, p)
        R0 = C[0]  # our base axes in R
        for i, (Ri, Oi) in enumerate(frames, start=1):
            T = r.frame(q, i)
            np.testing.assert_allclose(R0 @ T[:3, :3], Ri @ C[i], atol=1e-12)
            origin = Oi + Ri @ UNIT["Y"] * mdh_origin_shift[i - 1]
            np.testing.assert_allclose(R0 @ T[:3, 3], origin, atol=1e-12)
        np.testing.assert_allclose(R0 @ r.fk(q)[:3, 3], tool, atol=1e-12)


@pytest.mark.parametrize("seed", PARAM_SEEDS)
def test_closed_form_physical(seed):
    """A (§4.5, errata) and Q (§4.4) equal our inertia() and
    −gravity() at 60 random θ, with physically valid parameters built directly."""
    p = random_params(np.random.default_rng(seed), physical=True)
    r = robot(p)
    for q in configurations(seed):
        A_seed = closed_form_A(q, p)
        np.testing.assert_allclose(r.inertia(q), A_seed, rtol=1e-9, atol=1e-9 * np.abs(A_seed).max())
        Q_seed = closed_form_Q(q, p)
        np.testing.assert_allclose(-r.gravity(q), Q_seed, rtol=1e-9, atol=1e-9 * np.abs(Q_seed).max())
        # rnea at rest and zero velocity is A qdd + G (friction and armature are 0)
        qdd = np.random.default_rng(seed).uniform(-3, 3, 6)
        np.testing.assert_allclose(r.rnea(q, np.zeros(6), qdd), A_seed @ qdd - Q_seed,
                                   rtol=1e-9, atol=1e-9 * np.abs(A_seed).max())


@pytest.mark.parametrize("seed", PARAM_SEEDS)
def test_closed_form_every_symbol(seed):
    """The closed forms with independent IX_j, IY_j, IZ_j (JX2 ≠ JZ2, JX6 ≠ JY6, ...),
    via A(I) = A(I + s·E) − A(s·E) + A(0): three valid robots per parameter set."""
    p = random_params(np.random.default_rng(seed), physical=False)
    s = 2.5  # > any |IX_j − IZ_j|: every shifted tensor satisfies the triangle inequality
    r_shift, r_point = robot(p, s), robot(p, None)
    r_iso = Robot(description_from_dict(_isotropic_only(robot_dict(p, s), s)))
    for q in configurations(seed):
        A_ours = r_shift.inertia(q) - r_iso.inertia(q) + r_point.inertia(q)
        A_seed = closed_form_A(q, p)
        np.testing.assert_allclose(A_ours, A_seed, rtol=1e-9, atol=1e-9 * np.abs(A_seed).max())
        Q_seed = closed_form_Q(q, p)
        np.testing.assert_allclose(-r_point.gravity(q), Q_seed, rtol=1e-9, atol=1e-9 * np.abs(Q_seed).max())


def _isotropic_only(doc: dict, s: float) -> dict:
    """Same robot with every body inertia that received s·E replaced by s·E alone."""
    for j in doc["joints"]:
        I = np.asarray(j["body"]["inertia"])
        if I.any():
            j["body"]["inertia"] = (s * np.eye(3)).tolist()
    return doc


def test_printed_forms_are_wrong_where_the_errata_say():
    """The errata matter: the printed A33 (VZ3) and the printed first JX6
    term of A11 disagree with our engine; the corrected ones agree."""
    p = random_params(np.random.default_rng(7), physical=True)
    r = robot(p)
    k = augmented(p)
    q = configurations(7, 1)[0]
    _, t2, t3, t4, t5, t6 = q
    A = r.inertia(q)
    A_seed = closed_form_A(q, p)
    C4, C5, C6, S5 = np.cos(t4), np.cos(t5), np.cos(t6), np.sin(t5)
    S234 = np.sin(t2 + t3 + t4)
    printed_A33 = A_seed[2, 2] - 2 * k["VZ6"] * p["L3"] * C4 * C5 + 2 * k["VZ3"] * p["L3"] * C4 * C5
    printed_A11 = (A_seed[0, 0] - k["JX6"] * (C6 * S5 * S234) ** 2
                   + k["JX6"] * C6 * S5 * S234 + C5 * S5 * S234)
    assert A[2, 2] == pytest.approx(A_seed[2, 2], rel=1e-9)
    assert A[0, 0] == pytest.approx(A_seed[0, 0], rel=1e-9)
    assert abs(printed_A33 - A[2, 2]) > 1e-3 * abs(A[2, 2])
    assert abs(printed_A11 - A[0, 0]) > 1e-3 * abs(A[0, 0])


def _dA(q: np.ndarray, p: dict[str, float], k: int, h: float = 1e-5) -> np.ndarray:
    e = np.zeros(6)
    e[k] = h
    return (closed_form_A(q + e, p) - closed_form_A(q - e, p)) / (2 * h)


@pytest.mark.parametrize("seed", PARAM_SEEDS[:3])
def test_velocity_coefficients(seed):
    """Centrifugal C_ij (3-18, halved per the erratum) and Coriolis
    B_ijk (3-17) from the closed-form A equal our rnea's velocity terms; the
    printed (3-18) is twice the true value."""
    p = random_params(np.random.default_rng(seed), physical=True)
    r = robot(p)
    zero = np.zeros(6)
    for q in configurations(seed, 8):
        dA = [_dA(q, p, k) for k in range(6)]          # dA[k][i, j] = ∂A_ij/∂q_k
        g = r.rnea(q, zero, zero)
        scale = np.abs(closed_form_A(q, p)).max()
        for j in range(6):
            ej = np.eye(6)[j]
            c_ours = r.rnea(q, ej, zero) - g          # Σ_i C_ij with qd = e_j
            c_fixed = np.array([dA[j][i, j] - 0.5 * dA[i][j, j] for i in range(6)])
            c_printed = np.array([2 * dA[j][i, j] - dA[i][j, j] for i in range(6)])
            np.testing.assert_allclose(c_ours, c_fixed, atol=1e-6 * scale)
            assert np.allclose(c_printed, 2 * c_fixed)
            for k in range(j + 1, 6):
                qd = ej + np.eye(6)[k]
                b_ours = r.rnea(q, qd, zero) - g - c_ours - (r.rnea(q, np.eye(6)[k], zero) - g)
                b_seed = np.array([dA[k][i, j] + dA[j][i, k] - dA[i][j, k] for i in range(6)])
                np.testing.assert_allclose(b_ours, b_seed, atol=1e-6 * scale)


# ---------------------------------------------------------------- the deploy YAML, generated

YAML_SYMBOLS = {"L1": 0.40, "L2": 0.60, "L3": 0.50, "L6": 0.15, "M1": 15.0, "M2": 12.0, "M3": 8.0,
                "M4": 0.5, "M5": 0.5, "M6": 2.0, "D1": 0.20, "D2": 0.30, "D3": 0.25, "D6": 0.08,
                "IX1": 0.40, "IZ1": 0.40, "IX2": 0.35, "IZ2": 0.35, "IX3": 0.17, "IY3": 0.17,
                "IX6": 0.005, "IY6": 0.005, "G": 9.81}


def test_liegeois_aldon_yaml():
    """deploy/robots/liegeois_aldon_6dof.yaml is the mapping table above at the symbol
    values its header states, and its generated closed forms (models/generated) are the
    report's A (§4.5, errata) and Q (§4.4) at 60 random θ."""
    from models.generated import liegeois_aldon_6dof as gen

    desc = Robot.from_yaml(ROOT / gen.SOURCE).description
    ref = description_from_dict(robot_dict(YAML_SYMBOLS))
    assert desc.gravity == ref.gravity and desc.tool == ref.tool
    for ours, theirs in zip(desc.joints, ref.joints, strict=True):
        assert (ours.mdh, ours.body) == (theirs.mdh, theirs.body), ours.name
    A, G = np.zeros((6, 6)), np.zeros(6)
    g = np.array(desc.gravity)
    for q in configurations(3):
        gen.inertia(q, A)
        gen.gravity(q, g, G)
        A_seed = closed_form_A(q, YAML_SYMBOLS)
        Q_seed = closed_form_Q(q, YAML_SYMBOLS)
        np.testing.assert_allclose(A, A_seed, rtol=1e-9, atol=1e-9 * np.abs(A_seed).max())
        np.testing.assert_allclose(-G, Q_seed, rtol=1e-9, atol=1e-9 * np.abs(Q_seed).max())
