"""Toy protocol version 99, the client half: a lifecycle no real version has, described only as
data (``TurnRules``), to show that the client's one prompt turn runs any version's lifecycle.

Version 99 is v1's methods and models, except that ``session/prompt`` is answered with a
receipt (``{"turnId"}``) and the turn ends with a ``status`` update: ``busy`` while it runs,
``done`` (with the stop reason) when it ended. It has no echo of the prompt, and a prompt for
a busy session is refused. (The agent half, ``tests/protocol/toy99.py``, serves the same toy;
the lead merges the two definitions.)

``SCRIPTED_AGENT`` speaks it as raw JSON lines on stdin/stdout (``python -c``), with a mode:
``normal`` (receipt, busy, a reply chunk, done), ``late`` (the receipt after the ``done``).
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from acplink.protocol import V1, Protocol
from acplink.protocol.turns import TurnRules
from acplink.schema import v1 as v1_models

TOY_TURNS = TurnRules(answer="receipt", busy="refuse", state_kind="status", idle_state="done",
                      running_state="busy")


class ToyReceipt(BaseModel):
    """The toy's answer to ``session/prompt``: the id of the turn it started."""

    model_config = ConfigDict(populate_by_name=True)
    turn_id: str = Field(alias="turnId")


class _ToyModels(types.ModuleType):
    """v1's models, with the toy's receipt as the prompt's result."""

    PromptResponse = ToyReceipt

    def __getattr__(self, name: str) -> Any:
        return getattr(v1_models, name)


TOY_MODELS = _ToyModels("toy99_models")
_BASE = V1.derive(99, {})
TOY99: Protocol = dataclasses.replace(_BASE, table=_BASE.table.renamed({}, TOY_MODELS), models=TOY_MODELS,
                                      turns=TOY_TURNS)

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
        receipt = {"jsonrpc": "2.0", "id": rid, "result": {"turnId": "t-" + text}}
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
