"""Checks of a gait: multi-body ZMP inside the support polygon, joint position and velocity
limits, mean forward speed of the pelvis.

The ZMP is recomputed from the joint angles alone with the tree models: the world pose of
the stance sole is chained from the first sample (left sole at its place, the root moved to
the other sole when the support says so, its pose from the forward kinematics), every
body's CoG and orientation in the world give, by central finite differences, the CoG
acceleration c̈ and the rate of change of the angular momentum about the CoG L̇_G
(Σ m_b (c_b − c) × (ċ_b − ċ) + R_b I_b R_bᵀ ω_b, ω_b from Ṙ_b R_bᵀ). With the contact
force F = M (c̈ − g), the ZMP on the floor z = 0 is p_x = c_x − (c_z F_x + L̇_y)/F_z,
p_y = c_y − (c_z F_y − L̇_x)/F_z (the ZMP of Vukobratović & Borovac 2004, written about the CoG).
The support polygon is the stance sole's outline, or the convex hull of both outlines in
double support; the margin is the signed distance to its nearest edge (> 0 inside).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.polygon import hull
from models.tree.robot import TreeRobot
from models.common.support import DOUBLE, LEFT, RIGHT, SOLES, SUPPORT_NAMES

SPEED_TOLERANCE = 0.02


@dataclass
class GaitReport:
    """zmp (k, 2) world; margin (k,) m; pelvis (k, 3) world; the worst sample of each
    check; problems: one sentence per failed check (empty when the gait passes)."""

    zmp: np.ndarray
    margin: np.ndarray
    pelvis: np.ndarray
    speed_ratio: np.ndarray       # (n,) max |q̇| / vmax per joint
    pelvis_speed: float           # m/s over the walking phase
    problems: list

    @property
    def ok(self) -> bool:
        return not self.problems


def margin(polygon: np.ndarray, p: np.ndarray) -> float:
    """Signed distance of p to the edges of a convex counter-clockwise polygon (> 0 inside)."""
    a = polygon
    e = np.roll(a, -1, axis=0) - a
    normal = np.column_stack([-e[:, 1], e[:, 0]]) / np.linalg.norm(e, axis=1)[:, None]
    return float(((p - a) * normal).sum(axis=1).min())


def _world_poses(robot: TreeRobot, q: np.ndarray, support: np.ndarray, foot_spacing: float):
    """World poses (k, nb, 4, 4) of the bodies and (k, 2, 4, 4) of the soles."""
    k_n, nb = len(q), robot.model.nb
    Tb = np.empty((k_n, nb, 4, 4))
    soles = np.empty((k_n, 2, 4, 4))
    root = LEFT
    T_root = np.eye(4)
    T_root[1, 3] = foot_spacing / 2.0
    fidx = {f: robot.model.index("frame", SOLES[f]) for f in (LEFT, RIGHT)}
    robot.set_root(SOLES[root])
    for k in range(k_n):
        data = robot.kinematics(q[k])
        if support[k] != DOUBLE and support[k] != root:
            T_root = T_root @ data.Tf[fidx[int(support[k])]]
            root = int(support[k])
            robot.set_root(SOLES[root])
            data = robot.kinematics(q[k])
        Tb[k] = T_root @ data.Tb
        for f in (LEFT, RIGHT):
            soles[k, f] = T_root @ data.Tf[fidx[f]]
    return Tb, soles


def zmp_multibody(robot: TreeRobot, Tb: np.ndarray, period: float) -> np.ndarray:
    """ZMP (k, 2) from the bodies' world poses (module docstring)."""
    m = robot.model
    mass, M = m.mass, m.total_mass
    R = Tb[:, :, :3, :3]
    cb = np.einsum("kbij,bj->kbi", R, m.com) + Tb[:, :, :3, 3]
    c = np.einsum("b,kbi->ki", mass, cb) / M
    cbd = np.gradient(cb, period, axis=0)
    cd = np.gradient(c, period, axis=0)
    cdd = np.gradient(cd, period, axis=0)
    W = np.einsum("kbij,kblj->kbil", np.gradient(R, period, axis=0), R)      # Ṙ Rᵀ
    omega = 0.5 * np.stack([W[..., 2, 1] - W[..., 1, 2], W[..., 0, 2] - W[..., 2, 0],
                            W[..., 1, 0] - W[..., 0, 1]], axis=-1)
    Iw = np.einsum("kbij,bjl,kbml->kbim", R, m.inertia, R)
    L = (np.einsum("b,kbi->ki", mass, np.cross(cb - c[:, None], cbd - cd[:, None]))
         + np.einsum("kbij,kbj->ki", Iw, omega).reshape(len(c), 3))
    Ld = np.gradient(L, period, axis=0)
    F = M * (cdd - m.gravity)
    px = c[:, 0] - (c[:, 2] * F[:, 0] + Ld[:, 1]) / F[:, 2]
    py = c[:, 1] - (c[:, 2] * F[:, 1] - Ld[:, 0]) / F[:, 2]
    return np.column_stack([px, py])


def check_gait(robot: TreeRobot, t: np.ndarray, q: np.ndarray, support: np.ndarray, speed: float,
               speed_start: int, foot_spacing: float) -> GaitReport:
    """All the checks of the module docstring on a sampled gait (uniform period); the mean
    speed (m/s) of the pelvis is measured from sample speed_start to the last."""
    m = robot.model
    period = float(t[1] - t[0])
    problems = []
    Tb, soles = _world_poses(robot, q, support, foot_spacing)
    zmp = zmp_multibody(robot, Tb, period)
    outline = {f.frame: np.array(f.outline) for f in robot.description.feet}
    marg = np.empty(len(t))
    for k in range(len(t)):
        feet = (LEFT, RIGHT) if support[k] == DOUBLE else (int(support[k]),)
        pts = np.vstack([outline[SOLES[f]] @ soles[k, f, :2, :2].T + soles[k, f, :2, 3] for f in feet])
        marg[k] = margin(hull(pts), zmp[k])
    worst = int(np.argmin(marg))
    if marg[worst] <= 0.0:
        problems.append(f"the ZMP leaves the support polygon at t = {t[worst]:.3f} s "
                        f"({SUPPORT_NAMES[support[worst]]} support) by {-marg[worst]:.4f} m")
    for j, name in enumerate(m.joint_names):
        bad = np.nonzero((q[:, j] < m.qmin[j]) | (q[:, j] > m.qmax[j]))[0]
        if len(bad):
            problems.append(f"joint {name} leaves [{m.qmin[j]}, {m.qmax[j]}] rad at t = {t[bad[0]]:.3f} s")
    ratio = np.abs(np.diff(q, axis=0)).max(axis=0) / period / m.vmax
    for j in np.nonzero(ratio > 1.0)[0]:
        problems.append(f"joint {m.joint_names[j]} moves at {ratio[j] * m.vmax[j]:.3f} rad/s, above its "
                        f"velocity limit {m.vmax[j]} rad/s")
    pelvis = Tb[:, m.index("body", "pelvis"), :3, 3]
    v = float((pelvis[-1, 0] - pelvis[speed_start, 0]) / (t[-1] - t[speed_start]))
    if abs(v - speed) > SPEED_TOLERANCE * speed:
        problems.append(f"the pelvis walks at {v * 3600:.1f} m/h, not {speed * 3600:.1f} m/h "
                        f"(±{SPEED_TOLERANCE:.0%})")
    return GaitReport(zmp, marg, pelvis, ratio, v, problems)
