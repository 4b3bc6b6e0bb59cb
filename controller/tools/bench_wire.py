"""`bipd bench wire`: the raw backend's timing on a veth pair, next to cyclictest.

For each node count (1, 8) and cycle time (2 ms, 1 ms), the controlled nodes answer from network
namespaces: ``--cn sim`` (default) the simulated drives (:mod:`drivers.sim.raw_server`, one Python
process for all of them) behind one veth pair; ``--cn oplk`` as many openPOWERLINK CNs
(:mod:`controller.tools.oplk`, C, real-time threads), each in its namespace on a veth whose near end
joins a bridge the managing node sends on. The managing node boots them and cycles for
``seconds`` at SCHED_FIFO ``priority`` while cyclictest
runs at the same period and priority. Reported: the PReq→PRes round trip (median, p99, p99.9,
max), the cycle's wake-up lateness (how late the SoC left against its schedule) p50/p99/p99.9 and
cyclictest's on the same machine in the same run (the ratio is the figure to compare across
machines, never an absolute), lost and late PRes, overruns. Needs root.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

import numpy as np
import yaml

from controller.tools.bench import cyclictest_command, parse_cyclictest
from controller.tools.oplk import OplkCn, build_cn, node_section
from controller.tools.veth import Veth, ip as _ip
from drivers.backends.raw import open_raw
from drivers.config import parse_bus_config
from drivers.powerlink.managing_node import BootTimeoutError

NODE_COUNTS = (1, 8)
PERIODS_S = (0.002, 0.001)
BOOT_TIMEOUT_S = 15.0


class Bridge:
    """openPOWERLINK CNs 1..``count`` in namespaces ``{prefix}c{k}``, their veths joined by bridge
    ``{prefix}br`` (the managing node's interface, ``mn``)."""

    def __init__(self, prefix: str, count: int, binary: Path, run_dir: Path) -> None:
        self.mn = f"{prefix}br"
        self.cns = [OplkCn(f"{prefix}c{k}", binary, k, run_dir) for k in range(1, count + 1)]

    def __enter__(self) -> Bridge:
        _ip("link", "add", self.mn, "type", "bridge")
        _ip("link", "set", self.mn, "up")
        for cn in self.cns:
            cn.start()
            _ip("link", "set", cn.interface, "master", self.mn)
        return self

    def __exit__(self, *exc) -> None:
        for cn in self.cns:
            cn.stop()
        subprocess.run(["ip", "link", "del", self.mn], capture_output=True)


def drives(nodes: int) -> list[dict]:
    """``nodes`` one-axis CiA 402 drives, node ids 1..nodes (what the simulated CNs play)."""
    return [{"node_id": n, "axes": [{"name": f"j{n}", "channel": 0}]} for n in range(1, nodes + 1)]


def bus_section(interface: str, nodes: list[dict], period: float) -> dict:
    """``nodes`` on ``interface``, one POWERLINK cycle per control period of ``period``, the PRes
    timeout sharing 80 % of the cycle among them; threshold 0: losses are counted, never acted on
    (a benchmark measures, it does not reset nodes)."""
    return {"backend": "raw", "interface": interface, "cycle_time_s": period, "control_period_s": period,
            "pres_timeout_s": 0.8 * period / len(nodes), "boot_timeout_s": BOOT_TIMEOUT_S, "threshold": 0,
            "nodes": nodes}


@contextmanager
def sim_server(veth: Veth, section: dict, priority: int, tmp: Path):
    """drivers.sim.raw_server in ``veth``'s namespace, serving ``section``'s nodes, until the block ends."""
    config_path = tmp / "bus.yaml"
    config_path.write_text(yaml.safe_dump({"bus": section}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    server = subprocess.Popen(["ip", "netns", "exec", veth.name, sys.executable, "-m", "drivers.sim.raw_server",
                               "--config", str(config_path), "--interface", veth.cn,
                               "--priority", str(max(priority - 1, 1))],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        server.stdout.readline()                      # "serving ..." once it listens
        yield
    finally:
        server.terminate()
        server.wait(10)


def _stats(values_ns: np.ndarray) -> dict[str, float | None]:
    if not len(values_ns):
        return {"p50_us": None, "p99_us": None, "p999_us": None, "max_us": None}
    us = values_ns / 1e3
    return {"p50_us": float(np.median(us)), "p99_us": float(np.percentile(us, 99)),
            "p999_us": float(np.percentile(us, 99.9)), "max_us": float(us.max())}


def measure(section: dict, seconds: float, priority: int, tmp: Path, say) -> dict:
    """One row: boot ``section``'s nodes, cycle ``seconds`` with cyclictest beside."""
    period, nodes = section["cycle_time_s"], len(section["nodes"])
    ct_json = tmp / "cyclictest.json"
    cyclic = None
    bus = open_raw(parse_bus_config(section))
    try:
        try:
            bus.boot()
        except BootTimeoutError as exc:
            say(f"{nodes} node(s) at {period * 1e3:g} ms: {exc}")
            return {"nodes": nodes, "period_s": period, "error": str(exc)}
        say(f"{nodes} node(s) at {period * 1e3:g} ms: booted, cycling {seconds:g} s")
        if shutil.which("cyclictest"):
            cyclic = subprocess.Popen(cyclictest_command(seconds, period, priority, (), ct_json),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        link = bus.link
        first_cycle, first_rt = link.cycles, link.round_trip_count
        for _ in range(round(seconds / period)):
            bus.exchange()
        timing = link.timing()
        cycles, answers = link.cycles - first_cycle, link.round_trip_count - first_rt
        records = bus.mn.records.values()
        row = {"nodes": nodes, "period_s": period, "cycles": cycles, "overruns": link.overruns,
               "pres_lost": sum(r.loss.cumulative for r in records),
               "pres_late": sum(r.late.cumulative for r in records),
               "round_trip": _stats(timing["round_trip_ns"][len(timing["round_trip_ns"]) - answers:]),
               "wakeup": _stats(timing["wakeup_ns"][-cycles:]), "cyclictest": None}
        if cyclic is not None:
            cyclic.communicate(timeout=seconds + 30)
            row["cyclictest"] = parse_cyclictest(ct_json) if cyclic.returncode == 0 else None
    finally:
        if cyclic is not None and cyclic.poll() is None:
            cyclic.kill()
        bus.close()
    ct = row["cyclictest"]
    row["ratio_wakeup_p999_vs_cyclictest"] = (row["wakeup"]["p999_us"] / max(ct["p999_us"], 1.0)
                                              if ct and ct["p999_us"] else None)
    return row


def run(seconds: float = 5.0, priority: int = 40, cn: str = "sim", progress=lambda msg: None) -> dict:
    """Every node count × period (module docstring); the MN's thread runs at SCHED_FIFO ``priority``."""
    if os.geteuid() != 0:
        raise PermissionError("bipd bench wire needs root (network namespaces, veth pairs, AF_PACKET)")
    before = os.sched_getscheduler(0), os.sched_getparam(0)
    rows = []
    prefix = f"bw{os.getpid() % 10_000}"
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        tmp = Path(tmp)
        if cn == "oplk":
            progress("building (or reusing) openPOWERLINK's CN, starting 8 in their namespaces")
            wire = stack.enter_context(Bridge(prefix, max(NODE_COUNTS), build_cn(), tmp))
        else:
            wire = stack.enter_context(Veth(prefix))
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        try:
            for count in NODE_COUNTS:
                for period in PERIODS_S:
                    t0 = time.monotonic()
                    nodes = [node_section(k) for k in range(1, count + 1)] if cn == "oplk" else drives(count)
                    section = bus_section(wire.mn, nodes, period)
                    with ExitStack() as server:
                        if cn == "sim":
                            server.enter_context(sim_server(wire, section, priority, tmp))
                        rows.append(measure(section, seconds, priority, tmp, progress))
                    progress(f"{count} node(s) at {period * 1e3:g} ms done in {time.monotonic() - t0:.1f} s")
        finally:
            os.sched_setscheduler(0, before[0], before[1])
    return {"seconds": seconds, "priority": priority, "cn": cn, "rows": rows,
            "cyclictest_note": None if shutil.which("cyclictest") else "cyclictest not found (Debian rt-tests)"}


def print_report(res: dict) -> None:
    who = "openPOWERLINK CNs, one namespace each" if res["cn"] == "oplk" else "simulated CNs in one namespace"
    print(f"bipd bench wire: raw backend on a veth, {who}, {res['seconds']:g} s per row, SCHED_FIFO {res['priority']}")
    print(f"{'nodes':>5} {'cycle':>6} | {'PReq->PRes µs p50':>17} {'p99':>7} {'p99.9':>7} {'max':>7} | "
          f"{'wake-up µs p50':>14} {'p99.9':>7} | {'cyclictest p99.9':>16} {'ratio':>6} | lost late overruns")
    for r in res["rows"]:
        if "error" in r:
            print(f"{r['nodes']:>5} {r['period_s'] * 1e3:>4g}ms | {r['error']}")
            continue
        rt, wk, ct = r["round_trip"], r["wakeup"], r["cyclictest"]

        def f(v):
            return "-" if v is None else f"{v:.1f}"
        ratio = r["ratio_wakeup_p999_vs_cyclictest"]
        print(f"{r['nodes']:>5} {r['period_s'] * 1e3:>4g}ms | {f(rt['p50_us']):>17} {f(rt['p99_us']):>7} "
              f"{f(rt['p999_us']):>7} {f(rt['max_us']):>7} | {f(wk['p50_us']):>14} {f(wk['p999_us']):>7} | "
              f"{f(ct['p999_us'] if ct else None):>16} {f(ratio):>6} | {r['pres_lost']:>4} {r['pres_late']:>4} "
              f"{r['overruns']:>8}")
    if res["cyclictest_note"]:
        print(f"  {res['cyclictest_note']}")
