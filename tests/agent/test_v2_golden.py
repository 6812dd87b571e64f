"""One app served as v1 and as v2 gives equivalent conversations.

The same scripted conversation (echo, a tool call, a plan, a permission, a failing turn) is
run against the same app over v1 and over v2. Each wire transcript (ids normalised) is
compared with its golden file in ``golden/`` (``ACPLINK_UPDATE_GOLDEN=1`` rewrites them), and
both are projected onto a protocol-neutral form that must be equal.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from v2_wire import INIT2, RawClient, idle, make_app, served

GOLDEN = Path(__file__).parent / "golden"
SCRIPT = ["hi", "tool", "plan", "perm", "fail"]
_ID = re.compile(r"^(sess_[0-9a-f]{32}|msg_[0-9a-f]{32}|call_[0-9a-f]{12})$")


async def converse(c: RawClient, version: int) -> None:
    init = INIT2 if version == 2 else {"protocolVersion": 1}
    await c.call("initialize", init)
    r, _ = await c.call("session/new", {"cwd": "/tmp", "mcpServers": []})
    sid = r["result"]["sessionId"]
    for text in SCRIPT:
        rid = c.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]})
        done = idle if version == 2 else (lambda m, rid=rid: m.get("id") == rid)
        seen_answer = version == 1
        while True:
            msg = await c.recv()
            if msg.get("method") == "session/request_permission":
                c.send({"jsonrpc": "2.0", "id": msg["id"],
                        "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}})
            seen_answer = seen_answer or msg.get("id") == rid
            if done(msg) and seen_answer:
                break


def normalised(log: list[Any]) -> list[Any]:
    names: dict[str, str] = {}

    def walk(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, str) and _ID.match(v):
            return names.setdefault(v, f"<{v.split('_')[0]}{len(names) + 1}>")
        return v

    return [walk(m) for m in log]


def neutral(log: list[Any]) -> list[tuple[Any, ...]]:
    """What the user sees, whatever the version: text, tool calls, plans, permissions, ends."""
    out: list[tuple[Any, ...]] = []
    ids: dict[Any, str] = {}
    for m in log:
        if m.get("method") == "session/request_permission":
            out.append(("permission", [o["optionId"] for o in m["params"]["options"]]))
        if "error" in m and m.get("id", 0) > 2:
            out.append(("end", "error", m["error"]["code"]))
        if m.get("result", {}).get("stopReason"):
            out.append(("end", m["result"]["stopReason"]))
        if m.get("method") != "session/update":
            continue
        u = m["params"]["update"]
        kind = u["sessionUpdate"]
        if kind == "agent_message_chunk":
            if out and out[-1][0] == "text":
                out[-1] = ("text", out[-1][1] + u["content"]["text"])
            else:
                out.append(("text", u["content"]["text"]))
        elif kind in ("tool_call", "tool_call_update"):
            tid = ids.setdefault(u["toolCallId"], f"tool{len(ids) + 1}")
            out.append(("tool", tid, u.get("title"), u.get("status")))
        elif kind in ("plan", "plan_update"):
            entries = u["entries"] if kind == "plan" else u["plan"]["entries"]
            out.append(("plan", [e["content"] for e in entries]))
        elif kind == "state_update" and u["state"] == "idle":
            reason = u.get("stopReason")
            out.append(("end", "error", u["error"]["code"]) if reason == "error" else ("end", reason))
    return out


async def transcript(version: int) -> list[Any]:
    async with served(make_app()) as c:
        await converse(c, version)
        return normalised(c.log)


def check_golden(name: str, log: list[Any]) -> None:
    path = GOLDEN / name
    text = "".join(json.dumps(m, sort_keys=True) + "\n" for m in log)
    if os.environ.get("ACPLINK_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"{name} differs from its golden file (ACPLINK_UPDATE_GOLDEN=1 rewrites it)"


async def test_v1_and_v2_conversations_are_equivalent() -> None:
    v1 = await transcript(1)
    v2 = await transcript(2)
    check_golden("conversation.v1.jsonl", v1)
    check_golden("conversation.v2.jsonl", v2)
    assert neutral(v1) == neutral(v2)
    assert ("permission", ["allow", "allow_always", "reject"]) in neutral(v2)
    assert [e for e in neutral(v2) if e[0] == "end"] == [("end", "end_turn")] * 4 + [("end", "error", -32603)]
