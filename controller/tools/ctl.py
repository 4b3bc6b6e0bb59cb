"""`bipd ctl <cmd> [key=value ...]`: one command to the daemon.

Values are JSON when they parse as JSON (``q=[0,0.1,-0.3,0.2]``, ``enable=true``) and
plain strings otherwise (``trajectory=squat``). ``move_joints`` takes every joint
(``q=[...]``, the order of ``get_config``'s joints) or some by name
(``q='{"l_knee": -0.4}'``: the others keep their current reference). Exit status: 0 ok, 1 the daemon refused
the command, 2 bad usage, 3 no reply (after the lazy-pirate retries).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import zmq

from controller.daemon.commands import COMMANDS
from controller.tools.client import Client, ClientTimeout, CommandError
from controller.daemon.endpoints import ClientCurve, CurveConfigError

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_TIMEOUT = 0, 1, 2, 3


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
            out[key] = json.loads(text)
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
    p.add_argument("--server-key", metavar="FILE", help="CURVE: the daemon's public certificate (server.key)")
    p.add_argument("--client-cert", metavar="FILE", help="CURVE: this client's secret certificate (NAME.key_secret)")
    return p


def _print_result(result: dict[str, Any]) -> None:
    width = max((len(k) for k in result), default=0)
    for key, value in result.items():
        print(f"{key:>{width}}: {json.dumps(value) if isinstance(value, (dict, list)) else value}")


def main(argv: list[str] | None = None) -> int:
    """Run ``bipd ctl``; returns the exit status."""
    parser = build_parser()
    try:
        ns = parser.parse_args(argv)
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
        except CommandError as e:
            print(f"bipd ctl: {ns.cmd} failed: {e.code}: {e.message}", file=sys.stderr)
            return EXIT_ERROR
        except ClientTimeout as e:
            print(f"bipd ctl: {e}", file=sys.stderr)
            return EXIT_TIMEOUT
    if ns.json:
        print(json.dumps(result))
    else:
        _print_result(result)
    return EXIT_OK
