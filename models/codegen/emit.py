"""Numba source for the closed forms of :mod:`models.codegen.symbolic`.

Each kernel is straight-line code after common-subexpression elimination
(``sympy.cse``): ``inertia(q, A)``, ``gravity(q, g, G)``, ``coriolis(q, qd, C)`` and
the fused ``dynamics(q, qd, g, A, C, G)``, which shares subexpressions between the
three. Outputs are preallocated arrays; nothing is allocated. :func:`count_ops`
counts the operations of the emitted code (docs/generated_models.md says how).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import sympy as sp
from sympy.printing.pycode import PythonCodePrinter

from models.codegen.symbolic import ClosedForms, Symbols


@dataclass(frozen=True)
class Counts:
    """Operations of a piece of straight-line code."""

    mul: int = 0
    add: int = 0
    fun: int = 0

    def __add__(self, o: "Counts") -> "Counts":
        return Counts(self.mul + o.mul, self.add + o.add, self.fun + o.fun)

    def __str__(self) -> str:
        return f"{self.mul} mul, {self.add} add, {self.fun} fun"


def count_ops(expr: sp.Expr) -> Counts:
    """Multiplications and additions of an expression as printed: a sum of k terms is
    k - 1 additions (subtractions included), a product of k factors k - 1
    multiplications (a factor -1 is a sign, not a multiplication), x**k is k - 1
    multiplications; cos, sin and other functions count one each."""
    if expr.is_Atom:
        return Counts()
    own = Counts()
    if expr.is_Add:
        own = Counts(add=len(expr.args) - 1)
    elif expr.is_Mul:
        factors = [a for a in expr.args if a != -1]
        own = Counts(mul=len(factors) - 1)
    elif expr.is_Pow and expr.exp.is_Integer and expr.exp > 0:
        return count_ops(expr.base) + Counts(mul=int(expr.exp) - 1)
    elif isinstance(expr, sp.Function):
        own = Counts(fun=1)
    total = own
    for a in expr.args:
        total = total + count_ops(a)
    return total


class _Printer(PythonCodePrinter):
    """Plain Python arithmetic Numba compiles as is: floats at full precision,
    integer powers as products."""

    def _print_Float(self, expr):
        return repr(float(expr))

    def _print_Rational(self, expr):
        return repr(float(expr))

    def _print_Pow(self, expr, rational=False):
        if expr.exp.is_Integer and 1 < expr.exp <= 4:
            base = self.parenthesize(expr.base, 100)
            return "*".join([base] * int(expr.exp))
        return super()._print_Pow(expr, rational)


_PRINTER = _Printer({"fully_qualified_modules": False})


def _inputs(sym: Symbols, used: set) -> list[str]:
    """Lines that read the inputs the expressions use."""
    lines = [f"{x} = q[{k}]" for k, x in enumerate(sym.q) if x in used]
    for joints, (c, s) in sorted(sym.trig.items(), key=lambda item: (len(item[0]), item[0])):
        if c not in used and s not in used:
            continue
        theta = sum(sym.theta[k] for k in joints)
        arg = " + ".join([f"q[{k}]" for k in joints] + ([repr(theta)] if theta != 0.0 else []))
        lines += [f"{x} = {f}({arg})" for x, f in ((c, "cos"), (s, "sin")) if x in used]
    lines += [f"{x} = qd[{k}]" for k, x in enumerate(sym.qd) if x in used]
    lines += [f"{x} = g[{k}]" for k, x in enumerate(sym.g) if x in used]
    return lines


@dataclass(frozen=True)
class Kernel:
    name: str
    source: str
    counts: Counts


def kernel(name: str, args: str, doc: str, outputs: list[tuple[str, sp.Matrix]],
           sym: Symbols) -> Kernel:
    """One @njit kernel writing ``outputs`` (array name, matrix) after cse. A matrix whose
    entries are the same expressions across the diagonal (A) gets its upper triangle
    computed and mirrored."""
    exprs, targets, mirrors = [], [], []
    for arr, mat in outputs:
        rows, cols = mat.shape
        symmetric = cols > 1 and mat.is_symmetric(simplify=False)
        for i in range(rows):
            for j in range(cols):
                if symmetric and j < i:
                    mirrors.append(f"{arr}[{i}, {j}] = {arr}[{j}, {i}]")
                    continue
                exprs.append(mat[i, j])
                targets.append(f"{arr}[{i}, {j}]" if cols > 1 else f"{arr}[{i}]")
    repl, reduced = sp.cse(exprs, symbols=sp.numbered_symbols("x"), order="none")
    used = set().union(*(e.free_symbols for _, e in repl), *(e.free_symbols for e in reduced))
    inputs = _inputs(sym, used)
    counts = sum((count_ops(e) for e in [*(x for _, x in repl), *reduced]), Counts())
    counts = counts + Counts(fun=sum(1 for line in inputs if "cos(" in line or "sin(" in line),
                             add=sum(line.count(" + ") for line in inputs if "cos(" in line))
    body = inputs + [f"{s} = {_PRINTER.doprint(e)}" for s, e in repl]
    body += [f"{t} = {_PRINTER.doprint(e)}" for t, e in zip(targets, reduced)]
    body += mirrors
    text = (f"@njit(cache=True)\ndef {name}({args}):\n    \"\"\"{doc} ({counts}).\"\"\"\n"
            + "".join(f"    {line}\n" for line in body))
    return Kernel(name, text, counts)


def kernels(cf: ClosedForms) -> list[Kernel]:
    """The four kernels of a generated module."""
    s = cf.symbols
    return [
        kernel("inertia", "q, A", "A(q), rotor inertia included", [("A", cf.A)], s),
        kernel("gravity", "q, g, G", "G(q) for gravity g in base coordinates", [("G", cf.G)], s),
        kernel("coriolis", "q, qd, C", "C(q, qd), Christoffel form", [("C", cf.C)], s),
        kernel("dynamics", "q, qd, g, A, C, G", "A, C and G in one pass",
               [("A", cf.A), ("C", cf.C), ("G", cf.G)], s),
    ]


def sha256(*paths: Path) -> str:
    """Hash of the files' bytes, in order."""
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()


def module_source(yaml_path: str, yaml_sha: str, generator_sha: str, name: str, n: int,
                  ks: list[Kernel], command: str, chain: str | None = None) -> str:
    """The whole generated module: header, constants (CHAIN: the tree chain's first
    joint, for a chain of a tree), kernels."""
    head = (f'"""Closed-form dynamics of {name} ({n} DOF), GENERATED: do not edit.\n\n'
            f"Rebuild with ``{command}``\n"
            f"(tests/models/test_generated.py fails when this file is stale).\n"
            "A(q) qdd + C(q, qd) qd + G(q) = tau (docs/conventions.md), from the augmented-body\n"
            "recursion of models/codegen/symbolic.py (Liégeois & Aldon 1980, §3.1, eq. 3-17,\n"
            "3-18 corrected); operation counts per kernel in the docstrings\n"
            "(docs/generated_models.md).\n"
            '"""\n'
            "from math import cos, sin\n\n"
            "from numba import njit\n\n"
            f"SOURCE = {yaml_path!r}\n"
            + (f"CHAIN = {chain!r}\n" if chain is not None else "")
            + f"SOURCE_SHA256 = {yaml_sha!r}\n"
            f"GENERATOR_SHA256 = {generator_sha!r}\n"
            f"SYMPY = {sp.__version__!r}\n"
            f"N = {n}\n")
    return head + "".join("\n\n" + k.source for k in ks)
