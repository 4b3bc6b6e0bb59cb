"""MJCF of the Stewart–Gough ground-motion rig (Staicu 2008), generated from the rig YAML.

Every body and joint is that of :mod:`models.rig.stewart` (so the two cannot drift): each leg j is a
chain from its base point B_j (frame Rb_j, leg along z at the home pose) of

- ``cross1``: hinge φ1 about x (the universal joint's first axis), its mass and inertia at B_j;
- ``cylinder``: hinge φ2 about the rotated y, its centre of mass l2/2 up the leg;
- ``rod``: the actuator, a slide λ along the leg (range: the stroke; its reference the home
  pose's λ, which eq. 10 puts a few µm from 0 with the YAML's rounded h), centre of mass at
  l1 + λ + l3/2;
- ``cross4`` and ``piece5`` at the platform joint P_j (l1 + l3 up the leg): hinges φ4 about x and
  φ5 about y, their inertias at P_j;
- ``cap``: hinge φ6 about piece5's z (massless in the model: Q6 = 0), in the platform's axes at
  the home pose, welded to the platform at the home
  pose, so rigidly part of it: each cap carries ``CAP_MASS`` of the platform's mass (a point mass at
  P_j with a flat inertia) and the platform body the rest (its inertia less the caps' by the
  parallel-axis theorem), the same rigid body in total (:func:`_platform_less_caps`). MuJoCo's
  soft constraints scale with the bodies they join: a light cap would leave the welds too soft
  to hold the loops (with 1e-3 kg m² caps the platform's orientation leaked within 0.1 s).

The platform (body ``platform``, as the hinge bench's plate; mass and inertia of the YAML, frame at
its centre of mass G) is a free body (joint ``rig_platform``); the six
welds close the loops (36 equations on 36 leg + 6 platform coordinates: six degrees of freedom, the
actuators). Its top plate (geom ``platform``, no mass of its own) has its upper face through G. The
scene's origin is G at the home pose when ``origin: plate`` (under the bench leg: M, the centre of
the sole, on the plate), the base's centre otherwise; z up, x and y as the rig's frame 0.

Actuators (REPRESENTATIVE, the text gives no drive): each slide is driven by a motor through a ball
screw of lead ``screw_lead`` (m per motor turn): the actuator's control is the motor torque (N m),
its force on the slide 2π/lead times it; the rotor inertia J and viscous friction b appear on the
slide as (2π/lead)² J (armature) and (2π/lead)² b (damping). Motor angle = 2π/lead × λ.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

import mujoco
import numpy as np

from models.rig.stewart import G_C2, G_C3, G_L1, G_L3, StewartModel, leg_lengths
from models.rig.config import LEG_NAMES

from drivers.sim.hil.mjcf_text import PLATFORM, MjcfError
from drivers.sim.hil.mjcf_text import quat as _quat
from drivers.sim.hil.mjcf_text import vec as _v

RIG_DEFAULTS: dict[str, float] = {      # REPRESENTATIVE values (not in Staicu 2008)
    "screw_lead": 0.02,                 # m per motor turn
    "motor_inertia": 1.0e-4,            # kg m², each actuator's rotor
    "motor_friction": 1.0e-3,           # N m s/rad, each actuator's rotor, viscous
    "plate_half_size": 0.5,             # m, the top plate the leg stands on
    "plate_thickness": 0.05,            # m
    "weld_timeconst": 0.0008,           # s, the loop-closing welds' stiffness (raised to 2 MuJoCo steps)
}
WELD_SOLIMP = (0.999, 0.9999, 0.001)    # impedance near 1: the welds carry ~1 kN with µm, not mm, of give
CAP_MASS, CAP_INERTIA = 1.0, 5.0        # kg, kg m² (about the plate's x and y; twice that about z)
LEG_JOINTS = ("u1", "u2", "act", "s4", "s5", "s6")     # Staicu's φ1, φ2, λ, φ4, φ5, φ6


def joint_name(kind: str, leg: int) -> str:
    return f"rig_{kind}_{LEG_NAMES[leg]}"


ACTUATORS = tuple(joint_name("act", j) for j in range(6))   # slide joints and their motors


def rig_params(raw: Mapping | None) -> dict[str, float]:
    """:data:`RIG_DEFAULTS` overridden by ``raw``; an unknown key or a value not > 0 (friction
    >= 0) is an :class:`MjcfError` naming it."""
    p = dict(RIG_DEFAULTS)
    for key, value in (raw or {}).items():
        if key not in p:
            raise MjcfError(f"rig.{key} is not a known key (known: {', '.join(sorted(p))})")
        p[key] = value
    for key, value in p.items():
        ok = isinstance(value, (int, float)) and math.isfinite(value) and \
            (value >= 0 if key in ("motor_friction", "motor_inertia") else value > 0)
        if not ok:
            raise MjcfError(f"rig.{key} must be a finite number {'>= 0' if key.startswith('motor_') else '> 0'}, "
                            f"got {value!r}")
        p[key] = float(value)
    return p


def gear(p: Mapping[str, float]) -> float:
    """Motor rad per metre of actuator displacement, 2π / lead."""
    return 2.0 * math.pi / p["screw_lead"]


def _inertial(pos, mass: float, I: np.ndarray) -> str:
    return (f'<inertial pos="{_v(*pos)}" mass="{_v(mass)}" '
            f'fullinertia="{_v(I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2])}"/>')


def _platform_less_caps(model: StewartModel) -> np.ndarray:
    """The platform's inertia about G less the six caps', diag(i, i, 2i) + CAP_MASS (|r|² 1 − r rᵀ),
    r = G P_j in the platform's frame (parallel axes): a flat plate (A + B = C) stays one."""
    I = model.inertia[5] - 6 * np.diag([CAP_INERTIA, CAP_INERTIA, 2.0 * CAP_INERTIA])
    for r in model.plat:
        I = I - CAP_MASS * (r @ r * np.eye(3) - np.outer(r, r))
    if model.mass[5] <= 6 * CAP_MASS or np.linalg.eigvalsh(I)[0] <= 0.0:
        raise MjcfError(f"{model.name}: bodies.platform: too light to carry the six welded caps "
                        f"({CAP_MASS:g} kg, {CAP_INERTIA:g} kg m² each at the joints)")
    return I


def rig_xml(model: StewartModel, p: Mapping[str, float], origin: str = "plate", timestep: float = 4.0e-4,
            contact: tuple[float, float] = (0.8, 0.005)) -> tuple[str, str, str]:
    """(bodies, equalities, actuators) of the rig; ``origin`` ``plate`` puts G at the home pose at
    the scene's origin (the plate's top face through it), ``base`` the base's centre; ``contact``:
    the plate's sliding friction and contact time constant (s)."""
    d = model.desc
    base_z = -d.h if origin == "plate" else 0.0
    k, ratio = model.geo, gear(p)
    l1, l3, c2, c3 = k[G_L1], k[G_L3], k[G_C2], k[G_C3]
    lo, hi = d.stroke
    m, I = model.mass, model.inertia
    home = np.zeros(6)                 # the actuators at the home pose (eq. 10): the slides' reference
    leg_lengths(model.buf, np.array([0.0, 0.0, d.h, 0.0, 0.0, 0.0]), home, np.zeros((6, 6)))
    legs = []
    for j in range(6):
        hinge = '<joint name="{}" type="hinge" axis="{}"/>'
        legs.append(
            f'<body name="rig_cross1_{LEG_NAMES[j]}" pos="{_v(*model.base[j])}" quat="{_quat(model.Rb[j])}">\n'
            + hinge.format(joint_name("u1", j), "1 0 0") + _inertial((0, 0, 0), m[0], I[0]) + "\n"
            f'<body name="rig_cylinder_{LEG_NAMES[j]}">\n'
            + hinge.format(joint_name("u2", j), "0 1 0") + _inertial((0, 0, c2), m[1], I[1]) + "\n"
            f'<geom type="capsule" fromto="0 0 0 0 0 {_v(l1 + d.l2 * 0.5)}" size="0.06" contype="0" '
            f'conaffinity="0" rgba="0.4 0.4 0.45 1"/>\n'
            f'<body name="rig_rod_{LEG_NAMES[j]}" pos="0 0 {_v(home[j])}">\n'
            f'<joint name="{joint_name("act", j)}" type="slide" axis="0 0 1" ref="{_v(home[j])}" range="{_v(lo, hi)}" '
            f'armature="{_v(ratio ** 2 * p["motor_inertia"])}" damping="{_v(ratio ** 2 * p["motor_friction"])}"/>\n'
            + _inertial((0, 0, l1 + c3), m[2], I[2]) + "\n"
            f'<geom type="capsule" fromto="0 0 {_v(l1)} 0 0 {_v(l1 + l3)}" size="0.04" contype="0" '
            f'conaffinity="0" rgba="0.75 0.75 0.8 1"/>\n'
            f'<body name="rig_cross4_{LEG_NAMES[j]}" pos="0 0 {_v(l1 + l3)}">\n'
            + hinge.format(joint_name("s4", j), "1 0 0") + _inertial((0, 0, 0), m[3], I[3]) + "\n"
            f'<body name="rig_piece5_{LEG_NAMES[j]}">\n'
            + hinge.format(joint_name("s5", j), "0 1 0") + _inertial((0, 0, 0), m[4], I[4]) + "\n"
            f'<body name="rig_cap_{LEG_NAMES[j]}" quat="{_quat(model.Rb[j].T)}">\n'      # platform axes
            + hinge.format(joint_name("s6", j), _v(*model.Rb[j][:, 2]))
            + f'<inertial pos="0 0 0" mass="{_v(CAP_MASS)}" diaginertia="{_v(CAP_INERTIA, CAP_INERTIA, 2 * CAP_INERTIA)}"/>\n'
            + "</body>\n" * 6)
    hs, t = p["plate_half_size"], p["plate_thickness"]
    body = (f'<body name="rig_base" pos="0 0 {_v(base_z)}">\n' + "".join(legs) + '</body>\n'
            f'<body name="{PLATFORM}" pos="0 0 {_v(base_z + d.h)}">\n<freejoint name="rig_platform"/>\n'
            + _inertial((0, 0, 0), m[5] - 6 * CAP_MASS, _platform_less_caps(model)) + "\n"
            f'<geom name="{PLATFORM}" type="box" pos="0 0 {_v(-t / 2.0)}" size="{_v(hs, hs, t / 2.0)}" '
            f'mass="0" contype="0" conaffinity="3" condim="3" friction="{_v(contact[0], 0.005, 1e-4)}" '
            f'solref="{_v(contact[1], 1.0)}" rgba="0.6 0.65 0.7 1"/>\n'
            '</body>')
    tc = max(p["weld_timeconst"], 2.0 * timestep)
    welds = "".join(f'<weld name="rig_close_{LEG_NAMES[j]}" body1="rig_cap_{LEG_NAMES[j]}" '
                    f'body2="{PLATFORM}" solref="{_v(tc, 1.0)}" solimp="{_v(*WELD_SOLIMP)}"/>\n'
                    for j in range(6))
    motors = "".join(f'<motor name="{a}" joint="{a}" gear="{_v(ratio)}"/>\n' for a in ACTUATORS)
    return body, welds, motors


def rig_mjcf(model: StewartModel, params: Mapping | None = None, *, timestep: float = 4.0e-4) -> str:
    """The rig alone (MJCF string), base at the origin."""
    p = rig_params(params)
    body, welds, motors = rig_xml(model, p, origin="base", timestep=timestep)
    return (f'<mujoco model="{model.name}">\n<compiler angle="radian" autolimits="true"/>\n'
            f'<option timestep="{_v(timestep)}" gravity="0 0 {_v(-model.desc.gravity)}" integrator="implicitfast"'
            ' jacobian="dense"/>\n'
            f'<worldbody>\n{body}\n</worldbody>\n<equality>\n{welds}</equality>\n'
            f'<actuator>\n{motors}</actuator>\n</mujoco>\n')


class RigState:
    """Addresses of the rig's joints in a compiled MuJoCo model, and the writing of a rig state
    (the model's inverse kinematics: every leg joint, the platform pose) into qpos, qvel, qacc."""

    def __init__(self, m: mujoco.MjModel) -> None:
        jid = lambda name: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)  # noqa: E731
        self.qadr = np.array([[m.jnt_qposadr[jid(joint_name(k, j))] for k in LEG_JOINTS] for j in range(6)])
        self.dadr = np.array([[m.jnt_dofadr[jid(joint_name(k, j))] for k in LEG_JOINTS] for j in range(6)])
        free = jid("rig_platform")
        self.pq, self.pd = m.jnt_qposadr[free], m.jnt_dofadr[free]
        self.base = m.body_pos[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "rig_base")].copy()
        self.act = self.dadr[:, 2].copy()

    def write(self, d: mujoco.MjData, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray, x: np.ndarray,
              Rp: np.ndarray, vG: np.ndarray, wp: np.ndarray, aG: np.ndarray, dwp: np.ndarray) -> None:
        """Leg joints q, q', q'' (6 x 6, :func:`models.rig.stewart.inverse_kinematics`) and the platform's
        position x[:3], orientation Rp, twist (vG, ω) and its derivative (aG, ω') in frame 0. The free
        joint's angular velocity and acceleration are in the platform's axes: Rpᵀ ω, Rpᵀ ω'."""
        d.qpos[self.qadr] = q
        d.qvel[self.dadr] = qd
        d.qacc[self.dadr] = qdd
        d.qpos[self.pq:self.pq + 3] = self.base + x[:3]
        mujoco.mju_mat2Quat(d.qpos[self.pq + 3:self.pq + 7], np.ascontiguousarray(Rp).ravel())
        d.qvel[self.pd:self.pd + 3] = vG
        d.qvel[self.pd + 3:self.pd + 6] = Rp.T @ wp
        d.qacc[self.pd:self.pd + 3] = aG
        d.qacc[self.pd + 3:self.pd + 6] = Rp.T @ dwp


def required_forces(m: mujoco.MjModel, d: mujoco.MjData, state: RigState) -> tuple[np.ndarray, float]:
    """The actuator forces (N along each slide) MuJoCo needs for the state and accelerations in
    ``d``: M q̈ + c − passive = Bᵀ f + J_cᵀ λ (B: the slides, J_c: the welds' Jacobian at that
    state), solved for (f, λ) by least squares; the residual says whether the motion is one the
    closed loops allow. Returns (f, the largest residual in N or N m)."""
    flags, qacc = m.opt.disableflags, d.qacc.copy()
    mujoco.mj_forward(m, d)                      # the welds' Jacobian at this state (efc_J, dense)
    d.qacc[:] = qacc                             # (mj_forward wrote its own)
    rows = d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY
    Jc = d.efc_J.reshape(d.nefc, m.nv)[rows]
    m.opt.disableflags = flags | mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    try:
        mujoco.mj_inverse(m, d)
    finally:
        m.opt.disableflags = flags
    B = np.zeros((m.nv, 6))
    B[state.act, np.arange(6)] = 1.0
    A = np.hstack([B, Jc.T])
    sol, *_ = np.linalg.lstsq(A, d.qfrc_inverse, rcond=None)
    return sol[:6], float(np.abs(A @ sol - d.qfrc_inverse).max())

