"""`bipd run`: the loop process and the I/O process around one shared-memory block.

The parent process creates the block, starts the loop process (``spawn``: a fresh
interpreter that holds nothing but the loop, docs/cycle.md) and then serves ZMQ
itself. SIGTERM / SIGINT ask for a soft stop through the block: the loop stops any
motion, disables the drives and leaves; the I/O side flushes the cycle log and the
daemon exits 0. Under systemd it reports READY once the loop cycles and feeds the
watchdog only while the loop's cycle counter advances. If the loop process dies without
leaving (a signal, a crash in native code), the I/O side says which process and how,
answers ``status`` (state FAULT, loop exited) for ``LINGER_S`` and exits non-zero (128 +
the signal, as a shell reports it).
"""
from __future__ import annotations

import math
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
import traceback
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import numpy as np

from drivers.health import HEALTH
from models import ConfigError
from models.tree.robot import TreeRobot

from controller.daemon.codes import State
from controller.daemon.config import DaemonConfig, load_daemon_config
from controller.daemon.instance import InstanceLocked, instance_lock
from controller.daemon.plants import PLANTS
from controller.daemon.sdnotify import Notifier
from controller.daemon.shm import RIG_NODES, H, Layout, SharedBlock
from controller.daemon.telemetry import RecordLayout

LINGER_S = 2.0      # s the I/O side keeps answering after the loop process died



def shared_layout(cfg: DaemonConfig) -> Layout:
    """The shared block's layout for ``cfg`` (the rig buffer only with the Stewart-Gough rig)."""
    robot = cfg.robot()
    return Layout(robot.n, len(cfg.bus.axes), RecordLayout(robot.n).size,
                  rig_nodes=RIG_NODES if cfg.control.rig is not None else 0,
                  bus_health=HEALTH.size(nodes=len(cfg.bus.nodes), axes=len(cfg.bus.axes)))


def open_plant_bus(cfg: DaemonConfig, robot):
    """The bus of the config; on the ``sim`` backend it drives the plant ``bus.plant`` names (the
    leg by default); the ``udp`` backend in lock-step waits for every answer of its server (no
    wall-clock deadline decides a loss)."""
    from drivers.hal import open_bus

    if cfg.bus.backend == "sim":
        import numpy as np

        m = robot.model                       # the simulated robot rests slightly off its stops
        margin = 2.0 * cfg.control.soft_limit_margin
        q0 = np.clip(np.zeros(robot.n), m.qmin + margin, m.qmax - margin)
        rig = cfg.control.rig
        if rig is not None:                   # the leg on the Stewart-Gough rig (drivers.sim.plant_rig)
            import math

            from drivers.sim.plant_rig import RigLegPlant
            from models.rig.stewart import StewartModel
            plant = RigLegPlant.from_config(cfg.bus, robot, StewartModel.from_yaml(rig.rig_path),
                                            2.0 * math.pi / rig.screw_lead, rig.axes, q0=q0)
            return open_bus(cfg.bus_section, plant=plant)
        return open_bus(cfg.bus_section, plant=PLANTS[cfg.bus.plant](cfg, robot, q0))
    if cfg.bus.backend in ("udp", "raw"):          # raw in lock-step: the HIL on the wire (drivers.backends.raw)
        return open_bus(cfg.bus_section, lockstep=cfg.loop.lockstep)
    return open_bus(cfg.bus_section)


def _rig_model(cfg: DaemonConfig):
    """The Stewart-Gough rig's model of ``control.platform`` (None for the hinges)."""
    if cfg.control.rig is None:
        return None
    from models.rig.stewart import StewartModel
    return StewartModel.from_yaml(cfg.control.rig.rig_path)


SPEED_SLACK = 1.5
"""A motion may ask a drive for up to this times its ``speed_limit`` (the loop's hard-limit factor on
vmax, controller.daemon.loop.safety.Limits): the drive clamps its speed there and falls behind, a
brief excursion within its following-error limit (the rig's hard step, 5 % over for ~20 ms, plays
without a fault); one beyond it falls a third of the motion's speed behind or more."""


def axis_limits(cfg: DaemonConfig, names: tuple[str, ...], gear: float) -> tuple[float, float]:
    """(speed, acceleration) the drives of the bus axes ``names`` can follow, divided by ``gear`` (motor
    rad per platform rad or actuator m): the lowest ``speed_limit`` times :data:`SPEED_SLACK`, and the
    lowest peak torque (current_limit x torque_constant) over the motor-side inertia of the axis' plant,
    what the motor can give its own rotor (a load only lowers it). (inf, inf) without axes."""
    axes = [a for a in cfg.bus.axes if a.name in names]
    if not axes:
        return math.inf, math.inf
    speed = SPEED_SLACK * min(a.drive.speed_limit for a in axes)
    accel = min(a.drive.current_limit * a.drive.torque_constant / a.plant.inertia for a in axes)
    return speed / gear, accel / gear


def loop_main(config_path: str, backend: str | None, lockstep: bool | None, shm_name: str,
              stepped: bool | None = None, capture: str | None = None) -> None:
    """Entry point of the loop process; ``capture``: a pcapng file for every frame on the bus."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)              # the parent handles the signals
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    cfg = load_daemon_config(config_path, backend, lockstep, stepped)
    block = SharedBlock(shared_layout(cfg), name=shm_name)
    code = 1
    bus = None
    from drivers.hal import LinkError
    try:
        from controller.daemon.loop.loop import ControlLoop
        from controller.daemon.loop.timing import DeadlineClock, LockstepClock, setup_realtime

        robot = cfg.robot()
        stab = cfg.stabilizer()
        bus = open_plant_bus(cfg, robot)
        if capture:
            bus.capture(capture)
        if cfg.loop.lockstep:
            clock = LockstepClock(cfg.loop.period)
        else:
            clock = DeadlineClock(cfg.loop.period, cfg.loop.spin)
            for w in setup_realtime(cfg.loop.priority, cfg.loop.cpus or None, cfg.loop.lock_memory):
                print(f"bipd: warning: {w}", file=sys.stderr, flush=True)
        loop = ControlLoop(cfg, block, bus, robot, stab, clock, parent_pid=os.getppid())
        print("bipd: loop process: booting the network, compiling or loading the cycle's kernels",
              file=sys.stderr, flush=True)
        loop.start()
        code = loop.run()
    except LinkError as e:                                    # e.g. a lock-step HIL server gone silent
        print(f"bipd: error: {e}; the control loop stopped, drives disabled", file=sys.stderr, flush=True)
        block.header[H.LOOP_STATE] = int(State.FAULT)
    except Exception:                                         # report, then leave the drives off
        traceback.print_exc()
        print("bipd: error: the control loop stopped on the exception above; drives disabled",
              file=sys.stderr, flush=True)
        block.header[H.LOOP_STATE] = int(State.FAULT)
    finally:
        if bus is not None:
            bus.close()
        block.header[H.LOOP_EXIT_CODE] = code
        block.header[H.LOOP_EXIT] = 1
        block.close()


def run_daemon(config_path: str | Path, backend: str | None = None, lockstep: bool | None = None,
               say=print, operator=None, stepped: bool | None = None,
               trajectory_dir: Path | None = None, capture: str | Path | None = None) -> int:
    """Start both processes and serve until shutdown; returns the exit code.
    ``operator(command_endpoint, telemetry_endpoint)``, if given, runs in a thread
    once the loop cycles (a scripted client, e.g. the squat demo), then shuts down.
    ``trajectory_dir``, if given, is this run's only trajectory folder in place of
    ``io.trajectory_dir`` (the walk demo's run folder). ``capture``, if given, is the pcapng file
    that receives every frame the managing node sends and receives (drivers.powerlink.capture).

    Everything that can refuse to start (the instance lock, the ZMQ binds, the cycle log's
    run folder, the live view's port) is done before the loop process exists: a refusal is a :class:`ConfigError`
    naming the key, and the bus is never touched."""
    say("bipd: loading the configuration and the models (the first run compiles the Numba "
        "kernels: about a minute; later runs load them from the cache)")
    cfg = load_daemon_config(config_path, backend, lockstep, stepped)
    if trajectory_dir is not None:
        cfg = replace(cfg, io=replace(cfg.io, trajectory_dir=Path(trajectory_dir)))
    robot = cfg.robot()
    with ExitStack() as stack:
        try:
            stack.enter_context(instance_lock(cfg.io.command))
        except InstanceLocked as e:
            raise ConfigError(str(cfg.source), "io.command", str(e)) from None
        block = SharedBlock(shared_layout(cfg), create=True)
        stack.callback(block.close)
        server = _open_server(cfg, robot, block)
        stack.callback(server.close)                          # closed first on the way out: flushes the log
        if cfg.io.live_view.enabled:
            server.live = _open_live_view(cfg, robot, server)
            say(f"bipd: live view on ws://{cfg.io.live_view.host}:{server.live.port} (Foxglove: Open connection)")
        code = _run(config_path, backend, lockstep, stepped, cfg, robot, block, server, say, operator,
                    None if capture is None else str(capture))
    if server.log_error is not None:
        say(f"bipd: warning: {server.log_error}; the run's log ends there")
    say(f"bipd: stopped (exit {code})")
    return code


def io_context(cfg: DaemonConfig, robot):
    """What the I/O process validates commands against (controller.daemon.io.protocol.Context): the robot's
    limits, the bus, the rig and what its tilts mean (models.rig.tilt)."""
    from models.rig.tilt import THESIS

    from controller.daemon.io.protocol import Context

    from controller.daemon.io.effort import TrajectoryTorques

    ctl = cfg.control
    if ctl.rig is not None:
        rig_limits, platform_limits = axis_limits(cfg, ctl.rig.axes, 2.0 * math.pi / ctl.rig.screw_lead), (math.inf,) * 2
    else:
        rig_limits, platform_limits = (math.inf,) * 2, axis_limits(cfg, ctl.platform_axes, ctl.platform_ratio)
    m, tr = robot.model, robot.description.transmission
    joints = [getattr(j, "joint", j) for j in robot.description.joints]     # a tree's joints hold a chain's
    ctx = Context(joint_names=tuple(m.joint_names), qmin=m.qmin, qmax=m.qmax, vmax=m.vmax,
                  amax=np.array([j.acceleration_limit for j in joints]),
                  torques=TrajectoryTorques(robot, ground=cfg.control.support == "ground"),
                  axis_names=tuple(m.joint_names), transmission_labels=tr.labels, period=cfg.loop.period,
                  platform_limit=cfg.control.platform_limit, platform_vmax=platform_limits[0],
                  platform_amax=platform_limits[1], rig_vmax=rig_limits[0], rig_amax=rig_limits[1],
                  bus_axes=tuple(a.name for a in cfg.bus.axes), stepped=cfg.loop.stepped,
                  bus_nodes=tuple(a.node_id for a in cfg.bus.axes),
                  bus_node_ids=tuple(n.node_id for n in cfg.bus.nodes),
                  soft_limit_margin=cfg.control.soft_limit_margin, rig=_rig_model(cfg),
                  rig_convention=cfg.control.rig.convention if cfg.control.rig is not None else THESIS,
                  whole_body=cfg.stabilizer_path is not None and isinstance(robot, TreeRobot),
                  summary={"robot": robot.model.name, "backend": cfg.bus.backend,
                           "mode": cfg.control.mode, "lockstep": cfg.loop.lockstep,
                           "stepped": cfg.loop.stepped, "watchdog_s": cfg.control.watchdog,
                           "rig": cfg.control.rig is not None})
    if ctx.whole_body:
        from controller.daemon.io.start_posture import StartPosture
        ctx.start_posture = StartPosture(cfg.stabilizer())
    return ctx


def _open_server(cfg: DaemonConfig, robot, block: SharedBlock):
    """Bind the I/O process's sockets and open this run's cycle log folder."""
    from controller.daemon.io.log import LOG_NAME, CycleLogWriter, LogError, new_run_dir
    from controller.daemon.io.server import BindError, Endpoints, IoServer

    ctx = io_context(cfg, robot)
    io = cfg.io
    try:
        server = IoServer(block, ctx, Endpoints(io.command, io.telemetry), io.decimation, curve=io.curve,
                          trajectory_dir=io.trajectory_dir, trajectory_max_bytes=io.trajectory_max_bytes,
                          max_request_bytes=io.max_request_bytes, on_log_failure=io.on_log_failure)
    except BindError as e:
        raise ConfigError(str(cfg.source), f"io.{e.key}", str(e)) from None
    if io.log_dir:
        try:
            run = new_run_dir(io.log_dir)
            server.log = CycleLogWriter(run / LOG_NAME, RecordLayout(robot.n), robot.model.joint_names,
                                        period=cfg.loop.period, meta={"config": str(cfg.source)},
                                        rig=cfg.control.rig is not None, scene=_scene(cfg, robot))
        except (OSError, LogError) as e:
            server.close()
            raise ConfigError(str(cfg.source), "io.log_dir", f"cannot create this run's log folder in "
                              f"{io.log_dir} ({getattr(e, 'strerror', None) or e})") from None
    return server


def _scene(cfg: DaemonConfig, robot):
    """The 3-D scene the cycle log records (/tf, /scene), of a serial chain or a tree."""
    from controller.daemon.io.scene import Ground, scene_of

    return scene_of(robot, Ground.of(robot, cfg.stabilizer_path))


def _open_live_view(cfg: DaemonConfig, robot, server):
    """Start the Foxglove WebSocket server of ``io.live_view``, its parameters tuning through
    ``server``'s command path; a refusal names the key."""
    from controller.daemon.io.live import LiveView, LiveViewError
    from controller.daemon.io.scene import Ground
    from controller.daemon.io.live_params import LiveParameters
    from models.tree.config import load_tree
    from models.urdf import to_urdf

    live, ctl = cfg.io.live_view, cfg.control
    desc = load_tree(cfg.robot_path)
    gains = {name: values for name, values in zip(robot.model.joint_names, zip(ctl.kp, ctl.ki, ctl.kd))}
    parameters = LiveParameters(to_urdf(desc), gains, _stabilizer_keys(cfg), live.allow_parameters,
                                server.local.submit)
    try:
        view = LiveView(robot, live.port, live.host, Ground.of(robot, cfg.stabilizer_path), parameters=parameters,
                        links=tuple((t.parent, t.child) for t in desc.joints))
    except LiveViewError as e:
        raise ConfigError(str(cfg.source), "io.live_view", str(e)) from None
    server.on_accepted = parameters.accepted
    return view


def _stabilizer_keys(cfg: DaemonConfig) -> dict[str, float]:
    """The stabilizer's run-time keys (commands.STABILIZER_PARAMS) as its YAML sets them; none without one."""
    if cfg.stabilizer_path is None:
        return {}
    from stabilizer.config import load_config

    st = load_config(cfg.stabilizer_path)
    keys = {"saturation_distance": st.walls.radius, "admittance_damping": st.admittance_damping,
            "admittance_mass": st.admittance_mass, "max_speed": st.max_speed, "posture_gain": st.posture_gain}
    if st.attractor is not None:
        keys["attractor_gain"] = st.attractor.gains[0]
    return keys


def _run(config_path, backend, lockstep, stepped, cfg: DaemonConfig, robot, block: SharedBlock, server, say,
         operator, capture: str | None = None) -> int:
    """Start the loop process, serve until it has left; returns its exit code."""
    def on_signal(signum, _frame) -> None:
        block.header[H.SHUTDOWN] = 1
        say(f"bipd: {signal.Signals(signum).name}: soft stop, drives off, then exit")

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    proc = mp.get_context("spawn").Process(
        target=loop_main, args=(str(config_path), backend, lockstep, block.name, stepped, capture), name="bipd-loop")
    try:
        proc.start()
        say(f"bipd: {robot.model.name} on the {cfg.bus.backend} bus, "
            f"{_pacing(cfg)}; "
            f"commands {server.command_endpoint}, telemetry {server.telemetry_endpoint}")
        _supervise(block, proc, server, say, operator)
    finally:
        block.header[H.SHUTDOWN] = 1
        if proc.pid is not None:
            proc.join(timeout=10.0)
            if proc.is_alive():
                proc.terminate()
                proc.join(2.0)
        for s, h in previous.items():
            signal.signal(s, h)
    return int(block.header[H.LOOP_EXIT_CODE]) if block.header[H.LOOP_EXIT] else 1


def _pacing(cfg: DaemonConfig) -> str:
    if cfg.loop.stepped:
        return "stepped lock-step (the loop waits for `step` requests)"
    return "lock-step" if cfg.loop.lockstep else f"{cfg.loop.period * 1e3:g} ms real time"


def _supervise(block: SharedBlock, proc, server, say, operator) -> None:
    """Serve ZMQ until the loop has left; READY and WATCHDOG for systemd."""
    notify = Notifier()
    worker = None
    ready = False
    last_cycle, last_pet = -1, 0.0
    while True:
        server.step(1)
        h = block.header
        if not ready and h[H.READY]:
            ready = True
            notify.ready("cycling")
            say("bipd: network booted, loop cycling (state DISABLED); `bipd ctl enable` powers the drives")
            if operator is not None:
                def scripted() -> None:
                    try:
                        operator(server.command_endpoint, server.telemetry_endpoint)
                    finally:
                        block.header[H.SHUTDOWN] = 1
                worker = threading.Thread(target=scripted, name="bipd-operator", daemon=True)
                worker.start()
        now = time.monotonic()
        cycle = int(h[H.LOOP_CYCLE])
        if notify.watchdog_s and cycle != last_cycle and now - last_pet > notify.watchdog_s / 4:
            notify.watchdog()                                 # only while the loop is alive
            last_cycle, last_pet = cycle, now
        if h[H.LOOP_EXIT] or not proc.is_alive():
            notify.stopping()
            for _ in range(50):                               # drain the last telemetry and events
                server.step(1)
            if not h[H.LOOP_EXIT]:
                _loop_died(block, proc, server, say)
            return
        if server.done and not h[H.SHUTDOWN]:
            h[H.SHUTDOWN] = 1


def _loop_died(block: SharedBlock, proc, server, say) -> None:
    """The loop process is gone without leaving (it never wrote LOOP_EXIT): name it and how
    it ended, mark the block FAULT and exited with a non-zero code, keep answering for
    LINGER_S (or until ``shutdown``)."""
    proc.join(1.0)
    code = proc.exitcode                                      # -signum when a signal killed it
    if code is not None and code < 0:
        how, exit_code = f"was killed by {signal.Signals(-code).name}", 128 - code
    else:
        how, exit_code = f"ended with exit code {code} without stopping the loop", code or 1
    message = (f"the loop process (pid {proc.pid}) {how}; drives are no longer commanded (only the "
               "drives' own loss-of-communication reaction stops them)")
    h = block.header
    h[H.LOOP_STATE] = int(State.FAULT)
    h[H.LOOP_EXIT_CODE] = exit_code
    h[H.LOOP_EXIT] = 1
    server.loop_error = message
    say(f"bipd: error: {message}; answering status for {LINGER_S:g} s, then exit {exit_code}")
    end = time.monotonic() + LINGER_S
    while time.monotonic() < end and not server.done:
        server.step(1)
