"""A scripted operator over the daemon's ZMQ interface: :class:`Operator` commands the daemon, waits
for a state and, in a stepped loop, grants it loop time (the request/reply itself is
:class:`~controller.tools.client.Client`'s); :class:`StreamOperator`, the demos' (``bipd run
--demo``), adds the telemetry and event frames read in the caller's thread, the daemon kept going
between them (a heartbeat for the motion watchdog, or the loop time a ``--stepped`` loop waits for),
and the events as table lines. The scenarios' recording operator is
:class:`controller.tools.scenarios.runner.RecordingOperator`."""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any, Self, TextIO

import zmq

from controller.tools.client import Client, ClientTimeout, CommandError

HEARTBEAT_S = 0.2      # s of wall clock between pings in a real-time loop (control.watchdog_s is 1 s)
STEP_S = 0.1           # s of loop time granted per `step` in a stepped loop
STATE_CHUNK_S = 0.02   # s of loop time granted per `step` while waiting for a state (by default)
STATE_TIMEOUT_S = 30.0  # s (simulated when stepped, else wall) a state may take by default
POLL_S = 0.02          # wall s between two `status` polls in a real-time loop
REQUEST_TIMEOUT_S = 120.0  # wall s a request may take (a step runs at the host's speed): an error bound only
EVENT_KINDS = ("TRANSITION", "FAULT", "WARNING")


class OperatorError(RuntimeError):
    """The daemon refused a command, or did not reach a state in time."""


def event_text(msg: dict[str, Any]) -> str | None:
    """An event frame as a table line's text (transitions, faults, warnings); None for the others."""
    if msg["kind"] not in EVENT_KINDS:
        return None
    what = (f"{msg['from_state']} -> {msg.get('to_state')}" if msg["kind"] == "TRANSITION"
            else msg["kind"].lower())
    detail = f": {msg['detail']}" if isinstance(msg.get("detail"), str) else ""
    return f"{what} ({msg['reason']}{detail})"


class Operator:
    """An operator's session on the daemon's command socket; ``stepped``: the daemon's loop runs only
    the time :meth:`step` grants. Leave it with :meth:`close` (or as a context manager). A stepped
    session makes one attempt per request: a resent step or command would land twice."""

    error: type[Exception] = OperatorError     # what a refusal or a missed state raises

    def __init__(self, command: str, stepped: bool = False, timeout_s: float = REQUEST_TIMEOUT_S,
                 retries: int = 1) -> None:
        self.client = Client(command, timeout_s=timeout_s, retries=retries)
        self.stepped = stepped

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.client.close()

    def call(self, cmd: str, /, **args: Any) -> dict[str, Any]:
        """The command's result (:meth:`Client.call`)."""
        return self.client.call(cmd, **args)

    def command(self, cmd: str, /, **args: Any) -> dict[str, Any]:
        """A command that must be accepted (an operator would stop on a refusal). A ``timeout``
        reply means posted but not yet acknowledged (a busy machine): the loop still applies it,
        and the waits that follow check the state it leads to."""
        try:
            return self.call(cmd, **args)
        except CommandError as e:
            if e.code == "timeout":
                return {}
            raise self.error(f"the daemon refused {cmd}: {e}") from None

    def state(self) -> str:
        return str(self.call("status")["state"])

    def step(self, seconds: float | None = None, *, cycles: int | None = None) -> dict[str, Any]:
        """Stepped: run the loop ``seconds`` (whole periods, the daemon rounds) or ``cycles`` more;
        the step's reply (``state``, ``t``, ``telemetry_t``)."""
        if (seconds is None) == (cycles is None):
            raise ValueError("step takes exactly one of seconds and cycles")
        return self.call("step", **({"seconds": seconds} if cycles is None else {"cycles": cycles}))

    def wait_state(self, *states: str, timeout_s: float = STATE_TIMEOUT_S, chunk_s: float = STATE_CHUNK_S) -> str:
        """Wait for one of ``states``: stepped, granting ``chunk_s`` at a time for at most ``timeout_s``
        of simulated time; in real time, polling for ``timeout_s`` of wall time."""
        want = " or ".join(states)
        if self.stepped:
            state, waited = self.state(), 0.0
            while state not in states:
                if waited >= timeout_s:
                    raise self.error(f"the daemon did not reach {want} within {timeout_s:g} s of "
                                     f"simulated time (state {state})")
                state = str(self.step(chunk_s)["state"])
                waited += chunk_s
            return state
        end = time.monotonic() + timeout_s
        while True:
            try:
                status = self.call("status")
            except ClientTimeout:
                status = {"state": ""}
            if status["state"] in states:
                return str(status["state"])
            if time.monotonic() > end:
                raise self.error(self.explain(f"the daemon did not reach {want} within {timeout_s:g} s "
                                              f"(state {status['state'] or 'unknown'}, fault {status.get('fault_detail')})"))
            time.sleep(POLL_S)

    def explain(self, failure: str) -> str:
        """``failure`` with what the session knows of its cause (here: nothing more)."""
        return failure


PRE_ENABLE_STATES = ("BOOT", "DISABLED")


class StreamOperator(Operator):
    """The demos' operator: :class:`Operator` plus the telemetry and event frames (:meth:`frames`),
    read in the caller's thread, the daemon kept going between them, all within ``timeout_s`` of
    wall time."""

    def __init__(self, command: str, telemetry: str, timeout_s: float) -> None:
        super().__init__(command)
        self.sub = zmq.Context.instance().socket(zmq.SUB)
        for topic in (b"telemetry", b"event"):
            self.sub.setsockopt(zmq.SUBSCRIBE, topic)
        self.sub.connect(telemetry)
        self.timeout_s = timeout_s
        self.end = time.monotonic() + timeout_s
        self._last_ping = 0.0

    def close(self) -> None:
        self.sub.close(0)
        super().close()

    def enable(self) -> None:
        """Wait for DISABLED (the booted network), enable the drives, wait for HOLD."""
        self.stepped = bool(self.call("status")["stepped"])
        self.wait_state("DISABLED", timeout_s=self.timeout_s, chunk_s=STEP_S)
        self.call("enable")
        self.wait_state("HOLD", timeout_s=self.timeout_s, chunk_s=STEP_S)

    def run(self, trajectory: str) -> None:
        self.call("run", trajectory=trajectory)

    def _keep_going(self) -> None:
        """A stepped loop: grant it STEP_S of loop time; a real-time one: ping every HEARTBEAT_S."""
        if self.stepped:
            self.step(STEP_S)
        elif time.monotonic() - self._last_ping > HEARTBEAT_S:
            self.call("ping")
            self._last_ping = time.monotonic()

    def frames(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """(topic, message) of every event frame and of the telemetry from the first frame past the
        enable on (the boot's BOOT and DISABLED frames still queued on the socket, which the I/O
        process may publish after the enable's reply, are dropped), keeping the daemon going; a
        :class:`TimeoutError` past the session's deadline."""
        enabled = False
        while True:
            if time.monotonic() > self.end:
                raise TimeoutError("the demo did not finish in time")
            if not self.sub.poll(0):
                self._keep_going()
                if not self.sub.poll(200):
                    continue
            topic, data = self.sub.recv_multipart()
            msg = json.loads(data)
            if topic == b"telemetry" and not enabled:
                if msg["state_name"] in PRE_ENABLE_STATES:
                    continue
                enabled = True
            yield topic.decode(), msg

    def finish(self) -> dict[str, Any]:
        """The daemon's stats, then disable the drives (a FAULT or ESTOP has already)."""
        stats = self.call("stats")
        if self.state() not in ("FAULT", "ESTOP"):
            self.call("disable")
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
