"""Liégeois & Aldon 1980's closed forms of their 6-DOF robot as printed (§4.4 gravity
torques Q, §4.5 inertia coefficients A_ij, with the errata of docs/errata.md on A11
and A33) and the operations they cost, counted by the rule of
:func:`models.codegen.emit.count_ops`. The report gives the formulas, not their
counts; it prints neither C nor B (§3.3: "relativement compliquées").

Their constants (VZ6, JX6, ...) are computed off line (§4.3); their sines and cosines
of single angles and of the sums θ23, θ34, θ234 of parallel axes count one function
each, and the three sums one addition each (θ234 = θ23 + θ4).
"""
from __future__ import annotations

import re

import sympy as sp
from sympy.parsing.sympy_parser import parse_expr

from models.codegen.emit import Counts, count_ops

Q_PRINTED = {
    "Q5": "+G*(+S234*S5*VZ6)",
    "Q4": "+G*(-C234*C5*VZ6)",
    "Q3": "+G*(-C23*VZ3)+Q4",
    "Q2": "+G*(-S2*VY2)+Q3",
}

A_PRINTED = {
    "A11": "+2*VZ3*L2*(+C23*S2)+2*VZ6*L2*(+C234*C5*S2)+2*VZ6*L3*(+C234*C5*C23)+JZ2*S2*S2+JY3"
           "*C23*C23+JX6*C6*S5*S234*C6*S5*S234+JX6*C6*S5*S234*S6*C234+JX6*S6*C234*C6*S5*S234"
           "+JX6*S6*C234*S6*C234+JY6*S6*S5*S234*S6*S5*S234-JY6*S6*S5*S234*C6*C234-JY6*C6*C23"
           "4*S6*S5*S234+JY6*C6*C234*C6*C234",
    "A12": "+VZ6*L2*(-S5*C2)+VZ6*L3*(+S5*S23)+JX6*C6*C5*C6*S5*S234+JX6*C6*C5*S6*C234+JY6*S6*"
           "C5*S6*S5*S234-JY6*S6*C5*C6*C234",
    "A13": "+VZ6*L3*(+S5*S23)+JX6*C6*C5*C6*S5*S234+JX6*C6*C5*S6*C234+JY6*S6*C5*S6*S5*S234-JY"
           "6*S6*C5*C6*C234",
    "A14": "+JX6*C6*C5*C6*S5*S234+JX6*C6*C5*S6*C234+JY6*S6*C5*S6*S5*S234-JY6*S6*C5*C6*C234",
    "A15": "+VZ6*L2*(+S2*C5)+VZ6*L3*(+C23*C5)+JX6*S6*C6*S5*S234+JX6*S6*S6*C234-JY6*C6*S6*S5*S234"
           "+JY6*C6*C6*C234",
    "A22": "+2*VZ3*L2*(-S3)+2*VZ6*L2*(-S34*C5)+2*VZ6*L3*(+C4*C5)+JX2+JX3+JX6*C6*C5*C6*C5"
           "+JY6*S6*C5*S6*C5",
    "A23": "+VZ3*L2*(-S3)+VZ6*L3*(+C4*C5)+VZ6*L2*(-S34*C5)+VZ6*L3*(+C4*C5)+JX3+JX6*C6*C5*C6*C5"
           "+JY6*S6*C5*S6*C5",
    "A24": "+VZ6*L2*(-S34*C5)+VZ6*L3*(+C4*C5)+JX6*C6*C5*C6*C5+JY6*S6*C5*S6*C5",
    "A25": "+VZ6*L2*(-C34*S5)+VZ6*L3*(-S4*S5)+JX6*S6*C6*C5-JY6*C6*S6*C5",
    "A33": "+2*VZ6*L3*(+C4*C5)+JX3+JX6*C6*C5*C6*C5+JY6*S6*C5*S6*C5",
    "A34": "+VZ6*L3*(+C4*C5)+JX6*C6*C5*C6*C5+JY6*S6*C5*S6*C5",
    "A35": "+VZ6*L3*(-S4*S5)+JX6*S6*C6*C5-JY6*C6*S6*C5",
    "A44": "+JX6*C6*C5*C6*C5+JY6*S6*C5*S6*C5",
    "A45": "+JX6*S6*C6*C5-JY6*C6*S6*C5",
    "A55": "+JX6*S6*S6+JY6*C6*C6",
}  # A16 = A26 = A36 = A46 = A56 = A66 = 0, Q6 = Q1 = 0


def parsed(forms: dict[str, str], evaluate: bool) -> list[sp.Expr]:
    return [parse_expr(f, evaluate=evaluate) for f in forms.values()]


def trig_counts(forms: dict[str, str]) -> Counts:
    """One function per distinct S.../C... and one addition per distinct angle sum."""
    trig = set(re.findall(r"\b[SC](\d+)\b", " ".join(forms.values())))
    names = set(re.findall(r"\b[SC]\d+\b", " ".join(forms.values())))
    return Counts(fun=len(names), add=sum(1 for t in trig if len(t) > 1))


def printed(forms: dict[str, str]) -> Counts:
    """Operations of the formulas as printed, term by term (no sharing)."""
    return sum((count_ops(e) for e in parsed(forms, evaluate=False)), trig_counts(forms))


def with_cse(forms: dict[str, str]) -> Counts:
    """Operations of the same formulas after our common-subexpression elimination."""
    repl, reduced = sp.cse(parsed(forms, evaluate=True), order="none")
    return sum((count_ops(e) for e in [*(x for _, x in repl), *reduced]), trig_counts(forms))


def published_counts() -> list[tuple[str, Counts]]:
    """(label, counts) for A and Q as printed and after cse."""
    both = {**A_PRINTED, **Q_PRINTED}
    return [("A as printed", printed(A_PRINTED)), ("A as printed, after cse", with_cse(A_PRINTED)),
            ("Q as printed", printed(Q_PRINTED)),
            ("A + Q as printed", printed(both)), ("A + Q as printed, after cse", with_cse(both))]
