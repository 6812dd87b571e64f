"""A scripted agent that misbehaves on purpose (raw JSON-RPC, no acplink): it ignores the
client's capabilities and puts escape sequences everywhere.

    hostile_agent.py overreach DIR   on session/prompt: terminal/create (/bin/sh -c "touch
                                     DIR/ran", cwd=/) and fs/write_text_file DIR/written.txt,
                                     whatever the client advertised; the reply text tells the
                                     error codes it got, and the client's capabilities
    hostile_agent.py escapes         reply text, a tool title, a plan and stderr full of
                                     OSC 52 / OSC 0 / CSI 2J sequences
    hostile_agent.py chat            for ``acplink chat``: escapes (EVIL and CHAT_EVIL) in the reply,
                                     a tool title and output, a terminal's output, and the
                                     names of a permission's options ("Reject" on allow_always)
    hostile_agent.py escapes-die     escapes on stderr, then exit 3 in the middle of the turn
    hostile_agent.py noise N         answers initialize and session/new, each after N lines of
                                     junk; on session/prompt prints junk forever
    hostile_agent.py question KIND   on session/prompt: asks a question (KIND "permission" or
                                     "elicitation") and waits; when the client cancels, it
                                     reports the answer and how long after the cancel it came,
                                     asks again, reports that answer too, and ends "cancelled"
"""

from __future__ import annotations

import json
import sys
import time

EVIL = "\x1b]52;c;cHduZWQ=\x07\x1b]0;pwned-title\x1b\\\x1b[2J\x9b2J"
#: the sequences of the chat tests: clipboard write, window title, clear screen
CHAT_EVIL = "\x1b]52;c;SGVsbG8=\x07\x1b]0;pwned\x07\x1b[2J" + EVIL
mode = sys.argv[1]
arg = sys.argv[2] if len(sys.argv) > 2 else ""
caps: dict[str, object] = {}
next_id = 100


def send(msg: dict[str, object]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **msg}) + "\n")
    sys.stdout.flush()


def update(sid: str, upd: dict[str, object]) -> None:
    send({"method": "session/update", "params": {"sessionId": sid, "update": upd}})


def call(method: str, params: dict[str, object]) -> dict[str, object]:
    """Send a request and wait for its response (other messages are ignored)."""
    global next_id
    next_id += 1
    send({"id": next_id, "method": method, "params": params})
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("id") == next_id and "method" not in msg:
            return msg
    sys.exit(0)


def question(sid: str) -> dict[str, object]:
    """Ask one question; (its answer, seconds from session/cancel to the answer or None)."""
    global next_id
    next_id += 1
    if arg == "permission":
        send({"id": next_id, "method": "session/request_permission", "params": {
            "sessionId": sid, "toolCall": {"toolCallId": f"t{next_id}", "title": "Risky"},
            "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                        {"optionId": "no", "name": "Reject", "kind": "reject_once"}]}})
    else:
        send({"id": next_id, "method": "elicitation/create", "params": {
            "sessionId": sid, "mode": "form", "message": "Colour?",
            "requestedSchema": {"type": "object", "properties": {"c": {"type": "string"}}}}})
    cancelled_at = None
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("method") == "session/cancel":
            cancelled_at = time.monotonic()
        elif msg.get("id") == next_id and "method" not in msg:
            after = None if cancelled_at is None else time.monotonic() - cancelled_at
            return {"answer": msg.get("result", msg.get("error")), "after_cancel": after}
    sys.exit(0)


def text(sid: str, body: str) -> None:
    update(sid, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": body}})


def prompt(sid: str) -> dict[str, object]:
    if mode == "overreach":
        term = call("terminal/create", {"sessionId": sid, "command": "/bin/sh",
                                        "args": ["-c", f"touch {arg}/ran"], "cwd": "/"})
        write = call("fs/write_text_file", {"sessionId": sid, "path": f"{arg}/written.txt", "content": "x"})
        code = lambda r: r["error"]["code"] if "error" in r else "ok"  # noqa: E731
        text(sid, f"terminal: {code(term)} write: {code(write)} caps: {json.dumps(caps, sort_keys=True)}\n")
    elif mode == "escapes":
        text(sid, f"hello {EVIL}world\n")
        update(sid, {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": f"Run {EVIL}tool",
                     "kind": "execute", "status": "pending"})
        update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed",
                     "title": f"Ran {EVIL}tool"})
        update(sid, {"sessionUpdate": "plan", "entries": [{"content": f"step {EVIL}one", "priority": "low",
                                                           "status": "pending"}]})
        sys.stderr.write(f"stderr {EVIL}line\n")
        sys.stderr.flush()
    elif mode == "chat":
        text(sid, f"hello {CHAT_EVIL}world\n")
        update(sid, {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": f"Read {CHAT_EVIL}file",
                     "status": "completed", "content": [{"type": "content", "content": {
                         "type": "text", "text": f"tool {CHAT_EVIL}output"}}]})
        term = call("terminal/create", {"sessionId": sid, "command": "printf",
                                        "args": ["%b", "term \\033]0;pwned\\007\\033[2J\\033]52;c;SGVsbG8=\\007out\\n"]})
        tid = term["result"]["terminalId"]  # type: ignore[index]
        call("terminal/wait_for_exit", {"sessionId": sid, "terminalId": tid})
        update(sid, {"sessionUpdate": "tool_call", "toolCallId": "t2", "title": "Shell", "status": "completed",
                     "content": [{"type": "terminal", "terminalId": tid}]})
        answer = call("session/request_permission", {
            "sessionId": sid, "toolCall": {"toolCallId": "t3", "title": f"Delete {CHAT_EVIL}all"},
            "options": [{"optionId": "a", "name": f"Reject {CHAT_EVIL}", "kind": "allow_always"},
                        {"optionId": "r", "name": "Allow", "kind": "reject_once"}]})
        text(sid, f"answered {json.dumps(answer.get('result'))}\n")
    elif mode == "question":
        first = question(sid)
        second = question(sid)  # asked after the cancel, before the turn ended
        text(sid, json.dumps({"first": first, "second": second}))
        return {"stopReason": "cancelled"}
    elif mode == "escapes-die":
        sys.stderr.write(f"dying {EVIL}now\n")
        sys.stderr.flush()
        sys.exit(3)
    return {"stopReason": "end_turn"}


for line in sys.stdin:
    msg = json.loads(line)
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if mode == "noise" and method in ("initialize", "session/new"):
        sys.stdout.write("junk line\n" * int(arg))
    if method == "session/prompt" and mode == "noise":
        while True:
            sys.stdout.write(f"junk {EVIL}\n" * 1000)
            sys.stdout.flush()
    if method == "initialize":
        caps = params.get("clientCapabilities", {})
        send({"id": rid, "result": {"protocolVersion": 1, "agentCapabilities": {},
                                    "agentInfo": {"name": f"hostile {EVIL}", "version": "1"}}})
    elif method == "session/new":
        send({"id": rid, "result": {"sessionId": "s1"}})
    elif method == "session/prompt":
        send({"id": rid, "result": prompt(params["sessionId"])})
    elif rid is not None and method is not None:
        send({"id": rid, "error": {"code": -32601, "message": "Method not found"}})
