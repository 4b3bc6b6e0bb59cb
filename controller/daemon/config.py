"""The daemon's YAML (deploy/bipd.yaml): robot, stabilizer, bus, loop, control, I/O.

Loaded once at start in the parent process; both processes get the parsed,
validated :class:`DaemonConfig`. Every error is one :class:`ConfigError` naming
the file and the key.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drivers.config import BusConfig, BusConfigError, parse_bus_config
from drivers.hal import BACKENDS
from models import ConfigError, Robot
from models.common.errors import quote
from models.rig.config import load_stewart
from models.common.support import SOLES
from models.rig.tilt import CONVENTIONS, THESIS
from models.tree.config import is_tree
from models.tree.robot import TreeRobot
from models.common.validation import Section, read_yaml
from stabilizer.config import load_config as load_stabilizer_config
from stabilizer.feet_config import FeetConfig, parse_feet
from stabilizer.ground import TILT_IMU
from stabilizer.stabilizer import Stabilizer
from stabilizer.whole_body import WholeBodyStabilizer
from stabilizer.whole_body_config import load_config as load_whole_body_config

from controller.daemon.extras import missing
from controller.daemon.plants import NEEDS, PLANTS
from controller.daemon.codes import MAX_REQUEST_BYTES, ON_LOG_FAILURE
from controller.daemon.endpoints import CurveConfigError, ServerCurve, is_loopback

MODES = ("csp", "cst")
SUPPORTS = ("hung", "ground")
LOAD_SPLITS = ("planned", "measured", "confirmed")
COULOMB_VELOCITY = 0.01   # rad/s: the feed-forward's Coulomb sign tanh(q̇_ref / v_s) (Makkar et al. 2005)


@dataclass(frozen=True)
class LoopConfig:
    period: float = 0.002
    spin: float = 150e-6
    priority: int = 80
    cpus: tuple[int, ...] = ()
    lock_memory: bool = True
    lockstep: bool = False
    stepped: bool = False          # lock-step paced by a client's ``step`` requests


@dataclass(frozen=True)
class RigConfig:
    """``control.platform: {kind: stewart, ...}``: the bench leg on the Stewart–Gough rig, whose six
    actuators (``axes``, legs A-F) the loop drives in CSP (controller.daemon.rig.player, docs/rig.md)."""
    rig_path: Path
    axes: tuple[str, ...]
    screw_lead: float              # m per motor turn: motor angle = 2π/lead × actuator displacement
    accel_filter: float            # s, first-order low-pass of the platform's measured acceleration
    convention: int = THESIS       # what the robot's platform tilt (α, β) means on the plate (models.rig.tilt)


@dataclass(frozen=True)
class ControlConfig:
    mode: str
    joint_axes: tuple[str, ...]    # one bus axis per joint, in the transmission's motor order
    platform_axes: tuple[str, ...]  # () or (alpha, beta)
    platform_ratio: float
    platform_limit: float          # rad, |alpha|, |beta|
    kp: tuple[float, ...]
    ki: tuple[float, ...]
    kd: tuple[float, ...]
    derivative_filter: float       # s
    soft_limit_margin: float       # rad
    watchdog: float                # s without a client heartbeat during motion -> soft stop
    enable_timeout: float          # s for every drive to reach Operation Enabled
    stop_duration: float           # s of the quintic soft stop
    stabilizer_failure_cycles: int = 5   # non-OK stabilizer cycles in a row -> HOLD
    rig: RigConfig | None = None   # the Stewart–Gough rig instead of the two hinges (platform_axes: its six)
    support: str = "hung"          # tree robot: the root follows the playback's support (ground) or stays
                                   # at the pelvis held by a gantry (hung)
    load_split: str = "planned"    # ground, double support: the feet's load shares in the feed-forward from the
                                   # played file's ramp (planned) or the feet's load cells (measured)
    coulomb_velocity: float = COULOMB_VELOCITY   # rad/s, v_s of the feed-forward's tanh(q̇_ref / v_s) Coulomb sign


@dataclass(frozen=True)
class LiveViewConfig:
    """``io.live_view``: the Foxglove WebSocket server of the I/O process (loopback only)."""
    enabled: bool = False
    host: str = "127.0.0.1"
    port: int = 8765
    allow_parameters: bool = False     # Foxglove may set the axis gains and the stabilizer's keys


@dataclass(frozen=True)
class IoConfig:
    command: str = "tcp://127.0.0.1:5555"
    telemetry: str = "tcp://127.0.0.1:5556"
    decimation: int = 10
    log_dir: str | None = None
    trajectory_dir: Path | None = None       # None: file trajectories are refused
    trajectory_max_bytes: int = 16 << 20
    max_request_bytes: int = MAX_REQUEST_BYTES
    curve: ServerCurve | None = None
    live_view: LiveViewConfig = LiveViewConfig()
    on_log_failure: str = "refuse_motions"   # controller.daemon.io.server.ON_LOG_FAILURE


@dataclass(frozen=True)
class DaemonConfig:
    source: Path
    robot_path: Path
    stabilizer_path: Path | None
    bus_section: dict
    bus: BusConfig
    loop: LoopConfig
    control: ControlConfig
    io: IoConfig
    feet: FeetConfig = FeetConfig()

    def robot(self) -> Robot | TreeRobot:
        return load_robot(self.robot_path)

    def stabilizer(self) -> Stabilizer | WholeBodyStabilizer | None:
        """The stabilizer of the ``stabilizer:`` file: the bench leg's for a chain, the whole robot's
        (stabilizer.whole_body) for a tree; None without the key."""
        if self.stabilizer_path is None:
            return None
        if is_tree(read_yaml(self.robot_path)):
            return WholeBodyStabilizer.from_yaml(self.stabilizer_path)
        return Stabilizer.from_yaml(self.stabilizer_path)


def load_robot(path: Path) -> Robot | TreeRobot:
    """The robot of a YAML file: a serial chain (the bench leg) or a kinematic tree (BIP 2000)."""
    return TreeRobot.from_yaml(path) if is_tree(read_yaml(path)) else Robot.from_yaml(path)


def _path(sec: Section, name: str, base: Path, required: bool = True) -> Path | None:
    raw = sec.raw(name, ... if required else None)
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw:
        raise ConfigError(sec.where, sec.path(name), "expected a file path")
    p = (base / raw).resolve()
    if not p.is_file():
        raise ConfigError(sec.where, sec.path(name), f"no such file {p}")
    return p


def _names(sec: Section, name: str, size: int) -> tuple[str, ...]:
    v = sec.raw(name)
    if not isinstance(v, list) or len(v) != size or not all(isinstance(x, str) and x for x in v):
        raise ConfigError(sec.where, sec.path(name), f"expected a list of {size} axis names, got {quote(v)}")
    return tuple(v)


def _per_joint(sec: Section, name: str, n: int, default: float) -> tuple[float, ...]:
    """One non-negative value for every joint, or a list of n."""
    raw = sec.value.get(name, default)
    if isinstance(raw, list):
        vals = sec.vector(name, n)
    else:
        vals = (sec.number(name, default, nonnegative=True),) * n
    for i, x in enumerate(vals):
        if x < 0:
            raise ConfigError(sec.where, f"{sec.path(name)}[{i}]", f"must be >= 0, got {x}")
    return vals


def _count(sec: Section, name: str, default: int) -> int:
    """An integer >= 1."""
    v = sec.raw(name, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ConfigError(sec.where, sec.path(name), f"expected an integer >= 1, got {v!r}")
    return v


def _loop(sec: Section) -> LoopConfig:
    period = sec.number("period_s", 0.002, positive=True)
    if not 2e-4 <= period <= 0.1:
        raise ConfigError(sec.where, sec.path("period_s"), f"must be in [0.0002, 0.1] s, got {period}")
    spin = sec.number("spin_s", 150e-6, nonnegative=True)
    if spin >= period:
        raise ConfigError(sec.where, sec.path("spin_s"), "must be shorter than the period")
    prio = sec.raw("priority", 80)
    if isinstance(prio, bool) or not isinstance(prio, int) or not 0 <= prio <= 99:
        raise ConfigError(sec.where, sec.path("priority"), f"expected an integer 0..99 (0: no SCHED_FIFO), got {quote(prio)}")
    cpus = sec.raw("cpus", [])
    if not isinstance(cpus, list) or not all(isinstance(c, int) and c >= 0 for c in cpus):
        raise ConfigError(sec.where, sec.path("cpus"), f"expected a list of CPU numbers, got {quote(cpus)}")
    lock = sec.raw("lock_memory", True)
    lockstep = sec.raw("lockstep", False)
    stepped = sec.raw("stepped", False)
    for key, val in (("lock_memory", lock), ("lockstep", lockstep), ("stepped", stepped)):
        if not isinstance(val, bool):
            raise ConfigError(sec.where, sec.path(key), f"expected true or false, got {quote(val)}")
    if stepped and not lockstep:
        raise ConfigError(sec.where, sec.path("stepped"), "a stepped loop runs in simulated time: it needs "
                          "loop.lockstep: true (or bipd run --stepped)")
    sec.done()
    return LoopConfig(period, spin, prio, tuple(cpus), lock, lockstep, stepped)


def _rig(sec: Section, base: Path, tree: bool) -> RigConfig | None:
    """``control.platform``: absent or ``kind: hinges`` (the two-hinge tilting platform on
    ``control.platform_axes``), or ``kind: stewart`` with ``rig`` (its YAML), ``axes`` (six),
    ``screw_lead_m`` and ``accel_filter_s``."""
    kind = sec.raw("kind", "hinges")
    if kind not in ("hinges", "stewart"):
        raise ConfigError(sec.where, sec.path("kind"), f"expected hinges or stewart, got {quote(kind)}")
    if kind == "hinges":
        sec.done()
        return None
    path = _path(sec, "rig", base)
    load_stewart(path)                           # a bad rig YAML names its own file and key
    rig = RigConfig(path, _names(sec, "axes", 6),
                    sec.number("screw_lead_m", 0.02, positive=True),
                    sec.number("accel_filter_s", 0.01, nonnegative=True), CONVENTIONS["tree" if tree else "chain"])
    sec.done()
    return rig


def _joint_axes(sec: Section, n: int) -> tuple[str, ...]:
    """``joint_axes``: the joint axes in the transmission's motor order."""
    if "leg_axes" in sec.value:
        raise ConfigError(sec.where, sec.path("leg_axes"), "leg_axes was renamed: call the key joint_axes")
    if "joint_axes" not in sec.value:
        raise ConfigError(sec.where, sec.path("joint_axes"), f"missing required key: the {n} joint axes in motor order")
    names = _names(sec, "joint_axes", n)
    twice = sorted({a for a in names if names.count(a) > 1})
    if twice:
        raise ConfigError(sec.where, sec.path("joint_axes"), f"axis {quote(twice[0])} is listed twice")
    return names


def _control(sec: Section, n: int, base: Path, tree: bool) -> ControlConfig:
    mode = sec.raw("mode", "csp")
    if mode not in MODES:
        raise ConfigError(sec.where, sec.path("mode"), f"expected one of {MODES}, got {quote(mode)}")
    leg = _joint_axes(sec, n)
    rig = _rig(sec.sub("platform", {}), base, tree)
    if rig is not None and "platform_axes" in sec.value:
        raise ConfigError(sec.where, sec.path("platform_axes"), "the Stewart-Gough rig's axes are "
                          "control.platform.axes: remove platform_axes")
    if rig is not None:
        platform = rig.axes
    else:
        platform = _names(sec, "platform_axes", 2) if "platform_axes" in sec.value else ()
    support = sec.raw("support", "hung")
    if support not in SUPPORTS:
        raise ConfigError(sec.where, sec.path("support"), f"expected one of {SUPPORTS}, got {quote(support)}")
    if not tree and "support" in sec.value:
        raise ConfigError(sec.where, sec.path("support"), "only a kinematic tree robot changes its root with "
                          "the support: a serial chain has its base only")
    split = sec.raw("load_split", "planned")
    if split not in LOAD_SPLITS:
        raise ConfigError(sec.where, sec.path("load_split"), f"expected one of {LOAD_SPLITS}, got {quote(split)}")
    g = sec.sub("gains")
    kp, ki, kd = (_per_joint(g, k, n, d) for k, d in (("kp", 400.0), ("ki", 50.0), ("kd", 20.0)))
    filt = g.number("derivative_filter_s", 0.004, positive=True)
    g.done()
    cfg = ControlConfig(
        mode=mode, joint_axes=leg, platform_axes=platform, support=support, load_split=split,
        platform_ratio=sec.number("platform_ratio", 50.0, positive=True),
        platform_limit=math.radians(sec.number("platform_limit_deg", 25.0, positive=True)),
        kp=kp, ki=ki, kd=kd, derivative_filter=filt,
        soft_limit_margin=sec.number("soft_limit_margin_rad", 0.02, nonnegative=True),
        watchdog=sec.number("watchdog_s", 1.0, positive=True),
        enable_timeout=sec.number("enable_timeout_s", 2.0, positive=True),
        stop_duration=sec.number("stop_duration_s", 0.5, positive=True),
        stabilizer_failure_cycles=_count(sec, "stabilizer_failure_cycles", 5), rig=rig,
        coulomb_velocity=sec.number("coulomb_velocity_rad_s", COULOMB_VELOCITY, nonnegative=True))
    sec.done()
    return cfg


def _dir(sec: Section, name: str, base: Path) -> Path | None:
    raw = sec.raw(name, None)
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw:
        raise ConfigError(sec.where, sec.path(name), f"expected a directory path or null, got {quote(raw)}")
    p = (base / raw).resolve()
    if not p.is_dir():
        raise ConfigError(sec.where, sec.path(name), f"no such directory {p}")
    return p


def _int_in(sec: Section, name: str, default: int, lo: int, hi: int) -> int:
    v = sec.raw(name, default)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ConfigError(sec.where, sec.path(name), f"expected an integer in {lo}..{hi}, got {quote(v)}")
    return v


def _endpoint(sec: Section, name: str, default: str, secured: bool) -> str:
    """A ZMQ endpoint to bind: ``tcp://HOST:PORT`` (port 1..65535 or ``*``) or ``ipc://PATH``
    in an existing folder; beyond loopback only with ``io.curve``."""
    v = sec.raw(name, default)
    where, key = sec.where, sec.path(name)
    if not isinstance(v, str) or "://" not in v:
        raise ConfigError(where, key, f"expected a ZMQ endpoint like tcp://127.0.0.1:5555, got {quote(v)}")
    scheme, rest = v.split("://", 1)
    if scheme == "ipc":
        folder = Path(rest).parent
        if not rest or not folder.is_dir():
            raise ConfigError(where, key, f"{quote(v)}: the folder {folder} of the ipc socket does not exist")
    elif scheme == "tcp":
        host, sep, port = rest.rpartition(":")
        if not sep or not host:
            raise ConfigError(where, key, f"{quote(v)} is not tcp://HOST:PORT")
        if port != "*" and not (port.isdigit() and 1 <= int(port) <= 65535):
            raise ConfigError(where, key, f"{quote(v)}: the port must be 1..65535 or *")
    else:
        raise ConfigError(where, key, f"{quote(v)}: expected a tcp:// or ipc:// endpoint")
    if not secured and not is_loopback(v):
        raise ConfigError(where, key, f"{v} binds beyond loopback: configure io.curve (CURVE keys) or bind "
                          "127.0.0.1")
    return v


def _curve(sec: Section | None, base: Path) -> ServerCurve | None:
    """``io.curve``: the server's secret certificate and a folder of authorised client
    certificates (``*.key``), both as written by ``zmq.auth.create_certificates``."""
    if sec is None:
        return None
    secret = _path(sec, "server_secret_key_file", base)
    clients = _dir(sec, "authorized_clients_dir", base)
    if clients is None:
        raise ConfigError(sec.where, sec.path("authorized_clients_dir"), "missing required key")
    sec.done()
    keys = sorted(clients.glob("*.key"))
    if not keys:
        raise ConfigError(sec.where, sec.path("authorized_clients_dir"),
                          f"{clients} holds no client public certificate (*.key)")
    try:
        return ServerCurve.from_files(secret, keys)
    except CurveConfigError as e:
        raise ConfigError(sec.where, sec.path("server_secret_key_file"), str(e)) from None


def _io(sec: Section, base: Path) -> IoConfig:
    curve = _curve(sec.sub("curve") if sec.raw("curve", None) is not None else None, base)
    cmd = _endpoint(sec, "command", IoConfig.command, curve is not None)
    tel = _endpoint(sec, "telemetry", IoConfig.telemetry, curve is not None)
    dec = sec.raw("decimation", 10)
    if isinstance(dec, bool) or not isinstance(dec, int) or dec < 1:
        raise ConfigError(sec.where, sec.path("decimation"), f"expected an integer >= 1, got {quote(dec)}")
    log_dir = sec.raw("log_dir", None)
    if log_dir is not None and (not isinstance(log_dir, str) or not log_dir):
        raise ConfigError(sec.where, sec.path("log_dir"), f"expected a directory path or null, got {quote(log_dir)}")
    if log_dir is not None:                     # created at start: it need not exist yet
        log_dir = str((base / log_dir).resolve())
    traj_dir = _dir(sec, "trajectory_dir", base)
    traj_max = _int_in(sec, "trajectory_max_bytes", IoConfig.trajectory_max_bytes, 1, 1 << 30)
    max_request = _int_in(sec, "max_request_bytes", IoConfig.max_request_bytes, 1024, MAX_REQUEST_BYTES)
    live = _live_view(sec.sub("live_view", {}))
    on_failure = sec.raw("on_log_failure", IoConfig.on_log_failure)
    if on_failure not in ON_LOG_FAILURE:
        raise ConfigError(sec.where, sec.path("on_log_failure"), f"expected one of {ON_LOG_FAILURE}, "
                          f"got {quote(on_failure)}")
    sec.done()
    return IoConfig(cmd, tel, dec, log_dir, traj_dir, traj_max, max_request, curve, live, on_failure)


def _live_view(sec: Section) -> LiveViewConfig:
    """``io.live_view``: ``enabled`` (bool), ``host`` (loopback only: the WebSocket has no
    authentication), ``port`` (0: any free port) and ``allow_parameters`` (bool: Foxglove may set
    parameters; read-only otherwise)."""
    enabled, allow = sec.raw("enabled", False), sec.raw("allow_parameters", False)
    for key, value in (("enabled", enabled), ("allow_parameters", allow)):
        if not isinstance(value, bool):
            raise ConfigError(sec.where, sec.path(key), f"expected true or false, got {quote(value)}")
    host = sec.raw("host", LiveViewConfig.host)
    if not isinstance(host, str) or not is_loopback(f"tcp://{host}:1"):
        raise ConfigError(sec.where, sec.path("host"), f"{quote(host)} is not a loopback address: the live view "
                          "has no authentication, so it listens on 127.0.0.1 only")
    port = _int_in(sec, "port", LiveViewConfig.port, 0, 65535)
    sec.done()
    return LiveViewConfig(enabled, host, port, allow)


def _check_stabilizer(path: Path, robot_path: Path, period: float, bus: BusConfig, where: str) -> None:
    """The stabilizer YAML must describe the daemon's robot (the same file, or a copy of it)
    and run at the loop's period, and the bus must carry the foot IMU if its tilt source or its
    acceleration needs it (and the sole's load cells with the IMU as tilt source); else a
    ConfigError naming both files and both values."""
    stab = load_stabilizer_config(path)
    if (stab.tilt_source == TILT_IMU or stab.use_acceleration) and bus.imu_axis is None:
        key = "tilt.source: imu" if stab.tilt_source == TILT_IMU else "tilt.use_acceleration: true"
        raise ConfigError(where, "stabilizer", f"{path}: {key} needs the foot IMU, but no axis of "
                          f"{where} bus.nodes declares sensor: imu")
    if stab.tilt_source == TILT_IMU and bus.sensor_axis("sole") is None:
        raise ConfigError(where, "stabilizer", f"{path}: tilt.source: imu needs the sole's load cells (the IMU's "
                          f"tilt is believed only while the foot is flat), but no axis of {where} bus.nodes "
                          f"declares sensor: sole")
    _same_robot(path, Path(stab.robot_path).resolve(), robot_path, period, stab.period, where)


def _same_robot(path: Path, ours: Path, robot_path: Path, period: float, theirs: float, where: str) -> None:
    """A stabilizer YAML's robot must be the daemon's (the same file, or a copy of it) and its period the
    loop's; else a ConfigError naming both files and both values."""
    if ours != robot_path and not (ours.is_file() and ours.read_bytes() == robot_path.read_bytes()):
        raise ConfigError(where, "stabilizer", f"{path}: robot: {ours} is not the daemon's robot {robot_path}")
    if abs(theirs - period) > 1e-12:
        raise ConfigError(where, "stabilizer", f"{path}: period: {theirs} s differs from the daemon's "
                          f"loop.period_s {period} s")


def _check_whole_body(path: Path, robot_path: Path, period: float, control: ControlConfig, bus: BusConfig,
                      where: str) -> None:
    """A tree robot's ``stabilizer:`` is the whole-robot stabilizer's YAML (stabilizer.whole_body_config)
    for the daemon's robot and period, with the inputs the loop has: the platform's tilt or the pelvis
    IMU (bus sensor pelvis_imu) and, with ``tilt.use_acceleration``, the support's acceleration, which
    only the Stewart–Gough rig measures (its forward kinematics, docs/rig.md); the support phase of the
    ``stabilizer`` command or the feet's load cells (bus sensors left_loads and right_loads), the robot standing
    (control.support: ground)."""
    try:
        stab = load_whole_body_config(path)
    except ConfigError as e:
        raise ConfigError(where, "stabilizer", f"{robot_path.name} is a kinematic tree: its stabilizer is the "
                          f"whole robot's (stabilizer.whole_body_config), and {e}") from None
    _same_robot(path, Path(stab.robot_path).resolve(), robot_path, period, stab.period, where)
    if stab.use_acceleration and control.rig is None:
        raise ConfigError(where, "stabilizer", f"{path}: tilt.use_acceleration: true needs the support's "
                          f"acceleration, which only the Stewart-Gough rig measures for a tree robot "
                          f"(control.platform kind: stewart); use tilt.source: imu (the pelvis IMU measures it) "
                          f"or set it false")
    pelvis_frame = "pelvis"        # where the bus's pelvis_imu sits (drivers.config.SENSORS), in its axes
    if stab.tilt_source == "imu" and not bus.sensor_axes("pelvis_imu"):
        raise ConfigError(where, "stabilizer", f"{path}: tilt.source: imu needs the pelvis IMU, but no axis of "
                          f"{where} bus.nodes declares sensor: pelvis_imu")
    if stab.tilt_source == "imu" and stab.imu_frame != pelvis_frame:
        raise ConfigError(where, "stabilizer", f"{path}: tilt.imu_frame: {stab.imu_frame} is not the frame of the "
                          f"bus's pelvis_imu ({pelvis_frame})")
    lacking = [s for s in ("left_loads", "right_loads") if not bus.sensor_axes(s)]
    for key, needs in (("support.source: sensors", stab.support_source == "sensors"),
                       ("tilt.source: imu", stab.tilt_source == "imu")):   # the IMU believed while the feet are loaded
        if needs and lacking:
            raise ConfigError(where, "stabilizer", f"{path}: {key} needs the feet's load cells, but no axis of "
                              f"{where} bus.nodes declares sensor: {', '.join(lacking)}")
    if control.support != "ground":
        raise ConfigError(where, "control.support", f"{control.support}: the whole-robot stabilizer stands the "
                          f"robot on its soles; set ground (or remove the stabilizer key)")


def parse_daemon_config(data: Any, where: str, base: Path) -> DaemonConfig:
    top = Section(where, "", data)
    robot_path = _path(top, "robot", base)
    stabilizer_path = _path(top, "stabilizer", base, required=False)
    robot = load_robot(robot_path)
    tree = isinstance(robot, TreeRobot)
    bus_section = top.raw("bus")
    try:
        bus = parse_bus_config(bus_section)
    except BusConfigError as e:
        raise ConfigError(where, "bus", str(e)) from None
    if bus.backend not in BACKENDS:
        raise ConfigError(where, "bus.backend", f"unknown backend {quote(bus.backend)} (known: "
                          f"{', '.join(sorted(BACKENDS))})")
    loop = _loop(top.sub("loop", {}))
    control = _control(top.sub("control"), robot.n, base, tree)
    for axis in control.joint_axes + control.platform_axes:
        if axis not in {a.name for a in bus.axes}:
            raise ConfigError(where, "control", f"axis {quote(axis)} is not on the bus (bus axes: "
                              f"{', '.join(a.name for a in bus.axes)})")
    if robot.description.transmission is None:
        raise ConfigError(where, "robot", f"{robot_path} has no transmission section: the daemon maps "
                          "joints to motors through it")
    if abs(bus.control_period_s - loop.period) > 1e-12:
        raise ConfigError(where, "loop.period_s", f"{loop.period} s differs from bus.control_period_s "
                          f"{bus.control_period_s} s")
    if bus.plant not in PLANTS:
        raise ConfigError(where, "bus.plant", f"unknown plant {quote(bus.plant)} (known: {', '.join(PLANTS)})")
    if tree and bus.backend == "sim" and bus.plant == "leg":
        raise ConfigError(where, "bus.plant", f"the leg plant simulates the 4-joint bench leg, not the tree "
                          f"{robot.model.name}: set bus.plant: biped")
    if not tree and bus.backend == "sim" and bus.plant == "biped":
        raise ConfigError(where, "bus.plant", f"the biped plant simulates a whole-robot tree, not the chain "
                          f"{robot.model.name}: set bus.plant: leg")
    problem = missing(*NEEDS[bus.plant]) if bus.backend == "sim" and bus.plant in NEEDS else None
    if problem:
        raise ConfigError(where, "bus.plant", f"{bus.plant} {problem}")
    soles, pelvis = set(SOLES.values()), robot.description.base if tree else None
    if tree and control.support == "hung" and pelvis not in robot.model.root_names:
        raise ConfigError(where, "control.support", f"hung roots the model at the base {pelvis!r}, but {robot_path} "
                          f"roots: {list(robot.model.root_names)} lack it")
    if tree and control.support == "ground" and not soles <= set(robot.model.root_names):
        raise ConfigError(where, "control.support", f"ground roots the model at the stance sole, but "
                          f"{robot_path} roots: {list(robot.model.root_names)} lack {sorted(soles)}")
    if tree and stabilizer_path is not None:
        _check_whole_body(stabilizer_path, robot_path, loop.period, control, bus, where)
    elif stabilizer_path is not None:
        _check_stabilizer(stabilizer_path, robot_path, loop.period, bus, where)
    io = _io(top.sub("io", {}), base)
    feet = parse_feet(top.sub("feet", {}))
    top.done()
    return DaemonConfig(Path(where), robot_path, stabilizer_path, dict(bus_section), bus, loop, control, io, feet)


def load_daemon_config(path: str | Path, backend: str | None = None,
                       lockstep: bool | None = None, stepped: bool | None = None) -> DaemonConfig:
    """Read, override (``--backend``, ``--lockstep``, ``--stepped``, which implies lock-step)
    and validate the daemon YAML."""
    p = Path(path).resolve()
    data = read_yaml(p)
    if isinstance(data, dict):
        if backend is not None and isinstance(data.get("bus"), dict):
            data["bus"] = dict(data["bus"], backend=backend)
        if stepped:
            lockstep = True
        for key, value in (("lockstep", lockstep), ("stepped", stepped)):
            if value is not None:
                data["loop"] = dict(data.get("loop") or {}, **{key: value})
    return parse_daemon_config(data, str(p), p.parent)
