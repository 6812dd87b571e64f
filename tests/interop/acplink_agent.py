#!/usr/bin/env python3
"""Interop peer: the same behaviours as ``peers/py_agent.py`` and ``js/agent.mjs``, on acplink.

    python tests/interop/acplink_agent.py

Serves ACP on stdio (see tests/interop/README.md for the prompt behaviours:
``hello``, ``full``, ``wait``, ``fail``, anything else echoed).
"""

from __future__ import annotations

import os

from acplink import AgentApp, InternalError, PromptContext, run_agent, schema

app = AgentApp("acplink-interop-agent", "0.1.0")

OPTIONS = [
    schema.PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
    schema.PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
]


@app.prompt
async def prompt(ctx: PromptContext) -> str:
    text = next((b.text for b in ctx.params.prompt if isinstance(b, schema.TextContent)), "")
    if text == "hello":
        await ctx.send_text("Hello, ")
        await ctx.send_text("world")
    elif text == "full":
        await full(ctx)
    elif text == "wait":
        await ctx.send_text("waiting")
        await ctx.wait_cancelled()
        return "cancelled"
    elif text == "fail":
        raise InternalError("Internal error: peer failure")
    else:
        await ctx.send_text(text)
    return "end_turn"


async def full(ctx: PromptContext) -> None:
    assert ctx.session is not None
    await ctx.send_text("start")
    await ctx.send_thought("thinking")
    await ctx.send_plan([
        schema.PlanEntry(content="step one", priority="high", status="pending"),
        schema.PlanEntry(content="step two", priority="low", status="pending"),
    ])
    tool = await ctx.start_tool_call("Write file", kind="edit", status="pending", tool_call_id="t1")
    answer = await ctx.request_permission(tool, OPTIONS)
    if answer.option_id != "allow":
        await ctx.send_text("denied")
        await tool.fail()
        return
    path = os.path.join(ctx.session.cwd, "interop.txt")
    await ctx.write_file(path, "written by peer\n")
    content = await ctx.read_file(path)
    await ctx.send_text("read:" + content)
    term = await ctx.run("echo", "term-ok", cwd=ctx.session.cwd)
    status = await term.wait()
    output = await term.output()
    await ctx.send_text(f"term:{output.output.strip()}:{status.exit_code}")
    await term.release()
    await tool.complete()


if __name__ == "__main__":
    run_agent(app)
