"""The SDO client (the MN's end of one CN's SDO connection, EPSG DS 301 §6.3.2): Read/WriteByIndex
transfers, one at a time, over a :class:`~drivers.powerlink.sdo.sequence.SequenceLayer`.

Pure and clocked by its caller: :meth:`SdoClient.receive` takes the CN's ASnd payloads,
:meth:`SdoClient.take` returns the payloads to send, :meth:`SdoClient.tick` is one POWERLINK cycle.
A transfer ends (``request.done``) with its value, the server's abort code, or 0x05040000 when
the connection is lost (the sequence layer's retries ran out) or, all its frames acknowledged, no
answer came for ``retry_cycles * (retries + 1)`` cycles.
"""
from __future__ import annotations

from collections import deque

from drivers.powerlink.sdo import command as cmd
from drivers.powerlink.sdo.sequence import CLOSED, RETRIES, RETRY_CYCLES, SequenceLayer
from drivers.service_channel import (ABORT_GENERAL, ABORT_TIMEOUT, ABORT_TYPE_MISMATCH, DOMAIN, SDO_READ,
                                     SDO_WRITE, SdoRequest, TypeMismatch, decode, encode)


class SdoClient:
    def __init__(self, retry_cycles: int = RETRY_CYCLES, retries: int = RETRIES) -> None:
        self.seq = SequenceLayer(True, retry_cycles, retries)
        self.timeout_cycles = retry_cycles * (retries + 1)
        self.queue: deque[SdoRequest] = deque()
        self.active: SdoRequest | None = None
        self.finished: deque[SdoRequest] = deque()     # done since the caller last looked
        self._transaction = 0
        self._commands: list[bytes] = []
        self._reassembly = cmd.Reassembly()
        self._waited = 0

    def request(self, req: SdoRequest) -> None:
        """Queue ``req``; a write's value is encoded now (a bad value raises, naming the type)."""
        if req.command == SDO_WRITE:
            req.data = encode(req.data_type, req.value)
        elif req.command != SDO_READ:
            raise ValueError(f"SDO command 0x{req.command:02X} is neither ReadByIndex nor WriteByIndex")
        self.queue.append(req)
        self._next()

    @property
    def busy(self) -> bool:
        return self.active is not None

    def take(self) -> list[bytes]:
        return self.seq.take()

    def receive(self, payload: bytes) -> None:
        self.seq.receive(payload)
        while self.seq.received:
            try:
                self._command(*cmd.parse(self.seq.received.popleft()))
            except ValueError:
                self._finish(ABORT_GENERAL)
        if self.active is not None and self.seq.state == CLOSED:      # the server closed: start again
            self._start()

    def tick(self) -> None:
        """One POWERLINK cycle."""
        self.seq.tick()
        if self.active is None:
            return
        if self.seq.timed_out:
            self._finish(ABORT_TIMEOUT)
            return
        self._waited = 0 if self.seq.busy else self._waited + 1    # the sequence layer times its own frames
        if self._waited > self.timeout_cycles:
            self.seq.withdraw()
            self.seq.send(cmd.command(self._transaction, cmd.ABORT, self.active.command,
                                      cmd.ABORT_CODE.pack(ABORT_TIMEOUT)))
            self._finish(ABORT_TIMEOUT, withdraw=False)

    def reset(self) -> None:
        """The server's node was reset: forget the connection, restart the transfer under way."""
        self.seq.close()
        if self.active is not None:
            self._start()

    # -- internals ------------------------------------------------------------------------------
    def _next(self) -> None:
        if self.active is not None or not self.queue:
            return
        req = self.active = self.queue.popleft()
        self._transaction = (self._transaction + 1) % 256
        address = cmd.ADDRESS.pack(req.index, req.subindex)
        self._commands = cmd.segments(self._transaction, 0, req.command,
                                      address + req.data if req.command == SDO_WRITE else address)
        self._start()

    def _start(self) -> None:
        self._waited = 0
        self._reassembly = cmd.Reassembly()
        if self.seq.state == CLOSED:
            self.seq.open()
        for c in self._commands:
            self.seq.send(c)

    def _command(self, transaction: int, flags: int, command_id: int, data: bytes) -> None:
        req = self.active
        if req is None or transaction != self._transaction or not flags & cmd.RESPONSE:
            return
        self._waited = 0
        if flags & cmd.ABORT:
            self._finish(cmd.ABORT_CODE.unpack_from(data)[0] if len(data) >= 4 else ABORT_GENERAL)
            return
        whole = self._reassembly.add(flags, data)
        if whole is None:
            return
        if req.command == SDO_READ:
            req.data = whole
            try:
                req.value = whole if req.data_type == DOMAIN else decode(req.data_type, whole)
            except TypeMismatch:
                self._finish(ABORT_TYPE_MISMATCH)
                return
        self._finish(0)

    def _finish(self, abort: int, withdraw: bool = True) -> None:
        """End the active transfer; an aborted one's segments not numbered yet are not sent."""
        if abort and withdraw:
            self.seq.withdraw()
        req, self.active = self.active, None
        req.done, req.abort_code = True, abort
        self.finished.append(req)
        self._next()
