"""The live view's parameters: the Foxglove WebSocket protocol's ``getParameters`` /
``setParameters`` / ``parameterValues`` (subscribers get every change).

Names and values:

- ``/robot_description``: the robot's URDF with its geometry (:func:`models.urdf.to_urdf`), the name
  Foxglove's 3-D panel looks for; read-only;
- ``gains.AXIS.kp``, ``.ki``, ``.kd``: one axis task's PID gains, from ``control.gains`` at start,
  then every ``set_gains`` the loop accepted (from any client);
- ``stabilizer.KEY`` (``controller.daemon.commands.STABILIZER_PARAMS``): from the stabilizer's YAML,
  then every ``stabilizer`` command with ``params`` the loop accepted.

A set is the command a client would send, submitted to the I/O server
(:class:`controller.daemon.io.server.LocalRequests`), so it goes through the same validation
(``set_gains``, ``stabilizer``'s ``params``), the same mailbox and the loop's cycle boundary:
the gains of one axis are ``set_gains {axis, kp, ki, kd}`` (the gains not set keep their value), the
stabilizer's keys ``stabilizer {enable: true, params}``, which the loop takes in HOLD only, where it
starts the stabilizer with them. The answer to a set holds the values as they are; once the loop
accepted the command the new values go to the parameters' subscribers; a refusal (by the
validator, the loop, or because the parameters are read-only) is a status message of level error
with its reason. Read-only unless ``io.live_view.allow_parameters`` is true.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from controller.daemon.commands import STABILIZER_PARAMS

ROBOT_DESCRIPTION = "/robot_description"
GAIN_KEYS = ("kp", "ki", "kd")
READ_ONLY = ("the live view's parameters are read-only: set io.live_view.allow_parameters: true in the "
             "daemon's configuration to tune from Foxglove")

Submit = Callable[[bytes, Callable[[bytes], None]], None]


class LiveParameters:
    """The parameter table (module docstring); ``submit`` hands a request to the I/O server and
    its reply to a callback; :attr:`publish` and :attr:`refuse` are bound to the Foxglove server."""

    def __init__(self, urdf: str, gains: Mapping[str, Sequence[float]], stabilizer: Mapping[str, float],
                 allow: bool, submit: Submit) -> None:
        self.allow, self._submit = allow, submit
        self._lock = threading.Lock()
        self._values: dict[str, float | str] = {ROBOT_DESCRIPTION: urdf}
        for axis, values in gains.items():
            self._values.update({f"gains.{axis}.{k}": float(v) for k, v in zip(GAIN_KEYS, values)})
        self._axes = tuple(gains)
        self._values.update({f"stabilizer.{k}": float(v) for k, v in stabilizer.items()})
        self.publish: Callable[[dict[str, float | str]], None] = lambda values: None
        self.refuse: Callable[[str], None] = lambda reason: None

    def get(self, names: Sequence[str]) -> dict[str, float | str]:
        """The values of ``names`` (all when empty); unknown names are left out."""
        with self._lock:
            return {n: self._values[n] for n in (names or self._values) if n in self._values}

    def set(self, changes: Mapping[str, Any]) -> dict[str, float | str]:
        """Submit the commands ``changes`` make (module docstring); the values as they are now."""
        if not self.allow:
            self.refuse(READ_ONLY)
            return self.get(list(changes))
        gains: dict[str, dict[str, Any]] = {}
        stabilizer: dict[str, Any] = {}
        for name, value in changes.items():
            kind, _, rest = name.partition(".")
            axis, _, key = rest.rpartition(".")
            if kind == "gains" and axis in self._axes and key in GAIN_KEYS:
                gains.setdefault(axis, {})[key] = value
            elif kind == "stabilizer" and rest in STABILIZER_PARAMS and name in self._values:
                stabilizer[rest] = value
            elif name == ROBOT_DESCRIPTION:
                self.refuse(f"{name} is read-only: it is the robot YAML's URDF")
            else:
                self.refuse(f"{name!r} is not a parameter of the live view (known: {ROBOT_DESCRIPTION}, "
                            f"gains.AXIS.kp|ki|kd for the axes {', '.join(self._axes)}, and "
                            f"{', '.join(n for n in self._values if n.startswith('stabilizer.')) or 'no stabilizer key'})")
        current = self.get([])
        for axis, changed in gains.items():
            args = {"axis": axis, **{k: current[f"gains.{axis}.{k}"] for k in GAIN_KEYS}, **changed}
            self._command("set_gains", args)
        if stabilizer:
            self._command("stabilizer", {"enable": True, "params": stabilizer})
        return self.get(list(changes))

    def _command(self, cmd: str, args: dict[str, Any]) -> None:
        try:
            raw = json.dumps({"cmd": cmd, "args": args}, allow_nan=False).encode()
        except (TypeError, ValueError):
            self.refuse(f"{cmd} refused: every value must be a finite number, got {args!r}")
            return

        def reply(data: bytes) -> None:
            answer = json.loads(data)
            if not answer["ok"]:
                self.refuse(f"{cmd} refused: {answer['error']['message']}")

        self._submit(raw, reply)

    def accepted(self, cmd: str, args: Mapping[str, Any]) -> None:
        """A command the loop accepted (any client's): the values it changed, then published."""
        if cmd == "set_gains":
            changed = {f"gains.{args['axis']}.{k}": float(args[k]) for k in GAIN_KEYS}
        elif cmd == "stabilizer" and args.get("params"):
            changed = {f"stabilizer.{k}": float(v) for k, v in args["params"].items()}
        else:
            return
        with self._lock:
            self._values.update(changed)
        self.publish(changed)
