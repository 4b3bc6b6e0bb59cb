"""Rig motions (controller.daemon.rig): within the Stewart–Gough rig's stroke by its inverse kinematics
(Staicu 2008, eq. 8–18), derivatives consistent, the hinge tilt as Gastebois 2017 eq. 46, and the
earthquake CSV's refusals and drift-free displacement."""
from __future__ import annotations

import inspect
import math
from pathlib import Path

import numpy as np
import pytest

from controller.daemon.rig.earthquake import earthquake_motion, load_earthquake, read_csv
from controller.daemon.rig.motions import (MotionError, SplineMotion, TiltSequence, acceleration_step, heave,
                                    pierson_moskowitz, ship_deck, sinusoid)
from controller.daemon.rig.spec import KINDS, PARAMS, markdown_table, motion_args, motion_from_spec
from controller.daemon.rig.stroke import check_motion
from models.rig.stewart import leg_lengths
from models.rig.tilt import SOLES, euler_to_hinge, hinge_to_euler, matrix_hinge_angles
from tests.paths import ROOT



def _rot(axis: int, a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    i, j = (axis + 1) % 3, (axis + 2) % 3
    R = np.eye(3)
    R[i, i], R[i, j], R[j, i], R[j, j] = c, -s, s, c
    return R


MOTIONS = {
    "tilt": lambda: motion_from_spec("tilt"),
    "sine_x": lambda: sinusoid("x", 0.1, 0.5),
    "sine_y_2hz": lambda: sinusoid("y", 0.02, 2.0),
    "heave": lambda: heave(0.2, 0.5),
    "step": lambda: acceleration_step("y", 3.0),
    "ship": lambda: ship_deck(duration=30.0, seed=3),
}


@pytest.mark.parametrize("name", sorted(MOTIONS))
def test_generators_stay_within_the_stroke_and_are_consistent(stewart, name):
    motion = MOTIONS[name]()
    report = check_motion(stewart, motion)
    lo, hi = stewart.desc.stroke
    assert lo <= report.lam_min < report.lam_max <= hi and report.margin > 0.0
    # start and end at rest; velocity and acceleration are the pose's derivatives
    x, xd, xdd, xp, xm, j = (np.zeros(6) for _ in range(6))
    motion.at(0.0, x, xd, xdd)
    assert np.abs(x).max() < 1e-12 and np.abs(xd).max() < 1e-7
    motion.at(motion.duration, x, xd, xdd)
    assert np.abs(x).max() < 1e-6 and np.abs(xd).max() < 1e-6 and np.abs(xdd).max() < 1e-4   # back home
    h = 1e-4
    for tau in np.linspace(0.1, motion.duration - 0.1, 7):
        motion.at(tau, x, xd, xdd)
        motion.at(tau + h, xp, j, j)
        motion.at(tau - h, xm, j, j)
        scale = 1.0 + np.abs(xdd).max()
        assert np.allclose((xp - xm) / (2 * h), xd, atol=1e-6 * scale)
        assert np.allclose((xp - 2 * x + xm) / h ** 2, xdd, atol=2e-3 * scale)


def test_sample_follows_the_start_time_and_says_done():
    m = sinusoid("x", 0.05, 1.0, cycles=2)
    x, xd, xdd, ref = np.zeros(6), np.zeros(6), np.zeros(6), np.zeros(6)
    m.start(10.0)
    assert not m.sample(10.7, x, xd, xdd)
    m.at(0.7, ref, xd, xdd)
    assert np.allclose(x, ref, rtol=1e-12, atol=1e-15) and x[0] != 0.0
    assert m.sample(12.0, x, xd, xdd) and m.done


@pytest.mark.parametrize("alpha, beta", [(0.17, 0.35), (-0.3, 0.1), (0.0, -0.4), (0.25, 0.0)])
def test_hinge_tilt_is_eq46_in_rig_axes(alpha, beta):
    e = np.zeros(3)
    hinge_to_euler(alpha, beta, e)
    R = _rot(0, e[0]) @ _rot(1, e[1]) @ _rot(2, e[2])           # Staicu 2008, eq. 7
    assert np.allclose(R, _rot(1, alpha) @ _rot(0, -beta), atol=1e-12)   # Rz_g(α) Ry_g(−β), y_g -> x, z_g -> y
    assert np.allclose(euler_to_hinge(*e), (alpha, beta), atol=1e-12)


@pytest.mark.parametrize("alpha, beta", [(0.17, 0.35), (-0.3, 0.1), (0.0, -0.4), (0.25, 0.0)])
def test_a_tree_robots_tilt_is_roll_then_pitch_in_rig_axes(alpha, beta):
    """SOLES: BIP 2000's (α, β) on the rig are its hinge platform's, RotX(α) RotY(β) (models.tilt.sole_gravity),
    read back from the pose, from the plate's matrix (whatever its yaw) and through a TiltSequence."""
    e, out = np.zeros(3), np.zeros(2)
    hinge_to_euler(alpha, beta, e, SOLES)
    R = _rot(0, e[0]) @ _rot(1, e[1]) @ _rot(2, e[2])
    assert np.allclose(R, _rot(0, alpha) @ _rot(1, beta), atol=1e-12)
    assert np.allclose(euler_to_hinge(*e, SOLES), (alpha, beta), atol=1e-12)
    matrix_hinge_angles(R @ _rot(2, 0.3), out, SOLES)
    assert np.allclose(out, (alpha, beta), atol=1e-12)
    x = np.zeros(6)
    TiltSequence([(alpha, beta, 2.0), (0.0, 0.0, 2.0)], convention=SOLES).at(2.0, x, np.zeros(6), np.zeros(6))
    assert np.allclose(x[3:], e, atol=1e-12)


def test_a_tilt_that_does_not_end_level_is_refused():
    with pytest.raises(MotionError, match="the last point must be level"):
        TiltSequence([(0.1, 0.1, 2.0)])


def test_tilt_sequence_reaches_its_points(stewart):
    m = TiltSequence([(0.1, 0.2, 2.0), (-0.1, 0.0, 3.0), (0.0, 0.0, 2.0)])
    x, xd, xdd = np.zeros(6), np.zeros(6), np.zeros(6)
    m.at(2.0, x, xd, xdd)
    assert np.allclose(euler_to_hinge(*x[3:]), (0.1, 0.2), atol=1e-12)
    m.at(5.0, x, xd, xdd)
    assert np.allclose(euler_to_hinge(*x[3:]), (-0.1, 0.0), atol=1e-12)


def test_a_step_beyond_the_stroke_is_refused_naming_the_first_time_and_leg(stewart):
    m = acceleration_step("x", 15.0)
    with pytest.raises(MotionError) as err:
        check_motion(stewart, m)
    msg = str(err.value)
    leg, t = msg.split("leg ")[1][0], float(msg.split("at t = ")[1].split(" s")[0])
    j = "ABCDEF".index(leg)
    home = np.array([0.0, 0.0, stewart.desc.h, 0.0, 0.0, 0.0])
    lam, S, x, v, a = np.zeros(6), np.zeros((6, 6)), np.zeros(6), np.zeros(6), np.zeros(6)
    lo, hi = stewart.desc.stroke
    m.at(t, x, v, a)
    leg_lengths(stewart.buf, home + x, lam, S)
    assert lam[j] > hi or lam[j] < lo
    m.at(t - 0.005, x, v, a)
    leg_lengths(stewart.buf, home + x, lam, S)
    assert np.all((lam >= lo) & (lam <= hi))


def test_ship_deck_follows_its_spectrum_and_its_seed():
    hs, tp = 0.4, 4.0
    a, b, c = ship_deck(hs, tp, seed=7), ship_deck(hs, tp, seed=7), ship_deck(hs, tp, seed=8)
    assert np.array_equal(a.phase, b.phase) and not np.array_equal(a.phase, c.phase)
    wp = 2 * math.pi / tp
    w = np.linspace(0.5 * wp, 3.0 * wp, 20001)
    m0 = np.sum(pierson_moskowitz(w, hs, tp)) * (w[1] - w[0])       # the band's variance
    heave_var = np.sum(a.amp[a.dof == 2] ** 2) / 2.0
    assert heave_var == pytest.approx(m0, rel=0.1)
    assert m0 == pytest.approx(hs ** 2 / 16.0, rel=0.1)               # most of the spectrum's m0 = Hs²/16


# --- earthquakes ------------------------------------------------------------------------------

def _csv(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "quake.csv"
    p.write_text(text)
    return p


@pytest.mark.parametrize("text, problem", [
    ("t,ax,ay,az\n0,0,0,0\n0.01,0,0\n", "line 3: expected 4 columns"),
    ("0,0,0,0\n0.01,0,x,0\n", "line 2: column 'ay' is not a number"),
    ("0,0,0,0\n0.01,0,nan,0\n", "line 2: a value is not finite"),
    ("0,0,0,0\n0.01,0,0,0\n0.01,0,0,0\n", "line 3: time 0.01 s does not increase"),
    ("# only\n0,0,0,0\n", "needs at least 2 samples"),
])
def test_bad_earthquake_rows_are_refused_naming_the_line(tmp_path, text, problem):
    p = _csv(tmp_path, text)
    with pytest.raises(MotionError, match=problem) as err:
        read_csv(p)
    assert str(p) in str(err.value)


def test_earthquake_header_and_comments_are_read(tmp_path):
    t, a = read_csv(_csv(tmp_path, "# quake\nt,ax,ay,az\n1.0,1,2,3\n1.5,4,5,6\n"))
    assert np.allclose(t, [0.0, 0.5]) and np.allclose(a, [[1, 2, 3], [4, 5, 6]])


def test_earthquake_is_drift_free_and_follows_the_record():
    """A biased record (0.05 m/s² offset: 10 m of drift in 20 s by naive double integration) of
    the ground motion x = D sin²(πt/T) sin(ωt) (at rest at both ends, its band 1 ± 0.05 Hz) plays
    that displacement, starting and ending at rest at home."""
    T, D, w = 20.0, 0.03, 2 * math.pi * 1.0
    t = np.arange(0.0, T + 1e-9, 0.01)
    e, de, dde = np.sin(math.pi * t / T) ** 2, math.pi / T * np.sin(2 * math.pi * t / T), \
        2 * (math.pi / T) ** 2 * np.cos(2 * math.pi * t / T)
    s, c = np.sin(w * t), np.cos(w * t)
    acc = np.zeros((len(t), 3))
    acc[:, 1] = 0.05 + D * (dde * s + 2 * de * w * c - e * w * w * s)
    m = earthquake_motion(t, acc)
    assert np.abs(m.x[0]).max() < 1e-12 and np.abs(m.x[-1]).max() < 1e-9 and np.abs(m.v[-1]).max() < 1e-6
    tt = np.arange(m.x.shape[0]) * m.dt
    truth = D * np.sin(math.pi * tt / T) ** 2 * np.sin(w * tt)
    assert np.abs(m.x[:, 1] - truth).max() < 0.02 * D
    assert np.abs(m.x[:, [0, 2]]).max() < 1e-12
    assert m.rms_error < 0.01 * D * w * w


def test_an_earthquake_beyond_the_stroke_is_refused_naming_time_and_leg(tmp_path, stewart):
    t = np.arange(0.0, 10.0, 0.01)
    rows = "\n".join(f"{ti:.2f},{3.0 * math.sin(2 * math.pi * 0.3 * ti):.6f},0,0" for ti in t)
    m = load_earthquake(_csv(tmp_path, "t,ax,ay,az\n" + rows + "\n"))
    with pytest.raises(MotionError, match=r"earthquake quake.csv: the rig cannot make this motion: leg [A-F] "
                                          r"would need a displacement of [+-]0\.8\d\d m at t = \d+\.\d{3} s"):
        check_motion(stewart, m)


def test_spline_from_displacement_interpolates_its_nodes():
    dt = 0.01
    tt = np.arange(200) * dt
    x = np.zeros((200, 6))
    x[:, 1] = np.sin(tt) ** 3
    m = SplineMotion.from_displacement(dt, x)
    out, v, a = np.zeros(6), np.zeros(6), np.zeros(6)
    for k in (1, 57, 198):
        m.at(k * dt + 1e-12, out, v, a)
        assert out[1] == pytest.approx(x[k, 1], abs=1e-9)
    m.at(1.005, out, v, a)
    s, c = np.sin(1.005), np.cos(1.005)
    assert v[1] == pytest.approx(3 * s * s * c, abs=1e-4)
    assert a[1] == pytest.approx(6 * s * c * c - 3 * s ** 3, abs=2e-3)
    for k in (1, 2, 100):             # the velocity is continuous at the nodes (a C2 spline)
        m.at(k * dt - 1e-9, out, v, a)
        before = v[1]
        m.at(k * dt + 1e-9, out, v, a)
        assert v[1] == pytest.approx(before, abs=1e-7)


@pytest.mark.parametrize("spec, problem", [
    ("wobble", "unknown motion kind 'wobble'"),
    ("sinusoid:axis=q", "axis must be one of"),
    ("sinusoid:amplitude=-1", r"amplitude must be a number in \(0, 1\] m or rad, got -1"),
    ("step:accel=2,speed=3", "step has no key 'speed'"),
    # each of these ended the daemon (ValueError, IndexError, MemoryError, ZeroDivisionError, OverflowError)
    ("ship_deck:seed=-1", r"seed must be an integer in 0\.\.4294967295, got -1$"),
    ("ship_deck:components=0.5", r"components must be an integer in 1\.\.100, got 0\.5$"),
    ("ship_deck:components=3e5", r"components must be an integer in 1\.\.100, got 300000\.0$"),
    ("sinusoid:frequency=1e-300", r"frequency must be a number in \[0\.001, 50\] Hz, got 1e-300$"),
    ("sinusoid:frequency=1e300", r"frequency must be a number in \[0\.001, 50\] Hz, got 1e\+300$"),
    ("sinusoid:cycles=1e12", r"cycles must be a number in \(0, 10000\], got 1000000000000\.0$"),
    ("step:hold=1e12", r"hold must be a number in \[0\.001, 5\] s"),
    ("step:dt=1e-12", r"dt must be a number in \[0\.0005, 0\.01\] s"),
    ("tilt:duration=1e12", r"duration must be a number in \[0\.01, 300\] s"),
    ("sinusoid:ramp_cycles=1e-300", r"ramp_cycles must be a number in \[0\.1, 5000\], got 1e-300$"),
    ("ship_deck:duration=1e-300", r"duration must be a number in \[1, 600\] s, got 1e-300$"),
    ("sinusoid:frequency=0.001", "the sinusoid lasts 5000 s, more than 600 s$"),
    ("heave:frequency=1e-2,cycles=1e4", "the heave lasts 1e\\+06 s, more than 600 s$"),
    ("sinusoid:frequency=1,frequency=2", "frequency is given twice$"),
    ("sinusoid:frequency=&a 1", r"frequency: line 1: invalid YAML \(anchors and aliases"),
    ("sinusoid:frequency=" + "9" * 5000, r"frequency: <yaml>: invalid YAML value \(Exceeds the limit"),
    ("ship_deck:seed=true", "seed must be an integer in 0..4294967295, got True$"),
    ("sinusoid:axis", "'axis' is not key=value"),
])
def test_bad_motion_specs_are_refused(spec, problem):
    with pytest.raises(MotionError, match=problem):
        motion_from_spec(spec)


def test_every_key_of_every_kind_has_a_type_and_a_range():
    """The schema (spec.PARAMS) names exactly each constructor's keys, so none goes unchecked."""
    for kind, make in KINDS.items():
        keys = [k for k in inspect.signature(make).parameters if k != "convention"]
        assert list(PARAMS[kind]) == keys, kind


def test_numbers_in_k_v_values_are_read_as_numbers():
    """``1e7`` and ``2e-05`` are numbers (YAML 1.2, JSON), not strings a constructor chokes on."""
    assert motion_args("sinusoid:amplitude=5e-2,frequency=1e0")[2:4].tolist() == [0.05, 1.0]


def test_a_motion_file_is_read_by_the_strict_yaml_reader(tmp_path):
    bad = tmp_path / "twice.yaml"
    bad.write_text("kind: sinusoid\nfrequency: 1\nfrequency: 2\n")
    with pytest.raises(MotionError, match="key 'frequency' given twice"):
        motion_from_spec(str(bad))
    good = tmp_path / "tilt.yaml"
    good.write_text("kind: tilt\npoints: [[0.1, 0.0, 2e0], [0, 0, 2]]\n")
    assert motion_from_spec(str(good)).duration == 4.0
    long = tmp_path / "long.yaml"
    long.write_text("kind: tilt\npoints: [[0.1, 0.0, 300], [0, 0, 301]]\n")
    with pytest.raises(MotionError, match="the tilt lasts 601 s, more than 600 s$"):
        motion_from_spec(str(long))


def test_docs_rig_md_lists_every_key_with_its_range():
    assert markdown_table() in (ROOT / "docs" / "rig.md").read_text()


@pytest.mark.parametrize("name", sorted(MOTIONS))
def test_sample_many_is_at_at_every_instant(name):
    motion = MOTIONS[name]()
    taus = np.linspace(0.0, motion.duration, 37)
    X, XD, XDD = motion.sample_many(taus)
    x, xd, xdd = np.zeros(6), np.zeros(6), np.zeros(6)
    for k, tau in enumerate(taus):
        motion.at(float(tau), x, xd, xdd)
        assert np.allclose(X[k], x, atol=1e-12) and np.allclose(XD[k], xd, atol=1e-10)
        assert np.allclose(XDD[k], xdd, atol=1e-8)
