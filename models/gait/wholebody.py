"""Joint angles of a planned walk by whole-body IK on the tree models.

Per sample the model is rooted at the stance sole (swapped at each support change); the
tasks are the other sole's pose, the CoG (x, y from the preview control, z the LIPM's
constant height) and the pelvis and trunk upright (their orientation at the zero
posture): 6 + 3 + 3 + 3 rows for the 15 joints. The flexed initial posture is found the
same way with the pelvis lowered by ``flex`` above the midpoint of the soles, which makes
both legs bend alike, so that the joint-space quintic from the start posture (the same, lowered
by ``start_flex``: no joint on its limit) keeps both soles flat on the floor. Any IK status other than OK is a :class:`GaitError` naming the
sample, the phase and the task.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from models.common.errors import ModelError
from models.ik.numerical import IkSolver, Task
from models.tree.robot import TreeRobot
from models.common.support import LEFT, RIGHT, SOLES, SUPPORT_NAMES
from models.gait.plan import GaitParams, Plan, make_plan, quintic, step_length
from models.gait.preview import PreviewController
from models.gait.reach import infeasibility, leg_demand

IK_OPTIONS = dict(tol_pos=1e-9, tol_rot=1e-9, max_iter=100)


class GaitError(ModelError):
    """A gait that cannot be generated or that fails its checks; the message says why."""


class GaitInfeasible(GaitError):
    """A request the legs cannot walk, found before solving: ``reason`` says which limit."""

    def __init__(self, params: GaitParams, reason: str) -> None:
        self.speed_m_h, self.steps, self.reason = params.speed * 3600.0, params.steps, reason
        super().__init__(f"speed {self.speed_m_h:g} m/h with {self.steps} steps: {reason}")


@dataclass
class Gait:
    """A generated gait: t (k,), q (k, n), support (k,), the plan, the parameters, the
    flexed posture and the CoG height z_c of the LIPM."""

    t: np.ndarray
    q: np.ndarray
    support: np.ndarray
    plan: Plan
    params: GaitParams
    q_flex: np.ndarray
    z_c: float
    cog_ref: np.ndarray          # (k, 2) CoG from the preview control
    zmp_lipm: np.ndarray         # (k, 2) the LIPM's ZMP


def _pose(p) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = p
    return T


def sole_centre(robot: TreeRobot) -> np.ndarray:
    """Centroid (x, y) of the left sole's outline (area-weighted), in the sole frame."""
    P = np.array(next(f for f in robot.description.feet if f.frame == "left_sole").outline)
    x, y = P[:, 0], P[:, 1]
    xn, yn = np.roll(x, -1), np.roll(y, -1)
    cross = x * yn - xn * y
    area = cross.sum() / 2.0
    return np.array([((x + xn) * cross).sum(), ((y + yn) * cross).sum()]) / (6.0 * area)


def flexed_posture(robot: TreeRobot, params: GaitParams) -> np.ndarray:
    """The slightly flexed posture: soles as at q = 0, pelvis upright, lowered by flex."""
    robot.set_root("left_sole")
    q0 = np.zeros(robot.n)
    T_pelvis = robot.frame(q0, "pelvis")
    T_pelvis[:3, :3] = np.eye(3)
    T_pelvis[2, 3] -= params.flex
    ik = IkSolver(robot, [Task("right_sole", "pose", robot.frame(q0, "right_sole")),
                          Task("pelvis", "pose", T_pelvis), Task("trunk", "orientation", np.eye(4))],
                  **IK_OPTIONS)
    guess = np.zeros(robot.n)
    for leg in ("l_", "r_"):
        guess[robot.model.joint_names.index(leg + "knee")] = 0.3
    res = ik.solve(guess)
    if not res.ok:
        raise GaitError(f"flexed initial posture (pelvis lowered {params.flex} m): {res.message()}")
    return res.q


def _refuse_infeasible(robot: TreeRobot, params: GaitParams, plan: Plan, cog: np.ndarray,
                       q_flex: np.ndarray) -> None:
    """A :class:`GaitInfeasible` when the legs cannot follow the plan (:mod:`models.gait.reach`),
    before any IK."""
    s = plan.step_length
    if not s > 0.0:
        raise GaitInfeasible(params, f"too slow for {params.steps} steps in {params.t_walk:.2f} s "
                                     f"(step length {s:.3f} m)")
    why = infeasibility(robot, plan, leg_demand(robot, plan, cog, q_flex, params.foot_spacing), params.period)
    if why:
        raise GaitInfeasible(params, f"step length {s:.3f} m: {why}")


def _pelvis_x(robot: TreeRobot, plan: Plan, q: np.ndarray, k: int) -> float:
    robot.set_root(SOLES[int(plan.stance[k])])
    return float(robot.frame(q[k], "pelvis")[0, 3] + plan.stance_pos[k, 0])


def generate(robot: TreeRobot, params: GaitParams, progress=None) -> Gait:
    """Plan, preview control and whole-body IK of the walk (module docstring). The step
    length from :func:`~models.gait.plan.step_length` moves the CoG at the requested speed;
    the pelvis, whose offset to the CoG changes with the legs' stance, is brought to it by
    correcting the step length by the remaining distance / (N − ½) (at most 5 times, to 0.2 %).
    Each plan is first held against the legs (:mod:`models.gait.reach`): a walk they cannot
    follow is a :class:`GaitInfeasible`, before any IK."""
    if not (math.isfinite(params.speed) and params.speed > 0.0):
        raise GaitError(f"the speed must be a positive number of m/h, got {params.speed * 3600}")
    if params.steps < 1:
        raise GaitError(f"the number of steps must be at least 1, got {params.steps}")
    say = progress or (lambda msg: None)
    q_flex = flexed_posture(robot, params)
    robot.set_root("left_sole")
    com = robot.com(q_flex)
    cog_start = com[:2] + (0.0, params.foot_spacing / 2.0)          # left sole frame -> world
    centre = sole_centre(robot)
    s = step_length(params, cog_start[0], centre[0])
    goal = params.speed * params.t_walk
    preview = PreviewController(params.period, float(com[2]), -float(robot.model.gravity[2]))
    for attempt in range(5):
        plan, cog, zmp = _pattern(params, preview, cog_start, centre, s)
        _refuse_infeasible(robot, params, plan, cog, q_flex)
        say(f"plan: {params.steps} steps of {s:.4f} m, CoG height {com[2]:.3f} m")
        gait = _walk(robot, params, q_flex, preview, plan, cog, zmp, say)
        moved = _pelvis_x(robot, gait.plan, gait.q, -1) - _pelvis_x(robot, gait.plan, gait.q, gait.plan.speed_start)
        if abs(moved - goal) <= 2e-3 * goal:
            break
        s += (goal - moved) / (params.steps - 0.5)
    return gait


def _pattern(params: GaitParams, preview: PreviewController, cog_start: np.ndarray, centre: np.ndarray,
             s: float) -> tuple[Plan, np.ndarray, np.ndarray]:
    """The plan for step length s, and the CoG (k, 2) and ZMP (k, 2) of its preview control."""
    plan = make_plan(params, cog_start, centre, s)
    w = plan.walk_start
    cog = np.empty((len(plan.t), 2))
    zmp = np.empty((len(plan.t), 2))
    cog[:w], zmp[:w] = cog_start, cog_start
    hold = int(round((params.t_end - min(params.t_double, params.t_end)) / params.period))
    for a in range(2):
        states, _ = preview.run(plan.zmp_ref[w:, a])
        if hold > 1:
            settle(states[-hold:], plan.zmp_ref[-1, a], params.period)
        cog[w:, a], zmp[w:, a] = states[:, 0], preview.zmp(states)
    return plan, cog, zmp


def settle(states: np.ndarray, goal: float, period: float) -> None:
    """Bring the cart-table's CoG states (k, 3: c, ċ, c̈) to rest at ``goal`` by the last sample, in
    place: c_b = c + σ (goal − c), σ = quintic over the window (0 → 1, σ' = σ'' = 0 at both ends), so
    the blend joins the preview's motion with continuous velocity and acceleration and ends with the
    CoG over the held ZMP at rest (c_b' = c_b'' = 0): the preview servo alone leaves it creeping
    towards it (a few mm/s after 0.7 s), a velocity the file's last sample would stop in one period."""
    n = states.shape[0]
    u = np.arange(n) / (n - 1)
    d = 1.0 / ((n - 1) * period)                  # ds/dt
    sig = quintic(u)
    sig1 = 30.0 * u * u * (1.0 - u) ** 2 * d
    sig2 = 60.0 * u * (1.0 - u) * (1.0 - 2.0 * u) * d * d
    c, cd, cdd = states[:, 0].copy(), states[:, 1].copy(), states[:, 2].copy()
    states[:, 0] = c + sig * (goal - c)
    states[:, 1] = (1.0 - sig) * cd + sig1 * (goal - c)
    states[:, 2] = (1.0 - sig) * cdd - 2.0 * sig1 * cd + sig2 * (goal - c)


def _walk(robot: TreeRobot, params: GaitParams, q_flex: np.ndarray, preview: PreviewController, plan: Plan,
          cog: np.ndarray, zmp: np.ndarray, say) -> Gait:
    z_c = preview.z_c
    w = plan.walk_start
    n = robot.n
    q = np.empty((len(plan.t), n))
    s_init = quintic(plan.t[:w + 1] / params.t_init)
    q_start = flexed_posture(robot, replace(params, flex=params.start_flex))
    q[:w + 1] = q_start + np.outer(s_init, q_flex - q_start)
    robot.set_root("left_sole")
    solvers = {}
    for st in (LEFT, RIGHT):
        solvers[st] = IkSolver(robot, [Task(SOLES[st ^ 1], "pose", np.eye(4)), Task("com", "position", np.zeros(3)),
                                       Task("pelvis", "orientation", np.eye(4)),
                                       Task("trunk", "orientation", np.eye(4))], **IK_OPTIONS)
    qk = q_flex.copy()
    step = max(1, (len(plan.t) - w) // 10)
    for k in range(w + 1, len(plan.t)):
        st = int(plan.stance[k])
        robot.set_root(SOLES[st])
        ik = solvers[st]
        base = plan.stance_pos[k]
        ik.set_target(0, _pose(plan.swing[k] - base))
        ik.set_target(1, np.array([cog[k, 0] - base[0], cog[k, 1] - base[1], z_c - base[2]]))
        res = ik.solve(qk)
        if not res.ok:
            raise GaitError(f"sample {k} (t = {plan.t[k]:.3f} s, {SUPPORT_NAMES[plan.support[k]]} support): "
                            f"{res.message()}")
        qk = res.q
        q[k] = qk
        if (k - w) % step == 0:
            say(f"IK {100 * (k - w) // (len(plan.t) - w)} % (t = {plan.t[k]:.2f} s)")
    return Gait(plan.t, q, plan.support, plan, params, q_flex, z_c, cog, zmp)
