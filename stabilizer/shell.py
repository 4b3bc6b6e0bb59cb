"""What the stabilizers' Python shells share: the scalars and flags their kernels write into
``out``, read by name through the subclass's out layout."""
from __future__ import annotations

import numpy as np

from models.common.layout import Layout


class StabilizerShell:
    """Base of :class:`stabilizer.stabilizer.Stabilizer` and
    :class:`stabilizer.whole_body.WholeBodyStabilizer`: a subclass sets the class attributes
    ``OUT`` (its out layout) and ``FLAG_NAMES``, and the instance attributes ``out`` (the buffer)
    and ``flags`` (its view)."""

    OUT: Layout
    FLAG_NAMES: tuple[str, ...]
    out: np.ndarray
    flags: np.ndarray

    @property
    def min_margin(self) -> float:
        """Smallest signed margin of the virtual CoG (m, > 0 inside)."""
        return float(self.out[self.OUT.offset("min_margin")])

    @property
    def measured_margin(self) -> float:
        """Smallest signed margin of the measured posture's CoG."""
        return float(self.out[self.OUT.offset("measured_margin")])

    def flag_dict(self) -> dict[str, bool]:
        return {name: bool(self.flags[i]) for i, name in enumerate(self.FLAG_NAMES)}
