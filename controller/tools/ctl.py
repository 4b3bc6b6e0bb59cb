"""`bipd ctl <cmd> [key=value ...] [options]`: one command to the daemon.

Values are JSON when they parse as JSON (``q=[0,0.1,-0.3,0.2]``, ``enable=true``; a key given
twice in one object is refused, as the daemon does) and plain strings otherwise
(``trajectory=squat``). ``move_joints`` takes every joint (``q=[...]``, the order of
``get_config``'s joints) or some by name (``q='{"l_knee": -0.4}'``: the others keep their current
reference). Options go anywhere. ``--wait`` follows what the command started (a motion, a
stabilization, the enabling of the drives) to its end, keeping the watchdog fed and printing
progress. ``status`` prints the joints by name in degrees (``--json``: the reply as it is, SI).
Exit status: 0 ok, 1 the daemon refused the command, 2 bad usage, 3 no reply (after the
lazy-pirate retries), 4 the motion waited for ended otherwise than at its end (the state and
reason are printed), 130 interrupted (the motion is stopped first).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Any

import zmq

from controller.daemon.arguments import Reject
from controller.daemon.commands import COMMANDS
from controller.daemon.endpoints import ClientCurve, CurveConfigError
from controller.daemon.io.protocol import unique_keys
from controller.tools.client import BUSY, Client, ClientTimeout, CommandError, MotionError

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_TIMEOUT, EXIT_MOTION, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130
PROGRESS_S = 0.5
"""Wall seconds between two progress lines of ``--wait``."""


class _UsageError(Exception):
    pass


def _parse_args(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise _UsageError(f"argument {pair!r} is not key=value")
        if key in out:
            raise _UsageError(f"argument {key!r} is given twice")
        try:
            out[key] = json.loads(text, object_pairs_hook=unique_keys)
        except Reject as e:
            raise _UsageError(f"argument {key}: {e.message}") from None
        except ValueError:
            out[key] = text
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bipd ctl", description="Send one command to the bipd daemon.",
        epilog="examples: bipd ctl move_joints q=[0,0.1,-0.15,0.1] duration=2;  "
               "bipd ctl move_joints q='{\"l_knee\": -0.4}' duration=2 (joints by name, the others "
               "keep their reference; bipd ctl get_config lists the joints)")
    p.add_argument("cmd", help="one of: " + "; ".join(
        f"{c.name} {' '.join(a.name + '=' if a.required else f'[{a.name}=]' for a in c.args)}".rstrip()
        for c in COMMANDS) + " (docs/commands.md)")
    p.add_argument("args", nargs="*", metavar="key=value", help="command arguments; values parsed as JSON")
    p.add_argument("--endpoint", default="tcp://127.0.0.1:5555", help="command socket (default %(default)s)")
    p.add_argument("--timeout", type=float, default=1.0, help="seconds per attempt (default %(default)s)")
    p.add_argument("--retries", type=int, default=3, help="attempts before giving up (default %(default)s)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument("--wait", action="store_true", help="follow the motion the command starts to its end, "
                   "feeding the watchdog; exit 0 only if it reached its end (TRAJECTORY_DONE)")
    p.add_argument("--server-key", metavar="FILE", help="CURVE: the daemon's public certificate (server.key)")
    p.add_argument("--client-cert", metavar="FILE", help="CURVE: this client's secret certificate (NAME.key_secret)")
    return p


def _print_result(result: dict[str, Any]) -> None:
    width = max((len(k) for k in result), default=0)
    for key, value in result.items():
        print(f"{key:>{width}}: {json.dumps(value) if isinstance(value, (dict, list)) else value}")


def _deg(x: float | None, unit: str = "°") -> str:
    """An angle in rad as tidy degrees (``-0.00`` and ``1e-25`` print as ``0.00``)."""
    return "—" if x is None else f"{round(math.degrees(x), 2) + 0.0:.2f}{unit}"


def _transition(tr: dict[str, Any] | None) -> str:
    return "—" if not tr else f"{tr.get('from_state')} -> {tr.get('to_state')} ({tr.get('reason')}, cycle {tr.get('cycle')})"


def bus_lines(bus: dict[str, Any] | None) -> list[str]:
    """The bus' health (``status``'s ``bus``, drivers.health.describe) for people: one line per thing
    that is not zero (PRes lost, PRes late, setpoint saturations, the last SDO abort, the last node error)."""
    if not bus:
        return []
    lines = []
    for key, label in (("pres_lost", "PRes lost"), ("pres_late", "PRes late")):
        if bus[key]:
            lines.append(f"{label}: " + ", ".join(f"node {n} {c}" for n, c in bus[key].items()))
    if bus["saturations"]:
        lines.append("setpoint saturations: " + ", ".join(f"{a} {c}" for a, c in bus["saturations"].items()))
    abort = bus["last_sdo_abort"]
    if abort:
        lines.append(f"last SDO abort: node {abort['node']} {abort['access']} {abort['object']}: "
                     f"0x{abort['code']:08X} {abort['name']}")
    error = bus["last_node_error"]
    if error:
        lines.append(f"last node error: node {error['node']} 0x{error['code']:04X} "
                     f"({'active' if error['active'] else 'history'}, {error['profile']}, info {error['info']})")
    return lines


def _print_status(st: dict[str, Any]) -> None:
    """``status`` for people: the state, the last transition, faults, the bus' troubles and each joint by name
    in degrees."""
    t = "—" if st.get("t") is None else f"{st['t']:.3f} s"
    print(f"state: {st['state']}   t: {t}   cycle: {st['cycle']}" + ("   (stepped)" if st.get("stepped") else ""))
    print(f"last transition: {_transition(st.get('last_transition'))}")
    if st.get("fault_name"):
        print(f"fault: {st['fault_name']} {st.get('fault_code') or ''} on {st.get('fault_joint') or st.get('fault_axis')}: "
              f"{st.get('fault_detail')}")
    for key in ("loop_exited", "shutdown_requested"):
        if st.get(key):
            print(f"{key}: yes" + (f" (exit {st.get('exit_code')}: {st.get('loop_error')})" if key == "loop_exited" else ""))
    for line in bus_lines(st.get("bus")):
        print(line)
    names = st.get("config", {}).get("joints", [])
    rows = [(n, *(st.get(k) and st[k][i] for k in ("q", "q_ref", "qd"))) for i, n in enumerate(names)]
    if rows and st.get("q") is not None:
        width = max(len(n) for n in names)
        print(f"{'joint':<{width}}  {'q':>9}  {'q_ref':>9}  {'qd':>11}")
        for n, q, q_ref, qd in rows:
            print(f"{n:<{width}}  {_deg(q):>9}  {_deg(q_ref):>9}  {_deg(qd, '°/s'):>11}")


class _Progress:
    """``--wait``'s progress lines: the state, the loop's time and the joints that moved, in degrees."""

    def __init__(self) -> None:
        self.start: list[float] | None = None
        self.next = 0.0

    def __call__(self, st: dict[str, Any]) -> None:
        q_ref, names = st.get("q_ref"), st.get("config", {}).get("joints", [])
        if q_ref is None or time.monotonic() < self.next:
            return
        self.next = time.monotonic() + PROGRESS_S
        self.start = self.start or q_ref
        moving = [f"{n} {_deg(q)}" for n, q, q0 in zip(names, st["q"], self.start)
                  if q is not None and q0 is not None and abs(q - q0) > 1e-4]
        print(f"  {st['state']:<11} t={st['t']:.2f} s  " + "  ".join(moving), flush=True)


def _follow(client: Client, cmd: str, result: dict[str, Any]) -> int:
    """``--wait``: follow what ``cmd`` started to its end (module docstring); the exit status."""
    try:
        if cmd == "enable":
            final = client.wait_state("HOLD", "FAULT", "ESTOP")
            if final["state"] != "HOLD":
                raise MotionError(final["state"], str((final.get("last_transition") or {}).get("reason")), final)
        elif result.get("state") in BUSY:
            final = client.wait_motion(progress=_Progress())
        else:
            final = client.status()
    except MotionError as e:
        print(f"bipd ctl: {cmd}: {e}", file=sys.stderr)
        return EXIT_MOTION
    except KeyboardInterrupt:
        print(f"bipd ctl: interrupted: stopping the motion ({client.call('stop')['state']})", file=sys.stderr)
        return EXIT_INTERRUPTED
    last = final.get("last_transition") or {}
    print(f"done: {final['state']} ({last.get('reason')})")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """Run ``bipd ctl``; returns the exit status."""
    parser = build_parser()
    try:
        ns = parser.parse_intermixed_args(argv)
        args = _parse_args(ns.args)
        if ns.timeout <= 0 or ns.retries < 1:
            raise _UsageError("--timeout must be positive and --retries at least 1")
        if (ns.server_key is None) != (ns.client_cert is None):
            raise _UsageError("CURVE needs both --server-key and --client-cert")
        curve = ClientCurve.from_files(ns.server_key, ns.client_cert) if ns.server_key else None
    except SystemExit as e:            # argparse: --help (0) or bad usage (2)
        return EXIT_OK if e.code == 0 else EXIT_USAGE
    except (_UsageError, CurveConfigError) as e:
        print(f"bipd ctl: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        client = Client(ns.endpoint, timeout_s=ns.timeout, retries=ns.retries, curve=curve)
    except zmq.ZMQError as e:
        print(f"bipd ctl: error: cannot connect to {ns.endpoint!r}: {e}", file=sys.stderr)
        return EXIT_USAGE
    with client:
        try:
            result = client.call(ns.cmd, **args)
            if ns.json:
                print(json.dumps(result))
            elif ns.cmd == "status":
                _print_status(result)
            else:
                _print_result(result)
            return _follow(client, ns.cmd, result) if ns.wait else EXIT_OK
        except CommandError as e:
            print(f"bipd ctl: {ns.cmd} failed: {e.code}: {e.message}", file=sys.stderr)
            return EXIT_ERROR
        except ClientTimeout as e:
            print(f"bipd ctl: {e}", file=sys.stderr)
            return EXIT_TIMEOUT
