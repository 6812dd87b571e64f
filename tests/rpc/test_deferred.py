"""Deferred notifications: hot notification lines are handed out undecoded by
``Engine.receive`` and decoded by ``Engine.decode_deferred`` when their turn comes."""

from __future__ import annotations

from typing import Any

import orjson

from acplink import schema as s
from acplink.rpc import Engine, IncomingNotification, IncomingRequest, Violation

UPDATE = {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk",
                                        "content": {"type": "text", "text": "hi"}}}


def line(msg: dict[str, Any]) -> bytes:
    return orjson.dumps(msg) + b"\n"


def engine() -> Engine:
    e = Engine()
    validate = s.SessionNotification.__pydantic_validator__.validate_json
    e.add_fast_notification("session/update", validate)
    return e


def test_a_hot_notification_is_deferred_then_decoded_into_its_model() -> None:
    e = engine()
    assert e.fast_methods == ["session/update"]
    [item] = e.receive(line({"jsonrpc": "2.0", "method": "session/update", "params": UPDATE}))
    assert isinstance(item, bytes)  # not decoded yet
    ev = e.decode_deferred(item)
    assert isinstance(ev, IncomingNotification) and ev.typed and ev.method == "session/update"
    assert isinstance(ev.params, s.SessionNotification)
    assert ev.params.update.content.text == "hi"  # type: ignore[union-attr]


def test_other_messages_are_decoded_at_once_and_order_is_kept() -> None:
    e = engine()
    data = (line({"jsonrpc": "2.0", "method": "session/update", "params": UPDATE})
            + line({"jsonrpc": "2.0", "id": 1, "method": "fs/read_text_file", "params": {"sessionId": "s1", "path": "/x"}})
            + line({"jsonrpc": "2.0", "method": "session/update", "params": UPDATE}))
    items = e.receive(data)
    assert [type(i) for i in items] == [bytes, IncomingRequest, bytes]


def test_a_request_disguised_as_a_hot_notification_is_still_a_request() -> None:
    # same prefix, but an id after the params: the decoder refuses the shape, the general
    # path classifies it as the request it is
    e = engine()
    raw = orjson.dumps({"jsonrpc": "2.0", "method": "session/update", "params": UPDATE})[:-1] + b',"id":7}\n'
    [item] = e.receive(raw)
    ev = e.decode_deferred(item) if isinstance(item, bytes) else item
    assert isinstance(ev, IncomingRequest) and ev.id == 7 and ev.method == "session/update"


def test_params_the_model_refuses_arrive_untyped_for_the_handler_to_report() -> None:
    e = engine()
    bad = {"sessionId": 5, "update": {"sessionUpdate": "agent_message_chunk"}}
    [item] = e.receive(line({"jsonrpc": "2.0", "method": "session/update", "params": bad}))
    ev = e.decode_deferred(item) if isinstance(item, bytes) else item
    assert isinstance(ev, IncomingNotification) and not ev.typed and ev.params == bad


def test_broken_json_with_the_hot_prefix_gets_a_parse_error_reply() -> None:
    e = engine()
    [item] = e.receive(b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":}\n')
    ev = e.decode_deferred(item) if isinstance(item, bytes) else item
    assert isinstance(ev, Violation) and ev.reply is not None
    assert orjson.loads(ev.reply)["error"]["code"] == -32700


def test_framed_messages_are_decoded_whole() -> None:
    e = engine()
    ev = e.receive_message(orjson.dumps({"jsonrpc": "2.0", "method": "session/update", "params": UPDATE}))
    assert isinstance(ev, IncomingNotification) and ev.typed


def test_framed_hot_notifications_can_be_deferred_too() -> None:
    e = engine()
    item = e.receive_frame(orjson.dumps({"jsonrpc": "2.0", "method": "session/update", "params": UPDATE}))
    assert isinstance(item, bytes)
    ev = e.decode_deferred(item)
    assert isinstance(ev, IncomingNotification) and ev.typed
    assert isinstance(e.receive_frame(b'{"jsonrpc":"2.0","id":1,"method":"m"}'), IncomingRequest)


def test_the_last_unterminated_line_is_deferred_too() -> None:
    e = engine()
    assert e.receive(orjson.dumps({"jsonrpc": "2.0", "method": "session/update", "params": UPDATE})) == []
    [item] = e.receive_eof()
    assert isinstance(e.decode_deferred(item) if isinstance(item, bytes) else item, IncomingNotification)
