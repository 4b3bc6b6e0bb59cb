"""The rig on the daemon's loop: a motion's pose → the six actuators' CSP setpoints, and the
actuators' measured positions and speeds → the platform's pose, twist, acceleration and tilt.

Every cycle (docs/rig.md): the active motion's offset from home (:mod:`controller.daemon.rig.motions`),
the rig's inverse kinematics (Staicu 2008, eq. 8–18) → λ, λ' → motor angle and speed through the
screws (2π/lead per metre: ``gear``); and from the drives, λ = motor angle / gear → forward
kinematics (Newton on eq. 10, from the last pose) → pose; the twist V = (v_G, ω) from S V = λ'
(eq. 15, the measured actuator speeds: no differentiation of positions); the acceleration of G is
the twist's derivative over one period, low-passed (first order, ``accel_tau``). The bench leg
stands on the plate at G, so G's horizontal acceleration is the support's (thesis axes: a_y = a_x
of the rig, a_z = a_y, see :mod:`controller.daemon.rig.motions`) and the plate's orientation gives the
hinge-equivalent tilt (α, β) in the robot's convention (:func:`models.rig.tilt.hinge_angles`): the stabilizer's ``tilt.source: platform`` and
``use_acceleration`` inputs (Gastebois 2017, §2.5.4). Kernels are ``@njit(cache=True)`` and
allocate nothing; :class:`RigPlayer` holds their preallocated buffers.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from models.rig.stewart import (OK, SINGULAR, StewartData, StewartModel, data_views, forward_kinematics,
                            inverse_kinematics, solve6)

from models.rig.tilt import THESIS, hinge_angles

from controller.daemon.rig.motions import Motion, MotionError


@njit(cache=True)
def actuator_setpoints(mbuf, dbuf, pose, pose_d, pose_dd, gear, position, velocity):
    """Motor angle gear λ and speed gear λ' of each actuator for the platform pose and its
    derivatives; returns the inverse kinematics' status (outputs untouched unless OK)."""
    status = inverse_kinematics(mbuf, dbuf, pose, pose_d, pose_dd)
    if status != OK:
        return status
    dv = data_views(dbuf)
    q, qd = dv.q, dv.qd
    for j in range(6):
        position[j] = gear * q[j, 2]
        velocity[j] = gear * qd[j, 2]
    return OK


@njit(cache=True)
def measure_platform(mbuf, dbuf, motor_position, motor_velocity, gear, period, tau, lam, pose, twist,
                     acc, A, tol):
    """Pose (``pose`` holds the last one: Newton's guess), twist and G's filtered acceleration from
    the motors; returns a status (SINGULAR where S cannot be solved; nothing updated unless OK)."""
    for j in range(6):
        lam[j] = motor_position[j] / gear
    for i in range(6):
        A[6, i] = pose[i]                              # the last pose, restored on failure
    status = forward_kinematics(mbuf, dbuf, lam, pose)
    if status != OK:
        for i in range(6):
            pose[i] = A[6, i]
        return status
    S = data_views(dbuf).S
    for j in range(6):
        for i in range(6):
            A[j, i] = S[j, i]
        lam[j] = motor_velocity[j] / gear
    if solve6(A[:6], lam, False) < tol:
        return SINGULAR
    k = period / (tau + period)
    for i in range(3):
        acc[i] += k * ((lam[i] - twist[i]) / period - acc[i])
    for i in range(6):
        twist[i] = lam[i]
    return OK


@njit(cache=True)
def following_errors(target, position, idx, gear, out):
    """Each actuator's following error in mm of stroke: (setpoint − position) / gear of its bus axis
    ``idx[j]`` (motor rad → m of the screw)."""
    for j in range(out.shape[0]):
        out[j] = 1e3 * (target[idx[j]] - position[idx[j]]) / gear


class RigPlayer:
    """The rig's side of the loop: plays one motion at a time, its offsets added to the reference it
    starts from (home, or where the drives held the plate when they were enabled), and measures the
    platform. ``reference(t)`` fills ``position``/``velocity`` (motor
    side, the six actuators in leg order A-F); ``measure(position, velocity)`` fills ``pose``,
    ``twist``, ``acc`` (G, frame 0), ``tilt`` (α, β in ``convention``, models.rig.tilt) and
    ``support_acc`` (a_y, a_z in thesis axes)."""

    def __init__(self, model: StewartModel, gear: float, period: float, accel_tau: float = 0.01,
                 convention: int = THESIS) -> None:
        if not (math.isfinite(gear) and gear > 0 and math.isfinite(period) and period > 0
                and math.isfinite(accel_tau) and accel_tau >= 0):
            raise ValueError(f"gear, period > 0 and accel_tau >= 0 must be finite, got {gear!r}, {period!r}, "
                             f"{accel_tau!r}")
        self.model, self.gear, self.period, self.tau = model, float(gear), float(period), float(accel_tau)
        self.tol = model.desc.singular_tol
        self.convention = convention
        self.ref_data, self.meas_data = StewartData(), StewartData()
        self.home = np.array([0.0, 0.0, model.desc.h, 0.0, 0.0, 0.0])
        z = lambda k=6: np.zeros(k)  # noqa: E731
        self.off, self.off_d, self.off_dd = z(), z(), z()
        self.pose_ref, self.pose_ref_d, self.pose_ref_dd = self.home.copy(), z(), z()
        self.origin = self.home.copy()             # the reference a motion's offsets start from
        self.position, self.velocity = z(), z()
        self.pose, self.twist, self.acc, self.tilt, self.support_acc = self.home.copy(), z(), z(3), z(2), z(2)
        self.lam, self.A = z(), np.zeros((7, 6))
        self.motion: Motion | None = None
        self.warmup()

    def warmup(self) -> None:
        """Compile (or load) every kernel the cycle calls and set the setpoints at home."""
        self.reference(0.0)
        self.measure(self.position.copy(), np.zeros(6))
        self.twist.fill(0.0)
        self.acc.fill(0.0)
        self.support_acc.fill(0.0)

    def start(self, motion: Motion, t: float, origin: np.ndarray | None = None) -> None:
        """Play ``motion`` (already checked by :func:`controller.daemon.rig.stroke.check_motion`) from ``t``,
        its offsets added to ``origin`` (default: the current reference)."""
        if self.motion is not None:
            raise MotionError(f"{motion.name}: the rig is still playing {self.motion.name}")
        motion.start(t)
        self.origin[:] = self.pose_ref if origin is None else origin
        self.motion = motion

    def stop(self) -> None:
        """Hold the reference where it is (a soft stop of the platform is the motion's own end)."""
        self.motion = None
        self.pose_ref_d.fill(0.0)
        self.pose_ref_dd.fill(0.0)

    def reference(self, t: float) -> int:
        """The setpoints of this cycle; a motion that is over leaves the reference at its end (home)."""
        m = self.motion
        if m is not None:
            done = m.sample(t, self.off, self.off_d, self.off_dd)
            np.add(self.origin, self.off, out=self.pose_ref)
            self.pose_ref_d[:] = self.off_d
            self.pose_ref_dd[:] = self.off_dd
            if done:
                self.stop()
        return actuator_setpoints(self.model.buf, self.ref_data.buf, self.pose_ref, self.pose_ref_d,
                                  self.pose_ref_dd, self.gear, self.position, self.velocity)

    def measure(self, position: np.ndarray, velocity: np.ndarray) -> int:
        """The platform from the six motors' positions and speeds."""
        status = measure_platform(self.model.buf, self.meas_data.buf, position, velocity, self.gear, self.period,
                                  self.tau, self.lam, self.pose, self.twist, self.acc, self.A, self.tol)
        if status == OK:
            hinge_angles(self.pose, self.tilt, self.convention)
            self.support_acc[0], self.support_acc[1] = self.acc[0], self.acc[1]
        return status
