"""Hardware-in-the-loop bench: the BIP leg in MuJoCo behind the ``udp`` backend.

``mjcf`` builds the MuJoCo model from the robot YAML, ``plant_mujoco`` wraps it as a
:class:`~drivers.plant.Plant` with the leg plant's motors and sensors, ``server`` runs it as the
controlled nodes of the POWERLINK network (``bipd hil``). Needs the ``mujoco`` package (``sim`` extra).
"""
