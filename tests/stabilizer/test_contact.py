"""The feet's contact from their load cells (stabilizer.contact) and its use by the whole-robot
stabilizer with ``support.source: sensors``: hysteresis between min_load and release_load, implausible
loads refused (flag loads_implausible, a "hold" reaction), a sensed support other than the commanded
one flagged (support_disagrees, "warn")."""
from __future__ import annotations

import math

import numpy as np
import pytest

from models.common.support import DOUBLE, LEFT, RIGHT
from stabilizer import whole_body as wb
from stabilizer.contact import (CONTACT_STATE, LOADS_MISSING, LOADS_OK, LOADS_OVER, LOADS_PULLING, debounced_contact,
                                feet_contact, foot_loads, loads_status, right_share)

from tests.stabilizer.test_whole_body import Q0, make

MIN, RELEASE, MAX = 50.0, 30.0, 3000.0


def feet(left: float, right: float) -> np.ndarray:
    """Eight cells: each foot's load spread evenly on its four."""
    return np.array([left / 4] * 4 + [right / 4] * 4)


def test_a_foot_enters_contact_at_min_load_and_leaves_below_release_load():
    """Lifting the right foot: its load falls 200 -> 0 N; landing it again: 0 -> 200 N. The support
    switches at 30 N going down and at 50 N going up, never back and forth in between."""
    down = np.linspace(200.0, 0.0, 201)
    phase, seen = DOUBLE, []
    for f in np.concatenate([down, down[::-1]]):
        phase = feet_contact(feet(800.0, f), MIN, RELEASE, phase)
        seen.append((f, phase))
    switches = [(f, p) for (f, p), (_, before) in zip(seen[1:], seen) if p != before]
    assert switches == [(29.0, LEFT), (50.0, DOUBLE)], switches
    assert feet_contact(feet(40.0, 40.0), MIN, RELEASE, -1) == -1          # neither reached min_load
    assert feet_contact(feet(40.0, 40.0), MIN, RELEASE, DOUBLE) == DOUBLE  # both still above release
    assert feet_contact(feet(40.0, 60.0), MIN, RELEASE, LEFT) == DOUBLE
    assert feet_contact(feet(0.0, 60.0), MIN, RELEASE, -1) == RIGHT


def test_a_new_support_is_taken_once_it_has_held_for_the_dwell():
    """dwell 3 cycles: the first reading is taken at once; the right foot bouncing off for 2 cycles
    changes nothing, off for 3 it is LEFT from the third."""
    cs = np.full(CONTACT_STATE, np.nan)
    on, off = feet(500.0, 500.0), feet(980.0, 0.0)
    assert debounced_contact(on, MIN, RELEASE, 3, cs) == DOUBLE
    seen = [debounced_contact(x, MIN, RELEASE, 3, cs) for x in (off, off, on, off, off, off, off)]
    assert seen == [DOUBLE, DOUBLE, DOUBLE, DOUBLE, DOUBLE, LEFT, LEFT], seen


def test_loads_status_names_the_implausible_loads():
    assert loads_status(feet(500.0, 500.0), MIN, MAX) == LOADS_OK
    assert loads_status(np.array([-10.0, 30.0, 0.0, 0.0] + [100.0] * 4), MIN, MAX) == LOADS_OK   # a cell may pull
    assert loads_status(feet(-60.0, 900.0), MIN, MAX) == LOADS_PULLING
    assert loads_status(feet(1600.0, 1500.0), MIN, MAX) == LOADS_OVER
    bad = feet(500.0, 500.0)
    bad[6] = math.nan
    assert loads_status(bad, MIN, MAX) == LOADS_MISSING


def test_foot_loads_and_the_right_share():
    out = np.zeros(2)
    foot_loads(np.array([1.0, 2.0, 3.0, 4.0, 10.0, 20.0, 30.0, 40.0]), out)
    np.testing.assert_array_equal(out, [10.0, 100.0])
    assert right_share(feet(300.0, 100.0)) == pytest.approx(0.25)
    assert right_share(feet(-5.0, 100.0)) == 1.0           # clamped
    assert math.isnan(right_share(np.zeros(8)))


def test_the_stabilizer_follows_the_loads_with_hysteresis_and_flags_a_disagreement():
    st = make(support={"source": "sensors", "min_load": MIN, "release_load": RELEASE, "dwell_s": 0.002})
    st.reset(Q0)
    assert st.step(Q0, DOUBLE, loads=feet(500.0, 500.0)) == wb.OK and int(st.out[wb.O_SUPPORT]) == DOUBLE
    assert not st.flag_dict()["support_disagrees"]
    assert st.step(Q0, DOUBLE, loads=feet(900.0, 40.0)) == wb.OK      # above release: still double
    assert int(st.out[wb.O_SUPPORT]) == DOUBLE
    assert st.step(Q0, DOUBLE, loads=feet(940.0, 20.0)) == wb.OK
    assert int(st.out[wb.O_SUPPORT]) == LEFT and st.flag_dict()["support_disagrees"]
    assert wb.FLAG_REACTIONS["support_disagrees"] == "warn"
    assert st.step(Q0, LEFT, loads=feet(900.0, 40.0)) == wb.OK        # below min_load: still left
    assert int(st.out[wb.O_SUPPORT]) == LEFT and not st.flag_dict()["support_disagrees"]


@pytest.mark.parametrize("loads", [feet(-200.0, 1000.0), feet(2000.0, 1500.0), feet(500.0, math.nan)])
def test_implausible_loads_are_rejected_and_held(loads):
    st = make(support={"source": "sensors"})
    st.reset(Q0)
    assert st.step(Q0, DOUBLE, loads=feet(500.0, 500.0)) == wb.OK
    q_ref = st.q_ref.copy()
    assert st.step(Q0, DOUBLE, loads=loads) == wb.REJECTED_INPUT
    assert st.flag_dict()["loads_implausible"] and wb.FLAG_REACTIONS["loads_implausible"] == "hold"
    assert np.all(st.qd_ref == 0.0)
    np.testing.assert_array_equal(st.q_ref, q_ref)


def test_the_phase_source_ignores_the_loads():
    st = make()
    st.reset(Q0)
    assert st.step(Q0, RIGHT, loads=feet(-200.0, 5000.0)) == wb.OK and int(st.out[wb.O_SUPPORT]) == RIGHT
