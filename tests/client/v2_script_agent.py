"""A scripted ACP v2 agent on raw JSON lines (no acplink), for the edges of the v2 client.

    python v2_script_agent.py MODE

``initialize`` is answered with version 2 (``MODE=v1`` answers 1, ``MODE=refuse`` errors
-32022 with ``supported: [1]`` for any version but 1, ``MODE=refuse-params`` errors -32602
without data for any version but 1, ``MODE=refuse-all`` errors -32022 with ``supported: [3]``,
``MODE=echo`` answers the version asked for with a v1 body, as agents on the official Python
SDK 0.12.1 do); ``session/new`` opens ``s1``. A
``session/prompt`` is answered by the MODE:

* ``normal``: receipt, echo, running, "hi" chunk, idle end_turn
* ``late-receipt``: echo, running, chunk, idle end_turn, and only then the receipt
* ``custom-stop``: idle with the stop reason ``_acme_paused``
* ``bad-stop``: idle whose ``stopReason`` is not a string (a malformed known field)
* ``no-stop``: idle without a stop reason
* ``error-response``: the prompt is answered with an error (nothing inserted)
* ``permission``: asks permission for tool call ``c1`` first, then replies with the outcome
* ``fs``: calls ``fs/read_text_file`` (a v1 method) and replies with the error code it got
"""

from __future__ import annotations

import json
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "normal"


def send(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def update(upd: dict) -> None:
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": upd}})


def idle(**fields: object) -> None:
    update({"sessionUpdate": "state_update", "state": "idle", **fields})


def chunk(text: str) -> None:
    update({"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": {"type": "text", "text": text}})


def read() -> dict | None:
    line = sys.stdin.readline()
    return json.loads(line) if line else None


def ask(method: str, params: dict) -> dict:
    send({"jsonrpc": "2.0", "id": "q1", "method": method, "params": params})
    while True:
        msg = read()
        if msg is None or msg.get("id") == "q1":
            return msg or {}


def prompt(rid: object, params: dict) -> None:
    receipt = {"jsonrpc": "2.0", "id": rid, "result": {"messageId": "u1"}}
    if MODE == "error-response":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "empty prompt"}})
        return
    if MODE != "late-receipt":
        send(receipt)
    update({"sessionUpdate": "user_message", "messageId": "u1", "content": params.get("prompt", [])})
    update({"sessionUpdate": "state_update", "state": "running"})
    if MODE == "permission":
        answer = ask("session/request_permission", {
            "sessionId": "s1", "title": "Write file",
            "subject": {"type": "tool_call", "toolCall": {"toolCallId": "c1", "title": "Write", "kind": "edit"}},
            "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"},
                        {"optionId": "no", "name": "No", "kind": "reject_once"}]})
        chunk(json.dumps(answer.get("result", {}).get("outcome")))
    elif MODE == "fs":
        answer = ask("fs/read_text_file", {"sessionId": "s1", "path": "/etc/hostname"})
        chunk(str(answer.get("error", {}).get("code")))
    else:
        chunk("hi")
    if MODE == "custom-stop":
        idle(stopReason="_acme_paused")
    elif MODE == "bad-stop":
        idle(stopReason=42)
    elif MODE == "no-stop":
        idle()
    else:
        idle(stopReason="end_turn")
    if MODE == "late-receipt":
        send(receipt)


def main() -> None:
    while (msg := read()) is not None:
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if rid is None:
            continue
        if method == "initialize":
            if MODE == "refuse" and params.get("protocolVersion") != 1:
                send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32022, "message": "Unsupported protocol version",
                                                              "data": {"requested": params.get("protocolVersion"),
                                                                       "supported": [1]}}})
            elif MODE == "refuse-params" and params.get("protocolVersion") != 1:
                send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "Invalid params"}})
            elif MODE == "refuse-all":
                send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32022, "message": "Unsupported protocol version",
                                                              "data": {"supported": [3]}}})
            elif MODE == "echo":
                send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": params.get("protocolVersion"),
                                                              "agentInfo": {"name": "script-echo", "version": "1"}}})
            elif MODE in ("v1", "refuse", "refuse-params"):
                send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1, "agentCapabilities": {},
                                                              "agentInfo": {"name": "script-v1", "version": "1"}}})
            else:
                send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 2,
                                                              "info": {"name": "script-v2", "version": "1"},
                                                              "capabilities": {"session": {"delete": {}}}}})
        elif method == "session/new":
            send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s1"}})
        elif method == "session/prompt":
            prompt(rid, params)
        elif method in ("session/close", "session/delete"):
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})


if __name__ == "__main__":
    main()
