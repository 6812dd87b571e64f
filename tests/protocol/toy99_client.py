"""Toy protocol version 99, the client half: a lifecycle no real version has, described only as
data (``TurnRules``), to show that the client's one prompt turn runs any version's lifecycle.

Version 99 is v1's methods and models, except that ``session/prompt`` is answered with a
receipt (``{"messageId"}``) and the turn ends with a ``status`` update: ``busy`` while it runs,
``done`` (with the stop reason) when it ended. It has no echo of the prompt, and a prompt for
a busy session is refused. The toy itself is defined once, in ``toy99.py`` (which also serves
it with acplink's agent); this module adds a scripted raw-JSON agent speaking it.

``SCRIPTED_AGENT`` speaks it as raw JSON lines on stdin/stdout (``python -c``), with a mode:
``normal`` (receipt, busy, a reply chunk, done), ``late`` (the receipt after the ``done``).
"""

from __future__ import annotations

from toy99 import TOY99, ToyReceipt

__all__ = ["SCRIPTED_AGENT", "TOY99", "ToyReceipt"]

SCRIPTED_AGENT = r'''
import json, sys
MODE = sys.argv[1]

def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()

def update(upd):
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": upd}})

for line in sys.stdin:
    msg = json.loads(line)
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if rid is None:
        continue
    if method == "initialize":
        version = params.get("protocolVersion")
        if version != 99:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32022, "message": "Unsupported protocol version",
                                                          "data": {"supported": [99]}}})
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 99, "agentCapabilities": {},
                                                      "agentInfo": {"name": "toy99", "version": "1"}}})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s1"}})
    elif method == "session/prompt":
        text = params["prompt"][0]["text"]
        receipt = {"jsonrpc": "2.0", "id": rid, "result": {"messageId": "t-" + text}}
        if MODE == "normal":
            send(receipt)
        update({"sessionUpdate": "status", "state": "busy"})
        update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "toy: " + text}})
        update({"sessionUpdate": "status", "state": "done", "stopReason": "max_tokens"})
        if MODE == "late":
            send(receipt)
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found: " + method}})
'''
