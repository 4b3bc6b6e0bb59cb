"""Estimation: what the cycle believes of the robot beyond its joints.

The feet's loads (stabilizer.contact: plausibility, the support phase they show, the right foot's
share, low-passed for ``control.load_split: measured`` or ``confirmed``), the tilt the models' gravity follows (the
platform's angles, or an IMU's through the tilt observer, stabilizer.tilt_observer; with the
support's acceleration folded in, Gastebois 2017 §2.5.4), the models under that gravity (R_M->O0ᵀ g,
thesis eq. 46) and their rooting per support phase (models.common.support), then the pelvis' state in
the world (stabilizer.pelvis_state: the stance sole the loads show, the leg's kinematics and the pelvis
IMU, its rate gyro when the bus carries one; a tree with both soles and load cells). The variants (IMU or
platform tilt, a pelvis IMU, a gyro, loads or none, the rig's acceleration or the IMU's) are chosen at
construction.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numba import njit

from models.common.support import DOUBLE, LEFT, RIGHT, SOLES
from models.tilt import rotation_world_foot
from stabilizer.contact import (CONTACT_STATE, DWELL_S, LOADS_OK, MAX_LOAD, MIN_LOAD, RELEASE_LOAD,
                                debounced_contact, foot_loads, loads_status)
from stabilizer.contact import right_share as measured_share
from stabilizer.feet import new_state as new_feet_state
from stabilizer.feet import views as feet_views
from stabilizer.feet_config import FeetConfig
from stabilizer.ground import TILT_IMU, TILT_OK, TILT_PLATFORM
from stabilizer.pelvis_state import ACCEPT, GYRO_TAU_S, TILT_TAU_S, VEL_TAU_S, estimate, new_state
from stabilizer.pelvis_state import views as pelvis_views
from stabilizer.tilt_observer import ObserverSettings, observe_tilt
from stabilizer.tilt_observer import new_state as new_observer
from stabilizer.whole_body import P_DWELL, P_MAX_LOAD, P_MIN_LOAD, P_RELEASE_LOAD

from controller.daemon.codes import Event, Reason
from controller.daemon.loop.joint_io import JointIO
from controller.daemon.loop.platform import Platform

LOAD_SPLIT_FILTER_S = 0.005  # s, the first-order low-pass of the measured load split (control.load_split)
LANDING_LEAD_POWER = 6       # control.load_split: confirmed: the plan leads the landing foot's cells by (1 − u)^6 (1 − m)


def support_roots(roots: tuple[str, ...], base: str, support: str) -> np.ndarray:
    """The root index for each support phase (models.common.support: left, right, double). ``hung``: the
    base (the pelvis, held by the gantry) whatever the phase; ``ground``: the stance sole (SOLES),
    and -1 for double support (keep the last stance foot)."""
    if support == "hung":
        return np.full(3, roots.index(base), np.int64)
    return np.array([roots.index(SOLES[LEFT]), roots.index(SOLES[RIGHT]), -1], np.int64)


@njit(cache=True)
def support_acceleration(alpha, beta, f, R, out):
    """Horizontal acceleration (a_y, a_z) of the support in world axes from the specific force f
    an IMU on the foot measures in R0 axes: R_M->O0 f = a + g0 x_g (thesis eq. 46, x_g up), so
    the horizontal components of R_M->O0 f are those of a. R is scratch (3 x 3)."""
    rotation_world_foot(alpha, beta, R)
    for r in range(2):
        out[r] = R[r + 1, 0] * f[0] + R[r + 1, 1] * f[1] + R[r + 1, 2] * f[2]


class Estimation:
    """Sensing (``sense``, after the joints are read) and the models' update (``update``)."""

    def __init__(self, io: JointIO, platform: Platform, models, stab, wb: bool, period: float, ctl,
                 tilt_in: np.ndarray, acc_in: np.ndarray, event: Callable[..., None],
                 feet: FeetConfig = FeetConfig()) -> None:
        self.io, self.platform, self.models, self.period, self.event = io, platform, models, period, event
        md, bus = models, io.bus
        z = np.zeros
        self.plat, self.loads, self.feet_q, self.qd = platform.plat, io.loads, io.q, io.qd
        self.g0 = float(np.linalg.norm(md.level))
        # the tilt input (platform angles or an IMU's specific force) and the support's acceleration: the
        # stabilizer's inputs too
        self.tilt_in, self.acc_in, self.tilt, self.R3 = tilt_in, acc_in, z(2), z((3, 3))
        self.has_loads = io.has_loads
        # the feet's contact: the whole-robot stabilizer's thresholds (stabilizer.contact), else their defaults
        self.min_load, self.release_load, self.max_load, self.dwell = (
            (stab.params[P_MIN_LOAD], stab.params[P_RELEASE_LOAD], stab.params[P_MAX_LOAD], stab.params[P_DWELL])
            if wb else (MIN_LOAD, RELEASE_LOAD, MAX_LOAD, float(max(1, round(DWELL_S / period)))))
        self.contact_state = np.full(CONTACT_STATE, np.nan)   # stabilizer.contact.debounced_contact
        self.feet_load = np.full(2, np.nan)        # each foot's load (telemetry)
        self.contact = -1                          # the support phase the loads show (-1: none)
        self.contact_field = -1.0 if self.has_loads else math.nan   # the telemetry's (NaN: no loads on the bus)
        self.load_share = math.nan                 # the right foot's share of the feet's load
        self.loads_state = LOADS_OK                # stabilizer.contact.loads_status of the last cycle
        # control.load_split: measured: in double support on the ground the feed-forward shares the ground
        # wrench by the feet's measured loads, low-passed (LOAD_SPLIT_FILTER_S); the plan's ramp without them
        # (measured), or the plan's ramp confirmed by them (confirmed, ``split``)
        self.measured_split = ctl.load_split != "planned" and self.has_loads
        self.confirmed_split = ctl.load_split == "confirmed"
        self.last_planned = math.nan               # the plan's ramp of the previous cycle (its direction)
        self.share_lo, self.share_hi = 0.0, 1.0    # the bounds the cells set on the right sole's share
        self.split_gain = period / (period + LOAD_SPLIT_FILTER_S)
        self.share_f = math.nan                    # the filtered measured share (NaN: none)
        self.tilt_source = stab.tilt_source if stab is not None else TILT_PLATFORM
        self.tilt_use_acc = stab.use_acc if stab is not None else False
        imu = bus.config.imu_axis                  # the foot IMU on a drive's auxiliary input (config-checked)
        self.imu = bus.aux[imu] if imu is not None and (self.tilt_source == TILT_IMU or self.tilt_use_acc) else None
        sole = bus.config.sensor_axis("sole")      # the sole's load cells (config-checked with tilt.source imu)
        self.sole = bus.aux[sole] if sole is not None else None
        foot = md.foot
        self.foot_abc = (foot["a"], foot["b"], foot["c"]) if foot else (0.0, 0.0, 0.0)
        # a tree's pelvis IMU (tilt.source: imu; config-checked with the feet's loads): through the tilt
        # observer as the foot IMU, believed while the feet carry its min_load and |f| is g0 (its "sole" is
        # the feet's total load, no centre of pressure: a unit rectangle that never binds), low-passed; the
        # stabilizer and the feed-forward's gravity (TreeModels.imu_gravity) follow that specific force
        self.pelvis_imu = wb and self.tilt_source == TILT_IMU
        self.imu_frame = md.robot.model.index("frame", "pelvis") if self.pelvis_imu else -1
        if self.pelvis_imu:
            self.imu, self.sole, self.foot_abc = z(3), np.array([np.nan, 0.0, 0.0]), (1.0, 1.0, 1.0)
            io.pelvis_imu = self.imu
        self.tilt_obs = new_observer()             # the IMU's tilt, believed while the foot is flat
        obs = stab.observer if stab is not None else ObserverSettings()
        self.tilt_settings, self.tilt_unconfirmed_s = obs.array(), obs.unconfirmed_s
        self.tilt_unconfirmed = 0.0                # s since the observer last accepted a sample
        self.tilt_held = False                     # a valid tilt held unconfirmed for tilt_unconfirmed_s
        self.g_level = md.level
        self.tilt_ok = True
        # the model's root per support phase (left, right, double: -1 keeps the last single support)
        self.phase_root = support_roots(md.roots, md.base, ctl.support)
        self.phase = -1.0                          # support phase of the played file (-1: none)
        self.root = int(self.phase_root[LEFT])     # before any file: on the ground, the left sole
        self.model_root = self.root                # the rooting of this cycle's models
        md.set_root(self.root)
        # on the ground, the soles' rootings (left, right) that share the load in double support
        self.soles = (int(self.phase_root[LEFT]), int(self.phase_root[RIGHT])) if self.phase_root[2] < 0 else None
        # the right sole's load share (NaN: no phase, no split); before any file the robot stands on both feet
        self.right_share = 0.5 if self.soles is not None else np.nan
        # the variants, once
        steps: list[Callable[[], None]] = [self._feet] if self.has_loads else []
        if self.pelvis_imu:
            steps.append(self._pelvis_sole)
        if self.imu is not None and self.tilt_source == TILT_IMU:     # specific force in R0 (stabilizer.ground)
            steps.append(self._observe)
        else:
            steps.append(self._platform_tilt)
            if platform.rig is not None:           # use_acceleration: the rig's, by its forward kinematics
                steps.append(self._rig_acceleration)
            elif self.imu is not None:             # use_acceleration: the support's, from the IMU
                steps.append(self._imu_acceleration)
        # the pelvis' state in the world (stabilizer.pelvis_state), the telemetry's and the stabilizer's
        self.pelvis_state = new_state()
        self.pelvis = pelvis_views(self.pelvis_state)
        frames = md.robot.model.frame_names if md.kind == "tree" else ()
        self.estimates_pelvis = self.has_loads and all(SOLES[s] in frames for s in (LEFT, RIGHT))
        # the feet's own state (stabilizer.feet, the feet room's): on the ground without a platform, with
        # feet.slope.tilt_input, the slope the stance sole lying flat shows is the tilt input a platform's
        # angles would be
        self.feet_state = new_feet_state()
        self.ground_tilt = feet_views(self.feet_state).tilt
        self.pelvis_uses_imu = self.pelvis_uses_gyro = False
        self.pelvis_w = z(3)                       # the pelvis gyro's rate (pelvis axes, rad/s; zeros: none)
        if self.estimates_pelvis:
            m = md.robot.model
            self.sole_frames = np.array([m.index("frame", SOLES[s]) for s in (LEFT, RIGHT)], np.int64)
            self.pelvis_body = m.index("body", md.base)
            if io.imu_rows.size > 0 and not self.pelvis_imu:    # read for the feet's slope (stabilizer.feet)
                io.pelvis_imu = z(3)
            # a rate gyro on the bus (sensor pelvis_gyro): the orientation is the gyro's, the accelerometer's
            # gravity its slow correction (stabilizer.pelvis_state eq. 3-5), whatever the stabilizer's tilt
            self.pelvis_uses_gyro = io.gyro_rows.size > 0
            if self.pelvis_uses_gyro:
                io.pelvis_gyro = self.pelvis_w
            self.pelvis_uses_imu = self.pelvis_imu or (self.pelvis_uses_gyro and io.imu_rows.size > 0)
            self.pelvis_f = self.imu if self.pelvis_imu else io.pelvis_imu if self.pelvis_uses_imu else z(3)
            if (feet.tilt_input and self.soles is not None and not ctl.platform_axes and platform.rig is None
                    and steps[-1] == self._platform_tilt):
                steps[-1] = self._ground_slope
        self.steps = tuple(steps)
        self.gravity = self._imu_gravity if self.pelvis_imu else self._tilted_gravity
        if stab is not None and wb:
            stab.pelvis = self.pelvis_state

    # ------------------------------------------------------------------ sensing
    def sense(self) -> None:
        """The feet and the tilt input of this cycle (after a successful joint read)."""
        for step in self.steps:
            step()

    def _pelvis_sole(self) -> None:
        self.sole[0] = self.feet_load[0] + self.feet_load[1]

    def _observe(self) -> None:
        a, b, c = self.foot_abc
        if observe_tilt(self.imu, self.sole, a, b, c, self.g0, self.period, self.tilt_settings, self.tilt_obs,
                        self.tilt_in):
            self.tilt_unconfirmed = 0.0
        else:
            self.tilt_unconfirmed += self.period

    def _platform_tilt(self) -> None:
        self.tilt_in[0], self.tilt_in[1] = self.plat[0], self.plat[1]

    def _ground_slope(self) -> None:
        """The ground's slope as a platform's (alpha, beta) (stabilizer.feet eq. 3), level until known."""
        g, t = self.ground_tilt, self.tilt_in
        if g[0] == g[0]:
            t[0], t[1] = g[0], g[1]
        else:
            t[0] = t[1] = 0.0

    def _rig_acceleration(self) -> None:
        self.acc_in[:] = self.platform.support_acc

    def _imu_acceleration(self) -> None:
        support_acceleration(self.plat[0], self.plat[1], self.imu, self.R3, self.acc_in)

    def _feet(self) -> None:
        """The feet's loads (stabilizer.contact): each foot's, their plausibility (failing: a WARNING
        FEET_LOADS event as it starts, the telemetry's loads_implausible while it lasts, no sensed
        support), the support phase they show with hysteresis and dwell (a CONTACT event per change)
        and the right foot's share."""
        foot_loads(self.loads, self.feet_load)
        st = loads_status(self.loads, self.min_load, self.max_load)
        if st != self.loads_state:
            self.loads_state = st
            if st != LOADS_OK:
                self.event(Event.WARNING, float(Reason.FEET_LOADS), float(st))
        ok = st == LOADS_OK
        if not ok:
            self.contact_state[0] = math.nan      # the loads back: their support taken at once
        contact = debounced_contact(self.loads, self.min_load, self.release_load, self.dwell,
                                    self.contact_state) if ok else -1
        share = self.load_share = measured_share(self.loads) if ok else math.nan
        if share != share or self.share_f != self.share_f:
            self.share_f = share
        else:
            self.share_f += self.split_gain * (share - self.share_f)
        if contact != self.contact:
            self.contact = contact
            self.contact_field = float(contact)
            self.event(Event.CONTACT, float(contact), self.load_share)

    # ------------------------------------------------------------------ models
    def _imu_gravity(self) -> bool:
        return self.models.imu_gravity(self.imu_frame, self.tilt_in, self.g0, self.tilt)

    def _tilted_gravity(self) -> bool:
        md = self.models
        ok = md.apparent_tilt(self.tilt_source, self.tilt_use_acc, self.g0, self.tilt_in, self.acc_in,
                              self.R3, self.tilt) == TILT_OK
        if ok:
            md.tilted_gravity(self.tilt[0], self.tilt[1], self.g_level, md.gravity)
        return ok

    def update(self) -> None:
        """The models under the gravity of the measured tilt, R_M->O0ᵀ g (thesis eq. 46); an
        unusable tilt keeps the last valid gravity and posts a warning when it becomes unusable
        (detail 0), as does an IMU tilt the foot has not confirmed flat for ``tilt.unconfirmed_s`` (detail 1:
        held by the tilt observer, still used; the telemetry's ``tilt_held`` while it lasts)."""
        ok = self.gravity()
        held = self.tilt_held = ok and self.tilt_unconfirmed >= self.tilt_unconfirmed_s   # held that long
        ok = ok and not held
        if ok != self.tilt_ok:
            self.tilt_ok = ok
            if not ok:
                self.event(Event.WARNING, float(Reason.TILT_INPUT), 1.0 if held else 0.0)
        if self.model_root != self.root:
            self.model_root = self.root
            self.models.set_root(self.root)
        self.models.update(self.feet_q, self.qd)
        if self.estimates_pelvis:
            md = self.models
            estimate(md.mbuf, md.dbuf, self.qd, self.pelvis_f, self.pelvis_w, self.pelvis_uses_imu,
                     self.pelvis_uses_gyro, self.contact, self.sole_frames, self.pelvis_body, self.period, self.g0,
                     TILT_TAU_S, VEL_TAU_S, GYRO_TAU_S, ACCEPT, self.pelvis_state)

    # ------------------------------------------------------------------ support and rooting
    def support(self, phase: float) -> None:
        """A new support phase of the played file: the model's root follows it (``phase_root``;
        double support keeps the last stance foot, the feed-forward shares the load with the
        other sole), used from the next cycle's models; a
        SUPPORT event and the telemetry's ``support`` say so."""
        self.phase = phase
        if phase >= 0.0:
            r = self.phase_root[int(phase)]
            if r >= 0:
                self.root = int(r)
        self.event(Event.SUPPORT, phase, float(self.root))

    def stab_support(self, st) -> None:
        """The whole-robot stabilizer's support phase (the command's, or the one the feet's loads show):
        the models rooted at its stance sole from the next cycle, a SUPPORT event."""
        self.phase = st.support
        self.root = int(self.phase_root[st.stance()])
        self.event(Event.SUPPORT, self.phase, float(self.root))

    def split(self, planned: float, phase: float) -> float:
        """The right sole's load share the feed-forward takes (the ramp contact_share blends with the ZMP)
        and the bounds the feet's measured share, low-passed, sets on it (``share_lo``, ``share_hi``) in
        double support while their loads are plausible (else the file's alone: the FEET_LOADS warning said
        why): ``control.load_split: planned`` the file's ramp, unbounded; ``measured`` the measured share;
        ``confirmed`` the file's, the foot it loads (the right one while the ramp rises) carrying what its
        cells read, m, and at most the plan's lead over them, which fades as the plan loads that foot:
        m ≤ share ≤ m + (1 − u)^p (1 − m), u the plan's share of that foot, p = LANDING_LEAD_POWER. So at
        the touch-down the plan's prediction leads the cells (the sole meets the floor during the double
        support's first t_sink, models.gait.plan), and from there on the feed-forward shares the load as
        the cells read it (the position-held robot on its two soles shares it as the ground's compliance
        does, whatever the file planned): at the lift-off the foot about to leave keeps the load its cells
        still read, and a landing that takes the load faster than planned gets it (the final double
        support, whose plan moves the ZMP in its first 0.3 s, its ramp over the whole of it)."""
        rising, self.last_planned = planned > self.last_planned, planned
        self.share_lo, self.share_hi = 0.0, 1.0
        m = self.share_f
        if not (self.measured_split and phase == DOUBLE and m == m):
            return planned
        if not self.confirmed_split:
            self.share_lo = self.share_hi = m
            return m
        if rising:
            self.share_lo, self.share_hi = m, m + (1.0 - planned) ** LANDING_LEAD_POWER * (1.0 - m)
        else:
            self.share_lo, self.share_hi = m - planned ** LANDING_LEAD_POWER * m, m
        return planned

    def share(self, share: float) -> None:
        """The right sole's load share of a played sample; one without a phase (NaN) keeps the last."""
        if share == share:
            self.right_share = share
