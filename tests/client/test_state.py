"""SessionState: every sessionUpdate kind of the schema changes the state as expected."""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from acplink import builders as b
from acplink.client.state import SessionState
from acplink.schema import (
    AgentMessageChunk,
    ForkSessionResponse,
    LoadSessionResponse,
    NewSessionResponse,
    ResumeSessionResponse,
    SessionNotification,
    SessionUpdate,
    TextContent,
    dump,
    parse,
)


def schema_tags() -> set[str]:
    """The ``sessionUpdate`` values of every variant model of the ``SessionUpdate`` union."""
    tags: set[str] = set()

    def walk(tp: Any) -> None:
        for arg in typing.get_args(tp):
            walk(arg)
        if isinstance(tp, type) and issubclass(tp, BaseModel) and "session_update" in tp.model_fields:
            tags.add(tp.model_fields["session_update"].default)

    walk(SessionUpdate)
    return tags


def feed(state: SessionState, *updates: dict[str, Any]) -> SessionState:
    for u in updates:
        state.apply(parse(SessionUpdate, u))
    return state


def text(s: str) -> dict[str, Any]:
    return {"type": "text", "text": s}


# -- one scenario per kind: (updates, check) -------------------------------------------------


def check_user(st: SessionState) -> None:
    assert [(m.role, m.text) for m in st.messages] == [("user", "hello world")]


def check_agent(st: SessionState) -> None:
    assert [(m.role, m.message_id, m.text) for m in st.messages] == [("agent", "m1", "ab")]


def check_thought(st: SessionState) -> None:
    assert [t.text for t in st.thoughts] == ["thinking..."]
    assert st.messages == []


def check_tool_call(st: SessionState) -> None:
    tc = st.tool_calls["c1"]
    assert (tc.title, tc.kind, tc.status, tc.raw_input) == ("Read", "read", "pending", {"p": 1})


def check_tool_call_update(st: SessionState) -> None:
    tc = st.tool_calls["c1"]
    assert (tc.title, tc.kind, tc.status) == ("Read a.py", "read", "completed")
    assert tc.raw_input == {"p": 1} and tc.raw_output == "ok"
    assert [dump(c)["type"] for c in tc.content] == ["content"]
    assert st.warnings == []


def check_plan(st: SessionState) -> None:
    assert st.plan is not None and st.plan.plan_id is None
    assert [e.content for e in st.plan.entries] == ["x", "y"]
    assert st.plan.completed == 1


def check_plan_update(st: SessionState) -> None:
    assert set(st.plans) == {"p1", "p2"}
    assert st.plans["p1"].kind == "items" and [e.content for e in st.plans["p1"].entries] == ["a"]
    assert st.plans["p2"].kind == "markdown" and st.plans["p2"].markdown == "# Plan"
    assert st.plan is st.plans["p2"]


def check_plan_removed(st: SessionState) -> None:
    assert set(st.plans) == {"p1"}
    assert st.plan is st.plans["p1"]


def check_commands(st: SessionState) -> None:
    assert [c.name for c in st.available_commands] == ["web"]


def check_mode(st: SessionState) -> None:
    assert st.current_mode_id == "architect"


def check_config(st: SessionState) -> None:
    assert [dump(o)["id"] for o in st.config_options] == ["thinking"]


def check_info(st: SessionState) -> None:
    assert (st.title, st.updated_at) == ("Fix bug", "2025-05-01T10:00:00Z")


def check_usage(st: SessionState) -> None:
    assert st.usage is not None and (st.usage.used, st.usage.size) == (500, 1000)
    assert st.usage.cost is not None and st.usage.cost.amount == 0.25


def check_notice(st: SessionState) -> None:
    assert [(n.severity, n.title) for n in st.notices] == [("warning", "Rate limited")]


def check_compaction(st: SessionState) -> None:
    c = st.compactions["k1"]
    assert c.status == "completed" and c.summary_text == "short"
    assert not st.compacting


def check_compaction_chunk(st: SessionState) -> None:
    c = st.compactions["k2"]
    assert c.status == "in_progress" and c.summary_text == "ab"
    assert st.compacting


def check_subagent(st: SessionState) -> None:
    sa = st.subagents["child"]
    assert (sa.title, sa.description, sa.cwd) == ("Helper", "finds things", "/w")
    assert sa.state is not None and sa.state.state == "running"


def check_session_message(st: SessionState) -> None:
    sm = st.session_messages["sm1"]
    assert (sm.sender_session_id, sm.recipient_session_id, sm.text) == ("a", "b", "hi")


def check_session_message_chunk(st: SessionState) -> None:
    assert st.session_messages["sm2"].text == "xy"


SCENARIOS: dict[str, tuple[list[dict[str, Any]], Callable[[SessionState], None]]] = {
    "user_message_chunk": ([
        {"sessionUpdate": "user_message_chunk", "content": text("hello")},
        {"sessionUpdate": "user_message_chunk", "content": text(" world")},
    ], check_user),
    "agent_message_chunk": ([
        {"sessionUpdate": "agent_message_chunk", "content": text("a"), "messageId": "m1"},
        {"sessionUpdate": "agent_message_chunk", "content": text("b"), "messageId": "m1"},
    ], check_agent),
    "agent_thought_chunk": ([
        {"sessionUpdate": "agent_thought_chunk", "content": text("thinking")},
        {"sessionUpdate": "agent_thought_chunk", "content": text("...")},
    ], check_thought),
    "tool_call": ([
        {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read", "kind": "read", "rawInput": {"p": 1}},
    ], check_tool_call),
    "tool_call_update": ([
        {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read", "kind": "read", "rawInput": {"p": 1}},
        {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress", "title": "Read a.py"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed", "rawOutput": "ok",
         "content": [{"type": "content", "content": text("done")}]},
    ], check_tool_call_update),
    "plan": ([
        {"sessionUpdate": "plan", "entries": [{"content": "old", "priority": "low", "status": "pending"}]},
        {"sessionUpdate": "plan", "entries": [{"content": "x", "priority": "high", "status": "completed"},
                                              {"content": "y", "priority": "low", "status": "pending"}]},
    ], check_plan),
    "plan_update": ([
        {"sessionUpdate": "plan_update", "plan": {"type": "file", "planId": "p1", "uri": "file:///plan.md"}},
        {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p2", "content": "# Plan"}},
        {"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "p1", "entries": [
            {"content": "a", "priority": "medium", "status": "pending"}]}},
        {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p2", "content": "# Plan"}},
    ], check_plan_update),
    "plan_removed": ([
        {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p1", "content": "one"}},
        {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p2", "content": "two"}},
        {"sessionUpdate": "plan_removed", "planId": "p2"},
    ], check_plan_removed),
    "available_commands_update": ([
        {"sessionUpdate": "available_commands_update", "availableCommands": [{"name": "old", "description": "d"}]},
        {"sessionUpdate": "available_commands_update", "availableCommands": [
            {"name": "web", "description": "search", "input": {"hint": "q"}}]},
    ], check_commands),
    "current_mode_update": ([{"sessionUpdate": "current_mode_update", "currentModeId": "architect"}], check_mode),
    "config_option_update": ([
        {"sessionUpdate": "config_option_update", "configOptions": [
            {"type": "boolean", "id": "thinking", "name": "Thinking", "currentValue": True}]},
    ], check_config),
    "session_info_update": ([
        {"sessionUpdate": "session_info_update", "title": "Fix bug"},
        {"sessionUpdate": "session_info_update", "updatedAt": "2025-05-01T10:00:00Z"},
    ], check_info),
    "usage_update": ([
        {"sessionUpdate": "usage_update", "used": 1, "size": 1000},
        {"sessionUpdate": "usage_update", "used": 500, "size": 1000, "cost": {"amount": 0.25, "currency": "USD"}},
    ], check_usage),
    "notice": ([{"sessionUpdate": "notice", "severity": "warning", "title": "Rate limited"}], check_notice),
    "compaction_update": ([
        {"sessionUpdate": "compaction_update", "compactionId": "k1", "status": "in_progress", "error": "x"},
        {"sessionUpdate": "compaction_update", "compactionId": "k1", "status": "completed",
         "summary": [text("short")], "error": None},
    ], check_compaction),
    "compaction_summary_chunk": ([
        {"sessionUpdate": "compaction_summary_chunk", "compactionId": "k2", "content": text("a")},
        {"sessionUpdate": "compaction_summary_chunk", "compactionId": "k2", "content": text("b")},
    ], check_compaction_chunk),
    "subagent_update": ([
        {"sessionUpdate": "subagent_update", "sessionId": "child", "title": "Helper", "description": "finds things"},
        {"sessionUpdate": "subagent_update", "sessionId": "child", "cwd": "/w", "state": {"state": "running"}},
    ], check_subagent),
    "session_message": ([
        {"sessionUpdate": "session_message", "messageId": "sm1", "senderSessionId": "a"},
        {"sessionUpdate": "session_message", "messageId": "sm1", "recipientSessionId": "b",
         "content": [text("hi")]},
    ], check_session_message),
    "session_message_chunk": ([
        {"sessionUpdate": "session_message_chunk", "messageId": "sm2", "content": text("x")},
        {"sessionUpdate": "session_message_chunk", "messageId": "sm2", "content": text("y")},
    ], check_session_message_chunk),
}


def test_every_schema_kind_has_a_scenario() -> None:
    tags = schema_tags()
    assert len(tags) >= 19
    assert tags == set(SCENARIOS)


@pytest.mark.parametrize("kind", sorted(SCENARIOS))
def test_kind(kind: str) -> None:
    updates, check = SCENARIOS[kind]
    assert all(u["sessionUpdate"] == kind for u in updates[-1:])
    st = feed(SessionState(), *updates)
    check(st)
    assert st.updates_seen == len(updates)
    assert st.unknown == []
    assert st.summary()  # never fails, always says something


def test_unknown_kinds_land_in_unknown() -> None:
    st = feed(SessionState(), {"sessionUpdate": "future_thing", "x": 1}, {"sessionUpdate": "_vendor", "y": 2})
    assert [u.tag for u in st.unknown] == ["future_thing", "_vendor"]
    assert st.unknown[0].raw == {"sessionUpdate": "future_thing", "x": 1}
    assert st.updates_seen == 2
    assert "2 unknown updates" in st.summary()


def test_rejects_non_updates() -> None:
    st = SessionState()
    with pytest.raises(TypeError):
        st.apply(b.text("x"))  # type: ignore[arg-type]
    assert st.updates_seen == 0


def test_accepts_a_whole_notification() -> None:
    st = SessionState()
    st.apply(parse(SessionNotification, {"sessionId": "s", "update": {
        "sessionUpdate": "agent_message_chunk", "content": text("x")}}))
    assert st.messages[0].text == "x"


# -- conversation details ----------------------------------------------------------------------


def test_message_grouping_without_ids() -> None:
    st = SessionState()
    updates: list[Any] = [b.user_text("q1"), b.agent_text("a"), b.agent_text("b"), b.user_text("q2"), b.agent_text("c")]
    for u in updates:
        st.apply(u)
    assert [(m.role, m.text) for m in st.messages] == [("user", "q1"), ("agent", "ab"), ("user", "q2"),
                                                        ("agent", "c")]
    assert st.last_agent_message is not None and st.last_agent_message.text == "c"
    assert st.agent_text == "ab\n\nc"


def test_message_ids_group_chunks_even_when_interleaved() -> None:
    st = SessionState()
    updates: list[Any] = [b.agent_text("a", message_id="m1"), b.agent_text("x", message_id="m2"), b.agent_text("b", message_id="m1")]
    for u in updates:
        st.apply(u)
    assert [(m.message_id, m.text) for m in st.messages] == [("m1", "ab"), ("m2", "x")]
    st.apply(b.agent_text("c"))  # no id: continues the latest agent message
    assert st.messages[-1].text == "xc"


def test_thoughts_split_by_turn_and_keep_non_text_blocks() -> None:
    st = SessionState()
    updates: list[Any] = [b.user_text("q1"), b.thought("t1"), b.agent_text("a"), b.thought("t2"), b.user_text("q2"),
              b.thought("t3")]
    for u in updates:
        st.apply(u)
    assert [(t.text, t.turn) for t in st.thoughts] == [("t1t2", 1), ("t3", 2)]
    st.apply(AgentMessageChunk(content=b.image(b"x", mime_type="image/png")))
    assert st.messages[-1].role == "agent" and st.messages[-1].text == ""
    assert not isinstance(st.messages[-1].blocks[0], TextContent)


def test_tool_call_replace_and_unknown_update() -> None:
    st = SessionState()
    st.apply(b.tool_call("c1", title="First", kind="edit", content=["x"], locations=["/a"]))
    st.apply(b.tool_call_update("c1", locations=["/b"]))
    assert [loc.path for loc in st.tool_calls["c1"].locations] == ["/b"]
    assert [dump(c)["type"] for c in st.tool_calls["c1"].content] == ["content"]
    st.apply(b.tool_call("c1", title="Second"))  # tool_call replaces
    tc = st.tool_calls["c1"]
    assert (tc.title, tc.kind, tc.content, tc.locations) == ("Second", "other", [], [])
    st.apply(b.tool_call_update("ghost", status="failed"))
    assert st.tool_calls["ghost"].status == "failed"
    assert len(st.warnings) == 1 and "ghost" in st.warnings[0]
    assert st.tool_calls["ghost"].done


def test_plan_removed_falls_back_and_unknown_plan_removal_warns() -> None:
    st = SessionState()
    st.apply(b.plan(["legacy"]))
    feed(st, {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p", "content": "m"}})
    assert st.plan is st.plans["p"]
    feed(st, {"sessionUpdate": "plan_removed", "planId": "p"})
    assert st.plan is not None and st.plan.plan_id is None and st.plan.entries[0].content == "legacy"
    feed(st, {"sessionUpdate": "plan_removed", "planId": "nope"})
    assert any("nope" in w for w in st.warnings)


def test_plan_update_of_unknown_content_type_is_kept_raw() -> None:
    st = feed(SessionState(), {"sessionUpdate": "plan_update", "plan": {"type": "diagram", "planId": "d", "svg": "<>"}})
    assert st.plans["d"].kind == "unknown" and st.plans["d"].raw == {"type": "diagram", "planId": "d", "svg": "<>"}


def test_patch_semantics_null_clears_omission_keeps() -> None:
    st = feed(SessionState(), {"sessionUpdate": "session_info_update", "title": "T", "updatedAt": "now"},
              {"sessionUpdate": "session_info_update", "title": None})
    assert (st.title, st.updated_at) == (None, "now")
    feed(st, {"sessionUpdate": "subagent_update", "sessionId": "c", "title": "A", "description": "D"},
         {"sessionUpdate": "subagent_update", "sessionId": "c", "description": None})
    assert (st.subagents["c"].title, st.subagents["c"].description) == ("A", None)
    feed(st, {"sessionUpdate": "session_message", "messageId": "m", "content": [text("x")], "senderSessionId": "s"},
         {"sessionUpdate": "session_message", "messageId": "m", "content": []})
    assert (st.session_messages["m"].content, st.session_messages["m"].sender_session_id) == ([], "s")
    feed(st, {"sessionUpdate": "compaction_update", "compactionId": "k", "status": "failed", "error": "boom",
              "summary": [text("s")]},
         {"sessionUpdate": "compaction_update", "compactionId": "k", "status": "failed"})
    assert (st.compactions["k"].error, st.compactions["k"].summary_text) == ("boom", "s")


SETUP = {
    "modes": {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]},
    "configOptions": [{"type": "select", "id": "model", "name": "Model", "currentValue": "fast",
                       "options": [{"value": "fast", "name": "Fast"}]}],
    "models": {"currentModelId": "m1", "availableModels": [{"modelId": "m1", "name": "M1"}]},
}


@pytest.mark.parametrize("tp", [NewSessionResponse, LoadSessionResponse, ResumeSessionResponse, ForkSessionResponse])
def test_apply_session_setup(tp: Any) -> None:
    data = dict(SETUP)
    if tp in (NewSessionResponse, ForkSessionResponse):
        data["sessionId"] = "sess1"
    st = SessionState()
    st.apply_session_setup(parse(tp, data))
    assert st.current_mode_id == "ask" and [m.id for m in st.available_modes] == ["ask", "code"]
    assert st.current_mode is not None and st.current_mode.name == "Ask"
    assert [dump(o)["id"] for o in st.config_options] == ["model"]
    assert st.current_model_id == "m1" and [m.name for m in st.available_models] == ["M1"]
    assert st.session_id == ("sess1" if "sessionId" in data else None)
    st.apply(b.mode_update("code"))
    assert st.current_mode_id == "code"
    summary = st.summary()
    assert "mode code" in summary and "model m1" in summary


def test_summary_mentions_the_essentials() -> None:
    st = SessionState()
    updates: list[Any] = [b.session_info(title="Refactor"), b.user_text("go"), b.agent_text("ok"),
              b.tool_call("c", title="t", status="completed"), b.plan([b.plan_entry("a", status="completed"), "b"]),
              b.usage_update(used=10, size=100)]
    for u in updates:
        st.apply(u)
    s = st.summary()
    for part in ("'Refactor'", "1 user / 1 agent messages", "1 tool calls (1 done)", "plan 1/2 done",
                 "context 10/100 tokens"):
        assert part in s
    assert "SessionState" in repr(st)


def test_summary_counts_failed_tool_calls_apart() -> None:
    st = SessionState()
    for u in (b.tool_call("a", title="t", status="completed"), b.tool_call("b", title="t", status="failed"),
              b.tool_call("c", title="t", status="in_progress")):
        st.apply(u)
    assert "3 tool calls (1 done, 1 failed, 1 unfinished)" in st.summary()
    assert "3 tool calls (1 done, 1 failed, 1 cancelled)" in st.summary(cancelled={"c"})
