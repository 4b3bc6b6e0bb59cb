"""Cycle log: every telemetry record the I/O process reads, as an MCAP file.

A run's log is ``cycles.mcap`` in a new ``run-<start time>-<pid>`` folder under ``io.log_dir``
(:func:`new_run_dir`, so a restart never meets the previous run's log). Each record is split
into one JSON message per kind of data, on the channels of :data:`CHANNELS` (derived from
:class:`~controller.daemon.telemetry.RecordLayout`, every field on exactly one channel; ``/rig``
only with the Stewart-Gough rig), plus ``/events`` (the loop's events, stamped at cycle × period)
and ``/hil_truth`` (HIL ground truth, declared only when a scenario records some). Schemas are
``jsonschema`` with every field's unit (:data:`~controller.daemon.telemetry.FIELD_UNITS`), messages
``json``, codes and counters JSON integers, non-finite numbers ``null``, each message keeping the
loop's time ``t``. Besides, ROS 2 messages (CDR, ``ros2msg`` schemas, written by ``mcap_ros2``'s
writer): ``/joint_states`` (``sensor_msgs/msg/JointState``) every record, and, given a
:class:`~controller.daemon.io.scene.Scene`, ``/tf`` (``tf2_msgs/msg/TFMessage``: world -> base,
then the robot's links) and ``/scene`` (``foxglove.SceneUpdate``, JSON) at ``SCENE_HZ`` of loop
time, as the live view sends them. Log and publish times are Unix epoch ns: ``start_ns``, the wall
clock read once, at the log's first message, less that message's loop time ``t`` (the daemon's
boot, its kernels compiling, is not counted), plus each message's ``t``: a lock-step run's log is the
same given its start. Run metadata (joint names, layout, period) is the MCAP metadata record
``bipd``, written first; the start is the metadata record ``bipd.start``, written with the first
message (or at close).

Crash safety: records are gathered into compressed chunks of about ``chunk_bytes`` of JSON
(256 KiB, about 0.4 s of records at 500 Hz), each written, flushed and fsynced whole at a record
boundary, so a crash loses at most the chunk being filled; :func:`read_log` reads a file without
its summary and footer (a killed writer) up to its last complete chunk. A write that fails (a full
disk) cuts the file back to its last complete chunk and stops the writer; the records counted are
those on disk.
"""
from __future__ import annotations

import json
import math
import os
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from mcap.exceptions import McapError
from mcap.records import Channel as McapChannel, Message, Metadata, Schema as McapSchema
from mcap.stream_reader import StreamReader
from mcap.writer import CompressionType
from mcap_ros2.writer import Writer as Ros2Writer
from zstandard import ZstdError

from controller.daemon.codes import Event, Reason, State
from drivers.health import BUS_FLAGS, flag_names as bus_flag_names
from controller.daemon.telemetry import (FIELD_UNITS, INTEGER_FIELDS, STAB_FLAGS, TASKS, RecordLayout,
                                         stab_flag_names)
from models.rig.config import LEG_NAMES

from controller.daemon.io import ros2
from controller.daemon.io.messages import finite_or_none, name_of
from controller.daemon.io.scene import SCENE_UPDATE, WORLD, Every, Scene

LOG_NAME = "cycles.mcap"
FORMAT = "bipd-cycle-log"
START = "bipd.start"        # the metadata record of start_ns
VERSION = 3                 # 3: epoch times, ROS 2 channels, /scene, integers, units
EVENTS, TRUTH, RIG = "/events", "/hil_truth", "/rig"
JOINT_STATES, TF, SCENE = "/joint_states", "/tf", "/scene"
SCENE_HZ = 30.0             # /tf and /scene: the live view's rate
NS = 1_000_000_000


class LogError(ValueError):
    """A file or folder that is not a readable cycle log."""


@dataclass(frozen=True)
class Channel:
    """One MCAP channel of the record: ``fields`` maps message keys to RecordLayout fields;
    ``joints`` adds the joint names as ``name``; ``labels`` adds decoded names (writer only)."""
    topic: str
    fields: tuple[tuple[str, str], ...]
    joints: bool = False
    labels: Callable[[np.ndarray, RecordLayout], dict[str, Any]] | None = None
    static: tuple[tuple[str, tuple[str, ...]], ...] = ()


def _loop_labels(rec: np.ndarray, layout: RecordLayout) -> dict[str, Any]:
    fault = rec[layout.slices["fault"]][0]
    return {"state_name": name_of(State, rec[layout.slices["state"]][0]),
            "fault_name": name_of(Reason, fault) if fault else None,
            "bus_flag_names": bus_flag_names(rec[layout.slices["bus_flags"]][0])}


def _stab_labels(rec: np.ndarray, layout: RecordLayout) -> dict[str, Any]:
    return {"flag_names": stab_flag_names(rec[layout.slices["stab_flags"]][0])}


CHANNELS = (
    Channel("/joint_state", (("position", "q"), ("velocity", "qd")), joints=True),
    Channel("/joint_reference", (("position", "q_ref"),), joints=True),
    Channel("/joint_torque", (("effort", "tau"),), joints=True),
    Channel("/loop", (("cycle", "cycle"), ("state", "state"), ("fault", "fault"), ("fault_info", "fault_info"),
                      ("overruns", "overruns"), ("missed", "missed"), ("support", "support"),
                      ("feet_load", "feet_load"), ("contact", "contact"), ("bus_flags", "bus_flags")),
            labels=_loop_labels),
    Channel("/cog", (("com", "com"), ("margins", "margins"))),
    Channel("/stabilizer", (("force", "force"), ("flags", "stab_flags"), ("platform", "platform"), ("tilt", "tilt"),
            ("capture_point", "capture_point"), ("push_strategy", "push_strategy"), ("tip_point", "tip_point")),
            labels=_stab_labels),
    Channel("/pelvis", (("position", "pelvis_pos"), ("velocity", "pelvis_vel"), ("rpy", "pelvis_rpy"),
                        ("stance", "stance"))),
    Channel("/feet", (("ground_slope", "ground_slope"), ("edge", "edge"))),
    Channel("/task_times", (("wake_us", "wake_us"), ("task_us", "task_us")), static=(("tasks", TASKS),)),
    Channel(RIG, (("following_error_mm", "rig_ferr"),), static=(("legs", LEG_NAMES),)),
)


def _typed(kind: str | list[str], description: str) -> dict[str, Any]:
    return {"type": kind, "description": description}


def _strings(description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "description": description}


T_PROPERTY = _typed("number", FIELD_UNITS["t"] + "; the message's log time is the log's start + t")
NAME = ["string", "integer"]                # an enum member's name, or the integer when it is none
OPTIONAL_NAME = ["string", "integer", "null"]


def _schema(ch: Channel, layout: RecordLayout) -> dict[str, Any]:
    """JSON schema of a channel's messages (jsonschema draft 2020-12), each field with its unit."""
    props: dict[str, Any] = {"t": T_PROPERTY}
    if ch.joints:
        props["name"] = _strings("joint names, in the order of the arrays")
    for key, name in ch.fields:
        s = layout.slices[name]
        item = {"type": ["integer" if name in INTEGER_FIELDS else "number", "null"]}
        size = s.stop - s.start
        props[key] = ({**item, "description": FIELD_UNITS[name]} if size == 1 else
                      {"type": "array", "items": item, "minItems": size, "maxItems": size,
                       "description": FIELD_UNITS[name]})
    for key, _ in ch.static:
        props[key] = _strings("names, in the order of the arrays")
    if ch.labels is _loop_labels:
        props.update(state_name=_typed(NAME, "state's name"), fault_name=_typed(OPTIONAL_NAME, "fault's Reason name"),
                     bus_flag_names=_strings("names of the bits set in bus_flags"))
    elif ch.labels is _stab_labels:
        props["flag_names"] = _strings("names of the bits set in flags")
    return {"type": "object", "title": ch.topic.strip("/"), "properties": props, "required": list(props),
            "additionalProperties": False}


#: /events: every field an event (controller.daemon.io.messages.event_message, log_failed_message) has
EVENT_SCHEMA = {"type": "object", "title": "events", "required": ["t", "cycle", "kind"], "additionalProperties": False,
                "properties": {
    "t": _typed("number", "s, the loop's time of the event's cycle (cycle x period)"),
    "cycle": _typed("integer", "cycles"),
    "kind": {"anyOf": [{"enum": [e.name for e in Event]}, {"type": "integer"}], "description": "event kind"},
    "from_state": _typed(NAME, "state left (TRANSITION)"), "to_state": _typed(NAME, "state entered (TRANSITION)"),
    "reason": _typed(NAME, "Reason name (TRANSITION, FAULT, WARNING)"),
    "detail": _typed(["string", "number", "null"], "a sentence (FAULT, LOG_FAILED) or the raw detail code"),
    "code": _typed(OPTIONAL_NAME, "the drive's or bus's error code, by name and in hex (FAULT)"),
    "axis": _typed(["string", "null"], "bus axis (FAULT)"), "node": _typed(["integer", "null"], "POWERLINK node id"),
    "joint": _typed(["string", "null"], "joint name"),
    "status": _typed(NAME, "stabilizer or load-cell status name"),
    "rose": _strings("stab_flags names that rose (STABILIZER)"),
    "cmd": _typed(NAME, "command name (COMMAND)"), "accepted": _typed("boolean", "the command was accepted"),
    "support": _typed(["string", "null"], "support phase name (SUPPORT, CONTACT)"),
    "root": _typed(["integer", "null"], "the model's root body index (SUPPORT)"),
    "right_share": _typed(["number", "null"], "the right foot's share of the load, 0..1 (CONTACT)"),
    "foot": _typed(["string", "null"], "the foot that landed on an edge or a step (EDGE), or a recovery step "
                   "swings (RECOVERY_STEP), or whose landing its cells moved (TOUCHDOWN) or turned (TOE_DOWN, SIDE_DOWN), or "
                   "whose rising sole struck something (STRIKE)"),
    "offset_m": _typed(["number", "null"], "m, the landed sole's offset from the plan, > 0 higher (TOUCHDOWN)"),
    "pitch_deg": _typed(["number", "null"], "deg, the sole landed across an edge turned toes down (TOE_DOWN)"),
    "roll_deg": _typed(["number", "null"], "deg, the sole landed on a side's edge turned about it, > 0 right side "
                       "down (SIDE_DOWN)"),
    "raise_m": _typed(["number", "null"], "m, the raise over the plan a struck swing sole rises to (STRIKE)"),
    "target": {"type": ["array", "null"], "items": {"type": "number"},
               "description": "m, where the recovery step's sole centre lands: e1 forward, e2 left of the "
                              "stabilizer's stance sole (RECOVERY_STEP)"},
    "cells": {"type": "array", "items": {"type": "integer"},
              "description": "its unloaded load cells, indices into the robot's feet.*.sensors (EDGE)"},
    "missed": _typed(["integer", "null"], "cycles missed (OVERRUN)"),
    "cycle_us": _typed(["number", "null"], "us, the overrunning cycle's time (OVERRUN)"),
    "a": _typed(["number", "null"], "raw first argument (other kinds)"),
    "b": _typed(["number", "null"], "raw second argument (other kinds)"),
    "error": _typed("string", "errno name of the log's failure (LOG_FAILED)"),
    "records": _typed("integer", "records on disk when the log failed (LOG_FAILED)")}}
TRUTH_SCHEMA = {"type": "object", "title": "hil_truth", "required": ["t"], "additionalProperties": True,
                "description": "the HIL plant's ground truth, SI units (m, rad, N, N m, s; following_error in mm)",
                "properties": {"t": _typed("number", "s, the plant's time")}}


def new_run_dir(log_dir: str | Path) -> Path:
    """Create and return a new, empty run folder ``run-<local time to the µs>-<pid>`` under
    ``log_dir``; the names sort in start order."""
    parent = Path(log_dir)
    parent.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%dT%H%M%S.%f")
    for attempt in range(100):
        d = parent / f"run-{stamp}-{os.getpid()}{f'-{attempt}' if attempt else ''}"
        try:
            d.mkdir()
        except FileExistsError:
            continue
        return d
    raise LogError(f"{parent}: could not create a new run folder (100 names taken)")


def _log_in(d: Path) -> Path | None:
    """The log a run folder holds: its ``cycles.mcap``."""
    return d / LOG_NAME if (d / LOG_NAME).is_file() else None


def find_log(path: str | Path) -> Path:
    """An ``.mcap`` file as given; else the log of the run folder ``path``, or of its latest
    ``run-*`` folder."""
    p = Path(path)
    if p.is_file():
        return p
    found = _log_in(p) if p.is_dir() else None
    if found:
        return found
    runs = [f for r in sorted(p.glob("run-*")) if (f := _log_in(r))] if p.is_dir() else []
    if not runs:
        raise LogError(f"{p} is not a cycle log: no file or {LOG_NAME} there "
                       f"(and no run-* folder holds one)")
    return runs[-1]


class CycleLogWriter:
    """Writes records (and events, HIL truth) to a new MCAP file, in whole fsynced chunks.

    ``records`` counts the records that reached the disk (in chunks written, flushed and
    fsynced), never those still gathered. ``rig`` False leaves out the ``/rig`` channel (a robot
    without the Stewart-Gough rig: its fields are all null); ``/hil_truth`` is declared by the
    first :meth:`truth`. ``scene`` (a serial chain's) adds ``/tf`` and ``/scene``; ``start_ns`` is the
    Unix time of the loop's ``t`` = 0 (default: read at the first message, less its ``t``). The first ``OSError`` (a full disk, EIO) cuts the file back to its last
    chunk on disk, closes it, is kept in ``error`` and re-raised; :meth:`close` after it does nothing.
    """

    def __init__(self, path: str | Path, layout: RecordLayout, joint_names: tuple[str, ...],
                 chunk_bytes: int = 256 * 1024, period: float = 0.002, meta: dict[str, Any] | None = None,
                 rig: bool = True, scene: Scene | None = None, start_ns: int | None = None) -> None:
        if chunk_bytes < 1:
            raise ValueError(f"chunk_bytes must be at least 1, got {chunk_bytes}")
        self.path = Path(path)
        self.layout = layout
        self.period = period
        self.start_ns = start_ns
        self.chunk_bytes = chunk_bytes
        self.chunks = 0
        self.records = 0
        self.error: OSError | None = None
        self._gathered = 0                  # records appended since the last chunk reached the disk
        self._on_disk = 0                   # file offset after the last chunk that reached the disk
        self._pending = 0
        self._seq = 0
        try:
            self._file = open(self.path, "xb")
        except FileExistsError:
            raise LogError(f"{self.path} already exists; a cycle log is never overwritten") from None
        # chunks are cut here, at record boundaries (flush), never inside the mcap writer; the JSON
        # channels go through the ROS 2 writer's own MCAP writer, so one file holds both
        self._ros2 = Ros2Writer(self._file, chunk_size=1 << 62, compression=CompressionType.ZSTD)
        self._mcap = self._ros2._writer
        self._names = names = list(joint_names)
        self._channels = []
        for ch in CHANNELS:
            if ch.topic == RIG and not rig:
                continue
            cid = self._register(ch.topic, _schema(ch, layout))
            slices = tuple((key, layout.slices[name], layout.slices[name].stop - layout.slices[name].start == 1,
                            name in INTEGER_FIELDS) for key, name in ch.fields)
            fixed = ({"name": names} if ch.joints else {}) | {k: list(v) for k, v in ch.static}
            self._channels.append((cid, slices, fixed, ch.labels))
        self._extra = {EVENTS: self._register(EVENTS, EVENT_SCHEMA)}
        self._joint_states = self._ros2.register_msgdef(ros2.JOINT_STATE, ros2.JOINT_STATE_DEF)
        self._scene, self._every = scene, Every(SCENE_HZ)
        if scene is not None:
            self._tf = self._ros2.register_msgdef(ros2.TF_MESSAGE, ros2.TF_MESSAGE_DEF)
            self._extra[SCENE] = self._register(SCENE, SCENE_UPDATE, SCENE_UPDATE["title"])
            self._world_base = np.eye(4)
        self._mcap.add_metadata("bipd", {
            "format": FORMAT, "version": str(VERSION), "n": str(layout.n), "joint_names": json.dumps(names),
            "tasks": json.dumps(list(TASKS)), "stab_flags": json.dumps(list(STAB_FLAGS)),
            "bus_flags": json.dumps(list(BUS_FLAGS)), "period": repr(period),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "meta": json.dumps(meta or {})})
        self._started = False               # bipd.start written (by the first message)
        self._commit(self._mcap.flush)

    def _register(self, topic: str, schema: dict[str, Any], name: str | None = None) -> int:
        sid = self._mcap.register_schema(name or topic.strip("/"), "jsonschema", json.dumps(schema).encode())
        return self._mcap.register_channel(topic, "json", sid)

    def stamp(self, t: float) -> int:
        """The Unix time in ns of the loop's time ``t`` (the log's start when ``t`` is not finite); the
        first call fixes ``start_ns`` if it was not given and writes it (``bipd.start``)."""
        ns = round(t * NS) if math.isfinite(t) else 0
        if not self._started:
            self._check()
            if self.start_ns is None:
                self.start_ns = time.time_ns() - ns
            self._mcap.add_metadata(START, {"start_ns": str(self.start_ns)})
            self._started = True
        return self.start_ns + ns

    def _check(self) -> None:
        if self.error is not None:
            raise LogError(f"{self.path}: the log stopped on an earlier write error ({self.error})")

    def _add(self, cid: int, ns: int, msg: dict[str, Any]) -> None:
        self._check()
        data = json.dumps(msg, separators=(",", ":")).encode()
        self._mcap.add_message(cid, ns, data, ns, self._seq)
        self._seq += 1
        self._pending += len(data)

    def _add_ros2(self, topic: str, schema: Any, ns: int, msg: dict[str, Any]) -> None:
        self._check()
        self._ros2.write_message(topic, schema, msg, ns, ns, self._seq)
        self._seq += 1

    def append(self, rec: np.ndarray) -> None:
        """One record, one message per channel (and ``/joint_states``; ``/tf`` and ``/scene`` at
        ``SCENE_HZ``); writes a chunk when ``chunk_bytes`` are gathered."""
        t = float(rec[0])
        ns = self.stamp(t)
        finite = bool(np.isfinite(rec).all())
        for cid, slices, fixed, labels in self._channels:
            msg: dict[str, Any] = {"t": t}
            msg.update(fixed)
            for key, s, scalar, integer in slices:
                v = rec[s].tolist()
                if integer:
                    v = [int(x) if math.isfinite(x) else None for x in v]
                elif not finite:
                    v = [finite_or_none(x) for x in v]
                msg[key] = v[0] if scalar else v
            if labels is not None:
                msg.update(labels(rec, self.layout))
            self._add(cid, ns, msg)
        sl = self.layout.slices
        self._add_ros2(JOINT_STATES, self._joint_states, ns,
                       ros2.joint_state(ns, self._names, rec[sl["q"]], rec[sl["qd"]], rec[sl["tau"]]))
        if self._scene is not None and self._every.due(t):
            self._append_scene(rec, ns)
        self._gathered += 1
        if self._pending >= self.chunk_bytes:
            self.flush()

    def _append_scene(self, rec: np.ndarray, ns: int) -> None:
        """``/tf`` (world -> base at a known tilt, the robot's links at a finite q) and ``/scene``."""
        scene = self._scene
        tilt_known = scene.place(rec)
        transforms = []
        if tilt_known:
            self._world_base[:3, :3], self._world_base[:3, 3] = scene.R, scene.o
            transforms.append(ros2.transform(ns, WORLD, scene.base, self._world_base))
        if scene.frames(rec[self.layout.slices["q"]]):
            transforms += [ros2.transform(ns, parent, child, rel) for parent, child, rel in scene.link_poses()]
        if transforms:
            self._add_ros2(TF, self._tf, ns, {"transforms": transforms})
        self._add(self._extra[SCENE], ns, {"deletions": [], "entities": scene.entities(rec, ns, tilt_known)})

    def append_telemetry(self, msg: dict[str, Any]) -> None:
        """A ``telemetry`` frame of the I/O process (its layout fields, nulls for NaN)."""
        rec = np.full(self.layout.size, np.nan)
        for name, s in self.layout.slices.items():
            v = msg[name]
            rec[s] = np.array(v if isinstance(v, list) else [v], dtype=float)
        self.append(rec)

    def event(self, msg: dict[str, Any]) -> None:
        """A loop event (:func:`controller.daemon.io.messages.event_message`), stamped at cycle × period."""
        t = msg["cycle"] * self.period
        self._add(self._extra[EVENTS], self.stamp(t), {"t": t} | msg)

    def truth(self, msg: dict[str, Any]) -> None:
        """A HIL ground-truth frame (its own ``t``); the first one declares ``/hil_truth``."""
        if TRUTH not in self._extra:
            self._extra[TRUTH] = self._register(TRUTH, TRUTH_SCHEMA)
        self._add(self._extra[TRUTH], self.stamp(float(msg["t"])), msg)

    def _commit(self, write: Callable[[], None]) -> None:
        """``write`` (which ends at a record boundary), flushed and fsynced: the records gathered
        are then on disk. On an ``OSError`` the file is cut back to what reached the disk before
        and closed, unwritten bytes dropped, and the error kept and re-raised."""
        if self.error is not None:
            raise LogError(f"{self.path}: the log stopped on an earlier write error ({self.error})")
        try:
            write()
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as e:
            self.error = e
            try:
                os.ftruncate(self._file.fileno(), self._on_disk)   # frees space: needs none
            except OSError:
                pass
            self._file.raw.close()           # the buffer's unwritten bytes are never written
            raise
        self._on_disk = self._file.tell()
        self.records += self._gathered
        self._gathered = 0

    def flush(self) -> None:
        """Write what was gathered as a chunk, flushed and fsynced (nothing when empty)."""
        if self._pending:
            self._commit(self._mcap.flush)
            self.chunks += 1
            self._pending = 0

    def close(self) -> None:
        """Write the last chunk, the summary and the footer (nothing after a write error)."""
        if self._file.closed:
            return
        self.stamp(0.0)                      # a log without messages still says what it is
        self._commit(self._mcap.finish)
        if self._pending:
            self.chunks += 1
            self._pending = 0
        self._file.close()


@dataclass
class CycleLog:
    """A log read back: ``records`` is ``(N, size)``; :meth:`field` slices one field;
    ``events`` and ``truth`` are the messages of those channels."""
    layout: RecordLayout
    joint_names: tuple[str, ...]
    records: np.ndarray
    header: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    truth: list[dict[str, Any]] = field(default_factory=list)

    def field(self, name: str) -> np.ndarray:
        """``(N,)`` for a scalar field, ``(N, k)`` for a vector one."""
        s = self.layout.slices[name]
        col = self.records[:, s]
        return col[:, 0] if s.stop - s.start == 1 else col


@dataclass
class McapScan:
    """Every complete record of an MCAP file, read in order without its summary."""
    metadata: dict[str, dict[str, str]]
    topics: dict[int, str]
    messages: list[Message]
    types: dict[int, tuple[str, str]]   # channel id -> (message encoding, schema name)
    complete: bool                  # the footer was reached (not a torn file)


class _Bounded:
    """A file whose reads may not ask for more bytes than it has left: a damaged length field (a flipped
    bit in a chunk's size reads as 64 GB) is a ValueError, not an allocation of that size."""

    def __init__(self, f, size: int) -> None:
        self._f, self._size = f, size

    def read(self, n: int = -1) -> bytes:
        left = self._size - self._f.tell()
        if n is not None and n > left:
            raise ValueError(f"a record claims {n} bytes where {left} are left")
        return self._f.read(n)


def scan_mcap(path: Path) -> McapScan:
    """Read an MCAP file front to back; a torn tail (a killed writer) or a damaged record (a failed CRC,
    a chunk that does not decompress) ends the scan: the records before it stand."""
    metadata, topics, messages, complete = {}, {}, [], False
    schemas: dict[int, str] = {}
    types: dict[int, tuple[str, str]] = {}
    with open(path, "rb") as f:
        records = StreamReader(_Bounded(f, os.fstat(f.fileno()).st_size), validate_crcs=True).records
        try:
            for r in records:
                if isinstance(r, Message):
                    messages.append(r)
                elif isinstance(r, McapChannel):
                    topics[r.id] = r.topic
                    types[r.id] = (r.message_encoding, schemas.get(r.schema_id, ""))
                elif isinstance(r, McapSchema):
                    schemas[r.id] = r.name
                elif isinstance(r, Metadata):
                    metadata[r.name] = r.metadata
            complete = True
        except (McapError, ValueError, ZstdError) as e:     # not MCAP, or damaged: a bad CRC, a bad chunk
            if not messages and not metadata:
                raise LogError(f"{path} is not an MCAP file ({type(e).__name__})") from None
        except struct.error:
            pass                    # a record cut inside its fields: it is lost, the earlier ones stand
    return McapScan(metadata, topics, messages, types, complete)


def _record_channels(scan: McapScan) -> list[Channel]:
    """The record channels a file declares (every record is one message on each)."""
    declared = set(scan.topics.values())
    return [ch for ch in CHANNELS if ch.topic in declared]


def _start_ns(scan: McapScan) -> int:
    """Unix ns of the loop's t = 0; 0 for a log of version 2 (stamped with t alone) or one torn
    before its first message."""
    return int(scan.metadata.get(START, {}).get("start_ns", 0))


def _read_mcap(path: Path) -> CycleLog:
    scan = scan_mcap(path)
    meta = scan.metadata.get("bipd")
    if meta is None or meta.get("format") != FORMAT:
        raise LogError(f"{path} is not a {FORMAT} file (no bipd metadata record)")
    layout = RecordLayout(int(meta["n"]))
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for m in scan.messages:
        if scan.types[m.channel_id][0] == "json":        # the ROS 2 channels repeat JSON ones
            by_topic.setdefault(scan.topics[m.channel_id], []).append(json.loads(m.data))
    present = _record_channels(scan)
    count = min((len(by_topic.get(ch.topic, ())) for ch in present), default=0)
    records = np.full((count, layout.size), np.nan)
    for ch in present:                              # a channel left out (/rig without the rig) reads NaN
        msgs = by_topic.get(ch.topic, [])[:count]
        records[:, 0] = [m["t"] for m in msgs]
        for key, name in ch.fields:
            s = layout.slices[name]
            col = np.array([m.get(key) if isinstance(m.get(key), list) else [m.get(key)] for m in msgs],
                           dtype=float)             # a field a file predates (support) reads NaN
            records[:, s] = col.reshape(count, s.stop - s.start)
    header = {k: json.loads(v) if k in ("joint_names", "tasks", "stab_flags", "bus_flags", "meta") else v
              for k, v in meta.items()}
    header["start_ns"] = _start_ns(scan)
    header["complete"] = scan.complete
    return CycleLog(layout, tuple(header["joint_names"]), records, header,
                    by_topic.get(EVENTS, []), by_topic.get(TRUTH, []))


def read_log(path: str | Path) -> CycleLog:
    """Read a cycle log: an ``.mcap`` file, a run folder or the latest run under ``path``
    (:func:`find_log`)."""
    return _read_mcap(find_log(path))


def log_info(path: str | Path) -> dict[str, Any]:
    """Channels with their type (schema name, message encoding), message counts and time span
    in loop time, the record count, the start (Unix ns and UTC), and whether the file ended cleanly."""
    p = find_log(path)
    scan = scan_mcap(p)
    if "bipd" not in scan.metadata:
        raise LogError(f"{p} is not a {FORMAT} file (no bipd metadata record)")
    start_ns = _start_ns(scan)
    channels: dict[str, dict[str, Any]] = {
        topic: {"type": scan.types[cid][1], "encoding": scan.types[cid][0], "messages": 0, "t": None}
        for cid, topic in scan.topics.items()}
    for m in scan.messages:
        c = channels[scan.topics[m.channel_id]]
        c["messages"] += 1
        t = (m.log_time - start_ns) / NS
        c["t"] = [t, t] if c["t"] is None else [min(c["t"][0], t), max(c["t"][1], t)]
    spans = [c["t"] for c in channels.values() if c["t"]]
    start = (datetime.fromtimestamp(start_ns // NS, timezone.utc)
             .replace(microsecond=start_ns % NS // 1000).isoformat(timespec="microseconds"))
    return {"path": str(p), "format": "mcap", "bytes": p.stat().st_size, "complete": scan.complete,
            "start_ns": start_ns, "start": start if start_ns else None,
            "records": min((channels[ch.topic]["messages"] for ch in _record_channels(scan)), default=0),
            "t": [min(s[0] for s in spans), max(s[1] for s in spans)] if spans else None,
            "channels": channels}
