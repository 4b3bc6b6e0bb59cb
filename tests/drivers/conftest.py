"""Shared fixtures: the bench YAML (leg + platform) and a booted simulated bus."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from tests.drivers.helpers import enabled_bus

BENCH_YAML = Path(__file__).with_name("bench.yaml")
_BENCH = yaml.safe_load(BENCH_YAML.read_text(encoding="utf-8"))["bus"]


@pytest.fixture
def bench() -> dict:
    """A fresh copy of the ``bus:`` section of bench.yaml."""
    return copy.deepcopy(_BENCH)


@pytest.fixture
def bus(bench):
    b = enabled_bus(bench)
    yield b
    b.close()
