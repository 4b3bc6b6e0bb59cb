"""The results folder: one JSON line per finished trial in ``trials.jsonl``, appended as it ends.

A line is ``{"key", "params", "status": "ok"|"failed", "metrics" | "error", "wall_s"}``. A line cut
short by an interrupted write is ignored on reading (that trial runs again).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

RESULTS_FILE = "trials.jsonl"


class Store:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / RESULTS_FILE

    def read(self) -> dict[str, dict[str, Any]]:
        """Finished trials by key (the last line of a key wins)."""
        out: dict[str, dict[str, Any]] = {}
        if not self.path.exists():
            return out
        for line in self.path.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(rec, dict) and "key" in rec:
                out[rec["key"]] = rec
        return out

    def append(self, record: dict[str, Any]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a+") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() and (f.seek(f.tell() - 1), f.read(1))[1] != "\n":
                f.write("\n")                  # after a line cut short: a line of its own
            f.write(json.dumps(record, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())
