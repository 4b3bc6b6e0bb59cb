"""Fixtures every package's tests share, and the markers given by folder (see pyproject's markers)."""
from __future__ import annotations

import pytest

from models.rig.stewart import StewartModel
from tests.paths import STEWART_RIG


@pytest.fixture(scope="module")
def stewart() -> StewartModel:
    """The Stewart–Gough rig of Staicu 2008 (deploy/rigs/stewart_staicu2008.yaml), one per module."""
    return StewartModel.from_yaml(STEWART_RIG)
