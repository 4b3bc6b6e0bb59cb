"""ROS 2 messages of the cycle log: ``sensor_msgs/msg/JointState`` and ``tf2_msgs/msg/TFMessage``.

The definitions are the ROS 2 ``.msg`` texts (their comments and defaults left out), each followed
by the types it uses, in the concatenated ``ros2msg`` form of the MCAP ROS 2 profile
(mcap.dev/spec/registry, "ros2msg"): Foxglove, PlotJuggler and rosbag2's MCAP storage read them
as their built-in types. Messages are dicts in the shape ``mcap_ros2``'s encoder takes (CDR).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from controller.daemon.io.scene import quaternion

SEPARATOR = "=" * 80
_TIME = "MSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec"
_HEADER = "MSG: std_msgs/Header\nbuiltin_interfaces/Time stamp\nstring frame_id"


def _concatenated(main: str, *used: str) -> str:
    return "\n".join([main, *(f"{SEPARATOR}\n{u}" for u in used)]) + "\n"


JOINT_STATE = "sensor_msgs/msg/JointState"
JOINT_STATE_DEF = _concatenated(
    "std_msgs/Header header\nstring[] name\nfloat64[] position\nfloat64[] velocity\nfloat64[] effort",
    _HEADER, _TIME)
TF_MESSAGE = "tf2_msgs/msg/TFMessage"
TF_MESSAGE_DEF = _concatenated(
    "geometry_msgs/TransformStamped[] transforms",
    "MSG: geometry_msgs/TransformStamped\nstd_msgs/Header header\nstring child_frame_id\nTransform transform",
    _HEADER, _TIME,
    "MSG: geometry_msgs/Transform\nVector3 translation\nQuaternion rotation",
    "MSG: geometry_msgs/Vector3\nfloat64 x\nfloat64 y\nfloat64 z",
    "MSG: geometry_msgs/Quaternion\nfloat64 x\nfloat64 y\nfloat64 z\nfloat64 w")


def header(ns: int, frame_id: str = "") -> dict[str, Any]:
    """A ``std_msgs/Header`` stamped ``ns`` (Unix epoch)."""
    return {"stamp": {"sec": ns // 1_000_000_000, "nanosec": ns % 1_000_000_000}, "frame_id": frame_id}


def joint_state(ns: int, names: list[str], q: np.ndarray, qd: np.ndarray, tau: np.ndarray) -> dict[str, Any]:
    """``sensor_msgs/JointState``: rad, rad/s, N m (m, m/s, N for a prismatic joint); NaN unknown."""
    return {"header": header(ns), "name": names, "position": q.tolist(), "velocity": qd.tolist(),
            "effort": tau.tolist()}


def transform(ns: int, parent: str, child: str, T: np.ndarray) -> dict[str, Any]:
    """``geometry_msgs/TransformStamped`` of the 4x4 pose ``T`` of ``child`` in ``parent``."""
    p = T[:3, 3]
    return {"header": header(ns, parent), "child_frame_id": child,
            "transform": {"translation": {"x": float(p[0]), "y": float(p[1]), "z": float(p[2])},
                          "rotation": quaternion(T[:3, :3])}}
