"""A scripted operator over the daemon's ZMQ interface, as the demos of ``bipd run --demo`` use it:
the command client and a telemetry subscriber, enable, run a trajectory, keep the daemon going
(a heartbeat for the motion watchdog, or the loop time a ``--stepped`` loop waits for), and the
events as table lines."""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any, TextIO

import zmq

from controller.tools.client import Client

HEARTBEAT_S = 0.2      # s of wall clock between pings in a real-time loop (control.watchdog_s is 1 s)
STEP_S = 0.1           # s of loop time granted per `step` in a stepped loop
REQUEST_TIMEOUT_S = 120.0  # wall s a request may take (a step runs at the host's speed): an error bound only
EVENT_KINDS = ("TRANSITION", "FAULT", "WARNING")


def event_text(msg: dict[str, Any]) -> str | None:
    """An event frame as a table line's text (transitions, faults, warnings); None for the others."""
    if msg["kind"] not in EVENT_KINDS:
        return None
    what = (f"{msg['from_state']} -> {msg.get('to_state')}" if msg["kind"] == "TRANSITION"
            else msg["kind"].lower())
    detail = f": {msg['detail']}" if isinstance(msg.get("detail"), str) else ""
    return f"{what} ({msg['reason']}{detail})"


class Operator:
    """One operator session; leave it with :meth:`close` (or as a context manager)."""

    def __init__(self, command: str, telemetry: str, timeout_s: float) -> None:
        self.client = Client(command, timeout_s=REQUEST_TIMEOUT_S, retries=1)   # a resent step would land twice
        self.sub = zmq.Context.instance().socket(zmq.SUB)
        for topic in (b"telemetry", b"event"):
            self.sub.setsockopt(zmq.SUBSCRIBE, topic)
        self.sub.connect(telemetry)
        self.end = time.monotonic() + timeout_s
        self.stepped = False
        self._last_ping = 0.0

    def __enter__(self) -> Operator:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.sub.close(0)
        self.client.close()

    def _wait_state(self, state: str) -> None:
        while self.client.call("status")["state"] != state:
            if time.monotonic() > self.end:
                raise TimeoutError(f"the daemon did not reach {state}")
            if self.stepped:
                self.client.call("step", seconds=STEP_S)
            else:
                time.sleep(0.02)

    def enable(self) -> None:
        """Wait for DISABLED (the booted network), enable the drives, wait for HOLD."""
        self.stepped = bool(self.client.call("status")["stepped"])
        self._wait_state("DISABLED")
        self.client.call("enable")
        self._wait_state("HOLD")

    def run(self, trajectory: str) -> None:
        self.client.call("run", trajectory=trajectory)

    def _keep_going(self) -> None:
        """A stepped loop: grant it STEP_S of loop time; a real-time one: ping every HEARTBEAT_S."""
        if self.stepped:
            self.client.call("step", seconds=STEP_S)
        elif time.monotonic() - self._last_ping > HEARTBEAT_S:
            self.client.call("ping")
            self._last_ping = time.monotonic()

    def frames(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """(topic, message) of every telemetry and event frame, keeping the daemon going; a
        :class:`TimeoutError` past the session's deadline."""
        while True:
            if time.monotonic() > self.end:
                raise TimeoutError("the demo did not finish in time")
            if not self.sub.poll(0):
                self._keep_going()
                if not self.sub.poll(200):
                    continue
            topic, data = self.sub.recv_multipart()
            yield topic.decode(), json.loads(data)

    def finish(self) -> dict[str, Any]:
        """The daemon's stats, then disable the drives (a FAULT or ESTOP has already)."""
        stats = self.client.call("stats")
        if self.client.call("status")["state"] not in ("FAULT", "ESTOP"):
            self.client.call("disable")
        return stats


def print_event(msg: dict[str, Any], out: TextIO) -> None:
    text = event_text(msg)
    if text:
        print(f"{'':7s} {'event':>8} | {text}", file=out, flush=True)


def print_loop_stats(loop: dict[str, Any], out: TextIO) -> None:
    """The loop's cycles, overruns, wake latency and per-task times (``stats``' ``loop``)."""
    lat = loop.get("wake_latency") or {}
    print(f"loop: {loop['cycles']} cycles, {loop['overruns']} overruns ({loop['missed_cycles']} missed), "
          f"wake latency p50 {lat.get('p50_us')} us, p99 {lat.get('p99_us')} us, p99.9 {lat.get('p999_us')} us, "
          f"max {lat.get('max_us') or 0.0:.0f} us", file=out)
    for name, t in (loop.get("tasks") or {}).items():
        if t.get("avg_us") is not None:
            print(f"  {name:10s} min {t['min_us']:8.1f}  avg {t['avg_us']:8.1f}  max {t['max_us']:8.1f} us", file=out)
