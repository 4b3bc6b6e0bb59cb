"""The openPOWERLINK CN fixture (tests/drivers/oplk.py): built and started once per session."""
from __future__ import annotations

import os

import pytest

from tests.drivers.oplk import OplkCn, build_cn


@pytest.fixture(scope="session")
def oplk_cn(tmp_path_factory):
    """openPOWERLINK's CN as node 1 in a namespace named after this process; skipped when not root."""
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
