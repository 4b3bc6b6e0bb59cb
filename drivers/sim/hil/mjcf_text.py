"""What every MJCF generator of the bench shares: the platform body's name, the error type, and
numbers written as MJCF attribute text."""
from __future__ import annotations

import mujoco
import numpy as np

PLATFORM = "platform"          # the tilting platform's body (the leg's plate, or the rig's top)


class MjcfError(ValueError):
    """A robot or bench parameter the MJCF generator cannot use."""


def vec(*values: float) -> str:
    """Numbers as an MJCF attribute value (full precision)."""
    return " ".join(repr(float(x)) for x in values)


def quat(R: np.ndarray) -> str:
    """A rotation matrix as an MJCF ``quat`` attribute value."""
    q = np.empty(4)
    mujoco.mju_mat2Quat(q, np.ascontiguousarray(R, dtype=np.float64).ravel())
    return vec(*q)
