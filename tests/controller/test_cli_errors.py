"""Bad configuration through the command line: one line "bipd: error: FILE: KEY: problem",
exit 2, never a traceback, and nothing started (no loop process, no bus)."""
from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from controller.tools.ports import free_port
from controller.daemon import run as daemon
from controller.cli import main
from models.common.errors import QUOTE_CHARS, quote
from models.common.validation import MAX_YAML_BYTES
from tests.paths import DEPLOY, ROBOTS



@pytest.fixture(autouse=True)
def private_runtime_dir(tmp_path, monkeypatch):
    """Instance locks of these tests never meet a developer's running daemon; a daemon that
    got as far as starting its loop process fails the test at once instead of serving."""
    (tmp_path / "run").mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.delenv("RUNTIME_DIRECTORY", raising=False)

    def started(*_args, **_kw):
        raise AssertionError("the configuration was accepted: the loop process would start")

    monkeypatch.setattr(daemon, "_run", started)


def config(tmp_path: Path, *, io: dict | None = None, bus: dict | None = None, text: str | None = None) -> Path:
    """deploy/bipd.yaml with absolute robot paths, free ports and the given overrides."""
    doc = yaml.safe_load((DEPLOY / "bipd.yaml").read_text())
    doc["robot"] = str(ROBOTS / "bip_leg.yaml")
    doc["stabilizer"] = str(ROBOTS / "bip_leg_stabilizer.yaml")
    doc["io"].update(command=f"tcp://127.0.0.1:{free_port()}", telemetry=f"tcp://127.0.0.1:{free_port()}")
    doc["io"].update(io or {})
    doc["bus"].update(bus or {})
    path = tmp_path / "bipd.yaml"
    path.write_text(yaml.safe_dump(doc) if text is None else text)
    return path


def run_error(capsys, argv: list[str]) -> str:
    """Run ``bipd ARGV``; it must exit 2 with one error line and no traceback."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert "Traceback" not in out + err
    lines = [line for line in err.splitlines() if line.startswith("bipd: error:")]
    assert len(lines) == 1, err
    assert "loop process" not in err, "the loop process must not start"
    return lines[0]


@pytest.mark.parametrize("io,key,problem", [
    ({"command": "tcp://127.0.0.1:99999"}, "io.command", "the port must be 1..65535 or *"),
    ({"telemetry": "tcp://127.0.0.1:0"}, "io.telemetry", "the port must be 1..65535 or *"),
    ({"command": "tcp://0.0.0.0:5555"}, "io.command", "binds beyond loopback: configure io.curve"),
    ({"telemetry": "tcp://*:5556"}, "io.telemetry", "binds beyond loopback: configure io.curve"),
    ({"telemetry": "tcp://[::]:5556"}, "io.telemetry", "binds beyond loopback: configure io.curve"),
    ({"command": "ipc:///no/such/folder/bipd.sock"}, "io.command", "the folder /no/such/folder of the ipc socket"),
    ({"command": "udp://127.0.0.1:5555"}, "io.command", "expected a tcp:// or ipc:// endpoint"),
    ({"trajectory_dir": "no-such-dir"}, "io.trajectory_dir", "no such directory"),
    ({"log_dir": ""}, "io.log_dir", "expected a directory path or null, got ''"),
    ({"max_request_bytes": 10 ** 9}, "io.max_request_bytes", "expected an integer in 1024..65536"),
])
def test_bad_io_keys_are_refused_at_config_load(tmp_path, capsys, io, key, problem):
    path = config(tmp_path, io=io)
    line = run_error(capsys, ["run", "--config", str(path)])
    assert f"{path}: {key}: " in line and problem in line


def test_unknown_bus_backend_is_refused_at_config_load(tmp_path, capsys):
    path = config(tmp_path, bus={"backend": "ethercat"})
    line = run_error(capsys, ["run", "--config", str(path)])
    assert line == f"bipd: error: {path}: bus.backend: unknown backend 'ethercat' (known: raw, sim, udp)"


def test_command_port_in_use(tmp_path, capsys):
    with socket.socket() as other:                   # any program holding the port
        other.bind(("127.0.0.1", 0))
        other.listen()
        endpoint = f"tcp://127.0.0.1:{other.getsockname()[1]}"
        path = config(tmp_path, io={"command": endpoint})
        line = run_error(capsys, ["run", "--config", str(path)])
    assert line == f"bipd: error: {path}: io.command: {endpoint} is in use (another bipd?)"


def test_log_dir_that_cannot_be_created(tmp_path, capsys):
    (tmp_path / "file").write_text("not a folder")  # a path below a file fails even for root
    path = config(tmp_path, io={"log_dir": str(tmp_path / "file" / "log")})
    line = run_error(capsys, ["run", "--config", str(path)])
    assert f"{path}: io.log_dir: cannot create this run's log folder in {tmp_path / 'file' / 'log'}" in line


def test_log_dir_is_relative_to_the_config_file(tmp_path, monkeypatch):
    from controller.daemon.config import load_daemon_config

    (tmp_path / "etc").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    path = config(tmp_path / "etc", io={"log_dir": "../var/log"})
    assert load_daemon_config(path).io.log_dir == str(tmp_path / "var" / "log")


@pytest.mark.parametrize("command", ["run", "check-robot"])
def test_non_utf8_yaml(tmp_path, capsys, command):
    path = tmp_path / "bad.yaml"
    path.write_bytes(b"robot: x\nname: caf\xe9\n")
    argv = ["run", "--config", str(path)] if command == "run" else ["check-robot", str(path)]
    line = run_error(capsys, argv)
    assert line == f"bipd: error: {path}: line 2: the file is not UTF-8 text (byte 18)"


ALIASES_REFUSED = "line 1: invalid YAML (anchors and aliases (&name, *name) are not accepted)"


def alias_bomb(path: Path) -> Path:
    """A billion-laughs document: 9 levels of 9 aliases would be 9^9 values under cpus."""
    lines = ["a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    path.write_text("\n".join(lines) + "\nloop: {cpus: *a8}\n")
    return path


@pytest.mark.parametrize("command", ["run", "check-robot"])
def test_yaml_aliases_are_refused(tmp_path, capsys, command):
    path = alias_bomb(tmp_path / "bomb.yaml")
    argv = ["run", "--config", str(path)] if command == "run" else ["check-robot", str(path)]
    line = run_error(capsys, argv)
    assert line == f"bipd: error: {path}: {ALIASES_REFUSED}"


@pytest.mark.parametrize("command", ["run", "check-robot"])
def test_deeply_nested_yaml_is_one_line(tmp_path, capsys, command):
    """100 KB of nested ``[`` used to end in a RecursionError traceback."""
    path = tmp_path / "deep.yaml"
    path.write_text("robot: " + "[" * 100_000)
    argv = ["run", "--config", str(path)] if command == "run" else ["check-robot", str(path)]
    assert run_error(capsys, argv) == f"bipd: error: {path}: line 1: invalid YAML (nested deeper than 64 levels)"


@pytest.mark.parametrize("command", ["run", "check-robot"])
def test_a_key_given_twice_is_refused(tmp_path, capsys, command):
    """PyYAML keeps the last of two equal keys; a JSON request with one is refused, so is a file."""
    path = tmp_path / "twice.yaml"
    path.write_text("robot: a.yaml\nloop:\n  period: 0.002\n  period: 0.004\n")
    argv = ["run", "--config", str(path)] if command == "run" else ["check-robot", str(path)]
    assert run_error(capsys, argv) == (f"bipd: error: {path}: line 4: invalid YAML "
                                       "(key 'period' given twice (first on line 3))")


def test_exponent_numbers_are_numbers(tmp_path):
    """``1e7`` and ``2e-05`` are numbers (YAML 1.2, JSON), not the strings PyYAML's 1.1 resolver makes."""
    from controller.daemon.config import load_daemon_config

    path = config(tmp_path)
    doc = yaml.safe_load(path.read_text())
    doc["control"]["enable_timeout_s"] = "TIMEOUT"
    path.write_text(yaml.safe_dump(doc).replace("TIMEOUT", "5e-1"))
    assert load_daemon_config(path).control.enable_timeout == 0.5


@pytest.mark.parametrize("argv,prefix", [
    (["hil", "--config"], "bipd hil: "),
    (["scenario", "tilt", "--config"], "bipd scenario: error: "),
    (["scenario", "squat", "--config"], "bipd scenario: error: "),
    (["bench", "loop", "--config"], "bipd: error: "),
])
def test_every_entry_point_refuses_an_alias_bomb(tmp_path, capsys, monkeypatch, argv, prefix):
    """The HIL server, the scenarios and the loop bench read the daemon YAML a user names through
    the one reader: one line, exit 2, nothing started."""
    from controller.tools import bench
    from controller.tools.scenarios import runner

    def started(*_args, **_kw):
        raise AssertionError("the configuration was accepted: a process would start")

    monkeypatch.setattr(runner, "Processes", started)
    monkeypatch.setattr(bench, "free_port", started)
    path = alias_bomb(tmp_path / "bomb.yaml")
    code = main(argv + [str(path)])
    out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in out + err, (out, err)
    assert err.splitlines() == [f"{prefix}{path}: {ALIASES_REFUSED}"]


def test_scenario_refuses_an_alias_bomb_in_the_stabilizer_yaml(tmp_path, capsys, monkeypatch):
    """The scenario bench also re-reads the stabilizer YAML the daemon YAML names."""
    from controller.tools.scenarios import runner

    monkeypatch.setattr(runner, "Processes", lambda *_a, **_kw: pytest.fail("a process would start"))
    stab = alias_bomb(tmp_path / "stabilizer.yaml")
    doc = yaml.safe_load((DEPLOY / "bipd.yaml").read_text())
    doc.update(robot=str(ROBOTS / "bip_leg.yaml"), stabilizer=str(stab))
    (tmp_path / "bipd.yaml").write_text(yaml.safe_dump(doc))
    assert main(["scenario", "squat", "--config", str(tmp_path / "bipd.yaml")]) == 2
    assert capsys.readouterr().err.splitlines() == [f"bipd scenario: error: {stab}: {ALIASES_REFUSED}"]


def test_udp_server_cli_refuses_an_alias_bomb(tmp_path, capsys):
    from drivers.sim import udp_server

    path = alias_bomb(tmp_path / "bomb.yaml")
    with pytest.raises(SystemExit) as exit_:
        udp_server.main([str(path)])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(f"error: {path}: {ALIASES_REFUSED}")


def test_oversized_yaml_is_refused_before_parsing(tmp_path, capsys):
    path = tmp_path / "big.yaml"
    path.write_text("# padding\n" * (MAX_YAML_BYTES // 10 + 1))
    line = run_error(capsys, ["check-robot", str(path)])
    assert line == (f"bipd: error: {path}: <file>: the file is larger than {MAX_YAML_BYTES} bytes (1 MiB); "
                    "is it the right file?")


def test_quoted_values_are_bounded(tmp_path, capsys):
    """A 500 KB value in a key that quotes what it got: the message stays one short line."""
    doc = yaml.safe_load((DEPLOY / "bipd.yaml").read_text())
    doc["robot"] = str(ROBOTS / "bip_leg.yaml")
    doc["stabilizer"] = None
    doc["loop"]["cpus"] = ["x" * 1000] * 500
    path = config(tmp_path, text=yaml.safe_dump(doc))
    line = run_error(capsys, ["run", "--config", str(path)])
    assert line.startswith(f"bipd: error: {path}: loop.cpus: expected a list of CPU numbers, got ['xxx")
    assert len(line) < len(str(path)) + 200


def test_quote_looks_at_a_bounded_part_of_a_value():
    """Its cost is bounded too: repr of a deeply shared YAML structure is gigabytes."""
    seen = []

    class Item:
        def __repr__(self) -> str:
            seen.append(self)
            return "item"

    text = quote([Item() for _ in range(1000)])
    assert text == "[item, item, item, item, ...]" and len(seen) == 4
    assert len(quote("x" * 10 ** 6)) <= QUOTE_CHARS and len(quote(list(range(10 ** 5)))) <= QUOTE_CHARS


def test_whole_body_refuses_a_bad_rig_motion_before_anything_starts(capsys, monkeypatch):
    from controller.tools.scenarios import runner

    monkeypatch.setattr(runner, "Processes", lambda *_a, **_kw: pytest.fail("a process would start"))
    with pytest.raises(SystemExit) as exit_:
        main(["scenario", "whole-body", "--config", str(DEPLOY / "bip2000_rig.yaml"),
              "--rig-motion", "sinusoid:axis=q,amplitude=0.02"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "bipd scenario: error: --rig-motion: motion 'sinusoid:axis=q,amplitude=0.02': sinusoid: axis must be one of "
        "x, y, z, roll, pitch, yaw, got 'q'")


def gait_error(capsys, argv: list[str]) -> str:
    """``bipd gait``'s one error line (exit 2, no traceback)."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in out + err and len(err.splitlines()) == 1, (out, err)
    return err.strip()


@pytest.mark.parametrize("opts,problem", [
    (["--speed", "inf"], "--speed must be in (0, 3600] m/h, got inf"),
    (["--speed", "nan"], "--speed must be in (0, 3600] m/h, got nan"),
    (["--speed", "-1"], "--speed must be in (0, 3600] m/h, got -1"),
    (["--speed", "360", "--steps", "100000"], "--steps must be 1 to 100, got 100000"),
    (["--speed", "360", "--steps", "0"], "--steps must be 1 to 100, got 0"),
    (["--speed", "360", "--period", "1e-7"], "--period must be 0.0001 to 0.1 s, got 1e-07"),
    (["--speed", "360", "--period", "1e9"], "--period must be 0.0001 to 0.1 s, got 1e+09"),
    (["--speed", "360", "--clearance", "0.035"], "--clearance must be in [0, 0.035) m (below the swing's bell), got 0.035"),
    (["--speed", "360", "--clearance", "-0.01"], "--clearance must be in [0, 0.035) m (below the swing's bell), got -0.01"),
])
def test_gait_options_are_checked_before_any_work(tmp_path, capsys, monkeypatch, opts, problem):
    """Usage errors exit 2 with one line, before the robot's gait is computed."""
    from controller.tools import gait

    monkeypatch.setattr(gait, "make_gait", lambda *_a, **_kw: pytest.fail("the gait would be computed"))
    assert gait_error(capsys, ["gait", *opts, "--out", str(tmp_path / "walk.csv")]) == f"bipd gait: error: {problem}"


def test_gait_into_a_missing_folder_is_refused_first(tmp_path, capsys, monkeypatch):
    from controller.tools import gait

    monkeypatch.setattr(gait, "make_gait", lambda *_a, **_kw: pytest.fail("the gait would be computed"))
    out = tmp_path / "nope" / "walk.csv"
    assert gait_error(capsys, ["gait", "--speed", "360", "--out", str(out)]) == f"bipd gait: error: --out {out}: the folder {tmp_path / 'nope'} does not exist"


def test_output_cut_short_by_its_reader_ends_quietly():
    """``bipd … | head`` closes the pipe early: no BrokenPipeError traceback, the shell's SIGPIPE status
    (here the pipe's reader is closed before bipd writes a byte)."""
    script = ("import os, sys\n"
              "r, w = os.pipe(); os.close(r); os.dup2(w, 1)\n"
              "from controller.cli import main\n"
              "sys.exit(main(['export', 'urdf', 'deploy/robots/bip2000.yaml']))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=DEPLOY.parent, capture_output=True, text=True,
                          timeout=300)
    assert "Traceback" not in done.stderr and done.returncode == 141, done.stderr


def test_keys_never_write_through_a_dangling_link(tmp_path, capsys):
    folder = tmp_path / "curve"
    folder.mkdir(mode=0o700)
    target = tmp_path / "elsewhere"
    (folder / "server.key_secret").symlink_to(target)          # dangling: exists() says False
    line = run_error(capsys, ["keys", str(folder), "--name", "server"])
    assert line == f"bipd: error: {folder / 'server.key_secret'} exists; keys are never overwritten"
    assert not target.exists() and not (folder / "server.key").exists()


def test_keys_refuse_a_folder_others_can_write(tmp_path, capsys):
    folder = tmp_path / "curve"
    folder.mkdir()
    folder.chmod(0o777)
    line = run_error(capsys, ["keys", str(folder), "--name", "server"])
    assert line == (f"bipd: error: {folder} is writable by others (mode 777); keys go in a folder only you "
                    "can write (chmod go-w it)")
    assert list(folder.iterdir()) == []
    assert main(["keys", str(tmp_path / "new" / "curve"), "--name", "server"]) == 0     # made private
    assert (tmp_path / "new" / "curve").stat().st_mode & 0o077 == 0
    assert (tmp_path / "new" / "curve" / "server.key_secret").stat().st_mode & 0o077 == 0


def test_capture_file_that_cannot_be_written(tmp_path, capsys):
    (tmp_path / "file").write_text("not a folder")  # a path below a file fails even for root
    target = tmp_path / "file" / "bus.pcapng"
    line = run_error(capsys, ["run", "--config", str(config(tmp_path)), "--capture", str(target)])
    assert line == f"bipd: error: --capture {target}: cannot write there (Not a directory)"
