"""CURVE from configuration to wire: `bipd keys` writes zmq.auth certificates, `io.curve`
loads them, and over tcp on 127.0.0.1 only an authorised `bipd ctl` gets an answer."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from controller.cli import main
from controller.daemon.config import load_daemon_config
from controller.tools.ctl import EXIT_OK, EXIT_TIMEOUT, EXIT_USAGE
from controller.tools.ctl import main as ctl_main
from models import ConfigError
from tests.paths import DEPLOY, ROBOTS



@pytest.fixture
def keys(tmp_path) -> Path:
    """server.key(_secret) in keys/, an authorised operator in keys/clients, a stranger elsewhere."""
    k = tmp_path / "keys"
    assert main(["keys", str(k), "--name", "server"]) == 0
    assert main(["keys", str(k / "clients"), "--name", "operator"]) == 0
    assert main(["keys", str(tmp_path / "elsewhere"), "--name", "stranger"]) == 0
    assert main(["keys", str(k), "--name", "server"]) == 2            # never overwritten
    assert (k / "server.key_secret").stat().st_mode & 0o077 == 0
    return k


def config(tmp_path: Path, io: dict) -> Path:
    doc = yaml.safe_load((DEPLOY / "bipd.yaml").read_text())
    doc["robot"] = str(ROBOTS / "bip_leg.yaml")
    doc["stabilizer"] = str(ROBOTS / "bip_leg_stabilizer.yaml")
    doc["io"].update(io)
    path = tmp_path / "bipd.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_ipv6_loopback_needs_no_curve(tmp_path):
    cfg = load_daemon_config(config(tmp_path, {"command": "tcp://[::1]:5555", "telemetry": "tcp://[::1]:5556"}))
    assert (cfg.io.command, cfg.io.telemetry, cfg.io.curve) == ("tcp://[::1]:5555", "tcp://[::1]:5556", None)


def test_io_curve_admits_only_authorised_clients(tmp_path, keys, rig_factory, capsys):
    curve = {"server_secret_key_file": "keys/server.key_secret", "authorized_clients_dir": "keys/clients"}
    cfg = load_daemon_config(config(tmp_path, {"command": "tcp://0.0.0.0:5555", "telemetry": "tcp://*:5556",
                                               "curve": curve}))
    assert cfg.io.command == "tcp://0.0.0.0:5555"        # beyond loopback is accepted with CURVE
    rig = rig_factory(server_kw={"curve": cfg.io.curve})
    ep = rig.server.command_endpoint
    assert ep.startswith("tcp://127.0.0.1:")
    capsys.readouterr()
    argv = ["ping", "--endpoint", ep, "--json", "--timeout", "2", "--retries", "1"]
    assert ctl_main(argv + ["--server-key", str(keys / "server.key"),
                            "--client-cert", str(keys / "clients" / "operator.key_secret")]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["pong"] is True
    short = ["ping", "--endpoint", ep, "--timeout", "0.5", "--retries", "1"]
    assert ctl_main(short + ["--server-key", str(keys / "server.key"),
                             "--client-cert", str(tmp_path / "elsewhere" / "stranger.key_secret")]) == EXIT_TIMEOUT
    assert ctl_main(short) == EXIT_TIMEOUT                  # plain text against a CURVE server
    assert "no reply" in capsys.readouterr().err
    assert ctl_main(short + ["--server-key", str(keys / "server.key"),
                             "--client-cert", str(keys / "clients" / "operator.key")]) == EXIT_USAGE
    assert "holds no secret key" in capsys.readouterr().err
    assert rig.server.counters.requests == 1               # only the authorised ping reached the handler


@pytest.mark.parametrize("curve,key,problem", [
    ({"authorized_clients_dir": "keys/clients"}, "io.curve.server_secret_key_file", "missing required key"),
    ({"server_secret_key_file": "keys/server.key_secret"}, "io.curve.authorized_clients_dir", "missing required key"),
    ({"server_secret_key_file": "keys/server.key", "authorized_clients_dir": "keys/clients"},
     "io.curve.server_secret_key_file", "holds no secret key"),
    ({"server_secret_key_file": "keys/server.key_secret", "authorized_clients_dir": "empty"},
     "io.curve.authorized_clients_dir", "holds no client public certificate (*.key)"),
    ({"server_secret_key_file": "keys/server.key_secret", "authorized_clients_dir": "keys/clients", "x": 1},
     "io.curve.x", "unknown key"),
])
def test_bad_io_curve(tmp_path, keys, curve, key, problem):
    (tmp_path / "empty").mkdir()
    path = config(tmp_path, {"curve": curve})
    with pytest.raises(ConfigError) as e:
        load_daemon_config(path)
    assert str(e.value).startswith(f"{path}: {key}: ") and problem in str(e.value)
