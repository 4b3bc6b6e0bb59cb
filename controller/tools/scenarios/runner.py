"""Run scenarios end to end: the HIL process, the daemon, an operator over ZMQ.

A :class:`Session` writes a temporary daemon YAML (absolute robot and stabilizer paths, free ZMQ
ports, a free UDP port in ``bus.udp.port``, the udp backend, no cycle log), starts the HIL
process (controlled nodes + MuJoCo leg, ground truth on PUB topic ``truth``) and ``bipd run``,
waits for DISABLED, then operates as a person would: enable, move to the stance, stabilizer on
(unless disabled), the scenario's commands. Daemon telemetry, loop events and HIL truth are
recorded (``Options.record``: also into an MCAP cycle log, :mod:`controller.daemon.io.log`, telemetry at
its decimated rate); both processes get SIGTERM at the end (kill after a timeout). Waits are in the
daemon's simulated time.

Lock-step (the default) runs the daemon *stepped*: the operator owns the simulated clock. It
advances the loop with ``step`` requests, :data:`CHUNK_S` at a time (:data:`~controller.tools.operator.STATE_CHUNK_S` while
waiting for a state), and before the next one waits until it has received every telemetry frame
and HIL truth frame up to the loop's horizon (the step's ``telemetry_t``, the HIL's ``truth``
op). Its commands therefore land at exact cycles, every ``step`` feeds the motion watchdog at an
exact cycle, and the series, the fall check and the verdict are the same at any host speed.
Wall-clock timeouts only turn a daemon that does not answer into an error, never into a verdict.
In real time (``--realtime``) a thread pings every :data:`HEARTBEAT_S` of wall time instead.

Transport (``Options.transport``): ``udp`` (default) carries the frames over loopback UDP; ``raw``
puts them on a real wire, a veth pair whose far end is in a network namespace the session creates
(a name unique to the run, :mod:`controller.tools.veth`) and removes when it ends, even on a
failure: the HIL serves its controlled nodes on an AF_PACKET socket there
(:mod:`drivers.sim.hil.wire`), the daemon runs ``--backend raw`` on the near end; the control channel
and the truth stay on loopback. Lock-step holds over the wire (drivers.backends.raw). Needs root, or
CAP_NET_ADMIN and CAP_NET_RAW.

Hooks that change the host's speed, not the result: ``Options.throttle_s`` (the HIL sleeps that
long per control period: a slow host) and ``Options.operator_sleep`` (the operator sleeps that
many wall seconds per simulated second it advances, e.g. 2.0: 0.2 s per 0.1 s chunk, so relative
to it the daemon runs infinitely fast). :func:`run_scenario` is one scenario on a fresh bench.
"""
from __future__ import annotations

import json
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import yaml
import zmq

from controller.tools.client import ClientTimeout
from controller.daemon.io.log import CycleLogWriter, LogError
from controller.tools.operator import REQUEST_TIMEOUT_S, Operator
from controller.tools.ports import free_port
from controller.tools.veth import Veth, unique_name, wire_capable
from controller.daemon.telemetry import RecordLayout
from models.common.validation import read_yaml

from controller.tools.scenarios.metrics import FOOT_LIFT_M, FOOT_TILT_DEG, HIP_HEIGHT_MIN_M, ScenarioResult, evaluate
from controller.tools.scenarios.series import TRUTH_KEYS, Series

DEFAULT_CONFIG = Path(__file__).resolve().parents[3] / "deploy" / "bipd.yaml"
STANCE = (0.0, 0.25, -0.5, 0.25)          # rad: ankle_lateral, ankle_sagittal, knee, hip
STANCE_MOVE_S = 1.0
SETTLE_S = 0.5
HEARTBEAT_S = 0.05            # real time: wall seconds between pings
CHUNK_S = 0.1                 # stepped: simulated seconds per step of a wait
SYNC_TIMEOUT_S = 60.0         # wall seconds for the frames up to a step's horizon to arrive
BOOT_TIMEOUT_S = 600.0     # s: an error bound only (a dead process is seen at once); a cold Numba cache on a loaded host compiles for minutes
STOP_TIMEOUT_S = 20.0

Say = Callable[[str], None]


class ScenarioError(RuntimeError):
    """The bench could not run (a process did not start, a command was refused, a timeout)."""


class PlotError(ScenarioError):
    """The run's PNGs could not be drawn (its result is complete and already reported)."""


class ScenarioAbort(Exception):
    """The scenario ended early: the leg fell, or the controller left the expected states."""


class Scenario(Protocol):
    name: str
    stabilizes: bool          # False: the scenario moves the joints itself (no stabilizer phase)

    def params(self) -> dict[str, Any]: ...

    def run(self, op: RecordingOperator) -> None: ...


@dataclass(frozen=True)
class Options:
    config: Path = DEFAULT_CONFIG
    stabilizer: bool = True
    lockstep: bool = True                 # stepped lock-step (the operator owns the clock); False: real time
    stance: tuple[float, ...] = STANCE
    plot_dir: Path | None = None
    bolt_foot: bool = False               # the HIL welds the foot to the platform (thesis squat bench)
    throttle_s: float = 0.0               # wall s the HIL sleeps per control period (a slow host)
    operator_sleep: float = 0.0           # wall s the operator sleeps per simulated s it advances
    tilt_source: str = "platform"         # the stabilizer's tilt: platform angles or the foot IMU over the bus
    trajectory_dir: Path | None = None    # the daemon's io.trajectory_dir (walk-file: the file's folder)
    record: Path | None = None            # an MCAP file: telemetry, events and HIL truth as received
    stabilizer_set: tuple[tuple[str, Any], ...] = ()   # (dotted key, value) set in the stabilizer YAML copy
    daemon_set: tuple[tuple[str, Any], ...] = ()       # (dotted key, value) set in the daemon YAML copy
    hil_args: tuple[str, ...] = ()        # more ``bipd hil`` arguments (e.g. the biped's mount)
    truth_keys: tuple[str, ...] = TRUTH_KEYS           # the HIL truth fields recorded (the leg bench's)
    fell: Callable[[dict], bool] | None = None         # fall test of one truth frame; None: :func:`truth_fell`
    transport: str = "udp"                # the frames over loopback UDP, or "raw": a veth into a namespace


@dataclass(frozen=True)
class Endpoints:
    command: str
    telemetry: str
    truth: str
    udp_port: int


def set_dotted(doc: dict[str, Any], key: str, value: Any) -> None:
    """``doc["a"]["b"] = value`` for ``key`` "a.b" (missing mappings on the way are created)."""
    *parents, leaf = key.split(".")
    for name in parents:
        doc = doc.setdefault(name, {})
    doc[leaf] = value


def write_config(config: Path, lockstep: bool, folder: Path, tilt_source: str = "platform",
                 trajectory_dir: Path | None = None,
                 stabilizer_set: tuple[tuple[str, Any], ...] = (),
                 daemon_set: tuple[tuple[str, Any], ...] = (), interface: str | None = None) -> tuple[Path, Endpoints]:
    """The bench's daemon YAML in ``folder`` (with the keys of ``daemon_set`` set: dotted key,
    value) and the endpoints it names (``interface``: the raw backend on it, the HIL's control
    channel still on ``bus.udp.port``); with ``tilt_source`` other than the stabilizer YAML's, or
    keys to set (``stabilizer_set``), a copy of the stabilizer YAML in ``folder`` with that
    ``tilt.source`` and those values."""
    doc = read_yaml(config)
    base = Path(config).resolve().parent
    for key in ("robot", "stabilizer"):
        if doc.get(key):
            doc[key] = str((base / doc[key]).resolve())
    rig = (doc.get("control") or {}).get("platform") or {}
    if rig.get("rig"):                         # the Stewart-Gough rig's YAML (control.platform.kind stewart)
        rig["rig"] = str((base / rig["rig"]).resolve())
    if doc.get("stabilizer"):
        stab = read_yaml(doc["stabilizer"])
        if stab["tilt"]["source"] != tilt_source or stabilizer_set:
            stab["robot"] = str((Path(doc["stabilizer"]).parent / stab["robot"]).resolve())
            if stab["tilt"]["source"] != tilt_source:
                stab["tilt"] = dict(stab["tilt"], source=tilt_source, use_acceleration=False)
            for key, value in stabilizer_set:
                set_dotted(stab, key, value)
            doc["stabilizer"] = str(folder / "stabilizer.yaml")
            (folder / "stabilizer.yaml").write_text(yaml.safe_dump(stab))
    ep = Endpoints(f"tcp://127.0.0.1:{free_port()}", f"tcp://127.0.0.1:{free_port()}",
                   f"tcp://127.0.0.1:{free_port()}", free_port(socket.SOCK_DGRAM))
    doc.setdefault("io", {}).update(command=ep.command, telemetry=ep.telemetry, log_dir=None,
                                    trajectory_dir=str(trajectory_dir.resolve()) if trajectory_dir else None)
    doc.setdefault("loop", {}).update(lockstep=lockstep, stepped=lockstep)
    doc["bus"]["backend"] = "udp" if interface is None else "raw"
    if interface is not None:
        doc["bus"]["interface"] = interface
    doc["bus"].setdefault("udp", {}).update(host="127.0.0.1", port=ep.udp_port)
    for key, value in daemon_set:
        set_dotted(doc, key, value)
    path = folder / "bipd.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path, ep


def robot_foot(config: Path) -> dict[str, float] | None:
    """The foot rectangle (thesis Figure 20: a, b, c, ...) of the robot a daemon YAML names (None
    for a whole-robot tree, whose feet are in its ``feet:``)."""
    doc = read_yaml(config)
    robot = Path(config).resolve().parent / doc["robot"]
    foot = read_yaml(robot).get("foot")
    return None if foot is None else dict(foot)


def hil_command(config: Path, ep: Endpoints, realtime: bool, bolt_foot: bool, throttle_s: float = 0.0,
                extra: tuple[str, ...] = (), veth: Veth | None = None) -> list[str]:
    return ([sys.executable, "-m", "drivers.sim.hil.server", "--config", str(config),
             "--udp-port", str(ep.udp_port), "--truth", ep.truth]
            + ([] if veth is None else ["--interface", veth.cn, "--netns", veth.name])
            + (["--realtime"] if realtime else []) + (["--bolt-foot"] if bolt_foot else [])
            + (["--throttle-s", repr(throttle_s)] if throttle_s else []) + list(extra))


def daemon_command(config: Path, lockstep: bool, backend: str = "udp") -> list[str]:
    """``bipd run``; lock-step benches run stepped (the operator owns the clock)."""
    return ([sys.executable, "-m", "controller.cli", "run", "--config", str(config), "--backend", backend]
            + (["--stepped"] if lockstep else []))


def udp_control(port: int, request: dict, timeout_s: float = 1.0) -> dict | None:
    """One control request to the HIL's UDP server (drivers.udp_protocol); None without an answer."""
    from drivers.udp_protocol import control_request

    return control_request("127.0.0.1", port, request, timeout_s)


def raw_wire(transport: str) -> Veth | None:
    """The veth pair (not yet created) a ``raw`` bench runs on, None for ``udp``; a
    :class:`ScenarioError` naming the privileges when this process cannot make it."""
    if transport == "udp":
        return None
    if transport != "raw":
        raise ScenarioError(f"unknown transport {transport!r} (known: udp, raw)")
    if not wire_capable():
        raise ScenarioError("--transport raw needs root, or CAP_NET_ADMIN (a network namespace and a veth pair) "
                            "and CAP_NET_RAW (AF_PACKET sockets); --transport udp needs neither")
    return Veth(unique_name("bsc"))


class Processes:
    """The HIL process and the daemon, their output in log files under ``folder``; with ``veth``
    the wire between them, created first and removed by :meth:`stop` (also when starting fails)."""

    def __init__(self, config: Path, ep: Endpoints, lockstep: bool, bolt_foot: bool, folder: Path,
                 throttle_s: float = 0.0, hil_args: tuple[str, ...] = (), veth: Veth | None = None) -> None:
        self.ep, self.folder = ep, folder
        self.procs: dict[str, subprocess.Popen] = {}
        self.veth: Veth | None = None
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        try:
            if veth is not None:
                self.veth = veth.__enter__()
            self._spawn("hil", hil_command(config, ep, not lockstep, bolt_foot, throttle_s, hil_args, veth), env)
            self._wait_udp()
            self._spawn("daemon", daemon_command(config, lockstep, "udp" if veth is None else "raw"), env)
        except BaseException:
            self.stop()                        # a failed start leaves no process behind
            raise

    def _spawn(self, name: str, cmd: list[str], env: dict[str, str]) -> None:
        with open(self.folder / f"{name}.log", "w") as out:
            self.procs[name] = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                                cwd=self.folder)      # MuJoCo may write its log file here

    def _wait_udp(self) -> None:
        end = time.monotonic() + BOOT_TIMEOUT_S
        while udp_control(self.ep.udp_port, {"op": "ping"}, 0.2) is None:
            self.check()
            if time.monotonic() > end:
                raise ScenarioError(f"the HIL process did not answer on UDP port {self.ep.udp_port} "
                                    f"within {BOOT_TIMEOUT_S:.0f} s; its log:\n{self.log('hil')}")

    def log(self, name: str, lines: int = 30) -> str:
        text = (self.folder / f"{name}.log").read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def check(self) -> None:
        for name, p in self.procs.items():
            if p.poll() is not None:
                raise ScenarioError(f"the {name} process exited with code {p.returncode}; its log:\n{self.log(name)}")

    def stop(self) -> dict[str, int]:
        """SIGTERM the daemon (soft stop, drives off), then the HIL; kill whatever outlives the
        timeout; then remove the wire."""
        codes = {}
        try:
            for name in ("daemon", "hil"):
                p = self.procs.get(name)
                if p is None:
                    continue
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
                try:
                    codes[name] = p.wait(STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    p.kill()
                    codes[name] = p.wait()
        finally:
            if self.veth is not None:
                self.veth.__exit__()
                self.veth = None
        return codes


def truth_fell(msg: dict) -> bool:
    """The fall criteria of :mod:`.metrics` on one ground-truth frame."""
    return bool(msg["foot_lift"] > FOOT_LIFT_M or math.degrees(msg["foot_tilt"]) > FOOT_TILT_DEG
                or msg["hip_height"] < HIP_HEIGHT_MIN_M)


class RecordingOperator(Operator):
    """The scenarios' operator: :class:`~controller.tools.operator.Operator` plus the recording of the
    daemon's telemetry and events and the HIL's ground truth (a SUB thread into :attr:`series`), waits
    in simulated time, the fall check; ``stepped``: each step waits for the frames up to its horizon
    (module docstring), else a thread pings the daemon in wall time."""

    error = ScenarioError

    def __init__(self, ep: Endpoints, procs: Processes, say: Say, stepped: bool = False,
                 operator_sleep: float = 0.0, truth_keys: tuple[str, ...] = TRUTH_KEYS,
                 fell: Callable[[dict], bool] | None = None) -> None:
        # stepped: one attempt (a resent step or command would land twice), a generous timeout
        super().__init__(ep.command, stepped, *((REQUEST_TIMEOUT_S, 1) if stepped else (2.0, 3)))
        self.ep, self.procs, self.say = ep, procs, say
        self.operator_sleep = operator_sleep
        self.series = Series(truth_keys=truth_keys)
        self._fell = fell or truth_fell
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.expect_fault = False
        self.fell = False
        self.recorder: CycleLogWriter | None = None     # set once the daemon's layout is known
        self._ctx = zmq.Context()
        self._frame: tuple[float, int] | None = None      # (period s, decimation) of the daemon
        self._threads = [threading.Thread(target=self._receive, daemon=True)]
        if not stepped:
            self._threads.append(threading.Thread(target=self._heartbeat, daemon=True))
        self._last_say = 0.0
        self._t0_wall = time.monotonic()
        self._t0_sim = 0.0

    def __enter__(self) -> RecordingOperator:
        for t in self._threads:
            t.start()
        return self

    def close(self) -> None:
        self.stop.set()
        for t in self._threads:
            t.join(5.0)
        super().close()
        self._ctx.term()

    # ------------------------------------------------------------------ threads
    def _heartbeat(self) -> None:
        while not self.stop.wait(HEARTBEAT_S):
            try:
                self.call("ping")
            except (ClientTimeout, ScenarioError):
                pass

    def _receive(self) -> None:
        tel = self._ctx.socket(zmq.SUB)
        tru = self._ctx.socket(zmq.SUB)
        for sock, ep, topics in ((tel, self.ep.telemetry, (b"telemetry", b"event")), (tru, self.ep.truth, (b"truth",))):
            sock.linger = 0
            for topic in topics:
                sock.setsockopt(zmq.SUBSCRIBE, topic)
            sock.connect(ep)
        poller = zmq.Poller()
        poller.register(tel, zmq.POLLIN)
        poller.register(tru, zmq.POLLIN)
        try:
            while not self.stop.is_set():
                for sock, _ in poller.poll(100):
                    topic, data = sock.recv_multipart()
                    msg = json.loads(data)
                    if self.recorder is not None:
                        record = {b"telemetry": self.recorder.append_telemetry, b"event": self.recorder.event}
                        record.get(topic, self.recorder.truth)(msg)
                    if topic == b"telemetry":
                        self.series.add_telemetry(msg)
                    elif topic == b"event":
                        self.series.add_event(msg)
                    else:
                        self.fell = self.fell or self._fell(msg)      # before the frame counts as received
                        self.series.add_truth(msg)
        finally:
            tel.close()
            tru.close()

    # ------------------------------------------------------------------ commands
    def call(self, cmd: str, /, **args: Any) -> dict[str, Any]:
        """The command's result, one request at a time (the heartbeat shares the client); a
        timeout first checks that both processes still run."""
        with self.lock:
            try:
                return super().call(cmd, **args)
            except ClientTimeout:
                self.procs.check()
                raise

    def explain(self, failure: str) -> str:
        faults = [e for e in self.series.events if e.get("kind") in ("FAULT", "WARNING")]
        return f"{failure}, events {faults[-3:]}; daemon log:\n{self.procs.log('daemon')}"

    def sim_time(self) -> float:
        last = self.series.last_telemetry
        return float(last["t"]) if last else 0.0

    def wait_ready(self, timeout_s: float = BOOT_TIMEOUT_S) -> None:
        """Wait (wall clock) for the daemon to boot: DISABLED, no cycle needed."""
        end = time.monotonic() + timeout_s
        while True:
            try:
                if self.call("status")["state"] == "DISABLED":
                    return
            except ClientTimeout:
                pass
            if time.monotonic() > end:
                raise ScenarioError(f"the daemon did not boot within {timeout_s:g} s; its log:\n{self.procs.log('daemon')}")
            time.sleep(0.05)

    def _daemon_frame(self) -> tuple[float, int]:
        """(period s, decimation) of the daemon, asked once."""
        if self._frame is None:
            cfg = self.call("get_config")
            self._frame = (float(cfg["period"]), int(cfg["decimation"]))
        return self._frame

    def _cycles(self, seconds: float) -> int:
        """Cycles of ``seconds`` rounded to whole telemetry frames (at least one)."""
        period, decimation = self._daemon_frame()
        return decimation * max(1, round(seconds / (period * decimation)))

    def step(self, seconds: float | None = None, *, cycles: int | None = None) -> dict[str, Any]:
        """Stepped: advance the daemon ``seconds`` (rounded to whole telemetry frames) or ``cycles``,
        then wait for every telemetry and truth frame up to its horizon; returns the step's reply."""
        if seconds is not None and cycles is None:
            seconds, cycles = None, self._cycles(seconds)
        reply = super().step(seconds, cycles=cycles)
        self._sync(reply)
        if self.operator_sleep > 0.0:
            time.sleep(self.operator_sleep * cycles * self._daemon_frame()[0])
        return reply

    def _sync(self, reply: dict[str, Any]) -> None:
        truth = udp_control(self.ep.udp_port, {"op": "truth"}, timeout_s=SYNC_TIMEOUT_S)
        if truth is None or "error" in truth:
            raise ScenarioError(f"the HIL process did not say which truth frame it sent last: {truth}")
        want_tel, want_tru = reply.get("telemetry_t"), truth.get("truth_t")
        end = time.monotonic() + SYNC_TIMEOUT_S
        while True:
            tel, tru = self.series.last_telemetry, self.series.last_truth
            if ((want_tel is None or (tel is not None and tel["t"] >= want_tel))
                    and (want_tru is None or (tru is not None and tru["t"] >= want_tru))):
                return
            self.procs.check()
            if time.monotonic() > end:
                raise ScenarioError(f"the telemetry frame of t = {want_tel} s and the truth frame of t = {want_tru} s "
                                    f"did not arrive within {SYNC_TIMEOUT_S:g} s (last received: "
                                    f"{tel and tel['t']}, {tru and tru['t']})")
            time.sleep(0.001)

    def wait(self, seconds: float) -> None:
        """Let ``seconds`` of simulated time pass (stepped: in steps of :data:`CHUNK_S`, whole
        telemetry frames); raises :class:`ScenarioAbort` on a fall, or on FAULT / ESTOP unless
        ``expect_fault``."""
        if self.stepped:
            left = self._cycles(seconds) if seconds > 0.0 else 0
            chunk = self._cycles(CHUNK_S)
            while left > 0:
                n = min(chunk, left)
                self.step(cycles=n)
                left -= n
                self._check()
            self._check()
            return
        target = self.sim_time() + seconds
        end = time.monotonic() + 5.0 * seconds + 30.0
        while self.sim_time() < target:
            self._check()
            if time.monotonic() > end:
                raise ScenarioError(f"{seconds:g} s of simulated time did not pass within {5 * seconds + 30:g} s")
            time.sleep(0.01)
        self._check()

    def wait_until(self, ready: Callable[[], bool], limit_s: float, what: str) -> None:
        """Let simulated time pass one telemetry frame at a time until ``ready()``; ``what`` not
        seen within ``limit_s`` simulated seconds is a :class:`ScenarioError`."""
        frame = self._cycles(0.0) * self._daemon_frame()[0]
        waited = 0.0
        while not ready():
            if waited > limit_s:
                raise ScenarioError(f"{what} not seen within {limit_s:g} s of simulated time")
            self.wait(frame)
            waited += frame

    def _check(self) -> None:
        self.procs.check()
        self._progress()
        if self.fell:
            raise ScenarioAbort(f"the robot fell at t = {self.sim_time():.2f} s")
        last = self.series.last_telemetry
        if last and last["state_name"] in ("FAULT", "ESTOP") and not self.expect_fault:
            raise ScenarioAbort(f"the controller went to {last['state_name']} ({last.get('fault_detail') or last['fault_name']}) "
                                f"at t = {last['t']:.2f} s")

    def mark_start(self) -> None:
        """Start of the measured part (wall clock and simulated time) for the speed figure."""
        self._t0_wall, self._t0_sim = time.monotonic(), self.sim_time()
        self.series.mark()

    def elapsed(self) -> tuple[float, float]:
        """(simulated, wall) seconds since :meth:`mark_start`."""
        return self.sim_time() - self._t0_sim, time.monotonic() - self._t0_wall

    def _progress(self) -> None:
        now = time.monotonic()
        tel, tru = self.series.last_telemetry, self.series.last_truth
        if now - self._last_say < 1.0 or tel is None:
            return
        self._last_say = now
        sim, wall = self.elapsed()
        plat = ", ".join(f"{math.degrees(x or 0.0):5.1f}" for x in tel["platform"])
        if tru is None:
            where = "no truth yet"
        elif "support_margin" in tru:
            where = f"CoG margin {1e3 * tru['support_margin']:6.1f} mm"
        else:
            where = f"pelvis x {tru['pelvis_position'][0]:+.3f} m"
        self.say(f"t {tel['t']:6.2f} s  {tel['state_name']:<11} platform ({plat}) deg  {where}  "
                 f"{sim / wall if wall > 0 else 0.0:4.1f}x real time")

    # ------------------------------------------------------------------ steps
    def prepare(self, stance: tuple[float, ...] | None) -> None:
        """enable -> stance (held in position; None: where it stands), then a short settle."""
        self.command("enable")
        self.wait_state("HOLD")
        if stance is not None:
            self.command("move_joints", q=list(stance), duration=STANCE_MOVE_S)
            self.wait_state("MOVING", "HOLD")
            self.wait_state("HOLD")
        self.wait(SETTLE_S)


def _recorder(path: Path, daemon_config: dict[str, Any], o: Options) -> CycleLogWriter:
    """The MCAP file of ``--record`` (telemetry at the daemon's decimated rate, events, truth)."""
    joints = tuple(daemon_config["joints"])
    try:
        return CycleLogWriter(path, RecordLayout(len(joints)), joints, period=daemon_config["period"],
                              meta={"config": str(o.config), "decimation": daemon_config["decimation"],
                                    "stabilizer": o.stabilizer, "lockstep": o.lockstep},
                              rig=bool(daemon_config.get("rig")))
    except (LogError, OSError) as e:
        raise ScenarioError(f"--record {path}: {getattr(e, 'strerror', None) or e}") from None


@dataclass(frozen=True)
class Played:
    """A scenario as run by :meth:`Session.play`: stabilized or not, the loop's statistics over it
    (overruns and missed cycles counted from its start), simulated and wall seconds, why it ended
    early (None: it ran to its end)."""
    stabilized: bool
    stats: dict[str, Any]
    sim_s: float
    wall_s: float
    aborted: str | None


def play_measured(scenario, op: RecordingOperator, say: Say, label: str) -> str | None:
    """Mark the start of the measured part and run ``scenario``; the reason it was aborted (a fall,
    an unexpected state), also said, or None."""
    op.mark_start()
    try:
        scenario.run(op)
    except ScenarioAbort as e:
        say(f"{label}: {e}")
        return str(e)
    return None


class Session:
    """One bench (HIL process + daemon + operator) running one or more scenarios in a row.

    On entry: both processes started, DISABLED, enable, stance. Each :meth:`run` switches the
    stabilizer on (off) when the scenario stabilizes (moves the joints itself) and the options
    allow it, runs the scenario and evaluates the frames recorded during it. A run that ends in a
    fall or FAULT leaves the bench there: the next run of the session is refused by the daemon."""

    def __init__(self, options: Options = Options(), say: Say | None = None) -> None:
        self.options, self.say = options, say or (lambda _m: None)
        self._tmp = tempfile.TemporaryDirectory(prefix="bipd-scenario-")
        self.procs: Processes | None = None
        self.op: RecordingOperator | None = None

    def __enter__(self) -> Session:
        try:
            folder = Path(self._tmp.name)
            o = self.options
            veth = raw_wire(o.transport)
            config, ep = write_config(o.config, o.lockstep, folder, o.tilt_source, o.trajectory_dir,
                                      o.stabilizer_set, o.daemon_set, None if veth is None else veth.mn)
            wire = f"UDP port {ep.udp_port}" if veth is None else f"raw Ethernet on {veth.mn}, nodes in namespace {veth.name}"
            self.say(f"starting the HIL process and the daemon ({'stepped lock-step' if o.lockstep else 'real time'}, "
                     f"{wire})")
            self.procs = Processes(config, ep, o.lockstep, o.bolt_foot, folder, o.throttle_s, o.hil_args, veth)
            self.op = RecordingOperator(ep, self.procs, self.say, o.lockstep, o.operator_sleep, o.truth_keys,
                                        o.fell).__enter__()
            self.op.wait_ready()
            self.daemon_config = self.op.call("get_config") | {"foot": robot_foot(config)}
            if o.record is not None:
                self.op.recorder = _recorder(o.record, self.daemon_config, o)
            self.say(f"daemon up: enable{', stance' if o.stance is not None else ''}")
            self.op.prepare(o.stance)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.op is not None:
            self.op.__exit__()
            if self.op.recorder is not None:
                self.op.recorder.close()
        if self.procs is not None:
            self.procs.stop()
        self._tmp.cleanup()

    def run(self, scenario: Scenario, label: str | None = None) -> ScenarioResult:
        played = self.play(scenario, label)
        return evaluate(scenario.name, scenario.params(), played.stabilized, self.options.lockstep, self.op.series,
                        self.daemon_config, played.stats, played.sim_s, played.wall_s, played.aborted)

    def play(self, scenario: Scenario, label: str | None = None) -> Played:
        """Run ``scenario`` (stabilizer on or off as it asks); what :meth:`run` evaluates, the frames
        being the operator's series from the start of the scenario on."""
        op, label = self.op, label or scenario.name
        stabilize = self.options.stabilizer and scenario.stabilizes
        op.expect_fault = False
        state = op.state()
        if stabilize and state == "HOLD":
            op.command("stabilizer", enable=True)
            op.wait_state("STABILIZING")
            op.wait(SETTLE_S)
        elif not stabilize and state == "STABILIZING":
            op.command("stabilizer", enable=False)
            op.wait_state("HOLD")
        self.say(f"{label}: {scenario.params()}, {'stabilizer on' if stabilize else 'posture held in position'}")
        before = op.call("stats")["loop"]
        aborted = play_measured(scenario, op, self.say, label)
        sim_s, wall_s = op.elapsed()
        stats = op.call("stats")["loop"]
        for key in ("overruns", "missed_cycles"):
            stats[key] -= before[key]
        return Played(stabilize, stats, sim_s, wall_s, aborted)

    def plot(self, name: str, out: Path) -> list[str]:
        """The PNGs of the runs so far in ``out`` (matplotlib); any failure is a :class:`PlotError`."""
        from controller.tools.scenarios.plots import write_plots

        with plot_errors(out):
            return write_plots(self.op.series, self.daemon_config["foot"], list(self.daemon_config["joints"]),
                               name, out)


@contextmanager
def plot_errors(out: Path) -> Iterator[None]:
    """Any failure while drawing a finished run's PNGs in ``out`` as a :class:`PlotError`."""
    try:
        yield
    except Exception as e:      # noqa: BLE001 -- whatever broke, the result is out and stays valid
        raise PlotError(f"the plots in {out} could not be drawn ({type(e).__name__}: {e}); "
                        "the result above is complete") from e


def run_scenario(scenario: Scenario, options: Options = Options(), say: Say | None = None,
                 report: Callable[[ScenarioResult], None] | None = None) -> ScenarioResult:
    """Start a bench, run ``scenario`` through the daemon, stop the bench, return the figures.
    ``report(result)`` gets them before any plot is drawn (``options.plot_dir``), so a plotting
    failure (:class:`PlotError`) never loses a finished result."""
    with Session(options, say) as session:
        result = session.run(scenario)
        if options.plot_dir is not None:
            from controller.tools.scenarios.plots import plot_paths

            result.plots = [str(p) for p in plot_paths(scenario.name, Path(options.plot_dir))]
        if report is not None:
            report(result)
        if options.plot_dir is not None:
            session.plot(scenario.name, Path(options.plot_dir))
        return result
