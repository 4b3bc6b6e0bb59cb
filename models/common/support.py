"""Support phases of a biped, shared by the gait planner, the stabilizer, the loop and the
protocol: which foot carries the robot, and the sole frame that roots each single stance."""
from __future__ import annotations

LEFT, RIGHT, DOUBLE = 0, 1, 2
SUPPORT_NAMES = ("left", "right", "double")
SOLES = {LEFT: "left_sole", RIGHT: "right_sole"}      # the frame that roots each stance
