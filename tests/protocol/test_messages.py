"""One message classifier and one id matcher (protocol/messages.py), used everywhere."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from acplink.protocol import messages, state
from acplink.protocol.messages import CallMatcher, message_kind, usable_id
from acplink.rpc import engine
from acplink.tools import analysis, trace, validate
from acplink.tools.trace import TraceWriter


def test_every_layer_uses_the_one_classifier_and_matcher() -> None:
    assert engine.message_kind is trace.message_kind is validate.message_kind is analysis.message_kind
    assert state.message_kind is messages.message_kind
    # (the analyser's matcher is the state machine's)
    assert trace.CallMatcher is state.CallMatcher is messages.CallMatcher
    assert engine.usable_id is validate.usable_id is messages.usable_id


@pytest.mark.parametrize(("msg", "kind"), [
    ({"jsonrpc": "2.0", "id": 1, "method": "a"}, "request"),
    ({"jsonrpc": "2.0", "id": None, "method": "a"}, "request"),  # shaped like one (its id is checked apart)
    ({"jsonrpc": "2.0", "method": "a"}, "notification"),
    ({"jsonrpc": "2.0", "id": 1, "result": None}, "response"),
    ({"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "x"}}, "response"),
    ({"jsonrpc": "2.0", "method": None, "id": 1, "result": {}}, "response"),
    ({"jsonrpc": "2.0", "result": {}}, "response"),  # (no id: the caller reports it)
    ({"jsonrpc": "2.0", "id": 1}, "invalid"),
    ({"jsonrpc": "2.0", "method": 5, "id": 1}, "invalid"),
    ({}, "invalid"),
    ([{"jsonrpc": "2.0", "method": "a"}], "invalid"),
    ("text", "invalid"),
])
def test_message_kind(msg: Any, kind: str) -> None:
    assert message_kind(msg) == kind


def test_usable_id() -> None:
    assert usable_id(1) and usable_id("a")
    assert not any(usable_id(x) for x in (None, 1.5, True, [1], {"a": 1}))


def test_call_matcher_pairs_a_response_with_the_request_of_the_other_direction() -> None:
    calls: CallMatcher[str] = CallMatcher()
    calls.sent("c2a", 1, "session/prompt")
    calls.sent("a2c", 1, "fs/read_text_file")  # the same id the other way: another call
    calls.sent("c2a", None, "ignored")  # no usable id: never pending
    assert calls.peek("a2c", 1) == "session/prompt"
    assert calls.answer("c2a", 1) == "fs/read_text_file"
    assert calls.answer("c2a", 1) is None and calls.answered("c2a", 1)  # a second answer
    assert not calls.answered("a2c", 1)
    assert [(d, rid, m) for d, rid, m in calls.unanswered()] == [("c2a", 1, "session/prompt")]
    assert calls.answer("a2c", 1) == "session/prompt"
    assert list(calls.unanswered()) == [] and calls.answer("a2c", None) is None


def test_the_trace_writer_names_responses_by_their_request() -> None:
    seen: list[dict[str, Any]] = []
    writer = TraceWriter(listeners=[seen.append])
    for d, m in (("c2a", {"id": 7, "method": "session/new", "params": {"cwd": "/w", "mcpServers": []}}),
                 ("a2c", {"id": 7, "method": "fs/read_text_file", "params": {"sessionId": "s", "path": "/a"}}),
                 ("c2a", {"id": 7, "result": {"content": "x"}}),
                 ("a2c", {"id": 7, "result": {"sessionId": "s"}}),
                 ("a2c", {"id": 7})):
        writer.feed(d, orjson.dumps({"jsonrpc": "2.0", **m}) + b"\n")
    msgs = [r for r in seen if r["type"] == "message"]
    assert [(r["kind"], r.get("method")) for r in msgs] == [
        ("request", "session/new"), ("request", "fs/read_text_file"), ("response", "fs/read_text_file"),
        ("response", "session/new"), ("invalid", None)]
    assert msgs[2].get("violations") is None and msgs[3].get("violations") is None  # results checked by method
    assert msgs[4]["violations"][0]["message"] == "a response has exactly one of result and error"
