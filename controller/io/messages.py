"""JSON-ready messages built from shared-memory numbers: telemetry records, events, profiler stats.

Codes become names from :mod:`controller.codes` and non-finite floats become ``null``,
so every message is strict JSON.
"""
from __future__ import annotations

import math
from enum import IntEnum
from typing import Any

import numpy as np

from controller.codes import Event, Reason, State
from controller.shm import Cmd
from controller.telemetry import TASKS, RecordLayout


def name_of(enum: type[IntEnum], value: float) -> str | int:
    """The member name of ``value`` in ``enum``, or the integer when it is not a member."""
    i = int(value) if math.isfinite(value) else -1
    try:
        return enum(i).name
    except ValueError:
        return i


def finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


def telemetry_message(layout: RecordLayout, rec: np.ndarray) -> dict[str, Any]:
    """One record decoded, with ``state_name`` and ``fault_name`` added."""
    out: dict[str, Any] = {}
    for key, v in layout.decode(rec).items():
        out[key] = [finite_or_none(x) for x in v] if isinstance(v, list) else finite_or_none(v)
    out["state_name"] = name_of(State, rec[layout.slices["state"]][0])
    fault = rec[layout.slices["fault"]][0]
    out["fault_name"] = name_of(Reason, fault) if fault else None
    return out


def event_message(cycle: int, code: int, a: float, b: float) -> dict[str, Any]:
    """One event ``[cycle, kind, a, b]`` with its fields named after :class:`controller.codes.Event`."""
    out: dict[str, Any] = {"cycle": cycle, "kind": name_of(Event, code)}
    if code == Event.TRANSITION:          # the loop sends b = reason + 1000 * new state
        why = int(b) if math.isfinite(b) else -1
        out.update(from_state=name_of(State, a), reason=name_of(Reason, why % 1000 if why >= 0 else why))
        if why >= 1000:
            out["to_state"] = name_of(State, why // 1000)
    elif code in (Event.FAULT, Event.WARNING):
        out.update(reason=name_of(Reason, a), detail=finite_or_none(b))
    elif code == Event.COMMAND:
        out.update(cmd=name_of(Cmd, a), accepted=bool(b))
    elif code == Event.OVERRUN:
        out.update(missed=int(a) if math.isfinite(a) else None, cycle_us=finite_or_none(b))
    else:
        out.update(a=finite_or_none(a), b=finite_or_none(b))
    return out


def distribution(x: np.ndarray) -> dict[str, float | None] | None:
    """min / mean / p50 / p99 / max of the finite samples of ``x`` (None when there are none)."""
    x = x[np.isfinite(x)]
    if x.size == 0:
        return None
    p50, p99 = np.percentile(x, [50.0, 99.0])
    return {"min": float(x.min()), "mean": float(x.mean()), "p50": float(p50), "p99": float(p99),
            "max": float(x.max()), "samples": int(x.size)}


def profiler_summary(wake_us: np.ndarray, task_us: np.ndarray) -> dict[str, Any]:
    """Wake latency and per-task times over a window (``task_us`` is ``(samples, len(TASKS))``)."""
    return {"wake_us": distribution(wake_us),
            "task_us": {name: distribution(task_us[:, i]) for i, name in enumerate(TASKS)},
            "total_us": distribution(task_us.sum(axis=1)) if len(task_us) else None}
