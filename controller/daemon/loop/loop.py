"""The control loop: read -> estimate -> supervise -> reference -> axes -> write -> telemetry.

One cycle (docs/cycle.md), each step a room with its own state::

    bus.read()                 motor positions/velocities, CiA 402 states
    platform.measure           the platform's tilt (hinges or rig: controller.daemon.loop.platform)
    io.read                    motor -> joint, sensors (one kernel: controller.daemon.loop.joint_io)
    est.sense, est.update      feet, tilt, the models under its gravity (controller.daemon.loop.estimation)
    feet.observe               the soles' pressure, the ground's slope, edge landings (controller.daemon.loop.feet)
    sup.drive_faults, commands mailbox -> transitions (controller.daemon.loop.supervisor, states)
    sup.reference              the active generator -> q_ref, qd_ref, qdd_ref; the platform's setpoints
    feet.comply                q_ref plus the ankles' sole compliance -> the commanded reference
    act.step                   safety, axes, joint -> motor (one kernel), platform setpoints
    bus.write(); exchange()    next PReq payloads; five POWERLINK cycles
    recorder.record, profiler  one record in the shared ring, task times

Everything is preallocated at construction, where the variants are chosen (chain or tree, hinges or
rig, IMU or platform tilt, loads or none, CSP or CST); the cycle allocates no arrays, logs nothing,
holds no lock and never touches ZMQ. A fault anywhere (drive, bus, transmission, hard limit,
non-finite value) moves to FAULT and nothing non-finite is ever written to a drive. Before the first
cycle a throwaway twin on a dry bus runs the real cycle through the states (controller.daemon.loop.warmup),
so every kernel is compiled. In stepped lock-step (``loop.stepped``) the loop pauses at a cycle
boundary until a client's ``step`` raises the horizon, applying commands meanwhile, so every command
and heartbeat lands at an exact cycle whatever the host's speed.
"""
from __future__ import annotations

import os
import time

import numpy as np

from drivers.hal import Bus
from models.chain.robot import Robot
from models.transmission import OK as TR_OK
from models.tree.robot import TreeRobot
from stabilizer.stabilizer import Stabilizer
from stabilizer.whole_body import WholeBodyStabilizer

from controller.daemon.codes import Event, Reason, State
from controller.daemon.config import DaemonConfig
from controller.daemon.shm import H, SharedBlock
from controller.daemon.loop.actuation import Actuation
from controller.daemon.loop.axes import AxisTasks
from controller.daemon.loop.estimation import Estimation, support_acceleration  # noqa: F401 (tests' import)
from controller.daemon.loop.feet import Feet
from controller.daemon.loop.joint_io import JointIO
from controller.daemon.loop.platform import platform_room
from controller.daemon.loop.profiler import profile_cycle
from controller.daemon.loop.recorder import Recorder
from controller.daemon.loop.references.stabilize import Stabilize
from controller.daemon.loop.references.stabilize_whole_body import StabilizeWholeBody
from controller.daemon.loop.robot_models import robot_models
from controller.daemon.loop.safety import MARGIN, QMAX, QMIN, Limits
from controller.daemon.loop.states import POWERED
from controller.daemon.loop.supervisor import Journal, Supervisor
from controller.daemon.loop.warmup import dry_run

PAUSE_S = 2e-4          # stepped lock-step: sleep between looks at the horizon (never a hot spin)


def _room(room: str, name: str, doc: str) -> property:
    """A read-write view of a room's attribute on the loop (the loop's former flat names)."""
    return property(lambda self: getattr(getattr(self, room), name),
                    lambda self, v: setattr(getattr(self, room), name, v), doc=doc)


class ControlLoop:
    """The loop process: the rooms, wired; ``run()`` cycles until asked to stop."""

    def __init__(self, cfg: DaemonConfig, block: SharedBlock, bus: Bus, robot: Robot | TreeRobot,
                 stabilizer: Stabilizer | WholeBodyStabilizer | None, clock, parent_pid: int | None = None) -> None:
        self.cfg, self.block, self.bus, self.robot, self.stab, self.clock = cfg, block, bus, robot, stabilizer, clock
        n = self.n = robot.n
        ctl = cfg.control
        self.period = cfg.loop.period
        self.models = md = robot_models(robot)     # the chain's or the tree's update, A, h, G, CoG, root
        self.data = robot.data
        m = robot.model
        self.journal = journal = Journal(block)
        self.io = io = JointIO(bus, ctl.joint_axes, ctl.platform_axes, md.transmission, ctl.mode, n)
        self.leg_idx, self.plat_idx, self.q, self.qd = io.leg_idx, io.plat_idx, io.q, io.qd
        self.ratio = ctl.platform_ratio
        self.platform = platform_room(cfg, bus, io.plat_idx, block, self.period)
        self.rig = self.platform.rig
        self.plat = self.platform.plat
        limits = Limits(m.qmin, m.qmax, m.vmax, m.taumax, margin=ctl.soft_limit_margin)
        axes = AxisTasks(n, ctl.mode, self.period, ctl.kp, ctl.ki, ctl.kd, ctl.derivative_filter,
                         kaw=10.0, umax=m.taumax)
        lim = limits.lim
        soft = lim[QMIN] + lim[MARGIN], lim[QMAX] - lim[MARGIN]
        wb = isinstance(stabilizer, WholeBodyStabilizer)
        tilt_in, acc_in = np.zeros(3), np.zeros(2)
        if wb:
            stabilize = StabilizeWholeBody(stabilizer, io.q, tilt_in, acc_in, ctl.stabilizer_failure_cycles,
                                           journal.post, io.loads, io.qd)
        else:
            stabilize = None if stabilizer is None else Stabilize(
                stabilizer, io.q, tilt_in, acc_in, ctl.stabilizer_failure_cycles, journal.post)
        self.est = est = Estimation(io, self.platform, md, stabilize, wb, self.period, ctl, tilt_in, acc_in,
                                    journal.post, cfg.feet)
        self.tilt_in, self.acc_in, self.tilt, self.g_level = tilt_in, acc_in, est.tilt, est.g_level
        self.feet_load, self.foot_abc, self.imu = est.feet_load, est.foot_abc, est.imu
        self.sup = sup = Supervisor(cfg, block, io, self.platform, est, axes, stabilize, m, md.joint_names, soft,
                                    journal, parent_pid)
        self.q_ref, self.qd_ref, self.qdd_ref = sup.q_ref, sup.qd_ref, sup.qdd_ref
        self.commands, self.axes, self.stabilize = sup.commands, axes, stabilize
        self.follow, self.hold, self.move, self.squat = sup.follow, sup.hold, sup.move, sup.squat
        self.playback, self.stopping = sup.playback, sup.stopping
        self.feet = feet = Feet(cfg.feet, robot, est, (sup.q_ref, sup.qd_ref, sup.qdd_ref), soft, self.period,
                                journal.post)
        self.act = Actuation(io, self.platform, est, md, limits, axes, m.viscous, m.coulomb, ctl.coulomb_velocity,
                             (feet.q_cmd, feet.qd_cmd, sup.qdd_ref), sup.fault, journal.post)
        self.tau_ff = self.act.tau_ff
        self.marks = np.zeros(7, np.int64)
        self.recorder = Recorder(block, n, sup, io, est, self.platform, md, self.marks, feet.q_cmd)
        self.stepped = cfg.loop.stepped    # run only up to the horizon a client grants (H.HORIZON)

    # the rooms' state under the loop's former names (tests, tools)
    state = _room("sup", "state", "the controller's state (controller.daemon.codes.State)")
    gen = _room("sup", "gen", "the active reference generator")
    stopped = _room("sup", "stopped", "shut down: ``run`` returns")
    parent_pid = _room("sup", "parent_pid", "the I/O process (its death: a soft stop)")
    cycle_count = _room("journal", "cycle", "cycles since start (missed ones counted)")
    root = _room("est", "root", "the rooting the next models' update takes")
    model_root = _room("est", "model_root", "the rooting of this cycle's models")
    right_share = _room("est", "right_share", "the right sole's share of the ground wrench")
    share_f = _room("est", "share_f", "the feet's measured share, low-passed")
    load_share = _room("est", "load_share", "the feet's measured share")
    contact = _room("est", "contact", "the support phase the feet's loads show")
    tilt_unconfirmed = _room("est", "tilt_unconfirmed", "s since the tilt observer last accepted a sample")
    tilt_use_acc = _room("est", "tilt_use_acc", "the support's acceleration folded into the tilt")
    missed = _room("recorder", "missed", "missed cycles")

    # ------------------------------------------------------------------ start
    def start(self) -> None:
        """Boot the network, compile everything the cycle calls (a dry twin), publish the boot record
        (t = 0, cycle 0, state BOOT: what the loop measured at boot), go DISABLED."""
        self.block.header[H.LOOP_STATE] = int(State.BOOT)
        self.bus.boot()
        self._measure()
        self.q_ref[:] = self.q
        self.feet.comply(False)                    # the commanded reference: the boot's q
        self.est.update()                          # the boot's estimate (a tilt input unusable from the start warns)
        dry_run(self)
        self.recorder.record(0.0, self.journal.cycle, 0)
        self.sup.goto(State.DISABLED, Reason.BOOTED)
        self.block.header[H.READY] = 1

    # ------------------------------------------------------------------ the cycle
    def _measure(self) -> int:
        """The platform, the joints and the sensors: the transmission's status."""
        self.platform.measure()
        status = self.io.read()
        if status != TR_OK:
            return status
        self.est.sense()
        return int(self.io.bias_status[0])

    def _cycle_compute(self) -> None:
        self.est.update()

    def run_cycle(self) -> None:
        clock, marks, b, sup = self.clock, self.marks, self.bus, self.sup
        h = self.block.header
        if self.stepped and self.journal.cycle >= h[H.HORIZON] and not h[H.SHUTDOWN]:
            self._pause()
        latency, missed = clock.wait()
        now_ns = time.monotonic_ns
        marks[0] = now_ns()
        self.journal.cycle += 1 + missed
        t = clock.now_s()
        b.read()
        status = self._measure()
        marks[1] = now_ns()
        if status != TR_OK:
            sup.fault(Reason.TRANSMISSION, status, self.io.nonfinite_axis(self.io.qm))
        self.est.update()
        self.feet.observe()
        marks[2] = now_ns()
        sup.drive_faults()
        sup.commands_step(t, self.journal.cycle)
        sup.reference(t)
        self.feet.comply(sup.state in POWERED)
        marks[3] = now_ns()
        if sup.state in POWERED:
            self.act.step()
        marks[4] = now_ns()
        b.write()
        b.exchange()
        marks[5] = now_ns()
        rec = self.recorder
        rec.record(t, self.journal.cycle, latency)
        marks[6] = now_ns()
        rec.telemetry_us = int(marks[6] - marks[5]) / 1e3     # an int64 / float would allocate
        overrun = clock.end_of_cycle_overrun()
        profile_cycle(self.block.stats, marks, latency, missed, overrun)
        if missed:
            rec.missed += missed
            self.journal.post(Event.OVERRUN, missed, latency / 1e3)
        h[H.LOOP_CYCLE] = self.journal.cycle

    def _pause(self) -> None:
        """Stepped lock-step: wait at this cycle boundary until a client grants cycles beyond it
        (``H.HORIZON``), meanwhile applying commands at the last cycle's time and posting their
        replies, feeding the watchdog and watching for shutdown (which ends the pause for good)
        and for the I/O process' death. The horizon is read before the mailbox and the heartbeat
        counter, so whatever a client sent before it raised the horizon lands at this cycle."""
        h = self.block.header
        t = self.clock.now_s()
        while True:
            horizon = int(h[H.HORIZON])
            if self.sup.parent_pid is not None and os.getppid() != self.sup.parent_pid:
                h[H.SHUTDOWN] = 1
            self.sup.commands_step(t, self.journal.cycle, self.block.layout.mailbox_slots)
            if self.journal.cycle < horizon or h[H.SHUTDOWN]:
                return
            time.sleep(PAUSE_S)

    # ------------------------------------------------------------------ the rooms' steps by their former names
    def _split(self, planned: float, phase: float) -> float:
        return self.est.split(planned, phase)

    def _set_root(self, r: int) -> None:
        self.est.root = r                          # the models take it at the next update

    def _feedforward(self) -> None:
        self.act.feedforward()

    def _telemetry(self, t: float, latency_ns: int) -> None:
        self.recorder.record(t, self.journal.cycle, latency_ns)

    # ------------------------------------------------------------------ run
    def run(self, max_cycles: int | None = None) -> int:
        """Cycle until shutdown (or ``max_cycles``); returns an exit code."""
        self.clock.start()
        count = 0
        while not self.sup.stopped:
            self.run_cycle()
            count += 1
            if max_cycles is not None and count >= max_cycles:
                break
        return 0
