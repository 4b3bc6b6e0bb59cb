"""The I/O process's worker thread: files loaded and checks too slow for the command thread.

A trajectory file (only from ``trajectory_dir``), or a recorded rig motion (an earthquake CSV,
same folder: read, made drift-free and checked against the rig's stroke,
:mod:`controller.daemon.rig.earthquake`), is parsed here, as is a slow check (a built-in rig motion
against the rig's stroke: ``Code.check`` in :mod:`controller.daemon.commands`). One at a time;
``estop``, ``stop``, ``hold`` and ``disable`` cancel it. The command thread polls :meth:`Worker.done`
and hands the result over (:meth:`Worker.hand_over`): written into shared memory, or refused.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from controller.daemon.codes import Error
from controller.daemon.commands import COMMANDS
from controller.daemon.io.playback import TrajectoryFileError, load_trajectory
from controller.daemon.io.protocol import Context, ErrorReply, Request, slow_check
from controller.daemon.rig.earthquake import EarthquakeMotion, load_earthquake
from controller.daemon.rig.motions import MotionError
from controller.daemon.rig.spec import file_motion
from controller.daemon.rig.stroke import check_motion
from controller.daemon.shm import Cmd, H, SharedBlock

CANCELS_LOADING = frozenset(c.name for c in COMMANDS if c.cancels_loading)
"""Commands that cancel a trajectory file still being loaded (it never reaches the loop)."""


@dataclass
class Loading:
    """A file being parsed by the worker thread for a ``run`` (trajectory) or ``rig_motion``
    (earthquake) request, or (``path`` None) a request's slow check (``protocol.slow_check``)."""
    envelope: list[bytes]
    req: Request
    path: Path | None
    done: threading.Event
    result: Any = None        # the samples (a motion for the rig), a one-sentence problem, the check's ErrorReply
    cancelled_by: str | None = None

    @property
    def subject(self) -> str:
        """What is being loaded or checked, as a reply names it."""
        return f"{self.path.name:.80}" if self.path is not None else f"the {self.req.cmd} request's check"


class Worker:
    """Loads one file or runs one slow check at a time (``loading``) against ``ctx``'s fixed limits,
    for ``block``. ``trajectory_dir`` is the only folder files are read from (None: file
    trajectories are refused), each at most ``trajectory_max_bytes``."""

    def __init__(self, block: SharedBlock, ctx: Context, trajectory_dir: Path | None,
                 trajectory_max_bytes: int) -> None:
        self.block, self.ctx = block, ctx
        self.trajectory_dir = None if trajectory_dir is None else Path(trajectory_dir).resolve()
        self.trajectory_max_bytes = trajectory_max_bytes
        self.loading: Loading | None = None

    def cancel(self, cmd: str) -> None:
        """``cmd`` cancels the file or check still running, if it is one that does."""
        if self.loading is not None and cmd in CANCELS_LOADING:
            self.loading.cancelled_by = cmd

    def done(self) -> Loading | None:
        """The loading the worker thread has finished, taken (None while it runs, or without one)."""
        if self.loading is None or not self.loading.done.is_set():
            return None
        loading, self.loading = self.loading, None
        return loading

    def path(self, text: str, key: str = "trajectory", other: str = 'neither "squat" nor') -> Path | str:
        """The file ``args.<key>`` names inside ``trajectory_dir`` (symlinks resolved),
        or a one-sentence problem that quotes nothing read from the file system."""
        shown = text if len(text) <= 80 else text[:77] + "..."
        if self.trajectory_dir is None:
            noun = "trajectories" if key == "trajectory" else "motions"
            return (f"args.{key} = {shown!r}: file {noun} are disabled on this daemon "
                    "(set io.trajectory_dir in its configuration).")
        outside = f"args.{key} = {shown!r} is {other} a file in {self.trajectory_dir}."
        try:
            path = (self.trajectory_dir / text).resolve()
            if not path.is_relative_to(self.trajectory_dir) or not path.is_file():
                return outside
            size = path.stat().st_size
        except (OSError, ValueError):             # e.g. a NUL byte, a name too long
            return outside
        if size > self.trajectory_max_bytes:
            return (f"args.{key} = {shown!r} is {size} bytes, above the {self.trajectory_max_bytes}-byte "
                    "limit (io.trajectory_max_bytes).")
        return path

    def start(self, envelope: list[bytes], req: Request, path: Path | None) -> None:
        """Load ``path`` (None: run ``req``'s slow check) in the worker thread."""
        loading = Loading(envelope, req, path, threading.Event())
        self.loading = loading
        work = self._check_slowly if path is None else self._parse
        threading.Thread(target=work, args=(loading,), name="bipd-worker", daemon=True).start()

    def _check_slowly(self, loading: Loading) -> None:
        """Worker thread: the request's slow check (it reads only the context's fixed limits), then
        back to the command thread."""
        req = loading.req
        try:
            loading.result = slow_check(req, self.ctx)
        except Exception as e:  # noqa: BLE001 -- reported to the client, never lost
            loading.result = ErrorReply(req.id, Error.INTERNAL, f"checking {req.cmd} failed inside the I/O "
                                                                f"process: {type(e).__name__}.")
        finally:
            loading.done.set()

    def _parse(self, loading: Loading) -> None:
        """Worker thread: read and check the file (a problem in a sentence if it is bad), then hand it
        back to the command thread."""
        trajectory = loading.req.mailbox == Cmd.RUN_BUFFER
        try:
            loading.result = self._trajectory(loading.path) if trajectory else self._rig_motion(loading)
        except (TrajectoryFileError if trajectory else MotionError) as e:
            loading.result = str(e)
        except Exception as e:  # noqa: BLE001 -- reported to the client, never lost
            loading.result = f"{loading.path.name} could not be loaded: {type(e).__name__}."
        finally:
            loading.done.set()

    def _trajectory(self, path: Path) -> tuple[np.ndarray, np.ndarray | None]:
        """The trajectory's samples and support column, parsed and checked against the limits."""
        c = self.ctx
        return load_trajectory(path, c.joint_names, c.qmin, c.qmax, c.vmax, c.period,
                               with_support=True, max_samples=self.block.traj.shape[0],
                               amax=c.amax, torques=c.torques)

    def _rig_motion(self, loading: Loading) -> EarthquakeMotion | str:
        """The earthquake file, made drift-free and checked against the rig's stroke
        (controller.daemon.rig.earthquake, controller.daemon.rig.stroke), or why it does not fit."""
        _, options = file_motion(loading.req.args["motion"])
        motion = load_earthquake(loading.path, **options)
        cap = self.block.rig.shape[1]
        if len(motion.x) > cap:
            return (f"{loading.path.name} makes {len(motion.x)} spline nodes, more than the rig "
                    f"buffer's {cap} ({(cap - 1) * motion.dt:g} s).")
        check_motion(self.ctx.rig, motion, vmax=self.ctx.rig_vmax, amax=self.ctx.rig_amax)
        return motion

    def hand_over(self, loading: Loading) -> Request | ErrorReply:
        """On the command thread (its context refreshed): write a parsed file into shared memory and
        return the request to post, or the refusal to answer it with."""
        req = loading.req
        if loading.cancelled_by is not None:
            return ErrorReply(req.id, Error.NOT_ALLOWED, f"{loading.subject} was still "
                              f"{'loading' if loading.path is not None else 'running'} "
                              f"when {loading.cancelled_by} arrived: it was cancelled and never reached the loop.")
        if isinstance(loading.result, str):
            return ErrorReply(req.id, Error.BAD_FILE, loading.result)
        if isinstance(loading.result, ErrorReply):
            return ErrorReply(req.id, loading.result.code, loading.result.message)
        if self.block.header[H.LOOP_EXIT] or self.ctx.state not in self.ctx.allowed[req.cmd]:
            return ErrorReply(req.id, Error.NOT_ALLOWED, f"{req.cmd} is no longer allowed: the loop went to "
                              f"{self.ctx.state.name} while the file was loading.")
        if req.mailbox == Cmd.RIG_BUFFER:
            return self._hand_rig_motion(req, loading.result)
        if req.mailbox == Cmd.RUN_BUFFER:
            traj, support = loading.result
            self.block.traj[:len(traj)] = traj
            self.block.support[:len(traj)] = -1.0 if support is None else support
            self.block.header[H.TRAJ_LEN] = len(traj)
        return req

    def _hand_rig_motion(self, req: Request, motion: EarthquakeMotion) -> Request | ErrorReply:
        """The earthquake's spline nodes into the rig buffer, unless the rig still plays the last one."""
        h = self.block.header
        if h[H.RIG_BUSY]:
            return ErrorReply(req.id, Error.NOT_ALLOWED, "the rig is still playing a recorded motion; "
                              "wait until it ends.")
        n = len(motion.x)
        self.block.rig[0, :n], self.block.rig[1, :n], self.block.rig[2, :n] = motion.x, motion.v, motion.a
        h[H.RIG_LEN] = n
        return replace(req, values=np.array([motion.dt]))
