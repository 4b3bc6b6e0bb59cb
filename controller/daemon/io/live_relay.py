"""The live view's WebSocket front door: the Foxglove WebSocket protocol under either of its names.

The ``foxglove-sdk`` server accepts only the subprotocol ``foxglove.sdk.v1`` (Foxglove app 2.x and
later, foxglove_bridge 3.x); clients of the protocol's first name, ``foxglove.websocket.v1``
(Foxglove Studio 1.x, Lichtblick, Flora, the ``@foxglove/ws-protocol`` client library), get
HTTP 400 from it although the two are the same protocol. :class:`Relay` listens on the live view's
port, accepts either name (any other offer, or none, is HTTP 400 as before) and relays each
connection frame for frame, text and binary, to the SDK's server on a private loopback port,
in both directions. It runs its own asyncio event loop in a daemon thread of the I/O process;
a slow client stops its own relay reading, so the SDK's bounded queue drops that client's oldest
messages as without the relay.
"""
from __future__ import annotations

import asyncio
import threading
from typing import Any

SUBPROTOCOLS = ("foxglove.sdk.v1", "foxglove.websocket.v1")
UPSTREAM = SUBPROTOCOLS[0]          # the name the SDK's server accepts
START_TIMEOUT_S = 10.0


class Relay:
    """Listens on ``host:port`` (0: any free port; :attr:`port` is the one bound) and relays every
    connection to ``ws://127.0.0.1:upstream_port``; raises OSError when the port cannot be bound."""

    def __init__(self, host: str, port: int, upstream_port: int) -> None:
        from websockets.asyncio.server import serve

        self._upstream = f"ws://127.0.0.1:{upstream_port}"
        self._loop = asyncio.new_event_loop()
        self._stopped = asyncio.Event()
        started: list[Any] = []
        ready = threading.Event()

        async def main() -> None:
            try:
                server = await serve(self._serve, host, port, subprotocols=list(SUBPROTOCOLS),
                                     compression=None, max_size=None)
            except OSError as e:
                started.append(e)
                ready.set()
                return
            started.append(server)
            ready.set()
            async with server:
                await self._stopped.wait()

        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(main(),),
                                        name="bipd-live-relay", daemon=True)
        self._thread.start()
        ready.wait(START_TIMEOUT_S)
        if not started or isinstance(started[0], OSError):
            self._thread.join(START_TIMEOUT_S)
            raise started[0] if started else OSError(f"the relay did not start within {START_TIMEOUT_S:g} s")
        self.port: int = started[0].sockets[0].getsockname()[1]

    async def _serve(self, client: Any) -> None:
        from websockets.asyncio.client import connect

        async with connect(self._upstream, subprotocols=[UPSTREAM], compression=None, max_size=None) as upstream:
            pumps = [asyncio.ensure_future(_pump(client, upstream)), asyncio.ensure_future(_pump(upstream, client))]
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            for p in pumps:
                p.cancel()
        await client.close()

    def close(self) -> None:
        """Stop listening, close every relayed connection, end the thread."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stopped.set)
            self._thread.join(START_TIMEOUT_S)
        self._loop.close()


async def _pump(source: Any, sink: Any) -> None:
    """Every message of ``source`` to ``sink``, as it came (text or binary), until ``source`` closes."""
    from websockets.exceptions import ConnectionClosed

    try:
        async for message in source:
            await sink.send(message)
    except ConnectionClosed:
        pass
