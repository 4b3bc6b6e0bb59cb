"""Joint-trajectory files: validation messages name file, line and culprit;
linear resampling to the period is exact on knots and accurate between them."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from controller.daemon.io.playback import TrajectoryFileError, load_trajectory
from models.tree.config import load_tree

NAMES = ("ankle_lateral", "ankle_sagittal", "knee", "hip")
QMIN = np.array([-0.35, -0.5, -1.7, -0.5])
QMAX = np.array([0.35, 0.6, 0.0, 1.5])
VMAX = np.array([2.0, 2.0, 2.5, 2.5])
HEADER = "t," + ",".join(NAMES)
ROW0 = HEADER + "\n0,0,0,-0.1,0\n"


def load(tmp_path, text, period=0.002, name="traj.csv"):
    path = tmp_path / name
    path.write_text(text)
    return load_trajectory(path, NAMES, QMIN, QMAX, VMAX, period)


def error(tmp_path, text, **kw):
    with pytest.raises(TrajectoryFileError) as e:
        load(tmp_path, text, **kw)
    assert isinstance(e.value, ValueError)
    return str(e.value)


def test_resampling_is_linear_and_exact_on_knots(tmp_path):
    """Knots every 10 ms resampled at 2 ms: knots reproduced exactly, in-between
    samples on the segment, columns reordered to the robot's joint order, the last
    sample is the last row even when the span is not a whole number of periods."""
    text = ("# walking test\nt,knee,hip,ankle_lateral,ankle_sagittal\n\n"
            "0.5,-0.1,0.0,0.0,0.0\n0.51,-0.11,0.01,0.001,0.0\n0.525,-0.12,0.02,0.0,-0.01\n")
    q = load(tmp_path, text)
    assert q.shape == (14, 4)      # 0.5 .. 0.524 by 2 ms, then 0.525
    assert np.allclose(q[0], [0.0, 0.0, -0.1, 0.0])
    assert np.allclose(q[5], [0.001, 0.0, -0.11, 0.01])
    assert np.allclose(q[2], [0.0004, 0.0, -0.104, 0.004])
    assert np.array_equal(q[-1], [0.0, -0.01, -0.12, 0.02])


def test_resampling_accuracy_on_a_smooth_trajectory(tmp_path):
    """A 0.5 Hz sway sampled every 20 ms, resampled at 2 ms: the linear interpolation
    error is below h²/8 max|q̈| = 0.02²/8 · 0.3 (2π 0.5)² ≈ 1.5e-4 rad."""
    t = np.arange(0.0, 4.0 + 1e-9, 0.02)
    amp = np.array([0.3, 0.1, 0.2, 0.25])
    mid = np.array([0.0, 0.05, -0.8, 0.4])
    rows = mid + amp * np.sin(np.pi * t)[:, None]
    text = HEADER + "\n" + "\n".join(",".join(map(repr, row)) for row in np.column_stack([t, rows]).tolist())
    q = load(tmp_path, text)
    ts = np.arange(q.shape[0]) * 0.002
    exact = mid + amp * np.sin(np.pi * ts)[:, None]
    assert q.shape == (2001, 4)
    bound = 0.02 ** 2 / 8 * amp * np.pi ** 2
    assert np.all(np.abs(q - exact) <= bound + 1e-12)
    assert np.abs(q - exact).max() > 0.5 * bound.max()        # the bound is tight, not vacuous


@pytest.mark.parametrize("text,pattern", [
    ("", r"traj.csv: the trajectory file is empty"),
    ("x,knee\n", r"line 1: the header must start with 't'"),
    ("t,knee,elbow,hip\n", r"line 1: header column\(s\) \[3\] are not joints of this robot and joint column\(s\) "
                            r"\['ankle_lateral', 'ankle_sagittal'\] are missing; the header names 3 joint columns, "
                            r"this robot has 4 joints \['ankle_lateral', 'ankle_sagittal', 'knee', 'hip'\]"),
    ("t,ankle_lateral,ankle_sagittal,knee,hip,elbow\n",
     r"line 1: header column\(s\) \[6\] are not joints of this robot; the header names 5 joint columns, this robot "
     r"has 4 joints"),
    ("t,ankle_lateral,ankle_sagittal,knee,hip,elbow,elbow\n", r"line 1: header column\(s\) \[6, 7\] are not joints"),
    ("t,knee,hip,knee\n", r"line 1: column 'knee' appears twice"),
    ("#c\nt,knee,hip\n0,0,0\n1,0,0\n",
     r"line 2: joint column\(s\) \['ankle_lateral', 'ankle_sagittal'\] are missing; the header names 2 joint columns"),
    (ROW0, r"line 2: a trajectory needs at least 2 rows after the header, got 1"),
    (ROW0 + "0.1,0,0,-0.1\n", r"line 3: expected 5 fields like the header, got 4 \(no value for column 'hip'\)"),
    (ROW0 + "0.1,0,0\n", r"line 3: expected 5 fields like the header, got 3 \(no value for column 'knee'\)"),
    (ROW0 + "0.1,0,0,-0.1,0,\n", r"line 3: expected 5 fields like the header, got 6 \(a value after the last column "
                                 r"'hip'\)"),
    (ROW0 + "0.1,0,0,abc,0\n", r"line 3, column 'knee': expected a finite number$"),
    (ROW0 + "0.1,0,nan,-0.1,0\n", r"line 3, column 'ankle_sagittal': expected a finite number$"),
    (ROW0 + "inf,0,0,-0.1,0\n", r"line 3, column 't': expected a finite number$"),
    (ROW0 + "0.1,0,0,-0.1,0\n0.1,0,0,-0.1,0\n", r"line 4: time must increase strictly, got 0.1 s after 0.1 s"),
    (ROW0 + "1,0,0,0.2,0\n", r"line 3: joint 'knee' at 0.2 rad is beyond its limit 0.0 rad"),
    (HEADER + "\n0,-0.4,0,-0.1,0\n1,0,0,-0.1,0\n",
     r"line 2: joint 'ankle_lateral' at -0.4 rad is beyond its limit -0.35 rad"),
    (ROW0 + "# pause\n0.1,0,0,-0.1,0.3\n",
     r"line 4: joint 'hip' jumps 0.3 rad in 0.1 s from line 2 \(3 rad/s\), more than its velocity limit 2.5 rad/s "
     r"allows \(0.25 rad\)$"),
    (ROW0 + "0.002,0,0,-0.1,0\n0.004,0,0,-0.106,0\n",
     r"line 4: joint 'knee' jumps 0.006 rad in 0.002 s from line 3 \(3 rad/s\), more than its velocity limit 2.5 "
     r"rad/s allows \(0.005 rad\)$"),
])
def test_validation_messages(tmp_path, text, pattern):
    message = error(tmp_path, text)
    assert message.startswith(str(tmp_path / "traj.csv"))
    assert re.search(pattern if pattern.startswith("traj") else r"traj\.csv, " + pattern, message), message
    assert "\n" not in message


def test_unreadable_file(tmp_path):
    missing = tmp_path / "nope.csv"
    with pytest.raises(TrajectoryFileError, match=r"nope.csv: cannot read the trajectory file \(.*No such file"):
        load_trajectory(missing, NAMES, QMIN, QMAX, VMAX, 0.002)
    (tmp_path / "bin.csv").write_bytes(b"t,knee\n\xff\xfe\n")
    with pytest.raises(TrajectoryFileError, match=r"bin.csv: cannot read the trajectory file \(.*utf-8"):
        load_trajectory(tmp_path / "bin.csv", NAMES, QMIN, QMAX, VMAX, 0.002)


def test_bad_period(tmp_path):
    with pytest.raises(ValueError, match="the resampling period must be a finite number > 0 s, got 0.0"):
        load(tmp_path, ROW0 + "1,0,0,-0.1,0\n", period=0.0)


def test_support_column_is_carried_and_held(tmp_path):
    """A ``support`` column (anywhere in the header) leaves the joints as they were and is
    resampled as the phase of the last row at or before each sample."""
    rows = "0,0,0,-0.1,0,double\n0.004,0,0,-0.1,0,left\n0.008,0,0,-0.1,0,right\n"
    with_phase = tmp_path / "phase.csv"
    with_phase.write_text("t,support," + ",".join(NAMES[:3]) + ",hip\n"
                          + "".join(f"{r.split(',')[0]},{r.split(',')[-1]},{','.join(r.split(',')[1:5])}\n"
                                    for r in rows.splitlines()))
    q, support = load_trajectory(with_phase, NAMES, QMIN, QMAX, VMAX, 0.002, with_support=True)
    assert np.allclose(q, load(tmp_path, HEADER + "\n" + "".join(r.rsplit(",", 1)[0] + "\n"
                                                                  for r in rows.splitlines())))
    assert support.tolist() == [2, 2, 0, 0, 1]       # double, double, left, left, right
    assert load_trajectory(tmp_path / "traj.csv", NAMES, QMIN, QMAX, VMAX, 0.002, with_support=True)[1] is None


@pytest.mark.parametrize("text,pattern", [
    (HEADER + ",support\n0,0,0,-0.1,0,left\n0.1,0,0,-0.1,0,walking\n",
     r"line 3, column 'support': expected one of \['left', 'right', 'double'\]"),
    (HEADER + ",support,support\n", r"line 1: column 'support' appears twice"),
])
def test_support_column_errors(tmp_path, text, pattern):
    assert re.search(pattern, error(tmp_path, text))


# ------------------------------------------------------------------ a 15-joint BIP 2000 gait file

BIP2000 = load_tree(Path(__file__).resolve().parents[2] / "deploy" / "robots" / "bip2000.yaml")
B_NAMES = tuple(j.joint.name for j in BIP2000.joints)
B_QMIN, B_QMAX = (np.array([j.joint.position_limits[k] for j in BIP2000.joints]) for k in (0, 1))
B_VMAX = np.array([j.joint.velocity_limit for j in BIP2000.joints])
B_MID = 0.5 * (B_QMIN + B_QMAX)


def gait_text(rows: np.ndarray, support: list[str], names: tuple[str, ...] = B_NAMES) -> str:
    """A gait file as ``bipd gait`` writes it: comment, header with ``support`` last, 2 ms rows."""
    lines = ["# bipd gait", ",".join(("t",) + names + ("support",))]
    lines += [f"{0.002 * k:.6f}," + ",".join(f"{v:.9f}" for v in row) + f",{s}" for k, (row, s) in
              enumerate(zip(rows, support))]
    return "\n".join(lines) + "\n"


def gait_rows(n: int = 5) -> np.ndarray:
    """Every joint at mid-range, moving at half its velocity limit."""
    return B_MID + 0.5 * B_VMAX * 0.002 * np.arange(n)[:, None]


def bip_error(tmp_path, text: str) -> str:
    path = tmp_path / "walk.csv"
    path.write_text(text)
    with pytest.raises(TrajectoryFileError) as e:
        load_trajectory(path, B_NAMES, B_QMIN, B_QMAX, B_VMAX, 0.002)
    assert str(e.value).startswith(f"{path}, line ") and "\n" not in str(e.value)
    return str(e.value)


def test_bip2000_gait_file_is_read_with_its_support(tmp_path):
    rows = gait_rows()
    path = tmp_path / "walk.csv"
    path.write_text(gait_text(rows, ["double", "double", "left", "left", "right"]))
    q, support = load_trajectory(path, B_NAMES, B_QMIN, B_QMAX, B_VMAX, 0.002, with_support=True)
    assert len(B_NAMES) == 15 and np.allclose(q, rows, atol=1e-9)
    assert support.tolist() == [2, 2, 0, 0, 1]


def _mutated(joint: str, row: int, value) -> str:
    """The 5-row gait with ``joint`` of data row ``row`` (file line row + 3) set to ``value``."""
    text = gait_text(gait_rows(), ["double"] * 5).splitlines()
    fields = text[2 + row].split(",")
    fields[1 + B_NAMES.index(joint)] = value if isinstance(value, str) else f"{value:.9f}"
    text[2 + row] = ",".join(fields)
    return "\n".join(text) + "\n"


@pytest.mark.parametrize("joint,row,value,pattern", [
    ("r_knee", 2, "nan", r"line 5, column 'r_knee': expected a finite number$"),
    ("trunk_roll", 3, "inf", r"line 6, column 'trunk_roll': expected a finite number$"),
    ("l_ankle_lateral", 1, "", r"line 4, column 'l_ankle_lateral': expected a finite number$"),
    ("l_knee", 4, -0.01, r"line 7: joint 'l_knee' at -0.01 rad is beyond its limit 0.0 rad$"),
    ("r_hip_roll", 0, 0.51, r"line 3: joint 'r_hip_roll' at 0.51 rad is beyond its limit 0.5 rad$"),
])
def test_bip2000_bad_value_names_line_and_joint(tmp_path, joint, row, value, pattern):
    assert re.search(pattern, bip_error(tmp_path, _mutated(joint, row, value)))


def test_bip2000_jump_names_line_joint_and_the_period(tmp_path):
    """A jump of 1.01 times what vmax allows in one 2 ms row step is refused; exactly vmax is not."""
    j = B_NAMES.index("l_hip_pitch")
    rows = gait_rows()
    rows[3:, j] += 0.505 * B_VMAX[j] * 0.002              # rows 2 -> 3: 1.005 vmax
    message = bip_error(tmp_path, gait_text(rows, ["double"] * 5))
    allowed = B_VMAX[j] * 0.002
    assert re.search(rf"line 6: joint 'l_hip_pitch' jumps {1.005 * allowed:.6g} rad in 0.002 s from line 5 "
                     rf"\(2.5125 rad/s\), more than its velocity limit 2.5 rad/s allows \({allowed:.6g} rad\)$",
                     message)
    rows = gait_rows()
    rows[3:, j] += 0.49 * B_VMAX[j] * 0.002                # 0.99 vmax: played
    path = tmp_path / "ok.csv"
    path.write_text(gait_text(rows, ["double"] * 5))
    assert load_trajectory(path, B_NAMES, B_QMIN, B_QMAX, B_VMAX, 0.002).shape == (5, 15)


def test_bip2000_header_and_support_errors(tmp_path):
    rows = gait_rows()
    text = gait_text(rows[:, :14], ["left"] * 5, B_NAMES[:14])
    assert re.search(r"line 2: joint column\(s\) \['trunk_pitch'\] are missing; the header names 14 joint columns, "
                     r"this robot has 15 joints", bip_error(tmp_path, text))
    leg = ("ankle_lateral", "ankle_sagittal", "knee", "hip")
    text = gait_text(rows[:, :4], ["left"] * 5, leg)
    assert re.search(r"line 2: header column\(s\) \[2, 3, 4, 5\] are not joints of this robot and joint column\(s\) "
                     r"\['l_hip_yaw', .*'trunk_pitch'\] are missing; the header names 4 joint columns, this robot "
                     r"has 15 joints", bip_error(tmp_path, text))
    text = gait_text(rows, ["double", "left", "Left", "right", "double"])
    assert re.search(r"line 5, column 'support': expected one of \['left', 'right', 'double'\]$",
                     bip_error(tmp_path, text))


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")     # the rows' time step: inf
@pytest.mark.parametrize("t_first, t_last", [(0.0, 1e6), (-1e308, 1e308)])
def test_the_sample_count_is_checked_before_resampling(tmp_path, t_first, t_last):
    """A tiny file spanning a huge time is refused by its sample count with no memory spent on it
    (1e308 - (-1e308) overflows to inf: refused too, not an OverflowError)."""
    import tracemalloc

    path = tmp_path / "huge.csv"
    path.write_text(f"{HEADER}\n{t_first!r},0,0,-0.1,0\n{t_last!r},0,0,-0.1,0\n")
    tracemalloc.start()
    try:
        with pytest.raises(TrajectoryFileError, match=r"huge\.csv: its .* s resample to more than 1000 samples of "
                                                      r"0\.002 s, the trajectory buffer's limit \(1\.998 s\)$"):
            load_trajectory(path, NAMES, QMIN, QMAX, VMAX, 0.002, max_samples=1000)
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()


def test_a_file_that_fills_the_buffer_exactly_is_accepted(tmp_path):
    path = tmp_path / "full.csv"
    path.write_text(f"{HEADER}\n0,0,0,-0.1,0\n1.998,0,0,-0.1,0\n")
    assert load_trajectory(path, NAMES, QMIN, QMAX, VMAX, 0.002, max_samples=1000).shape == (1000, 4)
    with pytest.raises(TrajectoryFileError, match="more than 999 samples"):
        load_trajectory(path, NAMES, QMIN, QMAX, VMAX, 0.002, max_samples=999)
