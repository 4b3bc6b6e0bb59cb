"""Cheap trial functions for the campaign tests (importable by the Ray workers).

Each call leaves a file named after its trial key in ``<results>/../calls`` so a test can count
which trials ran. ``walls.gain`` picks the behaviour: 99 raises, 55 kills its worker, 77 hangs (after starting a grandchild
process, as the daemon's loop process is, whose pid it writes down), anything else returns metrics computed from the gain.
"""
from __future__ import annotations

import os
import subprocess
import time
from typing import Any

from controller.tools.campaign.trials import trial_key

FAIL, HANG, CRASH = 99.0, 77.0, 55.0


def fake_trial(spec, params: dict[str, Any]) -> dict[str, Any]:
    calls = spec.results.parent / "calls"
    calls.mkdir(exist_ok=True)
    (calls / trial_key(spec, params)).touch()
    g = float(params["walls.gain"])
    if g == FAIL:
        raise RuntimeError("boom")
    if g == CRASH:
        os._exit(3)
    if g == HANG:
        subprocess.Popen(["sh", "-c", f"sleep 3600 & echo $! > {calls / 'hang.pid'}; wait"])
        time.sleep(3600)
    return {"min_cog_margin_m": -(g - 1.0) ** 2, "max_tracking_error_deg": g}
