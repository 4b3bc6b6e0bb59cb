"""Helpers shared by the driver tests."""
from __future__ import annotations

from drivers.hal import open_bus


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
