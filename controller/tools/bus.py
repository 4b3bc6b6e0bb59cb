"""``bipd bus``: commissioning a POWERLINK network on a real wire (the raw backend), as users of
EtherCAT/POWERLINK masters know it (``ethercat slaves``, ``ethercat upload``)::

    bipd bus scan  --interface IF [--nodes 1-239] [--json]
    bipd bus sdo   read|write --interface IF NODE INDEX SUB [VALUE] [--type u8|u16|...] [--json]
    bipd bus cycle --config BUS.yaml --interface IF [--period S] [--seconds S] [--json]

``scan`` asks every node id for its IdentResponse and lists who answered; ``sdo`` reads or writes
one object by DS 301 SDO before any boot (the nodes stay in PreOperational1); ``cycle`` boots the
declared nodes (identity check, configuration download, NMTResetConfiguration, Operational) and
cycles them without the control loop. A failure is one line naming node, object and reason; exit
status 2 for usage, 1 for a bus failure (docs/powerlink.md, "Raw Ethernet").
"""
from __future__ import annotations

import argparse
import json
import struct
import sys
import time
from collections.abc import Callable

import numpy as np

from controller.daemon.loop.timing import setup_realtime
from drivers.backends.raw import RawLink, open_raw
from drivers.config import BusConfigError, parse_bus_config
from drivers.hal import BusError
from drivers.powerlink.managing_node import BootTimeoutError, service_cycle
from drivers.powerlink.nmt import NmtState
from drivers.powerlink.scan import scan
from drivers.service_channel import (DOMAIN, FORMATS, REAL32, REAL64, SDO_READ, SDO_WRITE, TYPE_CODES, TYPE_NAMES,
                                     VISIBLE_STRING, TypeMismatch, abort_text)
from models import ConfigError
from models.common.validation import read_yaml

SCAN_CYCLE_S = 0.001              # one IdentRequest per cycle: 239 node ids, two passes, in about half a second
SDO_CYCLE_S = 0.001
LAST_NODE = 239


class UsageError(ValueError):
    """Arguments the command cannot run with (exit status 2)."""


def node_range(text: str) -> list[int]:
    """``1-239``, ``3``, ``1,4,7-9`` as node ids (1..239)."""
    nodes: list[int] = []
    try:
        for part in text.split(","):
            low, _, high = part.partition("-")
            nodes.extend(range(int(low), int(high or low) + 1))
    except ValueError:
        raise UsageError(f"--nodes {text!r} is not a list of node ids and ranges such as 1-239 or 1,4,7-9") from None
    bad = [n for n in nodes if not 1 <= n <= LAST_NODE]
    if bad or not nodes:
        raise UsageError(f"--nodes {text!r}: node ids are 1..{LAST_NODE}")
    return sorted(set(nodes))


def _number(text: str, what: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise UsageError(f"{what} {text!r} is not an integer (decimal or 0x hex)") from None


def parse_value(data_type: int, text: str):
    """A command-line VALUE as ``data_type`` takes it."""
    if data_type == VISIBLE_STRING:
        return text
    if data_type == DOMAIN:
        try:
            return bytes.fromhex(text)
        except ValueError:
            raise UsageError(f"VALUE {text!r} is not hex bytes (a domain)") from None
    if data_type in (REAL32, REAL64):
        try:
            return float(text)
        except ValueError:
            raise UsageError(f"VALUE {text!r} is not a number") from None
    return _number(text, "VALUE")


def _json_value(value):
    return value.hex() if isinstance(value, bytes) else value


# -- scan -------------------------------------------------------------------------------------------
def cmd_scan(args: argparse.Namespace, say: Callable[[str], None]) -> int:
    nodes = node_range(args.nodes)
    link = RawLink(args.interface, SCAN_CYCLE_S, 1, 1)
    try:
        found, malformed = scan(link, nodes, progress=say)
    finally:
        link.close()
    rows = [{"node": n, "nmt_state": NmtState(r.nmt_status).name, "device_type": r.device_type,
             "vendor_id": r.vendor_id, "product_code": r.product_code, "revision": r.revision, "serial": r.serial,
             "mac": r.mac, "host_name": r.host_name} for n, r in found.items()]
    if args.json:
        print(json.dumps({"interface": args.interface, "nodes": rows, "malformed": list(malformed.values())}))
    else:
        print(f"{len(rows)} node(s) answered on {args.interface}")
        if rows:
            print(f"{'node':>4}  {'NMT state':<20} {'device':>10} {'vendor':>10} {'product':>10} {'revision':>10} "
                  f"{'serial':>10}  MAC")
        for r in rows:
            print(f"{r['node']:>4}  {r['nmt_state']:<20} 0x{r['device_type']:08X} 0x{r['vendor_id']:08X} "
                  f"0x{r['product_code']:08X} 0x{r['revision']:08X} 0x{r['serial']:08X}  {r['mac']}")
        for text in malformed.values():
            print(text)
    return 1 if malformed else 0


# -- sdo --------------------------------------------------------------------------------------------
def cmd_sdo(args: argparse.Namespace, say: Callable[[str], None]) -> int:
    node = _number(args.node, "NODE")
    if not 1 <= node <= LAST_NODE:
        raise UsageError(f"NODE {node} is outside 1..{LAST_NODE}")
    index, subindex = _number(args.index, "INDEX"), _number(args.subindex, "SUB")
    if not (0 <= index <= 0xFFFF and 0 <= subindex <= 0xFF):
        raise UsageError(f"INDEX 0x{index:X}/SUB {subindex}: index 0..0xFFFF, subindex 0..255")
    data_type = TYPE_CODES[args.type]
    value = None
    if args.action == "write":
        if args.value is None:
            raise UsageError("sdo write needs a VALUE")
        value = parse_value(data_type, args.value)
    elif args.value is not None:
        raise UsageError("sdo read takes no VALUE")
    bus = open_raw(parse_bus_config({"backend": "raw", "interface": args.interface, "cycle_time_s": SDO_CYCLE_S,
                                     "control_period_s": SDO_CYCLE_S, "pres_timeout_s": SDO_CYCLE_S / 2,
                                     "nodes": [{"node_id": node, "profile": "io"}]}))
    try:
        try:
            req = bus.mn.sdo(node, SDO_WRITE if args.action == "write" else SDO_READ, index, subindex, value, data_type)
        except TypeMismatch as exc:
            raise UsageError(f"VALUE {args.value!r} as {args.type}: {exc}") from None
        while not req.done:
            service_cycle(bus.mn)
    finally:
        bus.close()
    if req.abort_code:
        print(f"bipd bus sdo: {req.describe()} aborted: {abort_text(req.abort_code)}", file=sys.stderr)
        return 1
    result = {"node": node, "index": index, "subindex": subindex, "type": args.type,
              "value": _json_value(req.value), "action": args.action}
    if args.json:
        print(json.dumps(result))
    else:
        shown = f"0x{req.value:X} ({req.value})" if isinstance(req.value, int) else _json_value(req.value)
        print(f"node {node} 0x{index:04X}/{subindex} {args.type}: {shown}" + (" written" if args.action == "write"
                                                                              else ""))
    return 0


# -- cycle ------------------------------------------------------------------------------------------
def _bus_section(path: str, interface: str, period: float | None) -> dict:
    doc = read_yaml(path)
    section = dict(doc.get("bus", doc)) if isinstance(doc, dict) else doc
    if not isinstance(section, dict):
        raise UsageError(f"{path} holds no bus: mapping")
    section["backend"] = "raw"
    section["interface"] = interface
    if period is not None:
        section["cycle_time_s"] = section["control_period_s"] = period
        section.setdefault("pres_timeout_s", period * 0.75)
        if section["pres_timeout_s"] >= period:
            section["pres_timeout_s"] = period * 0.75
    return section


def _inputs(node, payload: np.ndarray) -> dict[str, object]:
    """An io node's PRes payload as its mapped objects' values, by ``0xINDEX/SUB``."""
    values, at = {}, 0
    for obj in node.inputs:
        values[f"0x{obj.index:04X}/{obj.subindex}"] = struct.unpack_from(FORMATS[obj.data_type], payload, at)[0]
        at += obj.size
    return values


def cmd_cycle(args: argparse.Namespace, say: Callable[[str], None]) -> int:
    if args.seconds <= 0 or (args.period is not None and not 1e-4 <= args.period <= 0.1):
        raise UsageError("--seconds must be > 0 and --period in [0.0001, 0.1] s")
    if not 0 <= args.priority <= 99:
        raise UsageError(f"--priority must be 0..99, got {args.priority}")
    config = parse_bus_config(_bus_section(args.config, args.interface, args.period))
    if args.priority:
        for warning in setup_realtime(args.priority, None, False):
            say(warning)
    bus = open_raw(config)
    try:
        t0 = time.monotonic()
        say(f"booting {len(config.nodes)} node(s) on {args.interface} at {config.cycle_time_s * 1e3:g} ms")
        bus.boot()
        boot_s = time.monotonic() - t0
        mn = bus.mn
        reached = {n: mn.records[n].nmt.name for n in mn.records}
        say(f"Operational after {boot_s:.2f} s; cycling {args.seconds:g} s")
        periods = max(1, round(args.seconds / config.control_period_s))
        seen = {n.node_id: {} for n in config.nodes if n.profile == "io"}
        for k in range(periods):
            bus.exchange()
            for node in config.nodes:
                if node.profile == "io" and node.inputs and bus.node_operational(node.node_id):
                    for key, value in _inputs(node, mn.records[node.node_id].tpdo).items():
                        low, high = seen[node.node_id].get(key, (value, value))
                        seen[node.node_id][key] = (min(low, value), max(high, value))
            if k and k % round(1.0 / config.control_period_s) == 0:
                say(f"{k * config.control_period_s:.0f} s")
        timing = bus.link.timing()
        rows = []
        for node in config.nodes:
            rec = mn.records[node.node_id]
            rt = timing["round_trip_ns"][timing["round_trip_node"] == node.node_id] / 1e3
            row = {"node": node.node_id, "profile": node.profile, "boot_state": reached[node.node_id],
                   "state": rec.nmt.name, "device_type": rec.device_type, "pres_lost": rec.loss.cumulative,
                   "pres_late": rec.late.cumulative, "pres_malformed": rec.malformed.cumulative,
                   "round_trip_us": ({"median": float(np.median(rt)), "p99": float(np.percentile(rt, 99)),
                                      "max": float(rt.max())} if len(rt) else None)}
            if node.profile == "io":
                row["inputs"] = {k: {"min": lo, "max": hi} for k, (lo, hi) in seen[node.node_id].items()}
            else:
                row["inputs"] = {a.name: {"position": float(bus.position[a.index]),
                                          "statusword": int(bus.statusword[a.index])} for a in node.axes}
            rows.append(row)
        wake = timing["wakeup_ns"] / 1e3
        result = {"interface": args.interface, "cycle_time_s": config.cycle_time_s, "boot_s": boot_s,
                  "cycles": bus.link.cycles, "overruns": bus.link.overruns,
                  "wakeup_us": {"p50": float(np.median(wake)), "p99.9": float(np.percentile(wake, 99.9)),
                                "max": float(wake.max())},
                  "events": [f"node {e.node_id}: {e.text}" for e in bus.events if e.node_id],
                  "nodes": rows}
    finally:
        bus.close()
    if args.json:
        print(json.dumps(result))
    else:
        _print_cycle(result)
    return 0 if all(r["state"] == "OPERATIONAL" for r in rows) else 1


def _print_cycle(res: dict) -> None:
    print(f"{res['cycles']} cycles at {res['cycle_time_s'] * 1e3:g} ms on {res['interface']} (boot {res['boot_s']:.2f} s, "
          f"overruns {res['overruns']}, wake-up p50 {res['wakeup_us']['p50']:.1f} µs / p99.9 "
          f"{res['wakeup_us']['p99.9']:.1f} µs)")
    for r in res["nodes"]:
        rt = r["round_trip_us"]
        trip = (f"PReq->PRes median {rt['median']:.1f} µs, p99 {rt['p99']:.1f} µs, max {rt['max']:.1f} µs"
                if rt else "no PRes")
        print(f"node {r['node']} ({r['profile']}, device 0x{r['device_type']:08X}): booted {r['boot_state']}, now "
              f"{r['state']}; PRes lost {r['pres_lost']}, late {r['pres_late']}, malformed {r['pres_malformed']}; "
              f"{trip}")
        for key, value in r["inputs"].items():
            print(f"    {key}: {value}")
    for text in res["events"]:
        print(f"  event: {text}")


# -- entry point ------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bipd bus", description="Commission a POWERLINK network on a real "
                                "Ethernet wire (raw backend; root or CAP_NET_RAW).")
    sub = p.add_subparsers(dest="what", required=True, metavar="COMMAND")
    s = sub.add_parser("scan", help="the nodes that answer an IdentRequest, with their identity")
    s.add_argument("--interface", required=True, help="Ethernet interface the nodes are on")
    s.add_argument("--nodes", default=f"1-{LAST_NODE}", help=f"node ids to ask (default 1-{LAST_NODE}; e.g. 1,4,7-9)")
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.set_defaults(run=cmd_scan)
    d = sub.add_parser("sdo", help="read or write one object by SDO (the node stays in PreOperational1)")
    d.add_argument("action", choices=("read", "write"))
    d.add_argument("--interface", required=True, help="Ethernet interface the node is on")
    d.add_argument("node", metavar="NODE")
    d.add_argument("index", metavar="INDEX", help="object index, e.g. 0x1018")
    d.add_argument("subindex", metavar="SUB")
    d.add_argument("value", metavar="VALUE", nargs="?", help="write: the value (hex bytes for a domain)")
    d.add_argument("--type", default="u32", choices=tuple(TYPE_NAMES.values()), help="data type (default u32)")
    d.add_argument("--json", action="store_true", help="print one JSON object")
    d.set_defaults(run=cmd_sdo)
    c = sub.add_parser("cycle", help="boot the declared nodes and cycle them without the control loop")
    c.add_argument("--config", required=True, help="YAML with a bus: section (its nodes are booted)")
    c.add_argument("--interface", required=True, help="Ethernet interface the nodes are on")
    c.add_argument("--period", type=float, help="cycle time in s (default: the YAML's bus.cycle_time_s)")
    c.add_argument("--seconds", type=float, default=10.0, help="how long to cycle (default 10)")
    c.add_argument("--priority", type=int, default=0, help="SCHED_FIFO priority 1..99 while cycling (default 0: none)")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.set_defaults(run=cmd_cycle)
    return p


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)

    def say(msg: str) -> None:
        if not getattr(args, "json", False):
            print(f"[bus {args.what}] {msg}", file=sys.stderr, flush=True)

    try:
        return args.run(args, say)
    except (UsageError, BusConfigError, ConfigError) as exc:
        print(f"bipd bus {args.what}: error: {exc}", file=sys.stderr)
        return 2
    except (BootTimeoutError, BusError) as exc:
        print(f"bipd bus {args.what}: {exc}", file=sys.stderr)
        return 1
