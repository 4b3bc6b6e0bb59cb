"""A veth pair whose far end is in a network namespace of its own (ip-netns(8), veth(4)): the wire
between the managing node (``mn`` end, here) and the controlled nodes (``cn`` end, in the namespace)
for ``bipd bench wire`` and ``bipd scenario … --transport raw``. Needs root, or CAP_NET_ADMIN for
the namespace and CAP_NET_RAW for the sockets on it."""
from __future__ import annotations

import itertools
import os
import subprocess

CAP_NET_ADMIN, CAP_NET_RAW = 12, 13           # linux/capability.h
_serial = itertools.count()


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def unique_name(prefix: str) -> str:
    """A namespace name unique to this process and call (parallel runs), at most 12 characters
    (``NAME-mn``/``NAME-cn`` stay within an interface name's 15)."""
    return f"{prefix[:3]}{os.getpid() % 0x1000000:06x}{next(_serial) % 0x1000:03x}"


def wire_capable() -> bool:
    """Root, or both CAP_NET_ADMIN and CAP_NET_RAW in the effective set (/proc/self/status)."""
    if os.geteuid() == 0:
        return True
    with open("/proc/self/status") as f:
        caps = next((int(line.split()[1], 16) for line in f if line.startswith("CapEff:")), 0)
    return all(caps >> bit & 1 for bit in (CAP_NET_ADMIN, CAP_NET_RAW))


class Veth:
    """A namespace ``name`` holding ``name-cn``, paired with ``name-mn`` here; both up. Leaving the
    block (or a failed entry) deletes both."""

    def __init__(self, name: str) -> None:
        self.name, self.mn, self.cn = name, f"{name}-mn", f"{name}-cn"

    def __enter__(self) -> Veth:
        try:
            ip("netns", "add", self.name)
            ip("link", "add", self.mn, "type", "veth", "peer", "name", self.cn)
            ip("link", "set", self.cn, "netns", self.name)
            ip("link", "set", self.mn, "up")
            ip("netns", "exec", self.name, "ip", "link", "set", self.cn, "up")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        subprocess.run(["ip", "link", "del", self.mn], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)


def namespace_exists(name: str) -> bool:
    return os.path.exists(os.path.join("/run/netns", name))
