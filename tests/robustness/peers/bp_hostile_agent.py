"""A hostile agent for the backpressure tests (``python bp_hostile_agent.py N PATH``).

It answers ``initialize`` and ``session/new``, then sends N ``fs/read_text_file`` requests
for PATH in one burst and never reads its stdin again (nor exits): every answer the client
writes stays in the pipe and in the client's buffers.
"""

from __future__ import annotations

import json
import sys
import time


def main() -> None:
    n, path = int(sys.argv[1]), sys.argv[2]
    out = sys.stdout.buffer
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return
        msg = json.loads(line)
        if msg.get("method") == "initialize":
            out.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}}).encode() + b"\n")
            out.flush()
        elif msg.get("method") == "session/new":
            out.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": "s1"}}).encode() + b"\n")
            burst = b"".join(json.dumps({"jsonrpc": "2.0", "id": 1000 + i, "method": "fs/read_text_file",
                                         "params": {"sessionId": "s1", "path": path}}).encode() + b"\n"
                             for i in range(n))
            out.write(burst)
            out.flush()
            print(f"bp_hostile_agent: sent {n} reads; reading no more", file=sys.stderr, flush=True)
            while True:  # alive, stdin left unread; killed by the client's close ladder
                time.sleep(3600)


if __name__ == "__main__":
    main()
