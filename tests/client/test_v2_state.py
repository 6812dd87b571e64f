"""The v2 reducer (``acplink.protocol.v2.client_state``): every v2 update kind, upserts by id, and the
patch rule of each patch field (omitted: unchanged, ``null``: cleared, a value: replaced)."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest

from acplink.protocol.v2 import UPDATE_KINDS
from acplink.protocol.v2.client_state import V2SessionState, state_of, stop_reason_of
from acplink.schema import parse
from acplink.schema import v2 as m


def upd(tag: str, /, **fields: Any) -> Any:
    return parse(m.SessionUpdate, {"sessionUpdate": tag, **fields})


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def applied(*updates: Any) -> V2SessionState:
    st = V2SessionState("s1")
    for u in updates:
        st.apply(u)
    return st


# -- one test per kind: what it creates or changes ----------------------------------------------


def test_message_chunks_and_whole_messages_upsert_by_id() -> None:
    st = applied(
        upd("user_message", messageId="u1", content=[text("hi")]),
        upd("agent_message_chunk", messageId="a1", content=text("Hel")),
        upd("agent_thought_chunk", messageId="t1", content=text("hmm")),
        upd("agent_message_chunk", messageId="a1", content=text("lo")),
        upd("user_message_chunk", messageId="u2", content=text("more")),
        upd("agent_thought", messageId="t1", content=[text("thought over")]),
        upd("agent_message", messageId="a2", content=[text("second")]),
    )
    assert [(msg.role, msg.message_id, msg.text) for msg in st.messages] == [
        ("user", "u1", "hi"), ("agent", "a1", "Hello"), ("user", "u2", "more"), ("agent", "a2", "second")]
    assert [(t.message_id, t.text) for t in st.thoughts] == [("t1", "thought over")]  # replaced whole
    assert st.agent_text == "Hello\n\nsecond"
    assert st.last_agent_message is not None and st.last_agent_message.message_id == "a2"
    # a whole agent_message replaces what the chunks built
    st.apply(upd("agent_message", messageId="a1", content=[text("Hi!")]))
    assert st.message_by_id[("agent", "a1")].text == "Hi!"


def test_state_updates_running_requires_action_idle() -> None:
    st = V2SessionState()
    running = upd("state_update", state="running", background=[{"type": "terminal", "terminalId": "t"}])
    assert state_of(running) == "running" and stop_reason_of(running) is None
    st.apply(running)
    assert st.state == "running" and st.background is not None and len(st.background) == 1
    st.apply(upd("state_update", state="requires_action"))
    assert st.state == "requires_action" and st.background is None  # omitted: not reported
    st.apply(upd("state_update", state="idle", stopReason="error", error={"code": -32603, "message": "boom"},
                 usage={"totalTokens": 3, "inputTokens": 1, "outputTokens": 2}))
    assert (st.state, st.stop_reason, st.error.message, st.turn_usage.total_tokens) == ("idle", "error", "boom", 3)
    st.apply(upd("state_update", state="idle", stopReason="end_turn", background=[]))
    assert st.stop_reason == "end_turn" and st.error is None and st.background == []
    # an open enum: a custom stop reason and an unknown state are kept, not errors
    st.apply(upd("state_update", state="idle", stopReason="_acme_paused"))
    assert st.stop_reason == "_acme_paused"
    st.apply(upd("state_update", state="_acme_sleeping"))
    assert st.state == "_acme_sleeping"
    st.apply(upd("state_update", state="idle"))
    assert st.state == "idle" and st.stop_reason is None  # idle without a stop reason


def test_tool_calls_upsert_and_content_chunks_append() -> None:
    st = applied(
        upd("tool_call_update", toolCallId="c1", title="Read", kind="read", status="pending",
            capabilities={"cancel": {}}),
        upd("tool_call_content_chunk", toolCallId="c1", content={"type": "content", "content": text("a")}),
        upd("tool_call_content_chunk", toolCallId="c1", content={"type": "content", "content": text("b")}),
        upd("tool_call_update", toolCallId="c1", status="in_progress"),
    )
    call = st.tool_calls["c1"]
    assert (call.title, call.kind, call.status, len(call.content)) == ("Read", "read", "in_progress", 2)
    assert call.cancellable and not call.done
    st.apply(upd("tool_call_update", toolCallId="c1", status="cancelled"))
    assert call.done and not call.cancellable
    st.apply(upd("tool_call_content_chunk", toolCallId="ghost", content={"type": "content", "content": text("x")}))
    assert "ghost" in st.tool_calls and any("ghost" in w for w in st.warnings)


def test_terminals_upsert_and_output_chunks_append() -> None:
    b64 = lambda s: base64.b64encode(s.encode()).decode()  # noqa: E731
    st = applied(
        upd("terminal_update", terminalId="t1", command="make", cwd="/w", output={"data": b64("start\n")}),
        upd("terminal_output_chunk", terminalId="t1", data=b64("more\n")),
        upd("terminal_update", terminalId="t1", exitStatus={"exitCode": 0}),
    )
    term = st.terminals["t1"]
    assert (term.command, term.cwd, term.text, term.exit_status.exit_code) == ("make", "/w", "start\nmore\n", 0)
    st.apply(upd("terminal_update", terminalId="t1", output={"data": b64("replaced")}))
    assert term.text == "replaced"


def test_plans_by_id() -> None:
    entry = {"content": "step", "priority": "high", "status": "pending"}
    st = applied(
        upd("plan_update", plan={"type": "items", "planId": "p1", "entries": [entry]}),
        upd("plan_update", plan={"type": "markdown", "planId": "p2", "content": "# plan"}),
        upd("plan_update", plan={"type": "file", "planId": "p3", "uri": "file:///plan.md"}),
        upd("plan_update", plan={"type": "_acme_board", "planId": "p4", "columns": 3}),
    )
    assert [(p.plan_id, p.kind) for p in st.plans.values()] == [
        ("p1", "items"), ("p2", "markdown"), ("p3", "file"), ("p4", "unknown")]
    assert st.plans["p4"].raw is not None and st.plans["p4"].raw["columns"] == 3  # raw data kept
    st.apply(upd("plan_update", plan={"type": "items", "planId": "p1", "entries": []}))
    assert st.plan is not None and st.plan.plan_id == "p1" and st.plan.entries == []  # updated last
    st.apply(upd("plan_removed", planId="p1"))
    st.apply(upd("plan_removed", planId="nope"))
    assert "p1" not in st.plans and any("nope" in w for w in st.warnings)


def test_session_level_updates() -> None:
    st = applied(
        upd("available_commands_update", availableCommands=[{"type": "command", "name": "test", "description": "run tests"}]),
        upd("config_option_update", configOptions=[{"configId": "mode", "name": "Mode", "type": "select",
                                                    "currentValue": "a", "options": [{"value": "a", "name": "A"}]}]),
        upd("usage_update", used=5, size=100),
        upd("notice", severity="warning", title="rate limited"),
        upd("notice", severity="info", title="back"),
        upd("session_info_update", title="Fix bug", updatedAt="2026-01-01T00:00:00Z"),
    )
    assert [c.name for c in st.available_commands] == ["test"]
    assert [o.config_id for o in st.config_options] == ["mode"]
    assert (st.usage.used, st.usage.size) == (5, 100)
    assert [n.title for n in st.notices] == ["rate limited", "back"]
    assert (st.title, st.updated_at) == ("Fix bug", "2026-01-01T00:00:00Z")


def test_compactions_subagents_session_messages() -> None:
    st = applied(
        upd("compaction_update", compactionId="k1", status="in_progress"),
        upd("compaction_summary_chunk", compactionId="k1", content=text("sum")),
        upd("compaction_summary_chunk", compactionId="k1", content=text("mary")),
        upd("compaction_update", compactionId="k1", status="completed"),
        upd("subagent_update", sessionId="child", title="helper", cwd="/w", description="reads the docs"),
        upd("session_message", messageId="sm1", senderSessionId="child", content=[text("hi ")]),
        upd("session_message_chunk", messageId="sm1", content=text("there")),
    )
    k = st.compactions["k1"]
    assert (k.status, "".join(b.text for b in k.summary)) == ("completed", "summary")
    assert k.summary_text == "summary"  # (the v1 reducer's entities read v2 blocks too)
    child = st.subagents["child"]
    assert (child.title, child.cwd, child.description) == ("helper", "/w", "reads the docs")
    sm = st.session_messages["sm1"]
    assert sm.sender_session_id == "child" and "".join(b.text for b in sm.content) == "hi there"
    assert sm.text == "hi there"


def test_unknown_update_kinds_are_kept_raw() -> None:
    st = applied(upd("_acme_progress", percent=40))
    assert len(st.unknown) == 1 and st.unknown[0].to_wire()["percent"] == 40 and st.state is None
    with pytest.raises(TypeError):
        st.apply(object())


# -- the patch rule, field by field ---------------------------------------------------------------

Getter = Callable[[V2SessionState], Any]

#: (kind, the id fields, the wire field, its value, how to read it, what it reads after null)
PATCHES: list[tuple[str, dict[str, Any], str, Any, Getter, Any]] = [
    ("tool_call_update", {"toolCallId": "c"}, "title", "Edit", lambda st: st.tool_calls["c"].title, None),
    ("tool_call_update", {"toolCallId": "c"}, "kind", "edit", lambda st: st.tool_calls["c"].kind, None),
    ("tool_call_update", {"toolCallId": "c"}, "status", "completed", lambda st: st.tool_calls["c"].status, None),
    ("tool_call_update", {"toolCallId": "c"}, "name", "fs.edit", lambda st: st.tool_calls["c"].name, None),
    ("tool_call_update", {"toolCallId": "c"}, "rawInput", {"a": 1}, lambda st: st.tool_calls["c"].raw_input, None),
    ("tool_call_update", {"toolCallId": "c"}, "rawOutput", [1], lambda st: st.tool_calls["c"].raw_output, None),
    ("tool_call_update", {"toolCallId": "c"}, "locations", [{"path": "/a"}],
     lambda st: [loc.path for loc in st.tool_calls["c"].locations] or None, None),
    ("tool_call_update", {"toolCallId": "c"}, "content", [{"type": "content", "content": text("x")}],
     lambda st: len(st.tool_calls["c"].content) or None, None),
    ("tool_call_update", {"toolCallId": "c"}, "capabilities", {"cancel": {}},
     lambda st: st.tool_calls["c"].cancellable or None, None),
    ("terminal_update", {"terminalId": "t"}, "command", "ls", lambda st: st.terminals["t"].command, None),
    ("terminal_update", {"terminalId": "t"}, "cwd", "/w", lambda st: st.terminals["t"].cwd, None),
    ("terminal_update", {"terminalId": "t"}, "output", {"data": "b2s="}, lambda st: st.terminals["t"].output or None,
     None),
    ("terminal_update", {"terminalId": "t"}, "exitStatus", {"exitCode": 2},
     lambda st: getattr(st.terminals["t"].exit_status, "exit_code", None), None),
    ("terminal_update", {"terminalId": "t"}, "size", {"cols": 80, "rows": 24},
     lambda st: getattr(st.terminals["t"].size, "cols", None), None),
    ("session_info_update", {}, "title", "T", lambda st: st.title, None),
    ("session_info_update", {}, "updatedAt", "2026-01-01T00:00:00Z", lambda st: st.updated_at, None),
    ("session_info_update", {}, "_meta", {"k": 1}, lambda st: st.info_meta, None),
    ("subagent_update", {"sessionId": "c"}, "title", "helper", lambda st: st.subagents["c"].title, None),
    ("subagent_update", {"sessionId": "c"}, "cwd", "/w", lambda st: st.subagents["c"].cwd, None),
    ("subagent_update", {"sessionId": "c"}, "additionalDirectories", ["/x"],
     lambda st: st.subagents["c"].additional_directories, None),
    ("subagent_update", {"sessionId": "c"}, "state", {"state": "running"},
     lambda st: getattr(st.subagents["c"].state, "state", None), None),
    ("session_message", {"messageId": "m"}, "senderSessionId", "s2",
     lambda st: st.session_messages["m"].sender_session_id, None),
    ("session_message", {"messageId": "m"}, "content", [text("x")],
     lambda st: len(st.session_messages["m"].content) or None, None),
    ("compaction_update", {"compactionId": "k", "status": "in_progress"}, "error", "failed once",
     lambda st: st.compactions["k"].error, None),
    ("compaction_update", {"compactionId": "k", "status": "in_progress"}, "summary", [text("s")],
     lambda st: len(st.compactions["k"].summary) or None, None),
    ("user_message", {"messageId": "u"}, "content", [text("x")],
     lambda st: st.message_by_id[("user", "u")].text or None, None),
    ("agent_message", {"messageId": "a"}, "content", [text("x")],
     lambda st: st.message_by_id[("agent", "a")].text or None, None),
    ("agent_thought", {"messageId": "t"}, "content", [text("x")],
     lambda st: st.message_by_id[("thought", "t")].text or None, None),
]


@pytest.mark.parametrize(("kind", "ids", "wire", "value", "read", "cleared"), PATCHES,
                         ids=[f"{p[0]}.{p[2]}" for p in PATCHES])
def test_patch_field_omitted_null_value(kind: str, ids: dict[str, Any], wire: str, value: Any, read: Getter,
                                        cleared: Any) -> None:
    st = V2SessionState()
    st.apply(upd(kind, **ids, **{wire: value}))
    got = read(st)
    assert got is not None and got != cleared  # a value: set
    st.apply(upd(kind, **ids))  # omitted: unchanged
    assert read(st) == got
    st.apply(upd(kind, **ids, **{wire: None}))  # null: cleared
    assert read(st) == cleared
    st.apply(upd(kind, **ids, **{wire: value}))  # and set again
    assert read(st) == got


def test_state_update_background_omitted_null_value() -> None:
    st = V2SessionState()
    st.apply(upd("state_update", state="running", background=[{"type": "tool_call", "toolCallId": "c"}]))
    assert st.background is not None and len(st.background) == 1
    st.apply(upd("state_update", state="running", background=None))
    assert st.background is None
    st.apply(upd("state_update", state="running", background=[]))
    assert st.background == []
    st.apply(upd("state_update", state="running"))  # omitted: not reported (the TS SDK's rule)
    assert st.background is None


def test_every_v2_update_kind_is_covered() -> None:
    """The tests above apply every kind of the schema's (open) SessionUpdate union."""
    covered = {"user_message_chunk", "user_message", "agent_message_chunk", "agent_message", "agent_thought_chunk",
               "agent_thought", "state_update", "tool_call_content_chunk", "tool_call_update", "terminal_update",
               "terminal_output_chunk", "plan_update", "plan_removed", "available_commands_update",
               "config_option_update", "session_info_update", "usage_update", "notice", "compaction_update",
               "compaction_summary_chunk", "subagent_update", "session_message", "session_message_chunk"}
    assert covered == set(UPDATE_KINDS)
    tags = {u.model_fields["session_update"].default for u in _variants()}
    assert covered == tags | {"state_update"}


def _variants() -> list[Any]:
    """The known variants of the v2 SessionUpdate union (state updates are a nested union)."""
    from typing import get_args

    inner = get_args(get_args(m.SessionUpdate)[0])[0]
    return [v for v in get_args(get_args(inner)[0]) if hasattr(v, "model_fields") and
            "session_update" in v.model_fields]
