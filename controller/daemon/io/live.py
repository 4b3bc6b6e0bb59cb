"""Live view: a Foxglove WebSocket server (subprotocol ``foxglove.sdk.v1``, the ``foxglove-sdk``
package, extra ``live``) fed by the I/O process, never by the loop process.

Every telemetry record is offered (:meth:`LiveView.offer`); one every ``1 / RATE_HZ`` s of loop
time is published, and only on the channels a client subscribes to (nothing is built otherwise):

* ``/joint_state``: the cycle log's channel of the same name (q, qd, joint names);
* ``/platform``: the platform tilt (alpha, beta) of thesis eq. 46;
* ``/tf`` (``foxglove.FrameTransforms``): world -> ``base`` at the recorded tilt, and
* ``/scene`` (``foxglove.SceneUpdate``): the leg, the CoG, the support polygon and the field
  force, both built by :class:`controller.daemon.io.scene.Scene` (the cycle log's too).

Messages are JSON with JSON schemas, timestamps the loop's time ``t``. The SDK's server runs in
its own thread and :meth:`foxglove.Channel.log` never blocks: each client has a bounded queue
(``BACKLOG`` messages) whose oldest message is dropped when the client is slow.
"""
from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from controller.daemon.telemetry import RecordLayout
from models.chain.robot import Robot

from controller.daemon.io.log import CHANNELS, _schema
from controller.daemon.io.scene import FRAME_TRANSFORMS, SCENE_UPDATE, Every, Ground, Scene

RATE_HZ = 30.0
BACKLOG = 64                  # messages queued per client before the oldest is dropped
EXTRA = "live"                # pip install 'bipd[live]'

_NUMBER = {"type": "number"}
PLATFORM = {"title": "platform", "type": "object", "properties": {"t": _NUMBER, "alpha": _NUMBER, "beta": _NUMBER}}


class LiveViewError(Exception):
    """The live view cannot start: the extra is missing or the port cannot be bound."""


class _Subscriptions:
    """A ``foxglove.websocket.ServerListener`` counting the channel subscriptions of all clients."""

    def __init__(self) -> None:
        self.count = 0

    def on_subscribe(self, client: Any, channel: Any) -> None:
        self.count += 1

    def on_unsubscribe(self, client: Any, channel: Any) -> None:
        self.count -= 1


class LiveView:
    """The Foxglove server and its channels; ``offer(rec)`` for every record read."""

    def __init__(self, robot: Robot, port: int, host: str = "127.0.0.1", ground: Ground | None = None,
                 rate_hz: float = RATE_HZ) -> None:
        try:
            import foxglove
        except ImportError:
            raise LiveViewError(f"the live view needs the foxglove-sdk package: pip install 'bipd[{EXTRA}]'") from None
        self.layout = RecordLayout(robot.n)
        self.names = list(robot.joint_names)
        self.scene = Scene(robot, ground)
        self._every = Every(rate_hz)
        self.frames = 0                         # frames published (any channel)
        self._fox = foxglove
        self._ctx = foxglove.Context()
        self._subs = _Subscriptions()
        try:
            self.server = foxglove.start_server(name="bipd", host=host, port=port, context=self._ctx,
                                                message_backlog_size=BACKLOG, server_listener=self._subs)
        except RuntimeError as e:
            raise LiveViewError(f"cannot listen on {host}:{port}: "
                                f"{str(e).split(': ', 1)[-1]}") from None
        self.port = self.server.port
        joint = next(ch for ch in CHANNELS if ch.topic == "/joint_state")
        self._joint_fields = [(key, self.layout.slices[name]) for key, name in joint.fields]
        self._joint = self._channel("/joint_state", _schema(joint, self.layout))
        self._platform = self._channel("/platform", PLATFORM)
        self._scene = self._channel("/scene", SCENE_UPDATE)
        self._tf = self._channel("/tf", FRAME_TRANSFORMS) if ground is not None else None

    def _channel(self, topic: str, schema: dict[str, Any]):
        fox = self._fox
        data = json.dumps(schema).encode()
        return fox.Channel(topic, schema=fox.Schema(name=schema["title"], encoding="jsonschema", data=data),
                           message_encoding="json", context=self._ctx)

    @property
    def subscriptions(self) -> int:
        """Channel subscriptions of the connected clients (``stats``)."""
        return self._subs.count

    def close(self) -> None:
        self.server.stop()

    def offer(self, rec: np.ndarray) -> None:
        """Publish ``rec`` if ``1 / rate_hz`` s of loop time have passed since the last frame."""
        t = float(rec[self.layout.slices["t"]][0])
        if self._every.due(t):
            self.publish(rec, t)

    def publish(self, rec: np.ndarray, t: float) -> None:
        s = self.layout.slices
        ns = round(t * 1e9)
        if self._joint.has_sinks():
            msg = {"t": t, "name": self.names}
            for key, sl in self._joint_fields:
                msg[key] = [v if math.isfinite(v) else None for v in rec[sl].tolist()]
            self._log(self._joint, msg, ns)
        if self._platform.has_sinks():
            alpha, beta = rec[s["platform"]].tolist()
            self._log(self._platform, {"t": t, "alpha": alpha, "beta": beta}, ns)
        tilt_known = self.scene.place(rec)
        if self._tf is not None and tilt_known and self._tf.has_sinks():
            self._log(self._tf, {"transforms": [self.scene.base_transform(ns)]}, ns)
        if self._scene.has_sinks():
            self._log(self._scene, {"deletions": [], "entities": self.scene.entities(rec, ns, tilt_known)}, ns)

    def _log(self, channel, msg: dict[str, Any], ns: int) -> None:
        channel.log(json.dumps(msg, allow_nan=False, separators=(",", ":")), log_time=ns)
        self.frames += 1
