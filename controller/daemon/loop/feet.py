"""The feet room: what the soles' load cells tell beyond the support phase (stabilizer.feet).

``observe`` (after the models' update and the pelvis estimate): each foot's load and centre of
pressure, the ground's slope while the stance sole lies flat (the telemetry's ``ground_slope``; on the
ground without a platform it is the (alpha, beta) the models' gravity and the whole-robot stabilizer's
polygon follow, as a platform's would: controller.daemon.loop.estimation) and an EDGE event (a = foot,
b = the mask of its unloaded cells) as a foot stands on an edge while a gait plays, which keeps both soles
flat, the swing foot's too (one that lands early on a step up is watched; the telemetry's ``edge``).
``comply`` (after the generator's sample): the commanded reference, the generator's plus the ankles'
compliance (``feet.compliance``), which the axes track and the telemetry's ``q_ref`` shows. Its target
per foot: while a file with a support phase plays (and after it, holding its last sample), the centre
of pressure the plan gives that sole, models.tree.dynamics.sole_cops of the generator's q, q̇, q̈ under
the level gravity the gait was planned for, split with the plan's load share as the feed-forward
splits the ground wrench; a foot complies while the plan's support has it and its cells confirm it
(the support phase the loads show). Without a plan, the cells' centre, each foot the cells show
loaded. With the compliance off, or ``feet.flatten`` on (while a plan plays the soles then only turn to
lie flat on an edge they stand on, stabilizer.feet eq. 4-5: no target), the plan's targets are not
computed (the cells' centre stands in). Then
the touch-down (``feet.touchdown``, stabilizer.touchdown): each sole's vertical offset from the plan as its
cells find the ground, on the legs' joints by their Jacobian at the generator's reference rooted at the
pelvis (the room's own twin of the models), a TOUCHDOWN event (a = foot, b = the offset, m) per landing it
moved, a TOE_DOWN event (a = foot, b = the sole's pitch, rad) per sole landed across an edge it turned toes
down until they found the ground (with ``tilt_edges``, up too, and a SIDE_DOWN, b = its roll, per sole turned
about a side), a STRIKE (b = the raise, m) per rising swing sole that struck something; on the ground only
(hung by the pelvis no sole lands). A robot without two feet of load cells on the bus has none of these: the
reference passes through.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from models.common.errors import ConfigError
from models.common.support import DOUBLE, LEFT, RIGHT
from models.tree.dynamics import kinematics, set_root, sole_cops
from models.tree.model import TreeData
from stabilizer.feet import P_MIN_LOAD, comply, observe, views
from stabilizer.feet_config import FeetConfig, feet_geometry
from stabilizer.touchdown import LEG, new_state as touchdown_state, touchdown, views as touchdown_views

from controller.daemon.codes import Event


class Feet:
    """Sole compliance, ground slope and edge landings of the feet ``est`` reads."""

    def __init__(self, cfg: FeetConfig, robot, est, refs: tuple[np.ndarray, np.ndarray, np.ndarray], soft,
                 period: float, event: Callable[..., None]) -> None:
        self.est, self.period, self.event = est, period, event
        self.q_ref, self.qd_ref, self.qdd_ref = refs
        self.lo, self.hi = soft
        self.q_cmd, self.qd_cmd = self.q_ref.copy(), self.qd_ref.copy()
        self.state = est.feet_state
        self.v = views(self.state)
        self.active = est.estimates_pelvis
        self.p = cfg.params(period, est.g0)
        self.complies = cfg.compliance and not cfg.flatten   # the plan's targets are computed for it only
        self.planned = np.zeros(2)                 # the feet the plan keeps flat (their edges watched)
        self.gate = np.zeros(2)                    # the feet that comply
        self.playing = 0.0                         # 1 while a plan plays
        if self.active:
            g = feet_geometry(robot)
            self.cells, self.centre, self.ankles, self.axes = g.cells, g.centre, g.ankles, g.axes
            self.target = self.centre.copy()
            pv = est.pelvis
            self.stance, self.rel_R, self.v_rel = pv.stance, pv.rel_R, pv.v_rel
            self.imu = est.io.pelvis_imu if est.io.pelvis_imu.size == 3 else np.zeros(3)   # zeros: no slope
            # the plan's twin of the models (its own Data: the loop's holds the measured posture)
            self.mbuf, self.plan = robot.model.buf, TreeData(robot.model)
            self.plan_root = -1
            self.level, self.rootf = est.models.level, est.models.rootf
            self.cops, self.scratch = np.zeros((2, 2)), np.zeros(robot.n)
            self.landed = cfg.touchdown                # the touch-down's state and twin for it only
            if self.landed:
                self.td_p, self.td = cfg.touchdown_params(), touchdown_state()
                self.td_v = touchdown_views(self.td)
                self.legs_twin, self.soles, self.legs = _legs(robot)
                self.td_q = np.zeros(robot.n)
                c = self.cells                         # the cells' extent (sole frame): stabilizer.touchdown BOX_*
                self.boxes = np.stack([c[:, :, 0].min(axis=1), c[:, :, 0].max(axis=1), c[:, :, 1].min(axis=1),
                                       c[:, :, 1].max(axis=1)], axis=1)
        else:
            self.comply = self._pass

    def observe(self) -> None:
        """This cycle's feet (module docstring), an EDGE event per edge stance."""
        if not self.active:
            return
        observe(self.p, self.state, self.est.loads, self.cells, self.planned, self.stance[0], self.imu, self.rel_R,
                self.v_rel, self.period)
        e = self.v.new_edge
        for f in range(2):
            if e[f] != 0.0:
                self.event(Event.EDGE, float(f), e[f])

    def comply(self, powered: bool) -> None:
        """q_cmd, qd_cmd: the generator's reference plus the ankles' compliance toward this cycle's targets,
        plus the touch-down's offsets (a TOUCHDOWN event per landing it moved, a TOE_DOWN per sole it turned)."""
        self._targets()
        comply(self.p, self.state, self.target, self.gate, self.playing, self.ankles, self.axes, self.q_ref,
               self.qd_ref, self.lo, self.hi, powered, self.period, self.q_cmd, self.qd_cmd)
        if not self.landed:
            return
        est = self.est
        phase = est.phase if est.soles is not None else -1.0     # hung (no sole on the ground): no touch-down
        touchdown(self.td_p, self.td, phase, self.v.load, self.v.cop, self.boxes, self.mbuf, self.legs_twin.buf,
                  self.q_ref, self.soles, self.legs, self.lo, self.hi, powered, self.period, self.td_q, self.q_cmd,
                  self.qd_cmd)
        new, turn, struck = self.td_v.new, self.td_v.new_turn, self.td_v.new_strike
        for f in range(2):
            if struck[f] != 0.0:
                self.event(Event.STRIKE, float(f), struck[f])
            if new[f] != 0.0:
                self.event(Event.TOUCHDOWN, float(f), new[f])
            if turn[f, 0] != 0.0:
                self.event(Event.TOE_DOWN, float(f), turn[f, 0])
            if turn[f, 1] != 0.0:
                self.event(Event.SIDE_DOWN, float(f), turn[f, 1])

    def _targets(self) -> None:
        """Each foot's target centre of pressure, whether it complies and whether the plan keeps it flat
        (module docstring)."""
        est = self.est
        phase, contact, soles = est.phase, est.contact, est.soles
        share = est.right_share
        plan = phase >= 0.0 and soles is not None and share == share
        self.playing = 1.0 if plan else 0.0
        for f, side in enumerate((LEFT, RIGHT)):
            on = phase == side or phase == DOUBLE
            self.planned[f] = 1.0 if plan else 0.0     # the gait keeps both soles flat, the swing foot's too
            confirmed = contact == side or contact == DOUBLE
            self.gate[f] = 1.0 if confirmed and (on or not plan) else 0.0
        if not (plan and self.complies):
            self.target[:] = self.centre
            return
        if est.root != self.plan_root:
            self.plan_root = est.root
            set_root(self.mbuf, self.plan.buf, est.root)
        rf = 0 if est.root == soles[0] else 1      # the root sole's foot
        ramp = share if rf == 0 else 1.0 - share    # the other sole's share
        sole_cops(self.mbuf, self.plan.buf, self.q_ref, self.qd_ref, self.qdd_ref, self.level,
                  int(self.rootf[soles[1 - rf]]), ramp, self.p[P_MIN_LOAD], self.scratch, self.cops)
        self.target[rf] = self.cops[0]
        self.target[1 - rf] = self.cops[1]

    def _pass(self, powered: bool) -> None:
        self.q_cmd[:] = self.q_ref
        self.qd_cmd[:] = self.qd_ref


def _legs(robot) -> tuple[TreeData, np.ndarray, np.ndarray]:
    """A twin of the models rooted at the pelvis (the robot's base), the soles' frame indices (left, right) and
    the six joints carrying each (the columns of its sole's Jacobian there)."""
    desc, model = robot.description, robot.model
    if desc.base not in model.root_names:
        raise ConfigError(desc.source, "feet.touchdown", f"the touch-down needs the robot rooted at its base "
                          f"{desc.base} (roots: {', '.join(model.root_names)})")
    twin = TreeData(model)
    set_root(model.buf, twin.buf, model.root_names.index(desc.base))
    kinematics(model.buf, twin.buf, np.zeros(robot.n))
    soles = np.array([model.frame_names.index(foot.frame) for foot in desc.feet], dtype=np.int64)
    legs = np.zeros((2, LEG), dtype=np.int64)
    for f, s in enumerate(soles):
        cols = np.nonzero(np.abs(twin.Jf[s]).sum(axis=0) > 0.0)[0]
        if len(cols) != LEG:
            raise ConfigError(desc.source, "feet.touchdown", f"the touch-down needs {LEG} joints carrying the sole "
                              f"{desc.feet[f].frame} from the base, it has {len(cols)}")
        legs[f] = cols
    return twin, soles, legs
