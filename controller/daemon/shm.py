"""Shared memory between the loop process and the I/O process (docs/cycle.md).

One ``multiprocessing.shared_memory`` block holds, as preallocated numpy views:

* ``header``   int64 counters (indices below), among them the client heartbeat counter the
  motion watchdog reads and, in stepped lock-step, the horizon the loop may run up to;
* ``mailbox``  commands I/O -> loop: a single-producer single-consumer ring of fixed slots
  ``[token, cmd, nargs, args[MAX_ARGS]]``; the I/O side fills slot ``head % slots`` and then
  bumps ``head``; the loop reads while ``tail < head`` and bumps ``tail``. A full mailbox is
  an error reply on the I/O side, never a wait in the loop. The I/O side withdraws the commands
  it has given up waiting for by raising ``H.MB_WITHDRAWN`` to the last one's token; the loop
  replies ``TIMEOUT`` to a command it takes whose token is at most that, and does not apply it.
  Only the loop decides (with loads and stores alone two processes cannot agree on who takes a
  slot first), so the I/O side answers ``timeout`` only once the loop has said so;
* ``lanes``    the priority lanes I/O -> loop (``estop``, ``disable``: :data:`LANES`), one row
  ``[posted token, taken token]`` each: the I/O side posts a token only when the last one was
  taken, the loop takes it first every cycle, before the mailbox; a request that finds its lane
  untaken rides on the pending one (same reply). No flood can fill a lane or delay it;
* ``replies``  acknowledgements loop -> I/O: the same kind of ring ``[token, ok, code, value]``;
* ``ring``     telemetry records loop -> I/O, each guarded by a sequence counter (odd while
  being written, even when complete): a reader copies a record and keeps it only if the
  counter was even and unchanged, so no side ever reads a torn record; a lapped reader
  counts drops;
* ``events``   state-machine and fault events loop -> I/O ``[index, cycle, code, a, b]``, a
  ring the reader follows with its own index; the index is written last, so lapped or torn
  events are detected and counted as dropped;
* ``stats``    the profiler statistics (layout in :mod:`controller.daemon.telemetry`), written by
  the loop; the I/O side reads them for ``stats`` (a figure may be one cycle stale);
* ``traj``     a joint-trajectory buffer the I/O side fills (validated, resampled to the
  period) before it sends ``RUN_BUFFER``;
* ``support``  the support phase of each ``traj`` sample (models.common.support: 0 left, 1 right,
  2 double; -1 throughout when the file has no support column);
* ``bus``      the bus' health (:mod:`drivers.health`: its flags, last SDO abort and node error entry,
  PRes lost and late per node, saturations per axis), copied by the loop after each cycle's record;
  ``status`` reads it (a figure may be one cycle stale);
* ``rig``      a recorded rig motion (an earthquake, :mod:`controller.daemon.rig.earthquake`) the I/O side
  fills (checked against the rig's stroke) before it sends ``RIG_BUFFER``: the spline's nodes
  x, ẋ, ẍ (``rig[0..2, :RIG_LEN]``, (nodes, 6) each); empty unless the daemon drives the rig.

Stores are plain numpy stores: on x86-64 (TSO) stores are not reordered with other stores
nor loads with loads, which is all the protocol needs.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from multiprocessing import shared_memory

import numpy as np

from controller.daemon.commands import CODES, Lane
from controller.daemon.telemetry import STATS_SIZE, reset_stats

MAGIC = 0x42495044  # "BIPD"
MAX_ARGS = 24
RIG_NODES = 150_001     # the rig buffer's nodes with the rig: 5 min at the earthquakes' 2 ms


class H(IntEnum):
    """Indices in the int64 header."""
    MAGIC = 0
    N_JOINTS = 1
    N_AXES = 2
    MB_HEAD = 3          # written by the I/O side
    MB_TAIL = 4          # written by the loop
    RP_HEAD = 5          # written by the loop
    RP_TAIL = 6          # written by the I/O side
    RING_COUNT = 7       # records written so far (loop)
    EV_COUNT = 8         # events written so far (loop)
    LOOP_CYCLE = 9       # last completed cycle (loop heartbeat)
    LOOP_STATE = 10      # state machine state (loop)
    SHUTDOWN = 11        # 1: asked to stop (I/O side or signal handler)
    LOOP_EXIT = 12       # 1: the loop has left (exit code in LOOP_EXIT_CODE)
    LOOP_EXIT_CODE = 13
    TRAJ_LEN = 14        # samples in traj (I/O side, before RUN_BUFFER)
    READY = 15           # 1: booted and cycling (loop)
    HEARTBEATS = 16      # valid client requests so far (I/O side): feeds the motion watchdog
    HORIZON = 17         # stepped lock-step: the last cycle the loop may run (I/O side)
    RIG_LEN = 18         # nodes in rig (I/O side, before RIG_BUFFER)
    RIG_BUSY = 19        # 1 while the rig plays the rig buffer (loop): the I/O side leaves it alone
    MB_WITHDRAWN = 20    # mailbox tokens up to this one are withdrawn (I/O side): not applied when taken
    SIZE = 21


Cmd = IntEnum("Cmd", [(k.name, k.value) for _, k in CODES], module=__name__)
Cmd.__doc__ = """Numeric commands carried to the loop (validated on the I/O side); each one's arguments
and handler are its record in :mod:`controller.daemon.commands`."""

LANES: tuple[Cmd, ...] = tuple(Cmd[k.name] for c, k in CODES if c.lane == Lane.PRIORITY)
"""The priority lanes' commands, in the order the loop reads them (one ``lanes`` row each)."""


@dataclass(frozen=True)
class Layout:
    """Sizes of every region, fixed when the daemon starts."""
    n_joints: int
    n_axes: int
    record_size: int
    mailbox_slots: int = 64
    reply_slots: int = 64
    ring_slots: int = 4096
    event_slots: int = 1024
    traj_samples: int = 150_000      # 5 min at 2 ms
    rig_nodes: int = 0               # the rig buffer (0 without the rig; RIG_NODES with it)
    bus_health: int = 0              # the bus' health buffer's size (drivers.health.HEALTH)

    @property
    def slot_size(self) -> int:
        return 3 + MAX_ARGS

    def regions(self) -> list[tuple[str, type, tuple[int, ...]]]:
        return [("header", np.int64, (H.SIZE,)),
                ("mailbox", np.float64, (self.mailbox_slots, self.slot_size)),
                ("replies", np.float64, (self.reply_slots, 4)),
                ("ring", np.float64, (self.ring_slots, 1 + self.record_size)),
                ("events", np.float64, (self.event_slots, 5)),
                ("stats", np.float64, (STATS_SIZE,)),
                ("traj", np.float64, (self.traj_samples, self.n_joints)),
                ("support", np.float64, (self.traj_samples,)),
                ("rig", np.float64, (3, self.rig_nodes, 6)),
                ("bus", np.float64, (self.bus_health,)),
                ("lanes", np.int64, (len(LANES), 2))]

    def nbytes(self) -> int:
        return sum(int(np.prod(shape)) * 8 for _, _, shape in self.regions())


class SharedBlock:
    """The shared block, created by the daemon (``create=True``) or attached by name."""

    def __init__(self, layout: Layout, name: str | None = None, create: bool = False) -> None:
        self.layout = layout
        self._shm = shared_memory.SharedMemory(name=name, create=create, size=layout.nbytes())
        self.name = self._shm.name
        offset = 0
        for region, dtype, shape in layout.regions():
            size = int(np.prod(shape)) * 8
            setattr(self, region, np.ndarray(shape, dtype, buffer=self._shm.buf, offset=offset))
            offset += size
        self.header: np.ndarray
        self.mailbox: np.ndarray
        self.replies: np.ndarray
        self.ring: np.ndarray
        self.events: np.ndarray
        self.stats: np.ndarray
        self.bus: np.ndarray
        self.traj: np.ndarray
        self.support: np.ndarray
        self.rig: np.ndarray
        self.lanes: np.ndarray
        if create:
            self.header[:] = 0
            self.lanes[:] = 0
            self.header[H.MAGIC] = MAGIC
            self.header[H.N_JOINTS] = layout.n_joints
            self.header[H.N_AXES] = layout.n_axes
            reset_stats(self.stats)
            self.support[:] = -1.0
        elif self.header[H.MAGIC] != MAGIC:
            raise ValueError(f"shared memory {name!r} is not a bipd block")
        self._owner = create

    def close(self) -> None:
        """Drop the views and detach; the creator also unlinks the block."""
        for region, _, _ in self.layout.regions():
            setattr(self, region, None)
        self._shm.close()
        if self._owner:
            self._shm.unlink()


# ------------------------------------------------------------------ mailbox (I/O -> loop)

def post_command(block: SharedBlock, token: int, cmd: int, args: np.ndarray | None = None) -> bool:
    """I/O side: queue one command; False when the mailbox is full."""
    h = block.header
    head, tail = int(h[H.MB_HEAD]), int(h[H.MB_TAIL])
    slots = block.layout.mailbox_slots
    if head - tail >= slots:
        return False
    slot = block.mailbox[head % slots]
    nargs = 0 if args is None else len(args)
    if nargs > MAX_ARGS:
        raise ValueError(f"a command carries at most {MAX_ARGS} arguments, got {nargs}")
    slot[0], slot[1], slot[2] = token, cmd, nargs
    if nargs:
        slot[3:3 + nargs] = args
    h[H.MB_HEAD] = head + 1                  # publish after the payload
    return True


def next_command(block: SharedBlock) -> np.ndarray | None:
    """Loop side: the oldest pending slot (a view, valid until :func:`command_done`)."""
    h = block.header
    tail = int(h[H.MB_TAIL])
    if tail >= int(h[H.MB_HEAD]):
        return None
    return block.mailbox[tail % block.layout.mailbox_slots]


def command_done(block: SharedBlock) -> None:
    block.header[H.MB_TAIL] += 1


def withdraw_commands(block: SharedBlock, token: int) -> None:
    """I/O side: withdraw every mailbox command up to ``token`` the loop has not taken yet (tokens
    increase in mailbox order); the loop's reply says which ones it took first."""
    h = block.header
    if token > h[H.MB_WITHDRAWN]:
        h[H.MB_WITHDRAWN] = token


def withdrawn(block: SharedBlock, token: float) -> bool:
    """Loop side: True if the command just taken was withdrawn (reply ``TIMEOUT``, do not apply it)."""
    return token <= block.header[H.MB_WITHDRAWN]


# ------------------------------------------------------------------ priority lanes (I/O -> loop)

def post_priority(block: SharedBlock, lane: int, token: int) -> bool:
    """I/O side: hand lane ``lane`` a command (``token`` > 0); False while its last one is untaken."""
    row = block.lanes[lane]
    if row[0] != row[1]:
        return False
    row[0] = token
    return True


def posted_priority(block: SharedBlock, lane: int) -> int:
    """I/O side: the token lane ``lane`` holds for the loop, 0 once the loop has taken it."""
    row = block.lanes[lane]
    return int(row[0]) if row[0] != row[1] else 0


def take_priority(block: SharedBlock, lane: int) -> int:
    """Loop side: the token of lane ``lane``'s untaken command (now taken), or 0."""
    lanes = block.lanes
    token = int(lanes[lane, 0])
    if token == lanes[lane, 1]:
        return 0
    lanes[lane, 1] = token
    return token


# ------------------------------------------------------------------ replies (loop -> I/O)

def post_reply(block: SharedBlock, token: float, ok: bool, code: int, value: float = 0.0) -> bool:
    """Loop side: acknowledge a command; False (reply dropped) if the I/O side is not reading."""
    h = block.header
    head = int(h[H.RP_HEAD])
    if head - int(h[H.RP_TAIL]) >= block.layout.reply_slots:
        return False
    r = block.replies[head % block.layout.reply_slots]
    r[0], r[1], r[2], r[3] = token, 1.0 if ok else 0.0, code, value
    h[H.RP_HEAD] = head + 1
    return True


def take_replies(block: SharedBlock) -> list[tuple[int, bool, int, float]]:
    """I/O side: every pending reply, oldest first."""
    h = block.header
    out = []
    tail, head = int(h[H.RP_TAIL]), int(h[H.RP_HEAD])
    while tail < head:
        r = block.replies[tail % block.layout.reply_slots]
        out.append((int(r[0]), bool(r[1]), int(r[2]), float(r[3])))
        tail += 1
    h[H.RP_TAIL] = tail
    return out


# ------------------------------------------------------------------ telemetry ring (loop -> I/O)

def begin_record(block: SharedBlock) -> np.ndarray:
    """Loop side: the payload view of the next record, marked as being written."""
    count = int(block.header[H.RING_COUNT])
    rec = block.ring[count % block.layout.ring_slots]
    rec[0] = 2 * count + 1                   # odd: writing
    return rec[1:]


def end_record(block: SharedBlock) -> None:
    count = int(block.header[H.RING_COUNT])
    block.ring[count % block.layout.ring_slots, 0] = 2 * count + 2   # even: complete
    block.header[H.RING_COUNT] = count + 1


def read_record(block: SharedBlock, index: int, out: np.ndarray) -> bool:
    """I/O side: copy record ``index`` into ``out``; False if it was overwritten or torn."""
    rec = block.ring[index % block.layout.ring_slots]
    seq = rec[0]
    if seq != 2 * index + 2:
        return False
    out[:] = rec[1:]
    return rec[0] == seq


# ------------------------------------------------------------------ events (loop -> I/O)

def post_event(block: SharedBlock, cycle: int, code: int, a: float = 0.0, b: float = 0.0) -> None:
    """Loop side: append ``[index, cycle, code, a, b]``; the index is written last, so a
    reader that finds it equal to the slot's expected index read a complete event."""
    count = int(block.header[H.EV_COUNT])
    e = block.events[count % block.layout.event_slots]
    e[0] = -1.0
    e[1], e[2], e[3], e[4] = cycle, code, a, b
    e[0] = count
    block.header[H.EV_COUNT] = count + 1


def read_events(block: SharedBlock, since: int) -> tuple[list[tuple[int, int, float, float]], int, int]:
    """I/O side: events from index ``since``; returns (events, next index, dropped)."""
    count = int(block.header[H.EV_COUNT])
    slots = block.layout.event_slots
    dropped = max(0, count - since - slots)
    out = []
    for i in range(since + dropped, count):
        e = block.events[i % slots].copy()
        if e[0] != i:                          # overwritten while we read: count it lost
            dropped += 1
            continue
        out.append((int(e[1]), int(e[2]), float(e[3]), float(e[4])))
    return out, count, dropped
