"""A minimal ACP agent (stdlib only) that answers initialize and session/new, then crashes on
session/prompt after writing to stderr: for the "crashing agent" error reports."""

import json
import sys

for line in sys.stdin:
    msg = json.loads(line)
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": 1, "agentCapabilities": {}, "agentInfo": {"name": "crasher", "version": "1"}}
    elif method == "session/new":
        result = {"sessionId": "crash-1"}
    elif method == "session/prompt":
        print("crash_agent: something broke", file=sys.stderr, flush=True)
        sys.exit(3)
    else:
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
