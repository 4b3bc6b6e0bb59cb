"""The I/O process's own answers: ``ping``, ``status``, ``stats`` and ``get_config``, read from
shared memory and from what the publisher has seen (:mod:`controller.daemon.io.pump`); the loop
is never asked."""
from __future__ import annotations

from dataclasses import asdict
from typing import Any

from controller.daemon.codes import State
from controller.daemon.io.messages import bus_health, finite_or_none, name_of, profiler_summary, telemetry_message
from controller.daemon.io.protocol import Context
from controller.daemon.io.pump import Publisher
from controller.daemon.shm import H, SharedBlock
from controller.daemon.telemetry import stats_summary
from drivers.health import HEALTH

FAULT_KEYS = ("fault_name", "fault_code", "fault_axis", "fault_node", "fault_joint", "fault_detail")


class Answers:
    """Answers for ``block`` and ``ctx`` from ``publisher``'s state; ``io`` is the I/O side's
    configuration, by name: ``command_endpoint``, ``telemetry_endpoint``, ``decimation``,
    ``reply_timeout`` and ``sndhwm``."""

    def __init__(self, block: SharedBlock, ctx: Context, publisher: Publisher, io: dict[str, Any]) -> None:
        self.block, self.ctx, self.publisher, self.io = block, ctx, publisher, io

    def answer(self, cmd: str, pending: int, loop_error: str | None) -> dict[str, Any]:
        """The result of ``cmd``, with ``pending`` commands awaiting the loop's reply and the loop
        process's death, if it died (``loop_error``)."""
        h = self.block.header
        state = name_of(State, float(h[H.LOOP_STATE]))
        if cmd == "ping":
            return {"pong": True, "state": state, "ready": bool(h[H.READY]), "cycle": int(h[H.LOOP_CYCLE])}
        if cmd == "status":
            # what the loop posted before its state was read is part of the answer: a status that says
            # FAULT names it, however many requests came back to back before the I/O pass's own drain
            self.publisher.drain()
            return self.status(state, loop_error)
        if cmd == "stats":
            return self.stats(pending)
        return {**self.ctx.config_summary(), **self._io_config()}

    def _io_config(self) -> dict[str, Any]:
        layout, log = self.block.layout, self.publisher.log
        return {**self.io, "mailbox_slots": layout.mailbox_slots, "ring_slots": layout.ring_slots,
                "traj_samples": layout.traj_samples, "log": str(log.path) if log else None}

    def status(self, state: str | int, loop_error: str | None) -> dict[str, Any]:
        h, p, io = self.block.header, self.publisher, self.io
        last = telemetry_message(p.layout, p.last, p.names) if p.have_last else {}
        return {"state": state, "ready": bool(h[H.READY]), "cycle": int(h[H.LOOP_CYCLE]),
                "loop_exited": bool(h[H.LOOP_EXIT]), "exit_code": int(h[H.LOOP_EXIT_CODE]),
                "loop_error": loop_error,
                "shutdown_requested": bool(h[H.SHUTDOWN]), "log": p.log_status(),
                "record_cycle": last.get("cycle"),         # the loop cycle the t, q, qd, q_ref below are of
                "t": last.get("t"), "q": last.get("q"), "qd": last.get("qd"), "q_ref": last.get("q_ref"),
                **{k: last.get(k) for k in FAULT_KEYS}, "faults": list(p.faults),
                "bus": self._bus(),
                "last_transition": p.last_transition, "stepped": self.ctx.stepped,
                "horizon": int(h[H.HORIZON]) if self.ctx.stepped else None,
                "config": {"joints": list(self.ctx.joint_names), "period": self.ctx.period,
                           "decimation": io["decimation"], "command_endpoint": io["command_endpoint"],
                           "telemetry_endpoint": io["telemetry_endpoint"], **self.ctx.summary}}

    def _bus(self) -> dict[str, Any] | None:
        """The bus' health by name (messages.bus_health); None when the context does not name the bus'
        nodes and axes (a context built from the robot alone, in tests)."""
        nodes, axes, buf = self.ctx.bus_node_ids, self.ctx.bus_axes, self.block.bus
        if not buf.size or HEALTH.size(nodes=len(nodes), axes=len(axes)) != buf.size:
            return None
        return bus_health(buf, nodes, axes)

    def stats(self, pending: int) -> dict[str, Any]:
        p = self.publisher
        last, s, live = p.last, p.layout.slices, p.live
        return {"loop": stats_summary(self.block.stats),      # whole run (B&R-style profiler)
                "profiler": profiler_summary(p.wake, p.tasks),   # recent window
                "overruns": finite_or_none(float(last[s["overruns"]][0])) if p.have_last else None,
                "missed": finite_or_none(float(last[s["missed"]][0])) if p.have_last else None,
                "io": asdict(p.counters),
                "pending": pending,
                "live_view": {"port": live.port, "frames": live.frames,
                              "subscriptions": live.subscriptions} if live else None,
                "log": p.log_status()}
