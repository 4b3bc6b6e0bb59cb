"""The feet room: what the soles' load cells tell beyond the support phase (stabilizer.feet).

``observe`` (after the models' update and the pelvis estimate): each foot's load and centre of
pressure, the ground's slope while the stance sole lies flat (the telemetry's ``ground_slope``; on the
ground without a platform it is the (alpha, beta) the models' gravity and the whole-robot stabilizer's
polygon follow, as a platform's would: controller.daemon.loop.estimation) and an EDGE event (a = foot,
b = the mask of its unloaded cells) as a foot lands on an edge (the telemetry's ``edge``).
``comply`` (after the generator's sample): the commanded reference, the generator's plus the ankles'
compliance (``feet.compliance``), which the axes track and the telemetry's ``q_ref`` shows.
A robot without two feet of load cells on the bus has neither: the reference passes through.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from stabilizer.feet import comply, observe, views
from stabilizer.feet_config import FeetConfig, feet_geometry

from controller.daemon.codes import Event


class Feet:
    """Sole compliance, ground slope and edge landings of the feet ``est`` reads."""

    def __init__(self, cfg: FeetConfig, robot, est, q_ref: np.ndarray, qd_ref: np.ndarray, soft, period: float,
                 event: Callable[..., None]) -> None:
        self.est, self.q_ref, self.qd_ref, self.period, self.event = est, q_ref, qd_ref, period, event
        self.lo, self.hi = soft
        self.q_cmd, self.qd_cmd = q_ref.copy(), qd_ref.copy()
        self.state = est.feet_state
        self.v = views(self.state)
        self.active = est.estimates_pelvis
        self.p = cfg.params(period, est.g0)
        if self.active:
            g = feet_geometry(robot)
            self.cells, self.centre, self.ankles, self.axes = g.cells, g.centre, g.ankles, g.axes
            pv = est.pelvis
            self.stance, self.rel_R, self.v_rel = pv.stance, pv.rel_R, pv.v_rel
            self.imu = est.io.pelvis_imu if est.io.pelvis_imu.size == 3 else np.zeros(3)   # zeros: no slope
        else:
            self.comply = self._pass

    def observe(self) -> None:
        """This cycle's feet (module docstring), an EDGE event per edge landing."""
        if not self.active:
            return
        observe(self.p, self.state, self.est.loads, self.cells, self.stance[0], self.imu, self.rel_R, self.v_rel,
                self.period)
        e = self.v.new_edge
        for f in range(2):
            if e[f] != 0.0:
                self.event(Event.EDGE, float(f), e[f])

    def comply(self, powered: bool) -> None:
        """q_cmd, qd_cmd: the generator's reference plus the ankles' compliance."""
        comply(self.p, self.state, self.centre, self.ankles, self.axes, self.q_ref, self.qd_ref, self.lo, self.hi,
               powered, self.period, self.q_cmd, self.qd_cmd)

    def _pass(self, powered: bool) -> None:
        self.q_cmd[:] = self.q_ref
        self.qd_cmd[:] = self.qd_ref
