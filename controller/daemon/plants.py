"""The plants the ``sim`` backend can drive, chosen by name in the daemon YAML (``bus.plant``).

Each factory takes (daemon config, robot, q0: the joint posture to start from) and returns a
:class:`drivers.sim.plant.Plant` with one motor per bus axis.
"""
from __future__ import annotations


def _leg_plant(cfg, robot, q0):
    """The bench leg's physics (drivers.sim.plant_leg) on the config's bus axes."""
    from drivers.sim.plant_leg import LegPlant
    return LegPlant.from_config(cfg.bus, robot, platform_ratio=cfg.control.platform_ratio, q0=q0)


def _inertia_plant(cfg, robot, q0):
    """Independent motor inertias (drivers.sim.plant.InertiaPlant, the axes' ``plant:`` values), no
    gravity, no coupling: any robot end to end on the bus; the joint motors start at q0; the sensors
    its bus declares read NaN (it measures nothing)."""
    import numpy as np

    from drivers.sim.plant import InertiaPlant
    plant = InertiaPlant.from_config(cfg.bus, nan_sensors=True)
    names = [a.name for a in cfg.bus.axes]
    idx = [names.index(a) for a in cfg.control.joint_axes]
    plant.position0[idx] = robot.description.transmission.to_motor(np.asarray(q0))
    plant.reset()
    return plant


def _biped_plant(cfg, robot, q0):
    """The whole biped on MuJoCo (drivers.sim.hil.plant_biped), in its flexed stance (Gastebois 2017
    §2.6.2) as the HIL serves it: hung from the gantry by the pelvis (``control.support: hung``) or
    standing on the floor (``ground``, where q0 off the stops would not put the soles flat)."""
    from drivers.sim.hil.plant_biped import BipedPlant
    return BipedPlant.from_config(cfg.bus, robot.description, hung=cfg.control.support == "hung")


PLANTS = {"leg": _leg_plant, "inertia": _inertia_plant, "biped": _biped_plant}
"""The sim backend's plants by name (``bus.plant``; controller.daemon.config checks the name)."""

NEEDS = {"biped": ("mujoco", "sim")}
"""The optional module (and the pyproject extra that installs it) a plant needs."""
