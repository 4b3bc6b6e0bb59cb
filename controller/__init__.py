"""The bipd daemon and its tools (loop side and I/O side kept apart)."""
