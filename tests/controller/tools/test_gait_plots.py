"""`bipd gait --plot`: the footprints say which foot is which; the joint angles are in degrees,
one panel per joint group, no two lines of a panel alike."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from controller.tools.gait import FOOT_COLORS, joint_groups, joints_figure, plot_gait
from models.common.support import LEFT, RIGHT
from models.tree.robot import TreeRobot
from tests.paths import ROBOTS

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def bip2000():
    return TreeRobot.from_yaml(ROBOTS / "bip2000.yaml")


def test_fifteen_joints_in_degrees_with_distinct_lines(bip2000):
    names = bip2000.model.joint_names
    assert len(names) == 15 and [len(g) for g in joint_groups(names)] == [6, 6, 3]
    t = np.linspace(0.0, 1.0, 50)
    q = np.sin(t[:, None] + np.arange(15)) * 0.3
    fig = joints_figure(names, t, q)
    drawn = {}
    for ax in fig.axes:
        lines = [ln for ln in ax.get_lines()]
        styles = [(ln.get_color(), ln.get_linestyle()) for ln in lines]
        assert len(set(styles)) == len(styles) and ax.get_ylabel() == "q (deg)"
        drawn |= {ln.get_label(): np.asarray(ln.get_ydata()) for ln in lines}
    assert list(drawn) == list(names)
    for j, name in enumerate(names):
        np.testing.assert_allclose(drawn[name], np.degrees(q[:, j]), rtol=0, atol=1e-12)


def test_gait_path_labels_the_left_and_right_footprints(bip2000, tmp_path, monkeypatch):
    import matplotlib.pyplot as plt
    kept = []
    monkeypatch.setattr(plt, "close", kept.append)
    n = 20
    track = np.zeros((n, 2))
    plan = SimpleNamespace(footprints=[(LEFT, 0.0, 0.1), (RIGHT, 0.0, -0.1), (LEFT, 0.2, 0.1)], walk_start=0,
                           zmp_ref=track)
    gait = SimpleNamespace(plan=plan, zmp_lipm=track, cog_ref=track, t=np.arange(n) * 0.01, q=np.zeros((n, 15)))
    report = SimpleNamespace(zmp=track, margin=np.full(n, 0.05))
    paths = plot_gait(tmp_path, bip2000, gait, report)
    assert [p.name for p in paths] == ["gait_path.png", "gait_joints.png"]
    ax = kept[0].axes[0]
    legend = {t.get_text() for t in ax.get_legend().get_texts()}
    assert {"left foot", "right foot"} <= legend
    feet = [ln for ln in ax.get_lines() if ln.get_color() in FOOT_COLORS]
    assert [ln.get_color() for ln in feet] == [FOOT_COLORS[LEFT], FOOT_COLORS[RIGHT], FOOT_COLORS[LEFT]]
    left = feet[0].get_xydata()
    assert left[:, 1].mean() > 0 and [t.get_text() for t in ax.texts] == ["L", "R", "L"]   # left is +y
