"""Electrostatic-field CoG stabilizer of Gastebois 2017 (thesis §2.5): support
polygon, virtual walls, force fields and the virtual CoG robot -> joint references."""
from stabilizer.config import StabilizerConfig, load_config
from stabilizer.stabilizer import FLAG_NAMES, NOT_RESET, NUMERIC_FAILURE, OK, REJECTED_INPUT, Stabilizer, StabilizerInputError

__all__ = [
           "FLAG_NAMES",
           "NOT_RESET",
           "NUMERIC_FAILURE",
           "OK",
           "REJECTED_INPUT",
           "Stabilizer",
           "StabilizerConfig",
           "StabilizerInputError",
           "load_config",
]
