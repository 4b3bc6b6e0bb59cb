"""Array comparisons the numerical tests share."""
from __future__ import annotations

from typing import Callable

import numpy as np


def close_within(tol: float, scale: float = 1.0) -> Callable[..., None]:
    """A check that ``ours`` equals ``ref`` to ``tol`` relative to the larger of ``scale`` and ref's largest
    entry (entries can be exactly zero); the returned ``close(ours, ref, what="")`` raises otherwise."""
    def close(ours, ref, what: str = "") -> None:
        ref = np.asarray(ref)
        np.testing.assert_allclose(ours, ref, rtol=tol, atol=tol * max(scale, float(np.abs(ref).max())),
                                   err_msg=what)
    return close
