"""examples/v2_agent.py over real pipes: a raw v2 client cancels its tool call alone; a v1
client (acplink's) still gets v1."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from v2_wire import INIT2

from acplink import connect

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "v2_agent.py"


class Pipe:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")

    def request(self, method: str, params: Any) -> int:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    async def recv(self) -> Any:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), 20)
        assert line, "the agent closed its output"
        return json.loads(line)

    async def until(self, pred: Any) -> list[Any]:
        out = []
        while True:
            out.append(await self.recv())
            if pred(out[-1]):
                return out


def update(m: Any) -> dict[str, Any]:
    return m["params"]["update"] if m.get("method") == "session/update" else {}


async def test_v2_client_cancels_the_search_alone(tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec(sys.executable, str(EXAMPLE), stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE)
    p = Pipe(proc)
    try:
        rid = p.request("initialize", INIT2)
        assert (await p.until(lambda m: m.get("id") == rid))[-1]["result"]["protocolVersion"] == 2
        rid = p.request("session/new", {"cwd": str(tmp_path)})
        sid = (await p.until(lambda m: m.get("id") == rid))[-1]["result"]["sessionId"]
        p.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "search cats"}]})
        tool = update((await p.until(lambda m: update(m).get("sessionUpdate") == "tool_call_update"))[-1])
        assert tool["capabilities"] == {"cancel": {}}
        p.request("tool_call/cancel", {"sessionId": sid, "toolCallId": tool["toolCallId"]})
        rest = await p.until(lambda m: update(m).get("state") == "idle")
        assert update(rest[-1])["stopReason"] == "end_turn"
        said = "".join(update(m)["content"]["text"] for m in rest
                       if update(m).get("sessionUpdate") == "agent_message_chunk")
        assert said.startswith("Stopped after ")
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), 20)


async def test_v1_client_still_gets_v1(tmp_path: Path) -> None:
    async with connect([sys.executable, str(EXAMPLE)]) as client:
        assert client.conn.protocol_version == 1
        session = await client.new_session(cwd=tmp_path)
        turn = session.prompt("hi")
        _ = [u async for u in turn]
        assert turn.stop_reason == "end_turn"
        assert session.state.agent_text == "You said: hi"
