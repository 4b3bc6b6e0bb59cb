"""DS 301 SDO over ASnd (EPSG DS 301 §6.3): the sequence layer (:mod:`.sequence`), the command
layer's frame and segmentation (:mod:`.command`), the MN's client (:mod:`.client`) and the CN's
server (:mod:`.server`). Pure state machines over ASnd payload bytes, clocked in bus cycles."""
from drivers.powerlink.sdo.client import SdoClient
from drivers.powerlink.sdo.sequence import RETRIES, RETRY_CYCLES
from drivers.powerlink.sdo.server import SdoServer

__all__ = ["RETRIES", "RETRY_CYCLES", "SdoClient", "SdoServer"]
