"""One daemon per command endpoint: an exclusive ``flock`` on a lock file named after it.

Taken before the loop process starts or the bus is touched, so a second ``bipd run`` with
the same configuration leaves at once and never disturbs the running one. ZMQ alone would
not do: an ``ipc://`` bind silently replaces a live socket. The kernel drops the lock when
the process dies, even on ``kill -9``.

The lock is keyed on the endpoint as the kernel resolves it (``ipc:///tmp/x//cmd`` and
``ipc:///tmp/x/cmd`` are one socket, so one lock), and it lives in a folder only the daemon's
user can write: systemd's ``$RUNTIME_DIRECTORY``, else ``$XDG_RUNTIME_DIR``, else ``/run/bipd``
for root and ``<tmp>/bipd-<uid>`` for anyone else, created private (0700) and refused when it is
a link, another user's, or writable by others. The lock file is opened without following links.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class InstanceLocked(OSError):
    """Another process holds the endpoint's lock (or the lock file cannot be opened safely)."""


def canonical_endpoint(endpoint: str) -> str:
    """The endpoint as the kernel sees it: an ``ipc://`` path made absolute with its links and
    repeated or dotted components resolved (the socket file itself need not exist yet); a
    ``tcp://`` endpoint with a lower-case host. Other transports are kept as written."""
    scheme, sep, rest = endpoint.partition("://")
    if not sep:
        return endpoint
    if scheme == "ipc" and rest and not rest.startswith("@"):      # '@': the abstract namespace
        return f"ipc://{os.path.realpath(rest)}"
    if scheme == "tcp":
        host, colon, port = rest.rpartition(":")
        return f"tcp://{host.lower()}{colon}{port}"
    return endpoint


def runtime_folder() -> Path:
    """Where lock files go (see the module's docstring); raises :class:`InstanceLocked` when the
    fallback folder is not private to this user."""
    folder = os.environ.get("RUNTIME_DIRECTORY") or os.environ.get("XDG_RUNTIME_DIR")
    if folder:
        return Path(folder.split(":")[0])            # systemd may list several, the first is ours
    uid = os.geteuid()
    path = Path("/run/bipd") if uid == 0 else Path(tempfile.gettempdir()) / f"bipd-{uid}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError as e:
        raise InstanceLocked(f"cannot make the lock folder {path} ({e.strerror}); "
                             "set RUNTIME_DIRECTORY to a folder only bipd's user can write") from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or st.st_mode & 0o022:
        what = ("is not a folder" if not stat.S_ISDIR(st.st_mode) else
                f"belongs to uid {st.st_uid}" if st.st_uid != uid else "is writable by others")
        raise InstanceLocked(f"the lock folder {path} {what}; refusing it (remove it, or set "
                             "RUNTIME_DIRECTORY to a folder only bipd's user can write)")
    return path


def lock_path(endpoint: str) -> Path:
    """``bipd-<endpoint>-<hash>.lock`` in :func:`runtime_folder`, named after the canonical endpoint."""
    key = canonical_endpoint(endpoint)
    readable = re.sub(r"[^A-Za-z0-9.-]+", "_", key)[:80]
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return runtime_folder() / f"bipd-{readable}-{digest}.lock"


@contextmanager
def instance_lock(endpoint: str) -> Iterator[Path | None]:
    """Hold the lock of ``endpoint`` for the ``with`` block; raises :class:`InstanceLocked`.
    A wildcard port (``:*``) takes none: every bind picks its own port."""
    if endpoint.endswith(":*"):
        yield None
        return
    path = lock_path(endpoint)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as e:
        raise InstanceLocked(f"{endpoint}: cannot open the lock file {path} ({e.strerror})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InstanceLocked(f"{endpoint}: the lock file {path} is not a regular file; refusing it")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InstanceLocked(f"{endpoint} is in use (another bipd? it holds {path})") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield path
    finally:
        os.close(fd)
