#!/usr/bin/env python3
"""A small raw-stdio ACP v2 (draft) agent that is correct, except for the one behaviour
``--break NAME`` breaks. Proves that ``acplink check --protocol 2`` fails each broken
behaviour with the right requirement id.

Prompt "wait" runs until ``session/cancel`` (then idle ``cancelled``); anything else is echoed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from typing import Any

BREAKS = {
    "none": "behave correctly",
    "no-receipt-id": "answer session/prompt with {} (no messageId)",
    "no-running": "never report state running",
    "idle-without-stop-reason": "end turns with an idle state_update without a stopReason",
    "updates-after-close": "send an agent_message_chunk after answering session/close",
    "ext-result": "answer unknown `_` requests with `result: null` (not -32601)",
    "same-message-id": "give every prompt receipt the same messageId",
    "answer-cancel": "answer the session/cancel notification (a response with id null)",
    "state-after-cancel": "report running and idle again after a cancelled idle",
    "list-ignores-cwd": "ignore the cwd filter of session/list",
    "delete-keeps-listed": "keep a deleted session in session/list",
    "require-mcp-servers": "reject session/new without mcpServers",
    "resume-replays": "replay the history on session/resume even without replayFrom",
    "terminal-auth": "offer a terminal auth method to a client that did not advertise auth.terminal",
    "multiline-error": "answer unknown methods with a multi-line error message",
    "garbage-line": "write a line that is not JSON during each prompt turn",
    "close-no-cancel": "leave a running turn unended on session/close",
    "fs-call": "call fs/read_text_file (a v1 method) during each turn",
    "reject-image": "advertise image prompts, then reject a prompt with an image block",
}

out = sys.stdout.buffer
ids = itertools.count(1)
#: session id -> {"cwd", "history": [updates], "waiting": bool}
sessions: dict[str, dict[str, Any]] = {}
#: sessions deleted but still listed (--break delete-keeps-listed)
deleted: dict[str, dict[str, Any]] = {}
BROKEN = "none"


def send(msg: Any) -> None:
    out.write(json.dumps(msg).encode() + b"\n")
    out.flush()


def reply(rid: Any, result: Any) -> None:
    send({"jsonrpc": "2.0", "id": rid, "result": result})


def error(rid: Any, code: int, message: str, data: Any = None) -> None:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    send({"jsonrpc": "2.0", "id": rid, "error": err})


def update(sid: str, upd: dict[str, Any], *, keep: bool = False) -> None:
    if keep:
        sessions[sid]["history"].append(upd)
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": upd}})


def idle(sid: str, reason: str) -> None:
    upd: dict[str, Any] = {"sessionUpdate": "state_update", "state": "idle"}
    if BROKEN != "idle-without-stop-reason":
        upd["stopReason"] = reason
    update(sid, upd)


def prompt(rid: Any, params: dict[str, Any]) -> None:
    sid = params.get("sessionId")
    blocks = params.get("prompt")
    if sid not in sessions:
        error(rid, -32602, f"unknown session {sid!r}")
        return
    if not isinstance(blocks, list) or not blocks:
        error(rid, -32602, "a prompt needs at least one content block")
        return
    if BROKEN == "reject-image" and any(isinstance(b, dict) and b.get("type") == "image" for b in blocks):
        error(rid, -32602, "images are not supported")
        return
    mid = "u0" if BROKEN == "same-message-id" else f"u{next(ids)}"
    reply(rid, {} if BROKEN == "no-receipt-id" else {"messageId": mid})
    if BROKEN == "fs-call":
        send({"jsonrpc": "2.0", "id": f"fs{next(ids)}", "method": "fs/read_text_file",
              "params": {"sessionId": sid, "path": "/etc/hostname"}})
    if BROKEN == "garbage-line":
        out.write(b"debug: prompt received\n")
        out.flush()
    update(sid, {"sessionUpdate": "user_message", "messageId": mid, "content": blocks}, keep=True)
    if BROKEN != "no-running":
        update(sid, {"sessionUpdate": "state_update", "state": "running"})
    text = next((b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"), "")
    update(sid, {"sessionUpdate": "agent_message_chunk", "messageId": f"a{next(ids)}",
                 "content": {"type": "text", "text": text}}, keep=True)
    if text == "wait":
        sessions[sid]["waiting"] = True
        return
    idle(sid, "end_turn")


def handle(msg: Any) -> None:
    if not isinstance(msg, dict):
        error(None, -32600, "Invalid request")
        return
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if method is None and ("result" in msg or "error" in msg):  # the client's answer to our request
        return
    if "id" in msg and rid is None and method is not None:
        error(None, -32600, "Invalid request: id must not be null")
        return
    if rid is None:  # notifications
        if method == "session/cancel" and BROKEN == "answer-cancel":
            send({"jsonrpc": "2.0", "id": None, "result": {}})
        if method == "session/cancel" and sessions.get(params.get("sessionId"), {}).get("waiting"):
            sessions[params["sessionId"]]["waiting"] = False
            idle(params["sessionId"], "cancelled")
            if BROKEN == "state-after-cancel":
                update(params["sessionId"], {"sessionUpdate": "state_update", "state": "running"})
                idle(params["sessionId"], "end_turn")
        return
    if method == "initialize":
        version = params.get("protocolVersion")
        if type(version) is not int or not 0 <= version <= 65535:
            error(rid, -32602, "protocolVersion must be an integer 0..65535")
        elif version < 2 and sessions.get("#initialized"):
            error(rid, -32600, "a repeated initialize must ask for version 2")
        elif version < 2:
            error(rid, -32022, "Unsupported protocol version", {"requested": version, "supported": [2]})
        else:
            sessions["#initialized"] = {"cwd": None, "history": [], "waiting": False}
            result: dict[str, Any] = {"protocolVersion": 2, "info": {"name": "broken-v2", "version": "1"},
                                      "capabilities": {"session": {"delete": {}}}}
            if BROKEN == "reject-image":
                result["capabilities"]["session"]["prompt"] = {"image": {}}
            if BROKEN == "terminal-auth":
                result["authMethods"] = [{"methodId": "login", "name": "Log in", "type": "terminal"}]
            reply(rid, result)
    elif method == "session/new" and BROKEN == "require-mcp-servers" and "mcpServers" not in params:
        error(rid, -32602, "mcpServers is required")
    elif method == "session/new":
        sid = f"s{next(ids)}"
        sessions[sid] = {"cwd": params.get("cwd"), "history": [], "waiting": False}
        reply(rid, {"sessionId": sid})
    elif method == "session/prompt":
        prompt(rid, params)
    elif method == "session/list":
        cwd = None if BROKEN == "list-ignores-cwd" else params.get("cwd")
        reply(rid, {"sessions": [{"sessionId": k, "cwd": v["cwd"]} for k, v in {**sessions, **deleted}.items()
                                 if k[0] != "#" and cwd in (None, v["cwd"])]})
    elif method == "session/resume":
        sid = params.get("sessionId")
        if sid not in sessions:
            error(rid, -32602, f"unknown session {sid!r}")
            return
        if params.get("replayFrom") or BROKEN == "resume-replays":
            for upd in sessions[sid]["history"]:
                update(sid, upd)
        update(sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": None})
        reply(rid, {})
    elif method in ("session/close", "session/delete"):
        sid = params.get("sessionId")
        gone = sessions.pop(sid, None)
        if BROKEN == "delete-keeps-listed" and gone is not None and method == "session/delete":
            deleted[sid] = gone
        if gone is not None and gone["waiting"] and BROKEN != "close-no-cancel":
            idle(sid, "cancelled")
        reply(rid, {})
        if BROKEN == "updates-after-close" and gone is not None:
            send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": {
                "sessionUpdate": "agent_message_chunk", "messageId": "late", "content": {"type": "text", "text": "late"}}}})
    elif isinstance(method, str) and method.startswith("_") and BROKEN == "ext-result":
        reply(rid, None)
    elif BROKEN == "multiline-error":
        error(rid, -32601, f"Method not found:\n{method}", {"method": method})
    else:
        error(rid, -32601, f"Method not found: {method}", {"method": method})


def main() -> None:
    global BROKEN
    parser = argparse.ArgumentParser()
    parser.add_argument("--break", dest="broken", choices=sorted(BREAKS), default="none")
    BROKEN = parser.parse_args().broken
    for line in sys.stdin.buffer:
        try:
            msg = json.loads(line)
        except ValueError:
            error(None, -32700, "Parse error")
            continue
        handle(msg)


if __name__ == "__main__":
    main()
