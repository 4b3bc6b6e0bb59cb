"""MOVING, a played gait under the whole-robot stabilizer (docs/walking.md, "Stabilized walking"): each
cycle the file's sample is the gait's posture q* and rate q̇* (:class:`.playback.Playback`) and its
support phase the stabilizer's commanded phase; :func:`stabilizer.whole_body.set_gait` makes them the
tasks' targets and feed-forward, and the stabilizer's step (:class:`.stabilize_whole_body.StabilizeWholeBody`,
its statuses, flags, events and hold reaction) gives the reference. The file's q̈* stays the drives'
torque feed-forward while the stabilizer's step is accepted."""
from __future__ import annotations

import numpy as np

from stabilizer.whole_body import set_gait

from controller.daemon.loop.references.playback import Playback
from controller.daemon.loop.references.stabilize_whole_body import StabilizeWholeBody
from controller.daemon.loop.states import Outcome


class StabilizedPlayback:
    """``playback`` (started, its file loaded) sampled into the gait buffers, ``stab`` tracking it."""

    def __init__(self, playback: Playback, stab: StabilizeWholeBody) -> None:
        self.playback, self.stab = playback, stab
        n = stab.n
        self.q_gait, self.qd_gait, self.qdd_gait = np.zeros(n), np.zeros(n), np.zeros(n)

    def start(self, q_from: np.ndarray) -> None:
        """From the reference ``q_from`` (bumpless), in the played sample's support phase."""
        self.stab.start(q_from, self.playback.phase)

    def sample(self, t: float, q_ref: np.ndarray, qd_ref: np.ndarray, qdd_ref: np.ndarray) -> Outcome:
        pb, st = self.playback, self.stab
        done = pb.sample(t, self.q_gait, self.qd_gait, self.qdd_gait)
        set_gait(st.params, st.stab.state, self.q_gait, self.qd_gait)
        st.commanded = pb.phase
        if not st.sensed:                # the file's phase is the support in use
            st.support = pb.phase
        outcome = st.sample(t, q_ref, qd_ref, qdd_ref)
        if st.failed == 0:
            qdd_ref[:] = self.qdd_gait
        return outcome if outcome != Outcome.RUNNING else done
