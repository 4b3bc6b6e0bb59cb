"""Layout of one telemetry record (float64 fields) in the shared ring.

Fields in order: t, cycle, state, fault, q[n], qd[n], q_ref[n], tau[n], com[3],
margins[W] (signed CoG margins to the support-polygon walls, NaN when unused),
force[3] (stabilizer field force), stab_flags (bit k: STAB_FLAGS[k]), wake_us,
task_us[len(TASKS)], overruns, missed, platform[2] (alpha, beta), fault_info
(controller.daemon.codes.pack_detail; ``fault`` is the Reason, 0 when none), support (the played
file's support phase, models.common.support: 0 left, 1 right, 2 double; -1 none), rig_ferr[6] (the
Stewart–Gough rig's actuators' following errors, legs A-F, mm of stroke: setpoint − position;
NaN without the rig or while the drives are not powered), feet_load[2] (the load each foot's cells
carry, N, left then right; NaN without them on the bus), contact (the support phase they show:
0 left, 1 right, 2 double, -1 none; NaN without them), tilt[2] (the (alpha, beta) the models' gravity
follows: the platform's, or the one the IMU measures; rad), pelvis_pos[3], pelvis_vel[3], pelvis_rpy[3],
stance (the pelvis estimate, FIELD_UNITS), capture_point[2] (the whole-robot
stabilizer's instantaneous capture point, m, in its horizontal axes e1 forward, e2 left, rooted at the
stance sole; NaN when not stabilizing), push_strategy (stabilizer.push_recovery.STRATEGY_NAMES
index: 0 none, 1 ankle, 2 hip, 3 step; NaN when not stabilizing), bus_flags (bit k:
drivers.health.BUS_FLAGS[k], what the bus went through during the cycle's write and exchange: a PRes lost
or late, a setpoint saturated, an SDO transfer aborted, a node's new error entry), ground_slope[2] (the
ground's pitch and roll the stance sole lying flat shows, stabilizer.feet eq. 3; NaN until known) and edge[2]
(each foot's mask of unloaded cells when it landed on an edge or a step, 0 otherwise), tip_point[2] (the
capture point with the pelvis gyro's estimate, the soles' tip measured: stabilizer.push_recovery eq. P2'; NaN
when not stabilizing or without the gyro).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from drivers.health import BUS_FLAGS
from stabilizer import whole_body as wb
from stabilizer.stabilizer import FLAG_NAMES, STATUS_NAMES

TASKS = ("bus_read", "models", "reference", "axes", "bus_write", "telemetry")
MAX_WALLS = 8
RIG_ACTUATORS = 6          # the Stewart-Gough rig's legs A-F (rig_ferr)
# stab_flags bits: the bench stabilizer's flags (while STABILIZING), then its non-OK statuses, then the
# loop's: tilt_held, the tilt observer holding an IMU tilt unconfirmed for tilt.unconfirmed_s; then the
# whole-robot stabilizer's (stabilizer.whole_body) flags the bench's lack. A status and the flag of the
# same name share a bit (no_support).
STAB_FLAGS = FLAG_NAMES + STATUS_NAMES[1:] + ("tilt_held",)
STAB_FLAGS += tuple(f for f in wb.FLAG_NAMES if f not in STAB_FLAGS)
# a stabilizer's status names (the whole robot's extend the bench's)
STAB_STATUS_NAMES = wb.STATUS_NAMES


def stab_bits(names: tuple[str, ...]) -> int:
    """The stab_flags mask of some STAB_FLAGS names."""
    return sum(1 << STAB_FLAGS.index(name) for name in names)


def stab_flag_names(mask: float) -> list[str]:
    """The STAB_FLAGS names of the bits set in ``mask`` (I/O side; allocates)."""
    m = int(mask) if np.isfinite(mask) else 0
    return [name for k, name in enumerate(STAB_FLAGS) if m >> k & 1]


def stab_bit_map(flag_names: tuple[str, ...], status_names: tuple[str, ...]) -> np.ndarray:
    """A stabilizer's telemetry bits (setup only): the STAB_FLAGS index of each of its flags, then
    of each non-OK status (flag_mask in controller.daemon.loop.references.stabilize reads it)."""
    return np.array([STAB_FLAGS.index(f) for f in flag_names + status_names[1:]], np.int64)


TILT_HELD_MASK = stab_bits(("tilt_held",))
LOADS_MASK = stab_bits(("loads_implausible",))    # the feet's load cells fail stabilizer.contact.loads_status

# rising bits an operator hears of (events): a failing stabilizer and the flags that
# say it is at the end of its means
STAB_EVENT_MASK = stab_bits(("near_singular", "at_joint_limit", "cog_outside") + STATUS_NAMES[1:])


#: the record's fields in order, each with its size ("n": one per joint); declared once: the views,
#: the size, the names and the writer's offsets (FIELD, controller.daemon.loop.recorder) follow
RECORD_FIELDS: tuple[tuple[str, int | str], ...] = (
    ("t", 1), ("cycle", 1), ("state", 1), ("fault", 1), ("q", "n"), ("qd", "n"), ("q_ref", "n"), ("tau", "n"),
    ("com", 3), ("margins", MAX_WALLS), ("force", 3), ("stab_flags", 1), ("wake_us", 1), ("task_us", len(TASKS)),
    ("overruns", 1), ("missed", 1), ("platform", 2), ("fault_info", 1), ("support", 1),
    ("rig_ferr", RIG_ACTUATORS), ("feet_load", 2), ("contact", 1), ("tilt", 2),
    ("pelvis_pos", 3), ("pelvis_vel", 3), ("pelvis_rpy", 3), ("stance", 1),
    ("capture_point", 2), ("push_strategy", 1), ("bus_flags", 1), ("ground_slope", 2), ("edge", 2),
    ("tip_point", 2))
#: each field's unit (the cycle log's schemas say it); codes name their enum, counts what they count
FIELD_UNITS: dict[str, str] = {
    "t": "s (the loop's time since its start)", "cycle": "cycles", "state": "code (controller.daemon.codes.State)",
    "fault": "code (controller.daemon.codes.Reason; 0: none)", "q": "rad (m for a prismatic joint)",
    "qd": "rad/s (m/s for a prismatic joint)", "q_ref": "rad (m for a prismatic joint)",
    "tau": "N m (N for a prismatic joint)", "com": "m, in the base frame", "margins": "m (signed: negative outside)",
    "force": "N", "stab_flags": "bit mask (bit k: stab_flags names[k])", "wake_us": "us", "task_us": "us",
    "overruns": "cycles", "missed": "cycles", "platform": "rad (alpha, beta)",
    "fault_info": "code (controller.daemon.codes.pack_detail)",
    "support": "code (0 left, 1 right, 2 double, -1 none)", "rig_ferr": "mm of stroke (setpoint - position)",
    "feet_load": "N (left, right)", "contact": "code (0 left, 1 right, 2 double, -1 none)",
    "tilt": "rad (alpha, beta)", "pelvis_pos": "m, in the world anchored at the first stance sole",
    "pelvis_vel": "m/s, in that world", "pelvis_rpy": "rad (R = Rx Ry Rz, the floating base's angles)",
    "stance": "code (the anchoring foot: 0 left, 1 right, -1 none)",
    "capture_point": "m (e1 forward, e2 left, from the stance sole; NaN when not stabilizing)",
    "push_strategy": "code (stabilizer.push_recovery.STRATEGY_NAMES; NaN when not stabilizing)",
    "bus_flags": f"bit mask (bit k: {', '.join(BUS_FLAGS)}[k])",
    "ground_slope": "rad (pitch > 0 uphill, roll > 0 rising to the left; the floor R = RotY(-pitch) RotX(roll))",
    "edge": "bit mask per foot (left, right; bit k: its k-th load cell unloaded on the edge it stands on)",
    "tip_point": "m (e1 forward, e2 left, from the stance sole; NaN when not stabilizing or without a pelvis gyro)"}
#: the fields that hold integers (codes, counters, masks): the cycle log writes them as JSON integers
INTEGER_FIELDS = frozenset({"cycle", "state", "fault", "stab_flags", "overruns", "missed", "fault_info",
                            "support", "contact", "stance", "push_strategy", "bus_flags", "edge"})
#: field name -> its position in a RecordLayout's ``offsets`` (the start of each field, in order)
FIELD: dict[str, int] = {name: k for k, (name, _) in enumerate(RECORD_FIELDS)}


@dataclass(frozen=True)
class RecordLayout:
    n: int                        # joints of the leg
    slices: dict[str, slice] = field(init=False, repr=False, compare=False)
    size: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        spec = [(name, self.n if size == "n" else size) for name, size in RECORD_FIELDS]
        slices, o = {}, 0
        for name, size in spec:
            slices[name] = slice(o, o + size)
            o += size
        object.__setattr__(self, "slices", slices)
        object.__setattr__(self, "size", o)

    @property
    def offsets(self) -> np.ndarray:
        """The start of each field, in RECORD_FIELDS' order (the writer's ``offs``, indexed by FIELD)."""
        return np.array([s.start for s in self.slices.values()], np.int64)

    def decode(self, rec: np.ndarray) -> dict:
        """A record as a JSON-ready dict (I/O side; allocates)."""
        out = {}
        for name, s in self.slices.items():
            v = rec[s]
            out[name] = float(v[0]) if s.stop - s.start == 1 else [float(x) for x in v]
        return out


# ------------------------------------------------------------------ profiler statistics
# One float64 array, shared with the I/O side: per task [min, max, sum, count] in ns,
# then the wake-latency histogram (1 us bins, the last bin collects everything beyond),
# then [cycles, overruns, missed, max_latency_ns]. Like the B&R profiler of thesis
# Figures 35 and 37: min / avg / max net time per task, plus latency percentiles.
HIST_BINS = 10_001
TASK_FIELDS = 4
ST_HIST = len(TASKS) * TASK_FIELDS
ST_CYCLES = ST_HIST + HIST_BINS
ST_OVERRUNS = ST_CYCLES + 1
ST_MISSED = ST_CYCLES + 2
ST_MAX_LATENCY = ST_CYCLES + 3
STATS_SIZE = ST_CYCLES + 4


def reset_stats(stats: np.ndarray) -> None:
    stats[:] = 0.0
    for i in range(len(TASKS)):
        stats[i * TASK_FIELDS] = np.inf


def stats_summary(stats: np.ndarray) -> dict:
    """Profiler figures in microseconds (allocates; for the I/O side and tools)."""
    tasks = {}
    for i, name in enumerate(TASKS):
        mn, mx, total, count = stats[i * TASK_FIELDS:(i + 1) * TASK_FIELDS]
        tasks[name] = ({"min_us": mn / 1e3, "avg_us": total / count / 1e3, "max_us": mx / 1e3}
                       if count else {"min_us": None, "avg_us": None, "max_us": None})
    hist = stats[ST_HIST:ST_CYCLES]
    total = hist.sum()
    lat = {}
    if total:
        cum = np.cumsum(hist)
        for label, p in (("p50_us", 0.5), ("p99_us", 0.99), ("p999_us", 0.999)):
            lat[label] = float(np.searchsorted(cum, p * total))   # bin index = us (upper bound)
    lat["max_us"] = float(stats[ST_MAX_LATENCY] / 1e3)
    return {"cycles": int(stats[ST_CYCLES]), "overruns": int(stats[ST_OVERRUNS]),
            "missed_cycles": int(stats[ST_MISSED]), "wake_latency": lat, "tasks": tasks}
