"""Where the tests find the repository's files: one place, whatever a test module's depth."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
ROBOTS = DEPLOY / "robots"
RIGS = DEPLOY / "rigs"
STEWART_RIG = RIGS / "stewart_staicu2008.yaml"     # Staicu 2008's Stewart–Gough rig, the one the rig tests use
