"""JSON-ready messages built from shared-memory numbers: telemetry records, events, profiler stats.

Codes become names from :mod:`controller.daemon.codes` and non-finite floats become ``null``,
so every message is strict JSON.
"""
from __future__ import annotations

import errno
import math
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import numpy as np

from controller.daemon.codes import Event, Reason, State, unpack_detail, unpack_point
from controller.daemon.loop.safety import check_name, describe
from controller.daemon.shm import Cmd
from controller.daemon.telemetry import STAB_STATUS_NAMES, TASKS, RecordLayout, stab_flag_names
from drivers.cia402 import State as DriveState
from drivers.codes import FaultCode
from drivers.health import HEALTH, flag_names as bus_flag_names
from drivers.powerlink.status import PROFILE_MASK, PROFILE_POWERLINK, TYPE_STATUS
from drivers.service_channel import ABORT_TEXT
from models.common.support import SUPPORT_NAMES
from stabilizer.contact import CELLS, LOADS_STATUS_NAMES
from models.transmission import LEG_LABELS, status_message


def name_of(enum: type[IntEnum], value: float) -> str | int:
    """The member name of ``value`` in ``enum``, or the integer when it is not a member."""
    i = int(value) if math.isfinite(value) else -1
    try:
        return enum(i).name
    except ValueError:
        return i


def finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


@dataclass(frozen=True)
class Names:
    """What turns indices into names: the robot's joints, the bus axes (bus order) and
    the POWERLINK node of each bus axis (empty when unknown)."""
    joints: tuple[str, ...]
    axes: tuple[str, ...] = ()
    nodes: tuple[int, ...] = ()
    transmission: tuple[str, ...] = ()     # each joint's transmission block; empty: the bench leg's

    def axis(self, index: int) -> tuple[str | None, int | None]:
        """(name, node id) of bus axis ``index``; None for what is not known."""
        name = self.axes[index] if 0 <= index < len(self.axes) else (f"#{index}" if index >= 0 else None)
        node = self.nodes[index] if 0 <= index < len(self.nodes) else None
        return name, node

    def joint(self, index: int) -> str | None:
        return self.joints[index] if 0 <= index < len(self.joints) else (f"#{index}" if index >= 0 else None)


def code_name(code: int) -> str:
    """A CiA 402 / POWERLINK error code by name and in hex, e.g. ``LOSS_PRES 0x8243``."""
    try:
        return f"{FaultCode(code).name} 0x{code:04X}"
    except ValueError:
        return f"0x{code:04X}"


def fault_fields(reason: float, detail: float, names: Names) -> dict[str, Any]:
    """A fault (Reason, controller.daemon.codes.pack_detail) as ``fault_name``, ``fault_code``,
    ``fault_axis``, ``fault_node``, ``fault_joint`` (None where they do not apply) and
    ``fault_detail``, one sentence naming what failed and where."""
    why = name_of(Reason, reason)
    code, index = unpack_detail(detail) if math.isfinite(detail) else (0, -1)
    axis = node = joint = None
    r = int(reason) if math.isfinite(reason) else -1
    if r in (Reason.DRIVE_FAULT, Reason.BUS_FAULT, Reason.ENABLE_TIMEOUT, Reason.TRANSMISSION):
        axis, node = names.axis(index)
    elif r in (Reason.HARD_LIMIT, Reason.NON_FINITE):
        joint = names.joint(index)
    where = f"axis {axis}" + (f" (node {node})" if node is not None else "") if axis else None
    if r in (Reason.DRIVE_FAULT, Reason.BUS_FAULT):
        code_text = code_name(code)
        kind = "drive fault" if r == Reason.DRIVE_FAULT else "POWERLINK error"
        text = f"{kind} {code_text}" + (f" on {where}" if where else "")
    elif r == Reason.ENABLE_TIMEOUT:
        code_text = name_of(DriveState, code)
        text = f"{where or 'an axis'} still {code_text} after control.enable_timeout_s (never Operation Enabled)"
    elif r == Reason.TRANSMISSION:
        if code:
            code_text = status_message(code, names.transmission or LEG_LABELS)
            text = f"transmission {code_text}" + (f"; the reading of {where} is not finite" if where else "")
        else:
            code_text = "non-finite motor setpoint"
            text = code_text + (f" on {where}" if where else "")
    elif r in (Reason.HARD_LIMIT, Reason.NON_FINITE):
        code_text, text = check_name(code), describe(code, index, names.joints)
    else:
        code_text = str(code) if code else None
        text = why if isinstance(why, str) else f"reason {why}"
    return {"fault_name": why, "fault_code": code_text, "fault_axis": axis, "fault_node": node,
            "fault_joint": joint, "fault_detail": text}


def telemetry_message(layout: RecordLayout, rec: np.ndarray, names: Names | None = None) -> dict[str, Any]:
    """One record decoded, with ``state_name``, ``stab_flag_names``, ``bus_flag_names`` and ``fault_name`` added
    (and, given ``names``, the fault's code, place and sentence: :func:`fault_fields`)."""
    out: dict[str, Any] = {}
    for key, v in layout.decode(rec).items():
        out[key] = [finite_or_none(x) for x in v] if isinstance(v, list) else finite_or_none(v)
    out["state_name"] = name_of(State, rec[layout.slices["state"]][0])
    out["stab_flag_names"] = stab_flag_names(rec[layout.slices["stab_flags"]][0])
    out["bus_flag_names"] = bus_flag_names(rec[layout.slices["bus_flags"]][0])
    fault = rec[layout.slices["fault"]][0]
    out["fault_name"] = name_of(Reason, fault) if fault else None
    out["support_name"] = _support_name(rec[layout.slices["support"]][0])
    if fault and names is not None:
        out.update(fault_fields(fault, rec[layout.slices["fault_info"]][0], names))
    return out


def event_message(cycle: int, code: int, a: float, b: float, names: Names | None = None) -> dict[str, Any]:
    """One event ``[cycle, kind, a, b]`` with its fields named after :class:`controller.daemon.codes.Event`;
    a FAULT's detail becomes :func:`fault_fields` (given ``names``)."""
    out: dict[str, Any] = {"cycle": cycle, "kind": name_of(Event, code)}
    if code == Event.TRANSITION:          # the loop sends b = reason + 1000 * new state
        why = int(b) if math.isfinite(b) else -1
        out.update(from_state=name_of(State, a), reason=name_of(Reason, why % 1000 if why >= 0 else why))
        if why >= 1000:
            out["to_state"] = name_of(State, why // 1000)
    elif code == Event.FAULT and names is not None:
        f = fault_fields(a, b, names)
        out.update(reason=f.pop("fault_name"), detail=f.pop("fault_detail"),
                   **{k.removeprefix("fault_"): v for k, v in f.items()})
    elif code == Event.WARNING and a == Reason.SOFT_LIMIT and names is not None:
        out.update(reason=name_of(Reason, a), detail=finite_or_none(b),
                   joint=names.joint(int(b)) if math.isfinite(b) else None)
    elif code == Event.WARNING and a == Reason.STABILIZER_FAILED:
        out.update(reason=name_of(Reason, a), status=_stab_status(b))
    elif code == Event.WARNING and a == Reason.FEET_LOADS:
        i = int(b) if math.isfinite(b) else -1
        out.update(reason=name_of(Reason, a), status=LOADS_STATUS_NAMES[i] if 0 <= i < len(LOADS_STATUS_NAMES) else i)
    elif code in (Event.FAULT, Event.WARNING):
        out.update(reason=name_of(Reason, a), detail=finite_or_none(b))
    elif code == Event.STABILIZER:
        out.update(status=_stab_status(a), rose=stab_flag_names(b))
    elif code == Event.COMMAND:
        out.update(cmd=name_of(Cmd, a), accepted=bool(b))
    elif code == Event.SUPPORT:
        out.update(support=_support_name(a), root=int(b) if math.isfinite(b) else None)
    elif code == Event.CONTACT:
        out.update(support=_support_name(a), right_share=finite_or_none(b))
    elif code == Event.EDGE:
        f = int(a) if math.isfinite(a) else -1
        mask = int(b) if math.isfinite(b) else 0
        out.update(foot=SUPPORT_NAMES[f] if f in (0, 1) else None, cells=[k for k in range(CELLS) if mask >> k & 1])
    elif code == Event.RECOVERY_STEP:
        f = int(a) if math.isfinite(a) else -1
        out.update(foot=SUPPORT_NAMES[f] if f in (0, 1) else None,
                   target=[round(v, 4) for v in unpack_point(b)] if math.isfinite(b) else None)
    elif code == Event.TOUCHDOWN:
        f = int(a) if math.isfinite(a) else -1
        out.update(foot=SUPPORT_NAMES[f] if f in (0, 1) else None, offset_m=finite_or_none(b))
    elif code == Event.TOE_DOWN:
        f = int(a) if math.isfinite(a) else -1
        out.update(foot=SUPPORT_NAMES[f] if f in (0, 1) else None, pitch_deg=finite_or_none(math.degrees(b)))
    elif code == Event.SIDE_DOWN:
        f = int(a) if math.isfinite(a) else -1
        out.update(foot=SUPPORT_NAMES[f] if f in (0, 1) else None, roll_deg=finite_or_none(math.degrees(b)))
    elif code == Event.STRIKE:
        f = int(a) if math.isfinite(a) else -1
        out.update(foot=SUPPORT_NAMES[f] if f in (0, 1) else None, raise_m=finite_or_none(b))
    elif code == Event.OVERRUN:
        out.update(missed=int(a) if math.isfinite(a) else None, cycle_us=finite_or_none(b))
    else:
        out.update(a=finite_or_none(a), b=finite_or_none(b))
    return out


def log_failed_message(cycle: int, detail: str, error: OSError, records: int) -> dict[str, Any]:
    """The I/O process's WARNING event when the cycle log fails: ``detail`` one sentence,
    ``error`` the errno's name (``ENOSPC``), ``records`` the records on disk."""
    return {"cycle": cycle, "kind": Event.WARNING.name, "reason": Reason.LOG_FAILED.name, "detail": detail,
            "error": errno.errorcode.get(error.errno or -1, type(error).__name__),
            "records": records}


def _support_name(x: float) -> str | None:
    i = int(x) if math.isfinite(x) else -1
    return SUPPORT_NAMES[i] if 0 <= i < len(SUPPORT_NAMES) else None


def _stab_status(x: float) -> str | int:
    i = int(x) if math.isfinite(x) else -1
    return STAB_STATUS_NAMES[i] if 0 <= i < len(STAB_STATUS_NAMES) else i


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


def bus_health(buf: np.ndarray, node_ids: tuple[int, ...], axis_names: tuple[str, ...]) -> dict[str, Any]:
    """A health buffer by name, JSON-ready (I/O side; allocates): the counters per node id and axis
    name (only the non-zero ones), the last SDO abort and the last node error entry (None before any)."""
    v = HEALTH.views(buf, nodes=len(node_ids), axes=len(axis_names))
    node, index, subindex, code, write = (int(x) for x in v.sdo_abort)
    abort = None if not node else {
        "node": node, "index": index, "subindex": subindex, "object": f"0x{index:04X}/{subindex}",
        "access": "write" if write else "read", "code": code,
        "name": ABORT_TEXT.get(code, "unknown abort code")}
    node, ecode, etype, info = (int(x) for x in v.node_error)
    error = None if not node else {
        "node": node, "code": ecode, "type": etype, "active": bool(etype & TYPE_STATUS), "info": info,
        "profile": "POWERLINK" if etype & PROFILE_MASK == PROFILE_POWERLINK else "CiA 402"}
    return {"flags": bus_flag_names(v.flags[0]),
            "pres_lost": {str(n): int(c) for n, c in zip(node_ids, v.pres_lost) if c},
            "pres_late": {str(n): int(c) for n, c in zip(node_ids, v.pres_late) if c},
            "saturations": {a: int(c) for a, c in zip(axis_names, v.saturations) if c},
            "last_sdo_abort": abort, "last_node_error": error}
