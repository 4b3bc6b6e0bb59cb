"""The benchmark runs and reports sane figures (the ≥10× target is measured, not asserted here)."""
from __future__ import annotations

from drivers.bench import run_benchmark


def test_benchmark_reports_rates_and_frame_costs():
    result = run_benchmark(0.3)
    assert result["axes"] == 6 and result["bus_cycles_per_control_cycle"] == 5
    assert result["control_cycles"] >= 100
    assert result["real_time_factor"] == result["control_cycles_per_s"] * 0.002
    assert result["leg_plant_real_time_factor"] == result["leg_plant_control_cycles_per_s"] * 0.002
    assert result["leg_plant_control_cycles_per_s"] > 0
    assert 0 < result["pres_encode_us"] < 100 and 0 < result["pres_decode_us"] < 100
    assert result["udp_in_process_real_time_factor"] > 0 and result["udp_in_process_python_real_time_factor"] > 0
    assert result["faulted_axes"] == []
