#!/usr/bin/env python3
"""A small raw-stdio ACP agent that is correct, except for the one behaviour ``--break NAME``
breaks. Used to prove that ``acplink check`` fails each broken behaviour with the right id.

Prompt "wait" (the cancel prompt the tests pass) streams a chunk, then waits for
``session/cancel`` (or ``$/cancel_request``); anything else is echoed in one chunk.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from typing import Any

BREAKS = {
    "none": "behave correctly",
    "updates-after-response": "send an agent_message_chunk after the prompt response",
    "no-stop-reason": "answer prompts with {} (no stopReason)",
    "bad-stop-reason": "answer prompts with stopReason 'finished'",
    "no-reply-unknown": "never answer unknown methods",
    "fs-without-cap": "call fs/read_text_file during a prompt although the client did not advertise fs",
    "terminal-without-cap": "call terminal/create during a prompt although the client did not advertise it",
    "ignore-cancel": "ignore session/cancel (the turn never ends)",
    "cancel-end-turn": "answer a cancelled turn with end_turn",
    "late-exit": "exit 10 s after stdin closes",
    "id-zero-null": "answer the request with id 0 with id null",
    "crash-on-array": "exit when a JSON array arrives",
    "crash-on-invalid-json": "exit when invalid JSON arrives",
    "reject-meta": "answer any request carrying _meta with -32602",
    "echo-version": "echo whatever protocolVersion the client asks for",
    "ghost-session-update": "send a session/update for a session that does not exist",
    "tool-update-unknown": "send a tool_call_update for a tool call never announced",
    "invalid-update": "send a session/update whose update has no sessionUpdate kind",
    "ext-silent": "never answer `_` extension requests",
    "ext-null-result": "answer unknown `_` extension requests with `result: null`",
    "version-error": "answer an unknown protocolVersion with an error",
    "invalid-params-ok": "accept session/new with invalid params",
    "update-before-new": "send an update for a new session before the session/new response",
    "error-without-id": "answer invalid JSON with an error that has no id member",
    "answer-notification": "answer notifications (session/cancel, unknown `_` ones) with a null-id result",
    "terminal-auth": "offer a terminal auth method to a client without auth.terminal",
    "resume-replays": "replay the history on session/resume",
    "close-no-cancel": "leave a running turn running on session/close",
    "load-late-history": "replay the history after the session/load response",
    "list-null": "answer session/list with an unmatched cwd with `sessions: null`",
    "delete-unknown-error": "answer session/delete of an unknown session with an error",
    "multiline-error": "answer unknown methods with a multi-line error message",
    "extra-root-key": "add an undeclared root key to the session/new result",
    "bad-utf8": "write a line that is not valid UTF-8 during a prompt",
    "bool-config": "offer a boolean config option to a client that did not advertise them",
    "bad-current-mode": "name a current mode that is not among the available modes",
    "new-fails": "fail every session/new (and say why on stderr)",
}

out = sys.stdout.buffer


def send(msg: Any) -> None:
    out.write(json.dumps(msg).encode() + b"\n")
    out.flush()


def reply(rid: Any, result: Any) -> None:
    send({"jsonrpc": "2.0", "id": rid, "result": result})


def error(rid: Any, code: int, message: str) -> None:
    send({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


def chunk(sid: str, text: str) -> None:
    send({"jsonrpc": "2.0", "method": "session/update",
          "params": {"sessionId": sid, "update": {"sessionUpdate": "agent_message_chunk",
                                                  "content": {"type": "text", "text": text}}}})


def replay(sid: str, history: list[str]) -> None:
    for text in history:
        send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": {
            "sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": text}}}})
        chunk(sid, text)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--break", dest="broken", default="none", choices=sorted(BREAKS))
    broken = ap.parse_args().broken
    sessions: dict[str, dict[str, Any]] = {}  # session id → {"cwd", "history"}
    counter = itertools.count(1)
    waiting: dict[str, Any] = {}  # session id → pending prompt request id
    my_ids = itertools.count(1000)

    def stop_reason(reason: str) -> dict[str, Any]:
        if broken == "no-stop-reason":
            return {}
        if broken == "bad-stop-reason":
            return {"stopReason": "finished"}
        return {"stopReason": reason}

    for raw in sys.stdin.buffer:
        if not raw.strip():
            continue
        try:
            msg = json.loads(raw)
        except ValueError:
            if broken == "crash-on-invalid-json":
                sys.exit(3)
            if broken == "error-without-id":
                send({"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}})
                continue
            error(None, -32700, "Parse error")
            continue
        if isinstance(msg, list):
            if broken == "crash-on-array":
                sys.exit(4)
            error(None, -32600, "Invalid request: batches are not supported")
            continue
        if not isinstance(msg, dict):
            error(None, -32600, "Invalid request")
            continue
        method = msg.get("method")
        rid = msg.get("id")
        params = msg.get("params") or {}
        if "method" not in msg and ("result" in msg or "error" in msg):
            continue  # a response to one of our requests
        if "method" not in msg:
            error(None, -32600, "Invalid request: not a JSON-RPC message")
            continue
        if not isinstance(method, str):
            error(rid if isinstance(rid, (int, str)) else None, -32600, "Invalid request: method")
            continue
        is_request = "id" in msg
        if broken == "id-zero-null" and rid == 0:
            rid = None
        if broken == "reject-meta" and is_request and ("_meta" in params or "_meta" in msg):
            error(rid, -32602, "unexpected _meta")
            continue
        if method == "initialize":
            version = params.get("protocolVersion")
            if broken == "version-error" and version != 1:
                error(rid, -32602, "unsupported protocol version")
                continue
            result: dict[str, Any] = {
                "protocolVersion": version if broken == "echo-version" else 1,
                "agentCapabilities": {"loadSession": True, "sessionCapabilities": {
                    "resume": {}, "close": {}, "list": {}, "delete": {}}},
                "agentInfo": {"name": "broken-agent", "version": broken}}
            if broken == "terminal-auth":
                result["authMethods"] = [{"id": "login", "name": "Log in", "type": "terminal"}]
            reply(rid, result)
        elif method == "session/new":
            if not isinstance(params.get("cwd"), str) or not isinstance(params.get("mcpServers"), list):
                if broken == "invalid-params-ok":
                    reply(rid, {"sessionId": "whatever"})
                else:
                    error(rid, -32602, "Invalid params")
                continue
            if broken == "new-fails":
                print("broken-agent: no model configured", file=sys.stderr, flush=True)
                error(rid, -32603, "Internal error")
                continue
            sid = f"broken-{next(counter)}"
            sessions[sid] = {"cwd": params["cwd"], "history": []}
            if broken == "update-before-new":
                chunk(sid, "too early")
            result = {"sessionId": sid, "modes": {"currentModeId": "ask" if broken != "bad-current-mode" else "yolo",
                                                  "availableModes": [{"id": "ask", "name": "Ask"},
                                                                     {"id": "code", "name": "Code"}]}}
            if broken == "extra-root-key":
                result["sessionSecret"] = "not declared"
            if broken == "bool-config":
                result["configOptions"] = [{"id": "fast", "name": "Fast", "type": "boolean", "currentValue": False}]
            reply(rid, result)
        elif method == "session/set_mode":
            reply(rid, {})
        elif method in ("session/load", "session/resume"):
            sid = params.get("sessionId")
            if sid not in sessions:
                error(rid, -32002, "Resource not found: session")
                continue
            history = sessions[sid]["history"]
            if (method == "session/load" and broken != "load-late-history") or broken == "resume-replays":
                replay(sid, history)
            reply(rid, {})
            if method == "session/load" and broken == "load-late-history":
                replay(sid, history)
        elif method == "session/list":
            cwd = params.get("cwd")
            found = [{"sessionId": k, "cwd": v["cwd"]} for k, v in sessions.items() if cwd in (None, v["cwd"])]
            reply(rid, {"sessions": None if broken == "list-null" and not found else found})
        elif method == "session/delete":
            if params.get("sessionId") not in sessions and broken == "delete-unknown-error":
                error(rid, -32002, "Resource not found: session")
                continue
            sessions.pop(params.get("sessionId"), None)
            reply(rid, {})
        elif method == "session/close":
            sid = params.get("sessionId")
            pending = waiting.pop(sid, None) if broken != "close-no-cancel" else None
            if pending is not None:
                reply(pending, stop_reason("cancelled"))
            sessions.pop(sid, None)
            reply(rid, {})
        elif method == "session/prompt":
            sid = params.get("sessionId")
            prompt = params.get("prompt")
            if not isinstance(sid, str) or not isinstance(prompt, list):
                error(rid, -32602, "Invalid params")
                continue
            if sid not in sessions:
                error(rid, -32002, "Resource not found: session")
                continue
            text = next((b.get("text", "") for b in prompt if isinstance(b, dict) and b.get("type") == "text"), "")
            sessions[sid]["history"].append(text)
            if broken == "bad-utf8":
                out.write(b'{"jsonrpc": "2.0", "method": "_x", "params": {"t": "\xff\xfe"}}\n')
            if broken == "ghost-session-update":
                chunk("ghost-session", "boo")
            if broken == "tool-update-unknown":
                send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": {
                    "sessionUpdate": "tool_call_update", "toolCallId": "never-announced", "status": "completed"}}})
            if broken == "invalid-update":
                send({"jsonrpc": "2.0", "method": "session/update",
                      "params": {"sessionId": sid, "update": {"content": {"type": "text", "text": "?"}}}})
            if broken == "fs-without-cap":
                send({"jsonrpc": "2.0", "id": next(my_ids), "method": "fs/read_text_file",
                      "params": {"sessionId": sid, "path": "/etc/hostname"}})
            if broken == "terminal-without-cap":
                send({"jsonrpc": "2.0", "id": next(my_ids), "method": "terminal/create",
                      "params": {"sessionId": sid, "command": "ls"}})
            if text == "wait":
                chunk(sid, "waiting")
                waiting[sid] = rid
                continue
            chunk(sid, text or "ok")
            reply(rid, stop_reason("end_turn"))
            if broken == "updates-after-response":
                chunk(sid, "one more thing")
        elif not is_request and broken == "answer-notification":
            send({"jsonrpc": "2.0", "id": None, "result": None})
            if method == "session/cancel" and params.get("sessionId") in waiting:
                reply(waiting.pop(params["sessionId"]), stop_reason("cancelled"))
        elif method == "session/cancel":
            if broken == "ignore-cancel":
                continue
            pending = waiting.pop(params.get("sessionId"), None)
            if pending is not None:
                reply(pending, stop_reason("end_turn" if broken == "cancel-end-turn" else "cancelled"))
        elif method == "$/cancel_request":
            target = params.get("requestId")
            for sid, pending in list(waiting.items()):
                if pending == target:
                    del waiting[sid]
                    error(pending, -32800, "Request cancelled")
        elif not is_request:
            continue
        elif method.startswith("_") and broken == "ext-null-result":
            send({"jsonrpc": "2.0", "id": rid, "result": None})
        elif method.startswith("_"):
            if broken != "ext-silent":
                error(rid, -32601, f"Method not found: {method}")
        elif broken == "multiline-error":
            error(rid, -32601, f"Method not found:\n{method}")
        elif broken != "no-reply-unknown":
            error(rid, -32601, f"Method not found: {method}")
    if broken == "late-exit":
        time.sleep(10)


if __name__ == "__main__":
    try:
        main()
    except (BrokenPipeError, KeyboardInterrupt):
        pass
