"""The fault-injection API every bus offers (``bus.faults``), by name: what the managing side
and the command interface see. The simulated controlled nodes carry the faults out
(drivers.sim.faults); the UDP backend forwards them to its server process."""
from __future__ import annotations

from abc import ABC, abstractmethod


class FaultError(ValueError):
    """A fault injection call with an unknown name or bad arguments."""


class FaultApi(ABC):
    """The named fault-injection calls; each backend implements :meth:`apply`."""

    def drop_pres(self, node_id: int, count: int = 1) -> None:
        self.apply("drop_pres", node_id=node_id, count=count)

    def delay_pres(self, node_id: int, delay_s: float, count: int = 1) -> None:
        self.apply("delay_pres", node_id=node_id, delay_s=delay_s, count=count)

    def corrupt_pres(self, node_id: int, offset: int | None = None, xor: int = 0xFF, count: int = 1) -> None:
        """``offset``: the byte of the PRes flipped (None: the first PDO byte)."""
        self.apply("corrupt_pres", node_id=node_id, offset=offset, xor=xor, count=count)

    def drop_soc(self, node_id: int, count: int = 1) -> None:
        self.apply("drop_soc", node_id=node_id, count=count)

    def disconnect_node(self, node_id: int) -> None:
        self.apply("disconnect_node", node_id=node_id)

    def reconnect_node(self, node_id: int) -> None:
        self.apply("reconnect_node", node_id=node_id)

    def stop_node(self, node_id: int) -> None:
        self.apply("stop_node", node_id=node_id)

    def drive_fault(self, axis: str, kind: str, duration_s: float = 0.0) -> None:
        self.apply("drive_fault", axis=axis, kind=kind, duration_s=duration_s)

    def encoder_glitch(self, axis: str, kind: str, value: float = 0.0, cycles: int = 1) -> None:
        self.apply("encoder_glitch", axis=axis, kind=kind, value=value, cycles=cycles)

    @abstractmethod
    def apply(self, name: str, **args) -> None:
        """Carry out the fault ``name`` (one of FAULT_NAMES) with its arguments."""


FAULT_NAMES = frozenset(n for n in vars(FaultApi) if not n.startswith("_") and n != "apply")
