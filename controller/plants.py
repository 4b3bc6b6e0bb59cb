"""The plants the ``sim`` backend can drive, chosen by name in the daemon YAML (``bus.plant``).

Each factory takes (daemon config, robot, q0: the joint posture to start from) and returns a
:class:`drivers.plant.Plant` with one motor per bus axis.
"""
from __future__ import annotations


def _leg_plant(cfg, robot, q0):
    """The bench leg's physics (drivers.plant_leg) on the config's bus axes."""
    from drivers.plant_leg import LegPlant
    return LegPlant.from_config(cfg.bus, robot, platform_ratio=cfg.control.platform_ratio, q0=q0)


def _inertia_plant(cfg, robot, q0):
    """Independent motor inertias (drivers.plant.InertiaPlant, the axes' ``plant:`` values), no
    gravity, no coupling: any robot end to end on the bus; the joint motors start at q0."""
    import numpy as np

    from drivers.plant import InertiaPlant
    plant = InertiaPlant.from_config(cfg.bus)
    names = [a.name for a in cfg.bus.axes]
    idx = [names.index(a) for a in cfg.control.joint_axes]
    plant.position0[idx] = robot.description.transmission.to_motor(np.asarray(q0))
    plant.reset()
    return plant


PLANTS = {"leg": _leg_plant, "inertia": _inertia_plant}
"""The sim backend's plants by name (``bus.plant``; controller.config checks the name)."""
