"""Fixtures every package's tests share, and the markers given by folder or implied by another (pyproject's markers)."""
from __future__ import annotations

import os

import pytest
from hypothesis import settings

from models.rig.stewart import StewartModel
from controller.tools.oplk import OplkCn, build_cn
from tests.paths import STEWART_RIG

# The property tests draw the same examples on every run (CI, a fresh clone, any host): a verdict that does
# not depend on the draw. HYPOTHESIS_PROFILE=explore draws new ones each run, to look for counterexamples.
settings.register_profile("suite", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))


@pytest.fixture(scope="module")
def stewart() -> StewartModel:
    """The Stewart–Gough rig of Staicu 2008 (deploy/rigs/stewart_staicu2008.yaml), one per module."""
    return StewartModel.from_yaml(STEWART_RIG)


@pytest.fixture(scope="session")
def oplk_cn(tmp_path_factory):
    """openPOWERLINK's controlled node (tests/drivers/oplk.py) as node 1 in a namespace named after this
    process, one per session; skipped when not root."""
    if os.geteuid() != 0:
        pytest.skip("openPOWERLINK's CN runs in a network namespace on a veth pair: needs root")
    cn = OplkCn(f"rwo{os.getpid() % 1_000_000}", build_cn(), 1, tmp_path_factory.mktemp("oplk"))
    cn.start()
    yield cn
    cn.stop()


@pytest.fixture
def realtime():
    """The test's thread at SCHED_FIFO 40 (below the CN's stack threads, 45..75) while it runs: a managing
    node in Python on a shared machine otherwise loses whole cycles to other processes."""
    before = os.sched_getscheduler(0), os.sched_getparam(0)
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(40))
    yield
    os.sched_setscheduler(0, before[0], before[1])


HIL_DIRS = ("tests/drivers/sim/hil/",)       # every test there runs a MuJoCo plant or the HIL server
DAEMON_FIXTURES = {"daemon", "bip2000_daemon", "stepped_bip2000_daemon", "live_daemon"}   # boot a `bipd run` process
WIRE_FIXTURES = {"oplk_cn"}                  # build and run openPOWERLINK's CN, cycle seconds on a veth


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``hil`` for the tests under HIL_DIRS; ``slow`` for every ``hil`` test (a MuJoCo run takes seconds) and
    every test on a daemon process (its boot alone takes seconds) or on the openPOWERLINK wire."""
    root = config.rootpath
    for item in items:
        where = item.path.relative_to(root).as_posix()
        if where.startswith(HIL_DIRS):
            item.add_marker(pytest.mark.hil)
        daemon = (DAEMON_FIXTURES | WIRE_FIXTURES).intersection(getattr(item, "fixturenames", ()))
        if (item.get_closest_marker("hil") is not None or daemon) and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
