"""The cycle log as ROS 2 and Foxglove tools read it: decoded by ``mcap_ros2``'s DecoderFactory (an
independent CDR decoder) and checked against the records written and against a daemon's telemetry;
the JSON channels validated against their own schemas with ``jsonschema``, integers as integers."""
from __future__ import annotations

import json
import time

import jsonschema
import numpy as np
import pytest
import yaml
import zmq
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory

from controller.daemon.codes import Event, Reason, State, pack_detail
from controller.daemon.io.log import (EVENTS, JOINT_STATES, SCENE, SCENE_HZ, TF, TRUTH, CycleLogWriter,
                                      read_log)
from controller.daemon.io.messages import Names, event_message, log_failed_message
from controller.daemon.io.scene import Ground, Scene
from controller.daemon.telemetry import INTEGER_FIELDS, RecordLayout
from models.chain.robot import Robot
from tests.controller.daemon.io.test_io_log import START_NS, records
from tests.controller.daemon_process import wait_state, wait_transition
from tests.paths import ROBOTS

NS = 1_000_000_000


def _ns(stamp) -> int:
    return stamp.sec * NS + stamp.nanosec


def _pose(tf) -> np.ndarray:
    """The 4x4 pose of a decoded geometry_msgs/Transform (quaternion to matrix, written out here)."""
    r, p = tf.rotation, tf.translation
    x, y, z, w = r.x, r.y, r.z, r.w
    T = np.eye(4)
    T[:3, :3] = [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                 [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                 [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]
    T[:3, 3] = [p.x, p.y, p.z]
    return T


def _decoded(path):
    """{topic: [(schema, channel, message, decoded)]}: CDR through mcap_ros2, JSON through json."""
    out: dict[str, list] = {}
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for schema, channel, message in reader.iter_messages():
            if channel.message_encoding == "cdr":
                msg = DecoderFactory().decoder_for("cdr", schema)(message.data)
            else:
                msg = json.loads(message.data)
            out.setdefault(channel.topic, []).append((schema, channel, message, msg))
    return out


@pytest.fixture(scope="module")
def leg():
    return Robot.from_yaml(ROBOTS / "bip_leg.yaml")


def _leg_records(robot: Robot, count: int) -> np.ndarray:
    layout = RecordLayout(robot.n)
    s = layout.slices
    recs = records(layout, count)
    t = recs[:, 0]
    recs[:, s["qd"]] = np.gradient(recs[:, s["q"]], t, axis=0)
    recs[:, s["tau"]] = np.cos(t)[:, None] * [3.0, -2.0, 5.0, 1.5]
    recs[:, s["com"]] = [robot.com(q) for q in recs[:, s["q"]]]
    recs[:, s["platform"]] = np.stack([0.05 * np.sin(t), -0.03 * np.sin(2 * t)], axis=1)
    recs[:, s["state"]] = State.STABILIZING
    recs[:, s["stab_flags"]] = 5
    recs[:, s["support"]] = -1
    recs[:100, s["force"]] = np.nan                  # the stabilizer off at first: no force
    recs[100:, s["force"]] = [0.0, 3.0, -4.0]
    return recs


@pytest.mark.slow
def test_ros2_channels_decode_to_the_records(tmp_path, leg):
    """/joint_states: one per record, stamped start + t (Unix epoch, ns exact), names and values bit for
    bit; /tf at 30 Hz of loop time: world -> base at the record's tilt, and the links composing to the
    models' frames; /scene as the live view builds it, with the same stamps."""
    layout = RecordLayout(leg.n)
    recs = _leg_records(leg, 1000)                   # 2 s at 500 Hz
    scene = Scene(leg, Ground.of(leg, None))
    w = CycleLogWriter(tmp_path / "c.mcap", layout, leg.joint_names, scene=scene, start_ns=START_NS,
                       chunk_bytes=30_000)
    for r in recs:
        w.append(r)
    w.close()
    topics = _decoded(tmp_path / "c.mcap")
    s = layout.slices

    states = topics[JOINT_STATES]
    assert len(states) == len(recs)
    assert {(sc.name, sc.encoding, ch.message_encoding) for sc, ch, _, _ in states} == {
        ("sensor_msgs/msg/JointState", "ros2msg", "cdr")}
    for rec, (_, _, message, msg) in zip(recs, states):
        ns = START_NS + round(rec[0] * NS)
        assert message.log_time == message.publish_time == _ns(msg.header.stamp) == ns
        assert msg.name == list(leg.joint_names) and msg.header.frame_id == ""
        assert msg.position == rec[s["q"]].tolist() and msg.velocity == rec[s["qd"]].tolist()
        assert msg.effort == rec[s["tau"]].tolist()

    tfs = topics[TF]
    gaps = np.diff([m.log_time for _, _, m, _ in tfs])            # the first record 1/30 s after the last
    assert tfs[0][2].log_time == START_NS and set(gaps) == {34_000_000} and len(tfs) == 59
    assert 34e-3 == np.ceil(1 / SCENE_HZ / 0.002) * 0.002
    links = ["base", *leg.joint_names, "tool"]
    R, o = np.zeros((3, 3)), np.zeros(3)
    from models.tilt import rotation_world_foot
    from stabilizer.ground import foot_origin
    foot = leg.description.foot
    for _, _, message, msg in tfs:
        t = (message.log_time - START_NS) / NS
        rec = recs[round(t / 0.002)]
        assert rec[0] == pytest.approx(t, abs=1e-12)
        world = msg.transforms[0]
        assert (world.header.frame_id, world.child_frame_id) == ("world", "base")
        rotation_world_foot(*rec[s["platform"]], R)
        foot_origin(R, foot["Delta"], foot["Z"], o)
        np.testing.assert_allclose(_pose(world.transform)[:3, :3], R, atol=1e-12)
        np.testing.assert_allclose(_pose(world.transform)[:3, 3], o, atol=1e-12)
        chain = msg.transforms[1:]
        assert [(c.header.frame_id, c.child_frame_id) for c in chain] == list(zip(links, links[1:]))
        assert all(_ns(c.header.stamp) == message.log_time for c in msg.transforms)
        T = np.eye(4)
        q = rec[s["q"]]
        for i, c in enumerate(chain, start=1):
            T = T @ _pose(c.transform)
            want = leg.fk(q) if i == leg.n + 1 else leg.frame(q, i)
            np.testing.assert_allclose(T, want, atol=1e-12)

    scenes = topics[SCENE]
    assert [m.log_time for _, _, m, _ in scenes] == [m.log_time for _, _, m, _ in tfs]
    sc = scenes[0][0]
    assert (sc.name, sc.encoding) == ("foxglove.SceneUpdate", "jsonschema")
    for _, _, message, msg in scenes:
        jsonschema.validate(msg, json.loads(sc.data))
        ents = {e["id"]: e for e in msg["entities"]}
        assert set(ents) == {"leg", "cog", "support"}
        assert all(e["timestamp"]["sec"] * NS + e["timestamp"]["nsec"] == message.log_time for e in ents.values())
        t = (message.log_time - START_NS) / NS
        assert ("arrows" in ents["support"]) == (t >= 100 * 0.002)       # the force arrow once there is one


def test_every_channel_as_rosbag2_and_foxglove_read_it(tmp_path, leg):
    """What rosbag2's MCAP storage needs to list the file (``ros2 bag info``): a summary with
    statistics (their message counts), a schema record behind every channel (it throws "Could not
    find schema for topic" otherwise); what Foxglove needs to decode each channel: its message
    encoding and a schema of the matching encoding (cdr: ros2msg with a ROS 2 type name; json:
    jsonschema). The header keeps the ros2 profile mcap_ros2's writer gives (docs/logs.md)."""
    layout = RecordLayout(leg.n)
    w = CycleLogWriter(tmp_path / "c.mcap", layout, leg.joint_names, scene=Scene(leg, Ground.of(leg, None)),
                       start_ns=START_NS)
    for r in _leg_records(leg, 40):
        w.append(r)
    w.close()
    with open(tmp_path / "c.mcap", "rb") as f:
        reader = make_reader(f)
        header, summary = reader.get_header(), reader.get_summary()
        counts: dict[int, int] = {}
        for _, channel, _ in reader.iter_messages():
            counts[channel.id] = counts.get(channel.id, 0) + 1
    assert header.profile == "ros2"
    assert summary.statistics.channel_message_counts == counts
    assert summary.statistics.message_count == sum(counts.values()) > 40
    pairs = {}
    for channel in summary.channels.values():
        schema = summary.schemas[channel.schema_id]            # KeyError: a channel without a schema
        assert channel.schema_id != 0 and schema.data, channel.topic
        pairs[channel.topic] = (channel.message_encoding, schema.encoding)
        if channel.message_encoding == "cdr":
            assert schema.name.split("/")[1] == "msg", schema.name
    assert pairs[JOINT_STATES] == pairs[TF] == ("cdr", "ros2msg")
    assert {pair for topic, pair in pairs.items() if topic not in (JOINT_STATES, TF)} == {("json", "jsonschema")}


def _events(names: Names) -> list[dict]:
    """An event of every kind and of each shape event_message gives."""
    out = [event_message(10, Event.TRANSITION, State.DISABLED, Reason.COMMAND + 1000 * State.HOLD),
           event_message(11, Event.FAULT, Reason.DRIVE_FAULT, pack_detail(0x8243, 1), names),
           event_message(12, Event.FAULT, Reason.HARD_LIMIT, pack_detail(1, 2), names),
           event_message(13, Event.FAULT, Reason.ENABLE_TIMEOUT, pack_detail(3, 0), names),
           event_message(14, Event.WARNING, Reason.SOFT_LIMIT, 2.0, names),
           event_message(15, Event.WARNING, Reason.STABILIZER_FAILED, 1.0, names),
           event_message(16, Event.WARNING, Reason.FEET_LOADS, 0.0, names),
           event_message(17, Event.WARNING, Reason.WATCHDOG, float("nan"), names),
           event_message(18, Event.COMMAND, 3.0, 1.0), event_message(19, Event.OVERRUN, 2.0, 812.5),
           event_message(20, Event.STABILIZER, 0.0, 5.0), event_message(21, Event.SUPPORT, 1.0, 4.0),
           event_message(22, Event.CONTACT, 2.0, 0.4), event_message(23, 99, 1.0, 2.0)]
    out.append(log_failed_message(24, "the cycle log failed", OSError(28, "No space left on device"), 120))
    return out


@pytest.mark.slow
def test_json_channels_validate_against_their_schemas_with_integers_as_integers(tmp_path, leg):
    """Every JSON message validates against its channel's schema (additional keys refused); the
    integer fields (codes, counters, masks) are JSON integers and declared so; every property
    of every record schema names its unit; /events is typed for every event shape."""
    layout = RecordLayout(leg.n)
    recs = _leg_records(leg, 300)
    recs[50:60, layout.slices["cycle"]] = np.nan                # a null integer still validates
    names = Names(tuple(leg.joint_names), axes=("A1", "A2", "A3", "A4"), nodes=(1, 2, 3, 4))
    w = CycleLogWriter(tmp_path / "c.mcap", layout, leg.joint_names, start_ns=START_NS, rig=False)
    for r in recs:
        w.append(r)
    for e in _events(names):
        w.event(e)
    w.truth({"t": 0.1, "foot_tilt": [0.01, 0.0]})
    w.close()
    topics = _decoded(tmp_path / "c.mcap")
    checked = set()
    for topic, msgs in topics.items():
        schema, channel, _, _ = msgs[0]
        if channel.message_encoding != "json":
            continue
        doc = json.loads(schema.data)
        jsonschema.Draft202012Validator.check_schema(doc)
        validator = jsonschema.Draft202012Validator(doc)
        for _, _, message, msg in msgs:
            validator.validate(msg)
            assert message.log_time == START_NS + round(msg["t"] * NS)
        if topic not in (EVENTS, TRUTH):
            for key, prop in doc["properties"].items():
                assert prop.get("description"), f"{topic}.{key} has no unit"
        checked.add(topic)
    assert {EVENTS, TRUTH, "/loop", "/stabilizer", "/cog"} <= checked
    loop = [m for _, _, _, m in topics["/loop"]]
    for key in ("cycle", "state", "fault", "overruns", "missed", "support", "contact", "fault_info"):
        assert all(type(m[key]) is int for m in loop[:50]), key
    assert loop[55]["cycle"] is None and loop[60]["cycle"] == 60
    props = json.loads(topics["/loop"][0][0].data)["properties"]
    assert props["cycle"]["type"] == ["integer", "null"] and props["feet_load"]["items"]["type"] == ["number", "null"]
    assert type([m for _, _, _, m in topics["/stabilizer"]][0]["flags"]) is int
    assert {"overruns", "missed", "stab_flags"} <= INTEGER_FIELDS
    events = [m for _, _, _, m in topics[EVENTS]]
    assert len(events) == len(_events(names)) and events[1]["code"] == "LOSS_PRES 0x8243"
    with pytest.raises(jsonschema.ValidationError):                 # the schema is closed: a stray key fails
        jsonschema.validate(events[0] | {"stray": 1}, json.loads(topics[EVENTS][0][0].data))
    back = read_log(tmp_path / "c.mcap")                           # the reader skips the CDR channel
    recs[:, layout.slices["rig_ferr"]] = np.nan                     # no /rig channel: read as NaN
    np.testing.assert_array_equal(back.records, recs)


@pytest.mark.slow
def test_a_daemons_log_matches_its_telemetry(daemon):
    """A lock-step daemon's log: the wall clock at its start (the boot, just before the test),
    /joint_states stamped start + t of each telemetry frame with that frame's q, qd and tau, stamps
    monotonic."""
    proc, client, tmp = daemon
    before = time.time_ns()
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.linger = 0
    sub.subscribe(b"telemetry")
    sub.connect(yaml.safe_load((tmp / "bipd.yaml").read_text())["io"]["telemetry"])
    time.sleep(0.2)
    client.call("enable")
    assert wait_state(client, "HOLD") == "HOLD"
    client.call("move_joints", q=[0.0, 0.2, -0.5, 0.3], duration=0.5)
    wait_transition(client, "MOVING", "HOLD")
    client.call("shutdown")                  # in lock-step the loop publishes back to back: stop it, then drain
    proc.communicate(timeout=30)
    frames = []
    while sub.poll(200):
        frames.append(json.loads(sub.recv_multipart()[1]))
    assert len(frames) > 20
    log = next((tmp / "log").glob("run-*/cycles.mcap"))
    start = read_log(log).header["start_ns"]
    assert before - 600 * NS < start < before                    # the wall clock at the daemon's boot
    states = {m.log_time: msg for _, _, m, msg in _decoded(log)[JOINT_STATES]}
    stamps = list(states)
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    for f in frames:
        msg = states[start + round(f["t"] * NS)]
        for key, name in (("position", "q"), ("velocity", "qd"), ("effort", "tau")):
            np.testing.assert_array_equal(getattr(msg, key), np.array(f[name], dtype=float))

