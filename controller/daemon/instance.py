"""One daemon per command endpoint: an exclusive ``flock`` on a lock file named after it.

Taken before the loop process starts or the bus is touched, so a second ``bipd run`` with
the same configuration leaves at once and never disturbs the running one. ZMQ alone would
not do: an ``ipc://`` bind silently replaces a live socket. The kernel drops the lock when
the process dies, even on ``kill -9``.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class InstanceLocked(OSError):
    """Another process holds the endpoint's lock (or the lock file cannot be opened)."""


def lock_path(endpoint: str) -> Path:
    """``bipd-<endpoint>-<hash>.lock`` in systemd's ``$RUNTIME_DIRECTORY`` (the unit's
    ``RuntimeDirectory=``), else ``$XDG_RUNTIME_DIR``, else the temporary folder."""
    folder = os.environ.get("RUNTIME_DIRECTORY") or os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    readable = re.sub(r"[^A-Za-z0-9.-]+", "_", endpoint)[:80]
    digest = hashlib.sha256(endpoint.encode()).hexdigest()[:12]
    return Path(folder) / f"bipd-{readable}-{digest}.lock"


@contextmanager
def instance_lock(endpoint: str) -> Iterator[Path | None]:
    """Hold the lock of ``endpoint`` for the ``with`` block; raises :class:`InstanceLocked`.
    A wildcard port (``:*``) takes none: every bind picks its own port."""
    if endpoint.endswith(":*"):
        yield None
        return
    path = lock_path(endpoint)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise InstanceLocked(f"{endpoint}: cannot open the lock file {path} ({e.strerror})") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InstanceLocked(f"{endpoint} is in use (another bipd? it holds {path})") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield path
    finally:
        os.close(fd)
