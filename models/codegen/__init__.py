"""Generated closed-form models (Liégeois & Aldon 1980): robot YAML -> Numba source
of A(q), C(q, qd), G(q, g); see docs/generated_models.md. Needs sympy (extra ``gen``)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..config import load_description
from .emit import Kernel, kernels, module_source, sha256
from .symbolic import closed_forms

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
GENERATOR_FILES = (HERE / "__init__.py", HERE / "symbolic.py", HERE / "emit.py")


def generator_sha256() -> str:
    """Hash of the files that decide the generated text (not the CLI, not the counts)."""
    return sha256(*GENERATOR_FILES)


@dataclass(frozen=True)
class Generated:
    name: str
    n: int
    kernels: list[Kernel]
    source: str


def _shown(path: Path) -> str:
    """The YAML's path relative to the repository when inside it (stable headers)."""
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def generate(robot_yaml: str | Path) -> Generated:
    """Closed forms of the chain in ``robot_yaml`` as a Numba module's source."""
    path = Path(robot_yaml)
    desc = load_description(path)
    ks = kernels(closed_forms(desc))
    shown = _shown(path)
    command = f"python -m models.codegen {shown} --out models/generated/{path.stem}.py"
    source = module_source(shown, sha256(path), generator_sha256(), desc.name, desc.n, ks, command)
    return Generated(desc.name, desc.n, ks, source)
