"""Helpers shared by the driver tests."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from drivers.hal import open_bus
from drivers.powerlink.process_image import read_tpdo


def cycle(bus, n: int = 1) -> None:
    """n control cycles in the order of docs/cycle.md: read, (controller), write, exchange."""
    for _ in range(n):
        bus.read()
        bus.write()
        bus.exchange()
    bus.read()


def enabled_bus(section: dict, **options):
    """A booted bus with every axis enabled in CSP."""
    bus = open_bus(section, **options)
    bus.boot()
    for axis in bus.axes.values():
        axis.enable()
    cycle(bus, 3)
    return bus


def boot_and_move(bus, periods: int, setpoints: Callable[[object, int], None]) -> None:
    """Boot, enable every axis, then ``periods`` control cycles, ``setpoints(bus, k)`` setting the
    targets of cycle ``k`` after its read; read once more."""
    bus.boot()
    for axis in bus.axes.values():
        axis.enable()
    for k in range(periods):
        bus.read()
        setpoints(bus, k)
        bus.write()
        bus.exchange()
    bus.read()


def decode_tpdo(payload: np.ndarray, tfields: np.ndarray, scales: np.ndarray) -> dict[str, np.ndarray]:
    """process_image.read_tpdo of one node's TPDO ``payload`` for the axes of the field tables
    ``tfields`` (all on that node), by name."""
    n = tfields.shape[0]
    out = {name: np.zeros(n, np.int64) for name in ("latched", "statusword", "mode_display", "state", "fault_code")}
    out.update({name: np.zeros(n) for name in ("position", "velocity", "current")})
    out["aux"] = np.zeros((n, 3))
    read_tpdo(payload[None, :], np.zeros(1, np.int64), np.zeros(n, np.int64), tfields, scales, out["latched"],
              out["statusword"], out["mode_display"], out["position"], out["velocity"], out["current"], out["aux"],
              out["state"], out["fault_code"], np.zeros(n, np.int64))
    return out
