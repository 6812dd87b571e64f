"""Writes the trace corpus of ``test_state_corpus.py`` (``python tests/protocol/traces/make_traces.py``):
each trace is the recorder's format (``acplink record``: :class:`acplink.tools.trace.TraceWriter`),
valid and broken traffic of both versions. What each must give is in ``expected.json``, written
by hand, not by this script."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from acplink.tools.trace import TraceWriter

HERE = Path(__file__).resolve().parent
Msg = tuple[str, dict[str, Any]]


def req(d: str, rid: Any, method: str, **params: Any) -> Msg:
    return d, {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def ok(d: str, rid: Any, **result: Any) -> Msg:
    return d, {"jsonrpc": "2.0", "id": rid, "result": result}


def err(d: str, rid: Any, code: int, message: str) -> Msg:
    return d, {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def upd(sid: str, **update: Any) -> Msg:
    return "a2c", {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def chunk(sid: str, t: str, **more: Any) -> Msg:
    return upd(sid, sessionUpdate="agent_message_chunk", content=text(t), **more)


# -- ACP v1 -------------------------------------------------------------------------------------

V1_INIT = [req("c2a", 0, "initialize", protocolVersion=1, clientCapabilities={"fs": {"readTextFile": True}},
               clientInfo={"name": "c", "version": "1"}),
           ok("a2c", 0, protocolVersion=1, agentCapabilities={"sessionCapabilities": {"close": {}}}, agentInfo={"name": "a", "version": "1"})]
V1_SESSION = [*V1_INIT, req("c2a", 1, "session/new", cwd="/w", mcpServers=[]), ok("a2c", 1, sessionId="s")]


def v1_prompt(rid: int, t: str = "go") -> Msg:
    return req("c2a", rid, "session/prompt", sessionId="s", prompt=[text(t)])


TRACES: dict[str, list[Msg]] = {
    "v1_turn": [
        *V1_SESSION, v1_prompt(2),
        upd("s", sessionUpdate="tool_call", toolCallId="t1", title="Read", kind="read", status="pending"),
        req("a2c", "r1", "fs/read_text_file", sessionId="s", path="/w/a"), ok("c2a", "r1", content="x"),
        upd("s", sessionUpdate="tool_call_update", toolCallId="t1", status="completed"),
        chunk("s", "done"), ok("a2c", 2, stopReason="end_turn"),
        upd("s", sessionUpdate="available_commands_update", availableCommands=[]),
    ],
    "v1_prompt_before_initialize": [
        req("c2a", 1, "session/new", cwd="/w", mcpServers=[]), *V1_INIT, ok("a2c", 1, sessionId="s"),
    ],
    "v1_second_prompt_while_running": [
        *V1_SESSION, v1_prompt(2), v1_prompt(3, "again"), err("a2c", 3, -32600, "busy"),
        chunk("s", "done"), ok("a2c", 2, stopReason="end_turn"),
    ],
    "v1_update_after_response": [
        *V1_SESSION, v1_prompt(2), ok("a2c", 2, stopReason="end_turn"), chunk("s", "late"),
    ],
    "v1_unknown_session_and_tool_call": [
        *V1_SESSION, v1_prompt(2), chunk("ghost", "boo"),
        upd("s", sessionUpdate="tool_call_update", toolCallId="never", status="completed"),
        ok("a2c", 2, stopReason="end_turn"),
    ],
    "v1_ids": [
        *V1_SESSION, req("c2a", 2, "session/set_mode", sessionId="s", modeId="x"), ok("a2c", 2), ok("a2c", 2),
        ok("a2c", 99), req("c2a", 3, "_vendor/ping"),
    ],
    "v1_capability": [
        *V1_SESSION, v1_prompt(2),
        req("a2c", "w1", "fs/write_text_file", sessionId="s", path="/w/a", content="x"), ok("c2a", "w1"),
        ok("a2c", 2, stopReason="end_turn"),
    ],
    "v1_prompt_error": [
        *V1_SESSION, v1_prompt(2), chunk("s", "half"), err("a2c", 2, -32603, "model failed"),
    ],
    "v1_update_after_close": [
        *V1_SESSION, req("c2a", 2, "session/close", sessionId="s"), ok("a2c", 2), chunk("s", "late"),
    ],
    "v1_prompt_unknown_session": [
        *V1_SESSION, req("c2a", 2, "session/prompt", sessionId="ghost", prompt=[text("go")]),
        err("a2c", 2, -32002, "unknown session 'ghost'"), v1_prompt(3), ok("a2c", 3, stopReason="end_turn"),
    ],
}

# -- ACP v2 -------------------------------------------------------------------------------------

V2_SESSION = [
    req("c2a", 0, "initialize", protocolVersion=2, info={"name": "c", "version": "1"}, capabilities={}),
    ok("a2c", 0, protocolVersion=2, info={"name": "a", "version": "2"}, capabilities={}),
    req("c2a", 1, "session/new", cwd="/w"), ok("a2c", 1, sessionId="s"),
]


def v2_prompt(rid: int, t: str = "go") -> Msg:
    return req("c2a", rid, "session/prompt", sessionId="s", prompt=[text(t)])


def state(st: str, **more: Any) -> Msg:
    return upd("s", sessionUpdate="state_update", state=st, **more)


def echo(mid: str, t: str = "go") -> Msg:
    return upd("s", sessionUpdate="user_message", messageId=mid, content=[text(t)])


def v2_chunk(t: str) -> Msg:
    return chunk("s", t, messageId="a1")


TRACES.update({
    "v2_turn": [
        *V2_SESSION, v2_prompt(2), ok("a2c", 2, messageId="u1"), echo("u1"), state("running"),
        upd("s", sessionUpdate="tool_call_update", toolCallId="c1", title="Edit", kind="edit", status="pending"),
        v2_chunk("done"), upd("s", sessionUpdate="tool_call_update", toolCallId="c1", status="completed"),
        state("idle", stopReason="end_turn"),
    ],
    "v2_prompt_before_initialize": [
        req("c2a", 1, "session/new", cwd="/w"), *V2_SESSION[:2], ok("a2c", 1, sessionId="s"),
    ],
    "v2_second_prompt_is_held": [
        *V2_SESSION, v2_prompt(2), ok("a2c", 2, messageId="u1"), state("running"), v2_prompt(3, "more"),
        ok("a2c", 3, messageId="u2"), v2_chunk("one"), state("idle", stopReason="end_turn"),
        echo("u2", "more"), state("running"), v2_chunk("two"), state("idle", stopReason="end_turn"),
    ],
    "v2_update_after_idle": [
        *V2_SESSION, v2_prompt(2), ok("a2c", 2, messageId="u1"), state("running"),
        state("idle", stopReason="end_turn"), v2_chunk("late"),
    ],
    "v2_update_after_close": [
        *V2_SESSION, v2_prompt(2), ok("a2c", 2, messageId="u1"), state("running"),
        state("idle", stopReason="end_turn"), req("c2a", 3, "session/close", sessionId="s"), ok("a2c", 3),
        upd("s", sessionUpdate="session_info_update", title="late"),
    ],
    "v2_receipt_then_idle_error": [
        *V2_SESSION, v2_prompt(2), ok("a2c", 2, messageId="u1"), state("running"),
        state("idle", stopReason="error", error={"code": -32603, "message": "model failed"}),
    ],
    "v2_prompt_refused": [
        *V2_SESSION, v2_prompt(2), err("a2c", 2, -32602, "empty prompt"), state("idle", stopReason="end_turn"),
    ],
    "v2_prompt_unknown_session": [
        *V2_SESSION, req("c2a", 2, "session/prompt", sessionId="ghost", prompt=[text("go")]),
        err("a2c", 2, -32002, "unknown session 'ghost'"),
    ],
    "unknown_version": [
        req("c2a", 0, "initialize", protocolVersion=7, clientCapabilities={}),
        ok("a2c", 0, protocolVersion=7, info={"name": "a", "version": "7"}, capabilities={}),
        req("c2a", 1, "session/new", cwd="/w", mcpServers=[]), ok("a2c", 1, sessionId="s"),
    ],
})


def write(name: str, messages: list[Msg]) -> None:
    records: list[dict[str, Any]] = []
    writer = TraceWriter(None, header={"command": [name]}, listeners=[records.append])
    for i, (direction, msg) in enumerate(messages, 1):
        writer.message(direction, orjson.dumps(msg), mono=float(i), wall=1.8e9 + i)
    writer.close()
    records[0].update(mono=0.0, wall=1.8e9)  # (a reproducible header)
    (HERE / f"{name}.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))


if __name__ == "__main__":
    for name, messages in TRACES.items():
        write(name, messages)
