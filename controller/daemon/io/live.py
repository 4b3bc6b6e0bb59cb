"""Live view: a Foxglove WebSocket server (the ``foxglove-sdk`` package, extra ``live``) fed by the
I/O process, never by the loop process. Clients connect with either name of the Foxglove WebSocket
protocol, ``foxglove.sdk.v1`` or ``foxglove.websocket.v1`` (:mod:`controller.daemon.io.live_relay`).

Every telemetry record is offered (:meth:`LiveView.offer`); one every ``1 / RATE_HZ`` s of loop
time is published, and only on the channels a client subscribes to (nothing is built otherwise):

* ``/joint_state``: the cycle log's channel of the same name (q, qd, joint names);
* ``/platform``: the platform tilt (alpha, beta) of thesis eq. 46;
* ``/tf`` (``foxglove.FrameTransforms``): world -> ``base`` at the recorded tilt, and each joint's
  parent link -> child link at the recorded q (the URDF's links, thesis eq. 1-5), so the 3-D panel
  poses the robot description;
* ``/robot_description`` (``std_msgs/msg/String``, JSON ``{"data": URDF}``): the exported URDF with
  its geometry (:func:`models.urdf.to_urdf`), sent when a client subscribes; the same text is the
  parameter ``/robot_description``; the 3-D panel shows the robot from either;
* ``/scene`` (``foxglove.SceneUpdate``): the leg (a tree: its bodies), the CoG, the support
  polygon and the field force; the transforms and the scene are built by :class:`controller.daemon.io.scene.Scene`
  (the cycle log's too).

Parameters (the protocol's getParameters / setParameters): the axis gains and the stabilizer's
keys, tuned through the daemon's own command path (:mod:`controller.daemon.io.live_params`).

Messages are JSON with JSON schemas, timestamps the loop's time ``t``. The SDK's server runs in
its own thread and :meth:`foxglove.Channel.log` never blocks: each client has a bounded queue
(``BACKLOG`` messages) whose oldest message is dropped when the client is slow.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from controller.daemon.telemetry import RecordLayout
from models.chain.robot import Robot
from models.tree.robot import TreeRobot

from controller.daemon.io.live_params import ROBOT_DESCRIPTION, LiveParameters
from controller.daemon.io.live_relay import Relay
from controller.daemon.io.log import CHANNELS, _schema
from controller.daemon.io.scene import FRAME_TRANSFORMS, SCENE_UPDATE, Every, Ground, scene_of

RATE_HZ = 30.0
BACKLOG = 64                  # messages queued per client before the oldest is dropped
EXTRA = "live"                # pip install 'bipd[live]'

_NUMBER = {"type": "number"}
PLATFORM = {"title": "platform", "type": "object", "properties": {"t": _NUMBER, "alpha": _NUMBER, "beta": _NUMBER}}
STRING = {"title": "std_msgs/msg/String", "type": "object", "properties": {"data": {"type": "string"}}}


class LiveViewError(Exception):
    """The live view cannot start: the extra is missing or the port cannot be bound."""


class _Listener:
    """A ``foxglove.websocket.ServerListener``: counts the channel subscriptions of all clients, sends
    the robot description to a new subscriber of ``/robot_description`` (``describe``) and answers the
    parameter requests from ``parameters``."""

    def __init__(self, parameters: LiveParameters | None) -> None:
        self.count = 0
        self.parameters = parameters
        self.describe: Callable[[], None] = lambda: None

    def on_subscribe(self, client: Any, channel: Any) -> None:
        self.count += 1
        if channel.topic == ROBOT_DESCRIPTION:
            self.describe()

    def on_unsubscribe(self, client: Any, channel: Any) -> None:
        self.count -= 1

    def on_parameters_subscribe(self, param_names: list[str]) -> None:
        pass                                    # every change goes to the subscribers: nothing to start

    def on_parameters_unsubscribe(self, param_names: list[str]) -> None:
        pass

    def on_get_parameters(self, client: Any, param_names: list[str], request_id: str | None = None) -> list[Any]:
        return _parameters(self.parameters.get(param_names))

    def on_set_parameters(self, client: Any, parameters: list[Any], request_id: str | None = None) -> list[Any]:
        return _parameters(self.parameters.set({p.name: p.get_value() for p in parameters}))


def _parameters(values: dict[str, float | str]) -> list[Any]:
    from foxglove.websocket import Parameter

    return [Parameter(name, value=value) for name, value in values.items()]


class LiveView:
    """The Foxglove server and its channels; ``offer(rec)`` for every record read."""

    def __init__(self, robot: Robot | TreeRobot, port: int, host: str = "127.0.0.1", ground: Ground | None = None,
                 rate_hz: float = RATE_HZ, parameters: LiveParameters | None = None,
                 links: tuple[tuple[str, str], ...] = ()) -> None:
        """``parameters``: the parameter table (None: no parameters, no robot description);
        ``links``: each joint's (parent link, child link) of the URDF, for ``/tf``."""
        try:
            import foxglove
            import websockets.asyncio.server  # noqa: F401  (the relay's)
            from foxglove.websocket import Capability, StatusLevel
        except ImportError:
            raise LiveViewError(f"the live view needs the foxglove-sdk and websockets (13 or newer) packages: "
                                f"pip install 'bipd[{EXTRA}]'") from None
        self.layout = RecordLayout(robot.n)
        self.names = list(robot.model.joint_names)
        self.scene = scene_of(robot, ground)
        self._every = Every(rate_hz)
        self.frames = 0                         # frames published (any channel)
        self._fox = foxglove
        self._ctx = foxglove.Context()
        self._subs = _Listener(parameters)
        self._links = links
        try:                                    # on a private port, behind the relay
            self.server = foxglove.start_server(name="bipd", host="127.0.0.1", port=0, context=self._ctx,
                                                message_backlog_size=BACKLOG, server_listener=self._subs,
                                                capabilities=[Capability.Parameters] if parameters else None)
        except RuntimeError as e:
            raise LiveViewError(f"cannot start the Foxglove server: {str(e).split(': ', 1)[-1]}") from None
        try:
            self.relay = Relay(host, port, self.server.port)
        except OSError as e:
            self.server.stop()
            raise LiveViewError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
        self.port = self.relay.port
        if parameters is not None:
            server = self.server
            parameters.publish = lambda values: server.publish_parameter_values(_parameters(values))
            parameters.refuse = lambda reason: server.publish_status(reason, StatusLevel.Error)
            description = self._channel(ROBOT_DESCRIPTION, STRING)
            urdf = json.dumps({"data": parameters.get([ROBOT_DESCRIPTION])[ROBOT_DESCRIPTION]})
            self._subs.describe = lambda: description.log(urdf)
        joint = next(ch for ch in CHANNELS if ch.topic == "/joint_state")
        self._joint_fields = [(key, self.layout.slices[name]) for key, name in joint.fields]
        self._joint = self._channel("/joint_state", _schema(joint, self.layout))
        self._platform = self._channel("/platform", PLATFORM)
        self._scene = self._channel("/scene", SCENE_UPDATE)
        self._tf = self._channel("/tf", FRAME_TRANSFORMS) if ground is not None or links else None

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
        self.relay.close()

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
        if self._tf is not None and self._tf.has_sinks():
            transforms = [self.scene.base_transform(ns)] if tilt_known else []
            if self.scene.frames(rec[s["q"]]):
                transforms += self.scene.link_transforms(ns, self._links)
            if transforms:
                self._log(self._tf, {"transforms": transforms}, ns)
        if self._scene.has_sinks():
            self._log(self._scene, {"deletions": [], "entities": self.scene.entities(rec, ns, tilt_known)}, ns)

    def _log(self, channel, msg: dict[str, Any], ns: int) -> None:
        channel.log(json.dumps(msg, allow_nan=False, separators=(",", ":")), log_time=ns)
        self.frames += 1
