"""Optional CURVE security on the sockets (zguide ch. 5 "Ironhouse"): the ZAP handler that admits
the authorised clients and the socket options of a CURVE server or client. The keys and the
loopback check are in controller.daemon.endpoints.
"""
from __future__ import annotations

import zmq
from zmq.auth.thread import ThreadAuthenticator

from controller.daemon.endpoints import ClientCurve, CurveConfigError, ServerCurve, is_loopback


class _Allowed:
    def __init__(self, keys: tuple[bytes, ...]) -> None:
        self.keys = set(keys)

    def callback(self, domain: str, key: bytes) -> bool:
        return key in self.keys


def check_endpoints(endpoints: list[str], curve: ServerCurve | None) -> None:
    """Refuse to bind beyond loopback without CURVE keys."""
    for ep in endpoints:
        if curve is None and not is_loopback(ep):
            raise CurveConfigError(f"binding {ep} beyond loopback requires CURVE keys (a ServerCurve with the "
                                   "server's secret key and the authorised client keys)")


def start_authenticator(context: zmq.Context, curve: ServerCurve) -> ThreadAuthenticator:
    """A ZAP handler in ``context`` that admits only ``curve.clients``."""
    auth = ThreadAuthenticator(context)
    auth.start()
    auth.configure_curve_callback(domain="*", credentials_provider=_Allowed(curve.clients))
    return auth


def secure_server(sock: zmq.Socket, curve: ServerCurve) -> None:
    """Make ``sock`` a CURVE server (before bind)."""
    sock.curve_secretkey = curve.secret
    sock.curve_publickey = curve.public
    sock.curve_server = True


def secure_client(sock: zmq.Socket, curve: ClientCurve) -> None:
    """Make ``sock`` a CURVE client of the server (before connect)."""
    sock.curve_serverkey = curve.server_public
    sock.curve_publickey = curve.public
    sock.curve_secretkey = curve.secret
