"""The ordered delivery as a state machine, without a peer: inputs in, decisions out.

``Delivery`` (connection/_delivery.py) does no I/O and calls nothing back: these tests feed
it what a driver would (arrivals, the consumer's turns, ended requests, a drained buffer) and
assert what it decides. The end-to-end behaviour over real transports is tested in
test_backpressure.py, test_memory.py and tests/robustness.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import acplink.connection._delivery as delivery_module
from acplink.connection._delivery import (
    END_OF_INPUT,
    HOLD,
    IDLE,
    PAUSE_READING,
    QUEUE_FULL,
    QUEUED,
    RELEASE,
    RESUME_READING,
    SETTLE,
    START,
    WATCH_WRITES,
    Cancel,
    Delivery,
    Refuse,
    Settle,
)
from acplink.errors import InternalError, RequestCancelled
from acplink.rpc.engine import IncomingNotification, IncomingRequest, IncomingResponse


def note(i: int) -> IncomingNotification:
    return IncomingNotification("session/update", {"n": i})


def req(rid: int, method: str = "fs/read_text_file") -> IncomingRequest:
    return IncomingRequest(rid, method, {})


def ended(d: Delivery, rid: int) -> Any:
    """Request ``rid`` ended while others are held: what the release then decides (the
    requests to start are handed over themselves; one decision alone, several in a list)."""
    assert d.request_ended(rid) is RELEASE
    return d.release(writing_paused=False)


def drain(d: Delivery) -> list[Any]:
    """What the consumer is handed until it has nothing left."""
    out = []
    while (item := d.take()) is not IDLE:
        out.append(item)
    return out


def test_a_response_waits_for_the_notifications_that_arrived_before_it() -> None:
    d = Delivery()
    fut, resp = object(), IncomingResponse(7, "session/prompt", {"stopReason": "end_turn"})
    assert d.response(fut, resp, None) is SETTLE  # nothing before it: settled at once
    notes = [note(i) for i in range(3)]
    for n in notes:
        assert d.enqueue(n) is QUEUED
    assert d.response(fut, resp, None) is QUEUED
    assert d.enqueue(note(3)) is QUEUED
    taken = drain(d)
    assert taken[:3] == notes and taken[3] == Settle(fut, resp, None) and taken[4].params == {"n": 3}
    assert d.idle


def test_the_consumer_busy_with_a_notification_still_holds_back_a_response() -> None:
    d = Delivery()
    d.enqueue(note(0))
    assert d.take().params == {"n": 0}  # being handled: the queue is empty, the consumer is not idle
    assert not d.idle
    assert d.response("fut", IncomingResponse(1, "m", 1), None) is QUEUED
    assert type(d.take()) is Settle and d.take() is IDLE and d.idle


def test_a_request_starts_after_the_notifications_before_it() -> None:
    d = Delivery()
    assert d.request(req(1), writing_paused=False) is START  # nothing before it
    d.enqueue(note(0))
    r2 = req(2)
    assert d.request(r2, writing_paused=False) is QUEUED
    dup = d.request(req(2), writing_paused=False)  # (the same id while the first one waits)
    assert type(dup) is Refuse and dup.id == 2 and dup.error.code == -32600
    first, second = d.take(), d.take()
    assert type(first) is IncomingNotification and second is r2  # its turn: the driver admits it
    assert d.admit(r2, writing_paused=False) is START
    assert set(d.running) == {1, 2} and d.busy == 2


def test_a_duplicate_or_one_too_many_is_refused() -> None:
    d = Delivery(max_concurrent_requests=3, max_running_requests=1)
    assert d.request(req(1), False) is START
    dup = d.request(req(1), False)
    assert type(dup) is Refuse and dup.id == 1 and dup.error.code == -32600
    assert d.request(req(2), False) is HOLD
    assert d.request(req(3), False) is HOLD
    over = d.request(req(4), False)
    assert type(over) is Refuse and isinstance(over.error, InternalError) and "limit 3" in str(over.error)


def test_the_running_limit_holds_requests_in_arrival_order_and_releases_them_as_others_end() -> None:
    d = Delivery(max_running_requests=2, long_running=frozenset({"terminal/wait_for_exit"}))
    assert [d.request(req(i), False) for i in range(4)] == [START, START, HOLD, HOLD]
    assert list(d.held) == [2, 3]
    assert d.request(req(9, "terminal/wait_for_exit"), False) is HOLD  # (behind the held ones: order kept)
    assert ended(d, 0) == req(2)  # (one decision: alone, no list)
    assert list(d.held) == [3, 9] and d.busy == 2
    # a long-running method takes no slot: it starts too, although two run
    assert ended(d, 1) == [req(3), req(9, "terminal/wait_for_exit")]
    assert not d.held and d.running[9] is True
    assert d.busy == 2 and d.request_ended(9) is None and d.busy == 2
    assert d.request(req(10, "terminal/wait_for_exit"), False) is START
    assert d.request_ended(2) is None  # (nothing held: nothing to release)
    assert d.request_ended(3) is None  # (nothing held: nothing to release)
    assert d.request_ended(10) is None  # (nothing held: nothing to release)
    assert d.busy == 0 and d.running == {} and not d.held


def test_no_request_starts_while_the_write_buffer_is_full() -> None:
    d = Delivery()
    assert d.request(req(1), writing_paused=True) is HOLD
    assert d.request(req(2), writing_paused=False) is HOLD  # (behind the held one: the driver passes False then)
    assert d.release(writing_paused=True) is WATCH_WRITES  # watch the buffer, start them when it drains
    assert d.release(writing_paused=False) == [req(1), req(2)] and not d.held


def test_reading_pauses_while_too_much_waits_for_the_consumer_and_resumes_at_half() -> None:
    d = Delivery(max_queued_notifications=10)
    assert [d.enqueue(note(i)) for i in range(11)] == [QUEUED] * 10 + [QUEUE_FULL]
    assert d.enqueue(note(11)) is QUEUED and d.reading_paused  # (paused once)
    taken = drain(d)
    assert taken.count(RESUME_READING) == 1
    at = taken.index(RESUME_READING)
    assert at == 12 - 6  # resumed before the item that leaves no more than half (5) waiting
    assert [t.params["n"] for t in taken if t is not RESUME_READING] == list(range(12))
    assert not d.reading_paused


def test_the_driver_may_append_deferred_notifications_itself() -> None:
    d = Delivery(max_queued_notifications=2)
    d.queue.extend([b'{"a":1}', b'{"a":2}', b'{"a":3}'])
    assert d.queued() is QUEUE_FULL
    assert d.take() == b'{"a":1}' and d.take() is RESUME_READING and d.take() == b'{"a":2}'


def test_bytes_read_while_requests_are_held_pause_reading_until_they_start() -> None:
    d = Delivery(max_running_requests=1, max_held_bytes=100)
    assert d.request(req(1), False) is START
    assert d.request(req(2), False) is HOLD
    assert d.read(60) is None and d.read(60) is PAUSE_READING and d.read(60) is None
    assert ended(d, 1) == [req(2), RESUME_READING]
    assert d.held_bytes == 0 and not d.held_paused


def test_reading_paused_for_both_reasons_resumes_only_when_both_are_over() -> None:
    d = Delivery(max_running_requests=1, max_held_bytes=10, max_queued_notifications=2)
    d.request(req(1), False)
    d.request(req(2), False)
    assert d.read(11) is PAUSE_READING
    for i in range(3):
        d.enqueue(note(i))
    assert d.reading_paused
    assert RESUME_READING not in drain(d) and not d.reading_paused  # (still paused for the bytes)
    assert ended(d, 1) == [req(2), RESUME_READING]


def test_cancelling_a_held_a_queued_a_running_and_an_unknown_request() -> None:
    d = Delivery(max_running_requests=1)
    d.request(req(1), False)
    d.request(req(2), False)
    d.request(req(3), False)
    out = d.cancel(2)
    assert len(out) == 1 and type(out[0]) is Refuse and out[0].id == 2
    assert isinstance(out[0].error, RequestCancelled)
    assert d.cancel(1) == [Cancel(1)]  # running: the driver cancels its task
    assert d.cancel(99) == ()
    assert ended(d, 1) == req(3)
    # queued behind a notification: refused, and skipped when its turn comes
    d.enqueue(note(0))
    r = req(4)
    assert d.request(r, False) is QUEUED
    assert type(d.cancel(4)[0]) is Refuse
    assert [type(x) for x in drain(d)] == [IncomingNotification]


def test_the_end_of_input_comes_after_what_arrived_before_it() -> None:
    d = Delivery()
    assert d.end_of_input() is END_OF_INPUT
    d = Delivery()
    d.enqueue(note(0))
    assert d.end_of_input() is QUEUED
    assert type(d.take()) is IncomingNotification and d.take() is END_OF_INPUT and d.idle


def test_nothing_held_starts_once_shut() -> None:
    d = Delivery(max_running_requests=1)
    d.request(req(1), False)
    d.request(req(2), False)
    d.shut()
    assert not d.held and d.request_ended(1) is None
    assert d.release(False) is None


def test_delivery_knows_nothing_of_the_peer_nor_of_io() -> None:
    source = Path(delivery_module.__file__).read_text()
    assert not re.search(r"\bPeer\w*\b", source)
    assert not re.search(r"^\s*(from|import)\s+(asyncio|\.peer|\.\.transports|\.\._tasks)", source, re.M)
    for call in (r"\.transport\b", r"\bspawn", r"\.tasks\b", r"\bawait\b", r"\basync\b", "run_request",
                 "reply_error", "handle_event", "mark_closed"):
        assert not re.search(call, source), call


def test_a_release_hands_one_decision_alone_several_in_order_and_none_as_none() -> None:
    d = Delivery(max_running_requests=2, max_held_bytes=10)
    assert d.request(req(1), writing_paused=True) is HOLD
    assert d.request(req(2), writing_paused=False) is HOLD
    assert d.read(11) is PAUSE_READING
    assert d.release(writing_paused=False) == [req(1), req(2), RESUME_READING]  # (in this order)
    assert d.request(req(3), False) is HOLD and d.request_ended(1) is RELEASE
    assert d.release(False) == req(3)
    assert d.request(req(4), False) is HOLD
    assert d.request(req(5, "terminal/wait_for_exit"), False) is HOLD  # (behind 4)
    assert d.release(False) is None  # (two run, 4 waits for a slot, 5 behind it)
    # nothing starts once shut, but reading paused for the held ones resumes
    d = Delivery(max_running_requests=1, max_held_bytes=10)
    d.request(req(1), False)
    d.request(req(2), False)
    assert d.read(11) is PAUSE_READING
    d.shut()
    assert d.release(False) is RESUME_READING
