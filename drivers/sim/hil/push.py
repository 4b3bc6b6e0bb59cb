"""External pushes on a MuJoCo plant: the HIL's ``push`` control op.

``{"op": "push", "body": name, "force": [fx, fy, fz], "duration": s}`` applies the force (N, the
plant's world axes) at the body's centre of mass for ``duration`` s of plant time, from the next
step on; a new push replaces the current one.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np


class Push:
    """One push at a time on MuJoCo's ``xfrc_applied``; ``bodies`` maps the names a request may
    give to body ids, ``default`` is the body of a request without one, ``to_world`` rotates the
    request's axes into MuJoCo's."""

    def __init__(self, xfrc_applied: np.ndarray, bodies: Mapping[str, int], default: str,
                 to_world: np.ndarray | None = None) -> None:
        self._xfrc = xfrc_applied
        self._bodies = dict(bodies)
        self._default = default
        self._to_world = np.eye(3) if to_world is None else np.asarray(to_world, dtype=np.float64)
        self._force = xfrc_applied[self._bodies[default], :3]
        self._left = 0.0
        self.active = False

    def request(self, request: Mapping) -> dict:
        """Arm a push (module docstring); the answer is ``{"ok": True}`` or ``{"error": ...}``."""
        op = request.get("op")
        if op != "push":
            return {"error": f"unknown control op {op!r} (known: fault, reset, shutdown, push)"}
        body = request.get("body", self._default)
        if body not in self._bodies:
            return {"error": f"push: unknown body {body!r} (known: {', '.join(sorted(self._bodies))})"}
        try:
            force = np.array(request["force"], dtype=np.float64)
            duration = float(request["duration"])
        except (KeyError, TypeError, ValueError) as exc:
            return {"error": f"push: needs force [fx, fy, fz] (N) and duration (s): {exc}"}
        if force.shape != (3,) or not np.all(np.isfinite(force)):
            return {"error": f"push: force must be 3 finite numbers (N), got {request['force']!r}"}
        if not (math.isfinite(duration) and duration >= 0.0):
            return {"error": f"push: duration must be a finite number >= 0 (s), got {request['duration']!r}"}
        self.stop()
        self._force = self._xfrc[self._bodies[body], :3]
        self._force[:] = self._to_world @ force
        self._left = duration
        self.active = True
        return {"ok": True}

    def count(self, h: float) -> None:
        """Before a MuJoCo step of ``h`` s: the push lasts while more than half a step of it is left."""
        if self.active:
            if self._left > 0.5 * h:
                self._left -= h
            else:
                self.stop()

    def stop(self) -> None:
        self.active = False
        self._left = 0.0
        self._force[:] = 0.0
