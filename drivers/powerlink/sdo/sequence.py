"""The SDO sequence layer (EPSG DS 301 §6.3.2.3): a reliable, ordered connection under the command layer.

Every SDO ASnd payload starts with its 4-byte header::

    0  receive sequence number << 2 | receive connection state (rcon)
    1  send sequence number << 2    | send connection state (scon)
    2  reserved (2 bytes)

Connection states: 0 no connection (close), 1 initialisation, 2 connection valid, 3 as scon "ack
request", as rcon "error response" (retransmission request). Sequence numbers count modulo 64; a
frame carrying command-layer data takes the next number, the receive number acknowledges every
frame up to it. The client opens the connection with the handshake openPOWERLINK's CN follows::

    client 00 01  ->  server 01 01  ->  client 01 02  ->  server 02 02   (bytes 0 and 1)

Unacknowledged data frames (at most :data:`WINDOW`) stay in a history; they are sent again, with
scon 3, after ``retry_cycles`` bus cycles without progress, or at once when the peer answers with
rcon 3; after ``retries`` such rounds the connection is lost (:attr:`SequenceLayer.timed_out`) and
what was queued is dropped.
Time is counted by :meth:`SequenceLayer.tick`, one call per POWERLINK cycle, never by the host's clock.

A frame without data (an acknowledgement, an error response) carries as its send number the last
one the peer acknowledged, so that it can never be taken for the next data frame.
"""
from __future__ import annotations

from collections import deque

HEADER_SIZE = 4
# Both ends resend unacknowledged frames after RETRY_CYCLES POWERLINK cycles without progress, and
# give the connection up after RETRIES such rounds: (RETRIES + 1) * RETRY_CYCLES cycles in all
# (300 cycles: 120 ms at 400 µs, 0.6 s at 2 ms).
RETRY_CYCLES = 100
RETRIES = 2
WINDOW = 5                 # unacknowledged data frames in flight (openPOWERLINK's history size)
_MODULO = 64
_AHEAD = 32                # a sequence number up to this far ahead of the expected one is "new"

CLOSED, INIT, VALID, ACK_REQUEST = 0, 1, 2, 3
ERROR_RESPONSE = 3


def header(rseq: int, rcon: int, sseq: int, scon: int) -> bytes:
    return bytes(((rseq % _MODULO) << 2 | rcon, (sseq % _MODULO) << 2 | scon, 0, 0))


def parse(payload: bytes) -> tuple[int, int, int, int]:
    """(receive sequence number, rcon, send sequence number, scon) of an SDO ASnd payload."""
    if len(payload) < HEADER_SIZE:
        raise ValueError(f"an SDO sequence-layer header is {HEADER_SIZE} bytes, the payload has {len(payload)}")
    return payload[0] >> 2, payload[0] & 3, payload[1] >> 2, payload[1] & 3


class SequenceLayer:
    """One end of a sequence-layer connection: feed it the peer's payloads (:meth:`receive`), hand
    it command-layer data to send (:meth:`send`), take the payloads to transmit (:meth:`take`)."""

    def __init__(self, client: bool, retry_cycles: int = RETRY_CYCLES, retries: int = RETRIES) -> None:
        if retry_cycles < 1 or retries < 0:
            raise ValueError(f"SDO retry_cycles must be >= 1 and retries >= 0, got {retry_cycles}, {retries}")
        self.client = client
        self.retry_cycles = retry_cycles
        self.retries = retries
        self.received: deque[bytes] = deque()    # command-layer payloads, in order, for the layer above
        self.retransmitted = 0                   # data frames sent again (a figure for tests and status)
        self._reset()

    def _reset(self) -> None:
        self.state = CLOSED          # CLOSED, INIT (handshake under way) or VALID
        self.timed_out = False
        self._own = 0                # number of the last data frame sent
        self._acked = 0              # last own number the peer acknowledged
        self._peer = 0               # number of the last in-order data frame received
        self._history: deque[tuple[int, bytes]] = deque()     # (number, command data) unacknowledged
        self._unsent = 0             # history entries, at its end, not transmitted yet
        self._backlog: deque[bytes] = deque()                 # command data waiting for the window
        self._out: list[bytes] = []  # frames without data (handshake, acknowledgement, error, close)
        self._owe_ack = False
        self._owe_error = False
        self._resend_scon = -1       # >= 0: transmit the whole history again, with this scon
        self._resent = False         # an error response was answered this cycle already
        self._idle = 0
        self._rounds = 0
        self._handshake = b""        # the last handshake frame sent (repeated on timeout)

    # -- the layer above ------------------------------------------------------------------------
    def open(self) -> None:
        """Client: start the handshake (``00 01``) afresh; data sent meanwhile waits for the connection."""
        self._reset()
        self.state = INIT
        self._send_handshake(header(0, CLOSED, 0, INIT))

    def close(self) -> None:
        """Forget the connection (sends nothing: a reset node has already forgotten it too)."""
        self._reset()

    def send(self, data: bytes) -> None:
        """Queue command-layer ``data`` for the peer, in order."""
        self._backlog.append(bytes(data))
        self._pump()

    def withdraw(self) -> None:
        """Drop the queued data that has no sequence number yet (what remains of an aborted transfer)."""
        self._backlog.clear()

    def take(self) -> list[bytes]:
        """The payloads to transmit now, in order (ownership passes to the caller): frames without
        data, then the data frames due (all of the history when a resend is due, else the new ones),
        each acknowledging what has arrived; a bare acknowledgement only when no data frame goes."""
        out, self._out = self._out, []
        if self._owe_error:
            out.append(header(self._peer, ERROR_RESPONSE, self._acked, VALID))
            self._owe_ack = self._owe_error = False
        scon, first = VALID, len(self._history) - self._unsent
        if self._resend_scon >= 0:
            scon, first = self._resend_scon, 0
            self.retransmitted += len(self._history) - self._unsent
        for k in range(first, len(self._history)):
            number, data = self._history[k]
            out.append(header(self._peer, VALID, number, VALID if k >= len(self._history) - self._unsent else scon)
                       + data)
        if first < len(self._history):
            self._owe_ack = False
        if self._owe_ack:
            out.append(header(self._peer, VALID, self._acked, VALID))
        self._owe_ack, self._unsent, self._resend_scon = False, 0, -1
        return out

    @property
    def ready(self) -> bool:
        """True when :meth:`take` has something to return."""
        return bool(self._out or self._unsent or self._owe_ack or self._owe_error or self._resend_scon >= 0)

    @property
    def busy(self) -> bool:
        """True while data of ours is unacknowledged or waiting, or the handshake runs."""
        return self.state == INIT or bool(self._history or self._backlog)

    # -- the peer -------------------------------------------------------------------------------
    def receive(self, payload: bytes) -> None:
        """One SDO payload from the peer; its command data (if new and in order) lands in :attr:`received`."""
        rseq, rcon, sseq, scon = parse(payload)
        if scon == CLOSED:                       # the peer closed (or has no connection)
            self._reset()
            return
        if scon == INIT:
            self._init_from_peer(rcon, sseq)
            return
        if self.state == INIT:
            if self.client and rcon == VALID:                           # server's 02 02: connected
                self._connected(sseq)
            elif not self.client and rcon == INIT:                      # client's 01 02: answer 02 02
                self._out.append(header(sseq, VALID, 0, VALID))
                self._connected(sseq)
            return
        if self.state == CLOSED:
            self._out.append(header(sseq, CLOSED, 0, CLOSED))           # no connection here: close
            return
        if rcon == INIT:
            if not self.client:                                         # our 02 02 was lost: again
                self._out.append(header(self._peer, VALID, self._acked, VALID))
            return
        self._acknowledged(rseq)
        if rcon == ERROR_RESPONSE and self._history and not self._resent:
            self._resend(VALID)
            self._resent = True
        expected = (self._peer + 1) % _MODULO
        if sseq == expected:
            self._peer = sseq
            self.received.append(bytes(payload[HEADER_SIZE:]))
            self._owe_ack = True
        elif (sseq - expected) % _MODULO < _AHEAD:                      # a data frame was lost
            self._owe_error = True
        elif scon == ACK_REQUEST:
            self._owe_ack = True
            if self._history:                    # the peer may be waiting for data of ours
                self._resend(VALID)
        self._pump()

    def tick(self) -> None:
        """One POWERLINK cycle: resend what the peer has not acknowledged for ``retry_cycles``."""
        self._resent = False
        if not (self.state == INIT or self._history):
            return
        self._idle += 1
        if self._idle < self.retry_cycles:
            return
        self._idle = 0
        self._rounds += 1
        if self._rounds > self.retries:
            self._reset()
            self.timed_out = True
            return
        if self.state == INIT:
            self._out.append(self._handshake)
        else:
            self._resend(ACK_REQUEST)

    # -- internals ------------------------------------------------------------------------------
    def _init_from_peer(self, rcon: int, sseq: int) -> None:
        if self.client:
            if self.state == INIT and rcon == INIT:                     # server's 01 01: answer 01 02
                self._send_handshake(header(sseq, INIT, 0, VALID))
                self._rounds = 0
            return
        if rcon == CLOSED:                                              # client's 00 01: answer 01 01
            self._reset()
            self.state = INIT
            self._send_handshake(header(sseq, INIT, 0, INIT))

    def _send_handshake(self, frame: bytes) -> None:
        self._handshake = frame
        self._out.append(frame)
        self._idle = 0

    def _connected(self, peer: int) -> None:
        self.state = VALID
        self._peer = peer
        self._own = self._acked = 0
        self._idle = self._rounds = 0
        self._pump()

    def _acknowledged(self, rseq: int) -> None:
        if not self._history or (self._own - rseq) % _MODULO >= _AHEAD:
            return
        progressed = False
        while self._history and (rseq - self._history[0][0]) % _MODULO < _AHEAD:
            self._history.popleft()
            progressed = True
        self._unsent = min(self._unsent, len(self._history))
        self._acked = rseq
        if progressed:
            self._idle = self._rounds = 0

    def _resend(self, scon: int) -> None:
        self._resend_scon = max(self._resend_scon, scon)

    def _pump(self) -> None:
        if self.state != VALID:
            return
        while self._backlog and len(self._history) < WINDOW:
            data = self._backlog.popleft()
            self._own = (self._own + 1) % _MODULO
            self._history.append((self._own, data))
            self._unsent += 1
            if len(self._history) == 1:
                self._idle = 0
