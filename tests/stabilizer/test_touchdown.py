"""The touch-down kernel (stabilizer.touchdown): its joint offsets move the sole along the pelvis' z and
nothing else (Pinocchio's forward kinematics of BIP 2000 rooted at the pelvis), an early contact holds the
sole where it met the ground until the plan's touch-down and carries it through the stance, the next
lift-off releases it, a late contact descends until the cells load (or to the bound), a landing on the
plan's floor moves nothing, a sole bearing on its heel across an edge turns toes down about it until they
load (a heel-first landing turns nothing), the config's named errors; allocation-free."""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from numba import njit

from models.common.errors import ConfigError
from models.common.validation import Section
from models.gait.plan import GaitParams, make_plan
from models.tree.reference import build_tree
from models.tree.robot import TreeRobot
from stabilizer.feet_config import FeetConfig, parse_feet
from stabilizer.touchdown import CARRIED, SOFT_BAND, _within, new_state, offsets, touchdown, views

from tests.nrt import assert_allocation_free
from tests.paths import DEPLOY

PERIOD = 0.002
LEFT, RIGHT, DOUBLE = 0.0, 1.0, 2.0
TOUCH = 300.0                              # N on the cells once a sole is down
P = FeetConfig(touchdown=True).touchdown_params()
EDGES = FeetConfig(touchdown=True, tilt_edges=True).touchdown_params()   # every edge of the cells turns the sole
BOXES = np.array([[-0.06, 0.14, -0.045, 0.045]] * 2)   # deploy/robots/bip2000.yaml: the cells' extent in the sole frame
CENTRED = np.zeros((2, 2))                 # the cells' centre of pressure at the soles' origins


@pytest.fixture(scope="module")
def robot():
    return TreeRobot.from_yaml(DEPLOY / "robots" / "bip2000.yaml")


@pytest.mark.parametrize("offset, pitch, roll, pivot, tol, back", [
    (0.01, 0.0, 0.0, (0.0, 0.0), 5e-6, 0.0), (0.0, 0.04, 0.0, (-0.085, 0.0), 5e-6, 0.0),
    (-0.01, 0.08, 0.0, (-0.085, 0.0), 1e-4, 0.0), (0.0, -0.05, 0.0, (0.17, 0.0), 5e-6, 0.0),
    (0.0, 0.0, 0.04, (0.0, 0.06), 5e-6, 0.0), (0.0, -0.03, -0.035, (0.17, -0.06), 5e-6, 0.0),
    (0.02, 0.0, 0.0, (0.0, 0.0), 1e-4, -0.012)])
def test_offset_moves_the_sole_along_the_pelvis_z_pinocchio(robot, offset, pitch, roll, pivot, tol, back):
    """dq of eq. 1 for the right leg, flexed, to eq. 2's goal: Pinocchio's right sole relative to the pelvis
    rises ``offset`` (10 mm: to 5 µm with the Newton step; the linear solve alone is 0.65 mm off) and turns
    by ``pitch`` (toes down) about its y axis and ``roll`` (right side down) about its x axis through the point
    ``pivot`` of its plane (eq. 2': a heel, toe or side on an edge: that line stays where it was), to 5 µm and
    0.1 mrad (the one Newton step leaves 50 µm for both at once: 10 mm down, 4.6° toes down; 30 µm for 20 mm up and 12 mm back), and held ``back``
    along the pelvis' x (eq. 3: a swing rising over a step before it moves forward); the left leg and the trunk
    untouched."""
    from controller.daemon.loop.feet import _legs
    q = np.zeros(robot.n)
    q[[2, 8]], q[[3, 9]], q[[4, 10]] = -0.3, 0.6, -0.3          # hips, knees, ankles: legs flexed
    twin, soles, legs = _legs(robot)
    st = new_state()
    v = views(st)
    v.offset[1], v.turn[1], v.pivot[1], v.mode[1], v.back[1] = offset, (pitch, roll), pivot, CARRIED, back
    q_cmd, qd_cmd = q.copy(), np.zeros(robot.n)
    lo, hi = np.full(robot.n, -3.0), np.full(robot.n, 3.0)
    touchdown(P, st, DOUBLE, np.array([TOUCH, TOUCH]), CENTRED, BOXES, robot.model.buf, twin.buf, q, soles, legs, lo,
              hi, True, PERIOD, np.zeros(robot.n), q_cmd, qd_cmd)
    moved = np.nonzero(q_cmd != q)[0]
    assert set(moved) <= set(legs[1]) and len(moved) >= 3
    ref = build_tree(robot.description, "pelvis")
    model, data = ref.model, ref.model.createData()
    before, after = [], []
    for qq, out in ((q, before), (q_cmd, after)):
        pin.framesForwardKinematics(model, data, qq[ref.perm])
        out.extend(data.oMf[ref.frames[name]].copy() for name in ("left_sole", "right_sole"))
    R, c = pin.utils.rotate("y", pitch) @ pin.utils.rotate("x", roll), np.array([*pivot, 0.0])
    turn = pin.SE3(R, c - R @ c)
    goal = pin.SE3(np.eye(3), np.array([back, 0.0, offset])) * before[1] * turn
    assert after[1].translation == pytest.approx(goal.translation, abs=tol)
    assert np.linalg.norm(pin.log3(goal.rotation.T @ after[1].rotation)) < 1e-4
    assert np.allclose(after[0].homogeneous, before[0].homogeneous)


def swing(z0: float, n: int) -> np.ndarray:
    """A landing sole's plan height over the last n cycles of its swing: z0 down to 0 (a quintic)."""
    s = np.arange(1, n + 1) / n
    return z0 * (1.0 - s ** 3 * (10.0 - 15.0 * s + 6.0 * s * s))


class Walk:
    """The offsets' kernel (stabilizer.touchdown.offsets) on the right foot's plan height ``z`` and loads."""

    def __init__(self, p: np.ndarray = P):
        self.st, self.p = new_state(), p
        self.offsets, self.events = [], []
        self.pitches, self.tilts, self.turns, self.turned = [], [], [], []
        self.cops = CENTRED.copy()

    def cycle(self, phase: float, z: float, right_load: float, right_cop_x: float = 0.0, right_cop_y: float = 0.0) -> None:
        self.cops[1] = right_cop_x, right_cop_y
        offsets(self.p, self.st, phase, np.array([TOUCH, right_load]), np.array([0.0, z]), np.zeros(2), self.cops,
                BOXES, True, PERIOD)
        v = views(self.st)
        self.offsets.append(v.offset[1])
        self.pitches.append(v.turn[1, 0])
        self.turns.append(v.turn[1].copy())
        if v.new[1] != 0.0:
            self.events.append(v.new[1])
        if v.new_turn[1, 0] != 0.0:
            self.tilts.append(v.new_turn[1, 0])
        for ax in range(2):
            if v.new_turn[1, ax] != 0.0:
                self.turned.append((ax, v.new_turn[1, ax]))


def test_early_contact_holds_the_sole_carries_it_and_the_next_lift_off_releases_it():
    """A step 10 mm up: the cells load as the plan's sole passes 10 mm down; the sole stays there (the
    offset rises as the plan descends, 10 mm at the plan's touch-down, one event), through the double
    and the stance's single support; the next swing releases it over ``release_s``."""
    w, down = Walk(), swing(0.03, 150)
    for z in down:
        w.cycle(LEFT, z, TOUCH if z <= 0.01 else 0.0)
    held = np.array(w.offsets) + down
    hit = int(np.argmax(down <= 0.01))
    assert np.allclose(held[hit:], held[hit]) and held[hit] == pytest.approx(0.01, abs=5e-4)
    for _ in range(400):                                        # double support, then the right's stance
        w.cycle(DOUBLE, 0.0, TOUCH)
    for _ in range(400):
        w.cycle(RIGHT, 0.0, 2 * TOUCH)
    assert w.offsets[-1] == pytest.approx(held[hit]) and w.events == [pytest.approx(held[hit])]
    release = int(round(FeetConfig().release / PERIOD))
    for k in range(release + 10):                                # its next swing
        w.cycle(LEFT, 0.02, 0.0)
        if k == release // 2:
            assert 0.3 * held[hit] < w.offsets[-1] < 0.7 * held[hit]
    assert w.offsets[-1] == 0.0


@pytest.mark.parametrize("drop, contact", [(0.01, 0.01), (0.05, FeetConfig().bound)])
def test_late_contact_descends_until_the_cells_load_or_the_bound(drop, contact):
    """A step ``drop`` down: nothing loads at the plan's touch-down; after ``delay_s`` the sole descends at
    up to ``speed`` until its cells load at ``drop`` below the plan (or it reaches the bound), then holds."""
    w = Walk()
    for z in swing(0.03, 150):
        w.cycle(LEFT, z, 0.0)
    delay = int(round(FeetConfig().delay / PERIOD))
    for k in range(600):
        w.cycle(DOUBLE, 0.0, TOUCH if -w.offsets[-1] >= drop - 1e-9 else 0.0)
        if k == delay - 1:
            assert w.offsets[-1] == 0.0
    rates = np.diff(w.offsets) / PERIOD
    assert w.offsets[-1] == pytest.approx(-contact, abs=FeetConfig().speed * PERIOD + 1e-9)
    assert rates.min() >= -FeetConfig().speed - 1e-9
    assert w.events == [pytest.approx(w.offsets[-1])]


@pytest.mark.parametrize("early", [True, False])
def test_a_landing_on_the_plans_floor_moves_nothing(early):
    """The flat floor: the cells load 0.5 mm above the plan's floor, still descending (below ``min_offset_m``:
    that floor), or 30 ms after the plan's touch-down (the soft landing's late meet): no offset, no event."""
    w = Walk()
    for z in swing(0.03, 150):
        w.cycle(LEFT, z, TOUCH if early and z <= 0.0005 else 0.0)
    for k in range(300):
        w.cycle(DOUBLE, 0.0, TOUCH if early or k >= 15 else 0.0)
    assert max(abs(o) for o in w.offsets) == 0.0 and w.events == []


def test_the_plans_swing_lifts_before_its_toe_moves_forward():
    """The gait's swing (models.gait.plan): the quick lift to ``clearance`` puts the sole of the first swing
    (0.256 m) 7.1 mm up when it has moved 5 mm forward (a riser 5 mm ahead of the toe), both ends, against
    3.6 mm with the bell alone (``clearance`` 0: the bell as it was, its top ``step_height``)."""
    cog, centre = np.zeros(2), np.zeros(2)
    heights = {}
    for c in (GaitParams.clearance, 0.0):
        params = GaitParams(period=0.002, clearance=c)
        plan = make_plan(params, cog, centre, 0.256)
        k0 = int(np.argmax(plan.support != DOUBLE))
        sw = plan.swing[k0:k0 + int(round(params.t_single / params.period))]
        x, z = np.abs(sw[:, 0] - sw[0, 0]), sw[:, 2] - params.sink
        ends = []
        for xs, zs in ((x, z), (x[-1] - x[::-1], z[::-1])):
            ends.append(zs[int(np.argmax(xs > 0.005))])
        heights[c] = ends
    assert heights[GaitParams.clearance] == pytest.approx([0.0071, 0.0071], abs=3e-4)
    assert heights[0.0] == pytest.approx([0.0036, 0.0036], abs=3e-4)
    bell_only = make_plan(GaitParams(period=0.002, clearance=0.0), cog, centre, 0.256).swing[:, 2]
    s = np.linspace(0.0, 1.0, 501)
    assert np.allclose(GaitParams(clearance=0.0).lift(s), GaitParams().step_height * 64 * s ** 3 * (1 - s) ** 3)
    assert bell_only.max() == pytest.approx(GaitParams().sink + GaitParams().step_height)


STEP_UP = FeetConfig(touchdown=True, step_up=True).touchdown_params()


def second_swing() -> tuple[np.ndarray, np.ndarray]:
    """The plan's second swing (the trailing foot's 0.512 m step, models.gait.plan): its sole's x and height over
    the stance sole from its lift-off, per cycle."""
    params = GaitParams(period=PERIOD)
    plan = make_plan(params, np.zeros(2), np.zeros(2), 0.512)
    k0 = int(np.argmax(plan.support != DOUBLE))
    sw = plan.swing[k0:k0 + int(round(params.t_single / PERIOD))]
    return sw[:, 0] - sw[0, 0], sw[:, 2] - params.sink


def swing_over(level: float, loads=None, p: np.ndarray = STEP_UP) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """The right foot's second swing (:func:`second_swing`) while the left stands ``level`` up (its carried
    offset: its landing found the step), its cells reading ``loads`` (N per cycle; none by default): the sole's
    progress along x and its height over the left sole's plan floor (m) per cycle, and the strikes' raises."""
    x, z = second_swing()
    st = new_state()
    v = views(st)
    v.offset[0], v.mode[0] = level, CARRIED
    cops, progress, height, strikes = CENTRED.copy(), [], [], []
    for k in range(len(z)):
        load = 0.0 if loads is None else loads[k]
        offsets(p, st, LEFT, np.array([TOUCH, load]), np.array([0.0, z[k]]), np.array([0.0, x[k]]), cops, BOXES,
                True, PERIOD)
        progress.append(x[k] + v.back[1])
        height.append(z[k] + v.offset[1])
        if v.new_strike[1] != 0.0:
            strikes.append(v.new_strike[1])
    return np.array(progress), np.array(height), strikes


@pytest.mark.parametrize("step", [0.01, 0.02])
def test_a_learned_step_up_is_risen_before_the_swing_moves_forward_and_landed_on(step):
    """eq. 3: the stance sole carries the ``step`` its landing found (1 or 2 cm up); the trailing foot, its toe
    5 mm behind the riser, lifts: by the time its sole has moved 5 mm forward it is above the step by at least
    4 mm (the plan alone: 4 mm over the lower floor, under the riser's top); it lands on the step on the plan's
    time (its offset the learned level at the plan's touch-down), never ahead of the plan along x, and back on
    the plan's x once ``step_lift_s`` is over. With ``step_up`` off it is the plan's swing on the lower floor."""
    cfg = FeetConfig()
    progress, height, strikes = swing_over(step)
    x, z = second_swing()
    at = int(np.argmax(progress > 0.005))
    assert height[at] >= step + 0.004 and z[int(np.argmax(x > 0.005))] < 0.005
    assert height[-1] - z[-1] == pytest.approx(step, abs=1e-12) and strikes == []
    assert np.all(progress <= x + 1e-12) and np.allclose(progress[int(cfg.step_lift / PERIOD) + 1:],
                                                         x[int(cfg.step_lift / PERIOD) + 1:], atol=1e-12)
    assert np.all(np.diff(height[int(len(z) / 2):]) <= 1e-9)       # it descends onto the step from the top
    off = swing_over(step, p=P)
    assert np.array_equal(off[0], x) and np.array_equal(off[1], z)


def test_a_swing_over_the_level_it_stood_on_is_the_plans():
    """The flat floor: both soles on the plan's floor (no carried offset), or the stance sole under ``step_min_m``
    above the swing one: the swing is the plan's along x, and lands on the stance sole's level."""
    x, z = second_swing()
    progress, height, _ = swing_over(0.0)
    assert np.array_equal(progress, x) and np.array_equal(height, z)
    progress, height, _ = swing_over(0.002)
    assert np.array_equal(progress, x) and height[-1] - z[-1] == pytest.approx(0.002)


def test_a_rising_sole_that_strikes_something_rises_over_it_before_it_moves_on():
    """A toe that catches a riser while the plan rises (its cells pull, −420 N: the riser's friction on the rising
    toe, as the 2 cm step up's first swing read in the HIL) rises ``strike_raise_m`` more over ``strike_s`` while its
    move forward stops where it struck and its toe steps back from the face (``strike_back_m`` of bump, 2 mm of it
    as the catch-up starts meanwhile; not past the face for a quarter of it), then catches up with the plan, and lands no lower than where it struck (a riser's face: its top is higher);
    the load of a sole still on the ground at its lift-off (the plan under ``strike_min_m``) or of a descending
    sole's landing is no strike."""
    cfg = FeetConfig()
    x, z = second_swing()
    hit = int(np.argmax(z > 0.008))
    loads = np.zeros(len(z))
    loads[:5] = 400.0                                            # unloading as it lifts
    loads[hit:hit + 3] = -420.0
    loads[-3:] = 400.0                                           # its landing
    progress, height, strikes = swing_over(0.0, loads)
    n = int(round(cfg.strike_s / PERIOD))
    assert strikes == [pytest.approx(cfg.strike_raise)]
    assert progress[hit:hit + n // 4].max() <= progress[hit] + 1e-12            # not a step further meanwhile
    assert progress[hit:hit + n].min() <= progress[hit] - 0.3 * cfg.strike_back
    assert height[hit + n] - z[hit + n] == pytest.approx(cfg.strike_raise, abs=1e-3)
    assert np.allclose(progress[hit + n + 1:], x[hit + n + 1:], atol=1e-12)
    assert height[-1] - z[-1] == pytest.approx(z[hit], abs=1e-12)   # it lands no lower than where it struck


def test_an_offset_is_eased_into_its_soft_limit():
    """eq. 1's joint offsets within the soft limits (a room of 0.1 rad below the reference, 0.2 above): unchanged
    until SOFT_BAND short of the limit, then eased into it, never past it, monotonic, its slope continuous (the
    trailing ankle, raised over a learned step, met its limit with the offset stopped at once: a jolt)."""
    low, high = -0.1, 0.2
    dq = np.linspace(-0.4, 0.4, 8001)
    out = np.array([_within(d, low, high) for d in dq])
    inside = (dq >= low + SOFT_BAND) & (dq <= high - SOFT_BAND)
    assert np.array_equal(out[inside], dq[inside])
    assert out.min() > low and out.max() < high and out[0] == pytest.approx(low, abs=1e-4)
    assert np.all(np.diff(out) > 0.0)
    slope = np.diff(out) / np.diff(dq)
    assert np.abs(np.diff(slope)).max() < 0.01
    assert _within(0.05, -0.01, 0.0) == 0.0 and _within(-0.05, -0.01, 0.0) == pytest.approx(-0.01, abs=1e-4)


HEEL_EDGE = -0.085
"""The right sole's heel 9 mm onto the upper level of a step down (the results table's edge at 0.175 m): its cells'
pressure, extrapolated, 25 mm behind its rear cells."""


def test_a_sole_bearing_on_its_heel_turns_toes_down_until_they_load_then_the_next_lift_off_releases_it():
    """A step 1 cm down under all but the heel: the right lands on time on the edge, its pressure behind the rear
    cells; after ``tilt_delay_s`` the sole turns toes down about that line, its rate ramping at ``tilt_accel`` up
    to ``tilt_speed``, until the toes meet the lower floor (1 cm / 0.251 m = 0.0398 rad: the pressure then
    within the cells); held (one TOE_DOWN) through the stance, its next swing releases it over ``release_s``."""
    cfg, w = FeetConfig(), Walk()
    toe = 0.01 / 0.251
    for z in swing(0.03, 150):
        w.cycle(LEFT, z, 0.0)
    for k in range(300):
        w.cycle(DOUBLE, 0.0, TOUCH, HEEL_EDGE if w.pitches[-1] < toe else 0.03)
    for _ in range(200):
        w.cycle(RIGHT, 0.0, 2 * TOUCH, 0.03)
    p = np.array(w.pitches[150:])
    start = int(round(cfg.tilt_delay / PERIOD))
    assert np.all(p[:start - 1] == 0.0) and p[start + 1] > 0.0
    rate = np.diff(p) / PERIOD
    assert rate.max() <= cfg.tilt_speed + 1e-9 and np.diff(rate).max() <= cfg.tilt_accel * PERIOD + 1e-9
    assert p[-1] == pytest.approx(toe, abs=cfg.tilt_speed * PERIOD) and w.tilts == [p[-1]]
    assert views(w.st).pivot[1, 0] == HEEL_EDGE and w.events == []
    release = int(round(cfg.release / PERIOD))
    for _ in range(release + 2):
        w.cycle(LEFT, 0.02, 0.0)
    assert w.pitches[-release // 2] == pytest.approx(0.5 * p[-1], rel=0.05) and w.pitches[-1] == 0.0


@pytest.mark.parametrize("p", [P, EDGES], ids=["heel", "edges"])
@pytest.mark.parametrize("cop, for_s, load", [((HEEL_EDGE, 0.0), 0.026, TOUCH), ((-0.064, 0.0), 0.3, TOUCH),
                                              ((HEEL_EDGE, 0.0), 0.3, 0.25 * TOUCH / 0.75),
                                              ((0.17, 0.0), 0.026, TOUCH), ((0.144, -0.049), 0.3, TOUCH),
                                              ((0.03, 0.07), 0.3, 0.25 * TOUCH / 0.75)])
def test_a_heel_first_landing_or_a_pressure_within_the_cells_turns_nothing(p, cop, for_s, load):
    """The pressure past the cells for less than ``tilt_delay_s`` (a heel-first landing or a toe-off on the flat
    floor), or for long but within ``tilt_margin_m`` of them, or while the foot carries under ``tilt_share`` of
    both feet's load (25 %): no turn, no event, the heel's edge alone or every edge."""
    w = Walk(p)
    for z in swing(0.03, 150):
        w.cycle(LEFT, z, 0.0)
    for k in range(300):
        w.cycle(DOUBLE, 0.0, load, *(cop if k * PERIOD < for_s else (0.03, 0.0)))
    assert np.abs(w.turns).max() == 0.0 and w.turned == []


FLOOR = 0.03
"""rad: the ground under the landed sole turned this much from the plan's sole (a 1.7° slope met on time)."""


@pytest.mark.parametrize("cop, axis, sign", [((0.17, 0.0), 0, -1.0), ((HEEL_EDGE, 0.01), 0, 1.0),
                                             ((0.03, 0.06), 1, 1.0), ((0.05, -0.06), 1, -1.0)],
                         ids=["toes", "heel", "left", "right"])
def test_with_every_edge_a_sole_bearing_on_one_turns_about_it_until_it_lies_flat(cop, axis, sign):
    """eq. 2': a sole landed on its toe line (uphill), its heel, its left or its right side, the ground turned
    ``FLOOR`` from it: its pressure past that edge by more than the margin, the sole turns about the line it
    bears on (pitch: toes up for the toes, down for the heel; roll > 0, the right side down, on the left edge)
    at the heel's law (``tilt_delay_s``, then the rate ramping at ``tilt_accel`` up to ``tilt_speed``) until it
    lies on the ground (its pressure then within the cells), one event with that angle, the other axis
    untouched; held through the stance; released over ``release_s`` from the next lift-off. With the heel's
    edge alone (``tilt_edges`` off) only the heel turns it."""
    cfg = FeetConfig()
    for p in (EDGES, P):
        w = Walk(p)
        for z in swing(0.03, 150):
            w.cycle(LEFT, z, 0.0)
        for k in range(300):
            flat = sign * w.turns[-1][axis] >= FLOOR
            w.cycle(DOUBLE, 0.0, TOUCH, *((0.03, 0.0) if flat else cop))
        for _ in range(200):
            w.cycle(RIGHT, 0.0, 2 * TOUCH, 0.03)
        t = np.array(w.turns[150:])
        if p is P and axis == 0 and sign < 0.0 or p is P and axis == 1:
            assert np.abs(t).max() == 0.0 and w.turned == []
            continue
        start = int(round(cfg.tilt_delay / PERIOD))
        a = sign * t[:, axis]
        assert np.all(a[:start - 1] == 0.0) and a[start + 1] > 0.0 and np.abs(t[:, 1 - axis]).max() == 0.0
        rate = np.diff(a) / PERIOD
        assert rate.max() <= cfg.tilt_speed + 1e-9 and np.diff(rate).max() <= cfg.tilt_accel * PERIOD + 1e-9
        assert a[-1] == pytest.approx(FLOOR, abs=cfg.tilt_speed * PERIOD) and w.turned == [(axis, t[-1, axis])]
        assert views(w.st).pivot[1, axis] == cop[axis] and w.events == []
        release = int(round(cfg.release / PERIOD))
        for _ in range(release + 2):
            w.cycle(LEFT, 0.02, 0.0)
        assert np.abs(w.turns[-1]).max() == 0.0


def test_config_touchdown_section_and_its_errors():
    sec = Section("t.yaml", "feet", {"touchdown": {"enabled": True, "bound_m": 0.02}})
    cfg = parse_feet(sec)
    assert cfg.touchdown and cfg.bound == 0.02 and cfg.speed == FeetConfig().speed
    with pytest.raises(ConfigError, match="feet.touchdown.enabled"):
        parse_feet(Section("t.yaml", "feet", {"touchdown": {"enabled": "yes"}}))
    with pytest.raises(ConfigError, match="feet.touchdown.bound_m"):
        parse_feet(Section("t.yaml", "feet", {"touchdown": {"bound_m": -1.0}}))
    with pytest.raises(ConfigError, match="feet.touchdown.tilt_max"):
        parse_feet(Section("t.yaml", "feet", {"touchdown": {"tilt_max_deg": 30.0}}))
    assert parse_feet(Section("t.yaml", "feet", {"touchdown": {"tilt_max_deg": 3.0}})).tilt_max == pytest.approx(
        np.radians(3.0))
    with pytest.raises(ConfigError, match="feet.touchdown.sped"):
        parse_feet(Section("t.yaml", "feet", {"touchdown": {"sped": 1.0}}))


@njit
def _cycles(p, st, loads, cops, boxes, mbuf, dbuf, q, soles, legs, lo, hi, scratch, q_cmd, qd_cmd, count):
    for k in range(count):
        loads[1] = 0.0 if k % 2 else TOUCH
        touchdown(p, st, DOUBLE, loads, cops, boxes, mbuf, dbuf, q, soles, legs, lo, hi, True, PERIOD, scratch, q_cmd,
                  qd_cmd)


def test_touchdown_allocation_free(robot):
    from controller.daemon.loop.feet import _legs
    twin, soles, legs = _legs(robot)
    st = new_state()
    v = views(st)
    v.offset[1], v.mode[1] = 0.01, CARRIED                      # the solve and the Newton step run
    n = robot.n
    v.turn[0, 0], v.pivot[0, 0] = 0.04, -0.085                       # and the left sole turned about its heel
    assert_allocation_free(_cycles, P, st, np.array([TOUCH, 0.0]), CENTRED, BOXES, robot.model.buf, twin.buf,
                           np.zeros(n), soles,
                           legs, np.full(n, -3.0), np.full(n, 3.0), np.zeros(n), np.zeros(n), np.zeros(n))
