"""Shared-memory protocol between the loop and the I/O process (docs/cycle.md)."""
from __future__ import annotations

import numpy as np
import pytest

from controller.daemon.shm import (H, Layout, SharedBlock, begin_record, command_done, end_record,
                            next_command, post_command, post_event, post_reply, read_events,
                            read_record, take_replies)
from controller.daemon.telemetry import RecordLayout


@pytest.fixture
def block():
    rec = RecordLayout(4)
    b = SharedBlock(Layout(4, 6, rec.size, mailbox_slots=4, reply_slots=4, ring_slots=8,
                           event_slots=4, traj_samples=10), create=True)
    yield b
    b.close()


def test_mailbox_is_bounded_and_ordered(block):
    for token in range(4):
        assert post_command(block, token, 7, np.array([float(token)]))
    assert not post_command(block, 99, 7)          # full: the caller replies "busy"
    for token in range(4):
        slot = next_command(block)
        assert int(slot[0]) == token and slot[3] == token
        command_done(block)
    assert next_command(block) is None


def test_attach_by_name_sees_the_same_memory(block):
    other = SharedBlock(block.layout, name=block.name)
    post_command(block, 5, 2)
    assert int(next_command(other)[0]) == 5
    post_reply(other, 5, False, 7)
    assert take_replies(block) == [(5, False, 7, 0.0)]
    other.close()


def test_ring_detects_overwritten_and_torn_records(block):
    out = np.zeros(block.ring.shape[1] - 1)
    for i in range(10):                            # 8 slots: records 0 and 1 are overwritten
        begin_record(block)[:] = i
        end_record(block)
    assert not read_record(block, 0, out)
    assert read_record(block, 9, out) and out[0] == 9
    rec = begin_record(block)                      # a record being written reads as torn
    rec[:] = -1
    assert not read_record(block, int(block.header[H.RING_COUNT]), out)


def test_events_count_what_a_slow_reader_lost(block):
    for i in range(6):
        post_event(block, i, 1, i)
    events, nxt, dropped = read_events(block, 0)
    assert dropped == 2 and nxt == 6
    assert [e[0] for e in events] == [2, 3, 4, 5]


def test_wrong_block_is_refused(block):
    block.header[H.MAGIC] = 0
    with pytest.raises(ValueError, match="not a bipd block"):
        SharedBlock(block.layout, name=block.name)
    block.header[H.MAGIC] = 0x42495044
