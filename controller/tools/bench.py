"""`bipd bench loop`: the daemon in real time under load, next to cyclictest.

The daemon (``bipd run``, the sim backend, its own processes and priorities) runs the
thesis' stabilizer experiment: enable, stance, stabilizer on, the platform tilting
0 -> (10°, 20°) -> 0 by 7 s quintics, over and over; a robot without a stabilizer (BIP 2000)
moves every joint back and forth instead (±10 % of its range about the middle, 2 s quintics); with a
``gait`` file, BIP 2000 on the ground (its plant's floor) walks it under the whole-robot stabilizer
(``run trajectory=FILE``, ``stabilizer enable=true`` during the approach; the feet room's compliance
and edge watch run with it), played again each time it ends (stabilized walking, docs/walking.md).
``period`` (e.g. 0.0004: one bus cycle per control cycle) overrides the loop's and the bus'
control period. Meanwhile a client sends
``rate`` requests per second (status and ping, lazy-pirate) and a subscriber reads the
telemetry. cyclictest (Debian rt-tests) runs at the same time, period and priority.
Reported: the loop's wake-up latency p50 / p99 / p99.9 / max (whole run, 1 µs bins),
overruns and missed cycles, per-task net times, cyclictest's same percentiles, the
ratios (targets: p99 <= 1, p99.9 <= 2), and the per-cycle compute against the thesis'
273 µs (B&R X20CP1586, stabilizer on the tilt bench), the models task against its 161 µs
(FGM + IDM of the whole robot, walking playback). Then, in process and in lock-step
(controller.tools.loop_profile), the loop's compute per cycle against the sum of the kernels it calls
(target <= COMPUTE_VS_KERNELS) and its Python -> Numba dispatches per cycle.
"""
from __future__ import annotations

import json
import math
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

import yaml

from controller.tools.loop_profile import profile_loop
from controller.tools.ports import free_port
from models import ConfigError
from models.common.validation import read_yaml

WALK_PROFILE_CYCLES = 500              # per pass: both passes within the 2-step gait's walk at 2 ms
WALK_STABILIZER = Path(__file__).resolve().parents[2] / "deploy" / "robots" / "bip2000_stabilizer.yaml"
THESIS_STABILIZER_AVG_US = 273.0
THESIS_WALK_MODELS_AVG_US = 161.0      # thesis §2.6.2: FGM + IDM, walking playback, per 2 ms task
MOVE_S = 2.0                           # the joint moves' duration (no stabilizer)
STANCE = [0.0, 0.25, -0.5, 0.25]       # the bench leg's stance before the stabilizer
COMPUTE_TASKS = ("bus_read", "models", "reference", "axes", "telemetry")
COMPUTE_VS_KERNELS = 3.0               # target: the loop's compute per cycle at most 3x its kernels' time


def _percentiles(hist: dict[int, int]) -> dict[str, float | None]:
    total = sum(hist.values())
    if not total:
        return {"p50_us": None, "p99_us": None, "p999_us": None, "max_us": None}
    out, cum = {}, 0
    targets = [("p50_us", 0.5), ("p99_us", 0.99), ("p999_us", 0.999)]
    for us in sorted(hist):
        cum += hist[us]
        while targets and cum >= targets[0][1] * total:
            out[targets.pop(0)[0]] = float(us)
    out["max_us"] = float(max(hist))
    return out


def cyclictest_command(seconds: float, period: float, priority: int, cpus: tuple[int, ...], json_path: Path) -> list[str]:
    cmd = ["cyclictest", "-m", "-q", "-p", str(max(priority, 1)), "-i", str(int(round(period * 1e6))),
           "-D", f"{int(math.ceil(seconds))}s", "-h", "20000", f"--json={json_path}"]
    if cpus:
        cmd += ["-a", ",".join(map(str, cpus))]
    return cmd


def parse_cyclictest(json_path: Path) -> dict:
    doc = json.loads(json_path.read_text())
    thread = doc["thread"]["0"]
    hist = {int(k): int(v) for k, v in thread["histogram"].items()}
    res = _percentiles(hist)
    res["max_us"] = float(thread.get("max", res["max_us"] or 0))
    res["cycles"] = int(thread.get("cycles", sum(hist.values())))
    return res


class _Load:
    """A client at ``rate`` requests/s and a telemetry subscriber, in threads."""

    def __init__(self, command: str, telemetry: str, rate: float) -> None:
        import zmq

        from controller.tools.client import Client

        self.client = Client(command, timeout_s=1.0, retries=3)
        self.sub = zmq.Context.instance().socket(zmq.SUB)
        self.sub.setsockopt(zmq.SUBSCRIBE, b"")
        self.sub.connect(telemetry)
        self.rate = rate
        self.sent = self.answered = self.errors = self.frames = 0
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._requests, daemon=True),
                        threading.Thread(target=self._frames, daemon=True)]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def call(self, cmd: str, **args):
        with self.lock:
            return self.client.call(cmd, **args)

    def _requests(self) -> None:
        period = 1.0 / self.rate
        nxt = time.monotonic()
        k = 0
        while not self.stop.is_set():
            nxt += period
            try:
                self.call("status" if k % 2 else "ping")
                self.answered += 1
            except Exception:
                self.errors += 1
            self.sent += 1
            k += 1
            delay = nxt - time.monotonic()
            if delay > 0:
                time.sleep(delay)

    def _frames(self) -> None:
        while not self.stop.is_set():
            if self.sub.poll(100):
                self.sub.recv_multipart()
                self.frames += 1

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            if t.is_alive():
                t.join(5)
        self.sub.close(0)
        self.client.close()


def _wait_state(load: _Load, state: str, timeout: float) -> None:
    """Poll status until ``state`` (the daemon may still be starting: no reply yet)."""
    from controller.tools.client import ClientTimeout

    end = time.monotonic() + timeout
    while True:
        try:
            if load.call("status")["state"] == state:
                return
        except ClientTimeout:
            pass
        if time.monotonic() > end:
            raise TimeoutError(f"the daemon did not reach {state} within {timeout:.0f} s")
        time.sleep(0.02)


def _postures(load: _Load) -> list[list[float]]:
    """Two postures ±10 % of every joint's range about its middle (get_config's limits)."""
    c = load.call("get_config")
    mid = [(lo + hi) / 2 for lo, hi in zip(c["qmin"], c["qmax"])]
    half = [0.1 * (hi - lo) for lo, hi in zip(c["qmin"], c["qmax"])]
    return [[m + s * h for m, h in zip(mid, half)] for s in (1.0, -1.0)]


def _walk_stabilizer(doc: dict, gait: Path, period: float | None, tmp: Path) -> None:
    """``doc`` made a stabilized walk of ``gait``: on the ground, the file's folder the trajectories', the
    whole-robot stabilizer (WALK_STABILIZER) at the loop's period (a copy in ``tmp`` when ``period`` is another)."""
    doc["control"]["support"] = "ground"
    doc.setdefault("io", {})["trajectory_dir"] = str(gait.resolve().parent)
    stab = read_yaml(WALK_STABILIZER)
    stab["robot"] = str((WALK_STABILIZER.parent / stab["robot"]).resolve())
    if period is not None:
        stab["period"] = period
    path = tmp / "stabilizer.yaml"
    path.write_text(yaml.safe_dump(stab))
    doc["stabilizer"] = str(path)


def _walk(load: "_Load", gait: Path) -> None:
    """The gait again under the stabilizer (module docstring)."""
    load.call("run", trajectory=str(gait.resolve()))
    load.call("stabilizer", enable=True)


def run(config: str | Path, seconds: float = 60.0, rate: float = 200.0,
        progress: Callable[[str], None] | None = None, period: float | None = None,
        gait: Path | None = None) -> dict:
    from controller.tools.client import CommandError

    say = progress or (lambda _m: None)
    doc = read_yaml(config)
    base = Path(config).resolve().parent
    for key in ("robot", "stabilizer"):
        if doc.get(key):
            doc[key] = str((base / doc[key]).resolve())
    walking = gait is not None
    tmp_dir = tempfile.TemporaryDirectory(prefix="bipd-bench-")
    if walking:
        _walk_stabilizer(doc, Path(gait), period, Path(tmp_dir.name))
    cmd_ep, tel_ep = f"tcp://127.0.0.1:{free_port()}", f"tcp://127.0.0.1:{free_port()}"
    doc.setdefault("io", {}).update(command=cmd_ep, telemetry=tel_ep, log_dir=None)
    doc.setdefault("loop", {})["lockstep"] = False
    doc["bus"]["backend"] = "sim"
    stabilize = bool(doc.get("stabilizer")) and not walking
    if period is not None and stabilize and period != float(doc["loop"].get("period_s", 0.002)):
        raise ConfigError(str(config), "stabilizer", f"--period {period:g} s: the stabilizer YAML fixes its own "
                          "period (the loop's); bench another period on a config without a stabilizer")
    if period is not None:
        doc["loop"]["period_s"] = doc["bus"]["control_period_s"] = period
    loop_cfg = doc["loop"]
    period = float(loop_cfg.get("period_s", 0.002))
    priority = int(loop_cfg.get("priority", 80))
    cpus = tuple(loop_cfg.get("cpus") or ())
    with tmp_dir as tmp:
        cfg_path = Path(tmp) / "bipd.yaml"
        cfg_path.write_text(yaml.safe_dump(doc))
        say("starting the daemon (sim backend, real time)")
        daemon = subprocess.Popen([sys.executable, "-m", "controller.cli", "run", "--config", str(cfg_path)],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        load = None
        cyclic = None
        try:
            load = _Load(cmd_ep, tel_ep, rate)
            _wait_state(load, "DISABLED", 120.0)
            load.call("enable")
            _wait_state(load, "HOLD", 10.0)
            postures = [STANCE] if stabilize or walking else _postures(load)
            if walking:
                _walk(load, Path(gait))
            else:
                load.call("move_joints", q=postures[0], duration=MOVE_S)
                _wait_state(load, "HOLD", 10.0)
            if stabilize:
                load.call("stabilizer", enable=True)
            load.start()
            ct_json = Path(tmp) / "cyclictest.json"
            if shutil.which("cyclictest"):
                cyclic = subprocess.Popen(cyclictest_command(seconds, period, priority, cpus, ct_json),
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            work = (f"stabilized walking of {Path(gait).name}, again as it ends" if walking else
                    "stabilizer on, platform tilting (10°, 20°) and back" if stabilize else
                    f"every joint moving ±10 % of its range, {MOVE_S:g} s quintics")
            say(f"measuring for {seconds:g} s at {period * 1e3:g} ms: {work}, {rate:g} requests/s, a telemetry "
                "subscriber" + (", cyclictest beside" if cyclic else ""))
            t0 = time.monotonic()
            up = True
            next_tilt = t0
            next_say = t0 + 5.0
            while time.monotonic() - t0 < seconds:
                now = time.monotonic()
                if walking:
                    if now >= next_tilt and load.call("status")["state"] == "HOLD":
                        _walk(load, Path(gait))
                    next_tilt = now + 0.5
                elif now >= next_tilt and stabilize:
                    a, b = (math.radians(10.0), math.radians(20.0)) if up else (0.0, 0.0)
                    load.call("platform", alpha=a, beta=b, duration=7.0)
                    up = not up
                    next_tilt = now + 7.5
                elif now >= next_tilt:
                    try:                        # refused (not_allowed) while the last move runs late
                        load.call("move_joints", q=postures[1 if up else 0], duration=MOVE_S)
                        up = not up
                    except CommandError:
                        pass
                    next_tilt = now + MOVE_S + 0.5
                if now >= next_say:
                    say(f"{now - t0:5.0f} / {seconds:g} s, {load.answered} requests answered, "
                        f"{load.frames} telemetry frames")
                    next_say += 5.0
                time.sleep(0.05)
            stats = load.call("stats")
            state = load.call("status")["state"]
        finally:
            if load is not None:
                load.close()
            if daemon.poll() is None:
                daemon.send_signal(signal.SIGTERM)
            try:
                out, _ = daemon.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                daemon.kill()
                out, _ = daemon.communicate()
        say("profiling the loop in process (lock-step): its compute against its kernels, dispatches per cycle")
        profile = profile_loop(cfg_path, cycles=WALK_PROFILE_CYCLES if walking else 2000,
                               stance=STANCE if stabilize else None, gait=Path(gait) if walking else None)
        ct = None
        ct_note = "cyclictest not found: install Debian's rt-tests for the reference"
        if cyclic is not None:
            _, err = cyclic.communicate(timeout=seconds + 30)
            if cyclic.returncode == 0 and ct_json.exists():
                ct, ct_note = parse_cyclictest(ct_json), None
            else:
                ct_note = f"cyclictest failed ({err.strip()[:200]})"
    loop = stats["loop"]
    lat = loop["wake_latency"]
    compute = sum(loop["tasks"][k]["avg_us"] or 0.0 for k in COMPUTE_TASKS)
    res = {"seconds": seconds, "period_s": period, "priority": priority,
           "workload": "walk" if walking else "stabilizer" if stabilize else "moves",
           "final_state": state, "expected_state": state in (("STABILIZING",) if stabilize else ("HOLD", "MOVING")),
           "loop": loop,
           "requests": {"sent": load.sent, "answered": load.answered, "errors": load.errors,
                        "rate_per_s": load.answered / seconds},
           "telemetry_frames": load.frames,
           "cyclictest": ct, "cyclictest_note": ct_note,
           "compute_avg_us": compute,
           "sim_bus_avg_us": loop["tasks"]["bus_write"]["avg_us"],
           "thesis_bnr_stabilizer_avg_us": THESIS_STABILIZER_AVG_US,
           "ratio_compute_vs_thesis": compute / THESIS_STABILIZER_AVG_US,
           "models_avg_us": loop["tasks"]["models"]["avg_us"],
           "thesis_bnr_walk_models_avg_us": THESIS_WALK_MODELS_AVG_US,
           "daemon_warnings": [l for l in out.splitlines() if "warning" in l],
           "loop_profile": profile}
    if ct and ct.get("p99_us") and lat.get("p99_us") is not None:
        res["ratio_p99_vs_cyclictest"] = lat["p99_us"] / max(ct["p99_us"], 1.0)
        res["ratio_p999_vs_cyclictest"] = lat["p999_us"] / max(ct["p999_us"], 1.0)
        res["targets"] = {"p99": 1.0, "p999": 2.0}
    return res


def print_report(res: dict) -> None:
    loop, lat = res["loop"], res["loop"]["wake_latency"]
    print(f"bipd loop, {res['seconds']:g} s at {res['period_s'] * 1e3:g} ms (SCHED_FIFO {res['priority']}), "
          f"{res['requests']['rate_per_s']:.0f} requests/s answered ({res['requests']['errors']} errors), "
          f"{res['telemetry_frames']} telemetry frames; final state {res['final_state']}")
    for w in res["daemon_warnings"]:
        print(f"  {w}")
    print(f"  wake latency   p50 {lat.get('p50_us')} us, p99 {lat.get('p99_us')} us, "
          f"p99.9 {lat.get('p999_us')} us, max {lat.get('max_us'):.0f} us; "
          f"{loop['overruns']} overruns, {loop['missed_cycles']} missed cycles of {loop['cycles']}")
    ct = res["cyclictest"]
    if ct:
        print(f"  cyclictest     p50 {ct['p50_us']} us, p99 {ct['p99_us']} us, p99.9 {ct['p999_us']} us, "
              f"max {ct['max_us']:.0f} us")
        for key, label in (("ratio_p99_vs_cyclictest", "p99"), ("ratio_p999_vs_cyclictest", "p999")):
            if key in res:
                target = res["targets"][label]
                print(f"  ratio {label:5s} bipd / cyclictest = {res[key]:.2f} "
                      f"({'meets' if res[key] <= target else 'MISSES'} the target <= {target:g})")
    else:
        print(f"  {res['cyclictest_note']}")
    print("  per-task net times (us):")
    for name, t in loop["tasks"].items():
        if t["avg_us"] is not None:
            print(f"    {name:10s} min {t['min_us']:8.1f}  avg {t['avg_us']:8.1f}  max {t['max_us']:8.1f}")
    print(f"  controller compute per cycle (read+transmission, models, reference/stabilizer, axes, "
          f"telemetry): {res['compute_avg_us']:.0f} us avg vs the thesis' {res['thesis_bnr_stabilizer_avg_us']:.0f} us "
          f"-> ratio {res['ratio_compute_vs_thesis']:.2f}; the simulated bus + plant add "
          f"{res['sim_bus_avg_us']:.0f} us (the drives' side, not controller work)")
    p = res["loop_profile"]
    ratio = p["ratio_compute_vs_kernels"]
    print(f"  loop in process (lock-step, {p['cycles']} cycles, {p['compute_state']} then {p['state']}): compute {p['compute_us']:.1f} us per "
          f"cycle = {p['compute_us'] / (res['period_s'] * 1e6):.3f} of the {res['period_s'] * 1e6:g} us period; "
          f"(median, bus excluded) vs its kernels' {p['kernels_us']:.1f} us -> ratio "
          + (f"{ratio:.2f} ({'meets' if ratio <= COMPUTE_VS_KERNELS else 'MISSES'} the target <= "
             f"{COMPUTE_VS_KERNELS:g})" if ratio is not None else "n/a")
          + f"; {p['dispatches_per_cycle']:.1f} Python -> Numba dispatches per cycle")
    if res["models_avg_us"] is not None:
        print(f"  models task (transmission excluded: bus_read): {res['models_avg_us']:.1f} us avg vs the "
              f"thesis' {res['thesis_bnr_walk_models_avg_us']:.0f} us (FGM + IDM, BIP 2000 walking playback)")

