"""``bipd hil``: the POWERLINK controlled nodes and the MuJoCo leg, in their own process.

The daemon runs unmodified with ``--backend udp``; this process answers its frames with
:func:`drivers.sim.udp_server.serve_udp` driving a :class:`~drivers.sim.hil.plant_mujoco.MujocoPlant`.
The plant advances one bus cycle per SoA, so the managing node sets the pace:

- lock-step (default): the plant advances exactly when frames arrive; with the daemon in
  ``--lockstep`` the pair is deterministic and runs as fast as the CPU allows;
- ``--realtime``: at the start of each control period the plant's clock is also kept from running
  more than one period ahead of the wall clock (this process sleeps), and a lag (a paused daemon)
  is forgiven rather than caught up, so the physics never runs faster than real time. Only there:
  the managing node sends a period's frames at once, and a sleep inside that burst would hold
  its answers back past the daemon's deadline.

``--throttle-s S`` sleeps S s of wall time at the start of every control period: a slow host, for
tests that verdicts do not depend on the host's speed.

A config whose robot is a kinematic tree (its YAML has ``base:``, e.g. deploy/robots/bip2000.yaml)
is served by the whole biped, :class:`~drivers.sim.hil.plant_biped.BipedPlant`, one motor per joint
named after it, standing in its flexed posture on the floor (on the Stewart-Gough rig's plate with
``control.platform: {kind: stewart}``, the rig's six motors on its axes), or with ``--hung`` hung by the pelvis
from a gantry (Gastebois 2017 §2.6.2); its pushes name a body of the robot (default ``pelvis``),
in world axes (z up, x forward), and its truth frames carry the sensors listed in
:mod:`drivers.sim.hil.plant_biped`.

``--bolt-foot`` welds the foot to the platform plate (the thesis bolts it for the squat, §2.6.1), so
the leg cannot fall by tipping. The UDP control channel also takes the plant op ``push``
(:meth:`~drivers.sim.hil.plant_mujoco.MujocoPlant.control`): ``{"op": "push", "body": "hip", "force":
[fx, fy, fz], "duration": s}``, N in thesis world axes (x up, y lateral, z toe), s of plant time,
answered ``{"ok": true}``; ``{"op": "truth"}`` is answered ``{"t": plant time, "truth_t": time of the
last truth frame sent}`` (a client of a paused lock-step bench waits for that frame).

``--interface IF [--netns NAME]``: the frames come over raw Ethernet instead
(:mod:`drivers.sim.hil.wire`, the daemon on ``--backend raw``); the control channel stays on UDP.

Ground truth for the scenario runner: every ``--truth-every`` bus cycles, a ZMQ PUB message
[b"truth", JSON] with the plant's ``sensors`` (vectors as lists, scalars as numbers, ``cop`` NaN
when the foot is unloaded), ``t``, the plant time in s, and (served on the bus) ``following_error``: per bus axis (in
``bus.axes`` order) the drive's peak |following error| (CSP position demand − actual, object
0x60F4, motor rad) over the bus cycles since the previous frame.

Only the YAML keys this side needs are read (drivers never import the controller): ``robot``
(relative to the file), ``bus``, ``control.platform_ratio`` (default 50),
``control.soft_limit_margin_rad`` (default 0.02; the leg starts at q = 0 clipped 2 margins inside
its limits, as the daemon's ``sim`` plant) and ``control.platform`` (kind ``stewart``: the leg on the
Stewart-Gough rig's plate, :mod:`drivers.sim.hil.plant_mujoco_rig`, its ``rig``, ``axes`` and ``screw_lead_m``).
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import zmq

from models import ConfigError, ModelError, Robot
from models.rig.stewart import StewartModel
from models.common.validation import read_yaml

from drivers.sim.udp_server import serve_udp
from drivers.sim.hil.wire import serve_wire
from drivers.hal import LinkError
from drivers.config import BusConfig, BusConfigError, parse_bus_config
from drivers.sim.drive import DriveBank
from drivers.sim.plant import Plant
from drivers.sim.hil.mjcf import MjcfError
from drivers.sim.hil.plant_biped import BipedPlant
from drivers.sim.hil.plant_mujoco import MujocoPlant, MujocoPlantError, SimulationError
from drivers.sim.hil.plant_mujoco_rig import MujocoRigPlant
from drivers.sim.hil.terrain import Terrain, TerrainError, terrain

DEFAULT_CONFIG = Path(__file__).resolve().parents[3] / "deploy" / "bipd.yaml"
DEFAULT_TRUTH = "tcp://127.0.0.1:5557"
TOPIC = b"truth"


class HilConfigError(ValueError):
    """A daemon YAML the HIL process cannot use; the message names the file and the key."""


@dataclass(frozen=True)
class RigHil:
    """``control.platform: {kind: stewart}``: the leg on the Stewart-Gough rig (drivers.sim.hil.plant_mujoco_rig)."""
    rig_path: Path
    axes: tuple[str, ...]
    screw_lead: float


@dataclass(frozen=True)
class HilConfig:
    robot_path: Path
    bus: BusConfig
    platform_ratio: float
    soft_limit_margin: float
    rig: RigHil | None = None


def _number(section: dict, key: str, default: float, where: str) -> float:
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise HilConfigError(f"{where}: control.{key} must be a finite number >= 0, got {value!r}")
    return float(value)


def load_hil_config(path: str | Path, udp_port: int | None = None) -> HilConfig:
    """The robot path, ``bus:`` (``udp.port`` replaced by ``udp_port``) and platform ratio of a daemon YAML."""
    p = Path(path).resolve()
    document = read_yaml(p)
    if not isinstance(document, dict):
        raise HilConfigError(f"{p}: the configuration must be a mapping with robot:, bus: and control:")
    for key in ("robot", "bus"):
        if key not in document:
            raise HilConfigError(f"{p}: {key}: missing")
    if not isinstance(document["robot"], str):
        raise HilConfigError(f"{p}: robot: must be a path string, got {document['robot']!r}")
    bus = document["bus"]
    if not isinstance(bus, dict):
        raise HilConfigError(f"{p}: bus: must be a mapping")
    if udp_port is not None:
        bus = dict(bus, udp=dict(bus.get("udp") or {}, port=udp_port))
    try:
        bus_config = parse_bus_config(bus)
    except BusConfigError as exc:
        raise HilConfigError(f"{p}: {exc}") from None
    control = document.get("control") or {}
    if not isinstance(control, dict):
        raise HilConfigError(f"{p}: control: must be a mapping")
    ratio = _number(control, "platform_ratio", 50.0, str(p))
    if ratio == 0:
        raise HilConfigError(f"{p}: control.platform_ratio must be > 0")
    return HilConfig((p.parent / document["robot"]).resolve(), bus_config, ratio,
                     _number(control, "soft_limit_margin_rad", 0.02, str(p)), _rig(control, p))


def _rig(control: dict, p: Path) -> RigHil | None:
    """``control.platform`` of kind stewart (the daemon validates the rest of the section)."""
    section = control.get("platform") or {}
    if not isinstance(section, dict) or section.get("kind", "hinges") != "stewart":
        return None
    rig, axes = section.get("rig"), section.get("axes")
    if not isinstance(rig, str) or not (isinstance(axes, list) and len(axes) == 6):
        raise HilConfigError(f"{p}: control.platform: a stewart rig needs rig: (its YAML) and axes: (six names)")
    return RigHil((p.parent / rig).resolve(), tuple(axes), _number(section, "screw_lead_m", 0.02, f"{p}: platform"))


def initial_posture(robot: Robot, margin: float) -> np.ndarray:
    """q = 0 clipped 2 margins inside the joint limits (the daemon's ``sim`` leg starts there too)."""
    m = robot.model
    return np.clip(np.zeros(robot.n), m.qmin + 2.0 * margin, m.qmax - 2.0 * margin)


class ServedPlant(Plant):
    """A plant as served on the bus: it publishes its sensors every ``truth_every`` steps through
    ``publish`` (JSON bytes) and, when ``realtime``, keeps its clock at most ``lead_s`` ahead of
    ``clock`` (sleeping) at the start of every period of ``period_cycles`` steps and forgives a lag
    of more than ``lead_s``; ``throttle_s`` > 0 sleeps that long at the start of every period (a
    slow host). Shares the plant's arrays.

    A truth frame is a copy of the sensors taken at its step; it is encoded and sent in
    :meth:`idle`, once the server has answered the datagram, so the JSON work stays out of the
    managing node's round trip (a second frame due before then sends the first at once)."""

    def __init__(self, plant: Plant, *, publish: Callable[[bytes], None] | None = None, truth_every: int = 25,
                 realtime: bool = False, lead_s: float = 0.002, period_cycles: int = 5, throttle_s: float = 0.0,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        if truth_every < 1 or period_cycles < 1:
            raise ValueError(f"truth_every and period_cycles must be >= 1 bus cycle, got {truth_every} "
                             f"and {period_cycles}")
        self.plant = plant
        self.n_motors = plant.n_motors
        self.motor_position = plant.motor_position
        self.motor_velocity = plant.motor_velocity
        self.sensors = plant.sensors
        self.time = 0.0
        self.cycles = 0
        self._publish = publish
        self._every = truth_every
        self._realtime = realtime
        self._throttle = throttle_s
        self._lead = lead_s
        self._period = period_cycles
        self._clock = clock
        self._sleep = sleep
        self._wall0: float | None = None
        self._snapshot = {name: np.array(value) for name, value in self.sensors.items()}
        self._snapshot_t: float | None = None
        self.truth_t: float | None = None          # plant time of the last truth frame sent
        self._drives: DriveBank | None = None
        self._following = np.zeros(0)

    def watch_drives(self, bank: DriveBank) -> None:
        """Take the drives' peak following errors into every truth frame from now on."""
        self._drives = bank
        self._following = np.zeros(bank.x.shape[0])

    def control(self, request: dict) -> dict:
        """``truth`` (module docstring), else plant-specific control ops, forwarded to the plant's
        ``control`` when it has one."""
        if request.get("op") == "truth":
            return {"t": self.time, "truth_t": self.truth_t}
        hook = getattr(self.plant, "control", None)
        if hook is None:
            return {"error": f"unknown control op {request.get('op')!r} (known: fault, reset, shutdown)"}
        return hook(request)

    def reset(self) -> None:
        self.plant.reset()
        self.time = 0.0
        self.cycles = 0
        self._wall0 = None

    def step(self, dt: float, motor_torque: np.ndarray) -> None:
        if self.cycles % self._period == 0:
            if self._realtime:
                self._pace()
            if self._throttle > 0.0:
                self._sleep(self._throttle)
        self.plant.step(dt, motor_torque)
        self.time += dt
        self.cycles += 1
        if self._publish is not None and self.cycles % self._every == 0:
            if self._snapshot_t is not None:
                self.idle()
            for name, value in self.sensors.items():
                np.copyto(self._snapshot[name], value)
            if self._drives is not None:
                self._drives.take_following_peak(self._following)
            self._snapshot_t = self.time

    def idle(self) -> None:
        """Send the truth frame taken since the last call, if any."""
        if self._snapshot_t is not None:
            self._publish(self.truth())
            self.truth_t = self._snapshot_t
            self._snapshot_t = None

    def _pace(self) -> None:
        now = self._clock()
        if self._wall0 is None:
            self._wall0 = now - self.time
        ahead = self.time - (now - self._wall0)
        if ahead > self._lead:
            self._sleep(ahead - self._lead)
        elif ahead < -self._lead:
            self._wall0 = now - self.time

    def truth(self) -> bytes:
        """The last truth frame taken (sensors and the plant time ``t`` at its step) as JSON."""
        frame = {name: value.tolist() for name, value in self._snapshot.items()}
        frame["t"] = self._snapshot_t
        if self._drives is not None:
            frame["following_error"] = self._following.tolist()
        return json.dumps(frame).encode()


def is_tree(robot_path: Path) -> bool:
    """Whether a robot YAML describes a kinematic tree (it has a ``base:`` body, models.tree.config)."""
    document = read_yaml(robot_path)
    return isinstance(document, dict) and "base" in document


def build_plant(config: HilConfig, *, bolt_foot: bool = False, hung: bool = False,
                terrain: Terrain | None = None) -> Plant:
    """The MuJoCo plant of ``config``: the whole biped for a tree robot (``hung`` from the gantry,
    on ``terrain`` when given), else the leg on its platform (``bolt_foot``: the foot welded to the plate)."""
    if terrain is not None and not terrain.flat and not is_tree(config.robot_path):
        raise HilConfigError(f"--floor-pitch/--floor-roll/--floor-step shape the floor under a tree robot; "
                             f"{config.robot_path.name} is the leg on its platform")
    if is_tree(config.robot_path):
        if bolt_foot:
            raise HilConfigError(f"--bolt-foot is for the leg on its platform; {config.robot_path.name} is a tree "
                                 f"robot (use --hung to hang it from the gantry)")
        rig = {} if config.rig is None else {      # on the Stewart-Gough rig (control.platform kind stewart)
            "rig": StewartModel.from_yaml(config.rig.rig_path), "rig_axes": config.rig.axes,
            "screw_lead": config.rig.screw_lead}
        return BipedPlant.from_config(config.bus, config.robot_path, hung=hung, platform_ratio=config.platform_ratio,
                                      terrain=terrain, **rig)
    if hung:
        raise HilConfigError(f"--hung needs a tree robot (a YAML with base:), {config.robot_path.name} is the "
                             f"leg on its platform")
    robot = Robot.from_yaml(config.robot_path)
    q0 = initial_posture(robot, config.soft_limit_margin)
    if config.rig is not None:                 # the leg on the Stewart-Gough rig (control.platform kind stewart)
        return MujocoRigPlant.from_config(config.bus, robot, StewartModel.from_yaml(config.rig.rig_path),
                                          config.rig.axes, config.rig.screw_lead, q0, bolt_foot=bolt_foot)
    return MujocoPlant.from_config(config.bus, robot, config.platform_ratio, q0, bolt_foot=bolt_foot)


def serve(config: HilConfig, *, truth_endpoint: str | None = DEFAULT_TRUTH, truth_every: int = 25,
          realtime: bool = False, idle_timeout_s: float | None = None, bolt_foot: bool = False,
          throttle_s: float = 0.0, hung: bool = False, terrain: Terrain | None = None,
          interface: str | None = None, netns: str | None = None) -> None:
    """Build the MuJoCo plant of ``config`` (:func:`build_plant`) on ``terrain`` and serve the bus
    until a shutdown request (or idle); ``throttle_s``: wall seconds slept per period; ``interface``:
    serve the frames on this raw Ethernet interface (in network namespace ``netns``,
    :mod:`drivers.sim.hil.wire`) instead of UDP."""
    plant = build_plant(config, bolt_foot=bolt_foot, hung=hung, terrain=terrain)
    context = zmq.Context.instance()
    pub = None
    if truth_endpoint:
        pub = context.socket(zmq.PUB)
        pub.setsockopt(zmq.LINGER, 0)
        pub.bind(truth_endpoint)
    try:
        gc.collect()
        gc.freeze()             # MuJoCo, Numba and the model stay out of every later collection
        served = ServedPlant(plant, realtime=realtime, truth_every=truth_every, throttle_s=throttle_s,
                             lead_s=config.bus.control_period_s, period_cycles=config.bus.cycles_per_control,
                             publish=None if pub is None else lambda data: pub.send_multipart([TOPIC, data]))
        watch = lambda network: served.watch_drives(network.bank)          # noqa: E731
        if interface is None:
            serve_udp(config.bus, served, idle_timeout_s=idle_timeout_s, on_network=watch)
        else:
            serve_wire(config.bus, served, interface, netns, idle_timeout_s=idle_timeout_s, on_network=watch)
    finally:
        if pub is not None:
            pub.close()


def main(argv: Sequence[str] | None = None) -> int:
    """``bipd hil``: exit 0 after a shutdown request or idle timeout, 1 on a simulation fault,
    2 on a bad configuration."""
    parser = argparse.ArgumentParser(prog="bipd hil", description="Serve the POWERLINK controlled nodes and "
                                     "the MuJoCo plant (the leg, or the whole biped of a tree robot) to a daemon "
                                     "run with --backend udp.")
    parser.add_argument("--config", default=str(DEFAULT_CONFIG), help="daemon YAML (robot:, bus:, control:)")
    parser.add_argument("--udp-port", type=int, default=None, help="override bus.udp.port")
    parser.add_argument("--truth", default=DEFAULT_TRUTH, help="ZMQ PUB endpoint of the ground truth ('' for none)")
    parser.add_argument("--truth-every", type=int, default=25, help="bus cycles between truth frames")
    parser.add_argument("--realtime", action="store_true", help="never run the plant ahead of the wall clock")
    parser.add_argument("--interface", metavar="IF",
                        help="serve the frames on this raw Ethernet interface (the far end of the daemon's "
                             "bus.interface) instead of UDP; the control channel stays on --udp-port")
    parser.add_argument("--netns", metavar="NAME", help="the network namespace --interface is in")
    parser.add_argument("--idle-timeout", type=float, default=None, help="stop after this many idle seconds")
    parser.add_argument("--throttle-s", type=float, default=0.0, metavar="S",
                        help="sleep S s of wall time per control period: a slow host (tests of speed independence)")
    parser.add_argument("--bolt-foot", action="store_true",
                        help="weld the foot to the platform plate (the thesis' squat bench, §2.6.1)")
    parser.add_argument("--hung", action="store_true",
                        help="a tree robot hangs by the pelvis from a gantry, feet in the air (thesis §2.6.2)")
    parser.add_argument("--floor-pitch", type=float, default=0.0, metavar="DEG",
                        help="the floor tilted about y, deg (> 0: uphill ahead); a tree robot on the floor")
    parser.add_argument("--floor-roll", type=float, default=0.0, metavar="DEG",
                        help="the floor tilted about x, deg (> 0: rising to the left)")
    parser.add_argument("--floor-step", metavar="HEIGHT@X",
                        help="a step of HEIGHT m (< 0: down) at X m ahead of the start")
    args = parser.parse_args(argv)
    try:
        floor = terrain(args.floor_pitch, args.floor_roll, args.floor_step)
    except TerrainError as exc:
        parser.error(str(exc))
    try:
        config = load_hil_config(args.config, args.udp_port)
        if args.truth_every < 1:
            raise HilConfigError(f"--truth-every must be >= 1, got {args.truth_every}")
        if not 0.0 <= args.throttle_s <= 1.0:
            raise HilConfigError(f"--throttle-s must be in [0, 1] s per control period, got {args.throttle_s:g}")
        if args.netns and not args.interface:
            raise HilConfigError("--netns names the namespace of --interface: give --interface too")
        udp = config.bus.udp
        wire = f"raw {args.interface}{f' in {args.netns}' if args.netns else ''}, control " if args.interface else ""
        print(f"[bipd hil] {config.robot_path.name} on MuJoCo, {len(config.bus.axes)} axes at {wire}udp "
              f"{udp.host}:{udp.port}, truth {args.truth or 'off'}, "
              f"{'real time' if args.realtime else 'lock-step'}{', foot bolted' if args.bolt_foot else ''}"
              f"{', hung' if args.hung else ''}{'' if floor.flat else f', terrain {floor.describe()}'}"
              f"{f', throttled {args.throttle_s:g} s per period' if args.throttle_s else ''}",
              file=sys.stderr, flush=True)
        serve(config, truth_endpoint=args.truth, truth_every=args.truth_every, realtime=args.realtime,
              idle_timeout_s=args.idle_timeout, bolt_foot=args.bolt_foot, throttle_s=args.throttle_s,
              hung=args.hung, terrain=floor, interface=args.interface, netns=args.netns)
    except LinkError as exc:
        print(f"bipd hil: {exc}", file=sys.stderr)
        return 2
    except (HilConfigError, ConfigError, BusConfigError, MjcfError, MujocoPlantError) as exc:
        print(f"bipd hil: {exc}", file=sys.stderr)
        return 2
    except (OSError, zmq.ZMQError) as exc:
        print(f"bipd hil: cannot open the UDP port or the truth endpoint: {exc}", file=sys.stderr)
        return 2
    except (ModelError, SimulationError) as exc:
        print(f"bipd hil: simulation stopped: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
