"""The whole-robot table (controller.tools.scenarios.whole_body_results) from synthetic results, and the
CoG margin the whole-body scenarios compute from the HIL's support polygon."""
from __future__ import annotations

import numpy as np

from controller.tools.scenarios import whole_body_results as wr
from controller.tools.scenarios.whole_body import TILT_DIRECTIONS, cog_margin


def _res() -> dict:
    tilts = [{"direction": d, "support": sp, "stabilizer": s, "held_deg": 12.5 if s else 0.0,
              "fell_deg": None if (s and d == "+beta") else 15.6}
             for sp in ("double", "left") for s in (True, False) for d in TILT_DIRECTIONS]
    pushes = [{"direction": d, "stabilizer": s, "held_N": 500.0, "fell_N": 625.0, "impulse_Ns": 50.0}
              for s in (True, False) for d in wr.PUSHES]
    thesis = [{"stabilizer": True, "fell": False, "min_cog_margin_m": 0.0175},
              {"stabilizer": False, "fell": True, "min_cog_margin_m": None}]
    return {"date": "2026-11-26", "machine": "x86_64", "runs_per_search": 5, "tilts": tilts, "pushes": pushes,
            "thesis_tilt": thesis}


def test_one_row_per_direction_and_support_with_brackets():
    rows = wr.markdown(_res()).splitlines()
    tilt_rows = [r for r in rows if r.startswith("| largest tilt held")]
    assert len(tilt_rows) == 2 * len(TILT_DIRECTIONS)
    assert tilt_rows[0] == "| largest tilt held, both feet, (α, β) ∝ (+α) | 12.5 ° (falls at 15.6) | < 15.6 ° (falls there) |"
    assert "| ≥ 12.5 ° (limit) |" in tilt_rows[2]                          # +β held at the platform's limit
    assert all("left foot" in r for r in tilt_rows[len(TILT_DIRECTIONS):])
    assert "| thesis tilt (10°, 20°, 7 s), both feet: fell / min CoG margin | no / 17.5 mm | yes / n/a |" in rows
    assert sum(r.startswith("| largest push survived") for r in rows) == len(wr.PUSHES)


def test_the_cog_margin_is_the_signed_distance_to_the_polygon():
    square = np.array([-0.1, -0.1, 0.1, -0.1, 0.1, 0.1, -0.1, 0.1] + [np.nan] * 8)   # ccw, 4 vertices
    com = np.array([[0.0, 0.0, 0.9], [0.05, 0.0, 0.9], [0.15, 0.02, 0.9], [0.0, 0.0, 0.9]])
    m = cog_margin(com, np.tile(square, (4, 1)), np.array([4, 4, 4, 0]))
    np.testing.assert_allclose(m[:3], [0.1, 0.05, -0.05])
    assert np.isnan(m[3])                                                  # no polygon: no margin
