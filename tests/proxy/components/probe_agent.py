"""A raw ACP agent for the proxy tests (standard library only, one JSON line at a time).

``initialize`` → protocol version as asked; ``session/new`` → a session id; ``_probe/echo``
→ its params and method, as received; ``_probe/hang`` → never answered, until its
``$/cancel_request`` (then a ``_probe/cancelled`` notification naming the id it was cancelled
with, and the -32800 answer); ``_probe/burst`` {n} → n ``_probe/tick`` notifications, then the
answer; ``_probe/ask`` → asks the client ``_probe/question`` and answers with its result;
``_probe/open`` → an answer and, right behind it, a ``_probe/opened`` notification;
``_probe/exit`` → exits with code 3 at once; anything else → -32601.
"""

import json
import os
import sys

out = sys.stdout


def send(msg):
    out.write(json.dumps(msg) + "\n")
    out.flush()


hanging = {}
asked = {}
for line in sys.stdin:
    msg = json.loads(line)
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params")
    if method is None:  # a response to our question
        origin = asked.pop(rid)
        send({"jsonrpc": "2.0", "id": origin, "result": {"answer": msg.get("result")}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": params["protocolVersion"],
                                                      "agentCapabilities": {}, "agentInfo": {"name": "probe"}}})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "probe-1"}})
    elif method == "_probe/echo":
        send({"jsonrpc": "2.0", "id": rid, "result": {"method": method, "params": params}})
    elif method == "_probe/open":  # an answer, and right behind it an update naming what it opened
        for i in range(params.get("before", 0)):  # (a queue of notifications ahead of the answer)
            send({"jsonrpc": "2.0", "method": "_probe/tick", "params": {"i": i}})
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": f"s-{rid}"}})
        send({"jsonrpc": "2.0", "method": "_probe/opened", "params": {"sessionId": f"s-{rid}"}})
    elif method == "_probe/note":
        send({"jsonrpc": "2.0", "method": "_probe/noted", "params": params})
    elif method == "_probe/hang":
        hanging[rid] = method
    elif method == "$/cancel_request":
        cid = params["requestId"]
        if hanging.pop(cid, None):
            send({"jsonrpc": "2.0", "method": "_probe/cancelled", "params": {"requestId": cid}})
            send({"jsonrpc": "2.0", "id": cid, "error": {"code": -32800, "message": "cancelled"}})
    elif method == "_probe/burst":
        for i in range(params["n"]):
            send({"jsonrpc": "2.0", "method": "_probe/tick", "params": {"i": i}})
        send({"jsonrpc": "2.0", "id": rid, "result": {"sent": params["n"]}})
    elif method == "_probe/ask":
        qid = f"q{rid}"
        asked[qid] = rid
        send({"jsonrpc": "2.0", "id": qid, "method": "_probe/question", "params": {"q": "ok?"}})
    elif method == "_probe/exit":
        os._exit(3)
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})
