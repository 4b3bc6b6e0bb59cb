"""DS 301 SDO over ASnd (EPSG DS 301 §6.3): the sequence layer (:mod:`.sequence`), the command
layer's frame and segmentation (:mod:`.command`), the MN's client (:mod:`.client`) and the CN's
server (:mod:`.server`). Pure state machines over ASnd payload bytes, clocked in bus cycles."""
from drivers.powerlink.sdo.client import SdoClient
from drivers.powerlink.sdo.server import SdoServer

# Both ends resend unacknowledged frames after RETRY_CYCLES POWERLINK cycles without progress, and
# give the connection up after RETRIES such rounds: (RETRIES + 1) * RETRY_CYCLES cycles in all
# (300 cycles: 120 ms at 400 µs, 0.6 s at 2 ms).
RETRY_CYCLES = 100
RETRIES = 2

__all__ = ["RETRIES", "RETRY_CYCLES", "SdoClient", "SdoServer"]
