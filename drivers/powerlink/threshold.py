"""DS 301 threshold counters (EPSG DS 301 §4.7.4.1).

Each error adds 8, each cycle without that error subtracts 1 (not below 0); reaching the threshold
(15 by default) trips the counter, which then restarts from 0. One isolated error is tolerated;
two consecutive errors (8 + 8 = 16) trip. A threshold of 0 disables tripping.
"""
from __future__ import annotations

ERROR_INCREMENT = 8
DEFAULT_THRESHOLD = 15


class ThresholdCounter:
    """One DS 301 threshold counter with its cumulative error count."""

    __slots__ = ("count", "cumulative", "threshold")

    def __init__(self, threshold: int = DEFAULT_THRESHOLD) -> None:
        self.threshold = threshold
        self.count = 0
        self.cumulative = 0

    def error(self) -> bool:
        """Count one error; True when this error trips the threshold."""
        self.cumulative += 1
        self.count += ERROR_INCREMENT
        if self.threshold and self.count >= self.threshold:
            self.count = 0
            return True
        return False

    def good(self) -> None:
        """Count one cycle without this error."""
        if self.count:
            self.count -= 1

    def clear(self) -> None:
        """Forget the running count (after the node was reset)."""
        self.count = 0
