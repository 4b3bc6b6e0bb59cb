"""Whether the whole-robot stabilizer can start from a posture: its own first cycle, run on the I/O side.

The stabilizer starts bumplessly from the measured posture (stabilizer.whole_body.reset: the posture
target is that posture), so what it needs is not a distance to some stance but its two virtual
robots' room (docs/multi_cog.md): the whole robot's CoG inside the support polygon by at least its
walls' saturation distance, and the trunk's CoG inside its box over the pelvis by at least its
walls' — a posture already inside a saturated wall starts at full wall force and faults within a
second. One :func:`stabilizer.whole_body.step` from the live q, level (the platform's tilt is not
known here), in the requested support, measures both margins; a failing step is refused too. The
check's own stabilizer is told the tilt by the platform's angles (level) and the support by the request
(the phase source), whatever the daemon's sources: the IMU's reading and the feet's loads are the loop's,
and the question here is the posture's room, not the sensors'.
"""
from __future__ import annotations

import numpy as np

from models.common.support import DOUBLE
from stabilizer.whole_body import (CONTACT_PHASE, OK, P_CONTACT, P_TILT_SOURCE, P_USE_ACC, STATUS_NAMES,
                                   WholeBodyStabilizer)
from stabilizer.ground import TILT_PLATFORM


class StartPosture:
    """``reason(q, support)``: None when the stabilizer may start from ``q`` in ``support``
    (models.common.support), else one sentence saying why not; ``stabilizer`` is this check's own
    (the loop's is in another process), its kernels compiled here, before the first request."""

    def __init__(self, stabilizer: WholeBodyStabilizer) -> None:
        self.stab = stabilizer
        p = stabilizer.params                     # this check's own copy: level, the requested support
        p.flags.writeable = True
        p[P_TILT_SOURCE], p[P_CONTACT], p[P_USE_ACC] = TILT_PLATFORM, CONTACT_PHASE, 0.0
        p.flags.writeable = False
        cfg = stabilizer.config
        self.cog_room, self.trunk_room = cfg.cog.walls.radius, cfg.trunk.walls.radius    # saturation distances
        self.reason(np.zeros(stabilizer.n), DOUBLE)               # compiles the kernels now

    def reason(self, q: np.ndarray, support: int) -> str | None:
        st = self.stab
        st.reset(q)
        status = st.step(q, support)
        if status != OK:
            return f"start posture: the stabilizer's first step from it fails ({STATUS_NAMES[status]})"
        for what, region, margin, room in (("the robot's CoG", "support polygon", st.measured_margin, self.cog_room),
                                           ("the trunk's CoG", "box over the pelvis", st.trunk_margin, self.trunk_room)):
            if not margin >= room:
                where = "outside" if margin < 0 else "inside"
                return (f"start posture: {what} is {abs(margin) * 1e3:.1f} mm {where} its {region}, less than the "
                        f"walls' saturation distance {room * 1e3:g} mm inside (a wall would push at full force); "
                        "move to the stance first")
        return None
