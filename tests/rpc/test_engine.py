"""The JSON-RPC engine (sans-I/O, no event loop): every bad input becomes an event, never a crash."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from acplink.errors import (
    InternalError,
    InvalidRequest,
    MessageTooLarge,
    MethodNotFound,
    UsageError,
)
from acplink.rpc import Engine, IncomingNotification, IncomingRequest, IncomingResponse, Violation


def one(events: list[Any]) -> Any:
    assert len(events) == 1, events
    return events[0]


def reply_of(ev: Any) -> dict[str, Any]:
    assert isinstance(ev, Violation) and ev.reply is not None, ev
    msg = orjson.loads(ev.reply)
    assert ev.reply.endswith(b"\n") and msg["jsonrpc"] == "2.0"
    return msg  # type: ignore[no-any-return]


# -- well-formed traffic -------------------------------------------------------------------------

def test_request_notification_and_response_roundtrip() -> None:
    e = Engine()
    req = one(e.receive(b'{"jsonrpc":"2.0","id":"a","method":"m","params":{"x":1}}\n'))
    assert req == IncomingRequest("a", "m", {"x": 1})
    note = one(e.receive(b'{"jsonrpc":"2.0","method":"n"}\n'))
    assert note == IncomingNotification("n", None)
    rid, data = e.request("session/new", b'{"cwd":"/"}')
    assert orjson.loads(data) == {"jsonrpc": "2.0", "id": rid, "method": "session/new", "params": {"cwd": "/"}}
    assert e.pending == {rid: "session/new"}
    resp = one(e.receive(b'{"jsonrpc":"2.0","id":%d,"result":{"sessionId":"s"}}\n' % rid))
    assert resp == IncomingResponse(rid, "session/new", result={"sessionId": "s"})
    assert e.pending == {}
    # the same id again is no longer pending
    again = one(e.receive(b'{"jsonrpc":"2.0","id":%d,"result":{}}\n' % rid))
    assert isinstance(again, Violation) and "unknown request id" in again.message and again.reply is None


def test_error_response_maps_to_exception_class() -> None:
    e = Engine()
    rid, _ = e.request("x", None)
    ev = one(e.receive(b'{"jsonrpc":"2.0","id":%d,"error":{"code":-32601,"message":"nope","data":{"m":1}}}\n'
                       % rid))
    assert isinstance(ev, IncomingResponse) and isinstance(ev.error, MethodNotFound)
    assert ev.error.message == "nope" and ev.error.data == {"m": 1}


def test_junk_error_object_still_fails_the_call() -> None:
    e = Engine()
    rid, _ = e.request("x", None)
    ev = one(e.receive(b'{"jsonrpc":"2.0","id":%d,"error":"boom"}\n' % rid))
    assert isinstance(ev, IncomingResponse) and isinstance(ev.error, InternalError)


def test_extension_method_names_untouched() -> None:
    e = Engine()
    ev = one(e.receive(b'{"jsonrpc":"2.0","id":1,"method":"_acme/x","params":{"_meta":{"k":1}}}\n'))
    assert ev == IncomingRequest(1, "_acme/x", {"_meta": {"k": 1}})


# -- malformed input -----------------------------------------------------------------------------

def test_invalid_json_is_parse_error_with_null_id() -> None:
    e = Engine()
    msg = reply_of(one(e.receive(b'{"jsonrpc":"2.0","id":1,"method":\n')))
    assert msg["id"] is None and msg["error"]["code"] == -32700
    assert "Parse error" in msg["error"]["message"]
    # the engine keeps working
    assert isinstance(one(e.receive(b'{"jsonrpc":"2.0","id":2,"method":"m"}\n')), IncomingRequest)


@pytest.mark.parametrize(("line", "fragment"), [
    (b'[{"jsonrpc":"2.0","id":1,"method":"m"}]', "batch"),
    (b"[]", "batch"),
    (b"42", "JSON object"),
    (b'"text"', "JSON object"),
    (b"null", "JSON object"),
    (b"true", "JSON object"),
])
def test_batch_and_scalars_are_invalid_request(line: bytes, fragment: str) -> None:
    msg = reply_of(one(Engine().receive(line + b"\n")))
    assert msg["id"] is None and msg["error"]["code"] == -32600
    assert fragment in msg["error"]["message"]


@pytest.mark.parametrize(("msg", "reply_id", "fragment"), [
    ({"jsonrpc": "2.0", "id": 3, "method": 5}, 3, "method must be a string"),
    ({"jsonrpc": "2.0", "id": None, "method": "m"}, None, "request id"),
    ({"jsonrpc": "2.0", "id": 1.5, "method": "m"}, None, "request id"),
    ({"jsonrpc": "2.0", "id": True, "method": "m"}, None, "request id"),
    ({"jsonrpc": "2.0", "id": [1], "method": "m"}, None, "request id"),
    ({"jsonrpc": "2.0", "id": 4}, 4, "not a request"),
    ({"jsonrpc": "2.0"}, None, "not a request"),
    ({}, None, "jsonrpc"),
])
def test_invalid_shapes_get_invalid_request(msg: dict[str, Any], reply_id: Any, fragment: str) -> None:
    reply = reply_of(one(Engine().receive(orjson.dumps(msg) + b"\n")))
    assert reply["id"] == reply_id and reply["error"]["code"] == -32600
    assert fragment in reply["error"]["message"]


def test_responses_with_bad_or_unknown_ids_are_ignored_without_reply() -> None:
    e = Engine()
    for line in (b'{"jsonrpc":"2.0","id":99,"result":1}', b'{"jsonrpc":"2.0","id":null,"result":1}',
                 b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}'):
        ev = one(e.receive(line + b"\n"))
        assert isinstance(ev, Violation) and ev.reply is None and ev.pending_id is None


def test_noise_is_skipped_only_when_asked() -> None:
    ev = one(Engine(skip_noise=True).receive(b"Loading weights...\n"))
    assert isinstance(ev, Violation) and ev.noise and ev.reply is None and "Loading" in ev.message
    # a line that starts like JSON is still answered even in skip_noise mode
    assert reply_of(one(Engine(skip_noise=True).receive(b"{oops\n")))["error"]["code"] == -32700
    assert reply_of(one(Engine().receive(b"Loading weights...\n")))["error"]["code"] == -32700


def test_deep_nesting_and_huge_numbers() -> None:
    e = Engine()
    deep = reply_of(one(e.receive(b"[" * 100_000 + b"]" * 100_000 + b"\n")))
    assert deep["error"]["code"] in (-32700, -32600)
    deep_obj = reply_of(one(e.receive(b'{"a":' * 5000 + b"1" + b"}" * 5000 + b"\n")))
    assert deep_obj["error"]["code"] in (-32700, -32600)
    big_id = reply_of(one(e.receive(b'{"jsonrpc":"2.0","id":' + b"9" * 400 + b',"method":"m"}\n')))
    assert big_id["id"] is None and big_id["error"]["code"] in (-32700, -32600)
    inf = reply_of(one(e.receive(b'{"jsonrpc":"2.0","id":1,"method":"m","params":1e999}\n')))
    assert inf["error"]["code"] == -32700


def test_invalid_utf8_is_parse_error() -> None:
    msg = reply_of(one(Engine().receive(b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}\n')))
    assert msg["error"]["code"] == -32700 and msg["id"] is None


# -- size limits ---------------------------------------------------------------------------------

def test_outgoing_over_limit_raises_locally_and_is_not_pending() -> None:
    e = Engine(max_message_size=100)
    with pytest.raises(MessageTooLarge) as info:
        e.request("m", orjson.dumps("x" * 200))
    assert info.value.direction == "outgoing" and info.value.limit == 100
    assert e.pending == {}
    with pytest.raises(MessageTooLarge):
        e.notification("m", orjson.dumps("x" * 200))
    with pytest.raises(MessageTooLarge):
        e.result(1, orjson.dumps("x" * 200))
    rid, _ = e.request("m", b"{}")  # still usable
    assert e.pending == {rid: "m"}


def test_too_many_pending_is_a_usage_error() -> None:
    e = Engine(max_pending=2)
    e.request("a", None)
    e.request("b", None)
    with pytest.raises(UsageError):
        e.request("c", None)


def test_oversized_request_is_answered_with_its_id() -> None:
    e = Engine(max_message_size=1000)
    line = b'{"jsonrpc":"2.0","id":"req-7","method":"session/prompt","params":{"t":"' + b"x" * 50_000 + b'"}}\n'
    ev = one(e.receive(line))
    msg = reply_of(ev)
    assert msg["id"] == "req-7" and msg["error"]["code"] == -32600
    assert "exceeds the limit" in msg["error"]["message"] and msg["error"]["data"]["limit"] == 1000


def test_oversized_request_with_id_at_the_end() -> None:
    e = Engine(max_message_size=1000)
    line = (b'{"jsonrpc":"2.0","method":"m","params":{"items":[{"id":1},{"t":"' + b"x" * 50_000
            + b'"},{"id":2}]},"id":42}\n')
    assert reply_of(one(e.receive(line)))["id"] == 42


def test_oversized_notification_with_nested_ids_gets_no_reply() -> None:
    e = Engine(max_message_size=1000)
    line = (b'{"jsonrpc":"2.0","method":"session/update","params":{"id":1,"t":"' + b"x" * 50_000
            + b'","more":{"id":2}}}\n')
    ev = one(e.receive(line))
    assert isinstance(ev, Violation) and ev.reply is None and ev.pending_id is None


def test_oversized_response_fails_only_its_pending_call() -> None:
    e = Engine(max_message_size=1000)
    rid, _ = e.request("fs/read_text_file", None)
    other, _ = e.request("x", None)
    line = b'{"jsonrpc":"2.0","id":%d,"result":{"method":"not-a-request","content":"%b"}}\n' % (rid, b"x" * 5000)
    ev = one(e.receive(line))
    assert isinstance(ev, Violation) and ev.reply is None
    assert ev.pending_id == rid and isinstance(ev.error, MessageTooLarge) and "exceeds the limit" in str(ev.error)
    assert e.pending == {other: "x"}


@pytest.mark.parametrize("bad_id", [b'"\\uZZZZ"', b'"\xff\xfe"', b"9" * 300, b"1e5", b"-"])
def test_oversized_with_unparsable_id_is_dropped_without_crash(bad_id: bytes) -> None:
    e = Engine(max_message_size=100)
    line = b'{"jsonrpc":"2.0","id":' + bad_id + b',"method":"m","params":"' + b"a" * 300 + b'"}\n'
    ev = one(e.receive(line))
    assert isinstance(ev, Violation) and "exceeds the limit" in ev.message
    assert ev.reply is None  # no valid id to answer: nothing is sent (and nothing crashed)
    assert ev.pending_id is None


def test_receive_message_for_framed_transports() -> None:
    e = Engine(max_message_size=100)
    assert isinstance(e.receive_message(b'{"jsonrpc":"2.0","method":"n"}'), IncomingNotification)
    big = b'{"jsonrpc":"2.0","id":5,"method":"m","params":"' + b"a" * 300 + b'"}'
    assert reply_of(e.receive_message(big))["id"] == 5


# -- properties ----------------------------------------------------------------------------------

EVENT_TYPES = (IncomingRequest, IncomingNotification, IncomingResponse, Violation)


def check_events(events: list[Any]) -> None:
    for ev in events:
        assert isinstance(ev, EVENT_TYPES)
        if isinstance(ev, Violation) and ev.reply is not None:
            msg = reply_of(ev)
            assert msg["error"]["code"] in (-32700, -32600)
            assert msg["id"] is None or type(msg["id"]) in (int, str)


@given(chunks=st.lists(st.binary(max_size=300), max_size=20), limit=st.integers(min_value=40, max_value=400),
       skip_noise=st.booleans())
@settings(max_examples=200, deadline=None)
def test_random_bytes_never_raise(chunks: list[bytes], limit: int, skip_noise: bool) -> None:
    e = Engine(max_message_size=limit, skip_noise=skip_noise)
    e.request("m", None)
    for c in chunks:
        check_events(e.receive(c))
    check_events(e.receive_eof())


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
messages = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0")},
    optional={"id": st.integers(-(2**63), 2**64 - 1) | st.text(max_size=10) | st.none(),
              "method": st.text(max_size=20) | st.integers(), "params": json_values,
              "result": json_values, "error": json_values},
)


@given(msg=messages, cut=st.integers(min_value=0), junk=st.binary(max_size=4), limit=st.integers(40, 2000))
@settings(max_examples=200, deadline=None)
def test_mangled_messages_never_raise(msg: dict[str, Any], cut: int, junk: bytes, limit: int) -> None:
    data = json.dumps(msg).encode()  # json, not orjson: integers of any size
    e = Engine(max_message_size=limit)
    e.request("m", None)
    e.request("m", None)
    # whole, truncated, and with junk (invalid UTF-8 etc.) spliced in
    check_events(e.receive(data + b"\n"))
    pos = cut % (len(data) + 1)
    check_events(e.receive(data[:pos] + b"\n"))
    check_events(e.receive(data[:pos] + junk + data[pos:] + b"\n"))


@given(msg=messages)
@settings(max_examples=150, deadline=None)
def test_truncated_message_is_parse_error(msg: dict[str, Any]) -> None:
    data = json.dumps(msg).encode()
    ev = one(Engine().receive(data[:-1] + b"\n"))
    assert reply_of(ev)["error"]["code"] == -32700


@given(depth=st.integers(min_value=1, max_value=3000), opener=st.sampled_from([b"[", b'{"a":']))
@settings(max_examples=60, deadline=None)
def test_nesting_of_any_depth_never_raises(depth: int, opener: bytes) -> None:
    closer = b"]" if opener == b"[" else b"}"
    body = opener * depth + b"0" + closer * depth
    check_events(Engine().receive(b'{"jsonrpc":"2.0","id":1,"method":"m","params":' + body + b"}\n"))


@given(digits=st.integers(min_value=1, max_value=5000), sign=st.sampled_from([b"", b"-"]),
       where=st.sampled_from(["id", "params"]))
@settings(max_examples=60, deadline=None)
def test_huge_numbers_never_raise(digits: int, sign: bytes, where: str) -> None:
    n = sign + b"7" * digits
    line = (b'{"jsonrpc":"2.0","id":%b,"method":"m"}' % n if where == "id"
            else b'{"jsonrpc":"2.0","id":1,"method":"m","params":[%b]}' % n)
    events = Engine().receive(line + b"\n")
    check_events(events)
    ev = one(events)
    if isinstance(ev, IncomingRequest):
        assert type(ev.id) is int


@given(rid=st.integers(-(2**53), 2**53) | st.text(min_size=1, max_size=30).filter(lambda s: len(s.encode()) < 150),
       size=st.integers(min_value=1, max_value=30_000), id_first=st.booleans(),
       cuts=st.lists(st.integers(min_value=0), max_size=10), limit=st.integers(min_value=64, max_value=5000))
@settings(max_examples=200, deadline=None)
def test_oversized_requests_are_always_answered_with_their_id(rid: int | str, size: int, id_first: bool,
                                                             cuts: list[int], limit: int) -> None:
    body = {"jsonrpc": "2.0", "method": "session/prompt", "params": {"text": "x" * size, "id": "nested"}}
    msg = {"id": rid, **body} if id_first else {**body, "id": rid}
    data = orjson.dumps(msg) + b"\n"
    assume(len(data) - 1 > limit)
    e = Engine(max_message_size=limit)
    events: list[Any] = []
    points = sorted({c % len(data) for c in cuts})
    prev = 0
    for p in [*points, len(data)]:
        events += e.receive(data[prev:p])
        prev = p
        assert e.decoder.buffered <= limit
    reply = reply_of(one(events))
    assert reply["id"] == rid and reply["error"]["code"] == -32600
    assert isinstance(InvalidRequest.from_wire(reply["error"]), InvalidRequest)
    # the stream continues after the discarded message
    assert isinstance(one(e.receive(b'{"jsonrpc":"2.0","method":"n"}\n')), IncomingNotification)


def test_forget_says_whether_the_request_was_still_awaited() -> None:
    e = Engine()
    rid, _ = e.request("m", None)
    other, _ = e.request("m", None)
    assert e.awaited == 2
    assert e.forget(rid) is True  # pending: forgotten now
    assert e.awaited == 1 and rid not in e.pending and other in e.pending
    assert e.forget(rid) is False  # forgotten already
    assert e.forget(12345) is False and e.forget("unknown") is False  # never sent
    assert one(e.receive(b'{"jsonrpc":"2.0","id":%d,"result":{}}\n' % other)) == IncomingResponse(other, "m", result={})
    assert e.forget(other) is False  # answered already
    assert e.awaited == 0
    # the forgotten request's late answer is still recognised (the connection drops it quietly)...
    assert one(e.receive(b'{"jsonrpc":"2.0","id":%d,"result":{}}\n' % rid)) == IncomingResponse(rid, "m", result={})
    # ...an answer to an id forget() did not know is not
    late = one(e.receive(b'{"jsonrpc":"2.0","id":12345,"result":{}}\n'))
    assert isinstance(late, Violation) and "unknown request id" in late.message
