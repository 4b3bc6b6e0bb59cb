"""systemd readiness and watchdog notifications (sd_notify(3)), without libsystemd.

Under ``Type=notify`` systemd sets ``$NOTIFY_SOCKET``; elsewhere every call is a no-op.
"""
from __future__ import annotations

import os
import socket


class Notifier:
    def __init__(self) -> None:
        addr = os.environ.get("NOTIFY_SOCKET")
        self._sock = None
        self._addr = None
        if addr:
            self._addr = "\0" + addr[1:] if addr.startswith("@") else addr
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        usec = os.environ.get("WATCHDOG_USEC")
        self.watchdog_s = int(usec) / 1e6 if usec and usec.isdigit() else None

    @property
    def enabled(self) -> bool:
        return self._sock is not None

    def notify(self, message: str) -> None:
        if self._sock is not None:
            try:
                self._sock.sendto(message.encode(), self._addr)
            except OSError:
                pass        # systemd went away: nothing to tell

    def ready(self, status: str = "") -> None:
        self.notify("READY=1" + (f"\nSTATUS={status}" if status else ""))

    def watchdog(self) -> None:
        self.notify("WATCHDOG=1")

    def stopping(self) -> None:
        self.notify("STOPPING=1")
