"""Trajectory laws of Lammari 2012, ch. V (§V.3), their minimum times, the
synchronised move, that work's timing table (annex A, §II, Tableau 4) and the thesis squat (§2.6.1)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from numba import njit

from controller.daemon.trajectories import (BANG_BANG, CUBIC, LAWS, LINEAR, QUINTIC, SQUAT_DURATION_S,
                                          TRAPEZOID, JointMove, law, min_time, quintic, sample_move,
                                          squat_excursion, squat_sample, sync_time)

from tests.nrt import assert_allocation_free

S = np.linspace(0.0, 1.0, 20001)
SHAPES = [(LINEAR, 0.5), (CUBIC, 0.5), (QUINTIC, 0.5), (BANG_BANG, 0.5),
          (TRAPEZOID, 0.1), (TRAPEZOID, 0.3), (TRAPEZOID, 0.5)]

# Lammari 2012, annex A §II: the inputs of the timing table (degrees, then rad/s and rad/s²).
SEED_QF_DEG = np.array([90.0, 210.0, -90.0, 180.0, -45.0])
SEED_KV = np.array([3.0, 3.0, 3.0, 2.5, 2.5])
SEED_KA = np.array([5.0, 5.0, 5.0, 3.0, 3.0])
# Lammari 2012, annex A §II, Tableau 4: final time (s), "programme proposé" and "programme EMP".
SEED_TABLE = {LINEAR: (1.2566, 1.2566), CUBIC: (2.5066, 2.5066), QUINTIC: (2.4589, 2.4588),
              BANG_BANG: (2.5133, 2.5132), TRAPEZOID: (2.0900, 2.0899)}


def curves(kind, a):
    out = np.array([law(kind, s, a) for s in S])
    return out[:, 0], out[:, 1], out[:, 2]


@pytest.mark.parametrize("kind,a", SHAPES)
def test_boundary_conditions(kind, a):
    """r(0) = 0, r(1) = 1 (Lammari 2012, §V.3); zero end velocities for every law but the
    linear one (V.5-V.8), zero end accelerations for the quintic (§V.3.1)."""
    r0, dr0, ddr0 = law(kind, 0.0, a)
    r1, dr1, ddr1 = law(kind, 1.0, a)
    assert (r0, r1) == (0.0, 1.0)
    if kind == LINEAR:
        assert dr0 == dr1 == 1.0
    else:
        assert dr0 == 0.0 and abs(dr1) < 1e-12
    if kind == QUINTIC:
        assert ddr0 == 0.0 and abs(ddr1) < 1e-12
    # outside [0, 1] the law holds its end values
    assert law(kind, -0.5, a)[0] == 0.0 and law(kind, 1.5, a)[0] == 1.0


@pytest.mark.parametrize("kind,a", SHAPES)
def test_derivatives_match_the_positions(kind, a):
    """dr/ds and d2r/ds2 are the derivatives of r (central differences away from the
    switching points of the bang-bang and trapezoid laws); r is monotonic."""
    r, dr, ddr = curves(kind, a)
    h = S[1] - S[0]
    inner = slice(1, -1)
    assert np.all(np.diff(r) >= 0.0)
    kinks = np.zeros(S.size, bool)
    if kind in (BANG_BANG, TRAPEZOID):
        for s in (a, 1.0 - a):
            kinks |= np.abs(S - s) <= 2 * h
    keep = ~kinks[inner]
    assert np.allclose(((r[2:] - r[:-2]) / (2 * h))[keep], dr[inner][keep], atol=1e-6)
    assert np.allclose(((dr[2:] - dr[:-2]) / (2 * h))[keep], ddr[inner][keep], atol=1e-5)


@pytest.mark.parametrize("kind,vpeak,apeak", [(CUBIC, 1.5, 6.0), (QUINTIC, 15 / 8, 10 / math.sqrt(3)),
                                              (BANG_BANG, 2.0, 4.0)])
def test_peaks_are_the_seed_values(kind, vpeak, apeak):
    """|q̇|max = c_v |D|/t_f and |q̈|max = c_a |D|/t_f² (Lammari 2012, §V.3.1-V.3.2)."""
    _, dr, ddr = curves(kind, 0.5)
    assert np.max(np.abs(dr)) == pytest.approx(vpeak, rel=1e-7)
    assert np.max(np.abs(ddr)) == pytest.approx(apeak, rel=1e-7)


def test_min_time_formulas():
    """The per-joint minimum times of Lammari 2012, §V.3.1-V.3.2 and of the
    trapezoid (§V.3.3 with one joint), on random moves and limits."""
    rng = np.random.default_rng(1)
    for d, kv, ka in zip(rng.uniform(-3, 3, 200), rng.uniform(0.2, 4, 200), rng.uniform(0.2, 8, 200)):
        D = abs(d)
        assert min_time(LINEAR, d, kv, ka) == pytest.approx(D / kv)
        assert min_time(CUBIC, d, kv, ka) == pytest.approx(max(3 * D / (2 * kv), math.sqrt(6 * D / ka)))
        assert min_time(QUINTIC, d, kv, ka) == pytest.approx(
            max(15 * D / (8 * kv), math.sqrt(10 * D / (math.sqrt(3) * ka))))
        assert min_time(BANG_BANG, d, kv, ka) == pytest.approx(max(2 * D / kv, 2 * math.sqrt(D / ka)))
        trap = D / kv + kv / ka if D >= kv * kv / ka else 2 * math.sqrt(D / ka)
        assert min_time(TRAPEZOID, d, kv, ka) == pytest.approx(trap)
        assert sync_time(TRAPEZOID, np.array([d]), np.array([kv]), np.array([ka]))[0] == pytest.approx(trap)


@pytest.mark.parametrize("kind", list(SEED_TABLE))
def test_seed_timing_table(kind):
    """Lammari 2012, annex A §II, Tableau 4, for the move given there, read as
    radians (D = qf - qi converted from degrees), rad/s and rad/s². The "programme
    proposé" column is our t_f rounded to 4 decimals; the EMP column is our t_f
    truncated to 4 decimals (2.4588 for 2.458861, 2.5132 for 2.513274, 2.0899 for
    2.089970), and the EMP screenshot's TFinal = 2.0899703 (figure (b5)) is the trapezoid
    t_f truncated to 7 decimals. Every law is bound by joint 4 (D = π, kv = 2.5, ka = 3)."""
    D = np.radians(SEED_QF_DEG)
    tf, _ = sync_time(kind, D, SEED_KV, SEED_KA)
    proposed, emp = SEED_TABLE[kind]
    assert round(tf, 4) == proposed
    assert math.floor(tf * 1e4) / 1e4 == pytest.approx(emp, abs=1e-12)
    if kind == TRAPEZOID:
        assert math.floor(tf * 1e7) / 1e7 == pytest.approx(2.0899703, abs=1e-12)


def run(move, dt=1e-3):
    n = move.q0.size
    ts = np.arange(0.0, move.tf + 2 * dt, dt)
    q, qd, qdd = (np.zeros((ts.size, n)) for _ in range(3))
    for i, t in enumerate(ts):
        move.sample(t, q[i], qd[i], qdd[i])
    return ts, q, qd, qdd


@pytest.mark.parametrize("name", list(LAWS))
def test_synchronised_move_within_limits(name):
    """The Tableau 4 inputs with every law: all joints follow one r(t) (eq. V.1)
    so they start and finish together; |q̇| <= kv and |q̈| <= ka all along (the linear
    law has no acceleration bound); and the move is minimum-time: a limit is reached."""
    kind = LAWS[name]
    move = JointMove(SEED_KV, SEED_KA)
    q0 = np.array([0.1, -0.2, 0.3, 0.0, 0.5])
    q1 = q0 + np.radians(SEED_QF_DEG)
    tf = move.start(q0, q1, kind)
    ts, q, qd, qdd = run(move)
    progress = (q - q0) / (q1 - q0)
    assert np.allclose(progress, progress[:, :1], atol=1e-12)
    assert np.array_equal(q[ts >= tf], np.broadcast_to(q1, q[ts >= tf].shape))
    assert np.all(np.abs(q[ts < tf] - q1).max(axis=1) > 0.0)
    assert np.all(np.abs(qd) <= SEED_KV * (1 + 1e-12))
    vratio = np.max(np.abs(qd) / SEED_KV)
    if kind != LINEAR:
        assert np.all(np.abs(qdd) <= SEED_KA * (1 + 1e-12))
        aratio = np.max(np.abs(qdd) / SEED_KA)
        assert max(vratio, aratio) == pytest.approx(1.0, abs=1e-3)
    else:
        assert vratio == pytest.approx(1.0)


def test_trapezoid_sync_exceeds_per_joint_max_when_it_must():
    """Joint 0 is velocity-bound, joint 1 acceleration-bound: max_j t_fj (1.673 s) is
    too short for one shared trapezoid (any t_a breaks a limit), Lammari 2012's
    synchronised t_f (§V.3.3: Mrv + Mra/Mrv = 1.967 s) keeps both limits."""
    kv, ka = np.array([0.6, 100.0]), np.array([100.0, 2.0])
    D = np.array([1.0, 1.0])
    per_joint = max(min_time(TRAPEZOID, D[j], kv[j], ka[j]) for j in range(2))
    tf, a = sync_time(TRAPEZOID, D, kv, ka)
    assert per_joint == pytest.approx(1 / 0.6 + 0.6 / 100)
    assert tf == pytest.approx(1 / 0.6 + 0.5 * 0.6) and tf > per_joint
    for ratio in np.linspace(0.01, 0.5, 50):
        ta = ratio * per_joint
        v, acc = D / (per_joint - ta), D / (ta * (per_joint - ta))
        assert np.any(v > kv) or np.any(acc > ka)
    ta = a * tf
    assert np.all(D / (tf - ta) <= kv * (1 + 1e-12)) and np.all(D / (ta * (tf - ta)) <= ka * (1 + 1e-12))


def test_longer_duration_stretches_the_profile():
    """A duration twice the minimum halves the peak velocity and quarters the peak
    acceleration; a shorter one is lengthened to the minimum."""
    move = JointMove(SEED_KV, SEED_KA)
    q1 = np.radians(SEED_QF_DEG)
    tmin = move.start(np.zeros(5), q1, TRAPEZOID)
    _, _, qd_min, qdd_min = run(move)
    assert move.start(np.zeros(5), q1, TRAPEZOID, duration=2 * tmin) == 2 * tmin
    _, _, qd, qdd = run(move)
    assert np.abs(qd).max() == pytest.approx(np.abs(qd_min).max() / 2, rel=1e-3)
    assert np.abs(qdd).max() == pytest.approx(np.abs(qdd_min).max() / 4, rel=1e-9)
    assert move.start(np.zeros(5), q1, TRAPEZOID, duration=tmin / 2) == tmin


def test_rest_outside_the_move_and_null_move():
    move = JointMove(SEED_KV, SEED_KA)
    q0, q1 = np.full(5, 0.2), np.full(5, -0.3)
    move.start(q0, q1, QUINTIC)
    q, qd, qdd = np.empty(5), np.empty(5), np.empty(5)
    move.sample(-1.0, q, qd, qdd)
    assert np.array_equal(q, q0) and not qd.any() and not qdd.any()
    move.sample(move.tf + 1.0, q, qd, qdd)
    assert np.array_equal(q, q1) and not qd.any() and not qdd.any()
    assert move.start(q1, q1, TRAPEZOID) == 0.0
    move.sample(0.0, q, qd, qdd)
    assert np.array_equal(q, q1) and not qd.any()


def test_joint_move_rejects_bad_limits_and_laws():
    with pytest.raises(ValueError, match=r"ka\[2\] must be a finite number > 0, got 0.0"):
        JointMove(np.ones(3), np.array([1.0, 1.0, 0.0]))
    with pytest.raises(ValueError, match="kv and ka must be vectors of one length"):
        JointMove(np.ones(3), np.ones(2))
    with pytest.raises(ValueError, match="unknown trajectory law 7"):
        JointMove(np.ones(2), np.ones(2)).start(np.zeros(2), np.ones(2), 7)


def test_squat():
    """Thesis §2.6.1: quintic down in 7 s to ankle 16°, knee 85°, hip 70°, up in 7 s;
    the same values as the existing quintic() helper."""
    names = ("ankle_lateral", "ankle_sagittal", "knee", "hip")
    stand, bottom = np.zeros(4), squat_excursion(names)
    assert np.degrees(bottom) == pytest.approx([0.0, 16.0, -85.0, 70.0])
    q, qd, qdd = np.empty(4), np.empty(4), np.empty(4)
    ref = np.empty((3, 4))
    for t, at in ((0.0, stand), (SQUAT_DURATION_S, bottom), (2 * SQUAT_DURATION_S, stand)):
        squat_sample(t, stand, bottom, q, qd, qdd)
        assert np.allclose(q, at, atol=1e-15) and np.allclose(qd, 0.0) and np.allclose(qdd, 0.0)
    for t in (1.3, 3.5, 6.9):
        squat_sample(t, stand, bottom, q, qd, qdd)
        quintic(stand, bottom, SQUAT_DURATION_S, t, ref)
        assert np.allclose(np.stack([q, qd, qdd]), ref, atol=1e-14)
        squat_sample(t + SQUAT_DURATION_S, stand, bottom, q, qd, qdd)
        quintic(bottom, stand, SQUAT_DURATION_S, t, ref)
        assert np.allclose(np.stack([q, qd, qdd]), ref, atol=1e-14)


@njit
def _samples(q0, q1, out_q, out_qd, out_qdd, count):
    for k in range(count):
        sample_move(TRAPEZOID, 0.3, 2.0, q0, q1, 0.001 * k, out_q, out_qd, out_qdd)


def test_sampling_is_allocation_free():
    """NRT allocations of 1 and 1001 samples inside one njit call are equal (tests/nrt.py)."""
    args = (np.zeros(5), np.ones(5), np.empty(5), np.empty(5), np.empty(5))
    assert_allocation_free(_samples, *args)
