"""A toy version 99 (``toy99.py``: v1 with a prompt lifecycle of its own) is served by an
unchanged AgentApp and driven with raw JSON-RPC: the agent side runs whatever lifecycle the
protocol object says, with no hidden knowledge of v2."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from toy99 import VERSION, Wire, make_app, registered, status, updates

from acplink.transports.memory import memory_pair

HERE = Path(__file__).parent
INIT = {"protocolVersion": VERSION, "clientCapabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}


@pytest.fixture(autouse=True)
def toy() -> Iterator[None]:
    with registered():
        yield


@asynccontextmanager
async def served() -> AsyncIterator[Wire]:
    ours, theirs = memory_pair()
    conn = make_app().connection(theirs)
    wire = Wire()
    wire.write = lambda data: (ours.write(data), ours.flush())
    await ours.start(wire)
    await conn.start()
    try:
        yield wire
    finally:
        await conn.aclose()
        await ours.aclose()


async def start(w: Wire) -> str:
    r, _ = await w.call("initialize", INIT)
    assert r["result"]["protocolVersion"] == VERSION and "agentCapabilities" in r["result"]
    r, _ = await w.call("session/new", {"cwd": "/tmp", "mcpServers": []})
    return str(r["result"]["sessionId"])


def prompt(sid: str, text: str) -> dict[str, Any]:
    return {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}


async def test_a_prompt_is_answered_with_a_receipt_and_ends_with_done() -> None:
    async with served() as w:
        sid = await start(w)
        r, before = await w.call("session/prompt", prompt(sid, "hi"))
        assert set(r["result"]) == {"messageId"}  # the receipt, not a stop reason
        msgs = before + await w.until(lambda m: status(m, "done"))
        ups = updates(msgs)
        assert ups[0] == {"sessionUpdate": "status", "state": "busy"}  # no echo: the state comes first
        said = "".join(u["content"]["text"] for u in ups if u["sessionUpdate"] == "agent_message_chunk")
        assert said == "v99 echo hi"
        assert ups[-1] == {"sessionUpdate": "status", "state": "done", "stopReason": "end_turn"}
        assert not any(u["sessionUpdate"] in ("state_update", "user_message") for u in updates(w.log))  # no v2


async def test_a_prompt_during_a_turn_is_refused_and_cancel_ends_it() -> None:
    async with served() as w:
        sid = await start(w)
        r, _ = await w.call("session/prompt", prompt(sid, "slow"))
        assert "messageId" in r["result"]
        r, _ = await w.call("session/prompt", prompt(sid, "again"))
        assert r["error"]["code"] == -32600 and "already has a prompt turn running" in r["error"]["message"]
        w.notify("session/cancel", {"sessionId": sid})
        done = (await w.until(lambda m: status(m, "done")))[-1]
        assert done["params"]["update"]["stopReason"] == "cancelled"
        r, _ = await w.call("session/prompt", prompt(sid, "after"))  # the session is free again
        assert "messageId" in r["result"]
        ups = updates(await w.until(lambda m: status(m, "done")))
        assert ups[-1]["stopReason"] == "end_turn"


async def test_the_turn_waits_for_the_user_in_the_waiting_state() -> None:
    async with served() as w:
        sid = await start(w)
        w.request("session/prompt", prompt(sid, "perm"))
        msgs = await w.until(lambda m: m.get("method") == "session/request_permission")
        assert [u["state"] for u in updates(msgs) if u["sessionUpdate"] == "status"] == ["busy", "asking"]
        req = msgs[-1]
        w.send({"jsonrpc": "2.0", "id": req["id"], "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}})
        rest = updates(await w.until(lambda m: status(m, "done")))
        assert [u["state"] for u in rest if u["sessionUpdate"] == "status"] == ["busy", "done"]
        assert "picked allow" in str(rest)


async def test_the_same_app_serves_v1_unchanged() -> None:
    async with served() as w:
        r, _ = await w.call("initialize", {"protocolVersion": 1})
        assert r["result"]["protocolVersion"] == 1
        r, _ = await w.call("session/new", {"cwd": "/tmp", "mcpServers": []})
        r, before = await w.call("session/prompt", prompt(r["result"]["sessionId"], "hi"))
        assert r["result"] == {"stopReason": "end_turn"}
        assert not any(u["sessionUpdate"] == "status" for u in updates(before))


async def test_served_by_an_agent_process() -> None:
    proc = await asyncio.create_subprocess_exec(sys.executable, str(HERE / "toy99.py"), stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    stdout = proc.stdout
    w = Wire()
    w.write = proc.stdin.write

    async def read() -> None:
        while line := await stdout.readline():
            w.data_received(line)
        w.eof_received(None)

    reader = asyncio.create_task(read())
    try:
        sid = await start(w)
        r, _ = await w.call("session/prompt", prompt(sid, "hi"))
        assert set(r["result"]) == {"messageId"}
        ups = updates(await w.until(lambda m: status(m, "done")))
        assert ups[-1] == {"sessionUpdate": "status", "state": "done", "stopReason": "end_turn"}
    finally:
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), 10)
        await reader
