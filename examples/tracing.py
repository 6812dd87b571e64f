"""OpenTelemetry traces of one prompt turn, client and agent in one tree (docs/tracing.md).

The application configures an OpenTelemetry SDK (here: spans kept in memory, to print them;
in production an OTLP exporter); every acplink connection made after that reports. The client
sends its span's context in each message's ``params._meta`` (``traceparent``), the agent
continues it, so the agent's spans are children of the client's: here both run in this
process, over an in-memory connection, but the same holds across pipes and sockets.

    pip install 'acplink[otlp]'        # the SDK (the otel extra alone is the API)
    python examples/tracing.py
"""

from __future__ import annotations

import asyncio

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from acplink import AgentApp, PromptContext, connect

# -- the SDK first: connections made before it is configured do not report -------------------------
spans = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(spans))
trace.set_tracer_provider(provider)

agent = AgentApp("traced-agent", "1.0")


@agent.prompt
async def prompt(ctx: PromptContext) -> None:
    await ctx.send_text(f"You said: {ctx.text}")


def tree(finished: tuple[ReadableSpan, ...]) -> list[str]:
    """The spans as an indented tree: ``KIND name (side)``, children under their parent."""
    by_parent: dict[int | None, list[ReadableSpan]] = {}
    for span in finished:
        parent = span.parent.span_id if span.parent is not None else None
        by_parent.setdefault(parent, []).append(span)
    lines: list[str] = []

    def walk(parent: int | None, depth: int) -> None:
        for span in sorted(by_parent.get(parent, []), key=lambda s: s.start_time or 0):
            side = span.attributes.get("acp.side") if span.attributes else None
            lines.append(f"{'  ' * depth}{span.kind.name} {span.name} ({side})")
            assert span.context is not None
            walk(span.context.span_id, depth + 1)

    walk(None, 0)
    return lines


async def main() -> None:
    async with connect(agent) as client:
        session = await client.new_session(".")
        async for _ in session.prompt("hello"):
            pass
    turn = [s for s in spans.get_finished_spans() if s.name == "session/prompt" and s.kind.name == "CLIENT"]
    assert turn and turn[0].context is not None
    trace_id = turn[0].context.trace_id
    in_turn = tuple(s for s in spans.get_finished_spans() if s.context is not None and s.context.trace_id == trace_id)
    print(f"trace {trace_id:032x}:")
    print("\n".join(tree(in_turn)))


if __name__ == "__main__":
    asyncio.run(main())
