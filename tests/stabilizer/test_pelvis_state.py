"""The pelvis state estimator (stabilizer.pelvis_state) on a synthetic walk with a known answer.

The truth: BIP 2000's joints move by quintic segments (zero velocity and acceleration at the ends)
while one sole is still on the ground (left, then right, then left, with double supports where the
joints hold between them), on a floor tilted by ``SLOPE``; the pelvis' world pose is the stance
sole's world pose times the kinematics (the fixed-base tree rooted at the pelvis), the anchor
passing to the other sole at each support change where the first one puts it. The IMU's specific
force is R_w_pelvis' (p'' + g0 z), p'' by central differences of the true pelvis position. The
estimator runs on the tree's models in another rooting (a sole), as in the loop."""
from __future__ import annotations

import numpy as np
import pytest

from models.common.support import DOUBLE, LEFT, RIGHT, SOLES
from models.tree.floating import _rx, _ry, _rz
from stabilizer.pelvis_state import ACCEPT, GYRO_TAU_S, TILT_TAU_S, VEL_TAU_S, estimate, new_state, turn, views

from tests.models.trees import bip2000

PERIOD, G0 = 0.002, 9.81
# (phase, duration s): the joints move in single support, hold in double support
PHASES = ((LEFT, 0.6), (DOUBLE, 0.2), (RIGHT, 0.6), (DOUBLE, 0.2), (LEFT, 0.6), (DOUBLE, 0.2), (RIGHT, 0.6))
SLOPE = np.radians([2.0, -3.0])        # the floor's roll and pitch (world: heading 0 at the first sole)


class Walk:
    """The synthetic walk's truth at any time t (module docstring)."""

    def __init__(self, seed: int = 1, phases=PHASES, shift: float = 0.0) -> None:
        """``shift``: each support change that many seconds into the next joint segment (the
        stance exchanged while the legs move; only without double supports)."""
        self.phases = phases
        self.robot = bip2000()
        self.robot.set_root("pelvis")
        m = self.robot.model
        rng = np.random.default_rng(seed)
        mid, half = (m.qmin + m.qmax) / 2, (m.qmax - m.qmin) / 2
        self.knots, self.t = [mid + 0.3 * half * rng.uniform(-1, 1, m.n)], [0.0]
        for phase, dt in phases:
            self.knots.append(self.knots[-1] + (0.2 * half * rng.uniform(-1, 1, m.n) if phase != DOUBLE else 0.0))
            self.t.append(self.t[-1] + dt)
        self.pt = [0.0] + [t + shift for t in self.t[1:-1]] + [self.t[-1]]     # the support phases' starts
        self.soles = [m.index("frame", SOLES[s]) for s in (LEFT, RIGHT)]
        anchor = np.eye(4)
        anchor[:3, :3] = _rz(0.0) @ _ry(SLOPE[1]) @ _rx(SLOPE[0])     # heading 0, the floor's slope
        self.anchors = []                                  # the stance sole's world pose in each phase
        stance = LEFT
        for k, (phase, _) in enumerate(phases):
            if phase != DOUBLE and phase != stance:
                T = self.pelvis_at(self.pt[k], anchor, stance) @ self._sole(self.pt[k], phase)
                anchor, stance = T, phase
            self.anchors.append((anchor, stance))

    def joints(self, t: float):
        k = int(np.clip(np.searchsorted(self.t, t, side="right") - 1, 0, len(self.phases) - 1))
        x = (t - self.t[k]) / (self.t[k + 1] - self.t[k])
        s, sd = 10 * x**3 - 15 * x**4 + 6 * x**5, (30 * x**2 - 60 * x**3 + 30 * x**4) / (self.t[k + 1] - self.t[k])
        a, b = self.knots[k], self.knots[k + 1]
        return a + s * (b - a), sd * (b - a), k

    def _sole(self, t: float, stance: int) -> np.ndarray:
        """The sole frame in the pelvis frame at time t."""
        q, _, _ = self.joints(t)
        return self.robot.kinematics(q).Tf[self.soles[stance]].copy()

    def pelvis_at(self, t: float, anchor: np.ndarray, stance: int) -> np.ndarray:
        return anchor @ np.linalg.inv(self._sole(t, stance))

    def phase(self, t: float) -> int:
        """The support phase's index at time t."""
        return int(np.clip(np.searchsorted(self.pt, t, side="right") - 1, 0, len(self.phases) - 1))

    def pelvis(self, t: float) -> np.ndarray:
        return self.pelvis_at(t, *self.anchors[self.phase(t)])

    def imu(self, t: float, h: float = 1e-4) -> np.ndarray:
        p = [self.pelvis(t + d)[:3, 3] for d in (-h, 0.0, h)]
        acc = (p[0] - 2 * p[1] + p[2]) / h**2
        return self.pelvis(t)[:3, :3].T @ (acc + np.array([0.0, 0.0, G0]))

    def velocity(self, t: float, h: float = 1e-6) -> np.ndarray:
        return (self.pelvis(t + h)[:3, 3] - self.pelvis(t - h)[:3, 3]) / (2 * h)

    def gyro(self, t: float, h: float = 1e-6) -> np.ndarray:
        """The pelvis' angular velocity in its axes: vee(R' dR/dt)."""
        R, dR = self.pelvis(t)[:3, :3], (self.pelvis(t + h)[:3, :3] - self.pelvis(t - h)[:3, :3]) / (2 * h)
        W = R.T @ dR
        return 0.5 * np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]])


@pytest.fixture(scope="module")
def walk():
    return Walk()


def _run(walk: Walk, use_imu: bool, glitch: float = 0.0, use_gyro: bool = False):
    """The estimator over the walk on the models rooted at the left sole; per cycle the errors of
    position, velocity, orientation (the angle of R_est' R_true) and of the world's up seen from the
    stance sole (the ground's slope), the stance foot it took and the true one. ``glitch``: the
    first IMU sample turned by that angle (rad) about x, so the first anchor starts that wrong."""
    model = bip2000()
    model.set_root(SOLES[LEFT])
    m, d = model.model, model.data
    soles = np.array(walk.soles, np.int64)
    pelvis = m.index("body", "pelvis")
    buf, out = new_state(), []
    v = views(buf)
    for c in range(int(round(walk.t[-1] / PERIOD))):
        t = c * PERIOD
        q, qd, _ = walk.joints(t)
        k = walk.phase(t)
        model.update(q, qd)
        f = walk.imu(t) if use_imu else np.zeros(3)
        if c == 0:
            f = _rx(glitch) @ f
        w = walk.gyro(t) if use_gyro else np.zeros(3)
        estimate(m.buf, d.buf, qd, f, w, use_imu, use_gyro, walk.phases[k][0], soles, pelvis, PERIOD, G0, TILT_TAU_S,
                 VEL_TAU_S, GYRO_TAU_S, ACCEPT, buf)
        T = walk.pelvis(t)
        angle = 2 * np.arcsin(min(1.0, np.linalg.norm(v.R - T[:3, :3]) / (2 * np.sqrt(2))))   # of R_est' R
        out.append((np.linalg.norm(v.position - T[:3, 3]), np.linalg.norm(v.velocity - walk.velocity(t)),
                    np.degrees(angle), np.degrees(np.arccos(min(1.0, v.up @ walk.anchors[k][0][2, :3]))),
                    v.stance[0], walk.anchors[k][1], v.position.copy()))
    return out


def test_kinematics_alone_is_exact_on_level_ground(walk):
    """No IMU, a level floor: eq. 1 is the answer, through both support changes."""
    global SLOPE
    slope, SLOPE = SLOPE, np.zeros(2)
    try:
        errors = _run(Walk(), use_imu=False)
    finally:
        SLOPE = slope
    worst = np.max([e[:3] for e in errors], axis=0)
    assert worst[0] < 1e-9 and worst[1] < 1e-6 and worst[2] < 1e-7, worst
    assert [e[4] for e in errors] == [e[5] for e in errors]


def test_a_support_change_while_the_legs_move_does_not_jump():
    """No IMU, a level floor, the stance passed from foot to foot 0.25 s into a joint segment
    (no double support): the pelvis is placed through the old stance sole in the cycle of the
    change, so the new anchor carries no error."""
    global SLOPE
    slope, SLOPE = SLOPE, np.zeros(2)
    try:
        errors = _run(Walk(phases=((LEFT, 0.6), (RIGHT, 0.6), (LEFT, 0.6)), shift=0.25), use_imu=False)
    finally:
        SLOPE = slope
    worst = np.max([e[:3] for e in errors], axis=0)   # (the true velocity jumps at the exchange: not compared)
    assert worst[0] < 1e-9 and worst[2] < 1e-7, worst
    assert [e[4] for e in errors] == [e[5] for e in errors]


@pytest.mark.parametrize("gyro", [False, True])
def test_imu_and_kinematics_on_a_slope(walk, gyro):
    """With the IMU (and its gyro, eq. 3-5) on a 2 deg x 3 deg floor, over the whole walk: the slope
    within 0.02 deg, the pelvis orientation within 0.05 deg, its position within 1 mm, its velocity
    within 5 mm/s, and no support change makes the position jump more than the walk moves it in one
    cycle."""
    errors = _run(walk, use_imu=True, use_gyro=gyro)
    pos, vel, ang, slope = (np.array([e[i] for e in errors]) for i in range(4))
    print(f"pelvis errors{' (gyro)' if gyro else ''}: position {pos.max() * 1e3:.3f} mm, "
          f"velocity {vel.max() * 1e3:.3f} mm/s, "
          f"orientation {ang.max():.4f} deg, slope {slope.max():.4f} deg")
    assert slope.max() < 0.02 and ang.max() < 0.05
    assert pos.max() < 1e-3 and vel.max() < 5e-3
    assert [e[4] for e in errors] == [e[5] for e in errors]
    steps = np.linalg.norm(np.diff([e[6] for e in errors], axis=0), axis=1)
    true_steps = [np.linalg.norm(walk.pelvis((c + 1) * PERIOD)[:3, 3] - walk.pelvis(c * PERIOD)[:3, 3])
                  for c in range(len(steps))]
    assert np.max(steps - true_steps) < 1e-4


def test_the_filter_recovers_the_slope(walk):
    """A first anchor 2 deg wrong (a glitched first IMU sample): the complementary filter brings
    the slope back within 0.1 deg after 4 time constants (2 deg e^-4 = 0.04 deg)."""
    errors = _run(walk, use_imu=True, glitch=np.radians(2.0))
    settled = int(4 * TILT_TAU_S / PERIOD)
    slope = np.array([e[3] for e in errors])
    assert slope[0] > 1.9
    assert slope[settled:].max() < 0.1
    print(f"slope error from 2 deg off: {slope[settled:].max():.3f} deg after {settled * PERIOD:.1f} s")


def _expm(w: np.ndarray) -> np.ndarray:
    """exp([w]) by its power series (independent of the kernel's closed form)."""
    W = np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])
    out, term = np.eye(3), np.eye(3)
    for k in range(1, 40):
        term = term @ W / k
        out = out + term
    return out


def test_a_constant_rate_turns_by_its_exponential():
    """Eq. 3 over 500 cycles of a constant rate (0.7, -1.3, 0.4) rad/s from a turned start: R0 exp([w] N dt)
    within 1e-9, in the body's axes and, ``world``, on the left (exp([w] N dt) R0)."""
    w = np.array([0.7, -1.3, 0.4])
    R0 = _rz(0.3) @ _ry(-0.2) @ _rx(0.5)
    for world in (False, True):
        R, E = R0.copy(), np.zeros((3, 3))
        for _ in range(500):
            turn(R, w * PERIOD, world, E)
        want = _expm(w * 500 * PERIOD) @ R0 if world else R0 @ _expm(w * 500 * PERIOD)
        assert np.abs(R - want).max() < 1e-9, np.abs(R - want).max()


def _tip(use_gyro: bool, angle: float = np.radians(6.0), duration: float = 0.3, hold: float = 0.3):
    """The left sole standing flat, then tipping about its toe edge (0.1 m ahead of its origin) by ``angle``
    (pitch, a quintic over ``duration``) and held, the joints still (a push): the estimator's worst errors
    (orientation deg, horizontal position m, horizontal velocity m/s) against the truth during and after
    the tip (eq. 5 turns the sole about its origin: the vertical ones carry the toe's 0.1 m lever)."""
    robot = bip2000()
    robot.set_root("pelvis")
    m = robot.model
    q = (m.qmin + m.qmax) / 2
    sole = robot.kinematics(q).Tf[m.index("frame", SOLES[LEFT])].copy()
    pelvis_in_sole = np.linalg.inv(sole)

    def theta(t: float) -> float:
        x = np.clip((t - 0.5) / duration, 0.0, 1.0)
        return angle * (10 * x**3 - 15 * x**4 + 6 * x**5)

    def pose(t: float) -> np.ndarray:
        T = np.eye(4)
        toe = np.array([0.1, 0.0, 0.0])
        T[:3, :3] = _ry(theta(t))
        T[:3, 3] = toe - T[:3, :3] @ toe
        return T @ pelvis_in_sole

    model = bip2000()
    model.set_root(SOLES[LEFT])
    soles = np.array([model.model.index("frame", SOLES[s]) for s in (LEFT, RIGHT)], np.int64)
    buf, v, errs = new_state(), None, []
    v = views(buf)
    qd = np.zeros(m.n)
    h = 1e-5
    for c in range(int(round((0.5 + duration + hold) / PERIOD))):
        t = c * PERIOD
        model.update(q, qd)
        T, Tp, Tm = pose(t), pose(t + h), pose(t - h)
        acc = (Tp[:3, 3] - 2 * T[:3, 3] + Tm[:3, 3]) / h**2
        f = T[:3, :3].T @ (acc + np.array([0.0, 0.0, G0]))
        W = T[:3, :3].T @ (Tp[:3, :3] - Tm[:3, :3]) / (2 * h)
        w = 0.5 * np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]])
        estimate(model.model.buf, model.data.buf, qd, f, w, True, use_gyro, LEFT, soles,
                 model.model.index("body", "pelvis"), PERIOD, G0, TILT_TAU_S, VEL_TAU_S, GYRO_TAU_S, ACCEPT, buf)
        angle_err = 2 * np.arcsin(min(1.0, np.linalg.norm(v.R - T[:3, :3]) / (2 * np.sqrt(2))))
        vel = (Tp[:3, 3] - Tm[:3, 3]) / (2 * h)
        errs.append((np.degrees(angle_err), np.linalg.norm(v.position[:2] - T[:2, 3]),
                     np.linalg.norm(v.velocity[:2] - vel[:2])))
    return np.max(errs, axis=0)


def test_the_gyro_sees_the_sole_tip():
    """A sole tipping 6 deg about its toe in 0.3 s while the joints hold: without the gyro the estimate
    takes the tip for a slope change it follows with TILT_TAU_S (the orientation several degrees off,
    the pelvis' horizontal velocity wrong by a large part of its 0.5 m/s), with it (eq. 3-5) the
    orientation stays within 0.1 deg and the horizontal velocity within 0.02 m/s."""
    without, with_gyro = _tip(False), _tip(True)
    print(f"tip 6 deg: orientation error {without[0]:.3f} deg without the gyro, {with_gyro[0]:.4f} deg with it; "
          f"velocity {without[2]:.3f} / {with_gyro[2]:.4f} m/s, position {without[1] * 1e3:.1f} / "
          f"{with_gyro[1] * 1e3:.2f} mm")
    assert without[0] > 2.0
    assert with_gyro[0] < 0.1 and with_gyro[2] < 0.02
