"""An acplink agent (v1 and v2) whose prompts use ``ctx.read_file`` / ``write_file`` / ``run``:
on v2 they go through the client's workspace MCP server. ``--no-acp``: it does not advertise
``acp`` MCP servers. Each command is answered with one line:

- ``servers``: the session's declared MCP servers as JSON (name, type, workspace tools or null);
- ``read PATH``: ``read: TEXT`` (the text JSON-quoted);
- ``write PATH TEXT``: ``wrote``;
- ``run CMD ARG...``: ``kind=TYPE id=ID exit=CODE output=OUTPUT`` (OUTPUT JSON-quoted; the
  output asked for before the end is checked to be empty on v2);
- ``kill``: runs a command that prints ``started``, makes ``started.flag`` in the session's
  folder and sleeps; kills it once the flag is there: ``signal=SIG output=...``;
- ``leave PIDFILE``: starts a command that writes its pid to PIDFILE and sleeps, and returns
  without releasing it (the end of the turn must);
- ``cancel PIDFILE``: the same, then waits for the turn to be cancelled.

A failure is ``error: TYPE: MESSAGE``.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from pathlib import Path

from acplink import AcpError, AgentApp, PromptContext, run_agent
from acplink.mcp import binding

PY = sys.executable
app = AgentApp("workspace-agent", "1.0", protocols=(1, 2), mcp_over_acp="--no-acp" not in sys.argv)


async def _started(flag: Path) -> None:
    """Until the command has printed (it then makes ``flag``: on v2 its output comes at the end)."""
    while not flag.exists():
        await asyncio.sleep(0.02)


async def command(ctx: PromptContext, words: list[str]) -> str:
    cmd = words[0]
    if cmd == "servers":
        out = []
        for entry in ctx.session.mcp_servers:
            wire = entry if isinstance(entry, dict) else entry.to_wire()
            out.append({"name": wire.get("name"), "type": wire.get("type", "stdio"),
                        "workspace": binding.workspace_tools(entry)})
        return json.dumps(out)
    if cmd == "read":
        return "read: " + json.dumps(await ctx.read_file(words[1]))
    if cmd == "write":
        await ctx.write_file(words[1], " ".join(words[2:]))
        return "wrote"
    if cmd == "run":
        term = await ctx.run(words[1], *words[2:])
        early = await term.output()
        status = await term.wait()
        out = await term.output()
        await term.release()
        if ctx.connection.protocol.version == 2:
            assert early.output == "" or early.exit_status is not None
        return (f"kind={type(term).__name__} id={term.terminal_id} exit={status.exit_code} "
                f"output={json.dumps(out.output)}")
    if cmd == "kill":
        flag = Path(ctx.session.cwd) / "started.flag"
        term = await ctx.run(PY, "-c", f"import time; print('started', flush=True); open({str(flag)!r}, 'w'); "
                                       "time.sleep(60)")
        await _started(flag)
        await term.kill()
        status = await term.wait()
        out = await term.output()
        await term.release()
        return f"signal={status.signal} output={json.dumps(out.output)}"
    if cmd in ("leave", "cancel"):
        script = f"import os, time; open({words[1]!r}, 'w').write(str(os.getpid())); time.sleep(60)"
        await ctx.run(PY, "-c", script)
        await _started(Path(words[1]))
        if cmd == "cancel":
            await ctx.wait_cancelled()
        return "left it"
    return f"unknown command {cmd}"


@app.prompt
async def prompt(ctx: PromptContext) -> None:
    words = shlex.split(ctx.text)
    try:
        reply = await command(ctx, words)
    except AcpError as exc:
        reply = f"error: {type(exc).__name__}: {exc}"
    await ctx.send_text(reply)


if __name__ == "__main__":
    run_agent(app)
