"""Closed-form A(q), C(q, qd), G(q, g) of a serial MDH chain, built symbolically.

The construction follows Liégeois & Aldon 1980 (§3.1, the "augmented bodies"): the
bodies downstream of joint j are lumped into one composite body, described in frame j
by its mass M_j, its first moment h_j about O_j and its inertia tensor K_j about O_j,
so that every coefficient needs only the relative rotations of the downstream joints
(their [R_i^k], §4.5). The recursion from the tip down (the composite-rigid-body
algorithm, Featherstone 2008, ch. 6, in 3-vector form) is

    M_j = m_j + M_{j+1}
    h_j = m_j c_j + R h_{j+1} + M_{j+1} p
    K_j = I_j + m_j S(c_j) + R K_{j+1} R^T + M_{j+1} S(p) + P(p, R h_{j+1})

with R, p the rotation and origin of frame j+1 in frame j (MDH, thesis eq. 1-5),
S(x) = |x|^2 E - x x^T and P(p, y) = 2 (p.y) E - p y^T - y p^T (parallel-axis
theorem). A unit
rate of joint j moves composite j with the momentum (F, N) (F = z x h, N = K z for a
revolute joint, F = M z, N = h x z for a prismatic one); carried down to frame i
(F <- R F, N <- R N + p x R F) and projected on z_i it is A_ij (Liégeois & Aldon 1980,
eq. 3-17). Gravity as an input vector g (base coordinates), carried up the chain
(g_j = R^T g_{j-1}), gives G_j = -g_j . (z x h_j) (revolute) or -M_j g_j . z
(prismatic), the report's Q_i (§4.4) with the opposite sign (docs/conventions.md).
C is the Christoffel form of ∂A/∂q (Liégeois & Aldon 1980, eq. 3-18 with the factor-2
erratum of docs/errata.md), so Ȧ - 2C is skew-symmetric.

G_summed is G in the report's own factorisation (§4.4): the angles of consecutive
parallel axes summed (cos(q2 + q3 + q4) as its C234), G_j = G_j+1 + body j's lever.
It is counted beside the report's Q, not emitted: for a general g it costs more than G.

Joint angles enter only through symbols c_j = cos(q_j + θ_j), s_j = sin(q_j + θ_j)
(a prismatic joint through q_j itself), and ∂/∂q_j = c_j ∂/∂s_j - s_j ∂/∂c_j; nothing
is expanded or trigonometrically simplified, so generation stays fast. Constant
cosines and sines of the MDH α and θ within 1e-12 of 0 or ±1 are snapped to them
(an α of π/2 read from YAML is 1.5707963267948966, whose cosine is 6e-17), which
keeps the structural zeros of the chain exact.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import sympy as sp

from models.chain.config import RobotDescription

SNAP = 1e-12


def number(x: float) -> sp.Expr:
    """A float as a sympy number, snapped to 0 or ±1 within :data:`SNAP`."""
    for v in (0, 1, -1):
        if abs(x - v) < SNAP:
            return sp.Integer(v)
    return sp.Float(x, 17)


def rot_z(c, s) -> sp.Matrix:
    return sp.Matrix([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def rot_x(c, s) -> sp.Matrix:
    return sp.Matrix([[1, 0, 0], [0, c, -s], [0, s, c]])


def skew_sq(x: sp.Matrix) -> sp.Matrix:
    """S(x) = |x|^2 E - x x^T (inertia of a unit point mass at x)."""
    return (x.dot(x)) * sp.eye(3) - x * x.T


@dataclass(frozen=True)
class Symbols:
    """Inputs of the generated code: the cosine and sine symbols of revolute joints and
    of sums of angles about parallel axes (``trig``: joints -> (c, s), e.g. (2, 3, 4) ->
    cos, sin of q2 + q3 + q4 + their θ), prismatic joint coordinates, joint rates and the
    gravity vector."""

    q: tuple[sp.Symbol, ...]
    qd: tuple[sp.Symbol, ...]
    g: tuple[sp.Symbol, sp.Symbol, sp.Symbol]
    theta: tuple[float, ...]
    revolute: tuple[bool, ...]
    trig: dict[tuple[int, ...], tuple[sp.Symbol, sp.Symbol]]

    def cs(self, joints: tuple[int, ...]) -> tuple[sp.Symbol, sp.Symbol]:
        """cos and sin of the sum of the joints' angles (with their θ offsets)."""
        if joints not in self.trig:
            tag = "_".join(str(j) for j in joints)
            self.trig[joints] = (sp.Symbol(f"c{tag}"), sp.Symbol(f"s{tag}"))
        return self.trig[joints]


@dataclass(frozen=True)
class ClosedForms:
    """A (n x n, symmetric), C (n x n), G (n); G_summed is G with the angles of parallel
    axes summed (counted, not emitted: cheaper for a gravity along a base axis, dearer
    for a general g, docs/generated_models.md)."""

    symbols: Symbols
    A: sp.Matrix
    C: sp.Matrix
    G: sp.Matrix
    G_summed: sp.Matrix


def make_symbols(desc: RobotDescription) -> Symbols:
    n = desc.n
    return Symbols(
        q=tuple(sp.Symbol(f"q{i}") for i in range(n)),
        qd=tuple(sp.Symbol(f"qd{i}") for i in range(n)),
        g=(sp.Symbol("g0"), sp.Symbol("g1"), sp.Symbol("g2")),
        theta=tuple(j.mdh.theta for j in desc.joints),
        revolute=tuple(j.type == "revolute" for j in desc.joints),
        trig={})


def joint_transform(desc: RobotDescription, sym: Symbols, j: int) -> tuple[sp.Matrix, sp.Matrix]:
    """Rotation and origin of frame j in frame j-1 (thesis eq. 4):
    R = RotX(α) RotZ(θ + q), p = (a, -d sin α, d cos α), d + q for a prismatic joint."""
    m = desc.joints[j].mdh
    ca, sa = number(math.cos(m.alpha)), number(math.sin(m.alpha))
    if sym.revolute[j]:
        (c, s), d = sym.cs((j,)), number(m.d)
    else:
        c, s, d = number(math.cos(m.theta)), number(math.sin(m.theta)), number(m.d) + sym.q[j]
    R = rot_x(ca, sa) * rot_z(c, s)
    p = sp.Matrix([number(m.a), -d * sa, d * ca])
    return R, p


def derivative(expr: sp.Expr, sym: Symbols, k: int) -> sp.Expr:
    """∂expr/∂q_k by the chain rule on every (c, s) whose angle contains q_k, or on q_k."""
    if not sym.revolute[k]:
        return sp.diff(expr, sym.q[k])
    return sp.Add(*(c * sp.diff(expr, s) - s * sp.diff(expr, c)
                    for joints, (c, s) in sym.trig.items() if k in joints))


def parallel_to_previous(desc: RobotDescription, j: int) -> bool:
    """Joint j revolute, about the same axis direction as revolute joint j-1 (α_j = 0)."""
    return (j > 0 and desc.joints[j].type == "revolute" and desc.joints[j - 1].type == "revolute"
            and number(math.sin(desc.joints[j].mdh.alpha)) == 0
            and number(math.cos(desc.joints[j].mdh.alpha)) == 1)


def gravity_chained(sym: Symbols, frames) -> list[sp.Matrix]:
    """g_j = R_0j^T g for every frame j, one joint at a time (g_j = R^T g_j-1)."""
    out, gj = [], sp.Matrix(sym.g)
    for R, _ in frames:
        gj = R.T * gj
        out.append(gj)
    return out


def gravity_summed(desc: RobotDescription, sym: Symbols) -> list[sp.Matrix]:
    """g_j = R_0j^T g for every frame j, with the angles of consecutive parallel axes
    summed (R_0j = P RotZ(q_i + ... + q_j), Liégeois & Aldon 1980, §4.4: C234, S234)."""
    out = []
    P, group = sp.eye(3), ()
    for j, joint in enumerate(desc.joints):
        if parallel_to_previous(desc, j):
            group = group + (j,)
        else:
            if group:
                P = P * rot_z(*sym.cs(group))
            a = joint.mdh.alpha
            P = P * rot_x(number(math.cos(a)), number(math.sin(a)))
            if sym.revolute[j]:
                group = (j,)
            else:
                t = joint.mdh.theta
                P, group = P * rot_z(number(math.cos(t)), number(math.sin(t))), ()
        R = P * rot_z(*sym.cs(group)) if group else P
        out.append(R.T * sp.Matrix(sym.g))
    return out


def gravity_vector(desc: RobotDescription, frames, M, h, gs: list[sp.Matrix],
                   parallel: bool) -> sp.Matrix:
    """G_j = -g_j . (z x h_j) (prismatic -M_j g_j . z); with ``parallel``, where axis j+1
    is parallel to axis j, G_j = G_j+1 - g_j . (z x (m_j c_j + M_j+1 p)) (Liégeois &
    Aldon 1980, §4.4: Q_i-1 = ... + Q_i), which pays only with summed angles."""
    n = desc.n
    z = sp.Matrix([0, 0, 1])
    G = sp.zeros(n, 1)
    for j in range(n - 1, -1, -1):
        if parallel and j + 1 < n and parallel_to_previous(desc, j + 1):
            b = desc.joints[j].body
            lever = (number(b.mass) * sp.Matrix([number(x) for x in b.com])
                     + M[j + 1] * frames[j + 1][1])
            G[j] = G[j + 1] - gs[j].dot(z.cross(lever))
        elif desc.joints[j].type == "revolute":
            G[j] = -gs[j].dot(z.cross(h[j]))
        else:
            G[j] = -M[j] * gs[j][2]
    return G


def closed_forms(desc: RobotDescription) -> ClosedForms:
    """A, C and G of ``desc`` by the augmented-body recursion (module docstring)."""
    sym = make_symbols(desc)
    n = desc.n
    z = sp.Matrix([0, 0, 1])
    frames = [joint_transform(desc, sym, j) for j in range(n)]

    # composite (augmented) bodies, tip to base, each in its own frame
    M: list = [None] * (n + 1)
    h: list = [None] * (n + 1)
    K: list = [None] * (n + 1)
    M[n], h[n], K[n] = sp.Integer(0), sp.zeros(3, 1), sp.zeros(3, 3)
    for j in range(n - 1, -1, -1):
        b = desc.joints[j].body
        m = number(b.mass)
        c = sp.Matrix([number(x) for x in b.com])
        I = sp.Matrix([[number(x) for x in row] for row in b.inertia])
        M[j] = m + M[j + 1]
        h[j] = m * c
        K[j] = I + m * skew_sq(c)
        if j + 1 < n:
            R, p = frames[j + 1]
            y = R * h[j + 1]
            h[j] = h[j] + y + M[j + 1] * p
            K[j] = (K[j] + R * K[j + 1] * R.T + M[j + 1] * skew_sq(p)
                    + 2 * p.dot(y) * sp.eye(3) - p * y.T - y * p.T)

    A = sp.zeros(n, n)
    for j in range(n):
        if sym.revolute[j]:
            F, N = z.cross(h[j]), K[j] * z
        else:
            F, N = M[j] * z, h[j].cross(z)
        for i in range(j, -1, -1):
            if i < j:                                   # carry the momentum to frame i
                R, p = frames[i + 1]
                F = R * F
                N = R * N + p.cross(F)
            A[i, j] = A[j, i] = N[2] if sym.revolute[i] else F[2]
        A[j, j] += number(desc.joints[j].armature)

    G = gravity_vector(desc, frames, M, h, gravity_chained(sym, frames), False)
    G_summed = gravity_vector(desc, frames, M, h, gravity_summed(desc, sym), True)

    dA = tuple(A.applyfunc(lambda e, k=k: derivative(e, sym, k)) for k in range(n))
    C = sp.zeros(n, n)
    for i in range(n):
        for j in range(n):
            C[i, j] = sp.Rational(1, 2) * sum(
                (dA[k][i, j] + dA[j][i, k] - dA[i][j, k]) * sym.qd[k] for k in range(n))
    return ClosedForms(sym, A, C, G, G_summed)
