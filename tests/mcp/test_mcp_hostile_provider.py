"""The caller (an acplink agent's ``ctx.mcp``) against a hostile provider, over a real pipe on
ACP v1 and v2: a raw JSON-RPC client declares the ``acp`` server ``evil`` and answers its
``mcp/message`` requests with bad carriers, never answers some at all, and sends notifications
for requests that have ended. acplink's own client cannot be made to send these (it checks its
answers against the schema), hence the raw peer."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

AGENT = [sys.executable, str(Path(__file__).with_name("mcp_agent.py"))]
GUARD = 60.0  # a bound on awaits that must finish (never a timing assertion)

pytestmark = pytest.mark.parametrize("version", [1, 2])

#: the answer to each inner method (None: never answered, whatever comes after)
CARRIERS: dict[str, Any] = {
    "both": {"result": {"ok": 1}, "error": {"code": -32000, "message": "also an error"}},
    "neither": {"_meta": {"k": 1}},
    "codeless": {"error": {"message": "no code"}},
    "textcode": {"error": {"code": "-32000", "message": "a code that is text"}},
    "notobject": [1, 2],
    "tools/call": None,  # (the agent's `timeout evil` calls the tool hang)
}


class HostileClient:
    """A raw ACP client of the agent (see the module)."""

    def __init__(self, proc: asyncio.subprocess.Process, version: int) -> None:
        self.proc = proc
        self.version = version
        self.ids = 0
        self.unanswered: list[Any] = []  # outer ids of the mcp/message requests left unanswered
        self.cancelled: list[Any] = []  # the ids $/cancel_request named
        self.answered: list[str] = []  # requestIds of the inner requests answered
        self.session = ""

    async def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(orjson.dumps(msg) + b"\n")
        await self.proc.stdin.drain()

    async def request(self, method: str, params: dict[str, Any]) -> int:
        self.ids += 1
        await self.send({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        return self.ids

    async def recv(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), GUARD)
        assert line, "the agent closed its output"
        msg: dict[str, Any] = orjson.loads(line)
        return msg

    async def serve_until(self, done: Any) -> dict[str, Any]:
        """Handle the agent's messages (answering mcp/message as CARRIERS says) until, after
        one, ``done(msg)``; that message."""
        while True:
            msg = await self.recv()
            method = msg.get("method")
            if method == "mcp/message" and "id" in msg:
                params = msg["params"]
                carrier = CARRIERS[params["method"]]
                if carrier is None:
                    self.unanswered.append(msg["id"])
                else:
                    self.answered.append(params["requestId"])
                    await self.send({"jsonrpc": "2.0", "id": msg["id"], "result": carrier})
            elif method == "$/cancel_request":
                self.cancelled.append(msg["params"]["requestId"])
            if done(msg):
                return msg

    async def start(self, cwd: Path) -> None:
        if self.version == 1:
            init: dict[str, Any] = {"protocolVersion": 1, "clientCapabilities": {}}
        else:
            init = {"protocolVersion": 2, "info": {"name": "hostile", "version": "1"}, "capabilities": {}}
        rid = await self.request("initialize", init)
        answer = await self.serve_until(lambda m: m.get("id") == rid and "method" not in m)
        assert answer["result"]["protocolVersion"] == self.version
        rid = await self.request("session/new", {"cwd": str(cwd), "mcpServers": [
            {"type": "acp", "name": "evil", "serverId": "evil-1"}]})
        answer = await self.serve_until(lambda m: m.get("id") == rid and "method" not in m)
        self.session = answer["result"]["sessionId"]

    async def say(self, text: str) -> str:
        """One prompt turn: the agent's reply text."""
        rid = await self.request("session/prompt", {"sessionId": self.session,
                                                    "prompt": [{"type": "text", "text": text}]})
        chunks: list[str] = []

        def ended(msg: dict[str, Any]) -> bool:
            update = (msg.get("params") or {}).get("update") or {}
            if msg.get("method") == "session/update" and update.get("sessionUpdate") == "agent_message_chunk":
                chunks.append(update["content"]["text"])
            if self.version == 1:
                return msg.get("id") == rid and "method" not in msg
            return update.get("sessionUpdate") == "state_update" and update.get("state") == "idle"

        await self.serve_until(ended)
        return "".join(chunks)


async def test_bad_carriers_unanswered_requests_and_late_notifications(version: int, tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec(*AGENT, stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        peer = HostileClient(proc, version)
        await peer.start(tmp_path)
        # both result and error: the result wins
        assert await peer.say("request evil both") == 'result: {"ok": 1}'
        # not a carrier: the caller raises (ProtocolError), saying what is wrong
        assert (await peer.say("request evil neither")).startswith(
            "outer: ProtocolError: invalid mcp/message answer: the carrier has neither `result` nor an `error`")
        for method in ("codeless", "textcode"):
            assert (await peer.say(f"request evil {method}")).startswith(
                "outer: ProtocolError: invalid mcp/message answer: the inner error's code must be an integer"), method
        assert (await peer.say("request evil notobject")).startswith(
            "outer: ProtocolError: invalid mcp/message answer: expected a carrier object")
        # a provider that never answers holds the turn no longer than the caller's timeout (0.5 s);
        # the caller told it to stop ($/cancel_request for that very request)
        assert await peer.say("timeout evil") == "timed out"
        assert len(peer.unanswered) == 1
        if peer.cancelled != peer.unanswered:  # (the cancel may follow the turn's end)
            await peer.serve_until(lambda m: peer.cancelled == peer.unanswered)
        # notifications for requests that have ended (answered, or given up on) are dropped:
        # the agent goes on as if they never came
        for request_id in (*peer.answered, "never-sent"):
            await peer.send({"jsonrpc": "2.0", "method": "mcp/message", "params": {
                "serverId": "evil-1", "requestId": request_id, "method": "notifications/progress",
                "params": {"progressToken": "t", "progress": 1}}})
        assert await peer.say("request evil both") == 'result: {"ok": 1}'
        assert proc.returncode is None
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        stderr = await asyncio.wait_for(proc.stderr.read(), GUARD) if proc.stderr is not None else b""
        await asyncio.wait_for(proc.wait(), GUARD)
    assert b"Traceback" not in stderr, stderr.decode()
