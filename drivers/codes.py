"""Fault codes reported by drives and by the bus (CiA 402 error codes 0x603F, openPOWERLINK E_DLL_*)."""
from __future__ import annotations

from enum import IntEnum


class FaultCode(IntEnum):
    NONE = 0x0000
    COMMUNICATION = 0x8100       # CiA 301: node left Operational (stopped, reset by command)
    LATE_PRES = 0x8236           # E_DLL_LATE_PRES_TH
    INVALID_FORMAT = 0x8241      # E_DLL_INVALID_FORMAT: malformed PRes threshold
    LOSS_PREQ = 0x8242           # E_DLL_LOSS_PREQ_TH (detected by the CN)
    LOSS_PRES = 0x8243           # E_DLL_LOSS_PRES_TH
    LOSS_SOC = 0x8245            # E_DLL_LOSS_SOC_TH (detected by the CN)
    OVER_TEMPERATURE = 0x4310    # CiA 402: excess temperature, drive
    ENCODER = 0x7305             # CiA 402: incremental sensor 1 fault
    FOLLOWING_ERROR = 0x8611     # CiA 402: following error


# Error register 0x1001 bits (CiA 301 §7.5.2.2)
ERR_GENERIC = 0x01
ERR_TEMPERATURE = 0x08
ERR_COMMUNICATION = 0x10
ERR_PROFILE = 0x20


def error_register_bits(code: int) -> int:
    """The 0x1001 error register bits that ``code`` sets (0 for no fault)."""
    if not code:
        return 0
    group = code >> 12
    if group == 0x4:
        return ERR_GENERIC | ERR_TEMPERATURE
    if 0x8100 <= code < 0x8300:
        return ERR_GENERIC | ERR_COMMUNICATION
    return ERR_GENERIC | ERR_PROFILE
