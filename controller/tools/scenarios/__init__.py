"""`bipd scenario`: the HIL bench driven through the daemon's ZMQ interface, as an operator would.

runner (processes, operator, recording) · scenarios (tilt, squat, push, walk-file, fault) ·
metrics (fell criteria, ScenarioResult) · search (largest tilt held) · results (the tables of docs/results/) ·
plots (PNGs) · cli (``bipd scenario ...``).
"""
