"""Live view: a Foxglove WebSocket server (the ``foxglove-sdk`` package, extra ``live``) fed by the
I/O process, never by the loop process. Clients connect with either name of the Foxglove WebSocket
protocol, ``foxglove.sdk.v1`` or ``foxglove.websocket.v1`` (:mod:`controller.daemon.io.live_relay`).

Every telemetry record is offered (:meth:`LiveView.offer`); one every ``1 / RATE_HZ`` s of loop
time is published, and only on the channels a client subscribes to (nothing is built otherwise):

* ``/joint_state``: the cycle log's channel of the same name (q, qd, joint names);
* ``/platform``: the platform tilt (alpha, beta) of thesis eq. 46;
* ``/tf`` (``foxglove.FrameTransforms``): world (M, x_g up) -> ``base`` (R0 at the ankle),
  T_M->O0 of thesis eq. 46-47 at the recorded tilt (robots with a ``foot`` section), and each
  joint's parent link -> child link at the recorded q (the URDF's links, thesis eq. 1-5), so the
  3-D panel poses the robot description;
* ``/robot_description`` (``std_msgs/msg/String``, JSON ``{"data": URDF}``): the exported URDF with
  its geometry (:func:`models.urdf.to_urdf`), sent when a client subscribes; the same text is the
  parameter ``/robot_description``; the 3-D panel shows the robot from either;
* ``/scene`` (``foxglove.SceneUpdate``): the leg as a line through the frame origins of the
  forward geometric model (thesis eq. 1-6, frames 0..n and the tool) and the CoG as a sphere,
  in ``base``; with a foot, the support polygon (eq. 50-51) as a line loop in ``world``, red
  once a CoG margin (eq. 70-71) is negative, and the stabilizer's field force as an arrow at
  the CoG (``FORCE_SCALE`` m per N).

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
from pathlib import Path
from typing import Any

import numpy as np

from controller.daemon.telemetry import RecordLayout
from models.chain.kinematics import forward_kinematics
from models.chain.robot import Robot
from models.tilt import rotation_world_foot
from stabilizer.ground import base_to_world, foot_origin
from stabilizer.support_polygon import project_outline, rectangle_outline

from controller.daemon.io.live_params import ROBOT_DESCRIPTION, LiveParameters
from controller.daemon.io.live_relay import Relay
from controller.daemon.io.log import CHANNELS, _schema

RATE_HZ = 30.0
FORCE_SCALE = 0.01            # m of arrow per N of field force
BACKLOG = 64                  # messages queued per client before the oldest is dropped
BASE, WORLD = "base", "world"
EXTRA = "live"                # pip install 'bipd[live]'

_NUMBER = {"type": "number"}
_VEC3 = {"type": "object", "properties": {k: _NUMBER for k in "xyz"}}
_QUAT = {"type": "object", "properties": {k: _NUMBER for k in "xyzw"}}
_COLOR = {"type": "object", "properties": {k: _NUMBER for k in "rgba"}}
_TIME = {"type": "object", "properties": {"sec": {"type": "integer"}, "nsec": {"type": "integer"}}}
_POSE = {"type": "object", "properties": {"position": _VEC3, "orientation": _QUAT}}
_ITEMS = {"type": "array", "items": {"type": "object"}}
# the subset of Foxglove's schemas (github.com/foxglove/foxglove-sdk, schemas/jsonschema) sent here
SCENE_UPDATE = {"title": "foxglove.SceneUpdate", "type": "object", "properties": {
    "deletions": _ITEMS, "entities": {"type": "array", "items": {"type": "object", "properties": {
        "timestamp": _TIME, "frame_id": {"type": "string"}, "id": {"type": "string"},
        "frame_locked": {"type": "boolean"}, "lines": _ITEMS, "spheres": _ITEMS, "arrows": _ITEMS}}}}}
FRAME_TRANSFORMS = {"title": "foxglove.FrameTransforms", "type": "object", "properties": {
    "transforms": {"type": "array", "items": {"type": "object", "properties": {
        "timestamp": _TIME, "parent_frame_id": {"type": "string"}, "child_frame_id": {"type": "string"},
        "translation": _VEC3, "rotation": _QUAT}}}}}
PLATFORM = {"title": "platform", "type": "object", "properties": {"t": _NUMBER, "alpha": _NUMBER, "beta": _NUMBER}}
STRING = {"title": "std_msgs/msg/String", "type": "object", "properties": {"data": {"type": "string"}}}
LINE_STRIP, LINE_LOOP = 0, 1  # foxglove.LinePrimitive type
LEG_COLOR = {"r": 0.2, "g": 0.5, "b": 0.9, "a": 1.0}
COG_COLOR = {"r": 1.0, "g": 0.6, "b": 0.0, "a": 1.0}
INSIDE_COLOR = {"r": 0.1, "g": 0.8, "b": 0.2, "a": 1.0}
OUTSIDE_COLOR = {"r": 0.9, "g": 0.1, "b": 0.1, "a": 1.0}
FORCE_COLOR = {"r": 0.8, "g": 0.1, "b": 0.8, "a": 1.0}
IDENTITY = {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0}


class LiveViewError(Exception):
    """The live view cannot start: the extra is missing or the port cannot be bound."""


def _vec(p: np.ndarray) -> dict[str, float]:
    return {"x": float(p[0]), "y": float(p[1]), "z": float(p[2])}


def _time(t: float) -> dict[str, int]:
    ns = round(t * 1e9)
    return {"sec": ns // 1_000_000_000, "nsec": ns % 1_000_000_000}


def quaternion(R: np.ndarray) -> dict[str, float]:
    """Unit quaternion of a rotation matrix (Shepperd's method, Khalil & Dombre §2.3.6)."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    if tr > 0.0:
        s = 2.0 * math.sqrt(1.0 + tr)
        w, x, y, z = 0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        v = [0.0, 0.0, 0.0]
        v[i], v[j], v[k] = 0.25 * s, (R[j, i] + R[i, j]) / s, (R[k, i] + R[i, k]) / s
        w = (R[k, j] - R[j, k]) / s
        x, y, z = v
    return {"x": x, "y": y, "z": z, "w": w}


def arrow_rotation(d: np.ndarray) -> dict[str, float]:
    """The shortest rotation taking +x (a Foxglove arrow's axis) to the unit vector ``d``."""
    w = 1.0 + d[0]
    if w < 1e-9:                                # d = -x: half a turn about z
        return {"x": 0.0, "y": 0.0, "z": 1.0, "w": 0.0}
    norm = math.sqrt(w * w + d[1] * d[1] + d[2] * d[2])
    return {"x": 0.0, "y": -d[2] / norm, "z": d[1] / norm, "w": w / norm}


class Ground:
    """What places the base in the world: the foot's Delta and Z and the sole's outline
    (the stabilizer's ``foot.outline``, else the robot's rectangle a, b, c)."""

    def __init__(self, foot: dict[str, float], outline: np.ndarray) -> None:
        self.delta, self.z = foot["Delta"], foot["Z"]
        self.outline = np.ascontiguousarray(outline, dtype=np.float64)

    @classmethod
    def of(cls, robot: Robot, stabilizer_path: Path | None) -> Ground | None:
        foot = robot.description.foot
        if foot is None:
            return None
        outline = None
        if stabilizer_path is not None:
            from stabilizer.config import load_config
            outline = load_config(stabilizer_path).outline
        return cls(foot, np.array(outline) if outline is not None else rectangle_outline(foot["a"], foot["b"], foot["c"]))


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

    def __init__(self, robot: Robot, port: int, host: str = "127.0.0.1", ground: Ground | None = None,
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
        self.model, self.names, self.ground = robot.model, list(robot.joint_names), ground
        self.period = 1.0 / rate_hz
        self.frames = 0                         # frames published (any channel)
        self._next_t = -math.inf
        self._T = np.zeros((robot.n + 2, 4, 4))
        self._R = np.eye(3)
        self._o = np.zeros(3)
        self._cog = np.zeros(3)
        self._poly = np.zeros((0 if ground is None else len(ground.outline), 2))
        self._fox = foxglove
        self._ctx = foxglove.Context()
        self._subs = _Listener(parameters)
        self._links = links
        self._rel = np.eye(4)
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
        self.relay.close()
        self.server.stop()

    def offer(self, rec: np.ndarray) -> None:
        """Publish ``rec`` if ``1 / rate_hz`` s of loop time have passed since the last frame."""
        t = float(rec[self.layout.slices["t"]][0])
        if t < self._next_t:
            return
        self._next_t = t + self.period
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
        tilt_known = self._place(rec)
        q = rec[s["q"]]
        posed = bool(np.all(np.isfinite(q)))
        if posed:                               # frames 0..n and the tool, for /tf and /scene
            m = self.model
            forward_kinematics(m.mdh, m.jtype, m.tool, q, self._T)
        if self._tf is not None and self._tf.has_sinks():
            transforms = []
            if tilt_known:
                transforms.append(self._transform(t, WORLD, BASE, self._R, self._o))
            if posed:
                for j, (parent, child) in enumerate(self._links, 1):   # frame j in frame j-1 (eq. 1-5)
                    np.matmul(np.linalg.inv(self._T[j - 1]), self._T[j], out=self._rel)
                    transforms.append(self._transform(t, parent, child, self._rel[:3, :3], self._rel[:3, 3]))
            if transforms:
                self._log(self._tf, {"transforms": transforms}, ns)
        if self._scene.has_sinks():
            self._log(self._scene, {"deletions": [], "entities": self._entities(rec, t, tilt_known)}, ns)

    @staticmethod
    def _transform(t: float, parent: str, child: str, R: np.ndarray, p: np.ndarray) -> dict[str, Any]:
        return {"timestamp": _time(t), "parent_frame_id": parent, "child_frame_id": child,
                "translation": _vec(p), "rotation": quaternion(R)}

    def _place(self, rec: np.ndarray) -> bool:
        """R_M->O0 and O0 in the world (thesis eq. 46-47) at the record's tilt; False without a
        foot or a finite tilt."""
        alpha, beta = rec[self.layout.slices["platform"]].tolist()
        if self.ground is None or not (math.isfinite(alpha) and math.isfinite(beta)):
            return False
        rotation_world_foot(alpha, beta, self._R)
        foot_origin(self._R, self.ground.delta, self.ground.z, self._o)
        return True

    def _log(self, channel, msg: dict[str, Any], ns: int) -> None:
        channel.log(json.dumps(msg, allow_nan=False, separators=(",", ":")), log_time=ns)
        self.frames += 1

    def _entities(self, rec: np.ndarray, t: float, tilt_known: bool) -> list[dict[str, Any]]:
        s = self.layout.slices
        q, com = rec[s["q"]], rec[s["com"]]
        stamp = _time(t)
        out = []
        if np.all(np.isfinite(q)):                # self._T: publish() ran the FK at q
            points = [_vec(T[:3, 3]) for T in self._T]
            out.append({"timestamp": stamp, "frame_id": BASE, "id": "leg", "frame_locked": True,
                        "lines": [{"type": LINE_STRIP, "pose": {"position": _vec(np.zeros(3)), "orientation": IDENTITY},
                                   "thickness": 4.0, "scale_invariant": True, "points": points,
                                   "color": LEG_COLOR}]})
        if np.all(np.isfinite(com)):
            out.append({"timestamp": stamp, "frame_id": BASE, "id": "cog", "frame_locked": True,
                        "spheres": [{"pose": {"position": _vec(com), "orientation": IDENTITY},
                                     "size": _vec(np.full(3, 0.02)), "color": COG_COLOR}]})
        if not tilt_known:
            return out
        g = self.ground
        project_outline(g.outline, len(g.outline), self._R, g.z, self._poly)
        margins = rec[s["margins"]]
        margins = margins[np.isfinite(margins)]
        color = OUTSIDE_COLOR if margins.size and margins.min() < 0.0 else INSIDE_COLOR
        support = {"timestamp": stamp, "frame_id": WORLD, "id": "support", "frame_locked": True,
                   "lines": [{"type": LINE_LOOP, "pose": {"position": _vec(np.zeros(3)), "orientation": IDENTITY},
                              "thickness": 3.0, "scale_invariant": True, "color": color,
                              "points": [{"x": 0.0, "y": float(y), "z": float(z)} for y, z in self._poly]}]}
        force = rec[s["force"]]
        size = float(np.linalg.norm(force))
        if np.all(np.isfinite(com)) and math.isfinite(size) and size > 0.0:
            base_to_world(self._R, self._o, com, self._cog)
            length = FORCE_SCALE * size
            support["arrows"] = [{"pose": {"position": _vec(self._cog), "orientation": arrow_rotation(force / size)},
                                  "shaft_length": 0.8 * length, "shaft_diameter": 0.005,
                                  "head_length": 0.2 * length, "head_diameter": 0.012, "color": FORCE_COLOR}]
        out.append(support)
        return out
