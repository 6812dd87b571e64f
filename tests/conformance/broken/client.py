#!/usr/bin/env python3
"""A small raw-stdio ACP client that is correct, except for the one behaviour ``--break NAME``
breaks. Used to prove that ``acplink check-client`` fails each broken behaviour with the right id.

    client.py [--break NAME] -- AGENT_CMD ...
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import threading
from typing import Any

BREAKS = {
    "none": "behave correctly",
    "bad-option": "answer permission requests with an option that was not offered",
    "fs-wrong-content": "answer fs/read_text_file with other content",
    "no-reply-unknown": "never answer unknown (non-`_`) methods",
    "ignore-cancelled": "never answer a request the agent cancelled with $/cancel_request",
    "image-prompt": "send an image block although the agent did not advertise images",
    "crash-on-unknown-update": "exit on an unknown session/update kind",
    "bad-session": "prompt a session that session/new did not return",
    "serve-outside": "serve fs/read_text_file of any path, also outside the session's directory",
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--break", dest="broken", default="none", choices=sorted(BREAKS))
    ap.add_argument("agent", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    broken = args.broken
    cmd = args.agent[1:] if args.agent[:1] == ["--"] else args.agent
    agent = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert agent.stdin is not None and agent.stdout is not None
    terminals: dict[str, subprocess.CompletedProcess[str]] = {}
    lines: queue.Queue[bytes] = queue.Queue()
    pushback: list[dict[str, Any]] = []

    def pump() -> None:
        assert agent.stdout is not None
        for line in agent.stdout:
            lines.put(line)
        lines.put(b"")

    threading.Thread(target=pump, daemon=True).start()

    def send(msg: dict[str, Any]) -> None:
        assert agent.stdin is not None
        agent.stdin.write(json.dumps(msg).encode() + b"\n")
        agent.stdin.flush()

    def answer(rid: Any, result: Any = None, error: dict[str, Any] | None = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid}
        msg.update({"error": error} if error is not None else {"result": result})
        send(msg)

    def inside(path: str) -> bool:
        root = os.path.realpath(os.getcwd())
        return os.path.commonpath([root, os.path.realpath(path)]) == root

    def call(rid: int, method: str, params: dict[str, Any]) -> None:
        send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})

    call(1, "initialize", {"protocolVersion": 1, "clientInfo": {"name": "broken-client", "version": broken},
                           "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True},
                                                  "terminal": True}})
    sid = None
    while True:
        if pushback:
            msg = pushback.pop()
        else:
            raw = lines.get()
            if not raw:
                break
            msg = json.loads(raw)
        method = msg.get("method")
        if broken == "ignore-cancelled" and method == "session/request_permission":
            try:  # a request followed at once by its $/cancel_request: never answered
                nxt = json.loads(lines.get(timeout=0.5) or b"null")
            except queue.Empty:
                nxt = None
            if isinstance(nxt, dict) and nxt.get("method") == "$/cancel_request":
                continue
            if isinstance(nxt, dict):
                pushback.append(nxt)
        if method is None:  # a response to one of ours
            if msg.get("id") == 1:
                call(2, "session/new", {"cwd": os.getcwd(), "mcpServers": []})
            elif msg.get("id") == 2:
                sid = msg["result"]["sessionId"]
                blocks: list[dict[str, Any]] = [{"type": "text", "text": "probe"}]
                if broken == "image-prompt":
                    blocks.append({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="})
                call(3, "session/prompt", {"sessionId": "made-up" if broken == "bad-session" else sid,
                                           "prompt": blocks})
            elif msg.get("id") == 3:
                break
            continue
        params = msg.get("params") or {}
        rid = msg.get("id")
        if method == "session/update":
            kind = params.get("update", {}).get("sessionUpdate")
            if broken == "crash-on-unknown-update" and kind not in (
                    "agent_message_chunk", "agent_thought_chunk", "user_message_chunk", "plan", "tool_call",
                    "tool_call_update", "available_commands_update", "session_info_update"):
                return 3
            continue
        if rid is None:
            continue
        if method == "session/request_permission":
            option = "made-up" if broken == "bad-option" else params["options"][0]["optionId"]
            answer(rid, {"outcome": {"outcome": "selected", "optionId": option}})
        elif method == "fs/read_text_file" and broken != "serve-outside" and not inside(params["path"]):
            answer(rid, error={"code": -32002, "message": f"outside the session's directory: {params['path']}"})
        elif method == "fs/read_text_file":
            try:
                with open(params["path"], encoding="utf-8") as f:
                    content = f.read()
                answer(rid, {"content": "wrong" if broken == "fs-wrong-content" else content})
            except OSError as exc:
                answer(rid, error={"code": -32002, "message": f"cannot read: {exc.strerror}"})
        elif method == "fs/write_text_file":
            with open(params["path"], "w", encoding="utf-8") as f:
                f.write(params["content"])
            answer(rid, {})
        elif method == "terminal/create":
            tid = f"t{len(terminals) + 1}"
            terminals[tid] = subprocess.run([params["command"], *params.get("args", [])], capture_output=True,
                                            text=True, check=False)
            answer(rid, {"terminalId": tid})
        elif method == "terminal/wait_for_exit":
            answer(rid, {"exitCode": terminals[params["terminalId"]].returncode})
        elif method == "terminal/output":
            done = terminals[params["terminalId"]]
            answer(rid, {"output": done.stdout, "truncated": False, "exitStatus": {"exitCode": done.returncode}})
        elif method == "terminal/release":
            answer(rid, {})
        elif method.startswith("_") or broken != "no-reply-unknown":
            answer(rid, error={"code": -32601, "message": f"Method not found: {method}"})
    agent.stdin.close()
    agent.wait(10)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (BrokenPipeError, KeyboardInterrupt):
        pass
