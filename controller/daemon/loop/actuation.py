"""Actuation: feed-forward, safety and the axis tasks, then the joints' setpoints out (docs/cycle.md).

While the drives are powered: τ_ff (controller.daemon.loop.axes.feedforward, drive_feedforward and
the other sole's share of the ground wrench), the hard limits (a fault: nothing reaches a drive),
the soft limits (clamped, a warning as they start), the axis tasks (PID or CSP), then joint ->
motor on the bus (controller.daemon.loop.joint_io) and the platform's setpoints.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from controller.daemon.codes import Event, Reason
from controller.daemon.loop.axes import AxisTasks, drive_feedforward, feedforward
from controller.daemon.loop.estimation import Estimation
from controller.daemon.loop.joint_io import JointIO
from controller.daemon.loop.platform import Platform
from controller.daemon.loop.safety import OK as SAFE_OK
from controller.daemon.loop.safety import Limits, reason


class Actuation:
    """τ_ff, limits and axes of the joints ``io`` reads and writes."""

    def __init__(self, io: JointIO, platform: Platform, est: Estimation, models, limits: Limits, axes: AxisTasks,
                 fv: np.ndarray, fs: np.ndarray, vs: float, refs, fault: Callable[..., None],
                 event: Callable[..., None]) -> None:
        self.io, self.platform, self.est, self.models, self.limits, self.axes = io, platform, est, models, limits, axes
        self.fv, self.fs, self.vs = fv, fs, vs     # joint friction, the Coulomb sign's v_s (drive_feedforward)
        self.q_ref, self.qd_ref, self.qdd_ref = refs
        self.fault, self.event = fault, event
        n = io.q.shape[0]
        self.tau_ff, self.ff_scratch = np.zeros(n), np.zeros(n)
        self.soft_flags = 0
        if est.soles is None:                      # the variant, once
            self._other_sole = self._no_other_sole

    def feedforward(self) -> None:
        """τ_ff = (A + J_pᵀ J_m J_p) q̈_ref + C q̇ + G_tilt − J_cᵀ f_c + J_pᵀ J_m J̇_p q̇ + friction at
        q̇_ref: the plants' equation of motion (drivers.sim.plant_leg) solved for the torque; on the
        ground, f_c is the share of the ground wrench the sole that does not root the model
        carries (``right_share``, models.tree.dynamics.contact_share): 0 in its swing, all of it
        once it stands alone (until the root switches to it), a ramp in double support."""
        d, io = self.models, self.io
        feedforward(d.A, d.h, d.G, self.qdd_ref, True, self.tau_ff)
        self._other_sole()
        drive_feedforward(io.P, io.Jp, io.bias, self.fv, self.fs, self.vs, self.qdd_ref, self.qd_ref,
                          self.ff_scratch, self.tau_ff)

    def _other_sole(self) -> None:
        """On the ground, the share of the ground wrench the sole that does not root the model carries."""
        est = self.est
        if est.right_share == est.right_share:     # not NaN
            left, right = est.soles[0], est.soles[1]
            if est.model_root == left:
                self.models.contact(right, est.right_share, est.share_lo, est.share_hi, self.io.qd, self.qdd_ref,
                                    self.tau_ff)
            elif est.model_root == right:
                self.models.contact(left, 1.0 - est.right_share, 1.0 - est.share_hi, 1.0 - est.share_lo, self.io.qd,
                                    self.qdd_ref, self.tau_ff)

    @staticmethod
    def _no_other_sole() -> None:
        """Hung by its base, or a chain: no second sole shares the load."""

    def step(self) -> None:
        """One powered cycle (module docstring)."""
        self.feedforward()
        io = self.io
        code, joint = self.limits.check(io.q, io.qd, self.q_ref, self.qd_ref, self.tau_ff)
        if code != SAFE_OK:
            self.fault(reason(code), code, joint)
            return
        flags, joint = self.limits.clamp(self.q_ref, self.qd_ref, self.tau_ff)
        if flags and not self.soft_flags:
            self.event(Event.WARNING, float(Reason.SOFT_LIMIT), joint)
        self.soft_flags = flags
        ax = self.axes
        ax.apply_staged()
        ax.step(self.q_ref, self.qd_ref, io.q, self.tau_ff)
        failed, st, axis = io.write(ax.q_cmd, ax.qd_cmd, ax.tau)
        if failed:
            self.fault(Reason.TRANSMISSION, st, axis)
            return
        self.platform.write()
