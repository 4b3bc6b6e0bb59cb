"""Hardware-in-the-loop bench: the BIP leg, or the whole biped, in MuJoCo behind the ``udp`` backend.

``mjcf`` builds the MuJoCo model from the robot YAML, ``plant_mujoco`` wraps it as a
:class:`~drivers.sim.plant.Plant` with the leg plant's motors and sensors; ``mjcf_biped`` and
``plant_biped`` do the same for a whole biped (a tree robot, hung or on the floor), ``push`` holds
the pushes both plants take; ``server`` runs one as the
controlled nodes of the POWERLINK network (``bipd hil``). Needs the ``mujoco`` package (``sim`` extra).
"""
