"""Fixtures every package's tests share, and the markers given by folder or implied by another (pyproject's markers)."""
from __future__ import annotations

import pytest

from models.rig.stewart import StewartModel
from tests.paths import STEWART_RIG


@pytest.fixture(scope="module")
def stewart() -> StewartModel:
    """The Stewart–Gough rig of Staicu 2008 (deploy/rigs/stewart_staicu2008.yaml), one per module."""
    return StewartModel.from_yaml(STEWART_RIG)


HIL_DIRS = ("tests/drivers/sim/hil/",)       # every test there runs a MuJoCo plant or the HIL server
DAEMON_FIXTURES = {"daemon", "bip2000_daemon", "stepped_bip2000_daemon", "live_daemon"}   # boot a `bipd run` process


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``hil`` for the tests under HIL_DIRS; ``slow`` for every ``hil`` test (a MuJoCo run takes seconds) and
    every test on a daemon process (its boot alone takes seconds)."""
    root = config.rootpath
    for item in items:
        where = item.path.relative_to(root).as_posix()
        if where.startswith(HIL_DIRS):
            item.add_marker(pytest.mark.hil)
        daemon = DAEMON_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if (item.get_closest_marker("hil") is not None or daemon) and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
