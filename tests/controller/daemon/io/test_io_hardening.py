"""What a hostile or careless client must not get from the I/O process: files outside the
trajectory folder, a stop that waits behind file parsing, memory for a huge message,
duplicate JSON keys. Real ZMQ on 127.0.0.1 against the fake loop of conftest.py."""
from __future__ import annotations

import json
import os
import threading

import numpy as np
import pytest
import zmq

from controller.daemon.codes import Error, State
from controller.daemon.io import worker as worker_module
from controller.tools.client import Client, CommandError
from controller.daemon.io.protocol import ErrorReply, validate
from controller.daemon.rig.motions import MotionError
from controller.daemon.shm import Cmd, H
from models.rig.stewart import StewartModel

from tests.controller.conftest import make_context
from tests.paths import STEWART_RIG

HEADER = "t,ankle_lateral,ankle_sagittal,knee,hip\n"
WALK = HEADER + "0,0,0.1,-0.3,0.2\n1,0,0.2,-0.6,0.4\n"
TOKEN = "s3cr3t-4711"
SECRET = f"root:{TOKEN}:19000:0:99999:7:::\n"


def error_of(client: Client, cmd: str, **args) -> CommandError:
    with pytest.raises(CommandError) as e:
        client.call(cmd, **args)
    return e.value


def in_hold(rig_factory, **server_kw):
    rig = rig_factory(server_kw=server_kw)
    rig.client.call("enable")
    rig.loop.wait_state(State.HOLD)
    return rig


# ------------------------------------------------------------------ trajectory files

def test_file_trajectories_are_refused_without_a_trajectory_dir(rig_factory, tmp_path):
    (tmp_path / "walk.csv").write_text(WALK)
    rig = in_hold(rig_factory)
    e = error_of(rig.client, "run", trajectory=str(tmp_path / "walk.csv"))
    assert e.code == "bad_file" and "file trajectories are disabled" in e.message and "io.trajectory_dir" in e.message
    assert Cmd.RUN_BUFFER not in [c for _, c, _ in rig.loop.commands()]


def test_only_files_inside_the_trajectory_dir_are_read(rig_factory, tmp_path):
    folder = tmp_path / "trajectories"
    folder.mkdir()
    (folder / "walk.csv").write_text(WALK)
    secret = tmp_path / "shadow"
    secret.write_text(SECRET)
    os.symlink(secret, folder / "link.csv")                       # a symlink pointing out
    os.symlink(folder / "walk.csv", folder / "inside.csv")       # a symlink staying in
    rig = in_hold(rig_factory, trajectory_dir=folder)
    for name in (str(secret), "../shadow", "link.csv", "/proc/self/environ", "/etc/passwd", "sub/../../shadow",
                 "walk.csv\x00", "x" * 4000):
        e = error_of(rig.client, "run", trajectory=name)
        assert e.code == "bad_file", name
        assert f"is neither \"squat\" nor a file in {folder}" in e.message, e.message
        assert TOKEN not in e.message
    assert Cmd.RUN_BUFFER not in [c for _, c, _ in rig.loop.commands()]
    assert rig.client.call("run", trajectory="inside.csv")["accepted"]
    assert rig.loop.commands()[-1][1] == Cmd.RUN_BUFFER
    np.testing.assert_allclose(rig.block.traj[int(rig.block.header[H.TRAJ_LEN]) - 1], [0, 0.2, -0.6, 0.4])


def test_trajectory_errors_never_quote_the_file(rig_factory, tmp_path):
    (tmp_path / "shadow.csv").write_text(SECRET + HEADER)
    (tmp_path / "fields.csv").write_text(HEADER + f"0,0,0,0,0\n1,{TOKEN},0,0,0\n")
    rig = in_hold(rig_factory, trajectory_dir=tmp_path)
    for name in ("shadow.csv", "fields.csv"):
        e = error_of(rig.client, "run", trajectory=name)
        assert e.code == "bad_file" and name in e.message
        assert TOKEN not in e.message, e.message


def test_trajectory_file_size_is_bounded(rig_factory, tmp_path):
    (tmp_path / "walk.csv").write_text(WALK)
    rig = in_hold(rig_factory, trajectory_dir=tmp_path, trajectory_max_bytes=len(WALK) - 1)
    e = error_of(rig.client, "run", trajectory="walk.csv")
    assert e.code == "bad_file"
    assert f"is {len(WALK)} bytes, above the {len(WALK) - 1}-byte limit (io.trajectory_max_bytes)" in e.message


def test_a_file_spanning_a_huge_time_is_refused_before_it_is_resampled(rig_factory, tmp_path):
    """74 bytes with t = 0 and 1e6 s: 5e8 samples were resampled (GBs: MemoryError or the OOM
    killer) before the buffer's size was checked; now refused by the sample count, nothing played."""
    (tmp_path / "huge.csv").write_text(HEADER + "0,0,0.1,-0.3,0.2\n1e6,0,0.2,-0.6,0.4\n")
    rig = in_hold(rig_factory, trajectory_dir=tmp_path)
    e = error_of(rig.client, "run", trajectory="huge.csv")
    assert e.code == "bad_file"
    assert e.message.endswith("huge.csv: its 1e+06 s resample to more than 20000 samples of 0.002 s, "
                              "the trajectory buffer's limit (39.998 s)")
    assert Cmd.RUN_BUFFER not in [c for _, c, _ in rig.loop.commands()]


def _slow_loader(monkeypatch, name: str, finish=None) -> tuple[threading.Event, threading.Event]:
    """Replace the worker's loader ``name`` by one that sets ``started``, waits for ``release``,
    then returns ``finish(*args, **kw)`` (the real loader when None): (started, release)."""
    started, release = threading.Event(), threading.Event()
    finish = finish or getattr(worker_module, name)

    def slow(*args, **kw):
        started.set()
        assert release.wait(30)
        return finish(*args, **kw)

    monkeypatch.setattr(worker_module, name, slow)
    return started, release


def _while_loading(rig, request: dict, started: threading.Event, release: threading.Event, meanwhile) -> dict:
    """Send ``request`` (a file to load), call ``meanwhile()`` once its parser has started, let the
    parser go on, and return the request's reply."""
    loader = zmq.Context.instance().socket(zmq.DEALER)
    loader.linger = 0
    loader.connect(rig.server.command_endpoint)
    try:
        loader.send_multipart([b"", json.dumps(request).encode()])
        assert started.wait(10)
        meanwhile()
        release.set()
        assert loader.poll(10_000)
        return json.loads(loader.recv_multipart()[-1])
    finally:
        release.set()
        loader.close()


def test_estop_is_answered_while_a_trajectory_loads_and_cancels_it(rig_factory, tmp_path, monkeypatch):
    """The parser waits on an event: the estop must be answered and executed meanwhile, and
    the trajectory, once parsed, must never reach the loop."""
    started, release = _slow_loader(monkeypatch, "load_trajectory")
    (tmp_path / "walk.csv").write_text(WALK)
    rig = in_hold(rig_factory, trajectory_dir=tmp_path)
    def meanwhile() -> None:
        with Client(rig.server.command_endpoint, timeout_s=5.0, retries=1) as operator:
            assert operator.call("estop")["state"] == "ESTOP"
            assert error_of(operator, "run", trajectory="walk.csv").code == "not_allowed"   # in ESTOP
        assert rig.state == State.ESTOP

    reply = _while_loading(rig, {"id": "run", "cmd": "run", "args": {"trajectory": "walk.csv"}}, started, release,
                           meanwhile)
    assert reply["error"]["code"] == "not_allowed" and "cancelled" in reply["error"]["message"]
    sent = [c for _, c, _ in rig.loop.commands()]
    assert Cmd.ESTOP in sent and Cmd.RUN_BUFFER not in sent


@pytest.mark.parametrize("command", ["estop", "stop", "hold", "disable"])
def test_a_command_that_cancels_an_earthquake_still_loading_is_answered(rig_factory, tmp_path, monkeypatch, command):
    """The cancel path named the file by ``run``'s argument (``trajectory``): for a ``rig_motion``
    it raised KeyError and ended the I/O process. Both requests are answered, the server serves on."""
    def never_read(*args, **kw):
        raise MotionError("never read")

    started, release = _slow_loader(monkeypatch, "load_earthquake", never_read)
    (tmp_path / "quake.csv").write_text("t,ax,ay,az\n0,0,0,0\n1,0,0,0\n")
    rig = rig_factory(server_kw={"trajectory_dir": tmp_path}, ctx_kw={"rig": StewartModel.from_yaml(STEWART_RIG)})
    rig.client.call("enable")
    rig.loop.wait_state(State.HOLD)
    def meanwhile() -> None:
        assert rig.client.call(command)["accepted"] is True

    reply = _while_loading(rig, {"id": "quake", "cmd": "rig_motion", "args": {"motion": "quake.csv"}}, started, release,
                           meanwhile)
    assert reply["error"] == {"code": "not_allowed", "message": f"quake.csv was still loading when {command} arrived: "
                                                                "it was cancelled and never reached the loop."}
    assert rig.client.call("ping")["pong"] is True
    assert rig.server.counters.internal_errors == 0
    assert Cmd.RIG_BUFFER not in [c for _, c, _ in rig.loop.commands()]


def test_a_second_file_while_one_loads_is_busy(rig_factory, tmp_path, monkeypatch):
    started, release = _slow_loader(monkeypatch, "load_trajectory")
    (tmp_path / "walk.csv").write_text(WALK)
    rig = in_hold(rig_factory, trajectory_dir=tmp_path)
    first = Client(rig.server.command_endpoint, timeout_s=10.0, retries=1)
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(first.call("run", trajectory="walk.csv")))
    worker.start()
    try:
        assert started.wait(10)
        e = error_of(rig.client, "run", trajectory="walk.csv")
        assert e.code == "busy"
        assert rig.client.call("ping")["pong"] is True
    finally:
        release.set()
        worker.join(15)
        first.close()
    assert result["accepted"] is True
    assert [c for _, c, _ in rig.loop.commands()].count(Cmd.RUN_BUFFER) == 1


# ------------------------------------------------------------------ message size, JSON keys

def test_oversized_message_never_reaches_the_handler(rig_factory):
    rig = rig_factory(server_kw={"max_request_bytes": 2048})
    big = zmq.Context.instance().socket(zmq.DEALER)
    big.linger = 0
    big.connect(rig.server.command_endpoint)
    try:
        payload = json.dumps({"id": 1, "cmd": "ping", "args": {}, "pad": "x" * 4_000_000}).encode()
        big.send_multipart([b"", payload])
        for _ in range(20):                        # the other client is answered throughout
            assert rig.client.call("ping")["pong"] is True
        assert big.poll(1000) == 0                 # never answered: the sender was dropped
    finally:
        big.close()
    assert rig.server.counters.requests == 20     # the 4 MB message never reached _handle


def test_duplicate_json_keys_are_refused(leg_desc):
    ctx = make_context(leg_desc)
    ctx.state = State.HOLD
    raw = b'{"id": 7, "cmd": "move_joints", "args": {"q": [0, 0, -0.2, 0.1], "q": [0, 0, -1.5, 0.1]}}'
    reply = validate(raw, ctx)
    assert isinstance(reply, ErrorReply) and reply.code == Error.BAD_REQUEST
    assert reply.message == 'the key "q" appears twice in one JSON object.'
    reply = validate(b'{"id": 1, "cmd": "ping", "cmd": "estop"}', ctx)
    assert isinstance(reply, ErrorReply) and 'the key "cmd" appears twice' in reply.message
