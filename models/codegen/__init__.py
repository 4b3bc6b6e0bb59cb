"""Generated closed-form models (Liégeois & Aldon 1980): robot YAML -> Numba source
of A(q), C(q, qd), G(q, g); see docs/generated_models.md. :mod:`.build` and the CLI
need sympy (extra ``gen``); :mod:`.timing` does not."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
