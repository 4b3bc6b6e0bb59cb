"""``sim`` backend: the simulated POWERLINK network in-process, lock-step and deterministic.

Every frame is real bytes: the MN encodes SoC/PReq/SoA/ASnd, :class:`~drivers.sim.nodes.SimulatedNodes`
(the MN's link) decodes them and encodes PRes/ASnd, which the MN decodes. With ``record_frames=True``
a :class:`RecordingLink` keeps every frame (MN and CN side, in wire order) in ``bus.link.frames``.
"""
from __future__ import annotations

from drivers.backends.udp import RemoteFaults, UdpLink
from drivers.config import BusConfig
from drivers.sim.plant import Plant
from drivers.powerlink.bus import PowerlinkBus
from drivers.sim.nodes import ImmediateLink, SimulatedNodes
from drivers.sim.udp_server import InProcessServer


class RecordingLink(ImmediateLink):
    """A link to :class:`SimulatedNodes` that keeps a copy of every frame on the wire."""

    def __init__(self, network: SimulatedNodes) -> None:
        super().__init__()
        self.network = network
        self.reply_delay_s = 0.0
        self.frames: list[bytes] = []

    def transfer(self, frame: memoryview) -> memoryview | None:
        network = self.network
        reply = network.transfer(frame)
        self.reply_delay_s = network.reply_delay_s
        self.frames.append(bytes(frame))
        if reply is not None:
            self.frames.append(bytes(reply))
        return reply

    def close(self) -> None:
        self.network.reset()


class SimBus(PowerlinkBus):
    """A :class:`PowerlinkBus` whose controlled nodes are simulated in-process (``bus.network``)."""

    def __init__(self, config: BusConfig, plant: Plant | None = None, record_frames: bool = False,
                 commissioned: bool = True) -> None:
        self.network = SimulatedNodes(config, plant, commissioned=commissioned)
        link = RecordingLink(self.network) if record_frames else self.network
        super().__init__(config, link, self.network.faults)


def open_sim(config: BusConfig, plant: Plant | None = None, record_frames: bool = False,
             commissioned: bool = True) -> SimBus:
    """A bus on a simulated network of ``config``'s nodes driving ``plant`` (default: InertiaPlant);
    ``commissioned``: its nodes already hold their configuration (:class:`SimulatedNodes`)."""
    return SimBus(config, plant, record_frames, commissioned)


def open_in_process(config: BusConfig, plant: Plant | None = None, fast: bool = True,
                    server: InProcessServer | None = None) -> PowerlinkBus:
    """A ``udp`` bus (MN side as :func:`open_udp`) whose server (the simulated side) runs in this process
    (:class:`InProcessServer`, or ``server``); without ``fast``, both ends take their Python paths
    only (the reference the Numba paths are measured and tested against)."""
    link = UdpLink(config.udp, server=server if server is not None else InProcessServer(config, plant, fast))
    if not fast:
        link.answers = link.queue_period = None          # the MN looks for them at construction
    return PowerlinkBus(config, link, RemoteFaults(link))
