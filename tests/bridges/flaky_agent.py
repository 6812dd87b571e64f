"""A minimal ACP agent (stdlib only) that dies on its first session/prompt when the file named
by $FLAKY_MARK does not exist (it creates it first), and answers "back again" once it does:
for a dead agent restarted by the next call. With $FLAKY_LOAD=1 it can load sessions (any id:
the reply then names it)."""

import json
import os
import sys

MARK = os.environ["FLAKY_MARK"]
LOAD = os.environ.get("FLAKY_LOAD") == "1"

for line in sys.stdin:
    msg = json.loads(line)
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": 1, "agentCapabilities": {"loadSession": LOAD},
                  "agentInfo": {"name": "flaky", "version": "1"}}
    elif method == "session/new":
        result = {"sessionId": f"flaky-{os.getpid()}"}
    elif method == "session/load" and LOAD:
        result = {}
    elif method == "session/prompt":
        if not os.path.exists(MARK):
            open(MARK, "w").close()
            print("flaky_agent: first prompt, going down", file=sys.stderr, flush=True)
            sys.exit(3)
        update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text",
                  "text": f"back again in {msg['params']['sessionId']}"}}
        note = {"jsonrpc": "2.0", "method": "session/update",
                "params": {"sessionId": msg["params"]["sessionId"], "update": update}}
        print(json.dumps(note), flush=True)
        result = {"stopReason": "end_turn"}
    else:
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
