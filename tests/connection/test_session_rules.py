"""ACP's session rules live in one sans-I/O module (connection/rules.py), shared by both
connections, the trace analyser (``acplink inspect``) and the conformance checker."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from acplink import AgentApp, InvalidRequest, PromptContext, UsageError, connect, schema
from acplink.client import session as client_session
from acplink.conformance import checks
from acplink.connection import agent_side, base, rules
from acplink.protocol import V1, state
from acplink.tools import analysis
from acplink.tools.analysis import analyze

GUARD = 30.0  # hang guard only


def test_the_analyser_and_the_checker_share_the_rules() -> None:
    # the same objects, not copies: a rule fixed in rules.py is fixed for all of them
    assert state.missing_capability is rules.missing_capability
    assert state.before_initialize is rules.before_initialize
    assert checks.missing_capability is rules.missing_capability
    assert checks.required_capability is rules.required_capability
    assert checks.advertises is rules.advertises is base.advertises
    # the analyser (and the checker's judge of traffic, built on it) runs the protocol's state
    # machine, whose rules are the protocol object's: before initialize, its list
    assert analysis.ConnectionState is state.ConnectionState
    assert state.ConnectionState().protocol is V1
    assert V1.may_precede_initialize("initialize") and not V1.may_precede_initialize("session/new")
    assert rules.PromptTurns is agent_side.PromptTurns
    assert client_session.prompt_refusal is rules.prompt_refusal


# -- initialization --------------------------------------------------------------------------------

def test_before_initialize() -> None:
    assert rules.before_initialize("initialize")
    assert rules.before_initialize("_vendor/hello")
    assert not rules.before_initialize("session/new")
    assert not rules.before_initialize("authenticate")


# -- capabilities ----------------------------------------------------------------------------------

def test_advertises_counts_an_empty_object() -> None:
    assert rules.advertises({"sessionCapabilities": {"list": {}}}, "sessionCapabilities.list")
    assert rules.advertises({"loadSession": True}, "loadSession")
    for caps in ({}, None, {"sessionCapabilities": None}, {"sessionCapabilities": {"list": None}},
                 {"sessionCapabilities": {"list": False}}, {"loadSession": False}):
        assert not rules.advertises(caps, "sessionCapabilities.list" if caps and "sessionCapabilities" in caps
                                    else "loadSession"), caps
    model = schema.AgentCapabilities.model_validate({"sessionCapabilities": {"list": {}}})
    assert rules.advertises(model, "sessionCapabilities.list")
    assert not rules.advertises(model, "sessionCapabilities.fork")


def test_missing_capability_names_the_owner_and_the_path() -> None:
    assert rules.required_capability("session/new") is None
    assert rules.required_capability("fs/read_text_file") == ("client", "fs.readTextFile")
    assert rules.missing_capability("fs/read_text_file", {"fs": {"readTextFile": True}}, None) is None
    assert rules.missing_capability("fs/read_text_file", {}, {"loadSession": True}) == ("client", "fs.readTextFile")
    assert rules.missing_capability("session/list", None, {"sessionCapabilities": {"list": {}}}) is None
    assert rules.missing_capability("session/list", None, {}) == ("agent", "sessionCapabilities.list")


# -- prompt turns ----------------------------------------------------------------------------------

def test_one_prompt_turn_per_session() -> None:
    turns: rules.PromptTurns[str] = rules.PromptTurns()
    assert turns.start("s1", "first") is None
    assert turns.start("s2", "other") is None  # another session: independent
    assert turns.start("s1", "second") == "session 's1' already has a prompt turn running"
    assert turns.get("s1") == "first" and "s1" in turns
    assert not turns.end("s1", "second")  # not the running one
    assert turns.end("s1", "first")
    assert "s1" not in turns and turns.get("s1") is None
    assert turns.start("s1", "second") is None
    assert rules.prompt_refusal("s1", running=False) is None


def test_turn_updates_come_before_the_prompt_response() -> None:
    turns: rules.PromptTurns[int] = rules.PromptTurns()
    assert not turns.update_after_response("s1", "agent_message_chunk")  # no prompt yet (e.g. history replay)
    turns.start("s1", 1)
    assert not turns.update_after_response("s1", "agent_message_chunk")  # during the turn
    turns.end("s1", 1)
    assert turns.update_after_response("s1", "agent_message_chunk")
    assert turns.update_after_response("s1", "tool_call_update")
    assert not turns.update_after_response("s1", "available_commands_update")  # not a turn update
    assert not turns.update_after_response("s2", "agent_message_chunk")


# -- the analyser judges traces with them ------------------------------------------------------------

def _trace(*msgs: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "message", "seq": n, "dir": d, "mono": float(n), "msg": {"jsonrpc": "2.0", **m}}
            for n, (d, m) in enumerate(msgs, 1)]


_INIT = (("c2a", {"id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
         ("a2c", {"id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {}}}),
         ("c2a", {"id": 1, "method": "session/new", "params": {"cwd": "/w", "mcpServers": []}}),
         ("a2c", {"id": 1, "result": {"sessionId": "s1"}}))


def _prompt(rid: int) -> tuple[str, dict[str, Any]]:
    return ("c2a", {"id": rid, "method": "session/prompt",
                    "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": f"p{rid}"}]}})


def _codes(records: list[dict[str, Any]]) -> list[str]:
    return [f.code for f in analyze(records).findings]


def test_the_analyser_flags_a_request_before_initialize() -> None:
    assert _codes(_trace(("c2a", {"id": 1, "method": "session/new", "params": {"cwd": "/w", "mcpServers": []}}),
                         ("a2c", {"id": 1, "result": {"sessionId": "s1"}}))) == ["before-initialize"]
    assert _codes(_trace(*_INIT)) == []


def test_the_analyser_flags_a_second_prompt_while_one_runs() -> None:
    records = _trace(*_INIT, _prompt(2), _prompt(3),
                     ("a2c", {"id": 3, "error": {"code": -32600, "message": "busy"}}),
                     ("a2c", {"id": 2, "result": {"stopReason": "end_turn"}}))
    t = analyze(records)
    assert [f.code for f in t.findings] == ["prompt-while-running"]
    first, second = t.sessions["s1"].turns
    assert (first.stop_reason, second.error) == ("end_turn", "busy")  # each answer ends its own turn


def test_the_analyser_flags_a_turn_update_after_the_response() -> None:
    update = ("a2c", {"method": "session/update", "params": {
        "sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}}})
    ok = _trace(*_INIT, _prompt(2), update, ("a2c", {"id": 2, "result": {"stopReason": "end_turn"}}))
    assert _codes(ok) == []
    late = _trace(*_INIT, _prompt(2), ("a2c", {"id": 2, "result": {"stopReason": "end_turn"}}), update)
    assert _codes(late) == ["update-after-response"]


# -- both connections enforce them -----------------------------------------------------------------

async def test_both_connections_refuse_a_second_prompt_of_a_session(tmp_path: Path) -> None:
    app = AgentApp("slow")
    started, release = asyncio.Event(), asyncio.Event()

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        started.set()
        await release.wait()

    async with connect(app) as client:
        session = await client.new_session(cwd=tmp_path)
        turn = session.prompt("first")
        with pytest.raises(UsageError, match="already has a prompt turn running"):
            session.prompt("second")  # the client side: refused before sending
        await asyncio.wait_for(started.wait(), GUARD)
        # the agent side: a second session/prompt on the wire is refused too
        with pytest.raises(InvalidRequest, match="already has a prompt turn running"):
            await asyncio.wait_for(client.conn.session_prompt(session_id=session.session_id,
                                                              prompt=[schema.TextContent(text="again")]), GUARD)
        release.set()
        resp = await asyncio.wait_for(turn, GUARD)
        assert resp.stop_reason == "end_turn"
        # the session is free again
        assert (await asyncio.wait_for(session.prompt("third"), GUARD)).stop_reason == "end_turn"
