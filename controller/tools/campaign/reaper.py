"""A trial's processes die with the Ray worker that runs it.

A hung trial is cancelled with ``force=True``: Ray SIGKILLs its worker, which cannot clean up, and
the trial's HIL, daemon and loop process would be orphaned, still running and holding their ports.
Ray's own remedies act late or not at all (its raylet subreaper sweeps orphans every 10 s and stops
with the cluster; a campaign ends right after its last cancel), so each trial runs under a guard
of its own: the worker leads a process group that its trial's processes inherit, and a small
watcher process in a session of its own waits on the worker's pidfd. If the worker dies before the
trial ends, the watcher sends the group SIGTERM, then SIGKILL after ``GRACE_S``; if the trial
ends, the worker tells the watcher, which exits and touches nothing. The same works on every node
of a cluster, since the watcher runs beside its worker.
"""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

GRACE_S = 2.0
DONE = b"done\n"

WATCHER = r"""
import os, select, signal, sys, time
pid, pgid, grace = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
fd = os.pidfd_open(pid)
r, _, _ = select.select([fd, 0], [], [])
if 0 in r and os.read(0, 16) == b"done\n":
    sys.exit(0)
select.select([fd], [], [])                                    # the worker is gone: its group goes too
for sig in (signal.SIGTERM, signal.SIGKILL):
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        sys.exit(0)
    time.sleep(grace)
"""


@contextmanager
def processes_die_with_worker() -> Iterator[None]:
    """Run the body (a trial) so that every process it starts dies if this process is killed."""
    if os.getpgid(0) != os.getpid():
        os.setpgid(0, 0)
    watcher = subprocess.Popen([sys.executable, "-c", WATCHER, str(os.getpid()), str(os.getpgid(0)), str(GRACE_S)],
                               stdin=subprocess.PIPE, start_new_session=True)
    try:
        yield
    finally:
        watcher.stdin.write(DONE)
        watcher.stdin.close()
        watcher.wait()
