"""A tiny stdio ACP agent for the server tests (standard library only, so it starts fast).

It answers initialize (its pid in ``_meta.pid``), session/new, session/load and
session/prompt (two ``agent_message_chunk`` updates, then ``end_turn``). Prompt texts steer it:
"permission" asks the client for permission first (and reports the chosen option), "crash"
exits with status 3 in the middle of the turn, "flood N" sends N updates of 1 KiB, "count N" sends N updates "0" to "N-1", "sessions N"
sends one update to each of N new session ids, "state" sends a v2 ``state_update`` (running). ``_echo`` answers with the exact line it
received. ``--silent`` never answers anything. Every line it reads is also logged to stderr.
"""

from __future__ import annotations

import json
import os
import sys

SILENT = "--silent" in sys.argv


def send(msg: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def update(sid: str, text: str) -> None:
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": {
        "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}})


def read() -> tuple[str, dict[str, object]] | None:
    line = sys.stdin.readline()
    if not line:
        return None
    print(f"got {line.strip()[:80]}", file=sys.stderr, flush=True)
    return line.rstrip("\n"), json.loads(line)


def prompt(rid: object, params: dict[str, object]) -> None:
    sid = str(params["sessionId"])
    blocks = params.get("prompt") or [{}]
    text = str(blocks[0].get("text", "")) if isinstance(blocks, list) else ""  # type: ignore[union-attr]
    update(sid, "thinking")
    if text == "crash":
        os._exit(3)
    if text.startswith("flood"):
        for _ in range(int(text.split()[1])):
            update(sid, "x" * 1024)
    if text.startswith("count"):
        for i in range(int(text.split()[1])):
            update(sid, str(i))
    if text == "state":
        send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": {
            "sessionUpdate": "state_update", "state": "running"}}})
    if text.startswith("sessions"):
        for i in range(int(text.split()[1])):
            update(f"{sid}-{i}", "hello")
    if text == "permission":
        send({"jsonrpc": "2.0", "id": "perm-1", "method": "session/request_permission", "params": {
            "sessionId": sid, "toolCall": {"toolCallId": "t1", "title": "write a file"},
            "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                        {"optionId": "no", "name": "Deny", "kind": "reject_once"}]}})
        while True:
            got = read()
            if got is None:
                return
            answer = got[1]
            if answer.get("id") == "perm-1" and "method" not in answer:
                break
        outcome = answer.get("result", {}).get("outcome", {})  # type: ignore[union-attr]
        update(sid, f"permission: {outcome.get('optionId', outcome.get('outcome'))}")
    update(sid, "done")
    send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})


def main() -> None:
    sessions = 0
    while True:
        got = read()
        if got is None:
            return
        line, msg = got
        if SILENT or "method" not in msg or "id" not in msg:
            continue
        rid, method = msg["id"], msg["method"]
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        assert isinstance(params, dict)
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": 1, "agentCapabilities": {"loadSession": True}, "_meta": {"pid": os.getpid()}}})
        elif method == "session/new":
            sessions += 1
            send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": f"s{sessions}"}})
        elif method == "session/load":
            update(str(params["sessionId"]), "replayed")
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method == "session/prompt":
            prompt(rid, params)
        elif method == "_echo":
            send({"jsonrpc": "2.0", "id": rid, "result": {"raw": line}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no {method}"}})


if __name__ == "__main__":
    main()
