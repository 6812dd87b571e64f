"""The live side of the state machine (protocol/state.py): what an agent or a client connection
asks it as messages go by (the trace corpus, test_state_corpus.py, covers the findings)."""

from __future__ import annotations

from typing import Any

from acplink.protocol import V1
from acplink.protocol.state import (
    ConnectionState,
    PromptReceipt,
    Ready,
    SessionOpened,
    StateChanged,
    TurnEnded,
    TurnStarted,
    Update,
    protocol_of_version,
)


def req(rid: Any, method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def ok(rid: Any, **result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def upd(sid: str, **update: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}}


def ready(version: int, **caps: Any) -> ConnectionState:
    state = ConnectionState()
    state.process("client", req(0, "initialize", protocolVersion=version))
    verdict = state.process("agent", ok(0, protocolVersion=version, **caps))
    assert verdict.events[0] == Ready(version, version)
    assert not state.process("client", req(1, "session/new", cwd="/w", mcpServers=[])).events
    assert state.process("agent", ok(1, sessionId="s")).events == (SessionOpened("s", "session/new", "/w"),)
    return state


def test_a_request_before_initialize_is_refused_and_an_extension_is_not() -> None:
    state = ConnectionState()
    assert state.protocol is V1 and not state.ready
    assert state.refusal("client", req(1, "session/new", cwd="/w")) == "session/new sent before the initialize response"
    assert state.process("client", req(1, "session/new", cwd="/w")).refusal is not None
    assert state.process("client", req(2, "_vendor/hello")).refusal is None
    assert state.process("client", req(3, "initialize", protocolVersion=1)).refusal is None


def test_v1_refuses_a_second_prompt_and_the_response_ends_the_turn() -> None:
    state = ready(1)
    first = state.process("client", req(2, "session/prompt", sessionId="s", prompt=[]))
    assert first.events == (TurnStarted("s", 2),) and first.refusal is None
    assert state.running("s") == 2
    assert state.refusal("client", req(3, "session/prompt", sessionId="s", prompt=[])) is not None
    second = state.process("client", req(3, "session/prompt", sessionId="s", prompt=[]))
    assert second.refusal is not None and [f.id for f in second.findings] == ["prompt-while-running"]
    assert state.process("agent", upd("s", sessionUpdate="agent_message_chunk")).events == (Update("s", "agent_message_chunk", 2),)
    # the refused prompt's error answer ends its own entry, not the running turn
    refused = state.process("agent", {"jsonrpc": "2.0", "id": 3, "error": {"code": -32600, "message": "busy"}})
    assert refused.events == (TurnEnded("s", 3, None, {"code": -32600, "message": "busy"}),)
    assert state.running("s") == 2
    assert state.process("agent", ok(2, stopReason="end_turn")).events == (TurnEnded("s", 2, "end_turn"),)
    assert state.running("s") is None


def test_v2_holds_a_second_prompt_and_the_idle_state_ends_the_turn() -> None:
    state = ready(2, info={"name": "a", "version": "2"}, capabilities={})  # (a v2 answer, not a v1 echo)
    assert state.protocol is protocol_of_version(2) and state.protocol.turns.receipt
    state.process("client", req(2, "session/prompt", sessionId="s", prompt=[]))
    assert state.process("agent", ok(2, messageId="u1")).events == (PromptReceipt("s", 2, {"messageId": "u1"}),)
    held = state.process("client", req(3, "session/prompt", sessionId="s", prompt=[]))
    assert held.events == (TurnStarted("s", 3, held=True),) and held.refusal is None and not held.findings
    idle = state.process("agent", upd("s", sessionUpdate="state_update", state="idle", stopReason="end_turn"))
    assert idle.events == (Update("s", "state_update", 2), StateChanged("s", "idle"), TurnEnded("s", 2, "end_turn"))
    assert state.running("s") == 3  # the held prompt's turn runs now


def test_a_capability_the_peer_did_not_advertise_is_refused() -> None:
    state = ready(1)
    verdict = state.process("client", req(2, "session/list"))
    assert verdict.refusal is not None and [f.id for f in verdict.findings] == ["capability"]
    advertised = ready(1, agentCapabilities={"sessionCapabilities": {"list": {}}})
    assert advertised.process("client", req(2, "session/list")).refusal is None
