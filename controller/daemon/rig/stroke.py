"""The check every rig motion passes before it is played: the rig's inverse kinematics
(Staicu 2008, eq. 8–18) at every ``step`` s (5 ms: a tenth of the period of the fastest motion here, 2 Hz;
a twentieth of a faster sinusoid's period) of the whole motion, from the home pose. The first
instant an actuator leaves its stroke, or (given ``vmax``, ``amax``) moves faster or accelerates
harder than its drive can make it (eq. 15–18: λ', λ''), or the pose is singular, refuses the motion
with one sentence naming the motion, the time, the leg and the value and limit."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from models.rig.stewart import OK, SINGULAR, STATUS_NAMES, StewartData, StewartModel, inverse_kinematics, leg_lengths
from models.rig.config import LEG_NAMES

from controller.daemon.rig.motions import Motion, MotionError

CHUNK = 4096
"""Instants sampled at once: a ship deck of 100 components over 600 s needs 30 MB a chunk, not 1.5 GB."""


@dataclass(frozen=True)
class StrokeReport:
    """What the rig's actuators do over a motion that passed: the extreme displacements (m), the
    largest actuator speed (m/s) and the leg and time of the closest approach to a stroke end."""

    lam_min: float
    lam_max: float
    speed_max: float
    margin: float          # m, smallest distance to a stroke end over the motion
    margin_leg: str
    margin_t: float


def check_motion(model: StewartModel, motion: Motion, step: float = 0.005, vmax: float = math.inf,
                 amax: float = math.inf) -> StrokeReport:
    """Refuse (:class:`MotionError`) a motion the rig cannot make (its actuators' stroke, speed ``vmax``
    m/s and acceleration ``amax`` m/s²); otherwise report its actuators."""
    if not (math.isfinite(step) and step > 0):
        raise MotionError(f"stroke check: step must be a finite number > 0 s, got {step!r}")
    data = StewartData()
    home = np.array([0.0, 0.0, model.desc.h, 0.0, 0.0, 0.0])
    pose = np.zeros(6)
    lam, S = np.zeros(6), np.zeros((6, 6))
    lo, hi = model.desc.stroke
    lam_min, lam_max, speed, margin, where = math.inf, -math.inf, 0.0, math.inf, (0, 0.0)
    step = min(step, motion.shortest_period / 20.0)         # a fast sinusoid is sampled, not aliased
    n = int(math.ceil(motion.duration / step))
    taus = np.minimum(np.arange(n + 1) * step, motion.duration)
    for k, t in enumerate(taus):
        if k % CHUNK == 0:                   # sampled a chunk at a time: memory bounded by CHUNK x components
            X, XD, XDD = motion.sample_many(taus[k:k + CHUNK])
        x, xd, xdd = X[k % CHUNK], XD[k % CHUNK], XDD[k % CHUNK]
        np.add(home, x, out=pose)
        if not (np.all(np.isfinite(pose)) and np.all(np.isfinite(xd)) and np.all(np.isfinite(xdd))):
            raise MotionError(f"{motion.name}: the pose is not finite at t = {t:.3f} s")
        leg_lengths(model.buf, pose, lam, S)
        j = int(np.argmax(np.maximum(lam - hi, lo - lam)))
        if lam[j] < lo or lam[j] > hi:
            raise MotionError(f"{motion.name}: the rig cannot make this motion: leg {LEG_NAMES[j]} would need "
                              f"a displacement of {lam[j]:+.3f} m at t = {t:.3f} s, beyond its stroke "
                              f"[{lo:+.2f}, {hi:+.2f}] m")
        status = inverse_kinematics(model.buf, data.buf, pose, xd, xdd)
        if status != OK:
            what = "singular" if status == SINGULAR else STATUS_NAMES[int(status)]
            raise MotionError(f"{motion.name}: the rig cannot make this motion: its inverse kinematics "
                              f"fails at t = {t:.3f} s ({what})")
        for what, value, limit, unit in (("speed", data.qd[:, 2], vmax, "m/s"), ("acceleration", data.qdd[:, 2], amax, "m/s²")):
            j = int(np.argmax(np.abs(value)))
            if abs(value[j]) > limit:
                raise MotionError(f"{motion.name}: the rig cannot make this motion: leg {LEG_NAMES[j]} would need "
                                  f"an actuator {what} of {abs(value[j]):.3g} {unit} at t = {t:.4g} s, above the "
                                  f"{limit:.3g} {unit} its drive can follow")
        lam_min, lam_max = min(lam_min, lam.min()), max(lam_max, lam.max())
        speed = max(speed, float(np.abs(data.qd[:, 2]).max()))
        room = np.minimum(lam - lo, hi - lam)
        j = int(np.argmin(room))
        if room[j] < margin:
            margin, where = float(room[j]), (j, float(t))
    return StrokeReport(float(lam_min), float(lam_max), speed, margin, LEG_NAMES[where[0]], where[1])
