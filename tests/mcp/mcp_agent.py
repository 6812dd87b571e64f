"""An acplink agent (v1 and v2) that calls its client's MCP servers over ACP (``ctx.mcp``).

Commands (the prompt's text), each answered with one line of text:

- ``servers``: the session's acp servers, ``name=serverId`` joined by commas;
- ``tools SERVER``: the tool names of SERVER;
- ``call SERVER TOOL JSON``: calls TOOL (a tool call is shown), with progress: ``progress: N,
  ...; result: TEXT`` or ``mcp-error: CODE MESSAGE``;
- ``request SERVER METHOD JSON``: one raw inner request: ``result: JSON`` / ``mcp-error: CODE``;
- ``timeout SERVER``: ``tools/call`` of ``hang`` with a 0.5 s timeout: ``timed out``;
- ``cancel SERVER``: calls ``hang``, cancels the call once the provider reported progress:
  ``cancelled``;
- ``flood SERVER N``: N concurrent calls of ``hang``; once the others are refused, calls
  ``release`` on the server ``gate``: ``ok=K limit=L`` (K answered, L refused -33000);
- ``intid SERVER``: ``tools/list`` sent by hand with the integer ``requestId`` 5 (both schemas
  say a string): ``result: JSON`` or the outer error;
- ``background SERVER``: calls ``hang`` in a task of the connection's own (not the turn's),
  answered ``started`` once the provider reported progress; ``outcome`` (in any session) waits
  for that call and answers how it ended (``outer: CODE MESSAGE``, ...).

It takes ``session/load`` and ``session/resume`` (a session it does not hold is made again;
the id ``missing`` is refused), ``session/close`` and ``session/delete``.

Any outer failure answers ``outer: CODE MESSAGE`` (RequestError) or ``outer: TYPE``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import orjson

from acplink import (
    AgentApp,
    Context,
    McpError,
    PromptContext,
    RequestError,
    RequestTimeout,
    ResourceNotFound,
    run_agent,
)
from acplink.mcp.binding import with_inner_meta

app = AgentApp("mcp-agent", "1.0", protocols=(1, 2))
#: the call ``background`` started (``outcome`` reports how it ended)
background: list[asyncio.Task[str]] = []


def _text(result: Any) -> str:
    return " ".join(b.get("text", "") for b in result.get("content", []) if isinstance(b, dict))


async def _flood(ctx: PromptContext, server: str, n: int) -> str:
    refused = 0
    three_refused = asyncio.Event()

    async def one() -> bool:
        nonlocal refused
        try:
            await ctx.mcp.request(server, "tools/call", {"name": "hang", "arguments": {}})
            return True
        except RequestError as exc:
            if exc.code != -33000:
                raise
            refused += 1
            if refused == n - 64:
                three_refused.set()
            return False

    tasks = [asyncio.ensure_future(one()) for _ in range(n)]
    await three_refused.wait()
    await ctx.mcp.request("gate", "tools/call", {"name": "release", "arguments": {}})
    done = await asyncio.gather(*tasks)
    return f"ok={sum(done)} limit={refused}"


async def run(ctx: PromptContext, words: list[str]) -> str:
    cmd = words[0]
    if cmd == "servers":
        return ",".join(f"{k}={v}" for k, v in sorted(ctx.mcp.servers.items()))
    if cmd == "tools":
        return ",".join(t["name"] for t in await ctx.mcp.list_tools(words[1]))
    if cmd == "call":
        seen: list[str] = []

        def progress(done: float, total: float | None, message: str | None) -> None:
            seen.append(f"{done:g}")

        try:
            res = await ctx.mcp.call_tool(words[1], words[2], json.loads(words[3]) if len(words) > 3 else {},
                                          on_progress=progress)
        except McpError as exc:
            return f"mcp-error: {exc.code} {exc.message}"
        return f"progress: {','.join(seen)}; result: {_text(res)}"
    if cmd == "request":
        out = await ctx.mcp.request(words[1], words[2], json.loads(words[3]) if len(words) > 3 else None)
        if isinstance(out, McpError):
            return f"mcp-error: {out.code} {out.message} {json.dumps(out.data, sort_keys=True)}"
        return f"result: {json.dumps(out, sort_keys=True)}"
    if cmd == "timeout":
        try:
            await ctx.mcp.request(words[1], "tools/call", {"name": "hang", "arguments": {}}, timeout=0.5)
        except RequestTimeout:
            return "timed out"
        return "answered"
    if cmd == "cancel":
        started = asyncio.Event()
        call = asyncio.ensure_future(ctx.mcp.request(
            words[1], "tools/call", {"name": "hang", "arguments": {}, "_meta": {"progressToken": "p"}},
            on_notification=lambda note: started.set()))
        await started.wait()
        call.cancel()
        try:
            await call
        except asyncio.CancelledError:
            return "cancelled"
        return "answered"
    if cmd == "flood":
        return await _flood(ctx, words[1], int(words[2]))
    if cmd == "intid":
        conn = ctx.connection
        body = {"serverId": ctx.mcp.servers.get(words[1], words[1]), "requestId": 5, "method": "tools/list",
                "params": with_inner_meta(None)}
        raw = await conn.peer.request(conn.protocol.wire("mcp_message"), orjson.dumps(body))
        return f"result: {json.dumps(raw, sort_keys=True)}"
    if cmd == "background":
        started = asyncio.Event()

        async def hang() -> str:
            await ctx.mcp.request(words[1], "tools/call", {"name": "hang", "arguments": {}, "_meta": {
                "progressToken": "b"}}, on_notification=lambda note: started.set())
            return "answered"

        background.append(asyncio.ensure_future(_outcome(hang())))
        await started.wait()
        return "started"
    if cmd == "outcome":
        return await background.pop()
    return f"unknown command {cmd!r}"


async def _outcome(call: Any) -> str:
    try:
        return str(await call)
    except RequestError as exc:
        return f"outer: {exc.code} {exc.message}"


async def _reopen(ctx: Context[Any]) -> None:
    p = ctx.params
    if p.session_id == "missing":
        raise ResourceNotFound(f"no session {p.session_id!r}")
    if ctx.session is None:
        app.create_session(p.cwd, session_id=p.session_id, mcp_servers=p.mcp_servers)


@app.load_session
async def load_session(ctx: Context[Any]) -> None:
    await _reopen(ctx)


@app.resume_session
async def resume_session(ctx: Context[Any]) -> None:
    await _reopen(ctx)


@app.close_session
async def close_session(ctx: Context[Any]) -> None:
    return None


@app.delete_session
async def delete_session(ctx: Context[Any]) -> None:
    return None


@app.prompt
async def prompt(ctx: PromptContext) -> None:
    words = ctx.text.strip().split(" ", 3)
    try:
        text = await run(ctx, words)
    except RequestError as exc:
        text = f"outer: {exc.code} {exc.message}"
    except Exception as exc:
        text = f"outer: {type(exc).__name__}: {exc}"
    await ctx.send_text(text)


if __name__ == "__main__":
    run_agent(app)
