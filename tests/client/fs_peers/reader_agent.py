"""A raw agent that, on its first prompt, asks the client for COUNT concurrent reads of PATH.

argv: PATH COUNT STATS_FILE. Answers initialize and session/new, then sends COUNT
``fs/read_text_file`` requests at once, reads every answer (keeping only its length), writes
``{"ok": n, "errors": [...], "bytes": total}`` to STATS_FILE and ends the turn.
"""

from __future__ import annotations

import sys

import orjson

path, count, stats_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
out = sys.stdout.buffer
inp = sys.stdin.buffer


def send(msg: object) -> None:
    out.write(orjson.dumps(msg) + b"\n")
    out.flush()


for raw in inp:
    msg = orjson.loads(raw)
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": 1, "agentCapabilities": {}}})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": mid, "result": {"sessionId": "s1"}})
    elif method == "session/prompt":
        for i in range(count):
            send({"jsonrpc": "2.0", "id": f"r{i}", "method": "fs/read_text_file",
                  "params": {"sessionId": "s1", "path": path}})
        ok, total, errors = 0, 0, []
        while ok + len(errors) < count:
            answer = orjson.loads(inp.readline())
            if "result" in answer:
                ok += 1
                total += len(answer["result"]["content"])
            else:
                errors.append(answer.get("error"))
            del answer
        with open(stats_file, "wb") as f:
            f.write(orjson.dumps({"ok": ok, "errors": errors, "bytes": total}))
        send({"jsonrpc": "2.0", "id": mid, "result": {"stopReason": "end_turn"}})
