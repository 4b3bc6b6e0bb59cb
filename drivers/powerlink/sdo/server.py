"""The SDO server (a CN's end, EPSG DS 301 §6.3.2): answers Read/WriteByIndex from an object
dictionary, expedited or segmented, with the abort codes of DS 301 Table 64.

Pure and clocked by its caller, like :class:`~drivers.powerlink.sdo.client.SdoClient`; the node
sends what :meth:`SdoServer.take` returns only when the MN invites it, and asks for that invitation
with the RS flag of its PRes while :attr:`SdoServer.pending` is non-zero.
"""
from __future__ import annotations

from typing import Protocol

from drivers.powerlink.sdo import command as cmd
from drivers.powerlink.sdo.sequence import RETRIES, RETRY_CYCLES, SequenceLayer
from drivers.service_channel import ABORT_BLOCK_SIZE, ABORT_TYPE_TOO_SHORT, ABORT_UNKNOWN_COMMAND


class Dictionary(Protocol):
    """An object dictionary as the server reaches it: bytes in, bytes out, abort codes for errors."""

    def read(self, index: int, subindex: int) -> tuple[int, bytes]: ...

    def write(self, index: int, subindex: int, data: bytes) -> int: ...


class SdoServer:
    def __init__(self, dictionary: Dictionary, retry_cycles: int = RETRY_CYCLES, retries: int = RETRIES) -> None:
        self.dictionary = dictionary
        self.seq = SequenceLayer(False, retry_cycles, retries)
        self._out: list[bytes] = []
        self._reassembly = cmd.Reassembly()
        self._transaction = -1           # of the command being received

    @property
    def pending(self) -> int:
        """Payloads waiting for an invitation (they are produced by :meth:`take`)."""
        if self.seq.ready:
            self._out.extend(self.seq.take())
        return len(self._out)

    def take(self) -> list[bytes]:
        self._out.extend(self.seq.take())
        out, self._out = self._out, []
        return out

    def tick(self) -> None:
        self.seq.tick()

    def reset(self) -> None:
        """Node reset: the connection and any transfer under way are forgotten."""
        self.seq.close()
        self._out.clear()
        self._reassembly = cmd.Reassembly()

    def receive(self, payload: bytes) -> None:
        self.seq.receive(payload)
        while self.seq.received:
            try:
                transaction, flags, command_id, data = cmd.parse(self.seq.received.popleft())
            except ValueError:
                continue                         # a header that lies about its size: nothing to answer
            self._command(transaction, flags, command_id, data)

    def _command(self, transaction: int, flags: int, command_id: int, data: bytes) -> None:
        if flags & cmd.RESPONSE:
            return
        if flags & cmd.ABORT:                    # the client gave up: drop its write in progress
            if transaction == self._transaction:
                self._reassembly = cmd.Reassembly()
            return
        if command_id == cmd.NIL and not data:
            return
        if command_id not in cmd.COMMANDS:
            self._abort(transaction, command_id, ABORT_UNKNOWN_COMMAND)
            return
        self._transaction = transaction
        try:
            whole = self._reassembly.add(flags, data)
        except ValueError:
            self._abort(transaction, command_id, ABORT_BLOCK_SIZE)
            return
        if whole is None:
            return
        if len(whole) < cmd.ADDRESS.size:
            self._abort(transaction, command_id, ABORT_TYPE_TOO_SHORT)
            return
        index, subindex = cmd.ADDRESS.unpack_from(whole)
        if command_id == cmd.READ_BY_INDEX:
            abort, value = self.dictionary.read(index, subindex)
        else:
            abort, value = self.dictionary.write(index, subindex, whole[cmd.ADDRESS.size:]), b""
        if abort:
            self._abort(transaction, command_id, abort)
            return
        for c in cmd.segments(transaction, cmd.RESPONSE, command_id, value):
            self.seq.send(c)

    def _abort(self, transaction: int, command_id: int, code: int) -> None:
        self.seq.send(cmd.command(transaction, cmd.RESPONSE | cmd.ABORT, command_id, cmd.ABORT_CODE.pack(code)))
