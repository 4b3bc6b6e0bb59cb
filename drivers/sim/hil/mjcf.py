"""MJCF of the BIP leg standing on its tilting platform, generated from the robot YAML.

Every physical parameter comes from the :class:`~models.Robot` (hence from the same YAML as the
controller's models), so the two cannot drift.

Frames. MuJoCo's world has z up. The thesis' world frame (M, x_g, y_g, z_g) has x_g up (eq. 45-47)
and, on a level floor, the orientation of the leg's base frame R0, so its axes map to MuJoCo's as
x_g → z, y_g → x, z_g → y (:data:`WORLD_FROM_G`). M, the centre of the sole resting on the
platform's top surface, is MuJoCo's origin and lies on both platform axes.

Platform (eq. 45-46): R_M→O0 = Rz(α) Ry(−β) in thesis axes, built as a hinge ``platform_alpha``
about z_g (horizontal, fixed) carrying a hinge ``platform_beta`` about −y_g of the α frame. The
plate's orientation is then R_M→O0, so a foot standing flat on it has the base orientation of eq. 46
and the stabilizer's platform tilt source (stabilizer/ground.py) reads the hinge angles unchanged.
Each hinge is a torque motor through a gear of ``ratio`` motor rad per platform rad: the rotor's
inertia J and viscous friction b appear at the hinge as ratio² J (armature) and ratio² b (damping).

Leg: the MDH chain (eq. 1-5) as nested bodies; body i sits at T(i-1,i) evaluated at q_i = 0 and
turns about its own z axis (RotZ(θ+q) TransZ(d) = RotZ(θ) TransZ(d) RotZ(q)). Masses, CoGs and
full inertia tensors (about the CoG, joint-frame axes), joint limits (limited ranges) and the
joint-level armature / viscous / Coulomb friction come from the YAML. The foot (the base, frame R0)
is the box of Figure 20: half-width a along y0, z0 from −c to +b, sole at x0 = −Δ, up to the ankle
centre x0 = 0; it stands free (freejoint) on the plate, or is welded to the world (``clamped``).
``bolted``: the free foot is also held to the plate by an equality weld (``bolt``) at its flat pose
of qpos0, the thesis' squat bench (§2.6.1): the foot moves with the platform and cannot tip or lift.

Transmission (eq. 30-32): one fixed tendon per leg motor whose coefficients are that motor's row of
J_p(q), so the tendon velocity is the motor velocity q̇_m = J_p q̇. The motor's rotor inertia J_m,
viscous F_v and Coulomb F_c friction are the tendon's armature, damping and frictionloss: MuJoCo
adds J_pᵀ J_m J_p to the mass matrix (the exact posture-dependent reflected inertia, ankle coupling
included) and J_pᵀ (F_v q̇_m + F_c sign q̇_m) implicitly. The coefficients written here are J_p(0);
the plant rewrites them from J_p(q) before every step (:mod:`drivers.sim.hil.plant_mujoco`), so no
nominal-posture approximation remains. A motor actuator on each tendon applies J_pᵀ τ_m.

Sensors of the free foot: the accelerometer ``imu`` at O0 (axes R0), and the contact sensor ``sole``
(``SOLE_SLOTS`` slots of ``SOLE_DATA``: each sole/plate contact's force in its contact frame, point,
normal from the plate to the foot and first tangent), which the plant turns into its load cells.

Time step: one MuJoCo step per 400 µs POWERLINK cycle by default. Dampings (joints, tendons, platform
hinges) are implicit (``implicitfast``); the contact, joint-limit and weld time constants
(``contact_timeconst``, ``limit_timeconst``, ``BOLT_TIMECONST``) stay at or above two steps.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from xml.sax.saxutils import quoteattr

import mujoco
import numpy as np

from models import ConfigError, Robot
from models.chain.model import PRISMATIC, mdh_matrix
from models.rig.stewart import StewartModel
from models.tree.config import TreeDescription
from models.urdf import to_urdf

from drivers.sim.hil.mjcf_text import PLATFORM, MjcfError
from drivers.sim.hil.mjcf_text import quat as _quat
from drivers.sim.hil.mjcf_text import vec as _v
from drivers.sim.hil.stewart_mjcf import rig_params as checked_rig_params
from drivers.sim.hil.stewart_mjcf import rig_xml

WORLD_FROM_G = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
LEG_MOTORS = ("ankle_1", "ankle_2", "knee", "hip")
TENDON_JOINTS = ((0, 1), (0, 1), (2,), (3,))     # joints spanned by each motor's row of J_p
PLATFORM_JOINTS = ("platform_alpha", "platform_beta")
FOOT, IMU = "foot", "imu"
SOLE = "sole"               # contact sensor: every sole/plate contact (force, point, frame)
SOLE_SLOTS = mujoco.mjMAXCONPAIR    # its slots: as many as one geom pair can make contacts
SOLE_DATA = "found force pos normal tangent"
SOLE_SLOT = 13              # values per slot: found, force (contact frame), point, normal, first tangent
LINK_RADIUS = 0.03          # m, collision capsules of the leg segments (they touch only after a fall)

# Bench parameters the robot YAML does not hold (representative values: the thesis gives none).
PLATFORM_DEFAULTS: dict[str, object] = {
    "ratio": 50.0,                      # motor rad per platform rad
    "motor_inertia": (2.0e-4, 2.0e-4),  # α, β motor rotor inertia [kg m²]
    "motor_friction": (1.0e-3, 1.0e-3),  # α, β motor viscous friction [N m s/rad]
    "mass": 10.0,                       # plate [kg]
    "frame_mass": 2.0,                  # α frame between the hinges [kg]
    "half_size": 0.4,                   # plate half-side [m]
    "thickness": 0.03,                  # plate [m]
    "foot_mass": 1.2,                   # the foot box (not in the YAML: the base body) [kg]
    "friction": 0.8,                    # sole/plate sliding friction coefficient
    "contact_timeconst": 0.005,         # contact stiffness: MuJoCo solref time constant [s]
    "limit_timeconst": 0.004,           # joint-limit stiffness: solreflimit time constant [s]
}
BOLT = "bolt"                           # the weld of a bolted foot to the plate
BOLT_TIMECONST = 0.002                  # s, its stiffness (solref time constant; >= 2 MuJoCo steps)


def platform_params(platform: Mapping | None) -> dict[str, object]:
    """:data:`PLATFORM_DEFAULTS` overridden by ``platform``; unknown keys and bad values are errors."""
    p = dict(PLATFORM_DEFAULTS)
    for key, value in (platform or {}).items():
        if key not in p:
            raise MjcfError(f"platform.{key} is not a known key (known: {', '.join(sorted(p))})")
        p[key] = value
    for key, value in p.items():
        pair = key.startswith("motor_")
        v = np.broadcast_to(np.asarray(value, dtype=np.float64), 2 if pair else ()).copy()
        if not np.all(np.isfinite(v)) or np.any(v < 0) or (key != "motor_friction" and np.any(v == 0)):
            raise MjcfError(f"platform.{key} must be finite and {'>= 0' if key == 'motor_friction' else '> 0'}"
                            f", got {value!r}")
        p[key] = tuple(float(x) for x in v) if pair else float(v)
    return p


def _box_inertia(mass: float, half: np.ndarray) -> np.ndarray:
    s = half ** 2
    return mass / 3.0 * np.array([s[1] + s[2], s[0] + s[2], s[0] + s[1]])


def _foot_xml(foot: Mapping[str, float], p: Mapping, free: bool) -> str:
    """Foot box (Figure 20), its inertia, the IMU site at O0 (axes R0)."""
    a, b, c, delta = foot["a"], foot["b"], foot["c"], foot["Delta"]
    half = np.array([delta / 2.0, a, (b + c) / 2.0])
    centre = (-delta / 2.0, 0.0, (b - c) / 2.0)
    inertia = _box_inertia(p["foot_mass"], half)
    lines = [f'<inertial pos="{_v(*centre)}" mass="{_v(p["foot_mass"])}" diaginertia="{_v(*inertia)}"/>',
             (f'<geom name="{FOOT}" type="box" pos="{_v(*centre)}" size="{_v(*half)}" contype="1" '
              f'conaffinity="0" condim="3" friction="{_v(p["friction"], 0.005, 1e-4)}" '
              f'solref="{_v(p["contact_timeconst"], 1.0)}" rgba="0.3 0.3 0.35 1"/>')]
    if free:
        lines.insert(0, f'<freejoint name="{FOOT}"/>')
        lines.append(f'<site name="{IMU}" pos="0 0 0" size="0.01"/>')
    return "\n".join(lines)


def _leg_xml(robot: Robot, p: Mapping) -> tuple[str, str]:
    """(opening tags of the nested leg bodies, closing tags)."""
    m = robot.model
    n = robot.n
    opening: list[str] = []
    for i in range(n):
        alpha, a, theta, d = m.mdh[i]
        T = mdh_matrix(alpha, a, theta, d)
        if i + 1 < n:
            end = mdh_matrix(*m.mdh[i + 1])[:3, 3]
        else:
            end = m.tool[:3, 3]
        I = m.inertia[i]
        kind = "slide" if m.jtype[i] == PRISMATIC else "hinge"
        geom = (f'<geom type="capsule" fromto="{_v(0, 0, 0, *end)}" size="{LINK_RADIUS}"'
                if np.linalg.norm(end) > 1e-6 else f'<geom type="sphere" size="{LINK_RADIUS}"')
        opening.append(
            f'<body name="{m.joint_names[i]}" pos="{_v(*T[:3, 3])}" quat="{_quat(T[:3, :3])}">\n'
            f'<inertial pos="{_v(*m.com[i])}" mass="{_v(m.mass[i])}" '
            f'fullinertia="{_v(I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2])}"/>\n'
            f'<joint name="{m.joint_names[i]}" type="{kind}" axis="0 0 1" range="{_v(m.qmin[i], m.qmax[i])}" '
            f'armature="{_v(m.armature[i])}" damping="{_v(m.viscous[i])}" frictionloss="{_v(m.coulomb[i])}" '
            f'solreflimit="{_v(p["limit_timeconst"], 1.0)}"/>\n'
            f'{geom} contype="2" conaffinity="0" rgba="0.7 0.5 0.2 1"/>')
    opening.append(f'<site name="tool" pos="{_v(*m.tool[:3, 3])}" quat="{_quat(m.tool[:3, :3])}" size="0.01"/>')
    return "\n".join(opening), "</body>\n" * n


def _platform_xml(p: Mapping, inner: str) -> str:
    """The α frame and the β plate (eq. 45): hinge axes z_g and −y_g through M, in MuJoCo axes."""
    r2 = p["ratio"] ** 2
    alpha_axis = WORLD_FROM_G[:, 2]
    beta_axis = -WORLD_FROM_G[:, 1]
    hs, t = p["half_size"], p["thickness"]
    frame = _box_inertia(p["frame_mass"], np.array([hs, hs, t / 2.0]))
    joint = ('<joint name="{}" type="hinge" axis="{}" armature="{}" damping="{}"/>')
    return (f'<body name="{PLATFORM_JOINTS[0]}">\n'
            f'<inertial pos="0 0 {_v(-1.5 * t)}" mass="{_v(p["frame_mass"])}" diaginertia="{_v(*frame)}"/>\n'
            + joint.format(PLATFORM_JOINTS[0], _v(*alpha_axis), _v(r2 * p["motor_inertia"][0]),
                           _v(r2 * p["motor_friction"][0])) + "\n"
            f'<body name="{PLATFORM}">\n'
            + joint.format(PLATFORM_JOINTS[1], _v(*beta_axis), _v(r2 * p["motor_inertia"][1]),
                           _v(r2 * p["motor_friction"][1])) + "\n"
            f'<geom name="{PLATFORM}" type="box" pos="0 0 {_v(-t / 2.0)}" size="{_v(hs, hs, t / 2.0)}" '
            f'mass="{_v(p["mass"])}" contype="0" conaffinity="3" condim="3" '
            f'friction="{_v(p["friction"], 0.005, 1e-4)}" solref="{_v(p["contact_timeconst"], 1.0)}" '
            f'rgba="0.6 0.65 0.7 1"/>\n'
            f'</body>\n</body>\n{inner}')


def _tendon_xml(robot: Robot) -> tuple[str, str]:
    """(fixed tendons, their motor actuators): one per leg motor, coefficients J_p(0)."""
    tr = robot.transmission
    jp = tr.jacobian(np.zeros(robot.n))
    names = robot.model.joint_names
    m = tr.motors
    tendons, motors = [], []
    for i, joints in enumerate(TENDON_JOINTS):
        coefs = "".join(f'<joint joint="{names[j]}" coef="{_v(jp[i, j])}"/>' for j in joints)
        tendons.append(f'<fixed name="{LEG_MOTORS[i]}" armature="{_v(m.rotor_inertia[i])}" '
                       f'damping="{_v(m.viscous[i])}" frictionloss="{_v(m.coulomb[i])}">{coefs}</fixed>')
        motors.append(f'<motor name="{LEG_MOTORS[i]}" tendon="{LEG_MOTORS[i]}" gear="1"/>')
    return "\n".join(tendons), "\n".join(motors)


def build_mjcf(robot: Robot, foot: Mapping[str, float] | None, platform: Mapping | None = None, *,
               clamped: bool = False, bolted: bool = False, timestep: float = 4.0e-4,
               rig: StewartModel | None = None, rig_params: Mapping | None = None) -> str:
    """MJCF (XML string) of ``robot`` with its ``foot`` (keys a, b, c, Z, Delta) standing free on the
    two-hinge platform (``bolted``: welded to the plate), or welded to the world when ``clamped``
    (then ``foot`` may be None and the robot needs no transmission). ``platform`` overrides
    :data:`PLATFORM_DEFAULTS`; ``rig``: the Stewart-Gough rig's plate instead of the hinges
    (:mod:`drivers.sim.hil.stewart_mjcf`, ``rig_params`` overriding its defaults)."""
    if not (math.isfinite(timestep) and timestep > 0):
        raise MjcfError(f"timestep must be a finite number > 0, got {timestep!r}")
    if clamped and bolted:
        raise MjcfError("a foot is either clamped to the world or bolted to the platform, not both")
    p = platform_params(platform)
    g = robot.model.gravity
    leg = robot.transmission is not None and robot.n == len(LEG_MOTORS)
    if not clamped:
        if foot is None or not leg:
            raise MjcfError(f"a free-standing model needs a {len(LEG_MOTORS)}-joint robot with foot: and "
                            f"transmission: sections, got {robot.model.name!r}")
        if g[0] >= 0 or g[1] != 0 or g[2] != 0:
            raise MjcfError(f"a free-standing model needs the level-floor gravity along -x0 (thesis eq. 45-47),"
                            f" got {g.tolist()}")
    opening, closing = _leg_xml(robot, p)
    base = _foot_xml(foot, p, not clamped) if foot is not None else ""
    if clamped:
        pos = np.zeros(3)
    else:
        pos = WORLD_FROM_G @ np.array([foot["Delta"], 0.0, -foot["Z"]])      # eq. 47 at α = β = 0
    body = (f'<body name="{FOOT}" pos="{_v(*pos)}" quat="{_quat(WORLD_FROM_G)}">\n{base}\n'
            f'{opening}\n{closing}</body>')
    tendons, motors = _tendon_xml(robot) if leg else ("", "")
    sensors = equality = welds = ""
    if bolted:
        equality = (f'<weld name="{BOLT}" body1="{PLATFORM}" body2="{FOOT}" '
                    f'solref="{_v(max(BOLT_TIMECONST, 2.0 * timestep), 1.0)}"/>\n')
    if not clamped and rig is not None:
        bodies, welds, rig_motors = rig_xml(rig, checked_rig_params(rig_params), "plate", timestep,
                                            (p["friction"], p["contact_timeconst"]))
        body = f"{bodies}\n{body}"
        motors += "\n" + rig_motors
    elif not clamped:
        body = _platform_xml(p, body)
        motors += "".join(f'\n<motor name="{j}" joint="{j}" gear="{_v(p["ratio"])}"/>' for j in PLATFORM_JOINTS)
    if not clamped:
        sensors = (f'<sensor><accelerometer name="{IMU}" site="{IMU}"/>'
                   f'<contact name="{SOLE}" geom1="{PLATFORM}" geom2="{FOOT}" num="{SOLE_SLOTS}" '
                   f'data="{SOLE_DATA}"/></sensor>')
    closures = f"<equality>\n{equality}{welds}</equality>\n" if equality or welds else ""
    return (f'<mujoco model="{robot.model.name}_hil">\n'
            '<compiler angle="radian" autolimits="true"/>\n'
            f'<option timestep="{_v(timestep)}" gravity="{_v(*(WORLD_FROM_G @ g))}" '
            'integrator="implicitfast" cone="elliptic">\n<flag island="disable"/>\n</option>\n'
            f'<worldbody>\n{body}\n</worldbody>\n'
            f'{closures}<tendon>\n{tendons}\n</tendon>\n<actuator>\n{motors}\n</actuator>\n{sensors}\n</mujoco>\n')


def spec_from_description(desc: TreeDescription) -> mujoco.MjSpec:
    """MuJoCo model spec of a robot description (chain or tree), fixed at its base: MuJoCo's own
    URDF compiler reads :func:`models.urdf.to_urdf` (operational frames kept as bodies, inertias
    as given), then each joint gets its armature and the model the description's gravity. A
    body MuJoCo cannot hold (a line or point mass: a principal moment of 0) is a
    :class:`ConfigError` naming its key."""
    bodies = [(f"joints[{i}].body.inertia", t.joint.body) for i, t in enumerate(desc.joints)]
    for key, body in [("base.inertia", desc.bodies[desc.base])] + bodies:
        if body.mass > 0.0 and np.linalg.eigvalsh(np.array(body.inertia))[0] <= 0.0:
            raise ConfigError(desc.source, key, "MuJoCo needs every principal moment of inertia > 0 "
                              "(a line or point mass has a zero one); give it a small positive value")
    urdf = to_urdf(desc, geometry=False).replace(
        f"<robot name={quoteattr(desc.name)}>",
        f"<robot name={quoteattr(desc.name)}>\n  <mujoco><compiler fusestatic=\"false\" "
        "discardvisual=\"false\" balanceinertia=\"false\"/></mujoco>", 1)
    spec = mujoco.MjSpec.from_string(urdf)
    armature = {t.joint.name: t.joint.armature for t in desc.joints}
    for joint in spec.joints:
        joint.armature = armature[joint.name]
    spec.option.gravity = desc.gravity
    return spec
