"""Endpoints and CURVE keys as the configuration names them (zguide ch. 5 "Ironhouse"): CURVE is
required when binding beyond loopback. Nothing here opens a socket, so the config (which both
processes load) imports no ZMQ: the certificate files are read with ``zmq.auth`` when given.

Keys are ``zmq.auth`` certificate files (``zmq.auth.create_certificates``, or ``bipd keys``):
``NAME.key`` holds the public key, ``NAME.key_secret`` both. The daemon reads its own
``.key_secret`` and a folder of authorised clients' ``.key`` files (``io.curve``); a client
reads the server's ``.key`` and its own ``.key_secret`` (``bipd ctl --server-key --client-cert``).
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path


class CurveConfigError(ValueError):
    """An endpoint beyond loopback without CURVE keys, or unreadable key files."""


def _host(endpoint: str) -> str:
    """The host of ``tcp://HOST:PORT``, without the brackets of an IPv6 address."""
    host = endpoint.partition("://")[2].rpartition(":")[0]
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def is_ipv6(endpoint: str) -> bool:
    """True for a tcp endpoint on an IPv6 address: its socket needs ``zmq.IPV6`` to bind or connect."""
    return endpoint.startswith("tcp://") and ":" in _host(endpoint)


def is_loopback(endpoint: str) -> bool:
    """True for ipc/inproc endpoints and tcp endpoints on localhost or a loopback address:
    127.0.0.0/8 or ::1 (``tcp://[::1]:5555``)."""
    if endpoint.partition("://")[0] in ("ipc", "inproc"):
        return True
    host = _host(endpoint)
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:                      # a name other than localhost, an interface, a wildcard
        return False


@dataclass(frozen=True)
class ServerCurve:
    """The server's key pair (Z85) and the client public keys it accepts."""
    public: bytes
    secret: bytes
    clients: tuple[bytes, ...]

    @classmethod
    def from_files(cls, server_secret_file: str | Path, client_public_files: list[str | Path]) -> ServerCurve:
        """From zmq certificate files (``zmq.auth.create_certificates``)."""
        import zmq.auth
        try:
            public, secret = zmq.auth.load_certificate(server_secret_file)
            clients = tuple(zmq.auth.load_certificate(f)[0] for f in client_public_files)
        except (OSError, ValueError) as e:
            raise CurveConfigError(f"cannot load the CURVE certificates: {e}") from None
        if secret is None:
            raise CurveConfigError(f"{server_secret_file} holds no secret key (use the .key_secret file)")
        return cls(public, secret, clients)


@dataclass(frozen=True)
class ClientCurve:
    """The server's public key and the client's own key pair (Z85)."""
    server_public: bytes
    public: bytes
    secret: bytes

    @classmethod
    def from_files(cls, server_public_file: str | Path, client_secret_file: str | Path) -> ClientCurve:
        """From the server's ``.key`` and the client's ``.key_secret`` certificate files."""
        import zmq.auth
        try:
            server_public = zmq.auth.load_certificate(server_public_file)[0]
            public, secret = zmq.auth.load_certificate(client_secret_file)
        except (OSError, ValueError) as e:
            raise CurveConfigError(f"cannot load the CURVE certificates: {e}") from None
        if secret is None:
            raise CurveConfigError(f"{client_secret_file} holds no secret key (use the .key_secret file)")
        return cls(server_public, public, secret)
