"""Which nodes answer on a wire, and who they are: an IdentRequest (SoA service 1, EPSG DS 301
§7.3.3.2) to each node id in PreOperational1, their IdentResponses decoded (``bipd bus scan``)."""
from __future__ import annotations

from collections.abc import Callable, Iterable

from drivers.powerlink import frames, ident
from drivers.powerlink.frames import FrameError, RequestedService, ServiceId
from drivers.powerlink.managing_node import Link
from drivers.powerlink.nmt import NmtState

PASSES = 2          # a node still NotActive wakes on the first SoA and answers the next IdentRequest


def scan(link: Link, nodes: Iterable[int], passes: int = PASSES, progress: Callable[[str], None] | None = None
         ) -> tuple[dict[int, ident.IdentResponse], dict[int, str]]:
    """The IdentResponse of each node among ``nodes`` that answers, by node id, and what was wrong
    with the answers that could not be decoded; each silent node is asked again on each of ``passes``."""
    nodes = list(nodes)
    fcs = getattr(link, "fcs", True)
    soa = frames.soa_frame()
    found: dict[int, ident.IdentResponse] = {}
    malformed: dict[int, str] = {}
    for k in range(passes):
        if progress:
            progress(f"pass {k + 1}/{passes}: IdentRequest to {len(nodes) - len(found)} node ids")
        for node in nodes:
            if node in found:
                continue
            frames.set_soa(soa.buf, NmtState.PRE_OPERATIONAL_1, 0, RequestedService.IDENT_REQUEST, node)
            reply = link.transfer(soa.seal())
            if reply is None:
                continue
            try:
                _, src, service = frames.read_asnd(reply, fcs)
                if src == node and service == ServiceId.IDENT_RESPONSE:
                    found[node] = ident.read_ident(reply, fcs)
                    malformed.pop(node, None)
            except FrameError as exc:
                malformed[node] = f"node {node} answered a malformed IdentResponse: {exc}"
    return dict(sorted(found.items())), malformed
