"""DS 301 threshold counters (§4.7.4.1): +8 per error, -1 per good cycle, trip at 15."""
from __future__ import annotations

from drivers.powerlink.threshold import ThresholdCounter


def test_one_error_is_tolerated_and_decays():
    c = ThresholdCounter(15)
    assert c.error() is False and c.count == 8
    for expected in range(7, -1, -1):
        c.good()
        assert c.count == expected
    c.good()
    assert c.count == 0


def test_two_consecutive_errors_trip_and_restart_from_zero():
    c = ThresholdCounter(15)
    assert c.error() is False
    assert c.error() is True          # 8 + 8 = 16 >= 15
    assert c.count == 0 and c.cumulative == 2


def test_error_good_error_reaches_threshold_exactly():
    c = ThresholdCounter(15)
    c.error()
    c.good()                          # 7
    assert c.error() is True          # 15 >= 15


def test_errors_eight_cycles_apart_never_trip():
    c = ThresholdCounter(15)
    for _ in range(10):
        assert c.error() is False
        for _ in range(8):
            c.good()
    assert c.cumulative == 10


def test_threshold_zero_disables_tripping():
    c = ThresholdCounter(0)
    assert not any(c.error() for _ in range(10))
    assert c.count == 80
