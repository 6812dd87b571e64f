"""The ``jsonrpc`` member must be exactly "2.0" (else -32600), and a response-shaped message
is never answered, whatever is wrong with it (answering one can loop between two peers)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from acplink import ProtocolError
from acplink.rpc import Engine, IncomingNotification, IncomingRequest, IncomingResponse, Violation

BAD = [{}, {"jsonrpc": "1.0"}, {"jsonrpc": 2.0}, {"jsonrpc": "2"}, {"jsonrpc": None}, {"jsonrpc": ["2.0"]}]


def feed(e: Engine, msg: dict[str, Any]) -> Any:
    events = e.receive(orjson.dumps(msg) + b"\n")
    assert len(events) == 1
    ev = events[0]
    return e.decode_deferred(ev) if isinstance(ev, bytes) else ev


def reply_of(ev: Any) -> dict[str, Any]:
    assert isinstance(ev, Violation) and ev.reply is not None, ev
    return orjson.loads(ev.reply)  # type: ignore[no-any-return]


@pytest.mark.parametrize("version", BAD)
def test_a_request_with_a_bad_jsonrpc_member_gets_invalid_request_with_its_id(version: dict[str, Any]) -> None:
    for rid in (7, "seven"):
        reply = reply_of(feed(Engine(), {**version, "id": rid, "method": "initialize", "params": {}}))
        assert reply["id"] == rid and reply["error"]["code"] == -32600
        assert "jsonrpc" in reply["error"]["message"]
    # an unusable id is answered with id null
    reply = reply_of(feed(Engine(), {**version, "id": 1.5, "method": "m"}))
    assert reply["id"] is None and reply["error"]["code"] == -32600


@pytest.mark.parametrize("version", BAD)
def test_a_notification_with_a_bad_jsonrpc_member_gets_invalid_request(version: dict[str, Any]) -> None:
    e = Engine()
    e.add_fast_notification("session/update", orjson.loads)  # (the fast path checks it too)
    for method in ("session/update", "session/cancel"):
        reply = reply_of(feed(e, {**version, "method": method, "params": {"sessionId": "s"}}))
        assert reply["id"] is None and reply["error"]["code"] == -32600


def test_a_valid_jsonrpc_member_is_accepted() -> None:
    e = Engine()
    assert isinstance(feed(e, {"jsonrpc": "2.0", "id": 1, "method": "m"}), IncomingRequest)
    assert isinstance(feed(e, {"jsonrpc": "2.0", "method": "n"}), IncomingNotification)
    rid, _ = e.request("x", None)
    assert isinstance(feed(e, {"jsonrpc": "2.0", "id": rid, "result": {}}), IncomingResponse)


@pytest.mark.parametrize("msg", [
    {"jsonrpc": "2.0", "result": 1},
    {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid request"}},
    {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid request"}},
    {"jsonrpc": "2.0", "id": {"a": 1}, "result": 1},
    {"jsonrpc": "2.0", "id": 1.5, "error": "boom"},
    {"result": None},
    {"error": {"code": -32600, "message": "Invalid request"}},
    {"jsonrpc": "1.0", "id": 12345, "result": 1},  # (no such pending request)
])
def test_a_response_shaped_message_is_never_answered(msg: dict[str, Any]) -> None:
    ev = feed(Engine(), msg)
    assert isinstance(ev, Violation) and ev.reply is None and ev.pending_id is None


def test_two_engines_answering_each_other_do_not_loop() -> None:
    # a's invalid request is answered by b; b's answer (an error with id null) must not be
    # answered by a, or the two would answer each other forever
    a, b = Engine(), Engine()
    reply = reply_of(feed(b, {"id": 1, "method": "m"}))
    assert reply["error"]["code"] == -32600
    assert feed(a, reply).reply is None
    reply = reply_of(feed(b, {"jsonrpc": "2.0", "method": 5}))
    assert reply["id"] is None
    assert feed(a, reply).reply is None


@pytest.mark.parametrize("version", BAD)
def test_a_response_with_a_bad_jsonrpc_member_fails_its_call_unanswered(version: dict[str, Any]) -> None:
    e = Engine()
    rid, _ = e.request("session/new", b"{}")
    ev = feed(e, {**version, "id": rid, "result": {"sessionId": "s"}})
    assert isinstance(ev, Violation) and ev.reply is None and ev.pending_id == rid
    assert isinstance(ev.error, ProtocolError) and "session/new" in str(ev.error)
    assert rid not in e.pending
