"""Robot models: MDH chains compiled to Numba kernels (Model/Data split)."""
from models.chain.config import RobotDescription, description_from_dict, load_description
from models.common.errors import ConfigError, GeometryError, ModelError, TransmissionFault, WorkspaceError
from models.chain.model import Data, Model
from models.chain.robot import Robot

__all__ = ["Robot", "Model", "Data", "RobotDescription", "load_description",
           "description_from_dict", "ConfigError", "GeometryError", "ModelError",
           "TransmissionFault", "WorkspaceError"]
