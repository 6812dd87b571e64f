"""MCP-over-ACP: the inner MCP request carries the trace context in its own ``params._meta``
(beside the MCP keys), the same as the envelope's: the agent's ``mcp/message`` span. The client's
MCP server sees it (and runs inside the client's span for the call). In a fresh interpreter with
an in-memory SDK: client and agent in one process, the MCP server a function of the client."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("opentelemetry.sdk")

PROGRAM = """
import asyncio, json
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

spans = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(spans))
trace.set_tracer_provider(provider)

from acplink import AgentApp, McpCall, PromptContext, connect

seen = {}

async def tools(call: McpCall):
    seen[call.method] = {"inner": call.params.get("_meta") if call.params else None, "outer": call.meta,
                         "current": format(trace.get_current_span().get_span_context().span_id, "016x")}
    if call.method == "tools/list":
        return {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
    return {"content": [{"type": "text", "text": "ok"}]}

app = AgentApp("a", "1.0")

@app.prompt
async def prompt(ctx: PromptContext) -> None:
    for server in ctx.mcp.servers:
        await ctx.mcp.call_tool(server, "t", {})

async def main() -> None:
    async with connect(app) as client:
        client.mcp.register("tools", tools)
        session = await client.new_session(".")
        [u async for u in session.prompt("go")]
    out = [{"name": s.name, "kind": s.kind.name, "side": s.attributes.get("acp.side"),
            "trace": format(s.context.trace_id, "032x"), "span": format(s.context.span_id, "016x"),
            "parent": format(s.parent.span_id, "016x") if s.parent else None}
           for s in spans.get_finished_spans()]
    print(json.dumps({"seen": seen, "spans": out}))

asyncio.run(main())
"""


def test_the_inner_mcp_request_carries_the_context() -> None:
    proc = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    seen, spans = got["seen"], got["spans"]
    calls = {s["span"]: s for s in spans if s["name"] == "mcp/message" and s["kind"] == "CLIENT"}
    answers = {s["span"]: s for s in spans if s["name"] == "mcp/message" and s["kind"] == "SERVER"}
    assert set(seen) == {"tools/call"} or set(seen) == {"tools/list", "tools/call"}
    for what in seen.values():
        inner, outer = what["inner"], what["outer"]
        assert inner["traceparent"] == outer["traceparent"]  # (the same context, both places)
        assert "io.modelcontextprotocol/protocolVersion" in inner  # (the MCP keys kept)
        _, trace_id, span_id, _ = inner["traceparent"].split("-")
        call = calls[span_id]  # the agent's mcp/message span is the parent sent
        assert (call["trace"], call["side"]) == (trace_id, "agent")
        # the MCP server ran inside the client's span for that call
        answer = answers[what["current"]]
        assert (answer["parent"], answer["trace"], answer["side"]) == (span_id, trace_id, "client")
