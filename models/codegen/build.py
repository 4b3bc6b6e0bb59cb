"""Robot YAML -> the source of a generated module (header, hashes, kernels) and the
operation counts set beside Liégeois & Aldon 1980's (docs/generated_models.md)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import sympy as sp

from models.chain.config import load_description
from models.tree.config import load_tree
from models.codegen import ROOT
from models.codegen.chain import chain_description, composite_source
from models.codegen.emit import Counts, Kernel, kernel, kernels, module_source, sha256
from models.codegen.symbolic import ClosedForms, closed_forms, number

HERE = Path(__file__).resolve().parent
GENERATOR_FILES = (HERE / "build.py", HERE / "symbolic.py", HERE / "emit.py", HERE / "chain.py")


def generator_sha256() -> str:
    """Hash of the files that decide the generated text (not the CLI, not the counts)."""
    return sha256(*GENERATOR_FILES)


@dataclass(frozen=True)
class Generated:
    name: str
    n: int
    kernels: list[Kernel]
    source: str
    compared: list[tuple[str, Counts]]


def _shown(path: Path) -> str:
    """The YAML's path relative to the repository when inside it (stable headers)."""
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def generate(robot_yaml: str | Path, chain: str | None = None) -> Generated:
    """Closed forms of the chain in ``robot_yaml`` as a Numba module's source; with
    ``chain``, of the tree's chain that starts at that joint on its base body, fixed
    there (:func:`models.codegen.chain.chain_description`)."""
    path = Path(robot_yaml)
    desc = load_description(path) if chain is None else chain_description(load_tree(path), chain)
    cf = closed_forms(desc)
    ks = kernels(cf)
    shown = _shown(path)
    option, stem = ("", path.stem) if chain is None else (f" --chain {chain}", f"{path.stem}_{chain}")
    command = f"python -m models.codegen {shown}{option} --out models/generated/{stem}.py"
    source = module_source(shown, sha256(path), generator_sha256(), desc.name, desc.n, ks, command, chain)
    return Generated(desc.name, desc.n, ks, source, comparable_counts(cf, desc.gravity))


def generate_composite(robot_yaml: str | Path) -> str:
    """The module coupling a tree's generated chains compositely (its source)."""
    path = Path(robot_yaml)
    return composite_source(_shown(path), load_tree(path), path.stem)


def comparable_counts(cf: ClosedForms, gravity: tuple[float, float, float]) -> list[tuple[str, Counts]]:
    """Counts of code that is not emitted, to set beside Liégeois & Aldon 1980's A and Q
    (no C; gravity fixed along one base axis; angles of parallel axes summed)."""
    fixed = {s: number(v) for s, v in zip(cf.symbols.g, gravity)}
    s = cf.symbols

    def count(*outputs: tuple[str, sp.Matrix]) -> Counts:
        return kernel("counted", "", "", list(outputs), s).counts

    return [("A + G", count(("A", cf.A), ("G", cf.G))),
            ("G, angles summed", count(("G", cf.G_summed))),
            ("G, g fixed", count(("G", cf.G.subs(fixed)))),
            ("G, g fixed, angles summed", count(("G", cf.G_summed.subs(fixed)))),
            ("A + G, g fixed, angles summed", count(("A", cf.A), ("G", cf.G_summed.subs(fixed))))]
