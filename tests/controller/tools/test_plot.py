"""`bipd plot`'s figures hold what they claim: margins only where the stabilizer computed them (NaN
gaps under a "stabilizer off" shading, the lowest over valid samples), the deadline at the period."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from controller.daemon.codes import State
from controller.daemon.io.log import CycleLogWriter, read_log
from controller.daemon.telemetry import RecordLayout
from controller.tools.plot import DEADLINE, OFF, cog_margins_figure, cycle_times_figure
from tests.controller.daemon.io.test_io_log import NAMES, START_NS, records

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    """3 s: HOLD (margins 0, never computed), STABILIZING from 1 to 2 s (margins 20..40 mm), HOLD
    again (the last margins left in the record)."""
    layout = RecordLayout(4)
    s = layout.slices
    recs = records(layout, 1500)
    t = recs[:, 0]
    on = (t >= 1.0) & (t < 2.0)
    recs[:, s["state"]] = np.where(on, State.STABILIZING, State.HOLD)[:, None]
    walls = s["margins"].start + np.arange(4)
    recs[:, walls] = 0.0
    recs[np.ix_(on, walls)] = 0.03 + 0.01 * np.sin(7 * t[on])[:, None] * [1, -1, 0.5, 0.2]
    recs[np.ix_(t >= 2.0, walls)] = recs[np.flatnonzero(on)[-1], walls]
    recs[:, s["wake_us"]] = np.linspace(1.0, 3000.0, len(t))[:, None]        # up to beyond the period
    path = tmp_path_factory.mktemp("plot") / "c.mcap"
    w = CycleLogWriter(path, layout, NAMES, start_ns=START_NS, period=0.002)
    for r in recs:
        w.append(r)
    w.close()
    return read_log(path), recs, on


def test_margins_are_nan_not_zero_where_the_stabilizer_is_off(log):
    back, recs, on = log
    fig = cog_margins_figure(back)
    ax = fig.axes[0]
    walls = {line.get_label(): np.asarray(line.get_ydata(), dtype=float) for line in ax.lines
             if line.get_label().startswith("wall P")}
    assert sorted(walls) == ["wall P1", "wall P2", "wall P3", "wall P4"]
    m = back.field("margins")[:, :4] * 1e3
    for k, y in enumerate(walls.values()):
        assert np.isnan(y[~on]).all()
        np.testing.assert_array_equal(y[on], m[on, k])
    lowest = m[on].min()
    assert lowest > 15.0 and f"lowest {lowest:.1f} mm" in ax.get_title()
    assert len(ax.patches) == 2 and ax.patches[0].get_label() == OFF          # before and after the stabilizer
    t = back.field("t")
    spans = sorted((p.get_x(), p.get_x() + p.get_width()) for p in ax.patches)
    np.testing.assert_allclose(spans, [(0.0, t[on][0] - 0.002), (t[on][-1] + 0.002, t[-1])], atol=1e-12)


def test_a_run_without_the_stabilizer_says_na(log):
    back, _, _ = log
    held = replace(back, records=back.records.copy())
    held.records[:, back.layout.slices["state"]] = State.HOLD
    ax = cog_margins_figure(held).axes[0]
    assert "n/a" in ax.get_title() and "0.0" not in ax.get_title()


def test_cycle_times_draw_the_deadline_at_the_period_on_log_axes(log):
    back, recs, _ = log
    fig = cycle_times_figure(back)
    hist, times = fig.axes[:2]
    assert hist.get_xscale() == "log" and hist.get_yscale() == "log" and times.get_yscale() == "log"
    v = [line for line in hist.lines if line.get_label().startswith(DEADLINE)]
    h = [line for line in times.lines if line.get_label().startswith(DEADLINE)]
    assert len(v) == len(h) == 1
    assert list(v[0].get_xdata()) == [2000.0, 2000.0] and list(h[0].get_ydata()) == [2000.0, 2000.0]
    counts = [p.get_height() for p in hist.patches]
    assert sum(counts) == len(recs)                           # every wake latency is in a bin
    assert max(p.get_x() + p.get_width() for p in hist.patches) == pytest.approx(3000.0)
