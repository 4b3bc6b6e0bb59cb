"""``python -m models.codegen ROBOT.yaml --out models/generated/NAME.py [--counts]``."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from models.common.errors import ConfigError


def _no_placements(path: str) -> None:
    """The generated chains hold Khalil-Kleinfinger parameters only: a tree joint with a fixed
    placement (an imported axis a hair off parallel, docs/import.md) is refused, not dropped."""
    from models.common.validation import read_yaml
    from models.tree.config import is_tree, tree_from_dict

    doc = read_yaml(path)
    if is_tree(doc):
        for i, t in enumerate(tree_from_dict(doc, path).joints):
            if t.placement is not None:
                raise ConfigError(path, f"joints[{i}].placement", "generated kernels hold only "
                                  "Khalil-Kleinfinger parameters, not a joint's fixed placement")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m models.codegen",
                                description="Generate closed-form Numba kernels A, C, G of a robot YAML.")
    p.add_argument("robot", help="robot YAML (serial MDH chain)")
    p.add_argument("--chain", help="for a tree YAML: the first joint of the chain on the base body to generate "
                   "(fixed there, as the composite models use it)")
    p.add_argument("--composite", action="store_true",
                   help="for a tree YAML: the module coupling its generated chains compositely")
    p.add_argument("--out", help="write the generated module here")
    p.add_argument("--counts", action="store_true",
                   help="print the operation counts, next to Liégeois & Aldon 1980's for their 6-DOF robot")
    a = p.parse_args(argv)
    try:
        from models.codegen.build import generate, generate_composite
        from models.codegen.published import published_counts
    except ImportError as e:
        print(f"error: the generator needs sympy ({e}); install it with pip install -e '.[gen]'",
              file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    try:
        _no_placements(a.robot)
        if a.composite:
            source = generate_composite(a.robot)
        else:
            gen = generate(a.robot, a.chain)
            source = gen.source
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    dt = time.perf_counter() - t0
    if a.out:
        try:
            Path(a.out).write_text(source)
        except OSError as e:
            print(f"error: {a.out}: cannot write the generated module ({e.strerror})", file=sys.stderr)
            return 2
    if a.composite:
        print(f"{a.robot}: composite coupling of its chains" + (f" -> {a.out}" if a.out else ""))
        return 0
    print(f"{gen.name}: {gen.n} DOF generated in {dt:.1f} s" + (f" -> {a.out}" if a.out else ""))
    if a.counts:
        for k in gen.kernels:
            print(f"  {k.name:34s} {k.counts}")
        print("  not emitted, for comparison:")
        for label, c in gen.compared:
            print(f"  {label:34s} {c}")
        print("Liégeois & Aldon 1980, 6-DOF robot, printed closed forms (§4.4-4.5, errata applied):")
        for label, c in published_counts():
            print(f"  {label:34s} {c}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
